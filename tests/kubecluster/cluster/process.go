package cluster

import (
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// process is one component (kube-apiserver, kube-controller-manager, kube-scheduler) run as a
// child of this program: the same binary, started with the component's name as its first
// argument (main.go), so that each can be stopped, restarted and measured alone, as the
// processes of a real control plane are.
type process struct {
	name    string
	self    string
	args    []string
	logPath string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

func (p *process) start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	log, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("open %s's log: %w", p.name, err)
	}
	cmd := exec.Command(p.self, append([]string{p.name}, p.args...)...)
	cmd.Stdout = log
	cmd.Stderr = log
	// The component goes with this program, however it ends.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Start(); err != nil {
		log.Close()
		return fmt.Errorf("start %s: %w", p.name, err)
	}
	done := make(chan struct{})
	p.cmd, p.done, p.err = cmd, done, nil
	go func() {
		err := cmd.Wait()
		log.Close()
		p.mu.Lock()
		p.err = err
		p.mu.Unlock()
		close(done)
	}()
	return nil
}

// stop sends sig, then SIGKILL after grace; it returns once the process has ended.
func (p *process) stop(sig syscall.Signal, grace time.Duration) {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(sig)
	select {
	case <-done:
	case <-time.After(grace):
		_ = cmd.Process.Kill()
		<-done
	}
}

// exited is closed when the current run of the process ends.
func (p *process) exited() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.done
}

func (p *process) pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || p.cmd.Process == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// usage is the CPU time and the peak resident memory of the ended runs and, for the current
// one, of /proc so far.
type usage struct {
	CPUSeconds float64 `json:"cpuSeconds"`
	PeakRSSKiB int64   `json:"peakRssKiB"`
}

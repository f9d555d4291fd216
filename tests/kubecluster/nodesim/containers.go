package nodesim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// container is one run of a pod's container: a local process when the simulator runs
// commands and the container has one, else a stand-in that runs until it is ended.
type container struct {
	name     string
	spec     corev1.Container
	cmd      *exec.Cmd
	waited   chan struct{} // closed when cmd has been waited for
	exitCode int
	term     *terminal // set (under the pod's mu) while a terminal container's process runs

	// Guarded by the pod's mu.
	done              bool
	code              int
	restarts          int32
	crashes           int       // restarts since it last ran 10 minutes (its back-off)
	restartAt         time.Time // set while it waits to start again
	started, finished metav1.Time
	last              *corev1.ContainerStateTerminated
}

// terminal is the pseudo-terminal a container with stdin and tty runs on, as a container
// runtime gives one: what the process writes goes to the container's log and to each client
// attached (attach.go), what an attached client types goes to the process.
type terminal struct {
	master  *os.File      // the pty's master side: input is written to it
	drained chan struct{} // closed when the process's output has all been copied

	mu   sync.Mutex
	outs map[*attached]struct{}
}

// attached is one client's output stream, fed from the terminal; failed is closed when a write
// to it fails (the client has gone).
type attached struct {
	w      io.Writer
	failed chan struct{}
	once   sync.Once
}

// setSize sets the terminal's size (the process gets SIGWINCH), unless its master has been
// closed. (pty.Setsize would race with the close: it uses the descriptor without holding it.)
func (t *terminal) setSize(rows, cols uint16) error {
	sc, err := t.master.SyscallConn()
	if err != nil {
		return err
	}
	var ierr error
	if err := sc.Control(func(fd uintptr) {
		ierr = unix.IoctlSetWinsize(int(fd), unix.TIOCSWINSZ, &unix.Winsize{Row: rows, Col: cols})
	}); err != nil {
		return err
	}
	return ierr
}

func (t *terminal) attach(w io.Writer) *attached {
	a := &attached{w: w, failed: make(chan struct{})}
	t.mu.Lock()
	t.outs[a] = struct{}{}
	t.mu.Unlock()
	return a
}

func (t *terminal) detach(a *attached) {
	t.mu.Lock()
	delete(t.outs, a)
	t.mu.Unlock()
}

// copyOut copies the process's output to the log file and to the clients attached, until the
// pty's slave side is closed by every process that had it (EIO) or the master is closed.
func (t *terminal) copyOut(log *os.File) {
	defer close(t.drained)
	defer log.Close()
	buf := make([]byte, 32*1024)
	for {
		n, err := t.master.Read(buf)
		if n > 0 {
			_, _ = log.Write(buf[:n])
			t.mu.Lock()
			for a := range t.outs {
				if _, werr := a.w.Write(buf[:n]); werr != nil {
					delete(t.outs, a)
					a.once.Do(func() { close(a.failed) })
				}
			}
			t.mu.Unlock()
		}
		if err != nil {
			return
		}
	}
}

func (c *container) exited() bool {
	if c.cmd == nil {
		return c.done
	}
	select {
	case <-c.waited:
		return true
	default:
		return false
	}
}

// start runs a container of the pod (again, on a restart).
func (st *podState) start(s *Sim, pod *corev1.Pod, spec corev1.Container) *container {
	st.mu.Lock()
	c := st.containers[spec.Name]
	if c == nil {
		c = &container{name: spec.Name, spec: spec}
		st.containers[spec.Name] = c
	}
	c.done, c.code = false, 0
	c.started = metav1.Now()
	if st.started.IsZero() {
		st.started = c.started.Time
	}
	st.mu.Unlock()
	logPath := filepath.Join(st.logDir, spec.Name+".log")
	if !s.opts.Exec || len(spec.Command) == 0 {
		if f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
			f.Close()
		}
		c.cmd = nil
		return c
	}
	cmd, term, err := s.spawn(st, pod, spec, logPath)
	waited := make(chan struct{})
	st.mu.Lock()
	c.cmd, c.waited, c.term = cmd, waited, term
	st.mu.Unlock()
	if err != nil {
		// As a runtime that cannot start the command: the container ends at once.
		if f, ferr := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); ferr == nil {
			fmt.Fprintf(f, "kube-cluster: cannot start %q: %v\n", spec.Command[0], err)
			f.Close()
		}
		c.cmd = &exec.Cmd{}
		c.exitCode = 128
		close(waited)
		st.poke()
		return c
	}
	go func() {
		err := cmd.Wait()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				code = 128 + int(ws.Signal())
			} else {
				code = ee.ExitCode()
			}
		} else if err != nil {
			code = 128
		}
		if term != nil {
			// The log holds all the process wrote before the container is seen to have ended
			// (unless a process it left behind keeps the terminal open).
			select {
			case <-term.drained:
			case <-time.After(time.Second):
			}
			_ = term.master.Close()
		}
		st.mu.Lock()
		c.exitCode = code
		st.mu.Unlock()
		close(waited)
		st.poke()
	}()
	return c
}

func (st *podState) poke() {
	select {
	case st.notify <- struct{}{}:
	default:
	}
}

// collectExits marks the containers whose processes have ended; whether any had.
func (st *podState) collectExits() bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	any := false
	for _, c := range st.containers {
		if c.done || c.cmd == nil {
			continue
		}
		select {
		case <-c.waited:
			c.done, c.code, c.finished = true, c.exitCode, metav1.Now()
			any = true
		default:
		}
	}
	return any
}

// endAll ends every running container with code, as if each program had exited with it.
func (st *podState) endAll(code int) {
	st.mu.Lock()
	var kill []*exec.Cmd
	for _, c := range st.containers {
		if c.done {
			continue
		}
		c.done, c.code, c.finished = true, code, metav1.Now()
		if c.cmd != nil && c.cmd.Process != nil {
			kill = append(kill, c.cmd)
		}
	}
	st.mu.Unlock()
	for _, cmd := range kill {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}

// restart runs a container that ended again (restartPolicy Always, or OnFailure after a
// failure), at once (the simulator has no back-off).
func (c *container) restart(s *Sim, st *podState, pod *corev1.Pod) {
	st.mu.Lock()
	c.last = &corev1.ContainerStateTerminated{ExitCode: int32(c.code), Reason: exitReason(c.code), StartedAt: c.started, FinishedAt: c.finished}
	c.restarts++
	c.crashes++
	c.restartAt = time.Time{}
	st.mu.Unlock()
	st.start(s, pod, c.spec)
}

// signalAll sends SIGTERM (SIGKILL when kill) to each running process; the containers that
// have one.
func (st *podState) signalAll(kill bool) []*container {
	sig := syscall.SIGTERM
	if kill {
		sig = syscall.SIGKILL
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	var with []*container
	for _, c := range st.containers {
		if c.cmd != nil && c.cmd.Process != nil && !c.exited() {
			_ = syscall.Kill(-c.cmd.Process.Pid, sig)
			with = append(with, c)
		}
	}
	return with
}

func (st *podState) killAll() { st.signalAll(true) }

// allHaveProcesses: every container still running is a process (one that is not stands for a
// program that ignores SIGTERM).
func (st *podState) allHaveProcesses() bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	for _, c := range st.containers {
		if !c.done && c.cmd == nil {
			return false
		}
	}
	return true
}

var fieldRefPattern = regexp.MustCompile(`^metadata\.(labels|annotations)\['(.+)'\]$`)

// env is the container's environment: a plain PATH and HOSTNAME, the devices the pod was
// given as NVIDIA_VISIBLE_DEVICES (as the device plugin sets it), and the container's own
// variables: values, and the downward API's fields.
func (s *Sim) env(st *podState, pod *corev1.Pod, c corev1.Container) []string {
	env := []string{"PATH=" + s.binDir + ":/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOSTNAME=" + pod.Name, "HOME=/",
		// The API server, as the kubelet names the kubernetes Service (here its loopback address).
		"KUBERNETES_SERVICE_HOST=" + s.apiHost, "KUBERNETES_SERVICE_PORT=" + s.apiPort}
	if len(st.devices) > 0 {
		env = append(env, "NVIDIA_VISIBLE_DEVICES="+strings.Join(st.devices, ","))
	}
	// The pod as it is now: annotations written after it was bound (a share's device) count.
	if latest, err := s.lister.Pods(pod.Namespace).Get(pod.Name); err == nil && latest.UID == pod.UID {
		pod = latest
	}
	for _, e := range c.Env {
		value := e.Value
		if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
			path := e.ValueFrom.FieldRef.FieldPath
			switch path {
			case "metadata.name":
				value = pod.Name
			case "metadata.namespace":
				value = pod.Namespace
			case "metadata.uid":
				value = string(pod.UID)
			case "spec.nodeName":
				value = pod.Spec.NodeName
			case "spec.serviceAccountName":
				value = pod.Spec.ServiceAccountName
			case "status.hostIP":
				value = "127.0.0.1"
			case "status.podIP":
				value = st.ip
			default:
				if m := fieldRefPattern.FindStringSubmatch(path); m != nil {
					if m[1] == "labels" {
						value = pod.Labels[m[2]]
					} else {
						value = pod.Annotations[m[2]]
					}
				}
			}
		}
		env = append(env, e.Name+"="+value)
	}
	return env
}

// spawn starts the container's command, its output appended to its log. As root it goes
// through `kube-cluster container-exec` (volumes.go): the pod's service account volume at the
// path the container mounts it, and the account ExecUser. A container with stdin and tty runs
// on a pseudo-terminal of its own (its session's controlling terminal), returned with it.
func (s *Sim) spawn(st *podState, pod *corev1.Pod, c corev1.Container, logPath string) (*exec.Cmd, *terminal, error) {
	argv := append(append([]string{}, c.Command...), c.Args...)
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, nil, err
	}
	defer func() {
		if log != nil {
			log.Close()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	mounts, err := s.serviceAccountMounts(ctx, st, pod, c)
	if err != nil {
		return nil, nil, err
	}
	var cmd *exec.Cmd
	if os.Geteuid() == 0 {
		args := []string{"container-exec"}
		for _, m := range mounts {
			args = append(args, "--mount", m.source+":"+m.target)
		}
		args = append(append(args, "--user", s.opts.ExecUser, "--"), argv...)
		cmd = exec.Command(s.opts.Self, args...)
	} else {
		cmd = exec.Command(argv[0], argv[1:]...)
	}
	cmd.Env = s.env(st, pod, c)
	cmd.Dir = "/"
	if c.WorkingDir != "" {
		if fi, err := os.Stat(c.WorkingDir); err == nil && fi.IsDir() {
			cmd.Dir = c.WorkingDir
		}
	}
	if c.TTY && c.Stdin {
		return startOnTerminal(cmd, &log)
	}
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, nil, err
	}
	return cmd, nil, nil
}

// startOnTerminal starts cmd in a session of its own whose controlling terminal is a new pty
// (80x24), and copies what it writes there to the log (which it takes from *log). As a
// session leader the process leads its own process group (pgid == pid), so signalling -pid
// reaches it and its children as for the other containers (Setpgid with Setsid would fail).
func startOnTerminal(cmd *exec.Cmd, log **os.File) (*exec.Cmd, *terminal, error) {
	master, slave, err := pty.Open()
	if err != nil {
		return nil, nil, fmt.Errorf("a pseudo-terminal: %w", err)
	}
	defer slave.Close()
	_ = pty.Setsize(master, &pty.Winsize{Rows: 24, Cols: 80})
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		master.Close()
		return nil, nil, err
	}
	t := &terminal{master: master, drained: make(chan struct{}), outs: map[*attached]struct{}{}}
	go t.copyOut(*log)
	*log = nil
	return cmd, t, nil
}

func credential(name string) (*syscall.Credential, error) {
	u, err := user.Lookup(name)
	if err != nil {
		return nil, fmt.Errorf("the account containers run as: %w", err)
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, err
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, err
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}, nil
}

package nodesim

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	resourcehelper "k8s.io/component-helpers/resource"
	schedcorev1 "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"
)

// podState is a pod the simulator admitted (or rejected) on one of its nodes.
type podState struct {
	sim      *Sim
	uid      types.UID
	key      string
	node     *node
	requests corev1.ResourceList
	devices  []string
	rejected bool
	logDir   string

	stopOnce    sync.Once
	stopGrace   chan time.Duration // the deletion's grace period, sent once
	finishCh    chan int
	abandonOnce sync.Once
	abandoned   chan struct{}

	// notify is signalled (without blocking) whenever one of its processes ends.
	notify chan struct{}

	mu         sync.Mutex
	ended      bool // its containers have stopped for good (or it was rejected)
	released   bool
	containers map[string]*container
	ip         string
	started    time.Time
}

func (p *podState) finished() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ended || p.rejected
}

// requestStop starts the pod's deletion: its containers get SIGTERM, and SIGKILL after grace.
func (p *podState) requestStop(grace time.Duration) {
	p.stopOnce.Do(func() { p.stopGrace <- grace })
}

func (p *podState) finish(code int) {
	select {
	case p.finishCh <- code:
	default:
	}
}

// abandon stops following the pod (it was deleted, or its node went): its processes are
// killed and its room on the node given back, with no write to the API.
func (p *podState) abandon() {
	p.abandonOnce.Do(func() { close(p.abandoned) })
	p.release()
}

func (p *podState) release() {
	s := p.sim
	s.mu.Lock()
	defer s.mu.Unlock()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.released {
		return
	}
	p.released = true
	delete(p.node.admitted, p.uid)
	for _, d := range p.devices {
		if p.node.gpuHolder[d] == p.uid {
			delete(p.node.gpuHolder, d)
		}
	}
}

// admit checks the pod against its node's room as the kubelet's admission does (the node's
// allocatable less what its admitted, unfinished pods request, and its required node
// affinity), and either takes the room and the GPUs or marks the pod Failed with the
// kubelet's reason and message.
func (s *Sim) admit(ctx context.Context, n *node, pod *corev1.Pod) *podState {
	st := &podState{
		sim: s, uid: pod.UID, key: pod.Namespace + "/" + pod.Name, node: n,
		requests:   resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{}),
		stopGrace:  make(chan time.Duration, 1),
		finishCh:   make(chan int, 1),
		abandoned:  make(chan struct{}),
		notify:     make(chan struct{}, 1),
		containers: map[string]*container{},
		logDir:     filepath.Join(s.opts.LogDir, fmt.Sprintf("%s_%s_%s", pod.Namespace, pod.Name, pod.UID)),
	}
	st.requests[corev1.ResourcePods] = *resource.NewQuantity(1, resource.DecimalSI)

	s.mu.Lock()
	reason, message := s.fits(n, pod, st.requests)
	if reason == "" {
		n.admitted[pod.UID] = st
		if want := st.requests[gpuResource]; want.Value() > 0 {
			for _, d := range n.gpus {
				if int64(len(st.devices)) == want.Value() {
					break
				}
				if _, held := n.gpuHolder[d]; !held {
					n.gpuHolder[d] = pod.UID
					st.devices = append(st.devices, d)
				}
			}
		}
	}
	s.mu.Unlock()
	if reason == "" {
		return st
	}
	st.rejected, st.ended, st.released = true, true, true
	now := metav1.Now()
	go func() {
		_ = s.patchPod(ctx, pod, map[string]any{
			"metadata": map[string]any{"uid": pod.UID},
			"status": map[string]any{"phase": corev1.PodFailed, "reason": reason, "message": message,
				"startTime": now},
		}, "status")
		s.event(ctx, pod, corev1.EventTypeWarning, reason, message)
	}()
	return st
}

// fits says why the pod cannot be admitted on n ("" when it can). Called with s.mu held.
func (s *Sim) fits(n *node, pod *corev1.Pod, req corev1.ResourceList) (reason, message string) {
	nodeObj := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.spec.Name, Labels: s.nodeObject(n).Labels}}
	if ok, _ := nodeaffinity.GetRequiredNodeAffinity(pod).Match(nodeObj); !ok {
		return "NodeAffinity", "Pod was rejected: Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector"
	}
	if taint, bad := schedcorev1.FindMatchingUntoleratedTaint(klog.Background(), n.spec.Taints, pod.Spec.Tolerations, func(t *corev1.Taint) bool {
		return t.Effect == corev1.TaintEffectNoExecute
	}, false); bad {
		return "TaintToleration", fmt.Sprintf("Pod was rejected: Predicate TaintToleration failed: node(s) had untolerated taint {%s: %s}", taint.Key, taint.Value)
	}
	used := corev1.ResourceList{}
	for _, other := range n.admitted {
		for name, q := range other.requests {
			u := used[name]
			u.Add(q)
			used[name] = u
		}
	}
	names := make([]string, 0, len(req))
	for name := range req {
		names = append(names, string(name))
	}
	sort.Strings(names)
	for _, name := range names {
		want := req[corev1.ResourceName(name)]
		if want.IsZero() {
			continue
		}
		have := n.allocatable[corev1.ResourceName(name)]
		u := used[corev1.ResourceName(name)]
		total := u.DeepCopy()
		total.Add(want)
		if total.Cmp(have) > 0 {
			// The kubelet's words (pkg/kubelet/lifecycle/predicate.go).
			return "OutOf" + name, fmt.Sprintf("Pod was rejected: Node didn't have enough resource: %s, requested: %d, used: %d, capacity: %d",
				name, amount(corev1.ResourceName(name), want), amount(corev1.ResourceName(name), u), amount(corev1.ResourceName(name), have))
		}
	}
	return "", ""
}

func amount(name corev1.ResourceName, q resource.Quantity) int64 {
	if name == corev1.ResourceCPU {
		return q.MilliValue()
	}
	return q.Value()
}

// life runs an admitted pod: its devices announced, Running after StartDelay, its containers
// until they end (restarted as its restartPolicy says), are finished, or the pod is deleted.
func (s *Sim) life(st *podState, pod *corev1.Pod) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-st.abandoned:
		case <-s.done:
		case <-ctx.Done():
		}
		cancel()
	}()
	if len(st.devices) > 0 {
		_ = s.patchPod(ctx, pod, map[string]any{"metadata": map[string]any{"annotations": map[string]string{
			s.opts.DeviceAnnotation: strings.Join(st.devices, ",")}}})
	}
	deleting := func(grace time.Duration) {
		s.stopPod(ctx, st, pod, grace)
	}
	select {
	case <-time.After(s.opts.StartDelay):
	case g := <-st.stopGrace:
		deleting(g)
		return
	case <-ctx.Done():
		st.killAll()
		return
	}
	if err := os.MkdirAll(st.logDir, 0o755); err != nil {
		st.logDir = os.TempDir()
	}
	// Init containers run one after the other to completion; a failed one fails the pod.
	for _, c := range pod.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			continue // a sidecar runs beside the main containers
		}
		code := 0
		if s.opts.Exec && len(c.Command) > 0 {
			ct := st.start(s, pod, c)
			for !ct.exited() {
				select {
				case <-st.notify:
				case g := <-st.stopGrace:
					deleting(g)
					return
				case <-ctx.Done():
					st.killAll()
					return
				}
			}
			st.mu.Lock()
			code = ct.exitCode
			delete(st.containers, c.Name)
			st.mu.Unlock()
		}
		if code != 0 {
			st.mu.Lock()
			st.ended = true
			st.mu.Unlock()
			_ = s.patchPod(ctx, pod, map[string]any{"metadata": map[string]any{"uid": pod.UID},
				"status": map[string]any{"phase": corev1.PodFailed, "reason": "InitContainerFailed",
					"message": fmt.Sprintf("init container %s exited with %d", c.Name, code)}}, "status")
			st.release()
			return
		}
	}
	for _, c := range pod.Spec.Containers {
		st.start(s, pod, c)
	}
	_ = s.patchPod(ctx, pod, s.runningStatus(st, pod), "status")

	var runTimer <-chan time.Time
	if secs, err := strconv.ParseFloat(pod.Annotations[RunSecondsAnnotation], 64); err == nil && secs >= 0 {
		runTimer = time.After(time.Duration(secs * float64(time.Second)))
	}
	var restartTimer <-chan time.Time // the next container to start again after its back-off
	settle := func() bool {
		done, next := s.ended(ctx, st, pod)
		restartTimer = nil
		if next > 0 {
			restartTimer = time.After(next)
		}
		return done
	}
	for {
		select {
		case <-st.notify:
			if st.collectExits() && settle() {
				return
			}
		case code := <-st.finishCh:
			st.endAll(code)
			if settle() {
				return
			}
		case <-runTimer:
			code, _ := strconv.Atoi(pod.Annotations[ExitCodeAnnotation])
			st.endAll(code)
			if settle() {
				return
			}
		case <-restartTimer:
			if settle() {
				return
			}
		case g := <-st.stopGrace:
			deleting(g)
			return
		case <-ctx.Done():
			st.killAll()
			return
		}
	}
}

// backOff is how long a container that ended waits before it starts again, as the kubelet's
// CrashLoopBackOff: at once the first time, then 10 s, doubling up to 5 minutes; a container
// that ran 10 minutes starts over.
func backOff(c *container) time.Duration {
	if c.finished.Sub(c.started.Time) >= 10*time.Minute {
		c.crashes = 0
	}
	if c.crashes == 0 {
		return 0
	}
	d := 10 * time.Second << (c.crashes - 1)
	if d > 5*time.Minute || d <= 0 {
		d = 5 * time.Minute
	}
	return d
}

// ended handles containers that stopped: those the restart policy restarts run again (after
// their back-off); once none runs or waits, the pod is Succeeded (every container exited 0) or
// Failed. It returns whether the pod has ended, and else how long until the next container is
// due to start again (0: none waits).
func (s *Sim) ended(ctx context.Context, st *podState, pod *corev1.Pod) (bool, time.Duration) {
	policy := pod.Spec.RestartPolicy
	now := time.Now()
	st.mu.Lock()
	var due []*container
	var next time.Duration
	running, failed := 0, false
	for _, c := range st.containers {
		if !c.done {
			running++
			continue
		}
		if policy == corev1.RestartPolicyAlways || (policy == corev1.RestartPolicyOnFailure && c.code != 0) {
			if c.restartAt.IsZero() {
				c.restartAt = now.Add(backOff(c))
			}
			if wait := c.restartAt.Sub(now); wait > 0 {
				if next == 0 || wait < next {
					next = wait
				}
				running++
				continue
			}
			due = append(due, c)
			continue
		}
		failed = failed || c.code != 0
	}
	st.mu.Unlock()
	for _, c := range due {
		c.restart(s, st, pod)
	}
	if len(due) > 0 || running > 0 {
		_ = s.patchPod(ctx, pod, s.runningStatus(st, pod), "status")
		return false, next
	}
	st.mu.Lock()
	st.ended = true
	st.mu.Unlock()
	phase := corev1.PodSucceeded
	if failed {
		phase = corev1.PodFailed
	}
	status := s.runningStatus(st, pod)
	statusMap := status["status"].(map[string]any)
	statusMap["phase"] = phase
	statusMap["conditions"] = podConditions(false, "PodCompleted")
	_ = s.patchPod(ctx, pod, status, "status")
	st.release()
	return true, 0
}

// stopPod is a deletion: SIGTERM to the pod's processes, SIGKILL after the grace period; a
// container without a process stands for one that ignores SIGTERM (a shell as PID 1) and goes
// after the whole grace period. Then the pod is removed.
func (s *Sim) stopPod(ctx context.Context, st *podState, pod *corev1.Pod, grace time.Duration) {
	procs := st.signalAll(false)
	deadline := time.After(grace)
	allGone := func() bool {
		for _, c := range procs {
			if !c.exited() {
				return false
			}
		}
		return true
	}
	if len(procs) == 0 || !st.allHaveProcesses() {
		select {
		case <-deadline:
		case <-ctx.Done():
		}
	} else {
		ticker := time.NewTicker(50 * time.Millisecond)
		defer ticker.Stop()
	wait:
		for !allGone() {
			select {
			case <-deadline:
				break wait
			case <-ctx.Done():
				break wait
			case <-ticker.C:
			}
		}
	}
	st.killAll()
	st.mu.Lock()
	st.ended = true
	st.mu.Unlock()
	st.release()
	if ctx.Err() == nil {
		_ = s.remove(ctx, pod)
	}
}

func podConditions(ready bool, reason string) []corev1.PodCondition {
	now := metav1.Now()
	status := corev1.ConditionTrue
	if !ready {
		status = corev1.ConditionFalse
	}
	c := func(t corev1.PodConditionType, s corev1.ConditionStatus, r string) corev1.PodCondition {
		return corev1.PodCondition{Type: t, Status: s, Reason: r, LastTransitionTime: now}
	}
	return []corev1.PodCondition{
		c(corev1.PodReadyToStartContainers, corev1.ConditionTrue, ""),
		c(corev1.PodInitialized, corev1.ConditionTrue, ""),
		c(corev1.PodReady, status, reason),
		c(corev1.ContainersReady, status, reason),
		c(corev1.PodScheduled, corev1.ConditionTrue, ""),
	}
}

// runningStatus is the pod's status patch as its containers stand.
func (s *Sim) runningStatus(st *podState, pod *corev1.Pod) map[string]any {
	ip := s.podIP(st)
	st.mu.Lock()
	defer st.mu.Unlock()
	allReady := true
	var statuses []corev1.ContainerStatus
	for _, c := range pod.Spec.Containers {
		ct := st.containers[c.Name]
		cs := corev1.ContainerStatus{Name: c.Name, Image: c.Image, ImageID: "sim://" + c.Image,
			ContainerID: fmt.Sprintf("sim://%s-%s", pod.UID, c.Name)}
		if ct != nil {
			cs.RestartCount = ct.restarts
			if ct.done && !ct.restartAt.IsZero() {
				cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff",
					Message: fmt.Sprintf("back-off restarting failed container %s", c.Name)}
				cs.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ExitCode: int32(ct.code), Reason: exitReason(ct.code),
					StartedAt: ct.started, FinishedAt: ct.finished}
				allReady = false
			} else if ct.done {
				cs.State.Terminated = &corev1.ContainerStateTerminated{ExitCode: int32(ct.code), Reason: exitReason(ct.code),
					StartedAt: ct.started, FinishedAt: ct.finished}
				allReady = false
			} else {
				cs.Ready, cs.Started = true, ptrTrue()
				cs.State.Running = &corev1.ContainerStateRunning{StartedAt: ct.started}
			}
			if ct.last != nil && cs.LastTerminationState.Terminated == nil {
				cs.LastTerminationState.Terminated = ct.last
			}
		}
		statuses = append(statuses, cs)
	}
	var initStatuses []corev1.ContainerStatus
	for _, c := range pod.Spec.InitContainers {
		initStatuses = append(initStatuses, corev1.ContainerStatus{Name: c.Name, Image: c.Image, ImageID: "sim://" + c.Image,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed"}}})
	}
	status := map[string]any{
		"phase":             corev1.PodRunning,
		"conditions":        podConditions(allReady, ""),
		"containerStatuses": statuses,
		"hostIP":            "127.0.0.1",
		"hostIPs":           []map[string]string{{"ip": "127.0.0.1"}},
		"podIP":             ip,
		"podIPs":            []map[string]string{{"ip": ip}},
		"startTime":         metav1.NewTime(st.started),
	}
	if len(initStatuses) > 0 {
		status["initContainerStatuses"] = initStatuses
	}
	return map[string]any{"metadata": map[string]any{"uid": pod.UID}, "status": status}
}

func ptrTrue() *bool { b := true; return &b }

func exitReason(code int) string {
	if code == 0 {
		return "Completed"
	}
	return "Error"
}

func (s *Sim) podIP(st *podState) string {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.ip == "" {
		n := s.podIPs.Add(1)
		st.ip = fmt.Sprintf("10.%d.%d.%d", 64+(n>>16)&63, (n>>8)&255, n&255)
	}
	return st.ip
}

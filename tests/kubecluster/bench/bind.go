// Package bench measures gpuqd (binder: kubernetes) on a real control plane of this module:
// how fast it binds a backlog of pending pods, how long each pod waits from its creation to
// its binding, and how many API requests it makes per bound pod (from the API server's audit
// log), with the CPU time and peak memory of gpuqd and of kube-apiserver. bench/README.md says
// how to run it and what each number means.
package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"gpuq/tests/kubecluster/cluster"
	"gpuq/tests/kubecluster/nodesim"
)

// BindOptions: one run of the binding benchmark.
type BindOptions struct {
	Self, Gpuqd, DeployDir string
	Nodes, GPUsPerNode     int
	Pods                   int
	CreateBefore           bool // the pods exist before gpuqd starts (else a burst once it watches)
	// "default" (gpuqd as shipped), "tuned", or "kube-scheduler" (no gpuqd: the same pods for
	// the default scheduler, the baseline on the same control plane).
	Config   string
	Creators int  // goroutines creating the pods
	Keep     bool // keep the run's folder
}

// BindResult is what one run measured (times in seconds).
type BindResult struct {
	Config          string         `json:"config"`
	Mode            string         `json:"mode"` // "create-after" or "create-before"
	Nodes           int            `json:"nodes"`
	Pods            int            `json:"pods"`
	Bound           int            `json:"bound"`
	CreateSeconds   float64        `json:"createSeconds"`  // making the pods
	FirstBinding    float64        `json:"firstBinding"`   // after the burst began (create-after) or gpuqd's exec (create-before)
	LastBinding     float64        `json:"lastBinding"`    // likewise
	BindsPerSecond  float64        `json:"bindsPerSecond"` // bound / (last - first binding)
	LatencyP50      float64        `json:"latencyP50"`     // creation (create-after) or exec (create-before) to binding
	LatencyP99      float64        `json:"latencyP99"`     //
	Requests        int            `json:"requests"`       // gpuqd's, from the audit log, to the end of the run
	RequestsPerPod  float64        `json:"requestsPerPod"` // requests / bound
	RequestsByKind  map[string]int `json:"requestsByKind"`
	Throttled       int            `json:"throttled"` // gpuqd's requests answered 429
	GpuqdCPU        float64        `json:"gpuqdCpu"`
	GpuqdHWMMiB     float64        `json:"gpuqdHwmMiB"`
	APIServerCPU    float64        `json:"apiserverCpu"` // over the whole run, its start included
	APIServerHWMMiB float64        `json:"apiserverHwmMiB"`
	SchedulerCPU    float64        `json:"schedulerCpu"` // kube-scheduler, idle here: no pod is its
	HarnessCPU      float64        `json:"harnessCpu"`   // this process: etcd, the simulated kubelets, the pods' creation
}

const (
	gpuqdUser     = "system:serviceaccount:gpuq-system:gpuq"
	schedulerUser = "system:kube-scheduler"
)

// Bind runs the benchmark once, on a control plane of its own.
func Bind(parent context.Context, o BindOptions) (*BindResult, error) {
	// Everything this run starts (the simulated kubelets' goroutines too) ends with it.
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	harnessBefore, _ := usage(os.Getpid())
	dir, err := os.MkdirTemp("", "kube-bench-")
	if err != nil {
		return nil, err
	}
	if !o.Keep {
		defer os.RemoveAll(dir)
	}
	var manifests []string
	for _, f := range []string{"namespace.yaml", "serviceaccount.yaml", "clusterrole.yaml", "clusterrolebinding.yaml"} {
		manifests = append(manifests, filepath.Join(o.DeployDir, f))
	}
	// The node lifecycle controller's grace and the kubelets' Lease renewals at Kubernetes'
	// defaults (50 s, 10 s).
	c, err := startWithNodes(ctx, cluster.Options{Dir: dir, Self: o.Self, ManifestFiles: manifests,
		AuditUsers: []string{gpuqdUser, schedulerUser, "kubernetes-admin"}, NodeMonitorGracePeriod: 50 * time.Second},
		o.Nodes, o.GPUsPerNode)
	if err != nil {
		return nil, err
	}
	defer c.Stop()
	if o.Config == "tuned" {
		if err := c.Apply(ctx, writeTuning(dir)); err != nil {
			return nil, err
		}
	}
	// The creator: no client-side limit (the admin is exempt from priority and fairness).
	cfg := rest.CopyConfig(c.AdminConfig)
	cfg.QPS, cfg.Burst = -1, 0
	creator, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	res := &BindResult{Config: o.Config, Mode: "create-after", Nodes: o.Nodes, Pods: o.Pods}
	if o.CreateBefore {
		res.Mode = "create-before"
	}
	var created map[string]time.Time
	var burst time.Time
	if o.CreateBefore {
		burst = time.Now()
		if created, err = createPods(ctx, creator, o); err != nil {
			return nil, err
		}
		res.CreateSeconds = time.Since(burst).Seconds()
	}
	binder := gpuqdUser
	var gpuqd *gpuqdProc
	start := time.Now()
	if o.Config == "kube-scheduler" {
		binder = schedulerUser
		gpuqd = &gpuqdProc{done: make(chan struct{})} // kube-scheduler runs from the start
	} else {
		if gpuqd, err = startGpuqd(dir, o, c.GpuqdKubeconfig); err != nil {
			return nil, err
		}
		defer gpuqd.stop()
		start = time.Now()
		if err := waitLog(ctx, filepath.Join(dir, "gpuqd.out"), "kubernetes_synced what=/api/v1/pods", gpuqd); err != nil {
			return nil, err
		}
	}
	if !o.CreateBefore {
		burst = time.Now()
		if created, err = createPods(ctx, creator, o); err != nil {
			return nil, err
		}
		res.CreateSeconds = time.Since(burst).Seconds()
	} else {
		burst = start
	}
	// What the nodes hold: with 1,000 nodes of 8 GPUs, 8,000 of 10,000 one-GPU pods; the rest wait.
	want := min(o.Pods, o.Nodes*o.GPUsPerNode)
	bound, err := waitBound(ctx, c.AuditLog, binder, want, gpuqd)
	if err != nil {
		return nil, err
	}
	time.Sleep(2 * time.Second) // the Events that trail the bindings
	if gpuqd.cmd != nil {
		res.GpuqdCPU, res.GpuqdHWMMiB = usage(gpuqd.cmd.Process.Pid)
	}
	res.APIServerCPU, res.APIServerHWMMiB = usage(c.Pid(cluster.APIServer))
	res.SchedulerCPU, _ = usage(c.Pid(cluster.Scheduler))
	res.HarnessCPU, _ = usage(os.Getpid())
	res.HarnessCPU -= harnessBefore
	gpuqd.stop()
	time.Sleep(500 * time.Millisecond) // its watches' audit entries, written as they end

	var first, last time.Time
	var lat []float64
	for name, at := range bound {
		if first.IsZero() || at.Before(first) {
			first = at
		}
		if at.After(last) {
			last = at
		}
		from := burst
		if !o.CreateBefore {
			from = created[name]
		}
		lat = append(lat, at.Sub(from).Seconds())
	}
	res.Bound = len(bound)
	if res.Bound > 0 {
		res.FirstBinding, res.LastBinding = first.Sub(burst).Seconds(), last.Sub(burst).Seconds()
		if span := last.Sub(first).Seconds(); span > 0 {
			res.BindsPerSecond = float64(res.Bound) / span
		}
		sort.Float64s(lat)
		res.LatencyP50, res.LatencyP99 = lat[len(lat)*50/100], lat[(len(lat)-1)*99/100]
	}
	res.RequestsByKind, res.Requests, res.Throttled = countRequests(c.AuditLog, binder)
	if res.Bound > 0 {
		res.RequestsPerPod = float64(res.Requests) / float64(res.Bound)
	}
	return res, nil
}

// startWithNodes starts a control plane and the node simulator (its goroutines end with ctx)
// with `nodes` nodes of `gpus` GPUs, and returns once every node is schedulable; on an error
// the control plane is stopped.
func startWithNodes(ctx context.Context, opts cluster.Options, nodes, gpus int) (_ *cluster.Cluster, err error) {
	c, err := cluster.Start(ctx, opts)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			c.Stop()
		}
	}()
	sim, err := nodesim.New(c.NodesConfig, nodesim.Options{LeaseRenew: 10 * time.Second, LogDir: filepath.Join(opts.Dir, "pods")})
	if err != nil {
		return nil, err
	}
	if err = sim.Run(ctx); err != nil {
		return nil, err
	}
	if err = addNodes(ctx, sim, BindOptions{Nodes: nodes, GPUsPerNode: gpus}); err != nil {
		return nil, err
	}
	if err = waitSchedulable(ctx, c.Admin, nodes); err != nil {
		return nil, err
	}
	return c, nil
}

func addNodes(ctx context.Context, sim *nodesim.Sim, o BindOptions) error {
	var wg sync.WaitGroup
	errs := make(chan error, o.Nodes)
	next := make(chan int)
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := sim.AddNode(ctx, nodesim.NodeSpec{Name: fmt.Sprintf("node-%04d", i), GPUs: o.GPUsPerNode}); err != nil {
					errs <- err
				}
			}
		}()
	}
	for i := 0; i < o.Nodes; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	close(errs)
	return <-errs
}

// waitSchedulable waits for every node to lose the not-ready taint it was registered with.
func waitSchedulable(ctx context.Context, client kubernetes.Interface, n int) error {
	deadline := time.Now().Add(5 * time.Minute)
	for time.Now().Before(deadline) {
		nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err == nil && len(nodes.Items) == n {
			tainted := 0
			for _, node := range nodes.Items {
				for _, t := range node.Spec.Taints {
					if t.Key == "node.kubernetes.io/not-ready" {
						tainted++
					}
				}
			}
			if tainted == 0 {
				return nil
			}
		}
		time.Sleep(500 * time.Millisecond)
	}
	return fmt.Errorf("the %d nodes were not all schedulable after 5 minutes", n)
}

// writeTuning: what a deployment that wants gpuqd to bind faster adds: its service account's
// requests in the priority level kube-scheduler's are in (workload-high, as the built-in
// FlowSchema kube-scheduler gives it), instead of service-accounts' workload-low.
func writeTuning(dir string) string {
	path := filepath.Join(dir, "tuning.yaml")
	_ = os.WriteFile(path, []byte(`apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: gpuq-scheduler}
spec:
  priorityLevelConfiguration: {name: workload-high}
  matchingPrecedence: 800
  distinguisherMethod: {type: ByUser}
  rules:
    - subjects: [{kind: ServiceAccount, serviceAccount: {name: gpuq, namespace: gpuq-system}}]
      resourceRules: [{verbs: ["*"], apiGroups: ["*"], resources: ["*"], namespaces: ["*"], clusterScope: true}]
`), 0o644)
	return path
}

func podFor(i int, scheduler string) *corev1.Pod {
	one := resource.MustParse("1")
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p-%05d", i), Namespace: "default",
			Labels: map[string]string{"gpuq.io/queue": "team-a"}},
		Spec: corev1.PodSpec{
			SchedulerName: scheduler,
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "main", Image: "busybox",
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), "nvidia.com/gpu": one},
					Limits:   corev1.ResourceList{"nvidia.com/gpu": one}}}},
		},
	}
}

// createPods makes the pods with Creators goroutines; when each was created (as the client saw
// its answer).
func createPods(ctx context.Context, client kubernetes.Interface, o BindOptions) (map[string]time.Time, error) {
	scheduler := "gpuq"
	if o.Config == "kube-scheduler" {
		scheduler = "default-scheduler"
	}
	var mu sync.Mutex
	created := make(map[string]time.Time, o.Pods)
	next := make(chan int)
	errs := make(chan error, o.Creators)
	var wg sync.WaitGroup
	for w := 0; w < o.Creators; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				p, err := client.CoreV1().Pods("default").Create(ctx, podFor(i, scheduler), metav1.CreateOptions{})
				if err != nil {
					errs <- err
					continue
				}
				mu.Lock()
				created[p.Name] = time.Now()
				mu.Unlock()
			}
		}()
	}
	for i := 0; i < o.Pods; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return nil, fmt.Errorf("create pods: %w", err)
	}
	return created, nil
}

// gpuqdProc is gpuqd as a child of the benchmark.
type gpuqdProc struct {
	cmd  *exec.Cmd
	done chan struct{}
}

func (g *gpuqdProc) stop() {
	if g.cmd == nil {
		return
	}
	_ = g.cmd.Process.Signal(syscall.SIGTERM)
	<-g.done
}

func startGpuqd(dir string, o BindOptions, kubeconfig string) (*gpuqdProc, error) {
	config := fmt.Sprintf(`grpc: 127.0.0.1:0
http: 127.0.0.1:0
binder: kubernetes
kubernetes:
  kubeconfig: %s
queues:
  - name: team-a
    quotas: [{flavor: default, resources: {gpu: {nominal: %d}}}]
`, kubeconfig, o.Pods)
	if o.Config == "tuned" {
		config = strings.Replace(config, "  kubeconfig:", "  bindConcurrency: 64\n  kubeconfig:", 1)
	}
	path := filepath.Join(dir, "gpuqd.yaml")
	if err := os.WriteFile(path, []byte(config), 0o644); err != nil {
		return nil, err
	}
	return startGpuqdWith(dir, o.Gpuqd, path)
}

// startGpuqdWith starts gpuqd with a configuration file, its state file and output in dir.
func startGpuqdWith(dir, binary, config string) (*gpuqdProc, error) {
	out, err := os.Create(filepath.Join(dir, "gpuqd.out"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(binary, "--config", config, "--state-file", filepath.Join(dir, "gpuqd.db"))
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	g := &gpuqdProc{cmd: cmd, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		out.Close()
		close(g.done)
	}()
	return g, nil
}

func waitLog(ctx context.Context, path, line string, gpuqd *gpuqdProc) error {
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(path); err == nil && strings.Contains(string(b), line) {
			return nil
		}
		select {
		case <-gpuqd.done:
			b, _ := os.ReadFile(path)
			return fmt.Errorf("gpuqd ended:\n%s", b)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	b, _ := os.ReadFile(path)
	return fmt.Errorf("gpuqd never logged %q:\n%s", line, b)
}

type auditEvent struct {
	Stage          string `json:"stage"`
	Verb           string `json:"verb"`
	StageTimestamp string `json:"stageTimestamp"`
	User           struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		Name        string `json:"name"`
	} `json:"objectRef"`
	ResponseStatus struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
}

// waitBound follows the audit log until `want` pods were bound by gpuqd; when each was (the API
// server's time its binding was answered).
func waitBound(ctx context.Context, log, binder string, want int, gpuqd *gpuqdProc) (map[string]time.Time, error) {
	bound := map[string]time.Time{}
	f, err := os.Open(log)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<20)
	var partial string
	idle := time.Now()
	for len(bound) < want {
		line, err := r.ReadString('\n')
		if err != nil { // no whole line yet: wait for more
			partial += line
			if time.Since(idle) > 2*time.Minute {
				return bound, fmt.Errorf("%d of %d pods bound; none more for 2 minutes", len(bound), want)
			}
			select {
			case <-gpuqd.done:
				return bound, fmt.Errorf("gpuqd ended with %d of %d pods bound", len(bound), want)
			case <-ctx.Done():
				return bound, ctx.Err()
			case <-time.After(50 * time.Millisecond):
			}
			continue
		}
		line, partial = partial+line, ""
		var e auditEvent
		if json.Unmarshal([]byte(line), &e) != nil || e.Stage != "ResponseComplete" || e.User.Username != binder {
			continue
		}
		if e.ObjectRef.Subresource == "binding" && e.ResponseStatus.Code == 201 {
			at, err := time.Parse(time.RFC3339Nano, e.StageTimestamp)
			if err == nil {
				bound[e.ObjectRef.Name] = at
				idle = time.Now()
			}
		}
	}
	return bound, nil
}

// countRequests: the scheduler's requests by kind (verb resource[/subresource]), all, and those
// answered 429.
func countRequests(log, binder string) (map[string]int, int, int) {
	by := map[string]int{}
	total, throttled := 0, 0
	f, err := os.Open(log)
	if err != nil {
		return by, 0, 0
	}
	defer f.Close()
	forEachAudit(f, func(e *auditEvent) {
		if e.Stage != "ResponseComplete" || e.User.Username != binder {
			return
		}
		kind := e.Verb + " " + e.ObjectRef.Resource
		if e.ObjectRef.Subresource != "" {
			kind += "/" + e.ObjectRef.Subresource
		}
		by[kind]++
		total++
		if e.ResponseStatus.Code == 429 {
			throttled++
		}
	})
	return by, total, throttled
}

// forEachAudit calls fn with each event of an audit log (JSON lines) from where r is.
func forEachAudit(r io.Reader, fn func(*auditEvent)) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e auditEvent
		if json.Unmarshal(sc.Bytes(), &e) == nil {
			fn(&e)
		}
	}
}

// usage: a process's CPU seconds (user and system) and peak resident memory (VmHWM), in MiB.
func usage(pid int) (float64, float64) {
	if pid <= 0 {
		return 0, 0
	}
	var cpu, hwm float64
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
		s := string(b)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
		if len(fields) > 12 {
			ut, _ := strconv.ParseFloat(fields[11], 64)
			st, _ := strconv.ParseFloat(fields[12], 64)
			cpu = (ut + st) / 100 // clock ticks (USER_HZ 100)
		}
	}
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid)); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "VmHWM:") {
				kib, _ := strconv.ParseFloat(strings.Fields(l)[1], 64)
				hwm = kib / 1024
			}
		}
	}
	return cpu, hwm
}

// Line is the result as one line of text.
func (r *BindResult) Line() string {
	var kinds []string
	for k, v := range r.RequestsByKind {
		kinds = append(kinds, fmt.Sprintf("%s %d", k, v))
	}
	sort.Strings(kinds)
	return fmt.Sprintf("bind %s %s nodes=%d pods=%d: bound %d of %d, first %.2f s, last %.2f s: %.0f pods/s | create->bind p50 %.2f s p99 %.2f s (making the pods %.2f s) | requests %d = %.2f/bound pod, %d throttled (%s) | cpu gpuqd %.2f s, kube-apiserver %.2f s, kube-scheduler %.2f s, etcd+kubelets+creator %.2f s | VmHWM gpuqd %.0f MiB, kube-apiserver %.0f MiB",
		r.Config, r.Mode, r.Nodes, r.Pods, r.Bound, r.Pods, r.FirstBinding, r.LastBinding, r.BindsPerSecond,
		r.LatencyP50, r.LatencyP99, r.CreateSeconds, r.Requests, r.RequestsPerPod, r.Throttled, strings.Join(kinds, ", "),
		r.GpuqdCPU, r.APIServerCPU, r.SchedulerCPU, r.HarnessCPU, r.GpuqdHWMMiB, r.APIServerHWMMiB)
}

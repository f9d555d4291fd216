package bench

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

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"gpuq/tests/kubecluster/cluster"
	"gpuq/tests/kubecluster/nodesim"
	"gpuq/tests/kubecluster/peers"
)

// The systems compared.
const (
	KubeScheduler = "kube-scheduler"
	Kueue         = "kueue"
	Gpuq          = "gpuq"
)

// CompareOptions: one comparison run.
type CompareOptions struct {
	Self, Gpuqd, DeployDir string
	Kueue, KueueConfig     string // Kueue's manager and the folder of its CRDs, role and webhooks
	// ClientQPS: every scheduler's client limited to this many requests a second (burst twice
	// that); 0: each at its own defaults (kube-scheduler and Kueue 50/100, gpuqd unlimited).
	ClientQPS int
	// ControllerQPS: kube-controller-manager's client (the Job controller makes every system's
	// pods), the same for all systems.
	ControllerQPS int
	// JobSyncs: the Job controller's workers (--concurrent-job-syncs; its default 5 makes pods
	// at about 30 a second here, slower than either scheduler binds them); 0: its default.
	JobSyncs int
	// Backlog (throughput only; not Kueue, whose webhook must see each Job as it is made): the
	// scheduler starts only once every pod exists, and the times count from its start, so that
	// the run measures the scheduler rather than the Job controller making the pods.
	Backlog bool
	// GpuqSettings: top-level lines added to gpuqd's configuration (an A/B of one setting, e.g.
	// "nodeReservation: false"); empty: its defaults.
	GpuqSettings string
	Keep         bool
	Logf         func(string, ...any)
}

// RunResult is one workload through one system.
type RunResult struct {
	Workload string  `json:"workload"`
	System   string  `json:"system"`
	Seconds  float64 `json:"seconds"`           // from the first Job's creation to the run's end condition (or its limit)
	Finished bool    `json:"finished"`          // the end condition held before the limit
	Backlog  float64 `json:"backlog,omitempty"` // with Backlog: seconds until every pod existed, before the scheduler started
	Jobs     int     `json:"jobs"`
	Pods     int     `json:"pods"` // pods made for the workload's Jobs
	Running  int     `json:"running"`
	JobsDone int     `json:"jobsDone"`
	// Creation of a pod's Job to the pod Running, over the pods that ran.
	LatencyP50     float64 `json:"latencyP50"`
	LatencyP99     float64 `json:"latencyP99"`
	BoundPerSecond float64 `json:"boundPerSecond"` // pods bound / (last - first binding)
	// The scheduler's API requests (kube-scheduler's too for Kueue), from the audit log.
	Requests          int     `json:"requests"`
	Writes            int     `json:"writes"`
	WritesPerPod      float64 `json:"writesPerPod"`
	RequestsPerPod    float64 `json:"requestsPerPod"`
	CPUSeconds        float64 `json:"cpuSeconds"`        // the scheduler's processes, over the run
	PeakMiB           float64 `json:"peakMiB"`           // the largest of them
	Evicted           int     `json:"evicted"`           // pods stopped before they ended by themselves
	EvictedProtected  int     `json:"evictedProtected"`  // of those, pods a PodDisruptionBudget covered
	PartialGangsMax   int     `json:"partialGangsMax"`   // the most gangs partly bound at one sample
	PartialGPUSeconds float64 `json:"partialGpuSeconds"` // GPU-seconds held by partly bound gangs
	// Fairness: the integral over the run of sum |held - fair| over queues, in GPU-seconds, over
	// (capacity x seconds); Jain's index of held/fair at each steady state; each queue's largest
	// distance from its fair share there, as a fraction of it.
	ShareError    float64   `json:"shareError"`
	Jain          []float64 `json:"jain,omitempty"`
	WorstOff      []float64 `json:"worstOff,omitempty"`
	ReturnSeconds float64   `json:"returnSeconds,omitempty"` // wave 2: until the newcomers hold their fair share (within 5%)
	LenderSeconds float64   `json:"lenderSeconds,omitempty"` // reclaim: until all the lender's pods run
	Percentiles   []float64 `json:"percentiles,omitempty"`   // creation to Running: the 0th..100th percentile
	Samples       []Sample  `json:"samples"`
	Error         string    `json:"error,omitempty"`
}

// RunWorkload runs one workload through one system on a fresh control plane.
func RunWorkload(parent context.Context, o CompareOptions, w Workload, system string) (*RunResult, error) {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	logf := o.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	dir, err := os.MkdirTemp("", "kube-compare-")
	if err != nil {
		return nil, err
	}
	if !o.Keep {
		defer os.RemoveAll(dir)
	} else {
		logf("%s/%s: %s", w.Name, system, dir)
	}
	var manifests []string
	if system == Gpuq {
		// deploy/kubernetes as a cluster admin applies it (flowschema.yaml: gpuqd in kube-scheduler's
		// priority level).
		for _, f := range []string{"namespace.yaml", "serviceaccount.yaml", "clusterrole.yaml", "clusterrolebinding.yaml", "flowschema.yaml"} {
			manifests = append(manifests, filepath.Join(o.DeployDir, f))
		}
	}
	users := []string{schedulerUser}
	switch system {
	case Gpuq:
		users = []string{gpuqdUser}
	case Kueue:
		users = append(users, peers.KueueUser)
	}
	copts := cluster.Options{Dir: dir, Self: o.Self, ManifestFiles: manifests, AuditUsers: users,
		NodeMonitorGracePeriod: 50 * time.Second}
	if o.JobSyncs > 0 {
		copts.ControllerManagerArgs = append(copts.ControllerManagerArgs, fmt.Sprintf("--concurrent-job-syncs=%d", o.JobSyncs))
	}
	if o.ControllerQPS > 0 {
		copts.ControllerManagerArgs = append(copts.ControllerManagerArgs, fmt.Sprintf("--kube-api-qps=%d", o.ControllerQPS), fmt.Sprintf("--kube-api-burst=%d", 2*o.ControllerQPS))
	}
	if (system == KubeScheduler || system == Kueue) && o.ClientQPS > 0 {
		copts.SchedulerArgs = []string{fmt.Sprintf("--kube-api-qps=%d", o.ClientQPS), fmt.Sprintf("--kube-api-burst=%d", 2*o.ClientQPS)}
	}
	c, err := startWithNodes(ctx, copts, w.Nodes, 8)
	if err != nil {
		return nil, err
	}
	defer c.Stop()
	for _, q := range w.Queues {
		if _, err := c.Admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: q.Name}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, err
		}
	}
	if err := waitServiceAccounts(ctx, c.Admin, w.Queues); err != nil {
		return nil, err
	}
	backlog := o.Backlog && w.Name == "throughput" && system != Kueue
	var stops []func()
	defer func() {
		for _, stop := range stops {
			stop()
		}
	}()
	var pids []int
	// startGpuqd: gpuqd, once its informers have synced the pods.
	startGpuqd := func() error {
		g, err := startCompareGpuqd(dir, o, w.Queues, c.GpuqdKubeconfig)
		if err != nil {
			return err
		}
		stops = append(stops, g.stop)
		if err := waitLog(ctx, filepath.Join(dir, "gpuqd.out"), "kubernetes_synced what=/api/v1/pods", g); err != nil {
			return err
		}
		pids = []int{g.cmd.Process.Pid}
		return nil
	}
	switch system {
	case KubeScheduler:
		if backlog {
			if err := c.StopComponent(cluster.Scheduler, false); err != nil {
				return nil, err
			}
		} else {
			pids = []int{c.Pid(cluster.Scheduler)}
		}
	case Kueue:
		k, err := peers.StartKueue(ctx, c, peers.KueueOptions{Binary: o.Kueue, ConfigDir: o.KueueConfig, Dir: dir,
			FairSharing: true, WaitForPodsReady: 5 * time.Minute, QPS: o.ClientQPS, Burst: 2 * o.ClientQPS})
		if err != nil {
			return nil, err
		}
		defer k.Stop()
		if err := kueueQueues(ctx, c, dir, w.Queues); err != nil {
			return nil, err
		}
		pids = []int{k.Pid(), c.Pid(cluster.Scheduler)}
	case Gpuq:
		if !backlog {
			if err := startGpuqd(); err != nil {
				return nil, err
			}
		}
	default:
		return nil, fmt.Errorf("unknown system %q (kube-scheduler, kueue, gpuq)", system)
	}
	cpuBefore := 0.0
	for _, pid := range pids {
		cpu, _ := usage(pid)
		cpuBefore += cpu
	}
	if err := protect(ctx, c.Admin, w); err != nil {
		return nil, err
	}
	cfg := rest.CopyConfig(c.AdminConfig)
	cfg.QPS, cfg.Burst = -1, 0
	creator, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	auditFrom := auditSize(c.AuditLog)
	start := time.Now()
	obs, err := newObserver(ctx, c.Admin, w, start)
	if err != nil {
		return nil, err
	}
	obs.sample(0) // the empty start, the first point of each line
	createErr := make(chan error, 1)
	go func() { createErr <- createJobs(ctx, creator, w, system, obs, start) }()
	res := &RunResult{Workload: w.Name, System: system, Jobs: len(w.Jobs)}
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	last := time.Now()
	created := false
	var createdAt time.Time
	// step waits for the next of: the creation ending, the context's end, a sample.
	step := func() error {
		select {
		case err := <-createErr:
			if err != nil {
				return err
			}
			created, createdAt = true, time.Now()
		case <-ctx.Done():
			return ctx.Err()
		case now := <-tick.C:
			obs.sample(now.Sub(last).Seconds())
			last = now
		}
		return nil
	}
	if backlog {
		// Every Job made and every pod there, then the scheduler starts and the clock with it.
		pods := 0
		for _, j := range w.Jobs {
			pods += j.Pods
		}
		for !created || obs.PodsMade() < pods {
			if err := step(); err != nil {
				return nil, err
			}
			if time.Since(start) >= w.Limit {
				return nil, fmt.Errorf("backlog: %d of %d pods made within the workload's limit", obs.PodsMade(), pods)
			}
		}
		res.Backlog = time.Since(start).Seconds()
		start = time.Now()
		logf("%s/%s: %d pods wait after %.0f s; starting the scheduler", w.Name, system, pods, res.Backlog)
		if system == Gpuq {
			if err := startGpuqd(); err != nil {
				return nil, err
			}
		} else {
			if err := c.StartComponent(ctx, cluster.Scheduler); err != nil {
				return nil, err
			}
			pids = []int{c.Pid(cluster.Scheduler)}
		}
	}
	for {
		if err := step(); err != nil {
			return nil, err
		}
		elapsed := time.Since(start)
		if created && w.Until != nil && w.Until(obs) {
			res.Finished = true
			break
		}
		if elapsed >= w.Limit || (created && w.Patience > 0 && time.Since(createdAt) >= w.Patience) {
			res.Finished = w.Until == nil
			break
		}
	}
	res.Seconds = time.Since(start).Seconds()
	// The state at the end, so that a run shorter than a tick still has a line to draw.
	obs.sample(time.Since(last).Seconds())
	for _, pid := range pids {
		cpu, hwm := usage(pid)
		res.CPUSeconds += cpu
		res.PeakMiB = max(res.PeakMiB, hwm)
	}
	res.CPUSeconds -= cpuBefore
	time.Sleep(time.Second) // requests that trail the end
	summarize(res, obs, w, start)
	res.Requests, res.Writes = countAudit(c.AuditLog, auditFrom, users)
	if res.Pods > 0 {
		res.RequestsPerPod = float64(res.Requests) / float64(res.Pods)
		res.WritesPerPod = float64(res.Writes) / float64(res.Pods)
	}
	return res, nil
}

// waitServiceAccounts: pods of a namespace are refused until its default service account exists.
func waitServiceAccounts(ctx context.Context, client kubernetes.Interface, qs []Queue) error {
	deadline := time.Now().Add(time.Minute)
	for _, q := range qs {
		for {
			if _, err := client.CoreV1().ServiceAccounts(q.Name).Get(ctx, "default", metav1.GetOptions{}); err == nil {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("namespace %s has no default service account after a minute", q.Name)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return nil
}

// protect: a PodDisruptionBudget allowing no disruption over each queue's protected Jobs' pods
// (minAvailable: all of them; a maxUnavailable budget needs its pods' controller to have a
// scale subresource, which Jobs have not).
func protect(ctx context.Context, client kubernetes.Interface, w Workload) error {
	pods := map[string]int{}
	var queues []string
	for _, j := range w.Jobs {
		if j.Protected {
			if pods[j.Queue] == 0 {
				queues = append(queues, j.Queue)
			}
			pods[j.Queue] += j.Pods
		}
	}
	for _, q := range queues {
		all := intstr.FromInt32(int32(pods[q]))
		pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "protected", Namespace: q},
			Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &all,
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"bench.gpuq.io/protected": "true"}}}}
		if _, err := client.PolicyV1().PodDisruptionBudgets(q).Create(ctx, pdb, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	return nil
}

// jobGrace: the pods' termination grace period, seconds (a stopped pod's GPUs are free after it).
const jobGrace = 5

// jobFor: the same Job for every system; only the labels, an annotation and schedulerName differ.
func jobFor(j JobSpec, system string) *batchv1.Job {
	gpus := resource.MustParse(strconv.Itoa(j.GPUsPerPod))
	n := int32(j.Pods)
	backoff := int32(1000) // an evicted pod is made again, whatever the count
	grace := int64(jobGrace)
	labels := map[string]string{}
	annotations := map[string]string{nodesim.RunSecondsAnnotation: strconv.FormatFloat(j.RunSeconds, 'f', -1, 64)}
	jobLabels := map[string]string{}
	scheduler := "default-scheduler"
	switch system {
	case Gpuq:
		scheduler = "gpuq"
		labels["gpuq.io/queue"] = j.Queue
		if j.Pods > 1 {
			labels["gpuq.io/pod-group"] = j.Name
			annotations["gpuq.io/pod-group-size"] = strconv.Itoa(j.Pods)
		}
	case Kueue:
		jobLabels["kueue.x-k8s.io/queue-name"] = j.Queue
	}
	if j.Protected {
		labels["bench.gpuq.io/protected"] = "true"
	}
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: j.Name, Namespace: j.Queue, Labels: jobLabels},
		Spec: batchv1.JobSpec{
			Parallelism: &n, Completions: &n, BackoffLimit: &backoff,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: annotations},
				Spec: corev1.PodSpec{
					SchedulerName:                 scheduler,
					TerminationGracePeriodSeconds: &grace,
					RestartPolicy:                 corev1.RestartPolicyNever,
					Containers: []corev1.Container{{Name: "main", Image: "busybox",
						Resources: corev1.ResourceRequirements{
							Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), "nvidia.com/gpu": gpus},
							Limits:   corev1.ResourceList{"nvidia.com/gpu": gpus}}}},
				},
			},
		},
	}
}

// createJobs creates the workload's Jobs at their moments, 32 at a time.
func createJobs(ctx context.Context, client kubernetes.Interface, w Workload, system string, obs *Observer, start time.Time) error {
	next := make(chan JobSpec)
	errs := make(chan error, 32)
	var wg sync.WaitGroup
	for i := 0; i < 32; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range next {
				obs.jobCreated(j.Name, time.Now())
				if _, err := client.BatchV1().Jobs(j.Queue).Create(ctx, jobFor(j, system), metav1.CreateOptions{}); err != nil {
					select {
					case errs <- fmt.Errorf("create Job %s/%s: %w", j.Queue, j.Name, err):
					default:
					}
				}
			}
		}()
	}
	var condition time.Time // when the AfterRunning condition held
	for _, j := range w.Jobs {
		at := start.Add(j.At)
		if j.AfterRunning > 0 {
			for condition.IsZero() && ctx.Err() == nil {
				if obs.RunningPods() >= j.AfterRunning {
					condition = time.Now()
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
			at = condition.Add(j.At)
		}
		if d := time.Until(at); d > 0 {
			select {
			case <-ctx.Done():
			case <-time.After(d):
			}
		}
		select {
		case next <- j:
		case <-ctx.Done():
		}
	}
	close(next)
	wg.Wait()
	close(errs)
	return <-errs
}

// summarize computes the result's numbers from what the observer saw.
func summarize(res *RunResult, obs *Observer, w Workload, start time.Time) {
	recs := obs.records()
	res.JobsDone = obs.JobsDone()
	obs.mu.Lock()
	created := obs.created
	if w.Measure == "done" && res.Finished {
		var last time.Time
		for _, at := range obs.jobDone {
			if at.After(last) {
				last = at
			}
		}
		res.Seconds = last.Sub(start).Seconds()
	}
	res.Samples = obs.samples
	res.PartialGPUSeconds = obs.partialGPUSeconds
	obs.mu.Unlock()
	var lat []float64
	var firstBound, lastBound, lastRunning time.Time
	bound := 0
	for _, r := range recs {
		res.Pods++
		if !r.running.IsZero() {
			res.Running++
			from := created[r.job]
			if from.Before(start) {
				from = start // a backlog's pods wait for the scheduler to start
			}
			lat = append(lat, r.running.Sub(from).Seconds())
			if r.running.After(lastRunning) {
				lastRunning = r.running
			}
		}
		if !r.bound.IsZero() {
			bound++
			if firstBound.IsZero() || r.bound.Before(firstBound) {
				firstBound = r.bound
			}
			if r.bound.After(lastBound) {
				lastBound = r.bound
			}
		}
		if r.evicted {
			res.Evicted++
			if r.protected {
				res.EvictedProtected++
			}
		}
	}
	if w.Measure == "running" && res.Finished {
		res.Seconds = lastRunning.Sub(start).Seconds()
	}
	if len(lat) > 0 {
		sort.Float64s(lat)
		res.LatencyP50, res.LatencyP99 = lat[len(lat)*50/100], lat[(len(lat)-1)*99/100]
		for p := 0; p <= 100; p++ {
			res.Percentiles = append(res.Percentiles, lat[(len(lat)-1)*p/100])
		}
	}
	if span := lastBound.Sub(firstBound).Seconds(); span > 0 {
		res.BoundPerSecond = float64(bound) / span
	}
	for _, s := range res.Samples {
		if s.Partial > res.PartialGangsMax {
			res.PartialGangsMax = s.Partial
		}
	}
	capacity := float64(totalNominal(w.Queues))
	if len(w.Steady) > 0 {
		res.ShareError = shareError(res.Samples, w.Queues, capacity)
		for _, st := range w.Steady {
			jain, worst := steady(res.Samples, w.Queues, st)
			res.Jain = append(res.Jain, jain)
			res.WorstOff = append(res.WorstOff, worst)
		}
		res.ReturnSeconds = returnTime(res.Samples, w)
	}
	if w.Lender != "" {
		var lendStart, lastRun time.Time
		n := 0
		for _, j := range w.Jobs {
			if at, ok := created[j.Name]; ok && j.Queue == w.Lender && (lendStart.IsZero() || at.Before(lendStart)) {
				lendStart = at
			}
		}
		for _, r := range recs {
			if r.queue == w.Lender && !r.running.IsZero() {
				n++
				if r.running.After(lastRun) {
					lastRun = r.running
				}
			}
		}
		if n > 0 && res.Finished {
			res.LenderSeconds = lastRun.Sub(lendStart).Seconds()
		} else {
			res.LenderSeconds = -1
		}
	}
}

// shareError: the time integral of sum over queues of |held - fair|, over capacity x time.
func shareError(samples []Sample, qs []Queue, capacity float64) float64 {
	if len(samples) < 2 {
		return 0
	}
	total := 0.0
	for i := 1; i < len(samples); i++ {
		dt := samples[i].At - samples[i-1].At
		for _, q := range qs {
			d := float64(samples[i].Held[q.Name]) - samples[i].Fair[q.Name]
			if d < 0 {
				d = -d
			}
			total += d * dt
		}
	}
	return total / (capacity * (samples[len(samples)-1].At - samples[0].At))
}

// steady: over one steady period, Jain's index of held/fair over the queues with a fair share
// (averaged over the period), and the largest |held - fair| / fair of any queue's average.
func steady(samples []Sample, qs []Queue, period [2]time.Duration) (float64, float64) {
	held, fair := map[string]float64{}, map[string]float64{}
	n := 0
	for _, s := range samples {
		if s.At < period[0].Seconds() || s.At > period[1].Seconds() {
			continue
		}
		n++
		for _, q := range qs {
			held[q.Name] += float64(s.Held[q.Name])
			fair[q.Name] += s.Fair[q.Name]
		}
	}
	if n == 0 {
		return 0, 0
	}
	var sum, sq, worst float64
	k := 0
	for _, q := range qs {
		if fair[q.Name] <= 0 {
			continue
		}
		x := held[q.Name] / fair[q.Name]
		sum += x
		sq += x * x
		k++
		if d := x - 1; d > worst || -d > worst {
			worst = max(d, -d)
		}
	}
	if sq == 0 {
		return 0, worst
	}
	return sum * sum / (float64(k) * sq), worst
}

// returnTime: from wave 2's start until every queue holds within 5% of its fair share (or -1).
func returnTime(samples []Sample, w Workload) float64 {
	if len(w.Steady) < 2 {
		return 0
	}
	from := w.Steady[0][1].Seconds()
	for _, s := range samples {
		if s.At < from {
			continue
		}
		ok := true
		for _, q := range w.Queues {
			if f := s.Fair[q.Name]; f > 0 && float64(s.Held[q.Name]) < 0.95*f {
				ok = false
			}
		}
		if ok {
			return s.At - from
		}
	}
	return -1
}

// auditSize: the audit log's length now (requests after it are the run's).
func auditSize(path string) int64 {
	st, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return st.Size()
}

// countAudit: the users' requests and writes (not get, list or watch) after offset `from`.
func countAudit(path string, from int64, users []string) (int, int) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0
	}
	defer f.Close()
	if _, err := f.Seek(from, 0); err != nil {
		return 0, 0
	}
	want := map[string]bool{}
	for _, u := range users {
		want[u] = true
	}
	reqs, writes := 0, 0
	forEachAudit(f, func(e *auditEvent) {
		if e.Stage != "ResponseComplete" || !want[e.User.Username] {
			return
		}
		reqs++
		if e.Verb != "get" && e.Verb != "list" && e.Verb != "watch" {
			writes++
		}
	})
	return reqs, writes
}

func startCompareGpuqd(dir string, o CompareOptions, qs []Queue, kubeconfig string) (*gpuqdProc, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "grpc: 127.0.0.1:0\nhttp: 127.0.0.1:0\nbinder: kubernetes\nkubernetes:\n  kubeconfig: %s\n", kubeconfig)
	if o.ClientQPS > 0 {
		fmt.Fprintf(&b, "  qps: %d\n  burst: %d\n", o.ClientQPS, 2*o.ClientQPS)
	}
	if o.GpuqSettings != "" {
		b.WriteString(strings.TrimSpace(o.GpuqSettings) + "\n")
	}
	b.WriteString("fairSharing:\n  enabled: true\nqueues:\n")
	for _, q := range qs {
		fmt.Fprintf(&b, "  - name: %s\n    cohort: all\n    weight: %d\n    quotas: [{flavor: default, resources: {gpu: {nominal: %d}}}]\n    preemption: {reclaimWithinCohort: Any, withinQueue: LowerPriority}\n",
			q.Name, max(q.Weight, 1), q.Nominal)
	}
	path := filepath.Join(dir, "gpuqd.yaml")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		return nil, err
	}
	return startGpuqdWith(dir, o.Gpuqd, path)
}

// kueueQueues: Kueue's objects equal to gpuq's queues: one ResourceFlavor, a ClusterQueue per
// queue (its nominal GPUs; CPU and memory without limit; cohort "all"; reclaim within the
// cohort Any, lower priorities within the queue; the fair-sharing weight) and a LocalQueue of
// the same name in the queue's namespace.
func kueueQueues(ctx context.Context, c *cluster.Cluster, dir string, qs []Queue) error {
	var b strings.Builder
	b.WriteString("apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata: {name: default}\n")
	for _, q := range qs {
		fmt.Fprintf(&b, `---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: %[1]s}
spec:
  cohortName: all
  namespaceSelector: {}
  fairSharing: {weight: "%[2]d"}
  preemption: {reclaimWithinCohort: Any, withinClusterQueue: LowerPriority}
  resourceGroups:
    - coveredResources: [cpu, memory, nvidia.com/gpu]
      flavors:
        - name: default
          resources:
            - {name: cpu, nominalQuota: "100000"}
            - {name: memory, nominalQuota: 100Ti}
            - {name: nvidia.com/gpu, nominalQuota: "%[3]d"}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: %[1]s, namespace: %[1]s}
spec: {clusterQueue: %[1]s}
`, q.Name, max(q.Weight, 1), q.Nominal)
	}
	path := filepath.Join(dir, "kueue-queues.yaml")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		return err
	}
	return c.Apply(ctx, path)
}

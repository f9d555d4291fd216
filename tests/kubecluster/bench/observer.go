package bench

import (
	"context"
	"sort"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// podRecord is what the observer saw of one pod.
type podRecord struct {
	queue, job string
	gpus       int
	bound      time.Time // first seen with a node
	running    time.Time // first seen Running
	ended      time.Time // Succeeded or Failed, or deleted
	succeeded  bool
	evicted    bool // deleted (or failed) before it ended by itself, once it had been bound
	protected  bool
}

// Sample is the state at one moment of a run.
type Sample struct {
	At          float64            `json:"at"`          // seconds from the workload's start
	Held        map[string]int     `json:"held"`        // GPUs of bound, unfinished pods, by queue
	Demand      map[string]int     `json:"demand"`      // held plus GPUs of pods and Jobs waiting, by queue
	Fair        map[string]float64 `json:"fair"`        // the weighted max-min share of the demands
	Partial     int                `json:"partial"`     // gangs with some but not all pods bound
	PartialGPUs int                `json:"partialGpus"` // GPUs those hold
}

// Observer follows pods and Jobs through informers and samples the cluster's state.
type Observer struct {
	start             time.Time
	queues            []Queue
	specs             map[string]JobSpec // by Job name
	mu                sync.Mutex
	pods              map[string]*podRecord // by namespace/name
	jobDone           map[string]time.Time  // when each Job was first seen complete (or failed)
	created           map[string]time.Time
	samples           []Sample
	partialGPUSeconds float64
	partialPrev       map[string]bool
}

func newObserver(ctx context.Context, client kubernetes.Interface, w Workload, start time.Time) (*Observer, error) {
	o := &Observer{start: start, queues: w.Queues, specs: map[string]JobSpec{}, pods: map[string]*podRecord{},
		jobDone: map[string]time.Time{}, created: map[string]time.Time{}}
	for _, j := range w.Jobs {
		o.specs[j.Name] = j
	}
	f := informers.NewSharedInformerFactory(client, 0)
	pods := f.Core().V1().Pods().Informer()
	_, _ = pods.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { o.pod(obj.(*corev1.Pod), false) },
		UpdateFunc: func(_, obj any) { o.pod(obj.(*corev1.Pod), false) },
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if p, ok := obj.(*corev1.Pod); ok {
				o.pod(p, true)
			}
		},
	})
	jobs := f.Batch().V1().Jobs().Informer()
	_, _ = jobs.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { o.job(obj.(*batchv1.Job)) },
		UpdateFunc: func(_, obj any) { o.job(obj.(*batchv1.Job)) },
	})
	f.Start(ctx.Done())
	for _, ok := range f.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return nil, ctx.Err()
		}
	}
	return o, nil
}

func (o *Observer) jobCreated(name string, at time.Time) {
	o.mu.Lock()
	o.created[name] = at
	o.mu.Unlock()
}

func (o *Observer) job(j *batchv1.Job) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, c := range j.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			if _, seen := o.jobDone[j.Name]; !seen {
				o.jobDone[j.Name] = time.Now()
			}
		}
	}
}

func (o *Observer) pod(p *corev1.Pod, deleted bool) {
	name := p.Labels["batch.kubernetes.io/job-name"]
	spec, ok := o.specs[name]
	if !ok {
		return
	}
	now := time.Now()
	o.mu.Lock()
	defer o.mu.Unlock()
	key := p.Namespace + "/" + p.Name
	r := o.pods[key]
	if r == nil {
		r = &podRecord{queue: spec.Queue, job: name, gpus: spec.GPUsPerPod, protected: spec.Protected}
		o.pods[key] = r
	}
	if !r.ended.IsZero() {
		return
	}
	if p.Spec.NodeName != "" && r.bound.IsZero() {
		r.bound = now
	}
	if p.Status.Phase == corev1.PodRunning && r.running.IsZero() {
		r.running = now
	}
	switch {
	case p.Status.Phase == corev1.PodSucceeded:
		r.ended, r.succeeded = now, true
	case p.Status.Phase == corev1.PodFailed || deleted || p.DeletionTimestamp != nil:
		r.ended = now
		r.evicted = !r.bound.IsZero()
	}
}

// PodsMade: pods of the workload seen so far.
func (o *Observer) PodsMade() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.pods)
}

// RunningPods: pods of the workload Running now.
func (o *Observer) RunningPods() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for _, r := range o.pods {
		if !r.running.IsZero() && r.ended.IsZero() {
			n++
		}
	}
	return n
}

// RunningIn: pods of one queue Running now.
func (o *Observer) RunningIn(queue string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for _, r := range o.pods {
		if r.queue == queue && !r.running.IsZero() && r.ended.IsZero() {
			n++
		}
	}
	return n
}

// JobsDone: Jobs complete (or failed).
func (o *Observer) JobsDone() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.jobDone)
}

// sample records the state now; dt is the time since the last sample (for GPU-seconds).
func (o *Observer) sample(dt float64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	s := Sample{At: time.Since(o.start).Seconds(), Held: map[string]int{}, Demand: map[string]int{}}
	bound := map[string]int{}     // by Job: pods bound and unfinished
	present := map[string]int{}   // by Job: pods unfinished
	succeeded := map[string]int{} // by Job: pods that ran to their end
	for _, r := range o.pods {
		if r.succeeded {
			succeeded[r.job]++
		}
		if !r.ended.IsZero() {
			continue
		}
		present[r.job]++
		s.Demand[r.queue] += r.gpus
		if !r.bound.IsZero() {
			s.Held[r.queue] += r.gpus
			bound[r.job]++
		}
	}
	// Jobs created and not done whose pods do not all exist (suspended by Kueue, or the Job
	// controller has not made them yet) wait for the rest.
	for name, spec := range o.specs {
		if _, done := o.jobDone[name]; done {
			continue
		}
		if _, ok := o.created[name]; !ok {
			continue
		}
		if missing := spec.Pods - present[name]; missing > 0 {
			s.Demand[spec.Queue] += missing * spec.GPUsPerPod
		}
	}
	// A gang is partly bound when some of its pods hold GPUs while others wait (not those that
	// have run to their end), at this sample and the one before (not a gang caught in the
	// 100 ms its bindings take).
	partial := map[string]bool{}
	for job, b := range bound {
		if spec := o.specs[job]; spec.Pods > 1 && b+succeeded[job] < spec.Pods {
			partial[job] = true
			if o.partialPrev[job] {
				s.Partial++
				s.PartialGPUs += b * spec.GPUsPerPod
			}
		}
	}
	o.partialPrev = partial
	o.partialGPUSeconds += float64(s.PartialGPUs) * dt
	s.Fair = fairShares(o.queues, s.Demand, totalNominal(o.queues))
	o.samples = append(o.samples, s)
}

func totalNominal(qs []Queue) int {
	n := 0
	for _, q := range qs {
		n += q.Nominal
	}
	return n
}

// fairShares: weighted max-min (water-filling) of `capacity` GPUs over the queues' demands.
func fairShares(qs []Queue, demand map[string]int, capacity int) map[string]float64 {
	out := map[string]float64{}
	left := float64(capacity)
	active := []Queue{}
	for _, q := range qs {
		if demand[q.Name] > 0 {
			active = append(active, q)
		}
	}
	for len(active) > 0 && left > 1e-9 {
		wsum := 0.0
		for _, q := range active {
			wsum += float64(max(q.Weight, 1))
		}
		var still []Queue
		given := 0.0
		for _, q := range active {
			share := left * float64(max(q.Weight, 1)) / wsum
			want := float64(demand[q.Name]) - out[q.Name]
			if want <= share {
				out[q.Name] += want
				given += want
			} else {
				still = append(still, q)
			}
		}
		if len(still) == len(active) {
			for _, q := range active {
				out[q.Name] += left * float64(max(q.Weight, 1)) / wsum
			}
			break
		}
		left -= given
		active = still
	}
	return out
}

// records returns a copy of the pods seen, sorted by name (for stable output).
func (o *Observer) records() []podRecord {
	o.mu.Lock()
	defer o.mu.Unlock()
	keys := make([]string, 0, len(o.pods))
	for k := range o.pods {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]podRecord, 0, len(keys))
	for _, k := range keys {
		out = append(out, *o.pods[k])
	}
	return out
}

package bench

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Queue is one tenant: a gpuq queue, a Kueue ClusterQueue (with a LocalQueue of the same name),
// and a namespace of the same name, where its Jobs go.
type Queue struct {
	Name    string
	Nominal int // GPUs
	Weight  int // fair-sharing weight (1 when 0)
}

// JobSpec is one batch/v1 Job of a workload: Pods pods (parallelism = completions) of
// GPUsPerPod GPUs each, running RunSeconds once started, created At after the workload starts.
type JobSpec struct {
	Name       string
	Queue      string
	At         time.Duration
	Pods       int
	GPUsPerPod int
	RunSeconds float64
	Protected  bool // covered by a PodDisruptionBudget that allows no disruption
	// AfterRunning: the Job is created once this many of the workload's pods run (At after
	// that), not At after the start.
	AfterRunning int
}

// Workload is what the comparison runs through each system, on a fresh control plane.
type Workload struct {
	Name   string
	Nodes  int // simulated 8-GPU nodes
	Queues []Queue
	Jobs   []JobSpec
	// Until: the run ends once this holds (checked every sample) or after Limit.
	Until func(*Observer) bool
	Limit time.Duration
	// Patience: when set, the run ends at most this long after the last Job was created.
	Patience time.Duration
	// Measure: what the run's time is, once Until holds: "running" (until the last pod ran) or
	// "done" (until the last Job was done); else the time Until was seen to hold.
	Measure string
	// Steady: the periods (from the workload's start) over which the fairness numbers are taken.
	Steady [][2]time.Duration
	// Reclaim: the lender's Jobs (a queue name): time until they all run.
	Lender string
}

// Sizes scales a workload's counts (1: the sizes of bench/README.md).
type Sizes struct {
	Scale float64
}

func (s Sizes) n(v int) int { return max(1, int(math.Round(float64(v)*s.Scale))) }

func fourQueues(nominal int, weights []int) []Queue {
	var qs []Queue
	for i := 0; i < 4; i++ {
		qs = append(qs, Queue{Name: fmt.Sprintf("team-%d", i), Nominal: nominal, Weight: weights[i]})
	}
	return qs
}

// Throughput: 10,000 one-GPU Jobs from 4 queues, created at once, room for all (1,250 nodes
// of 8 GPUs at scale 1), each running longer than the run.
func Throughput(s Sizes) Workload {
	jobs := s.n(10000)
	nodes := (jobs + 7) / 8
	w := Workload{Name: "throughput", Nodes: nodes, Queues: fourQueues(jobs, []int{1, 1, 1, 1}), Limit: 20 * time.Minute}
	for i := 0; i < jobs; i++ {
		w.Jobs = append(w.Jobs, JobSpec{Name: fmt.Sprintf("t-%05d", i), Queue: fmt.Sprintf("team-%d", i%4), Pods: 1, GPUsPerPod: 1, RunSeconds: 3600})
	}
	w.Until = func(o *Observer) bool { return o.RunningPods() >= jobs }
	w.Measure = "running"
	return w
}

// TraceJob: a job's GPUs and run time from the trace.
type TraceJob struct {
	GPUs    int
	Seconds float64
}

// ReadPhilly reads a Gavel/Philly trace file (tab-separated: job_type, command, num_steps_arg,
// needs_data_dir, total_steps, arrival_time_s, scale_factor): the jobs of 1 to 8 GPUs, their run
// time proportional to total_steps (synthetic, as the trace has no durations: the median job
// runs `median` seconds, clipped to [median/8, median*4]).
func ReadPhilly(path string, median float64) ([]TraceJob, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	type row struct {
		gpus  int
		steps float64
	}
	var rows []row
	sc := bufio.NewScanner(f)
	line := 0
	for sc.Scan() {
		line++
		cols := strings.Split(sc.Text(), "\t")
		if len(cols) != 7 {
			return nil, fmt.Errorf("%s:%d: %d columns, want 7 (job_type, command, num_steps_arg, needs_data_dir, total_steps, arrival_time_s, scale_factor)", path, line, len(cols))
		}
		steps, err1 := strconv.ParseFloat(cols[4], 64)
		gpus, err2 := strconv.Atoi(cols[6])
		if err1 != nil || err2 != nil || steps <= 0 {
			return nil, fmt.Errorf("%s:%d: total_steps %q or scale_factor %q is not a positive number", path, line, cols[4], cols[6])
		}
		if gpus >= 1 && gpus <= 8 {
			rows = append(rows, row{gpus, steps})
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("%s: no job of 1 to 8 GPUs", path)
	}
	steps := make([]float64, len(rows))
	for i, r := range rows {
		steps[i] = r.steps
	}
	sort.Float64s(steps)
	mid := steps[len(steps)/2]
	out := make([]TraceJob, len(rows))
	for i, r := range rows {
		secs := math.Min(math.Max(median*r.steps/mid, median/8), median*4)
		out[i] = TraceJob{GPUs: r.gpus, Seconds: math.Round(secs*10) / 10}
	}
	return out, nil
}

// Fairness: 4 queues on 32 nodes (256 GPUs), nominal 64 each or in the weights' ratio, jobs of 1-8 GPUs drawn in turn from
// the trace. Wave 1: team-0 and team-1 ask for more than the whole cluster; wave 2 (at `wave`):
// team-2 and team-3 join, and the borrowed GPUs must come back; wave 3 (at 2 x wave): team-0
// asks for nothing more, and once its backlog has run the others share what it leaves. The
// fair share at each moment is the weighted max-min share of the queues' demands (what each
// runs and waits for).
func Fairness(trace []TraceJob, weights []int, wave time.Duration) Workload {
	name := "fairness"
	if weights[0] != weights[3] {
		name = "fairness-weighted"
	}
	// Nominal quotas in the weights' ratio (256 GPUs in all), the fair-sharing weights the same:
	// a queue's guaranteed share and its share of what others leave agree.
	total := 0
	for _, x := range weights {
		total += x
	}
	qs := fourQueues(64, weights)
	for i := range qs {
		qs[i].Nominal = 256 * weights[i] / total
	}
	w := Workload{Name: name, Nodes: 32, Queues: qs, Limit: 3*wave + 30*time.Second}
	next := 0
	// A queue asking from `from` to `to`: jobs from the trace, in turn, until its work is 1.5
	// times what the whole cluster can run in that time; half of it at `from`, the rest
	// arriving evenly (by work) until `to`.
	add := func(q int, from, to time.Duration) {
		need := 1.5 * 256 * (to - from).Seconds()
		for sum := 0.0; sum < need; {
			tj := trace[next%len(trace)]
			next++
			at := from
			if sum >= need/2 {
				at = from + time.Duration(float64(to-from)*(sum-need/2)/(need/2))
			}
			w.Jobs = append(w.Jobs, JobSpec{Name: fmt.Sprintf("f%d-%05d", q, len(w.Jobs)), Queue: fmt.Sprintf("team-%d", q), At: at,
				Pods: 1, GPUsPerPod: tj.GPUs, RunSeconds: tj.Seconds})
			sum += float64(tj.GPUs) * tj.Seconds
		}
	}
	add(0, 0, 2*wave)
	add(1, 0, 3*wave)
	add(2, wave, 3*wave)
	add(3, wave, 3*wave)
	sort.SliceStable(w.Jobs, func(i, j int) bool { return w.Jobs[i].At < w.Jobs[j].At })
	// Steady states: the last half of each wave.
	w.Steady = [][2]time.Duration{{wave / 2, wave}, {wave + wave/2, 2 * wave}, {2*wave + wave/2, 3 * wave}}
	return w
}

// Gangs: 64 nodes (512 GPUs), 100 eight-pod Jobs (4 GPUs a pod: 32 GPUs a gang) and 2,000
// one-pod one-GPU Jobs, all created at once (more than fits), in one queue of the cluster's size.
func Gangs(s Sizes, run float64) Workload {
	gangs, singles := s.n(100), s.n(2000)
	w := Workload{Name: "gangs", Nodes: 64, Queues: []Queue{{Name: "team-0", Nominal: 512, Weight: 1}}, Limit: 30 * time.Minute}
	for i := 0; i < max(gangs, singles); i++ {
		if i < gangs {
			w.Jobs = append(w.Jobs, JobSpec{Name: fmt.Sprintf("gang-%03d", i), Queue: "team-0", Pods: 8, GPUsPerPod: 4, RunSeconds: run})
		}
		if i < singles {
			w.Jobs = append(w.Jobs, JobSpec{Name: fmt.Sprintf("one-%04d", i), Queue: "team-0", Pods: 1, GPUsPerPod: 1, RunSeconds: run})
		}
	}
	w.Until = func(o *Observer) bool { return o.JobsDone() >= len(w.Jobs) }
	w.Measure = "done"
	return w
}

// Reclaim: 4 queues of nominal 64 on 32 nodes; team-1..3 borrow all of team-0's quota (256
// one-GPU Jobs that run longer than the run, half of team-1's and team-2's covered by a
// PodDisruptionBudget that allows no disruption); `settle` after they all run, team-0 submits
// 64 one-GPU Jobs.
func Reclaim(s Sizes, settle time.Duration) Workload {
	w := Workload{Name: "reclaim", Nodes: 32, Queues: fourQueues(64, []int{1, 1, 1, 1}), Limit: 10 * time.Minute, Patience: 2 * time.Minute, Lender: "team-0"}
	for i := 0; i < 256; i++ {
		q := 1 + i%3
		w.Jobs = append(w.Jobs, JobSpec{Name: fmt.Sprintf("b%d-%03d", q, i), Queue: fmt.Sprintf("team-%d", q), Pods: 1, GPUsPerPod: 1,
			RunSeconds: 7200, Protected: q != 3 && (i/3)%2 == 0})
	}
	lend := s.n(64)
	for i := 0; i < lend; i++ {
		w.Jobs = append(w.Jobs, JobSpec{Name: fmt.Sprintf("l0-%03d", i), Queue: "team-0", At: settle, AfterRunning: 256, Pods: 1, GPUsPerPod: 1, RunSeconds: 7200})
	}
	w.Until = func(o *Observer) bool { return o.RunningIn("team-0") >= lend }
	return w
}

package bench

import (
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestFairSharesWaterFilling(t *testing.T) {
	qs := fourQueues(64, []int{1, 2, 3, 4})
	// Everyone asks for more than the cluster: shares by weight.
	got := fairShares(qs, map[string]int{"team-0": 999, "team-1": 999, "team-2": 999, "team-3": 999}, 250)
	for i, want := range []float64{25, 50, 75, 100} {
		if q := qs[i].Name; !near(got[q], want) {
			t.Errorf("%s: %v, want %v", q, got[q], want)
		}
	}
	// team-3 asks for 10: the 90 it leaves goes to the others by weight (1:2:3 of 240).
	got = fairShares(qs, map[string]int{"team-0": 999, "team-1": 999, "team-2": 999, "team-3": 10}, 250)
	for i, want := range []float64{40, 80, 120, 10} {
		if q := qs[i].Name; !near(got[q], want) {
			t.Errorf("%s: %v, want %v", q, got[q], want)
		}
	}
	// A queue that asks for nothing has no share; everyone satisfied gets what it asks.
	got = fairShares(qs, map[string]int{"team-0": 5, "team-1": 7}, 250)
	if !near(got["team-0"], 5) || !near(got["team-1"], 7) || got["team-2"] != 0 {
		t.Errorf("%v", got)
	}
}

func TestSteadyJainAndShareError(t *testing.T) {
	qs := fourQueues(64, []int{1, 1, 1, 1})[:2]
	fair := map[string]float64{"team-0": 128, "team-1": 128}
	samples := []Sample{
		{At: 0, Held: map[string]int{"team-0": 128, "team-1": 128}, Fair: fair},
		{At: 1, Held: map[string]int{"team-0": 128, "team-1": 128}, Fair: fair},
		{At: 2, Held: map[string]int{"team-0": 192, "team-1": 64}, Fair: fair},
	}
	jain, worst := steady(samples, qs, [2]time.Duration{0, time.Second})
	if !near(jain, 1) || !near(worst, 0) {
		t.Errorf("equal shares: Jain %v, worst %v", jain, worst)
	}
	jain, worst = steady(samples, qs, [2]time.Duration{2 * time.Second, 3 * time.Second})
	// x = 1.5 and 0.5: (2)^2 / (2 x 2.5) = 0.8.
	if !near(jain, 0.8) || !near(worst, 0.5) {
		t.Errorf("1.5 and 0.5 of fair: Jain %v, worst %v", jain, worst)
	}
	// One second of 64 + 64 off, over 256 GPUs x 2 s.
	if e := shareError(samples, qs, 256); !near(e, 128.0/(256*2)) {
		t.Errorf("share error %v", e)
	}
}

func TestReadPhilly(t *testing.T) {
	jobs, err := ReadPhilly(filepath.Join("..", "..", "..", "data", "traces", "gavel-philly-vc", "seed0", "6214e9.trace"), 40)
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) < 1000 {
		t.Fatalf("%d jobs of 1-8 GPUs", len(jobs))
	}
	for _, j := range jobs {
		if j.GPUs < 1 || j.GPUs > 8 || j.Seconds < 5 || j.Seconds > 160 {
			t.Fatalf("job out of range: %+v", j)
		}
	}
	bad := filepath.Join(t.TempDir(), "bad.trace")
	_ = os.WriteFile(bad, []byte("a\tb\tc\n"), 0o644)
	if _, err := ReadPhilly(bad, 40); err == nil || !contains(err.Error(), "3 columns, want 7") {
		t.Errorf("a short row: %v", err)
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

func TestSameJobForEverySystem(t *testing.T) {
	j := JobSpec{Name: "g", Queue: "team-1", Pods: 8, GPUsPerPod: 4, RunSeconds: 20}
	k, g, d := jobFor(j, KubeScheduler), jobFor(j, Gpuq), jobFor(j, Kueue)
	if !reflect.DeepEqual(k.Spec.Template.Spec.Containers, g.Spec.Template.Spec.Containers) ||
		!reflect.DeepEqual(k.Spec.Template.Spec.Containers, d.Spec.Template.Spec.Containers) ||
		*k.Spec.Parallelism != 8 || *g.Spec.Completions != 8 {
		t.Fatal("the systems' Jobs differ beyond labels and schedulerName")
	}
	if g.Spec.Template.Spec.SchedulerName != "gpuq" || g.Spec.Template.Labels["gpuq.io/pod-group"] != "g" ||
		g.Spec.Template.Annotations["gpuq.io/pod-group-size"] != "8" {
		t.Errorf("gpuq's Job: %+v", g.Spec.Template.ObjectMeta)
	}
	if d.Labels["kueue.x-k8s.io/queue-name"] != "team-1" || d.Spec.Template.Spec.SchedulerName != "default-scheduler" {
		t.Errorf("Kueue's Job: %+v", d.ObjectMeta)
	}
}

func TestFairnessAsksForMoreThanTheCluster(t *testing.T) {
	trace := []TraceJob{{GPUs: 1, Seconds: 30}, {GPUs: 8, Seconds: 60}, {GPUs: 2, Seconds: 10}}
	w := Fairness(trace, []int{1, 1, 1, 1}, 2*time.Minute)
	work := map[string]float64{}
	for _, j := range w.Jobs {
		if j.At < 0 || j.At > 6*time.Minute {
			t.Fatalf("job at %v", j.At)
		}
		work[j.Queue] += float64(j.GPUsPerPod) * j.RunSeconds
	}
	// team-0 asks for 4 minutes, the others as long as they run: 1.5 x 256 GPUs x that.
	if work["team-0"] < 1.5*256*240 || work["team-2"] < 1.5*256*240 || work["team-1"] < 1.5*256*360 {
		t.Errorf("work by queue: %v", work)
	}
}

package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/component-base/version"

	"gpuq/tests/kubecluster/bench"
)

// benchMain: `kube-cluster bench bind [flags]` (bench/README.md).
func benchMain(args []string) error {
	if len(args) > 0 && args[0] == "compare" {
		return compareMain(args)
	}
	if len(args) == 0 || args[0] != "bind" {
		return fmt.Errorf("usage: kube-cluster bench bind|compare [flags]")
	}
	fs := flag.NewFlagSet("kube-cluster bench bind", flag.ExitOnError)
	gpuqd := fs.String("gpuqd", "", "the gpuqd binary (required)")
	deploy := fs.String("deploy", "deploy/kubernetes", "the folder of gpuqd's manifests (its namespace, service account and roles)")
	nodes := fs.Int("nodes", 1000, "simulated nodes")
	gpus := fs.Int("gpus-per-node", 8, "nvidia.com/gpu of each node")
	pods := fs.Int("pods", 10000, "pending one-GPU pods")
	configs := fs.String("config", "default,tuned", "default (gpuqd as shipped), tuned (gpuqd in kube-scheduler's priority level, 64 writers), kube-scheduler (no gpuqd: the same pods for the default scheduler)")
	modes := fs.String("mode", "after", "after: the pods come in a burst once gpuqd watches; before: they exist before it starts")
	runs := fs.Int("runs", 1, "runs of each combination, each on a fresh control plane")
	creators := fs.Int("creators", 32, "goroutines creating the pods")
	jsonOut := fs.String("json", "", "also write the results here, as JSON")
	keep := fs.Bool("keep", false, "keep each run's folder (its logs and audit log)")
	_ = fs.Parse(args[1:])
	if *gpuqd == "" {
		return fmt.Errorf("--gpuqd is required")
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	var results []*bench.BindResult
	for _, config := range strings.Split(*configs, ",") {
		for _, mode := range strings.Split(*modes, ",") {
			if config == "kube-scheduler" && mode == "before" {
				continue // kube-scheduler runs from the control plane's start: its pods never wait for it
			}
			for r := 0; r < *runs; r++ {
				res, err := bench.Bind(ctx, bench.BindOptions{Self: self, Gpuqd: *gpuqd, DeployDir: *deploy, Nodes: *nodes,
					GPUsPerNode: *gpus, Pods: *pods, CreateBefore: mode == "before", Config: config, Creators: *creators, Keep: *keep})
				if err != nil {
					return fmt.Errorf("%s %s: %w", config, mode, err)
				}
				fmt.Println(res.Line())
				results = append(results, res)
			}
		}
	}
	if *jsonOut != "" {
		b, _ := json.MarshalIndent(results, "", "  ")
		return os.WriteFile(*jsonOut, b, 0o644)
	}
	return nil
}

// compareMain: `kube-cluster bench compare [flags]` (bench/README.md): each workload through
// each system on a fresh control plane; the tables on stdout, results.json and report.html in
// --out.
func compareMain(args []string) error {
	fs := flag.NewFlagSet("kube-cluster bench compare", flag.ExitOnError)
	gpuqd := fs.String("gpuqd", "", "the gpuqd binary (required for gpuq)")
	kueue := fs.String("kueue", "", "Kueue's manager (build/tests/kubecluster/kueue-manager; required for kueue)")
	kueueConfig := fs.String("kueue-config", "", "the folder of Kueue's CRDs, role and webhooks (build/tests/kubecluster/kueue-config)")
	deploy := fs.String("deploy", "deploy/kubernetes", "the folder of gpuqd's manifests")
	trace := fs.String("trace", "data/traces/gavel-philly-vc/seed0/6214e9.trace", "the Gavel/Philly trace the fairness workloads draw jobs from")
	systems := fs.String("systems", "kube-scheduler,kueue,gpuq", "the systems, in the order they run")
	workloads := fs.String("workloads", "throughput,fairness,fairness-weighted,gangs,reclaim", "the workloads")
	scaleFlag := fs.String("scale", "1", "job counts x this (throughput's nodes follow; 1: the sizes of bench/README.md); or per workload, e.g. throughput=0.1,gangs=0.25 (others 1)")
	wave := fs.Duration("wave", 2*time.Minute, "the fairness workloads' wave length")
	medianRun := fs.Float64("median-run", 40, "the fairness workloads' median job run time, seconds")
	gangRun := fs.Float64("gang-run", 20, "the gangs workload's run time of every job, seconds")
	settle := fs.Duration("settle", 40*time.Second, "reclaim: when the lender's Jobs come, after the borrowers'")
	qps := fs.Int("client-qps", 0, "every scheduler's client at this many requests a second (burst twice); 0: each at its defaults")
	gpuqSettings := fs.String("gpuq-settings", "", "top-level lines added to gpuqd's configuration, e.g. 'nodeReservation: false' (default: none, gpuqd at its defaults)")
	backlog := fs.Bool("backlog", false, "throughput: start each scheduler only once every pod exists and time from its start (not for kueue)")
	jobSyncs := fs.Int("job-syncs", 50, "the Job controller's workers (kube-controller-manager --concurrent-job-syncs; its default 5 makes pods slower than a scheduler binds them), the same for every system; 0: its default")
	controllerQPS := fs.Int("controller-qps", 200, "kube-controller-manager's client qps (its Job controller makes the pods), the same for every system")
	out := fs.String("out", "compare-out", "the folder for results.json and report.html")
	keep := fs.Bool("keep", false, "keep each run's folder (logs, audit log)")
	_ = fs.Parse(args[1:])
	self, err := os.Executable()
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	scales, err := parseScales(*scaleFlag)
	if err != nil {
		return err
	}
	sizesOf := func(w string) bench.Sizes {
		if v, ok := scales[w]; ok {
			return bench.Sizes{Scale: v}
		}
		return bench.Sizes{Scale: scales[""]}
	}
	var philly []bench.TraceJob
	var wls []bench.Workload
	for _, name := range strings.Split(*workloads, ",") {
		switch name {
		case "throughput":
			wls = append(wls, bench.Throughput(sizesOf(name)))
		case "fairness", "fairness-weighted":
			if philly == nil {
				if philly, err = bench.ReadPhilly(*trace, *medianRun); err != nil {
					return err
				}
			}
			weights := []int{1, 1, 1, 1}
			if name == "fairness-weighted" {
				weights = []int{1, 2, 3, 4}
			}
			wls = append(wls, bench.Fairness(philly, weights, *wave))
		case "gangs":
			wls = append(wls, bench.Gangs(sizesOf(name), *gangRun))
		case "reclaim":
			wls = append(wls, bench.Reclaim(sizesOf(name), *settle))
		default:
			return fmt.Errorf("--workloads: unknown workload %q (throughput, fairness, fairness-weighted, gangs, reclaim)", name)
		}
	}
	o := bench.CompareOptions{Self: self, Gpuqd: *gpuqd, DeployDir: *deploy, Kueue: *kueue, KueueConfig: *kueueConfig,
		ClientQPS: *qps, ControllerQPS: *controllerQPS, JobSyncs: *jobSyncs, Backlog: *backlog, GpuqSettings: *gpuqSettings, Keep: *keep,
		Logf: func(f string, a ...any) { fmt.Fprintf(os.Stderr, f+"\n", a...) }}
	var results []*bench.RunResult
	for _, w := range wls {
		for _, system := range strings.Split(*systems, ",") {
			fmt.Fprintf(os.Stderr, "%s: %s (%d Jobs, %d nodes)\n", w.Name, system, len(w.Jobs), w.Nodes)
			start := time.Now()
			res, err := bench.RunWorkload(ctx, o, w, system)
			if err != nil {
				if ctx.Err() != nil {
					return err
				}
				res = &bench.RunResult{Workload: w.Name, System: system, Error: err.Error()}
			}
			fmt.Fprintf(os.Stderr, "%s: %s done in %.0f s\n", w.Name, system, time.Since(start).Seconds())
			results = append(results, res)
		}
		bench.Table(os.Stdout, w.Name, results)
	}
	b, _ := json.MarshalIndent(results, "", " ")
	if err := os.WriteFile(filepath.Join(*out, "results.json"), b, 0o644); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(*out, "report.html"))
	if err != nil {
		return err
	}
	defer f.Close()
	meta := []string{
		fmt.Sprintf("kube-cluster bench compare %s", strings.Join(args[1:], " ")),
		fmt.Sprintf("Kubernetes %s (kube-apiserver, kube-controller-manager, kube-scheduler, etcd built from their Go modules); Kueue as kueue/go.mod pins it", version.Get().GitVersion),
		fmt.Sprintf("%s, %d CPUs; %s", time.Now().UTC().Format(time.RFC3339), runtime.NumCPU(), runtime.Version()),
	}
	bench.Report(f, "gpuq, kube-scheduler and Kueue on one real control plane", meta, results)
	fmt.Printf("\nwrote %s and %s\n", filepath.Join(*out, "results.json"), filepath.Join(*out, "report.html"))
	return nil
}

// parseScales reads --scale: one number for every workload, or workload=number pairs.
func parseScales(v string) (map[string]float64, error) {
	out := map[string]float64{"": 1}
	for _, part := range strings.Split(v, ",") {
		name, num, named := strings.Cut(part, "=")
		if !named {
			name, num = "", part
		}
		f, err := strconv.ParseFloat(num, 64)
		if err != nil || f <= 0 || f > 10 {
			return nil, fmt.Errorf("--scale: %q is not a number in (0, 10] (one for all workloads, or workload=number pairs)", part)
		}
		out[name] = f
	}
	return out, nil
}

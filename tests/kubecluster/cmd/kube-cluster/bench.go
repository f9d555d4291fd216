package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"gpuq/tests/kubecluster/bench"
)

// benchMain: `kube-cluster bench bind [flags]` (bench/README.md).
func benchMain(args []string) error {
	if len(args) == 0 || args[0] != "bind" {
		return fmt.Errorf("usage: kube-cluster bench bind [flags]")
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

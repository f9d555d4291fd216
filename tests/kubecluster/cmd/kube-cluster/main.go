// kube-cluster starts a real Kubernetes control plane on loopback with simulated GPU nodes,
// for gpuq's tests, benches and a newcomer's first look (tests/kubecluster/README.md):
//
//	kube-cluster up [--dir DIR] [--nodes 3] [--gpus-per-node 8] [--apply FILE]... [flags]
//
// prints one line once everything serves
//
//	kube-cluster ready api=URL control=URL admin-kubeconfig=PATH gpuqd-kubeconfig=PATH dir=DIR
//
// and runs until SIGINT or SIGTERM. The control plane's components are this same binary run
// as `kube-cluster kube-apiserver|kube-controller-manager|kube-scheduler FLAGS...`.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/component-base/cli"
	apiserver "k8s.io/kubernetes/cmd/kube-apiserver/app"
	controllermanager "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	scheduler "k8s.io/kubernetes/cmd/kube-scheduler/app"

	"gpuq/tests/kubecluster/cluster"
	"gpuq/tests/kubecluster/control"
	"gpuq/tests/kubecluster/nodesim"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	switch os.Args[1] {
	case cluster.APIServer:
		runComponent(apiserver.NewAPIServerCommand())
	case cluster.ControllerManager:
		runComponent(controllermanager.NewControllerManagerCommand())
	case cluster.Scheduler:
		runComponent(scheduler.NewSchedulerCommand())
	case "container-exec":
		if err := nodesim.ContainerExec(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "kube-cluster:", err)
			os.Exit(128)
		}
	case "bench":
		if err := benchMain(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "kube-cluster bench:", err)
			os.Exit(1)
		}
	case "up":
		if err := up(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "kube-cluster:", err)
			os.Exit(1)
		}
	default:
		usage()
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: kube-cluster up [flags] | kube-cluster bench bind [flags] (-h lists them)")
	os.Exit(2)
}

// runComponent runs a control plane component with the rest of the command line as its flags,
// as its own binary would.
func runComponent(cmd *cobra.Command) {
	cmd.SetArgs(os.Args[2:])
	os.Exit(cli.Run(cmd))
}

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

func up(args []string) error {
	fs := flag.NewFlagSet("kube-cluster up", flag.ExitOnError)
	dir := fs.String("dir", "", "working directory: certificates, kubeconfigs, etcd's data, logs (default: a new temporary one)")
	nodes := fs.Int("nodes", 3, "simulated nodes to start with")
	gpus := fs.Int("gpus-per-node", 8, "nvidia.com/gpu of each node")
	cpu := fs.String("node-cpu", "128", "allocatable cpu of each node")
	memory := fs.String("node-memory", "1Ti", "allocatable memory of each node")
	prefix := fs.String("node-prefix", "node-", "nodes are named PREFIX0, PREFIX1, ...")
	var manifests multiFlag
	fs.Var(&manifests, "apply", "a YAML file to create once the API serves (repeatable)")
	exec := fs.Bool("exec", true, "run each container's command as a local process (the image is ignored)")
	execUser := fs.String("exec-user", "nobody", "the account containers' commands run as, when kube-cluster runs as root")
	startDelay := fs.Duration("start-delay", 0, "from a pod's admission on its node to Running")
	leaseRenew := fs.Duration("lease-renew", 2*time.Second, "how often each node renews its Lease")
	grace := fs.Duration("node-monitor-grace-period", 15*time.Second, "how long without a heartbeat before a node is NotReady")
	noScheduler := fs.Bool("no-scheduler", false, "leave kube-scheduler out")
	var auditUsers multiFlag
	fs.Var(&auditUsers, "audit-user", "record only this user's requests in the audit log (repeatable; default: all but the API server's and the nodes')")
	var apiArgs multiFlag
	fs.Var(&apiArgs, "apiserver-arg", "another kube-apiserver flag, e.g. --apiserver-arg=--max-requests-inflight=800 (repeatable)")
	quiet := fs.Bool("quiet", false, "print only the ready line")
	_ = fs.Parse(args)

	if *dir == "" {
		d, err := os.MkdirTemp("", "kube-cluster-")
		if err != nil {
			return err
		}
		*dir = d
	} else if err := os.MkdirAll(*dir, 0o755); err != nil {
		return err
	}
	abs, err := filepath.Abs(*dir)
	if err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	logf := func(format string, a ...any) {
		if !*quiet {
			fmt.Fprintf(os.Stderr, "kube-cluster: "+format+"\n", a...)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	opts := cluster.Options{Dir: abs, Self: self, ManifestFiles: manifests, NoScheduler: *noScheduler,
		NodeMonitorGracePeriod: *grace, APIServerArgs: apiArgs, Logf: logf}
	if len(auditUsers) > 0 {
		opts.AuditUsers = auditUsers
	}
	started := time.Now()
	c, err := cluster.Start(ctx, opts)
	if err != nil {
		return err
	}
	defer c.Stop()
	sim, err := nodesim.New(c.NodesConfig, nodesim.Options{LeaseRenew: *leaseRenew, StartDelay: *startDelay,
		Exec: *exec, ExecUser: *execUser, LogDir: filepath.Join(abs, "pods")})
	if err != nil {
		return err
	}
	if err := sim.Run(ctx); err != nil {
		return err
	}
	if err := sim.RuntimeClass(ctx); err != nil {
		return err
	}
	for i := 0; i < *nodes; i++ {
		if err := sim.AddNode(ctx, nodesim.NodeSpec{Name: fmt.Sprintf("%s%d", *prefix, i), GPUs: *gpus, CPU: *cpu, Memory: *memory}); err != nil {
			return err
		}
	}
	ctl := &control.Server{Cluster: c, Nodes: sim}
	controlURL, err := ctl.Serve(ctx)
	if err != nil {
		return err
	}
	logf("up in %.1f s", time.Since(started).Seconds())
	fmt.Printf("kube-cluster ready api=%s control=%s admin-kubeconfig=%s gpuqd-kubeconfig=%s dir=%s\n",
		c.APIURL, controlURL, c.AdminKubeconfig, c.GpuqdKubeconfig, abs)
	_ = os.Stdout.Sync()
	<-ctx.Done()
	logf("stopping")
	return nil
}

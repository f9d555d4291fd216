// Package cluster starts and stops a real Kubernetes control plane on loopback, built from
// Kubernetes' own Go modules: etcd (embedded in this process), kube-apiserver,
// kube-controller-manager and kube-scheduler (each a child process of this program), with one
// certificate authority, kubeconfigs for an admin and for gpuqd's service account, and an
// audit log. Tests and benches ask it for a cluster; they do not start components themselves.
package cluster

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Component names: the first argument this program's binary takes to run one (main.go).
const (
	APIServer         = "kube-apiserver"
	ControllerManager = "kube-controller-manager"
	Scheduler         = "kube-scheduler"
)

// DefaultControllers are the kube-controller-manager controllers gpuq's users rely on
// (tests/kubecluster/README.md says why each).
var DefaultControllers = []string{
	"namespace-controller",
	"garbage-collector-controller",
	"disruption-controller",
	"job-controller",
	"replicaset-controller",
	"deployment-controller",
	"node-lifecycle-controller",
	"taint-eviction-controller",
	"pod-garbage-collector-controller",
	"serviceaccount-controller",
	"serviceaccount-token-controller",
	"root-ca-certificate-publisher-controller",
	"clusterrole-aggregation-controller",
	"endpointslice-controller",
	"ttl-after-finished-controller",
}

// Options say what to start; the zero value of each field means its default.
type Options struct {
	// Dir holds the certificates, kubeconfigs, etcd's data, the audit log and each component's
	// log. It must exist.
	Dir string
	// Self is this program's binary (os.Executable()), run once per component.
	Self string
	// Controllers of kube-controller-manager; nil: DefaultControllers.
	Controllers []string
	// NoScheduler leaves kube-scheduler out; NoControllerManager leaves the controllers out.
	NoScheduler, NoControllerManager bool
	// NodeMonitorGracePeriod is how long the node lifecycle controller waits for a node's
	// heartbeat before it marks the node NotReady (Unknown); 0: 15 s (kube-controller-manager's
	// own default is 50 s; tests shorten it, with the nodes' Leases renewed every 2 s).
	NodeMonitorGracePeriod time.Duration
	// AuditUsers: whose requests the audit log records (Metadata level); nil: every user but
	// the API server itself and the node simulator.
	AuditUsers []string
	// ManifestFiles are created with the admin's credentials once the API serves (YAML, several
	// documents each), e.g. deploy/kubernetes's namespace, service accounts and roles.
	ManifestFiles []string
	// GpuqdServiceAccount ("namespace/name", default gpuq-system/gpuq) is whom gpuqd.kubeconfig
	// authenticates as, with a token from the TokenRequest API.
	GpuqdServiceAccount string
	// Fsync: etcd syncs its writes to disk (off by default: a test cluster's data need not
	// survive a power loss, and fsync makes every write wait for the disk).
	Fsync bool
	// APIServerArgs are added to kube-apiserver's flags (a later flag wins).
	APIServerArgs []string
	// ControllerManagerArgs are added to kube-controller-manager's flags (e.g. its client's
	// --kube-api-qps, 20 by default, which paces the Job controller's pod creation).
	ControllerManagerArgs []string
	// SchedulerArgs are added to kube-scheduler's flags (e.g. --kube-api-qps, 50 by default).
	SchedulerArgs []string
	// Logf reports progress; nil: silent.
	Logf func(format string, args ...any)
}

// Cluster is a running control plane.
type Cluster struct {
	opts Options

	APIURL          string // https://127.0.0.1:PORT
	EtcdURL         string
	CAFile          string
	AdminKubeconfig string // system:masters, by client certificate
	GpuqdKubeconfig string // the service account GpuqdServiceAccount, by bearer token
	// NodesConfig authenticates the node simulator (a client certificate in system:masters:
	// one identity acting for every simulated kubelet).
	NodesConfig *rest.Config
	AdminConfig *rest.Config
	Admin       kubernetes.Interface
	AuditLog    string
	// WebhookCert and WebhookKey: a serving certificate for 127.0.0.1 from the cluster's CA
	// (CAFile), for an admission webhook served on loopback (Kueue's, in the benches).
	WebhookCert, WebhookKey string

	etcd  *embed.Etcd
	procs map[string]*process
	mu    sync.Mutex
}

// NodesUser is the name the node simulator authenticates as.
const NodesUser = "kube-cluster:nodes"

func (o *Options) defaults() {
	if o.Controllers == nil {
		o.Controllers = DefaultControllers
	}
	if o.NodeMonitorGracePeriod == 0 {
		o.NodeMonitorGracePeriod = 15 * time.Second
	}
	if o.GpuqdServiceAccount == "" {
		o.GpuqdServiceAccount = "gpuq-system/gpuq"
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
}

// FreePort asks the kernel for a loopback port nobody listens on.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Start brings up etcd, kube-apiserver, then the controllers and the scheduler, applies the
// manifests and writes the kubeconfigs; it returns once the API serves and every component
// runs. On an error, what was started is stopped.
func Start(ctx context.Context, opts Options) (_ *Cluster, err error) {
	opts.defaults()
	c := &Cluster{opts: opts, procs: map[string]*process{}}
	defer func() {
		if err != nil {
			c.Stop()
		}
	}()
	if err = c.startEtcd(); err != nil {
		return nil, err
	}
	if err = c.startAPIServer(ctx); err != nil {
		return nil, err
	}
	opts.Logf("kube-apiserver serves %s", c.APIURL)
	if err = c.bootstrap(ctx); err != nil {
		return nil, err
	}
	if !opts.NoControllerManager {
		c.procs[ControllerManager] = &process{name: ControllerManager, self: opts.Self, args: c.controllerManagerArgs(), logPath: filepath.Join(opts.Dir, ControllerManager+".log")}
		if err = c.procs[ControllerManager].start(); err != nil {
			return nil, err
		}
	}
	if !opts.NoScheduler {
		c.procs[Scheduler] = &process{name: Scheduler, self: opts.Self, args: c.schedulerArgs(), logPath: filepath.Join(opts.Dir, Scheduler+".log")}
		if err = c.procs[Scheduler].start(); err != nil {
			return nil, err
		}
	}
	if err = c.waitControllers(ctx); err != nil {
		return nil, err
	}
	if err = c.writeGpuqdKubeconfig(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// portTries is how many times etcd and the API server are started on fresh ports when the one
// FreePort chose was taken before they could listen on it: between FreePort's close and their
// listen, another process (a test beside this one, a connection's source port) may get it.
const portTries = 5

// freePort chooses the port for a purpose ("etcd-client", "etcd-peer", "apiserver"): FreePort,
// but a test may hand out a taken one.
var freePort = func(purpose string) (int, error) { return FreePort() }

// portTaken tells whether a listen failed because the port was taken.
func portTaken(msg string) bool { return strings.Contains(msg, "address already in use") }

// startAPIServer writes the certificates, and the kubeconfigs for a free port, and starts
// kube-apiserver there, returning once it is ready; when the port was taken meanwhile, it does
// so again on another.
func (c *Cluster) startAPIServer(ctx context.Context) error {
	logPath := filepath.Join(c.opts.Dir, APIServer+".log")
	// The certificates are made once: client-go keeps a connection's TLS set-up by the files'
	// names, so a client of a second API server would still trust the first one's authority.
	if err := c.writeFiles(); err != nil {
		return err
	}
	for try := 1; ; try++ {
		apiPort, err := freePort("apiserver")
		if err != nil {
			return err
		}
		if err := c.pointAt(apiPort); err != nil {
			return err
		}
		c.procs[APIServer] = &process{name: APIServer, self: c.opts.Self, args: c.apiServerArgs(apiPort), logPath: logPath}
		err = c.startAndWait(ctx, APIServer)
		if err == nil {
			return nil
		}
		select {
		case <-c.procs[APIServer].exited():
		default:
			return err // it runs, but is not ready: not a taken port
		}
		if try == portTries || !portTaken(tail(logPath, 4000)) {
			return err
		}
		c.opts.Logf("kube-apiserver: port %d was taken before it listened; again on another", apiPort)
		if err := os.Remove(logPath); err != nil {
			return err
		}
	}
}

// startAndWait starts a component and waits for the API server to be ready (/readyz), failing
// early when the process ends.
func (c *Cluster) startAndWait(ctx context.Context, name string) error {
	p := c.procs[name]
	if err := p.start(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	exited := p.exited()
	for {
		if c.ready(ctx) {
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("%s ended before it was ready; its log: %s\n%s", name, p.logPath, tail(p.logPath, 4000))
		case <-ctx.Done():
			return fmt.Errorf("%s not ready: %w; its log: %s\n%s", name, ctx.Err(), p.logPath, tail(p.logPath, 4000))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (c *Cluster) ready(ctx context.Context) bool {
	rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	body, err := c.Admin.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(rctx)
	return err == nil && strings.TrimSpace(string(body)) == "ok"
}

// StopComponent stops a component (SIGTERM, or SIGKILL when kill is set); StartComponent starts
// it again with the same flags (for the API server, it returns once it is ready).
func (c *Cluster) StopComponent(name string, kill bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	p, ok := c.procs[name]
	if !ok {
		return fmt.Errorf("no component %q runs (%s)", name, strings.Join(c.componentNames(), ", "))
	}
	sig := syscall.SIGTERM
	if kill {
		sig = syscall.SIGKILL
	}
	p.stop(sig, 30*time.Second)
	return nil
}

func (c *Cluster) StartComponent(ctx context.Context, name string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	p, ok := c.procs[name]
	if !ok {
		return fmt.Errorf("no component %q (%s)", name, strings.Join(c.componentNames(), ", "))
	}
	select {
	case <-p.exited():
	default:
		return fmt.Errorf("%s runs already", name)
	}
	if name == APIServer {
		return c.startAndWait(ctx, name)
	}
	return p.start()
}

// Restart stops a component (SIGTERM, or SIGKILL when kill is set) and starts it again with the
// same flags; for the API server it returns once the new one is ready. etcd keeps its data.
func (c *Cluster) Restart(ctx context.Context, name string, kill bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	p, ok := c.procs[name]
	if !ok {
		return fmt.Errorf("no component %q runs (%s)", name, strings.Join(c.componentNames(), ", "))
	}
	sig := syscall.SIGTERM
	if kill {
		sig = syscall.SIGKILL
	}
	p.stop(sig, 30*time.Second)
	if name == APIServer {
		return c.startAndWait(ctx, name)
	}
	return p.start()
}

func (c *Cluster) componentNames() []string {
	var names []string
	for n := range c.procs {
		names = append(names, n)
	}
	return names
}

// Pid of a running component, 0 when none.
func (c *Cluster) Pid(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if p, ok := c.procs[name]; ok {
		return p.pid()
	}
	return 0
}

// Stop ends the components (the scheduler and the controllers first, the API server, then
// etcd).
func (c *Cluster) Stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, name := range []string{Scheduler, ControllerManager, APIServer} {
		if p, ok := c.procs[name]; ok {
			p.stop(syscall.SIGTERM, 10*time.Second)
		}
	}
	if c.etcd != nil {
		c.etcd.Close()
		c.etcd = nil
	}
}

func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

package nodesim

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	listersv1 "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// Options of the simulated kubelets; zero fields take their defaults.
type Options struct {
	// LeaseRenew: how often each node renews its Lease (default 2 s; a kubelet's is 10 s).
	LeaseRenew time.Duration
	// StatusInterval: how often each node posts its conditions (default 1 minute).
	StatusInterval time.Duration
	// StartDelay: from a pod's admission to Running.
	StartDelay time.Duration
	// DeviceAnnotation: the pod annotation that lists the GPUs a pod was given (comma-separated
	// device ids); default DevicesAnnotation. It stands in for the device plugin's
	// NVIDIA_VISIBLE_DEVICES, which a reservation pod reports this way (deploy/kubernetes).
	DeviceAnnotation string
	// Exec runs each container that has a command as a local process (the image is ignored),
	// as the account ExecUser when this program runs as root (default "nobody"); its output is
	// the container's log. Without Exec, or for a container without a command, a container
	// runs until it is finished (Finish), its RunSecondsAnnotation passes, or it is deleted.
	Exec     bool
	ExecUser string
	// LogDir holds the containers' logs.
	LogDir string
	// Workers reconciling pods (default 1: as a kubelet, each node takes its pods' changes in the
	// order they happened, so a pod bound after another was deleted finds its room; the slow
	// calls are made off the worker).
	Workers int
	// Self is this program's binary, run as `container-exec` to start a container as root
	// (default: os.Executable()).
	Self string
}

// The annotations a test sets on a pod to drive its simulated container.
const (
	DevicesAnnotation    = "sim.gpuq.io/devices"
	RunSecondsAnnotation = "sim.gpuq.io/run-seconds" // the containers end after this long Running
	ExitCodeAnnotation   = "sim.gpuq.io/exit-code"   // ... with this exit code (default 0)
)

// Sim is the set of simulated kubelets of one cluster.
type Sim struct {
	opts    Options
	client  kubernetes.Interface
	lister  listersv1.PodLister
	queue   workqueue.TypedRateLimitingInterface[string]
	logPort int
	apiHost string
	apiPort string
	binDir  string // the simulated node's own commands (nvidia-smi), first on containers' PATH
	done    chan struct{}
	podIPs  atomic.Uint32

	mu    sync.Mutex
	nodes map[string]*node
	pods  map[string]*podState // by namespace/name
}

// New makes the simulator; Run starts it.
func New(cfg *rest.Config, opts Options) (*Sim, error) {
	if opts.LeaseRenew == 0 {
		opts.LeaseRenew = 2 * time.Second
	}
	if opts.StatusInterval == 0 {
		opts.StatusInterval = time.Minute
	}
	if opts.DeviceAnnotation == "" {
		opts.DeviceAnnotation = DevicesAnnotation
	}
	if opts.ExecUser == "" {
		opts.ExecUser = "nobody"
	}
	if opts.Workers == 0 {
		opts.Workers = 1
	}
	if opts.LogDir == "" {
		opts.LogDir = os.TempDir()
	}
	if opts.Self == "" {
		self, err := os.Executable()
		if err != nil {
			return nil, err
		}
		opts.Self = self
	}
	apiURL, err := url.Parse(cfg.Host)
	if err != nil {
		return nil, fmt.Errorf("the API server's address %q: %w", cfg.Host, err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &Sim{
		apiHost: apiURL.Hostname(),
		apiPort: apiURL.Port(),
		opts:    opts,
		client:  client,
		queue:   workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]()),
		done:    make(chan struct{}),
		nodes:   map[string]*node{},
		pods:    map[string]*podState{},
	}, nil
}

// Run serves the containers' logs and watches the pods bound to nodes, until ctx ends.
func (s *Sim) Run(ctx context.Context) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("kubelet log server: %w", err)
	}
	s.logPort = ln.Addr().(*net.TCPAddr).Port
	if err := s.serveLogs(ln); err != nil {
		return err
	}
	if err := s.writeBin(); err != nil {
		return err
	}
	factory := informers.NewSharedInformerFactoryWithOptions(s.client, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.FieldSelector = "spec.nodeName!="
	}))
	podInformer := factory.Core().V1().Pods()
	s.lister = podInformer.Lister()
	enqueue := func(obj any) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			s.queue.Add(key)
		}
	}
	if _, err := podInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
		DeleteFunc: enqueue,
	}); err != nil {
		return err
	}
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	for i := 0; i < s.opts.Workers; i++ {
		go func() {
			for s.work(ctx) {
			}
		}()
	}
	go func() {
		<-ctx.Done()
		close(s.done)
		s.queue.ShutDown()
		s.mu.Lock()
		pods := make([]*podState, 0, len(s.pods))
		for _, p := range s.pods {
			pods = append(pods, p)
		}
		s.mu.Unlock()
		for _, p := range pods {
			p.abandon()
		}
		if s.binDir != "" {
			_ = os.RemoveAll(s.binDir)
		}
	}()
	return nil
}

// nvidiaSMI is `nvidia-smi` on a simulated node: the GPUs the simulated device plugin gave the
// container (NVIDIA_VISIBLE_DEVICES), as `nvidia-smi -L` lists them; without any, its "No
// devices were found" and exit status 6.
const nvidiaSMI = `#!/bin/sh
# nvidia-smi of a kube-cluster simulated node (tests/kubecluster/nodesim): it knows only the GPUs
# the simulated device plugin gave this container.
i=0
for d in $(echo "${NVIDIA_VISIBLE_DEVICES:-}" | tr ',' ' '); do
  echo "GPU $i: kube-cluster simulated GPU (UUID: $d)"
  i=$((i + 1))
done
if [ "$i" -eq 0 ]; then
  echo "No devices were found"
  exit 6
fi
`

// writeBin makes the folder of the node's own commands, readable by the account containers run
// as.
func (s *Sim) writeBin() error {
	dir, err := os.MkdirTemp("", "kube-cluster-bin-")
	if err != nil {
		return err
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		return err
	}
	s.binDir = dir
	return os.WriteFile(filepath.Join(dir, "nvidia-smi"), []byte(nvidiaSMI), 0o755)
}

func (s *Sim) work(ctx context.Context) bool {
	key, quit := s.queue.Get()
	if quit {
		return false
	}
	defer s.queue.Done(key)
	if err := s.sync(ctx, key); err != nil {
		s.queue.AddRateLimited(key)
		return true
	}
	s.queue.Forget(key)
	return true
}

// sync brings one pod's simulated life in line with what the API says of it.
func (s *Sim) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	pod, err := s.lister.Pods(ns).Get(name)
	s.mu.Lock()
	st := s.pods[key]
	if apierrors.IsNotFound(err) || (st != nil && pod != nil && st.uid != pod.UID) {
		if st != nil {
			delete(s.pods, key)
		}
	}
	s.mu.Unlock()
	if apierrors.IsNotFound(err) {
		if st != nil {
			st.abandon()
		}
		return nil
	}
	if err != nil {
		return err
	}
	if st != nil && st.uid != pod.UID {
		st.abandon()
		st = nil
	}
	s.mu.Lock()
	n := s.nodes[pod.Spec.NodeName]
	cut := n != nil && !n.heartbeats
	s.mu.Unlock()
	if n == nil {
		return nil // another kubelet's, or its node was removed
	}
	if cut {
		// A kubelet that cannot reach the API server sees none of its pods' changes: they wait
		// (a deletion stays Terminating) until its heartbeats are back.
		s.queue.AddAfter(key, time.Second)
		return nil
	}
	if st == nil {
		terminal := pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
		if pod.DeletionTimestamp != nil || terminal {
			if pod.DeletionTimestamp != nil {
				go func() { _ = s.remove(ctx, pod) }()
			}
			return nil
		}
		st = s.admit(ctx, n, pod)
		s.mu.Lock()
		s.pods[key] = st
		s.mu.Unlock()
		if st.rejected {
			return nil
		}
		go s.life(st, pod.DeepCopy())
		return nil
	}
	if pod.DeletionTimestamp != nil {
		if st.finished() {
			go func() { _ = s.remove(ctx, pod) }()
			return nil
		}
		grace := int64(30)
		if pod.DeletionGracePeriodSeconds != nil {
			grace = *pod.DeletionGracePeriodSeconds
		}
		st.requestStop(time.Duration(grace) * time.Second)
	}
	return nil
}

// remove deletes a pod whose containers have stopped, as the kubelet does once a pod marked for
// deletion is done: with no grace left, and only that pod (its uid).
func (s *Sim) remove(ctx context.Context, pod *corev1.Pod) error {
	err := s.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
		GracePeriodSeconds: new(int64),
		Preconditions:      &metav1.Preconditions{UID: &pod.UID},
	})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	return err
}

// Finish ends a pod's containers with an exit code, as if its program had exited.
func (s *Sim) Finish(namespace, name string, code int) error {
	s.mu.Lock()
	st := s.pods[namespace+"/"+name]
	s.mu.Unlock()
	if st == nil || st.rejected {
		return fmt.Errorf("pod %s/%s does not run on a simulated node", namespace, name)
	}
	st.finish(code)
	return nil
}

// Devices are the GPUs the pod was given.
func (s *Sim) Devices(namespace, name string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st := s.pods[namespace+"/"+name]; st != nil {
		return append([]string(nil), st.devices...)
	}
	return nil
}

// NodeNames of the simulated nodes.
func (s *Sim) NodeNames() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	names := make([]string, 0, len(s.nodes))
	for n := range s.nodes {
		names = append(names, n)
	}
	return names
}

func (s *Sim) patchPod(ctx context.Context, pod *corev1.Pod, patch map[string]any, subresource ...string) error {
	body, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	_, err = s.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, body, metav1.PatchOptions{}, subresource...)
	return err
}

func (s *Sim) patchNodeStatus(ctx context.Context, name string, patch map[string]any) error {
	body, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	_, err = s.client.CoreV1().Nodes().Patch(ctx, name, types.StrategicMergePatchType, body, metav1.PatchOptions{}, "status")
	return err
}

func (s *Sim) event(ctx context.Context, pod *corev1.Pod, kind, reason, message string) {
	now := metav1.Now()
	_, _ = s.client.CoreV1().Events(pod.Namespace).Create(ctx, &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{GenerateName: pod.Name + ".", Namespace: pod.Namespace},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: pod.Namespace, Name: pod.Name,
			UID: pod.UID, ResourceVersion: pod.ResourceVersion},
		Reason: reason, Message: message, Type: kind, Count: 1,
		FirstTimestamp: now, LastTimestamp: now,
		Source: corev1.EventSource{Component: "kubelet", Host: pod.Spec.NodeName},
	}, metav1.CreateOptions{})
}

// Package nodesim simulates the kubelets of GPU nodes against a real API server: Node objects
// with allocatable cpu, memory, pods and nvidia.com/gpu, heartbeats (node Leases and the Ready
// condition), admission of the pods bound to them (rejected as OutOf<resource> when they do not
// fit, as the kubelet does), whole GPUs handed out by device id (standing in for the NVIDIA
// device plugin), pods that run (optionally their command, as a local process), end with an
// exit code, honour their deletion grace period, and logs served the kubelet's way.
package nodesim

import (
	"context"
	"crypto/sha1"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// NodeSpec is what a simulated node has; zero fields take their defaults.
type NodeSpec struct {
	Name   string            `json:"name"`
	GPUs   int               `json:"gpus"`
	CPU    string            `json:"cpu,omitempty"`    // default "128"
	Memory string            `json:"memory,omitempty"` // default "1Ti"
	Pods   int               `json:"pods,omitempty"`   // default 110
	Labels map[string]string `json:"labels,omitempty"`
	Taints []corev1.Taint    `json:"taints,omitempty"`
}

const gpuResource corev1.ResourceName = "nvidia.com/gpu"

// node is one simulated kubelet.
type node struct {
	spec        NodeSpec
	allocatable corev1.ResourceList
	gpus        []string // device ids, in the order they are handed out

	// Guarded by Sim.mu.
	admitted   map[types.UID]*podState
	gpuHolder  map[string]types.UID
	ready      bool
	heartbeats bool
	stop       chan struct{}
}

func (s NodeSpec) withDefaults() NodeSpec {
	if s.CPU == "" {
		s.CPU = "128"
	}
	if s.Memory == "" {
		s.Memory = "1Ti"
	}
	if s.Pods == 0 {
		s.Pods = 110
	}
	return s
}

// deviceID is a GPU's id as the NVIDIA device plugin reports it (GPU-<uuid>), stable for a
// node's name and the GPU's index.
func deviceID(nodeName string, i int) string {
	h := sha1.Sum([]byte(fmt.Sprintf("%s/%d", nodeName, i)))
	return fmt.Sprintf("GPU-%x-%x-%x-%x-%x", h[0:4], h[4:6], h[6:8], h[8:10], h[10:16])
}

func newNode(spec NodeSpec) (*node, error) {
	spec = spec.withDefaults()
	cpu, err := resource.ParseQuantity(spec.CPU)
	if err != nil {
		return nil, fmt.Errorf("node %s: cpu %q: %w", spec.Name, spec.CPU, err)
	}
	mem, err := resource.ParseQuantity(spec.Memory)
	if err != nil {
		return nil, fmt.Errorf("node %s: memory %q: %w", spec.Name, spec.Memory, err)
	}
	n := &node{
		spec: spec,
		allocatable: corev1.ResourceList{
			corev1.ResourceCPU:              cpu,
			corev1.ResourceMemory:           mem,
			corev1.ResourcePods:             *resource.NewQuantity(int64(spec.Pods), resource.DecimalSI),
			corev1.ResourceEphemeralStorage: resource.MustParse("1Ti"),
		},
		admitted:   map[types.UID]*podState{},
		gpuHolder:  map[string]types.UID{},
		ready:      true,
		heartbeats: true,
		stop:       make(chan struct{}),
	}
	if spec.GPUs > 0 {
		n.allocatable[gpuResource] = *resource.NewQuantity(int64(spec.GPUs), resource.DecimalSI)
	}
	for i := 0; i < spec.GPUs; i++ {
		n.gpus = append(n.gpus, deviceID(spec.Name, i))
	}
	return n, nil
}

// object is the Node a kubelet registers: its status is allowed on create.
func (s *Sim) nodeObject(n *node) *corev1.Node {
	labels := map[string]string{
		"kubernetes.io/hostname": n.spec.Name,
		"kubernetes.io/os":       "linux",
		"kubernetes.io/arch":     "amd64",
	}
	for k, v := range n.spec.Labels {
		labels[k] = v
	}
	now := metav1.Now()
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: n.spec.Name, Labels: labels,
			Annotations: map[string]string{"node.alpha.kubernetes.io/ttl": "0"}},
		Spec: corev1.NodeSpec{Taints: n.spec.Taints},
		Status: corev1.NodeStatus{
			Capacity:    n.allocatable.DeepCopy(),
			Allocatable: n.allocatable.DeepCopy(),
			Conditions:  s.conditions(true, now),
			Addresses: []corev1.NodeAddress{
				{Type: corev1.NodeInternalIP, Address: "127.0.0.1"},
				{Type: corev1.NodeHostName, Address: n.spec.Name},
			},
			DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: int32(s.logPort)}},
			NodeInfo: corev1.NodeSystemInfo{
				KubeletVersion:          "v1.37.2-kube-cluster",
				OperatingSystem:         "linux",
				Architecture:            "amd64",
				ContainerRuntimeVersion: "sim://1",
				OSImage:                 "kube-cluster simulated node",
			},
		},
	}
}

func (s *Sim) conditions(ready bool, now metav1.Time) []corev1.NodeCondition {
	readyCond := corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
		Message: "kubelet is posting ready status", LastHeartbeatTime: now, LastTransitionTime: now}
	if !ready {
		readyCond.Status, readyCond.Reason, readyCond.Message = corev1.ConditionFalse, "KubeletNotReady", "container runtime network not ready: the simulated runtime was stopped"
	}
	cond := func(t corev1.NodeConditionType, reason, msg string) corev1.NodeCondition {
		return corev1.NodeCondition{Type: t, Status: corev1.ConditionFalse, Reason: reason, Message: msg, LastHeartbeatTime: now, LastTransitionTime: now}
	}
	return []corev1.NodeCondition{
		cond(corev1.NodeMemoryPressure, "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
		cond(corev1.NodeDiskPressure, "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
		cond(corev1.NodePIDPressure, "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
		readyCond,
	}
}

// RuntimeClass makes the RuntimeClass `nvidia` (handler nvidia), as the NVIDIA GPU operator does
// on a GPU cluster: pods that name it (fractional GPUs' sharers) are refused at admission
// without it.
func (s *Sim) RuntimeClass(ctx context.Context) error {
	rc := &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "nvidia"}, Handler: "nvidia"}
	if _, err := s.client.NodeV1().RuntimeClasses().Create(ctx, rc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("runtime class nvidia: %w", err)
	}
	return nil
}

// AddNode registers a node and starts its heartbeats.
func (s *Sim) AddNode(ctx context.Context, spec NodeSpec) error {
	n, err := newNode(spec)
	if err != nil {
		return err
	}
	s.mu.Lock()
	if _, dup := s.nodes[spec.Name]; dup {
		s.mu.Unlock()
		return fmt.Errorf("node %s is simulated already", spec.Name)
	}
	s.nodes[spec.Name] = n
	s.mu.Unlock()
	if _, err := s.client.CoreV1().Nodes().Create(ctx, s.nodeObject(n), metav1.CreateOptions{}); err != nil {
		s.mu.Lock()
		delete(s.nodes, spec.Name)
		s.mu.Unlock()
		return fmt.Errorf("register node %s: %w", spec.Name, err)
	}
	go s.heartbeat(n)
	return nil
}

// SetReady makes the node's kubelet report Ready or NotReady (its heartbeats go on).
func (s *Sim) SetReady(ctx context.Context, name string, ready bool) error {
	s.mu.Lock()
	n, ok := s.nodes[name]
	if ok {
		n.ready = ready
	}
	s.mu.Unlock()
	if !ok {
		return fmt.Errorf("no simulated node %q", name)
	}
	return s.postStatus(ctx, n)
}

// SetHeartbeats stops or resumes the node's Lease renewals and status updates: stopped, the
// node lifecycle controller marks it NotReady (Unknown) after its grace period, as a node that
// lost its network.
func (s *Sim) SetHeartbeats(name string, on bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, ok := s.nodes[name]
	if !ok {
		return fmt.Errorf("no simulated node %q", name)
	}
	n.heartbeats = on
	return nil
}

// RemoveNode stops the node's kubelet (its pods' processes are killed) and deletes the Node.
func (s *Sim) RemoveNode(ctx context.Context, name string) error {
	s.mu.Lock()
	n, ok := s.nodes[name]
	if ok {
		delete(s.nodes, name)
		close(n.stop)
	}
	var pods []*podState
	if ok {
		for _, p := range n.admitted {
			pods = append(pods, p)
		}
	}
	s.mu.Unlock()
	if !ok {
		return fmt.Errorf("no simulated node %q", name)
	}
	for _, p := range pods {
		p.abandon()
	}
	err := s.client.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

func (s *Sim) postStatus(ctx context.Context, n *node) error {
	s.mu.Lock()
	ready := n.ready
	s.mu.Unlock()
	patch := map[string]any{"status": map[string]any{"conditions": s.conditions(ready, metav1.Now())}}
	return s.patchNodeStatus(ctx, n.spec.Name, patch)
}

// heartbeat renews the node's Lease every LeaseRenew and posts its status every
// StatusInterval, while its heartbeats are on.
func (s *Sim) heartbeat(n *node) {
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		select {
		case <-n.stop:
		case <-s.done:
		}
		cancel()
	}()
	var lease *coordinationv1.Lease
	lastStatus := time.Now()
	ticker := time.NewTicker(s.opts.LeaseRenew)
	defer ticker.Stop()
	for {
		s.mu.Lock()
		on := n.heartbeats
		s.mu.Unlock()
		if on {
			lease = s.renewLease(ctx, n.spec.Name, lease)
			if time.Since(lastStatus) >= s.opts.StatusInterval {
				if err := s.postStatus(ctx, n); err == nil {
					lastStatus = time.Now()
				}
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

func (s *Sim) renewLease(ctx context.Context, name string, lease *coordinationv1.Lease) *coordinationv1.Lease {
	leases := s.client.CoordinationV1().Leases("kube-node-lease")
	now := metav1.NewMicroTime(time.Now())
	if lease == nil {
		l, err := leases.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			l = &coordinationv1.Lease{
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "kube-node-lease"},
				Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(name),
					LeaseDurationSeconds: ptr.To(int32(40)), RenewTime: &now},
			}
			if node, err := s.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{}); err == nil {
				l.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: name, UID: node.UID}}
			}
			created, err := leases.Create(ctx, l, metav1.CreateOptions{})
			if err != nil {
				return nil
			}
			return created
		}
		if err != nil {
			return nil
		}
		lease = l
	}
	lease = lease.DeepCopy()
	lease.Spec.RenewTime = &now
	updated, err := leases.Update(ctx, lease, metav1.UpdateOptions{})
	if err != nil {
		return nil // read it again next time
	}
	return updated
}

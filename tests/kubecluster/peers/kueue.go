// Package peers runs the schedulers gpuq is compared with on a control plane of this module:
// Kueue's manager (built from its own Go module, kueue/ beside this folder) in front of
// kube-scheduler. bench/README.md says how the comparison uses them.
package peers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"

	"gpuq/tests/kubecluster/cluster"
)

// KueueOptions: how Kueue runs.
type KueueOptions struct {
	// Binary is Kueue's manager (cmd/kueue of sigs.k8s.io/kueue); ConfigDir has what the build
	// copied from the module's config/components: crd/*.yaml, role.yaml and webhooks.yaml.
	Binary, ConfigDir string
	// Dir: the run's folder (Kueue's configuration, log and serving certificate go there).
	Dir string
	// WaitForPodsReady: a workload's pods must all be Ready within this long after admission
	// (Kueue's all-or-nothing for gangs); 0: off.
	WaitForPodsReady time.Duration
	// FairSharing: Kueue's fair sharing (its default preemption strategies).
	FairSharing bool
	// QPS and Burst of Kueue's client; 0: Kueue's defaults (50, 100).
	QPS, Burst int
}

// Kueue is Kueue's manager as a child process.
type Kueue struct {
	cmd  *exec.Cmd
	done chan struct{}
	// User is whom Kueue authenticates as (its service account), for the audit log.
	User    string
	cleanup func()
}

// kueueMetricsCerts is where Kueue's manager, without its internal certificate management,
// reads its metrics server's certificate (its Deployment mounts a Secret there), at start,
// even with the metrics server off (as here).
const kueueMetricsCerts = "/etc/kueue/metrics/certs"

// metricsCerts writes a certificate there when there is none (removed again by cleanup).
func metricsCerts(c *cluster.Cluster) (func(), error) {
	if _, err := os.Stat(filepath.Join(kueueMetricsCerts, "tls.crt")); err == nil {
		return func() {}, nil
	}
	var made []string
	for d := kueueMetricsCerts; d != "/"; d = filepath.Dir(d) {
		if _, err := os.Stat(d); err == nil {
			break
		}
		made = append(made, d)
	}
	if err := os.MkdirAll(kueueMetricsCerts, 0o755); err != nil {
		return nil, fmt.Errorf("Kueue's manager reads its metrics certificate from %s (its Deployment mounts a Secret there): %w (run as root, or put tls.crt and tls.key there)", kueueMetricsCerts, err)
	}
	for src, dst := range map[string]string{c.WebhookCert: "tls.crt", c.WebhookKey: "tls.key"} {
		b, err := os.ReadFile(src)
		if err == nil {
			err = os.WriteFile(filepath.Join(kueueMetricsCerts, dst), b, 0o600)
		}
		if err != nil {
			return nil, err
		}
	}
	return func() {
		_ = os.Remove(filepath.Join(kueueMetricsCerts, "tls.crt"))
		_ = os.Remove(filepath.Join(kueueMetricsCerts, "tls.key"))
		for _, d := range made {
			_ = os.Remove(d)
		}
	}, nil
}

const (
	kueueNamespace = "kueue-system"
	kueueSA        = "kueue-controller-manager"
)

// KueueUser is the user name Kueue's requests carry.
const KueueUser = "system:serviceaccount:" + kueueNamespace + ":" + kueueSA

// StartKueue installs Kueue's CRDs, its service account and ClusterRole (the module's
// role.yaml), its admission webhooks for Kueue's own objects and batch/v1 Jobs (served on
// loopback with a certificate from the cluster's CA, as envtest does), and starts its manager
// with batch/job as the only integration; it returns once the webhooks answer.
func StartKueue(ctx context.Context, c *cluster.Cluster, o KueueOptions) (*Kueue, error) {
	crds, err := filepath.Glob(filepath.Join(o.ConfigDir, "crd", "*.yaml"))
	if err != nil || len(crds) == 0 {
		return nil, fmt.Errorf("no Kueue CRDs in %s/crd", o.ConfigDir)
	}
	var names []string
	for _, f := range crds {
		if err := c.Apply(ctx, f); err != nil {
			return nil, err
		}
		docs, err := readDocs(f)
		if err != nil {
			return nil, err
		}
		for _, d := range docs {
			var m metav1.PartialObjectMetadata
			if json.Unmarshal(d, &m) == nil && m.Name != "" {
				names = append(names, m.Name)
			}
		}
	}
	for _, n := range names {
		if err := waitEstablished(ctx, c, n); err != nil {
			return nil, err
		}
	}
	if err := waitDiscovery(ctx, c, "kueue.x-k8s.io/v1beta2", len(names)); err != nil {
		return nil, err
	}
	if err := account(ctx, c, o.ConfigDir); err != nil {
		return nil, err
	}
	kubeconfig, err := c.ServiceAccountKubeconfig(ctx, kueueNamespace, kueueSA, "kueue")
	if err != nil {
		return nil, err
	}
	webhookPort, err := cluster.FreePort()
	if err != nil {
		return nil, err
	}
	healthPort, err := cluster.FreePort()
	if err != nil {
		return nil, err
	}
	certDir := filepath.Join(o.Dir, "kueue-certs")
	if err := os.MkdirAll(certDir, 0o755); err != nil {
		return nil, err
	}
	for src, dst := range map[string]string{c.WebhookCert: "tls.crt", c.WebhookKey: "tls.key"} {
		b, err := os.ReadFile(src)
		if err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(certDir, dst), b, 0o600); err != nil {
			return nil, err
		}
	}
	cleanup, err := metricsCerts(c)
	if err != nil {
		return nil, err
	}
	config := filepath.Join(o.Dir, "kueue-config.yaml")
	if err := os.WriteFile(config, []byte(kueueConfig(o, webhookPort, healthPort, certDir)), 0o644); err != nil {
		return nil, err
	}
	log, err := os.Create(filepath.Join(o.Dir, "kueue.log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(o.Binary, "--config", config, "--feature-gates=VisibilityOnDemand=false", "--zap-log-level=info")
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, "POD_NAMESPACE="+kueueNamespace)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		log.Close()
		cleanup()
		return nil, err
	}
	k := &Kueue{cmd: cmd, done: make(chan struct{}), User: KueueUser, cleanup: cleanup}
	go func() {
		_ = cmd.Wait()
		log.Close()
		close(k.done)
	}()
	if err := k.waitReady(ctx, healthPort, webhookPort, filepath.Join(o.Dir, "kueue.log")); err != nil {
		k.Stop()
		return nil, err
	}
	// The webhooks go in once Kueue serves them: with failurePolicy Fail, a Job created before
	// would be refused.
	if err := installWebhooks(ctx, c, o.ConfigDir, webhookPort); err != nil {
		k.Stop()
		return nil, err
	}
	return k, nil
}

// Pid of Kueue's manager.
func (k *Kueue) Pid() int { return k.cmd.Process.Pid }

// Stop ends Kueue's manager (SIGTERM) and waits for it.
func (k *Kueue) Stop() {
	_ = k.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-k.done:
	case <-time.After(20 * time.Second):
		_ = k.cmd.Process.Kill()
		<-k.done
	}
	k.cleanup()
}

func kueueConfig(o KueueOptions, webhookPort, healthPort int, certDir string) string {
	qps, burst := o.QPS, o.Burst
	if qps == 0 {
		qps, burst = 50, 100
	}
	var b strings.Builder
	fmt.Fprintf(&b, `apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
namespace: %s
health:
  healthProbeBindAddress: 127.0.0.1:%d
metrics:
  bindAddress: "0"
webhook:
  host: 127.0.0.1
  port: %d
  certDir: %s
leaderElection:
  leaderElect: false
internalCertManagement:
  enable: false
clientConnection:
  qps: %d
  burst: %d
integrations:
  frameworks: ["batch/job"]
`, kueueNamespace, healthPort, webhookPort, certDir, qps, burst)
	if o.FairSharing {
		b.WriteString("fairSharing:\n  preemptionStrategies: [LessThanOrEqualToFinalShare, LessThanInitialShare]\n")
	}
	if o.WaitForPodsReady > 0 {
		fmt.Fprintf(&b, "waitForPodsReady:\n  timeout: %s\n  blockAdmission: false\n", o.WaitForPodsReady)
	}
	return b.String()
}

func (k *Kueue) waitReady(ctx context.Context, healthPort, webhookPort int, logPath string) error {
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		select {
		case <-k.done:
			b, _ := os.ReadFile(logPath)
			return fmt.Errorf("kueue ended; its log:\n%s", tailOf(b, 4000))
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/readyz", healthPort))
		if err != nil {
			continue
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			continue
		}
		if conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", webhookPort), time.Second); err == nil {
			conn.Close()
			return nil
		}
	}
	b, _ := os.ReadFile(logPath)
	return fmt.Errorf("kueue not ready after 2 minutes; its log:\n%s", tailOf(b, 4000))
}

// account: Kueue's namespace and service account, its ClusterRole (role.yaml, manager-role
// there) and its Role for Secrets in its namespace (secrets-role.yaml), named kueue-... as its
// kustomization names them, bound to the service account.
func account(ctx context.Context, c *cluster.Cluster, configDir string) error {
	if _, err := c.Admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: kueueNamespace}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	if _, err := c.Admin.CoreV1().ServiceAccounts(kueueNamespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: kueueSA}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	subjects := []rbacv1.Subject{{Kind: "ServiceAccount", Name: kueueSA, Namespace: kueueNamespace}}
	roles := 0
	for _, file := range []string{"role.yaml", "secrets-role.yaml"} {
		docs, err := readDocs(filepath.Join(configDir, file))
		if err != nil {
			return err
		}
		for _, d := range docs {
			var head metav1.TypeMeta
			_ = json.Unmarshal(d, &head)
			switch head.Kind {
			case "ClusterRole":
				var role rbacv1.ClusterRole
				if err := json.Unmarshal(d, &role); err != nil {
					return err
				}
				role.Name = "kueue-" + role.Name
				if _, err := c.Admin.RbacV1().ClusterRoles().Create(ctx, &role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
					return err
				}
				b := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role.Name}, Subjects: subjects,
					RoleRef: rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role.Name}}
				if _, err := c.Admin.RbacV1().ClusterRoleBindings().Create(ctx, b, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
					return err
				}
				roles++
			case "Role":
				var role rbacv1.Role
				if err := json.Unmarshal(d, &role); err != nil {
					return err
				}
				role.Name, role.Namespace = "kueue-"+role.Name, kueueNamespace
				if _, err := c.Admin.RbacV1().Roles(kueueNamespace).Create(ctx, &role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
					return err
				}
				b := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role.Name, Namespace: kueueNamespace}, Subjects: subjects,
					RoleRef: rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: role.Name}}
				if _, err := c.Admin.RbacV1().RoleBindings(kueueNamespace).Create(ctx, b, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
					return err
				}
				roles++
			}
		}
	}
	if roles < 2 {
		return fmt.Errorf("Kueue's ClusterRole and Role not found in %s (role.yaml, secrets-role.yaml)", configDir)
	}
	return nil
}

// installWebhooks: the module's webhook configurations, keeping the webhooks for Kueue's own
// objects and batch/v1 Jobs (the one integration on) and pointing them at loopback.
func installWebhooks(ctx context.Context, c *cluster.Cluster, configDir string, port int) error {
	docs, err := readDocs(filepath.Join(configDir, "webhooks.yaml"))
	if err != nil {
		return err
	}
	ca, err := os.ReadFile(c.CAFile)
	if err != nil {
		return err
	}
	keep := func(rules []admissionv1.RuleWithOperations) bool {
		for _, r := range rules {
			for _, g := range r.APIGroups {
				if g != "kueue.x-k8s.io" && g != "batch" {
					return false
				}
			}
		}
		return true
	}
	point := func(cc *admissionv1.WebhookClientConfig) {
		url := fmt.Sprintf("https://127.0.0.1:%d%s", port, *cc.Service.Path)
		cc.Service, cc.URL, cc.CABundle = nil, &url, ca
	}
	installed := 0
	for _, d := range docs {
		var head metav1.TypeMeta
		_ = json.Unmarshal(d, &head)
		switch head.Kind {
		case "MutatingWebhookConfiguration":
			var w admissionv1.MutatingWebhookConfiguration
			if err := json.Unmarshal(d, &w); err != nil {
				return err
			}
			var kept []admissionv1.MutatingWebhook
			for _, h := range w.Webhooks {
				if keep(h.Rules) {
					point(&h.ClientConfig)
					kept = append(kept, h)
				}
			}
			w.Name, w.Webhooks = "kueue-"+w.Name, kept
			if _, err := c.Admin.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, &w, metav1.CreateOptions{}); err != nil {
				return err
			}
			installed += len(kept)
		case "ValidatingWebhookConfiguration":
			var w admissionv1.ValidatingWebhookConfiguration
			if err := json.Unmarshal(d, &w); err != nil {
				return err
			}
			var kept []admissionv1.ValidatingWebhook
			for _, h := range w.Webhooks {
				if keep(h.Rules) {
					point(&h.ClientConfig)
					kept = append(kept, h)
				}
			}
			w.Name, w.Webhooks = "kueue-"+w.Name, kept
			if _, err := c.Admin.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, &w, metav1.CreateOptions{}); err != nil {
				return err
			}
			installed += len(kept)
		}
	}
	if installed == 0 {
		return fmt.Errorf("no Kueue webhook for batch Jobs in %s/webhooks.yaml", configDir)
	}
	return nil
}

func waitEstablished(ctx context.Context, c *cluster.Cluster, name string) error {
	dyn, err := dynamic.NewForConfig(c.AdminConfig)
	if err != nil {
		return err
	}
	crd := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		obj, err := dyn.Resource(crd).Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			conds, _, _ := unstructuredSlice(obj.Object, "status", "conditions")
			for _, cond := range conds {
				if m, ok := cond.(map[string]any); ok && m["type"] == "Established" && m["status"] == "True" {
					return nil
				}
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("CRD %s not established after a minute", name)
}

// waitDiscovery waits until the API server's discovery lists at least n resources (not
// subresources) of a group version.
func waitDiscovery(ctx context.Context, c *cluster.Cluster, gv string, n int) error {
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if l, err := c.Admin.Discovery().ServerResourcesForGroupVersion(gv); err == nil {
			k := 0
			for _, r := range l.APIResources {
				if !strings.Contains(r.Name, "/") {
					k++
				}
			}
			if k >= n {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return fmt.Errorf("discovery does not list the %d resources of %s after a minute", n, gv)
}

func unstructuredSlice(obj map[string]any, path ...string) ([]any, bool, error) {
	var cur any = obj
	for _, p := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false, nil
		}
		cur = m[p]
	}
	s, ok := cur.([]any)
	return s, ok, nil
}

// readDocs: the YAML documents of a file, each as JSON.
func readDocs(path string) ([][]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out [][]byte
	dec := utilyaml.NewYAMLOrJSONDecoder(f, 4096)
	for {
		var v map[string]any
		if err := dec.Decode(&v); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if len(v) == 0 {
			continue
		}
		b, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
}

func tailOf(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

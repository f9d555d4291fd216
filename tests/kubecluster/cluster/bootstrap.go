package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// bootstrap creates the manifests once the API serves.
func (c *Cluster) bootstrap(ctx context.Context) error {
	for _, f := range c.opts.ManifestFiles {
		if err := c.Apply(ctx, f); err != nil {
			return err
		}
	}
	return nil
}

// Apply creates every object of a YAML file (several documents), as `kubectl create -f` does;
// an object that exists already is replaced.
func (c *Cluster) Apply(ctx context.Context, path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("apply %s: %w", path, err)
	}
	dyn, err := dynamic.NewForConfig(c.AdminConfig)
	if err != nil {
		return err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(c.Admin.Discovery()))
	decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		var obj unstructured.Unstructured
		if err := decoder.Decode(&obj.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("apply %s: %w", path, err)
		}
		if len(obj.Object) == 0 {
			continue
		}
		gvk := obj.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return fmt.Errorf("apply %s: %s: %w", path, gvk, err)
		}
		var ri dynamic.ResourceInterface = dyn.Resource(m.Resource)
		if m.Scope.Name() == meta.RESTScopeNameNamespace {
			ns := obj.GetNamespace()
			if ns == "" {
				ns = "default"
			}
			ri = dyn.Resource(m.Resource).Namespace(ns)
		}
		_, err = ri.Create(ctx, &obj, metav1.CreateOptions{FieldManager: "kube-cluster"})
		if apierrors.IsAlreadyExists(err) {
			var old *unstructured.Unstructured
			if old, err = ri.Get(ctx, obj.GetName(), metav1.GetOptions{}); err == nil {
				obj.SetResourceVersion(old.GetResourceVersion())
				_, err = ri.Update(ctx, &obj, metav1.UpdateOptions{FieldManager: "kube-cluster"})
			}
		}
		if err != nil {
			return fmt.Errorf("apply %s: %s %s: %w", path, gvk.Kind, obj.GetName(), err)
		}
	}
}

// waitControllers returns once the controllers have done their first work (the default
// namespace's service account, which pods need to be admitted, and the root CA ConfigMap) and
// the scheduler still runs.
func (c *Cluster) waitControllers(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if !c.opts.NoControllerManager {
		err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			select {
			case <-c.procs[ControllerManager].exited():
				return false, fmt.Errorf("kube-controller-manager ended; its log:\n%s", tail(c.procs[ControllerManager].logPath, 4000))
			default:
			}
			if _, err := c.Admin.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{}); err != nil {
				return false, nil
			}
			_, err := c.Admin.CoreV1().ConfigMaps("default").Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
			return err == nil, nil
		})
		if err != nil {
			return fmt.Errorf("wait for the controllers: %w", err)
		}
	}
	if p, ok := c.procs[Scheduler]; ok {
		select {
		case <-p.exited():
			return fmt.Errorf("kube-scheduler ended; its log:\n%s", tail(p.logPath, 4000))
		default:
		}
	}
	return nil
}

// writeGpuqdKubeconfig asks the TokenRequest API for a token of gpuqd's service account (made
// here if the manifests did not make it, then with no rights at all) and writes a kubeconfig
// that reads it from a file, as a pod's projected token is read.
func (c *Cluster) writeGpuqdKubeconfig(ctx context.Context) error {
	ns, name, ok := strings.Cut(c.opts.GpuqdServiceAccount, "/")
	if !ok {
		return fmt.Errorf("gpuqd's service account %q is not namespace/name", c.opts.GpuqdServiceAccount)
	}
	if _, err := c.Admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %s: %w", ns, err)
	}
	if _, err := c.Admin.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create service account %s: %w", c.opts.GpuqdServiceAccount, err)
	}
	token, err := c.Token(ctx, ns, name, 48*time.Hour)
	if err != nil {
		return err
	}
	c.GpuqdKubeconfig, err = c.writeTokenKubeconfig("gpuqd", token)
	return err
}

// ServiceAccountKubeconfig writes NAME.kubeconfig in the cluster's folder: a service account's
// token from the TokenRequest API (valid 48 hours), read from a file as a pod reads its own.
func (c *Cluster) ServiceAccountKubeconfig(ctx context.Context, ns, sa, name string) (string, error) {
	token, err := c.Token(ctx, ns, sa, 48*time.Hour)
	if err != nil {
		return "", err
	}
	return c.writeTokenKubeconfig(name, token)
}

func (c *Cluster) writeTokenKubeconfig(name, token string) (string, error) {
	tokenFile := filepath.Join(c.opts.Dir, name+".token")
	if err := os.WriteFile(tokenFile, []byte(token), 0o600); err != nil {
		return "", err
	}
	path := filepath.Join(c.opts.Dir, name+".kubeconfig")
	return path, c.writeKubeconfig(path, name, &clientcmdapi.AuthInfo{TokenFile: tokenFile})
}

// Token of a service account from the TokenRequest API.
func (c *Cluster) Token(ctx context.Context, ns, name string, ttl time.Duration) (string, error) {
	secs := int64(ttl / time.Second)
	tr, err := c.Admin.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &secs},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("token for service account %s/%s: %w", ns, name, err)
	}
	return tr.Status.Token, nil
}

package nodesim

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"golang.org/x/sys/unix"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// mount is a folder of the pod's made visible to its container at a path, as a kubelet mounts
// a volume.
type mount struct {
	source, target string
}

// serviceAccountMounts writes the projected service account volumes of the pod (its token from
// the TokenRequest API, bound to the pod, the cluster's CA from the kube-root-ca.crt ConfigMap,
// the namespace) under its folder, and says where the container mounts each.
func (s *Sim) serviceAccountMounts(ctx context.Context, st *podState, pod *corev1.Pod, c corev1.Container) ([]mount, error) {
	var out []mount
	for _, v := range pod.Spec.Volumes {
		if v.Projected == nil {
			continue
		}
		var target string
		for _, m := range c.VolumeMounts {
			if m.Name == v.Name {
				target = m.MountPath
			}
		}
		if target == "" {
			continue
		}
		dir := filepath.Join(st.logDir, "volumes", v.Name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		for _, src := range v.Projected.Sources {
			switch {
			case src.ServiceAccountToken != nil:
				exp := int64(3607)
				if src.ServiceAccountToken.ExpirationSeconds != nil {
					exp = *src.ServiceAccountToken.ExpirationSeconds
				}
				var aud []string
				if src.ServiceAccountToken.Audience != "" {
					aud = []string{src.ServiceAccountToken.Audience}
				}
				sa := pod.Spec.ServiceAccountName
				if sa == "" {
					sa = "default"
				}
				tr, err := s.client.CoreV1().ServiceAccounts(pod.Namespace).CreateToken(ctx, sa, &authenticationv1.TokenRequest{
					Spec: authenticationv1.TokenRequestSpec{Audiences: aud, ExpirationSeconds: &exp,
						BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID}},
				}, metav1.CreateOptions{})
				if err != nil {
					return nil, fmt.Errorf("token of service account %s/%s: %w", pod.Namespace, sa, err)
				}
				if err := os.WriteFile(filepath.Join(dir, src.ServiceAccountToken.Path), []byte(tr.Status.Token), 0o644); err != nil {
					return nil, err
				}
			case src.ConfigMap != nil:
				cm, err := s.client.CoreV1().ConfigMaps(pod.Namespace).Get(ctx, src.ConfigMap.Name, metav1.GetOptions{})
				if err != nil {
					return nil, fmt.Errorf("configmap %s/%s: %w", pod.Namespace, src.ConfigMap.Name, err)
				}
				for _, item := range src.ConfigMap.Items {
					if err := os.WriteFile(filepath.Join(dir, item.Path), []byte(cm.Data[item.Key]), 0o644); err != nil {
						return nil, err
					}
				}
			case src.DownwardAPI != nil:
				for _, item := range src.DownwardAPI.Items {
					if item.FieldRef != nil && item.FieldRef.FieldPath == "metadata.namespace" {
						if err := os.WriteFile(filepath.Join(dir, item.Path), []byte(pod.Namespace), 0o644); err != nil {
							return nil, err
						}
					}
				}
			}
		}
		out = append(out, mount{source: dir, target: target})
	}
	return out, nil
}

// ContainerExec is what this program runs as `kube-cluster container-exec --mount SRC:DST ...
// --user NAME -- COMMAND...`: a container's process started by the simulated kubelet, in a
// mount namespace of its own where each SRC folder is seen at DST (over a tmpfs, so nothing
// is mounted on the host's own folders), then as the account NAME. It needs root (it runs
// the command as it is otherwise, without the mounts).
func ContainerExec(args []string) error {
	var mounts []mount
	user := ""
	for len(args) > 0 && args[0] != "--" {
		switch {
		case args[0] == "--mount" && len(args) > 1:
			src, dst, ok := strings.Cut(args[1], ":")
			if !ok {
				return fmt.Errorf("--mount %q: not SRC:DST", args[1])
			}
			mounts = append(mounts, mount{source: src, target: dst})
			args = args[2:]
		case args[0] == "--user" && len(args) > 1:
			user = args[1]
			args = args[2:]
		default:
			return fmt.Errorf("container-exec: unknown argument %q", args[0])
		}
	}
	if len(args) < 2 {
		return fmt.Errorf("container-exec: no command after --")
	}
	argv := args[1:]
	runtime.LockOSThread()
	if os.Geteuid() == 0 && len(mounts) > 0 {
		if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
			return fmt.Errorf("container-exec: a mount namespace: %w", err)
		}
		if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
			return fmt.Errorf("container-exec: make / private: %w", err)
		}
		for _, m := range mounts {
			if err := bindOver(m); err != nil {
				return err
			}
		}
	}
	path, err := lookPath(argv[0])
	if err != nil {
		return err
	}
	if user != "" && os.Geteuid() == 0 {
		cred, err := credential(user)
		if err != nil {
			return err
		}
		if err := unix.Setgroups(nil); err != nil {
			return err
		}
		if err := unix.Setgid(int(cred.Gid)); err != nil {
			return err
		}
		if err := unix.Setuid(int(cred.Uid)); err != nil {
			return err
		}
	}
	return unix.Exec(path, argv, os.Environ())
}

// bindOver shows m.source at m.target: the nearest folder above the target that exists gets a
// tmpfs (in this mount namespace only), the missing folders are made in it, and the source is
// bound there.
func bindOver(m mount) error {
	base := filepath.Dir(m.target)
	for {
		if fi, err := os.Stat(base); err == nil && fi.IsDir() {
			break
		}
		base = filepath.Dir(base)
	}
	if _, err := os.Stat(m.target); err != nil {
		// A tmpfs over the nearest existing folder would hide what else is in it (/run, /var):
		// only one that is missing gets one, on the first missing level.
		rel, _ := filepath.Rel(base, m.target)
		first := filepath.Join(base, strings.Split(rel, string(filepath.Separator))[0])
		if err := os.Mkdir(first, 0o755); err != nil && !os.IsExist(err) {
			return fmt.Errorf("container-exec: mkdir %s: %w", first, err)
		}
		if err := unix.Mount("tmpfs", first, "tmpfs", 0, "mode=0755"); err != nil {
			return fmt.Errorf("container-exec: tmpfs on %s: %w", first, err)
		}
		if err := os.MkdirAll(m.target, 0o755); err != nil {
			return err
		}
	}
	if err := unix.Mount(m.source, m.target, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("container-exec: bind %s on %s: %w", m.source, m.target, err)
	}
	return nil
}

func lookPath(name string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	for _, dir := range strings.Split(os.Getenv("PATH"), ":") {
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: not found in PATH", name)
}

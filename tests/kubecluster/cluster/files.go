package cluster

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// startEtcd runs etcd in this process on two free loopback ports, its data in Dir/etcd; when a
// port was taken before etcd listened on it, it tries again on others.
func (c *Cluster) startEtcd() error {
	for try := 1; ; try++ {
		err := c.startEtcdOnce()
		if err == nil || try == portTries || !portTaken(err.Error()) {
			return err
		}
		c.opts.Logf("etcd: %v; again on other ports", err)
		if err := os.RemoveAll(filepath.Join(c.opts.Dir, "etcd")); err != nil {
			return err
		}
	}
}

func (c *Cluster) startEtcdOnce() error {
	clientPort, err := freePort("etcd-client")
	if err != nil {
		return err
	}
	peerPort, err := freePort("etcd-peer")
	if err != nil {
		return err
	}
	cfg := embed.NewConfig()
	cfg.Name = "kube-cluster"
	cfg.Dir = filepath.Join(c.opts.Dir, "etcd")
	cu, _ := url.Parse(fmt.Sprintf("http://127.0.0.1:%d", clientPort))
	pu, _ := url.Parse(fmt.Sprintf("http://127.0.0.1:%d", peerPort))
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{*cu}, []url.URL{*cu}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{*pu}, []url.URL{*pu}
	cfg.InitialCluster = cfg.Name + "=" + pu.String()
	cfg.LogLevel = "error"
	cfg.LogOutputs = []string{filepath.Join(c.opts.Dir, "etcd.log")}
	cfg.UnsafeNoFsync = !c.opts.Fsync
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return fmt.Errorf("start etcd: %w", err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(60 * time.Second):
		e.Close()
		return fmt.Errorf("start etcd: not ready after 60 s (its log: %s)", cfg.LogOutputs[0])
	}
	c.etcd = e
	c.EtcdURL = cu.String()
	return nil
}

// writeFiles makes the certificate authority, the serving and client certificates, the
// service account key and the audit policy. They name no port: the API server's URL is in what
// pointAt writes.
func (c *Cluster) writeFiles() error {
	dir := c.opts.Dir
	ca, err := newAuthority()
	if err != nil {
		return err
	}
	c.CAFile = filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(c.CAFile, ca.certPEM, 0o644); err != nil {
		return err
	}
	certs := []struct {
		file, cn string
		orgs     []string
		hosts    []string
	}{
		{"apiserver", "kube-apiserver", nil, []string{"127.0.0.1", "localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local", "10.96.0.1"}},
		{"apiserver-kubelet-client", "kube-apiserver-kubelet-client", []string{"system:masters"}, nil},
		{"admin", "kubernetes-admin", []string{"system:masters"}, nil},
		{"controller-manager", "system:kube-controller-manager", nil, nil},
		{"scheduler", "system:kube-scheduler", nil, nil},
		{"nodes", NodesUser, []string{"system:masters"}, nil},
		{"webhook", "kube-cluster-webhook", nil, []string{"127.0.0.1", "localhost"}},
	}
	for _, s := range certs {
		pair, err := ca.issue(s.cn, s.orgs, s.hosts)
		if err != nil {
			return err
		}
		if err := pair.write(dir, s.file); err != nil {
			return err
		}
	}
	c.WebhookCert, c.WebhookKey = c.file("webhook.crt"), c.file("webhook.key")
	if _, _, err := serviceAccountKey(dir); err != nil {
		return err
	}
	c.AuditLog = filepath.Join(dir, "audit.log")
	return os.WriteFile(filepath.Join(dir, "audit-policy.yaml"), []byte(c.auditPolicy()), 0o644)
}

// pointAt sets the API server's URL to a loopback port and writes what names it: the admin's,
// the controllers' and the scheduler's kubeconfigs, and the clients' configurations.
func (c *Cluster) pointAt(port int) error {
	c.APIURL = fmt.Sprintf("https://127.0.0.1:%d", port)
	auth := func(file string) *clientcmdapi.AuthInfo {
		return &clientcmdapi.AuthInfo{ClientCertificate: c.file(file + ".crt"), ClientKey: c.file(file + ".key")}
	}
	c.AdminKubeconfig = c.file("admin.kubeconfig")
	if err := c.writeKubeconfig(c.AdminKubeconfig, "admin", auth("admin")); err != nil {
		return err
	}
	for file, user := range map[string]string{"controller-manager": "system:kube-controller-manager", "scheduler": "system:kube-scheduler"} {
		if err := c.writeKubeconfig(c.file(file+".kubeconfig"), user, auth(file)); err != nil {
			return err
		}
	}
	tls := func(file string) rest.TLSClientConfig {
		return rest.TLSClientConfig{CAFile: c.CAFile, CertFile: c.file(file + ".crt"), KeyFile: c.file(file + ".key")}
	}
	c.AdminConfig = &rest.Config{Host: c.APIURL, TLSClientConfig: tls("admin"), QPS: 1000, Burst: 2000, UserAgent: "kube-cluster"}
	c.NodesConfig = &rest.Config{Host: c.APIURL, TLSClientConfig: tls("nodes"), QPS: 2000, Burst: 4000, UserAgent: "kube-cluster-nodes"}
	var err error
	c.Admin, err = kubernetes.NewForConfig(c.AdminConfig)
	return err
}

// auditPolicy records every request at the Metadata level (who, what, the answer's code), once
// it is answered (a watch also once it has started: it may be open when the log is read), for the users asked for or, by default, for everybody but the API server's
// own loopback client and the node simulator.
func (c *Cluster) auditPolicy() string {
	var b strings.Builder
	b.WriteString("apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n")
	if c.opts.AuditUsers != nil {
		b.WriteString("  - level: Metadata\n    users: [")
		for i, u := range c.opts.AuditUsers {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%q", u)
		}
		b.WriteString("]\n  - level: None\n")
		return b.String()
	}
	fmt.Fprintf(&b, "  - level: None\n    users: [\"system:apiserver\", %q]\n  - level: Metadata\n", NodesUser)
	return b.String()
}

func (c *Cluster) writeKubeconfig(path, user string, auth *clientcmdapi.AuthInfo) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["kube-cluster"] = &clientcmdapi.Cluster{Server: c.APIURL, CertificateAuthority: c.CAFile}
	cfg.AuthInfos[user] = auth
	cfg.Contexts["kube-cluster"] = &clientcmdapi.Context{Cluster: "kube-cluster", AuthInfo: user}
	cfg.CurrentContext = "kube-cluster"
	return clientcmd.WriteToFile(*cfg, path)
}

func (c *Cluster) file(name string) string { return filepath.Join(c.opts.Dir, name) }

func (c *Cluster) apiServerArgs(port int) []string {
	args := []string{
		"--etcd-servers=" + c.EtcdURL,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		// The kubernetes Service's endpoints are left alone: a loopback address may not be one.
		"--endpoint-reconciler-type=none",
		fmt.Sprintf("--secure-port=%d", port),
		"--tls-cert-file=" + c.file("apiserver.crt"),
		"--tls-private-key-file=" + c.file("apiserver.key"),
		"--client-ca-file=" + c.CAFile,
		"--service-account-key-file=" + c.file("sa.pub"),
		"--service-account-signing-key-file=" + c.file("sa.key"),
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-cluster-ip-range=10.96.0.0/16",
		"--authorization-mode=Node,RBAC",
		// The default admission plugins and NodeRestriction, as kubeadm enables them.
		"--enable-admission-plugins=NodeRestriction",
		"--enable-priority-and-fairness=true",
		"--allow-privileged=true",
		"--kubelet-client-certificate=" + c.file("apiserver-kubelet-client.crt"),
		"--kubelet-client-key=" + c.file("apiserver-kubelet-client.key"),
		"--kubelet-preferred-address-types=InternalIP",
		"--audit-policy-file=" + c.file("audit-policy.yaml"),
		"--audit-log-path=" + c.AuditLog,
		"--audit-log-format=json",
		"--audit-log-mode=blocking",
		"--audit-log-maxsize=0",
		"--profiling=false",
		"--v=1",
	}
	return append(args, c.opts.APIServerArgs...)
}

func (c *Cluster) controllerManagerArgs() []string {
	args := []string{
		"--kubeconfig=" + c.file("controller-manager.kubeconfig"),
		"--authentication-kubeconfig=" + c.file("controller-manager.kubeconfig"),
		"--authorization-kubeconfig=" + c.file("controller-manager.kubeconfig"),
		"--bind-address=127.0.0.1",
		"--secure-port=0",
		"--controllers=" + strings.Join(c.opts.Controllers, ","),
		"--service-account-private-key-file=" + c.file("sa.key"),
		"--root-ca-file=" + c.CAFile,
		"--use-service-account-credentials=true",
		"--leader-elect=false",
		"--node-monitor-period=1s",
		fmt.Sprintf("--node-monitor-grace-period=%s", c.opts.NodeMonitorGracePeriod),
		"--profiling=false",
		"--v=1",
	}
	return append(args, c.opts.ControllerManagerArgs...)
}

func (c *Cluster) schedulerArgs() []string {
	args := []string{
		"--kubeconfig=" + c.file("scheduler.kubeconfig"),
		"--authentication-kubeconfig=" + c.file("scheduler.kubeconfig"),
		"--authorization-kubeconfig=" + c.file("scheduler.kubeconfig"),
		"--bind-address=127.0.0.1",
		"--secure-port=0",
		"--leader-elect=false",
		"--profiling=false",
		"--v=1",
	}
	return append(args, c.opts.SchedulerArgs...)
}

package cluster

import (
	"context"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A port FreePort chose may be taken before etcd or kube-apiserver listens on it (a test beside
// this one, a connection's source port); Start then starts them again on other ports.
func TestStartOnTakenPorts(t *testing.T) {
	self := os.Getenv("KUBE_CLUSTER")
	if self == "" {
		t.Skip("KUBE_CLUSTER (the kube-cluster binary, run for kube-apiserver) is not set")
	}
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	taken := held.Addr().(*net.TCPAddr).Port
	t.Logf("taken %d", taken)
	handedOut := map[string]int{}
	defer func(f func(string) (int, error)) { freePort = f }(freePort)
	freePort = func(purpose string) (int, error) {
		handedOut[purpose]++
		if handedOut[purpose] == 1 && purpose != "etcd-peer" {
			return taken, nil
		}
		return FreePort()
	}
	var logged []string
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := Start(ctx, Options{Dir: t.TempDir(), Self: self, NoControllerManager: true, NoScheduler: true,
		Logf: func(f string, a ...any) { logged = append(logged, f); t.Logf(f, a...) }})
	if err != nil {
		t.Fatalf("Start with the first etcd and API server ports taken: %v", err)
	}
	defer c.Stop()
	if handedOut["etcd-client"] != 2 || handedOut["apiserver"] != 2 {
		t.Errorf("ports handed out: %v; want etcd's client port and the API server's twice each", handedOut)
	}
	for _, u := range []string{c.EtcdURL, c.APIURL} {
		if strings.HasSuffix(u, ":"+strconv.Itoa(taken)) {
			t.Errorf("%s is on the taken port %d", u, taken)
		}
	}
	if _, err := c.Admin.Discovery().ServerVersion(); err != nil {
		t.Errorf("the API server does not answer: %v", err)
	}
	retried := strings.Join(logged, "\n")
	if !strings.Contains(retried, "etcd:") || !strings.Contains(retried, "kube-apiserver: port") {
		t.Errorf("what Start logged does not say it tried again:\n%s", retried)
	}
}

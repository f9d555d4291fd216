package nodesim

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"k8s.io/client-go/util/cert"
)

// serveLogs answers the API server's requests for containers' logs as a kubelet does
// (GET /containerLogs/NAMESPACE/POD/CONTAINER, with follow, tailLines and limitBytes), so that
// `kubectl logs` works through the API server. Every simulated node names this one server
// (127.0.0.1 and its port) as its kubelet endpoint. The API server presents a client
// certificate; like a kubelet started with --anonymous-auth=false and webhook authorization
// it would check it; the simulator, on loopback, does not. It serves the kubelet's attach
// endpoint as well (attach.go), for containers with stdin and tty.
func (s *Sim) serveLogs(ln net.Listener) error {
	certPEM, keyPEM, err := cert.GenerateSelfSignedCertKey("127.0.0.1", []net.IP{net.ParseIP("127.0.0.1")}, nil)
	if err != nil {
		return err
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /containerLogs/{ns}/{pod}/{container}", s.containerLogs)
	// Any method: the API server upgrades the request (SPDY) with POST or GET.
	mux.HandleFunc("/attach/{ns}/{pod}/{container}", s.attach)
	mux.HandleFunc("/attach/{ns}/{pod}/{uid}/{container}", s.attach)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })
	srv := &http.Server{Handler: mux, TLSConfig: &tls.Config{Certificates: []tls.Certificate{pair}, ClientAuth: tls.RequestClientCert}}
	go func() { _ = srv.ServeTLS(ln, "", "") }()
	go func() {
		<-s.done
		_ = srv.Close()
	}()
	return nil
}

// podOf is the state of pod ns/name on this node, or nil after answering 404.
func (s *Sim) podOf(w http.ResponseWriter, ns, name string) *podState {
	s.mu.Lock()
	st := s.pods[ns+"/"+name]
	s.mu.Unlock()
	if st == nil {
		http.Error(w, "pod "+ns+"/"+name+" is not on this node", http.StatusNotFound)
	}
	return st
}

func (s *Sim) containerLogs(w http.ResponseWriter, r *http.Request) {
	ns, name, cname := r.PathValue("ns"), r.PathValue("pod"), r.PathValue("container")
	st := s.podOf(w, ns, name)
	if st == nil {
		return
	}
	path := filepath.Join(st.logDir, cname+".log")
	f, err := os.Open(path)
	if err != nil {
		http.Error(w, "container "+cname+" of pod "+ns+"/"+name+" has no log", http.StatusNotFound)
		return
	}
	defer f.Close()
	q := r.URL.Query()
	follow, _ := strconv.ParseBool(q.Get("follow"))
	limit := int64(-1)
	if v, err := strconv.ParseInt(q.Get("limitBytes"), 10, 64); err == nil && v > 0 {
		limit = v
	}
	w.Header().Set("Content-Type", "text/plain")
	var out io.Writer = w
	if limit > 0 {
		out = &limitWriter{w: w, left: limit}
	}
	if n, err := strconv.Atoi(q.Get("tailLines")); err == nil && n >= 0 {
		data, _ := io.ReadAll(f)
		lines := bytes.SplitAfter(data, []byte("\n"))
		if len(lines) > 0 && len(lines[len(lines)-1]) == 0 {
			lines = lines[:len(lines)-1]
		}
		if len(lines) > n {
			lines = lines[len(lines)-n:]
		}
		_, _ = out.Write(bytes.Join(lines, nil))
	} else {
		_, _ = io.Copy(out, bufio.NewReader(f))
	}
	if !follow {
		return
	}
	flusher, _ := w.(http.Flusher)
	buf := make([]byte, 32*1024)
	for {
		n, _ := f.Read(buf)
		if n > 0 {
			if _, err := out.Write(buf[:n]); err != nil {
				return
			}
			if flusher != nil {
				flusher.Flush()
			}
			continue
		}
		st.mu.Lock()
		c := st.containers[cname]
		running := c != nil && !c.done && !c.exited()
		st.mu.Unlock()
		if !running {
			return
		}
		select {
		case <-r.Context().Done():
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
}

type limitWriter struct {
	w    io.Writer
	left int64
}

func (l *limitWriter) Write(p []byte) (int, error) {
	if l.left <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.w.Write(p)
	l.left -= int64(n)
	return n, err
}

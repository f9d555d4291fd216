// Package control serves a test's hands on a running cluster over plain HTTP on loopback: any
// API request with the admin's credentials, the simulated nodes (add, Ready, heartbeats,
// remove), a pod's containers finished with an exit code, the GPUs a pod was given, the
// audit log as a list of requests, a component restarted and etcd's history compacted.
// Every answer is JSON; an error is {"error": "..."} with a 4xx or 5xx status.
package control

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/client-go/rest"

	"gpuq/tests/kubecluster/cluster"
	"gpuq/tests/kubecluster/nodesim"
)

// Server is the control endpoint of one cluster.
type Server struct {
	Cluster *cluster.Cluster
	Nodes   *nodesim.Sim
	http    *http.Client
}

// Serve listens on a free loopback port and serves until ctx ends; it returns the address.
func (s *Server) Serve(ctx context.Context) (string, error) {
	hc, err := rest.HTTPClientFor(s.Cluster.AdminConfig)
	if err != nil {
		return "", err
	}
	s.http = hc
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { reply(w, map[string]string{"status": "ok"}) })
	mux.HandleFunc("POST /v1/api", s.api)
	mux.HandleFunc("POST /v1/nodes", s.addNode)
	mux.HandleFunc("POST /v1/nodes/{name}/ready", s.nodeReady)
	mux.HandleFunc("POST /v1/nodes/{name}/heartbeats", s.nodeHeartbeats)
	mux.HandleFunc("DELETE /v1/nodes/{name}", s.removeNode)
	mux.HandleFunc("POST /v1/pods/{ns}/{name}/finish", s.finishPod)
	mux.HandleFunc("GET /v1/pods/{ns}/{name}/devices", s.devices)
	mux.HandleFunc("GET /v1/audit", s.audit)
	mux.HandleFunc("POST /v1/components/{name}/restart", s.restart)
	mux.HandleFunc("POST /v1/components/{name}/stop", s.stopComponent)
	mux.HandleFunc("POST /v1/components/{name}/start", s.startComponent)
	mux.HandleFunc("POST /v1/etcd/compact", s.compact)
	srv := &http.Server{Handler: mux}
	go func() { _ = srv.Serve(ln) }()
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	return "http://" + ln.Addr().String(), nil
}

func reply(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func fail(w http.ResponseWriter, code int, err error) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
}

func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	if err := json.NewDecoder(io.LimitReader(r.Body, 16<<20)).Decode(v); err != nil {
		fail(w, http.StatusBadRequest, fmt.Errorf("request body: %w", err))
		return false
	}
	return true
}

// api sends one request to the API server with the admin's credentials:
// {"method": "POST", "path": "/api/v1/namespaces/default/pods", "body": {...} or "text",
// "contentType": "application/json"} -> {"status": 201, "body": "..."}.
func (s *Server) api(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Method      string          `json:"method"`
		Path        string          `json:"path"`
		Body        json.RawMessage `json:"body"`
		ContentType string          `json:"contentType"`
	}
	if !decode(w, r, &req) {
		return
	}
	body := []byte(req.Body)
	var text string
	if len(body) > 0 && body[0] == '"' && json.Unmarshal(body, &text) == nil {
		body = []byte(text)
	}
	hreq, err := http.NewRequestWithContext(r.Context(), req.Method, s.Cluster.APIURL+req.Path, bytes.NewReader(body))
	if err != nil {
		fail(w, http.StatusBadRequest, err)
		return
	}
	if req.ContentType == "" {
		req.ContentType = "application/json"
	}
	if len(body) > 0 {
		hreq.Header.Set("Content-Type", req.ContentType)
	}
	hreq.Header.Set("Accept", "application/json")
	hreq.Header.Set("User-Agent", "kube-cluster-control")
	resp, err := s.http.Do(hreq)
	if err != nil {
		fail(w, http.StatusBadGateway, err)
		return
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	reply(w, map[string]any{"status": resp.StatusCode, "body": string(out)})
}

func (s *Server) addNode(w http.ResponseWriter, r *http.Request) {
	var spec nodesim.NodeSpec
	if !decode(w, r, &spec) {
		return
	}
	if err := s.Nodes.AddNode(r.Context(), spec); err != nil {
		fail(w, http.StatusBadRequest, err)
		return
	}
	reply(w, map[string]string{"node": spec.Name})
}

func (s *Server) nodeReady(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Ready bool `json:"ready"`
	}
	if !decode(w, r, &req) {
		return
	}
	if err := s.Nodes.SetReady(r.Context(), r.PathValue("name"), req.Ready); err != nil {
		fail(w, http.StatusBadRequest, err)
		return
	}
	reply(w, req)
}

func (s *Server) nodeHeartbeats(w http.ResponseWriter, r *http.Request) {
	var req struct {
		On bool `json:"on"`
	}
	if !decode(w, r, &req) {
		return
	}
	if err := s.Nodes.SetHeartbeats(r.PathValue("name"), req.On); err != nil {
		fail(w, http.StatusBadRequest, err)
		return
	}
	reply(w, req)
}

func (s *Server) removeNode(w http.ResponseWriter, r *http.Request) {
	if err := s.Nodes.RemoveNode(r.Context(), r.PathValue("name")); err != nil {
		fail(w, http.StatusBadRequest, err)
		return
	}
	reply(w, map[string]string{"removed": r.PathValue("name")})
}

func (s *Server) finishPod(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Code int `json:"code"`
	}
	if !decode(w, r, &req) {
		return
	}
	if err := s.Nodes.Finish(r.PathValue("ns"), r.PathValue("name"), req.Code); err != nil {
		fail(w, http.StatusNotFound, err)
		return
	}
	reply(w, req)
}

func (s *Server) devices(w http.ResponseWriter, r *http.Request) {
	d := s.Nodes.Devices(r.PathValue("ns"), r.PathValue("name"))
	if d == nil {
		d = []string{}
	}
	reply(w, d)
}

// Request is one request as the audit log recorded it (the Metadata level).
type Request struct {
	Verb        string `json:"verb"`
	Method      string `json:"method"` // the HTTP method the verb stands for
	Path        string `json:"path"`
	Query       string `json:"query"`
	User        string `json:"user"`
	UserAgent   string `json:"userAgent"`
	Code        int    `json:"code"`
	Message     string `json:"message"` // a refusal's message (empty on success)
	Resource    string `json:"resource"`
	Subresource string `json:"subresource"`
	Namespace   string `json:"namespace"`
	Name        string `json:"name"`
	At          string `json:"at"` // stageTimestamp, RFC 3339 with microseconds
}

var methodOf = map[string]string{"get": "GET", "list": "GET", "watch": "GET", "create": "POST", "update": "PUT",
	"patch": "PATCH", "delete": "DELETE", "deletecollection": "DELETE"}

// ReadAudit reads the audit log's requests, optionally only those of one user, each once where
// it first appears: its ResponseComplete event, or for a watch still open (whose ResponseComplete
// comes when it ends) its ResponseStarted one, replaced by the other when that has come too.
func ReadAudit(path, user string) ([]Request, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Request
	at := map[string]int{} // auditID -> its place in out
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e struct {
			AuditID    string `json:"auditID"`
			Stage      string `json:"stage"`
			Verb       string `json:"verb"`
			RequestURI string `json:"requestURI"`
			User       struct {
				Username string `json:"username"`
			} `json:"user"`
			UserAgent      string `json:"userAgent"`
			StageTimestamp string `json:"stageTimestamp"`
			ObjectRef      struct {
				Resource    string `json:"resource"`
				Subresource string `json:"subresource"`
				Namespace   string `json:"namespace"`
				Name        string `json:"name"`
			} `json:"objectRef"`
			ResponseStatus struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"responseStatus"`
		}
		if json.Unmarshal(sc.Bytes(), &e) != nil || (e.Stage != "ResponseComplete" && e.Stage != "ResponseStarted") {
			continue
		}
		if user != "" && e.User.Username != user {
			continue
		}
		path, query, _ := strings.Cut(e.RequestURI, "?")
		r := Request{Verb: e.Verb, Method: methodOf[e.Verb], Path: path, Query: query,
			User: e.User.Username, UserAgent: e.UserAgent, Code: e.ResponseStatus.Code, Message: e.ResponseStatus.Message,
			Resource: e.ObjectRef.Resource, Subresource: e.ObjectRef.Subresource,
			Namespace: e.ObjectRef.Namespace, Name: e.ObjectRef.Name, At: e.StageTimestamp}
		if i, seen := at[e.AuditID]; seen {
			if e.Stage == "ResponseComplete" {
				out[i] = r
			}
			continue
		}
		at[e.AuditID] = len(out)
		out = append(out, r)
	}
	return out, sc.Err()
}

func (s *Server) audit(w http.ResponseWriter, r *http.Request) {
	reqs, err := ReadAudit(s.Cluster.AuditLog, r.URL.Query().Get("user"))
	if err != nil {
		fail(w, http.StatusInternalServerError, err)
		return
	}
	if reqs == nil {
		reqs = []Request{}
	}
	reply(w, reqs)
}

func (s *Server) restart(w http.ResponseWriter, r *http.Request) {
	kill := r.URL.Query().Get("signal") == "KILL"
	ctx, cancel := context.WithTimeout(r.Context(), 3*time.Minute)
	defer cancel()
	if err := s.Cluster.Restart(ctx, r.PathValue("name"), kill); err != nil {
		fail(w, http.StatusInternalServerError, err)
		return
	}
	reply(w, map[string]string{"restarted": r.PathValue("name")})
}

func (s *Server) stopComponent(w http.ResponseWriter, r *http.Request) {
	if err := s.Cluster.StopComponent(r.PathValue("name"), r.URL.Query().Get("signal") == "KILL"); err != nil {
		fail(w, http.StatusBadRequest, err)
		return
	}
	reply(w, map[string]string{"stopped": r.PathValue("name")})
}

func (s *Server) startComponent(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 3*time.Minute)
	defer cancel()
	if err := s.Cluster.StartComponent(ctx, r.PathValue("name")); err != nil {
		fail(w, http.StatusInternalServerError, err)
		return
	}
	reply(w, map[string]string{"started": r.PathValue("name")})
}

// compact writes one key and compacts etcd's history up to it: a watch or a list continued from
// any resourceVersion handed out before is then answered 410 Gone wherever the API server's
// watch cache does not hold it (after the API server's restart, it holds nothing older).
func (s *Server) compact(w http.ResponseWriter, r *http.Request) {
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{s.Cluster.EtcdURL}, DialTimeout: 5 * time.Second})
	if err != nil {
		fail(w, http.StatusInternalServerError, err)
		return
	}
	defer cli.Close()
	// One write first, so that every resourceVersion handed out so far is older than the
	// compaction (the latest one included).
	resp, err := cli.Put(r.Context(), "/kube-cluster/compacted-at", time.Now().UTC().Format(time.RFC3339Nano))
	if err != nil {
		fail(w, http.StatusInternalServerError, err)
		return
	}
	rev := resp.Header.Revision
	if _, err := cli.Compact(r.Context(), rev, clientv3.WithCompactPhysical()); err != nil && !strings.Contains(err.Error(), "compacted") {
		fail(w, http.StatusInternalServerError, err)
		return
	}
	reply(w, map[string]int64{"revision": rev})
}

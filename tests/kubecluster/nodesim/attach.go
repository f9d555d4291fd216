package nodesim

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"k8s.io/cri-streaming/pkg/streaming/remotecommand"
)

// The kubelet's defaults for its streaming connections.
const (
	attachIdleTimeout           = 4 * time.Hour
	attachStreamCreationTimeout = remotecommand.DefaultStreamCreationTimeout
)

// attach answers the API server's pods/attach as a kubelet does (/attach/NAMESPACE/POD/CONTAINER,
// upgraded to SPDY with the remote command protocols v4 to v1; a client's WebSocket, v5, is
// translated to SPDY by the API server): the client's stdin goes to the container's terminal,
// and the terminal's output from then on to the client, with the client's resizes. Only a
// container that runs on a terminal (stdin and tty) can be attached to.
func (s *Sim) attach(w http.ResponseWriter, r *http.Request) {
	ns, name, cname := r.PathValue("ns"), r.PathValue("pod"), r.PathValue("container")
	st := s.podOf(w, ns, name)
	if st == nil {
		return
	}
	opts, err := remotecommand.NewOptions(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	remotecommand.ServeAttach(w, r, attacher{st}, ns+"/"+name, r.PathValue("uid"), cname, opts,
		attachIdleTimeout, attachStreamCreationTimeout, remotecommand.SupportedStreamingProtocols)
}

// attacher attaches to the containers of one pod.
type attacher struct{ st *podState }

func (a attacher) AttachContainer(ctx context.Context, name, _ string, cname string, in io.Reader, out, _ io.WriteCloser, _ bool, resize <-chan remotecommand.TerminalSize) error {
	a.st.mu.Lock()
	c := a.st.containers[cname]
	var term *terminal
	var waited chan struct{}
	running := false
	if c != nil {
		term, waited = c.term, c.waited
		running = !c.done && !c.exited()
	}
	a.st.mu.Unlock()
	switch {
	case c == nil:
		return fmt.Errorf("pod %s has no container %q", name, cname)
	case !(c.spec.Stdin && c.spec.TTY) || (term == nil && running):
		return fmt.Errorf("container %q of pod %s has no terminal (stdin and tty)", cname, name)
	case term == nil || !running:
		return fmt.Errorf("container %q of pod %s is not running", cname, name)
	}

	var failed chan struct{} // closed when the client's output stream has failed
	if out != nil {
		o := term.attach(out)
		defer term.detach(o)
		failed = o.failed
	}
	var inDone chan struct{} // closed when in has ended, when nothing is written to out
	if in != nil {
		ended := make(chan struct{})
		go func() {
			defer close(ended)
			_, _ = io.Copy(term.master, in)
		}()
		if out == nil {
			inDone = ended
		}
	}
	for {
		select {
		case <-waited:
			return nil
		case <-ctx.Done():
			return nil
		case <-inDone:
			return nil
		case <-failed:
			return nil
		case size, ok := <-resize:
			if !ok {
				resize = nil
				continue
			}
			if size.Width > 0 && size.Height > 0 {
				_ = term.setSize(size.Height, size.Width)
			}
		}
	}
}

package api

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/graphtide/graphtide/internal/writes"
)

// TestClientUnreachable: a request that reaches no server is an
// *UnreachableError that names the server's URL and what to check, not
// the HTTP client's raw error; a server that answers, even with an
// error, is not one.
func TestClientUnreachable(t *testing.T) {
	// Nothing listens on a port just closed.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	ln.Close()
	// A server that answers too late.
	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer slow.Close()
	defer close(release)
	// A server that answers with an error.
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"error":"boom"}`, http.StatusInternalServerError)
	}))
	defer failing.Close()

	for _, c := range []struct {
		url     string
		timeout time.Duration
		want    []string // nil: not an *UnreachableError
	}{
		{url: dead, timeout: 5 * time.Second, want: []string{"the server at " + dead + " is not reachable", "connection refused", "is graphtide serve running", "--http-addr"}},
		{url: "http://no-such-host.invalid:9464", timeout: 5 * time.Second, want: []string{"the server at http://no-such-host.invalid:9464 is not reachable", "no-such-host.invalid", "--http-addr"}},
		{url: slow.URL, timeout: 200 * time.Millisecond, want: []string{"the server at " + slow.URL + " did not answer within 200ms (--timeout)"}},
		{url: failing.URL, timeout: 5 * time.Second},
	} {
		cl, err := NewClient(c.url, ClientOptions{Timeout: c.timeout})
		if err != nil {
			t.Fatal(err)
		}
		_, err = cl.Degree(context.Background(), "1", ReadOptions{})
		cl.Close()
		var ue *UnreachableError
		if c.want == nil {
			var se *StatusError
			if errors.As(err, &ue) || !errors.As(err, &se) {
				t.Errorf("%s: %v, want a *StatusError", c.url, err)
			}
			continue
		}
		if !errors.As(err, &ue) {
			t.Errorf("%s: %v (%T), want an *UnreachableError", c.url, err, err)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: the error lacks %q: %v", c.url, w, err)
			}
		}
		if strings.Contains(err.Error(), "/v1/vertices") {
			t.Errorf("%s: the error repeats the request: %v", c.url, err)
		}
	}

	// A batch that timed out may have been applied: the error says so,
	// and how to apply it once.
	cl, err := NewClient(slow.URL, ClientOptions{Timeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	_, err = cl.PostBatch(context.Background(), &writes.Request{Ops: json.RawMessage(`[{"src":1,"dst":2}]`)})
	var ue *UnreachableError
	if !errors.As(err, &ue) || !ue.Sent || !strings.Contains(err.Error(), "may or may not have been applied") || !strings.Contains(err.Error(), "--idempotency-key") {
		t.Errorf("a batch that timed out: %v, want an *UnreachableError saying its outcome is unknown", err)
	}
}

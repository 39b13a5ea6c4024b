package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/graphtide/graphtide/internal/gen"
)

// TestServeStartMessage: what serve prints once it runs names the program
// as it was invoked, the embedded broker's and the HTTP API's addresses,
// a command that feeds it, and queries that work as printed: the curl URL
// answers, and the query command names the API's URL.
func TestServeStartMessage(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	cfg.HTTP = HTTPConfig{Addr: "127.0.0.1:0", RequestTimeout: time.Second, PathBudget: 1000}
	cfg.Program = "bin/graphtide"
	var out bytes.Buffer
	cfg.Out = &out
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv, err := Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	msg := out.String()
	broker, httpAddr := srv.Brokers()[0], srv.HTTPAddr()
	for _, want := range []string{
		"embedded broker listening on " + broker + "; feed it with: bin/graphtide gen ",
		"--brokers " + broker + " --topic edges\n",
		"http listening on " + httpAddr + "\n",
		"query it: curl -s http://" + httpAddr + "/v1/stats\n",
		fmt.Sprintf("bin/graphtide query neighbors %d --limit 5 --server http://%s", feedHub, httpAddr),
		"bin/graphtide query --help",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("serve's message lacks %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, " graphtide gen") {
		t.Errorf("serve's message names graphtide, not the program as invoked:\n%s", msg)
	}
	// The curl command works as printed.
	m := regexp.MustCompile(`curl -s (\S+/v1/stats)\n`).FindStringSubmatch(msg)
	if m == nil {
		t.Fatalf("no curl command in:\n%s", msg)
	}
	resp, err := http.Get(m[1])
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var stats map[string]any
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&stats) != nil {
		t.Errorf("GET %s: %s, want 200 with a JSON object", m[1], resp.Status)
	}
}

// TestFeedHub: the vertex the query hint names is the hub of the stream
// the feed command produces (as gen generates it from the flags printed,
// edge factor gen's default, 16): the vertex with the most distinct
// out-neighbors, so the suggested query lists some.
func TestFeedHub(t *testing.T) {
	cmd := feedCommand("graphtide", "127.0.0.1:9092", "edges")
	flag := func(name string) int {
		m := regexp.MustCompile(`--` + name + ` (\d+)`).FindStringSubmatch(cmd)
		if m == nil {
			t.Fatalf("%q has no --%s", cmd, name)
		}
		n, _ := strconv.Atoi(m[1])
		return n
	}
	r := gen.RMAT{Scale: flag("scale"), EdgeFactor: 16, Seed: uint64(flag("seed"))}
	out := map[uint64]map[uint64]bool{}
	for e := range r.All() {
		if out[e.Src] == nil {
			out[e.Src] = map[uint64]bool{}
		}
		out[e.Src][e.Dst] = true
	}
	hub, most := uint64(0), -1
	for v, nb := range out {
		if len(nb) > most || len(nb) == most && v < hub {
			hub, most = v, len(nb)
		}
	}
	if hub != feedHub {
		t.Errorf("the hub of %q is %d (%d out-neighbors); the hint names %d", cmd, hub, most, feedHub)
	}
}

// TestQueryHint: the hint dials loopback for an unspecified address, and
// says how to pass a CA and a token when serve has them.
func TestQueryHint(t *testing.T) {
	for _, c := range []struct {
		addr          string
		tls, tokens   bool
		embedded      bool
		want, notWant []string
	}{
		{addr: "127.0.0.1:9464", embedded: true,
			want:    []string{"curl -s http://127.0.0.1:9464/v1/stats\n", "prog query neighbors 8677 --limit 5 --server http://127.0.0.1:9464 ("},
			notWant: []string{"VERTEX", "TOKEN", "CA.pem"}},
		{addr: "0.0.0.0:9464", tokens: true,
			want: []string{`curl -s -H "Authorization: Bearer TOKEN" http://127.0.0.1:9464/v1/stats`,
				"prog query neighbors VERTEX --limit 5 --server http://127.0.0.1:9464 --token-file TOKEN_FILE (VERTEX: a vertex id or key)"},
			notWant: []string{"8677"}},
		{addr: "[::]:9464", tls: true,
			want: []string{"curl -s --cacert CA.pem https://127.0.0.1:9464/v1/stats", "--server https://127.0.0.1:9464 --server-ca CA.pem"}},
		{addr: "[::1]:9464",
			want: []string{"curl -s http://[::1]:9464/v1/stats"}},
	} {
		h := queryHint("prog", c.addr, c.tls, c.tokens, c.embedded)
		for _, w := range c.want {
			if !strings.Contains(h, w) {
				t.Errorf("hint for %s (tls %v, tokens %v) lacks %q:\n%s", c.addr, c.tls, c.tokens, w, h)
			}
		}
		for _, w := range c.notWant {
			if strings.Contains(h, w) {
				t.Errorf("hint for %s (tls %v, tokens %v) has %q:\n%s", c.addr, c.tls, c.tokens, w, h)
			}
		}
	}
}

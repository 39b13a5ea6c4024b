package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/graphtide/graphtide/internal/api"
	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/views"
	"github.com/graphtide/graphtide/internal/views/analytics"
)

// TestQueryChangesFollow runs `query changes --follow` against a server
// while batches are applied, and checks that it prints a line per
// operation, in order, each once (and with --json a JSON object each);
// that --cursor resumes after a change; and the refusals.
func TestQueryChangesFollow(t *testing.T) {
	store, err := engine.Open(filepath.Join(t.TempDir(), "store"), &engine.Options{MemGraphBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	vm, err := views.NewManager(store, views.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer vm.Close()
	reg := analytics.NewRegistry(vm, analytics.RegistryConfig{})
	defer reg.Close()
	srv, err := api.New(api.Config{Store: store, Views: vm, Analytics: reg})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()

	var want []string // the lines, without their cursors
	apply := func(ops ...engine.Op) {
		var b engine.Batch
		for _, op := range ops {
			switch op.Kind {
			case engine.OpUpsert:
				b.InsertWeighted(op.Src, op.Dst, op.Weight)
			case engine.OpDeleteEdge:
				b.DeleteEdge(op.Src, op.Dst)
			default:
				b.DeleteVertex(op.Src)
			}
		}
		seq, err := store.Apply(&b)
		if err != nil {
			t.Fatal(err)
		}
		for _, op := range ops {
			switch op.Kind {
			case engine.OpUpsert:
				want = append(want, fmt.Sprintf("%d upsert %d -> %d type=default weight=%v", seq, op.Src, op.Dst, op.Weight))
			case engine.OpDeleteEdge:
				want = append(want, fmt.Sprintf("%d delete_edge %d -> %d type=default", seq, op.Src, op.Dst))
			default:
				want = append(want, fmt.Sprintf("%d delete_vertex %d", seq, op.Src))
			}
		}
	}
	apply(engine.Op{Src: 1, Dst: 2, Weight: 0.5}) // seq 1: before --from 1, not printed

	// follow runs the command until it printed n lines, and returns them.
	follow := func(n int, args ...string) []string {
		t.Helper()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		root := newRootCmd()
		var out, errOut syncBuffer
		root.SetOut(&out)
		root.SetErr(&errOut)
		root.SetArgs(append([]string{"query", "changes", "--follow", "--server", hs.URL}, args...))
		done := make(chan error, 1)
		go func() { done <- root.ExecuteContext(ctx) }()
		waitFor(t, fmt.Sprintf("%d lines of query changes --follow %v", n, args), func() bool {
			return strings.Count(out.String(), "\n") >= n
		})
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("query changes --follow %v: %v (%s)", args, err, errOut.String())
		}
		lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
		if len(lines) != n {
			t.Fatalf("query changes --follow %v printed %d lines, want %d: %q", args, len(lines), n, lines)
		}
		return lines
	}
	cursorRE := regexp.MustCompile(`^(.*) cursor=(\d+(:\d+)?@[0-9a-f]{16})$`)
	done := make(chan []string, 1)
	go func() { done <- follow(5, "--from", "1") }() // the batches may come before its first poll or after
	apply(engine.Op{Src: 3, Dst: 4, Weight: 2}, engine.Op{Src: 4, Dst: 5, Weight: 1})
	apply(engine.Op{Src: 3, Dst: 4, Kind: engine.OpDeleteEdge}, engine.Op{Src: 5, Kind: engine.OpDeleteVertex}, engine.Op{Src: 6, Dst: 7, Weight: 3})
	lines := <-done
	var cursors []string
	for i, l := range lines {
		m := cursorRE.FindStringSubmatch(l)
		if m == nil || m[1] != want[1+i] {
			t.Fatalf("line %d: %q, want %q and a cursor", i, l, want[1+i])
		}
		cursors = append(cursors, m[2])
	}
	// As JSON; and after a change's cursor.
	js := follow(5, "--from", "1", "--json")
	for i, l := range js {
		var c api.FollowChange
		if err := json.Unmarshal([]byte(l), &c); err != nil || c.Cursor != cursors[i] {
			t.Fatalf("--json line %d: %q (%v), want the change of cursor %s", i, l, err, cursors[i])
		}
	}
	rest := follow(2, "--cursor", cursors[2])
	for i, l := range rest {
		if m := cursorRE.FindStringSubmatch(l); m == nil || m[1] != want[4+i] {
			t.Fatalf("after cursor %s, line %d: %q, want %q", cursors[2], i, l, want[4+i])
		}
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--follow", "--dir", t.TempDir()}, "--follow follows what a running serve applies: give --server"},
		{[]string{"--follow", "--to", "3", "--server", hs.URL}, "--follow follows from --from (a seq) or --cursor"},
		{[]string{"--follow", "--from", "1", "--cursor", cursors[0], "--server", hs.URL}, "give --from or --cursor, not both"},
		{[]string{"--follow", "--from", "99", "--server", hs.URL}, "server: 400 Bad Request: from 99 is above this server's newest seq, 3"},
		{[]string{"--from", "1", "--to", "2", "--cursor", "1", "--server", hs.URL}, "--cursor resumes a --follow"},
	} {
		_, _, err := execute(t, append([]string{"query", "changes"}, tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("query changes %v: %v, want %q", tc.args, err, tc.want)
		}
	}
}

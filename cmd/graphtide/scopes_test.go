package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/graphtide/graphtide/internal/api"
	"github.com/graphtide/graphtide/internal/ingest/decode"
	"github.com/graphtide/graphtide/internal/server"
	"github.com/graphtide/graphtide/internal/testkit/writestest"
)

// TestClientTokenScopes: write and query --server send the token of
// --token-file (a bare token, or a line of serve's format, TOKEN SCOPES);
// a token without the scope a command needs gets the server's 403 naming
// it; a file of several tokens is refused.
func TestClientTokenScopes(t *testing.T) {
	const reader, writer = "reader-token-0123456789abcdef", "writer-token-0123456789abcdef"
	srv, _ := writestest.Serve(t, server.Config{Format: decode.FormatJSON,
		HTTP: server.HTTPConfig{Tokens: []api.Token{{Secret: reader, Scopes: api.ScopeRead}, {Secret: writer, Scopes: api.ScopeWrite}}}})
	url := "http://" + srv.HTTPAddr()
	dir := t.TempDir()
	readerFile, writerFile, both := filepath.Join(dir, "reader"), filepath.Join(dir, "writer"), filepath.Join(dir, "both")
	writeFile(t, readerFile, reader+" read\n")
	writeFile(t, writerFile, writer+"\n")
	writeFile(t, both, reader+" read\n"+writer+" write\n")

	batch := `[{"src":"alice","dst":"bob","weight":5}]`
	if out, _, err := executeIn(t, strings.NewReader(batch), "write", "--server", url, "--token-file", writerFile); err != nil || !strings.HasPrefix(out, "applied at seq ") {
		t.Fatalf("write with the write token: %q, %v", out, err)
	}
	if out, _, err := execute(t, "query", "edge", "alice", "bob", "--server", url, "--token-file", readerFile, "--json"); err != nil || !strings.Contains(out, `"weight":5`) {
		t.Fatalf("query with the read token: %q, %v", out, err)
	}
	_, _, err := executeIn(t, strings.NewReader(batch), "write", "--server", url, "--token-file", readerFile)
	if err == nil || !strings.Contains(err.Error(), "403 Forbidden: this token may not POST /v1/batches: that needs the write scope, and the token has read") {
		t.Errorf("write with the read token: %v", err)
	}
	_, _, err = execute(t, "query", "degree", "alice", "--server", url, "--token-file", writerFile)
	if err == nil || !strings.Contains(err.Error(), "403 Forbidden: this token may not GET /v1/vertices/alice/degree: that needs the read scope, and the token has write") {
		t.Errorf("query with the write token: %v", err)
	}
	_, _, err = execute(t, "query", "degree", "alice", "--server", url, "--token-file", both)
	if err == nil || err.Error() != "--token-file "+both+" holds 2 tokens: give the client one" {
		t.Errorf("a file of two tokens: %v", err)
	}
}

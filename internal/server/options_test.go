package server

import (
	"path/filepath"
	"testing"
	"time"
)

// TestServeHTTPToken: the token from the environment, not both sources, a
// long enough token, and beyond loopback only with one.
func TestServeHTTPToken(t *testing.T) {
	o := Options{HTTPAddr: "0.0.0.0:9464", HTTPTimeout: time.Second, HTTPPathBudget: 1}
	t.Setenv("GRAPHTIDE_HTTP_TOKEN", " env-token-0123456789 \n")
	if err := o.validateHTTP(); err != nil || o.HTTPToken != "env-token-0123456789" {
		t.Fatalf("token from the environment: %q, %v", o.HTTPToken, err)
	}
	o.HTTPTokenFile = filepath.Join(t.TempDir(), "token")
	if err := o.validateHTTP(); err == nil || err.Error() != "the HTTP token comes from --http-token-file or GRAPHTIDE_HTTP_TOKEN: give one, not both" {
		t.Errorf("two token sources: %v", err)
	}
	o.HTTPTokenFile = ""
	t.Setenv("GRAPHTIDE_HTTP_TOKEN", "short")
	if err := o.validateHTTP(); err == nil || err.Error() != "the HTTP token must be at least 16 characters (e.g. openssl rand -hex 32), got 5" {
		t.Errorf("short token: %v", err)
	}
}

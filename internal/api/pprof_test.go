package api

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestProfiles: /debug/pprof/ serves the Go runtime's profiles, behind the
// bearer token when there is one, and without the request deadline (a CPU
// profile runs for its ?seconds).
func TestProfiles(t *testing.T) {
	f := newFixture(t, false, 3, 50, 200, nil)
	get := func(url, token string) (int, string) {
		t.Helper()
		req, err := http.NewRequest("GET", url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	_, guarded := serve(t, f, func(c *Config) {
		c.Token = testToken
		c.Limits.RequestTimeout = 200 * time.Millisecond
	})
	for _, p := range []string{"/debug/pprof/", "/debug/pprof/heap", "/debug/pprof/goroutine?debug=1"} {
		if code, _ := get(guarded.URL+p, ""); code != http.StatusUnauthorized {
			t.Errorf("%s without the token: %d, want 401", p, code)
		}
		if code, body := get(guarded.URL+p, testToken); code != http.StatusOK || body == "" {
			t.Errorf("%s with the token: %d", p, code)
		}
	}
	if code, body := get(guarded.URL+"/debug/pprof/", testToken); !strings.Contains(body, "heap") || code != 200 {
		t.Errorf("the profile index does not list heap: %d %q", code, body)
	}
	// Longer than the request deadline (200ms): not cut off by it.
	if code, body := get(guarded.URL+"/debug/pprof/profile?seconds=1", testToken); code != http.StatusOK || len(body) == 0 {
		t.Errorf("a CPU profile of 1s: %d, %d bytes", code, len(body))
	}
	_, open := serve(t, f, nil) // no token (loopback)
	if code, _ := get(open.URL+"/debug/pprof/heap", ""); code != http.StatusOK {
		t.Errorf("heap profile without a token configured: %d", code)
	}
}

package api

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/graphtide/graphtide/internal/export"
)

// checkExports runs exports through the API over a fixture's store: a job
// that runs to its manifest, whose part holds the fixture's edges; one
// that waits for its cut while a second is refused (409), then ends; the
// list, newest first; bad requests (400); and a server without exports
// (404 on every route).
func checkExports(t *testing.T, cov *coverage) {
	f := newFixture(t, false, 21, 100, 600, nil)
	root := t.TempDir()
	gate := make(chan struct{})
	snap := func(ctx context.Context, cut []export.Offset) (export.Source, []export.Offset, func(), error) {
		pos := []export.Offset{{Topic: "edges", Partition: 0, Offset: 600}}
		if cut != nil {
			var reached <-chan struct{} // 700: a cut never reached
			if cut[0].Offset == 650 {
				reached = gate
			}
			select { // waits for the cut, as an instance behind it does
			case <-reached:
			case <-ctx.Done():
				return export.Source{}, nil, nil, ctx.Err()
			}
			pos = cut
		}
		sn, err := f.store.Snapshot()
		if err != nil {
			return export.Source{}, nil, nil, err
		}
		return export.Source{Snap: sn, Keys: f.dict}, pos, sn.Release, nil
	}
	jobs := export.NewJobs(root, "g", snap)
	defer jobs.Close()
	_, hs := serve(t, f, func(c *Config) { c.Exports = jobs; c.Token = testToken })
	c := newClient(t, hs, testToken, cov)

	job := func(r reply) export.Job {
		t.Helper()
		var j export.Job
		if err := json.Unmarshal(r.body, &j); err != nil {
			t.Fatalf("%v: %v", r, err)
		}
		return j
	}
	waitDone := func(id string) export.Job {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			j := job(c.do("GET", "/v1/exports/"+id, nil, true))
			if j.State == "done" || j.State == "failed" {
				return j
			}
			if time.Now().After(deadline) {
				t.Fatalf("export %s still %s", id, j.State)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}

	r := c.do("POST", "/v1/exports", []byte(`{"dir":"nightly","part":"a","row_group_rows":50}`), true)
	if r.status != http.StatusAccepted || r.header.Get("Location") != "/v1/exports/1" {
		t.Fatalf("POST /v1/exports: %v, Location %q", r, r.header.Get("Location"))
	}
	done := waitDone("1")
	if done.State != "done" || done.Manifest == nil || done.Manifest.Edges != int64(len(f.live)) || done.Edges != done.Manifest.Edges {
		t.Fatalf("export 1: %+v, want done with the fixture's %d edges", done, len(f.live))
	}
	ms, err := export.ReadManifests(filepath.Join(root, "nightly"))
	if err != nil {
		t.Fatal(err)
	}
	if err := export.CheckSet(ms); err != nil || ms[0].Part != "a" || ms[0].Graph != "g" || ms[0].Position[0].Offset != 600 {
		t.Fatalf("the part written: %+v, %v", ms[0], err)
	}

	// At a cut: waiting, a second export refused meanwhile, then done.
	cut := `[{"topic":"edges","partition":0,"offset":650}]`
	r = c.do("POST", "/v1/exports", []byte(`{"dir":"nightly","part":"b","at_offsets":`+cut+`,"wait":"1m"}`), true)
	if j := job(r); r.status != http.StatusAccepted || j.State != "waiting" {
		t.Fatalf("an export at a cut: %v", r)
	}
	c.expect("POST", "/v1/exports", []byte(`{"dir":"other"}`), http.StatusConflict, "an export is running")
	close(gate)
	if j := waitDone("2"); j.State != "done" || j.Manifest.Cut[0].Offset != 650 {
		t.Fatalf("export 2: %+v", j)
	}
	var list ExportList
	if r := c.get("/v1/exports", &list); r.status != http.StatusOK || len(list.Exports) != 2 || list.Exports[0].ID != "2" {
		t.Fatalf("GET /v1/exports: %v", r)
	}
	// A cut never reached: canceled while it waits, then not again.
	r = c.do("POST", "/v1/exports", []byte(`{"dir":"nightly","part":"c","at_offsets":[{"topic":"edges","partition":0,"offset":700}]}`), true)
	if j := job(c.do("DELETE", "/v1/exports/"+job(r).ID, nil, true)); j.State != "canceled" || j.Finished == nil {
		t.Fatalf("DELETE of a waiting export: %+v", j)
	}
	c.expect("DELETE", "/v1/exports/3", nil, http.StatusConflict, "export 3 has ended (canceled)")
	c.expect("DELETE", "/v1/exports/9", nil, http.StatusNotFound, `no export "9"`)
	if left, _ := filepath.Glob(filepath.Join(root, "nightly", "c.*")); len(left) > 0 {
		t.Fatalf("a canceled export left %v", left)
	}
	c.expect("GET", "/v1/exports/9", nil, http.StatusNotFound, `no export "9"`)
	for body, want := range map[string]string{
		`{"dir":"../x"}`:                  "dir: a directory under serve's --export-dir",
		`{"dir":"x","part":"p/q"}`:        "only letters, digits",
		`{"dir":"x","wait":"forever"}`:    "wait must be a duration",
		`{"dir":"x","at_offsets":[]}`:     "at_offsets: export: cut: no offsets",
		`{"dir":"x","unknown":1}`:         "unknown field",
		`{"dir":"x"} {}`:                  "nothing after it",
		`{"dir":"x","row_group_rows":-1}`: "row_group_rows must be between",
	} {
		c.expect("POST", "/v1/exports", []byte(body), http.StatusBadRequest, want)
	}
	// A part already there is the job's failure, not the request's.
	r = c.do("POST", "/v1/exports", []byte(`{"dir":"nightly","part":"a"}`), true)
	if j := waitDone(job(r).ID); j.State != "failed" || !strings.Contains(j.Error, `part "a" is already in`) {
		t.Fatalf("an export of a part already there: %+v", j)
	}

	// Exports off.
	_, hs2 := serve(t, f, func(c *Config) { c.Token = testToken })
	c2 := newClient(t, hs2, testToken, cov)
	c2.expect("POST", "/v1/exports", []byte(`{"dir":"x"}`), http.StatusNotFound, "exports are off")
	c2.expect("GET", "/v1/exports", nil, http.StatusNotFound, "exports are off")
	c2.expect("GET", "/v1/exports/1", nil, http.StatusNotFound, "exports are off")
	c2.expect("DELETE", "/v1/exports/1", nil, http.StatusNotFound, "exports are off")
}

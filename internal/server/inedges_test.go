package server_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/graphtide/graphtide/internal/budget"
	"github.com/graphtide/graphtide/internal/datadir"
	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/kafkaconn"
	"github.com/graphtide/graphtide/internal/ownership"
	"github.com/graphtide/graphtide/internal/server"
	"github.com/graphtide/graphtide/internal/testkit/writestest"
)

// storeInEdges is whether the store in dir keeps in-edges, read from its
// manifest by a read-only open.
func storeInEdges(t *testing.T, dir string) bool {
	t.Helper()
	d, err := datadir.OpenReadOnly(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	return d.Store.InEdges()
}

// TestNewStoresKeepInEdges: a store serve creates keeps in-edges unless
// --in-edges=false (Config.InEdges) says otherwise, or in partitioned
// mode, where a new one keeps none; an existing store keeps what it was
// created with, and one without in-edges answers dir=in with why.
func TestNewStoresKeepInEdges(t *testing.T) {
	no := false
	for _, c := range []struct {
		name string
		in   *bool
		want bool
	}{{"default", nil, true}, {"--in-edges=false", &no, false}} {
		dir := t.TempDir()
		_, stop := writestest.Serve(t, server.Config{Dir: dir, InEdges: c.in})
		stop()
		if got := storeInEdges(t, dir); got != c.want {
			t.Errorf("%s: the new store keeps in-edges %v, want %v", c.name, got, c.want)
		}
	}

	// A store created without in-edges (as by an older serve) stays so.
	dir := t.TempDir()
	st, err := engine.Open(datadir.StorePath(dir), &engine.Options{InEdges: false})
	if err != nil {
		t.Fatal(err)
	}
	var b engine.Batch
	b.Insert(1, 2)
	if _, err := st.Apply(&b); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	srv, stop := writestest.Serve(t, server.Config{Dir: dir})
	if srv.Store().InEdges() {
		t.Fatal("serve gave an existing store without in-edges in-edges")
	}
	resp, err := http.Get("http://" + srv.HTTPAddr() + "/v1/vertices/2/degree?dir=in")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "it was created without them") {
		t.Errorf("dir=in on a store without in-edges: %d %s", resp.StatusCode, body)
	}
	stop()
	if storeInEdges(t, dir) {
		t.Fatal("the existing store without in-edges has them after serve")
	}
	// Given --in-edges against it: refused, naming the way out.
	yes := true
	cfg := withDefaults(server.Config{Dir: dir, InEdges: &yes, Topics: []string{"edges"}})
	if cfg.Plan, err = budget.Divide(512<<20, budget.Explicit{}); err != nil {
		t.Fatal(err)
	}
	_, err = server.Open(context.Background(), cfg)
	var me *datadir.InEdgesMismatchError
	if !errors.As(err, &me) || !me.Given || !strings.Contains(err.Error(), "created without in-edges") || !strings.Contains(err.Error(), "leave out --in-edges") {
		t.Fatalf("--in-edges on a store without them: %v", err)
	}
}

// TestPartitionedNewStoreKeepsNoInEdges: in partitioned mode a new store
// keeps no in-edges by default (an owner would hold only those from its
// own vertices, and dir=in is refused there), and starts.
func TestPartitionedNewStoreKeepsNoInEdges(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "edges"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	owners, err := ownership.Parse("0=http://127.0.0.1:1,1=http://127.0.0.1:2", "0")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfg := withDefaults(server.Config{Dir: dir, Kafka: kafkaconn.Options{Brokers: c.ListenAddrs()}, Topics: []string{"edges"},
		Group: "g", DeadLetterTopic: "dlq", Owners: owners})
	if cfg.Plan, err = budget.Divide(512<<20, budget.Explicit{}); err != nil {
		t.Fatal(err)
	}
	srv, err := server.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if srv.Store().InEdges() {
		t.Error("a new store in partitioned mode keeps in-edges")
	}
	srv.Close()
	if storeInEdges(t, dir) {
		t.Error("the partitioned store has in-edges after serve")
	}
}

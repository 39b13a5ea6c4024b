package api

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/graphtide/graphtide/internal/engine"
)

// twoOwners routes a vertex by its number (or its key's length) modulo
// 2 to owners[0] or owners[1]; self is this instance's index.
type twoOwners struct {
	owners [2]*url.URL
	self   int
}

func (o *twoOwners) Owner(v string) (*url.URL, int32) {
	v = strings.TrimPrefix(v, "key:")
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		n = uint64(len(v))
	}
	p := int(n % 2)
	if p == o.self {
		return nil, int32(p)
	}
	return o.owners[p], int32(p)
}

func TestPartitionedRouting(t *testing.T) { checkPartitioned(t, &coverage{}) }

// checkPartitioned: two instances, each over its own store, each owning
// half the vertices. Every request about one vertex gets the owner's
// answer from either instance (checked against the owner's oracle), with
// the bearer token passed on; what needs every owner is refused; instances
// whose maps disagree refuse rather than loop; an owner that does not
// answer, or not in time, is a 502 or 504 that names it. Every exchange is
// checked against the OpenAPI document (cov).
func checkPartitioned(t *testing.T, cov *coverage) {
	const nv = 200
	fs := [2]*fixture{newFixture(t, true, 11, nv, 3000, nil), newFixture(t, true, 12, nv, 3000, nil)}
	var routers [2]*twoOwners
	var cs [2]*client
	for i, f := range fs {
		routers[i] = &twoOwners{self: i}
		_, hs := serve(t, f, func(c *Config) {
			c.Route = routers[i]
			c.Token = testToken
			c.Limits.RequestTimeout = 2 * time.Second
		})
		cs[i] = newClient(t, hs, testToken, cov)
	}
	for i := range routers {
		for j, c := range cs {
			routers[i].owners[j], _ = url.Parse(c.base)
		}
	}
	outOf := [2]map[uint64][]uint64{fs[0].live.Adj(engine.Out), fs[1].live.Adj(engine.Out)}
	checked := 0
	for _, v := range fs[0].sample(nv) {
		param := url.PathEscape(fs[0].vertexParam(v))
		_, p := routers[0].Owner(fs[0].vertexParam(v))
		var bodies [2]string
		for i, c := range cs {
			path := "/v1/vertices/" + param + "/neighbors"
			r := c.do("GET", path, nil, true)
			for _, h := range []string{"Cache-Control", "X-Content-Type-Options"} {
				if len(r.header.Values(h)) != 1 {
					t.Fatalf("vertex %s via instance %d: %s %q, want one", param, i, h, r.header.Values(h))
				}
			}
			if hs := r.header.Values(PartitionHeader); len(hs) != 1 || hs[0] != strconv.Itoa(int(p)) {
				t.Fatalf("vertex %s via instance %d: %s %q, want %d once", param, i, PartitionHeader, r.header.Values(PartitionHeader), p)
			}
			bodies[i] = string(r.body)
			if r.status == http.StatusNotFound {
				continue
			}
			if r.status != http.StatusOK {
				t.Fatalf("GET %s via instance %d: %v", path, i, r)
			}
			var nr NeighborsResponse
			if err := json.Unmarshal(r.body, &nr); err != nil {
				t.Fatal(err)
			}
			var got []uint64
			for _, n := range nr.Neighbors {
				if n.Key != "" {
					got = append(got, fs[p].keys[n.Key])
				} else {
					got = append(got, n.ID)
				}
			}
			want := slices.Clone(outOf[p][v])
			slices.Sort(want)
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Fatalf("vertex %s (owner %d) via instance %d: neighbors %v, the owner's oracle %v", param, p, i, got, want)
			}
			checked++
		}
		if bodies[0] != bodies[1] {
			t.Fatalf("vertex %s: the instances answer differently:\n%s\n%s", param, bodies[0], bodies[1])
		}
		// The other vertex endpoints are routed the same way.
		for _, path := range []string{"/v1/vertices/" + param + "/degree", "/v1/vertices/" + param, "/v1/edges/" + param + "/1", "/v1/edges/" + param + "/1/events"} {
			r0, r1 := cs[0].do("GET", path, nil, true), cs[1].do("GET", path, nil, true)
			if r0.status != r1.status || string(r0.body) != string(r1.body) {
				t.Fatalf("%s: instance 0 answers %v, instance 1 %v", path, r0, r1)
			}
		}
	}
	if checked < 60 {
		t.Fatalf("only %d answers checked", checked)
	}

	c := cs[0]
	for _, path := range []string{"/v1/vertices/1/neighbors?dir=in", "/v1/vertices/2/degree?dir=in", "/v1/paths?from=1&to=2"} {
		r := c.expect("GET", path, nil, http.StatusConflict, "this instance serves partitioned mode")
		if !strings.Contains(r.errorMsg(), "replica mode") {
			t.Errorf("GET %s: %v; want it to point to replica mode", path, r)
		}
	}
	// Vertex 1 is instance 1's: a request routed to instance 0 for it
	// means the maps differ.
	c.header = http.Header{RoutedHeader: {"1"}}
	for _, path := range []string{"/v1/vertices/1", "/v1/vertices/1/degree", "/v1/vertices/1/neighbors", "/v1/edges/1/2", "/v1/edges/1/2/events", "/v1/analytics/x/vertices/1"} {
		c.expect("GET", path, nil, http.StatusMisdirectedRequest, "the instances' --owners differ")
	}
	c.header = nil
	// An owner that does not answer, and one that answers too late.
	gone, _ := url.Parse("http://127.0.0.1:1")
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	}))
	defer slow.Close()
	late, _ := url.Parse(slow.URL)
	for _, owner := range []*url.URL{gone, late} {
		routers[0].owners[1] = owner
		status := http.StatusBadGateway
		if owner == late {
			status = http.StatusGatewayTimeout
		}
		for _, path := range []string{"/v1/vertices/1", "/v1/vertices/1/degree", "/v1/vertices/1/neighbors", "/v1/edges/1/2", "/v1/edges/1/2/events", "/v1/analytics/x/vertices/1"} {
			c.expect("GET", path, nil, status, "the owner of this vertex's partition, "+owner.String()+", did not answer")
		}
	}
}

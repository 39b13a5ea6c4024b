package kafkatest

import (
	"encoding/json"
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/graphtide/graphtide/internal/api"
	"github.com/graphtide/graphtide/internal/ingest/decode"
)

// TestReplicaPagesAlternate runs two serve replicas (a data directory and
// a consumer group each, on the same topic) of keyed JSON records over
// four partitions, string keys and numbers from 2^33 up (which each
// store maps to ids of its own). The second starts once the first has
// applied the first third of the stream and the rest is produced, so the
// two meet keys in different orders and give them different ids (checked).
// Then every vertex's neighbors are read page by page, a few a page,
// asking the two replicas in turn, each page from the other's
// next_cursor (with history kept, so each cursor carries a pin the other
// replica does not honour): every vertex's edges come exactly once, and
// all of them are the oracle of the records produced.
func TestReplicaPagesAlternate(t *testing.T) {
	t.Parallel()
	addrs := needBroker(t)
	adm := newAdmin(t)
	topic := uniq("replica-pages")
	createTopic(t, topic, 4)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	keyed := newStream(topic, 4, decode.FormatJSON, "acct", 0, 160, 3, seed)
	big := newStream(topic, 4, decode.FormatJSON, "", 1<<33, 120, 2, seed+1)
	var recs []*record
	for i, k := range keyed.records(1800) {
		recs = append(recs, k)
		if i%3 != 2 {
			recs = append(recs, big.next())
		}
	}
	early, late := recs[:len(recs)/3], recs[len(recs)/3:]
	_, log := testLogger(t, "the replicas")
	dead := uniq("replica-pages-dead")
	cfg := func(i int) childConfig {
		return childConfig{Brokers: addrs, Topics: []string{topic}, Formats: map[string]decode.Format{topic: decode.FormatJSON},
			Group: uniq(fmt.Sprintf("pages-%d", i)), Instance: fmt.Sprintf("pages-%d", i), DeadLetter: dead, Dir: t.TempDir(),
			MemBytes: 256 << 10, FlushEvery: 200 * time.Millisecond, Serve: true, HistorySeqs: 1 << 20}
	}
	var chs [2]*child
	t.Cleanup(func() {
		for _, ch := range chs {
			if ch != nil && ch.alive() {
				ch.kill(t)
			}
		}
	})
	chs[0] = startChild(t, cfg(0), log)
	if err := <-startProducing(t, early, 100, 0).done; err != nil {
		t.Fatal(err)
	}
	end := endOffsets(t, adm, topic)
	if !waitFor(90*time.Second, func() bool { return !chs[0].alive() || covers(chs[0].storePos(), end) }) {
		t.Fatalf("replica 0 did not apply the first third: store at %s, want %s\n%s", fmtPos(chs[0].storePos()), fmtPos(end), log.tail(30))
	}
	if err := <-startProducing(t, late, 100, 0).done; err != nil {
		t.Fatal(err)
	}
	chs[1] = startChild(t, cfg(1), log)
	end = endOffsets(t, adm, topic)
	for i, ch := range chs {
		if !waitFor(90*time.Second, func() bool { return !ch.alive() || covers(ch.storePos(), end) }) {
			t.Fatalf("replica %d did not catch up: store at %s, want %s\n%s", i, fmtPos(ch.storePos()), fmtPos(end), log.tail(30))
		}
	}
	bases := [2]string{"http://" + chs[0].httpAddr(), "http://" + chs[1].httpAddr()}

	// The precondition: the replicas gave keys different ids.
	differ := 0
	for i := range keyed.vertices {
		var ids [2]uint64
		for j, base := range bases {
			var v api.VertexResponse
			if getJSON(base+"/v1/vertices/"+url.PathEscape(keyed.vertex(i).key), &v) {
				ids[j] = v.Vertex.ID
			}
		}
		if ids[0] != 0 && ids[1] != 0 && ids[0] != ids[1] {
			differ++
		}
	}
	t.Logf("%d of %d keys have different ids on the two replicas", differ, keyed.vertices)
	if differ == 0 {
		t.Fatal("the replicas gave every key the same id: the test would test nothing")
	}

	want := oracleOf(recs, nil)
	got := oracle{}
	pages, multi, pinned := 0, 0, 0
	for _, st := range []*stream{keyed, big} {
		for i := range st.vertices {
			src := st.vertex(i)
			name := fmt.Sprint(src.id)
			if src.key != "" {
				name = src.key
			}
			cursor := ""
			for p := 0; ; p++ {
				u := fmt.Sprintf("%s/v1/vertices/%s/neighbors?limit=5", bases[p%2], url.PathEscape(name))
				if cursor != "" {
					u += "&cursor=" + url.QueryEscape(cursor)
				}
				code, body := httpGet(u)
				if code == 404 && p == 0 {
					break // never seen
				}
				var page api.NeighborsResponse
				if code != 200 || json.Unmarshal(body, &page) != nil {
					t.Fatalf("GET %s: %d %s", u, code, body)
				}
				pages++
				for _, n := range page.Neighbors {
					dst := vid{id: n.ID}
					if n.Key != "" {
						dst = vid{key: n.Key}
					}
					k := edgeKey{src, dst}
					if _, ok := got[k]; ok {
						t.Errorf("%v -> %v listed twice (page %d, replica %d)", src, dst, p, p%2)
					}
					got[k] = n.Weight
				}
				if page.NextCursor == "" {
					if p > 0 {
						multi++
					}
					break
				}
				if page.NextAsOfSeq != nil {
					pinned++
				}
				cursor = page.NextCursor
			}
		}
	}
	t.Logf("%d pages (%d vertices over several), %d with a pinned cursor, %d edges; oracle %d", pages, multi, pinned, len(got), len(want))
	if d := diff(want, got); d != "" {
		t.Errorf("the pages taken in turn from the two replicas differ from the oracle: %s", d)
	}
	if pinned == 0 || multi < 50 {
		t.Errorf("%d vertices over several pages, %d pinned cursors: the walk should take several pages for many vertices, and pin them (history is kept)", multi, pinned)
	}
	for i, ch := range chs {
		if err := ch.term(t); err != nil {
			t.Errorf("replica %d: %v\n%s", i, err, log.tail(30))
		}
	}
}

package api

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/keydict"
	"github.com/graphtide/graphtide/internal/typedict"
	"github.com/graphtide/graphtide/internal/views"
	"github.com/graphtide/graphtide/internal/views/analytics"
)

// followStore is a store the follow tests write to, with the operations
// applied kept alongside as FollowChanges (cursors left out): the oracle
// a follower's changes are compared with.
type followStore struct {
	t       *testing.T
	dir     string
	store   *engine.Store
	vm      *views.Manager
	reg     *analytics.Registry
	keys    *keydict.Dict
	types   *typedict.Dict
	mu      sync.Mutex
	applied []FollowChange // Protected by mu.
	n       int            // batches applied; Protected by mu.
}

func newFollowStore(t *testing.T, logCap int) *followStore {
	t.Helper()
	fs := &followStore{t: t, dir: t.TempDir()}
	var err error
	if fs.keys, err = keydict.Open(filepath.Join(fs.dir, "keys.dict")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fs.keys.Close() })
	if fs.types, err = typedict.Open(filepath.Join(fs.dir, "types.dict")); err != nil {
		t.Fatal(err)
	}
	fs.open(logCap)
	return fs
}

// open opens the store and a manager over it (again: as a restart).
func (fs *followStore) open(logCap int) {
	t := fs.t
	var err error
	if fs.store, err = engine.Open(filepath.Join(fs.dir, "store"), &engine.Options{MemGraphBytes: 4 << 20}); err != nil {
		t.Fatal(err)
	}
	st := fs.store
	t.Cleanup(func() { st.Close() })
	if fs.vm, err = views.NewManager(fs.store, views.Config{LogCapacity: logCap}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fs.vm.Close)
	fs.reg = analytics.NewRegistry(fs.vm, analytics.RegistryConfig{Resolve: ResolveVertex(fs.keys)})
	t.Cleanup(fs.reg.Close)
}

// server serves the store; mod changes its config.
func (fs *followStore) server(mod func(*Config)) (*Server, *httptest.Server) {
	cfg := Config{Store: fs.store, Views: fs.vm, Analytics: fs.reg, Dict: fs.keys, Types: fs.types}
	if mod != nil {
		mod(&cfg)
	}
	s, err := New(cfg)
	if err != nil {
		fs.t.Fatal(err)
	}
	hs := httptest.NewServer(s.Handler())
	fs.t.Cleanup(hs.Close)
	return s, hs
}

// apply applies a batch of n operations of every kind: upserts and
// deletes between numbers and keys, of the default type and of "pay",
// some with event times, and now and then a vertex delete.
func (fs *followStore) apply(n int) uint64 {
	t := fs.t
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.n++
	pay, err := fs.types.ID("pay")
	if err != nil {
		t.Fatal(err)
	}
	var b engine.Batch
	var cs []FollowChange
	for i := range n {
		k := fs.n*1000 + i
		src, dst := uint64(k%17), uint64(k%23+1)
		srcKey := ""
		if k%3 == 0 {
			srcKey = fmt.Sprintf("acct-%d", k%5)
			if src, err = fs.keys.ID(srcKey); err != nil {
				t.Fatal(err)
			}
		}
		c := FollowChange{Src: extID(fs.keys, src), SrcKey: srcKey}
		var typ uint16
		if k%2 == 0 {
			typ = pay
			c.Type = "pay"
		}
		switch k % 7 {
		case 3:
			b.DeleteEdge(src, dst)
			c.Op = "delete_edge"
		case 5:
			if k%4 == 1 {
				b.DeleteVertex(src)
				c.Op, c.Type = "delete_vertex", ""
				cs = append(cs, c)
				continue
			}
			fallthrough
		default:
			w := float64(k % 11)
			b.InsertWeighted(src, dst, w)
			c.Op, c.Weight = "upsert", &w
		}
		b.SetType(typ)
		if k%5 == 0 {
			at := time.Date(2026, 12, 6, 10, 0, k%60, 0, time.UTC)
			b.SetEventTime(at.UnixMicro())
			c.Time = at.Format(time.RFC3339Nano)
		}
		d := dst
		c.Dst = &d
		cs = append(cs, c)
	}
	if err := fs.keys.Sync(); err != nil {
		t.Fatal(err)
	}
	seq, err := fs.store.Apply(&b)
	if err != nil {
		t.Fatal(err)
	}
	for i := range cs {
		cs[i].Seq = seq
	}
	fs.applied = append(fs.applied, cs...)
	return seq
}

// after is what the oracle holds after seq, of the types ts (nil: all).
func (fs *followStore) after(seq uint64, ts map[string]bool) []FollowChange {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	var out []FollowChange
	for _, c := range fs.applied {
		if c.Seq > seq && (ts == nil || c.Op == "delete_vertex" || ts[c.Type]) {
			out = append(out, c)
		}
	}
	return out
}

// sameChanges compares what a follower got with the oracle, cursors left
// out, and checks that the cursors name each change's seq.
func sameChanges(t *testing.T, label string, got, want []FollowChange) {
	t.Helper()
	strip := make([]FollowChange, len(got))
	for i, c := range got {
		if !strings.HasPrefix(c.Cursor, fmt.Sprint(c.Seq)) {
			t.Errorf("%s: change %d of seq %d has cursor %q", label, i, c.Seq, c.Cursor)
		}
		c.Cursor = ""
		strip[i] = c
	}
	if len(strip) != len(want) {
		t.Fatalf("%s: %d changes, the oracle %d\ngot  %s\nwant %s", label, len(strip), len(want), js(strip), js(want))
	}
	for i := range want {
		if js(strip[i]) != js(want[i]) {
			t.Fatalf("%s: change %d is %s, the oracle's %s", label, i, js(strip[i]), js(want[i]))
		}
	}
}

func js(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// poll sends one long poll and decodes its answer.
func poll(t *testing.T, c *client, query string) (FollowResponse, reply) {
	t.Helper()
	var r FollowResponse
	rep := c.get("/v1/changes?follow=1&"+query, &r)
	return r, rep
}

// TestFollowLongPoll follows the changes by long polling, a page at a
// time from seq 0 and from a seq and from every change's cursor, and
// compares them with the operations applied; a poll with nothing to
// give waits out its wait and answers none, one that is waiting answers
// as soon as a batch is applied; a type filter; and the refusals.
func TestFollowLongPoll(t *testing.T) {
	fs := newFollowStore(t, 0)
	cov := &coverage{}
	_, hs := fs.server(nil)
	c := newClient(t, hs, "", cov)
	var seqs []uint64
	for _, n := range []int{5, 1, 9, 3} {
		seqs = append(seqs, fs.apply(n))
	}
	// Page by page from seq 0, 4 at a time.
	var got []FollowChange
	r, _ := poll(t, c, "from=0&limit=4")
	for got = append(got, r.Changes...); r.More; got = append(got, r.Changes...) {
		if len(r.Changes) != 4 {
			t.Fatalf("a page of %d changes with more to come", len(r.Changes))
		}
		r, _ = poll(t, c, "limit=4&cursor="+url.QueryEscape(r.NextCursor))
	}
	sameChanges(t, "from 0", got, fs.after(0, nil))
	if r.Seq != seqs[3] || r.NextCursor != got[len(got)-1].Cursor {
		t.Errorf("the last page: seq %d, next cursor %q; want %d and the last change's cursor %q", r.Seq, r.NextCursor, seqs[3], got[len(got)-1].Cursor)
	}
	// From every change's cursor: the rest, exactly.
	for i, g := range got {
		var rest []FollowChange
		cur := g.Cursor
		for {
			r, _ := poll(t, c, "wait=0s&cursor="+url.QueryEscape(cur))
			rest = append(rest, r.Changes...)
			cur = r.NextCursor
			if !r.More {
				break
			}
		}
		if i == len(got)-1 && len(rest) != 0 {
			t.Fatalf("after the last change: %s", js(rest))
		}
		sameChanges(t, "after cursor "+g.Cursor, rest, stripped(got[i+1:]))
	}
	// From a seq.
	r, _ = poll(t, c, fmt.Sprintf("from=%d", seqs[1]))
	sameChanges(t, "from a seq", r.Changes, fs.after(seqs[1], nil))
	// Without from: from the newest seq.
	if r, _ = poll(t, c, "wait=0s"); len(r.Changes) != 0 || r.Seq != seqs[3] || r.More {
		t.Errorf("a poll without from: %s, want none at seq %d", js(r), seqs[3])
	}
	// Of one type (vertex deletes too).
	r, _ = poll(t, c, "from=0&types=pay")
	sameChanges(t, "of type pay", r.Changes, fs.after(0, map[string]bool{"pay": true}))

	// Nothing new: the poll waits out its wait and answers none.
	end := r.NextCursor
	t0 := time.Now()
	r, _ = poll(t, c, "wait=300ms&cursor="+url.QueryEscape(end))
	if el := time.Since(t0); len(r.Changes) != 0 || r.More || r.NextCursor != end || el < 300*time.Millisecond || el > 5*time.Second {
		t.Errorf("a poll with nothing new: %s after %v", js(r), el)
	}
	// A batch applied while a poll waits: it answers at once with it.
	done := make(chan FollowResponse, 1)
	go func() {
		var r FollowResponse
		resp, err := http.Get(hs.URL + "/v1/changes?follow=1&wait=60s&cursor=" + url.QueryEscape(end))
		if err == nil {
			err = json.NewDecoder(resp.Body).Decode(&r)
			resp.Body.Close()
		}
		if err != nil {
			t.Error(err)
		}
		done <- r
	}()
	time.Sleep(200 * time.Millisecond)
	select {
	case r := <-done:
		t.Fatalf("the poll answered before any batch: %s", js(r))
	default:
	}
	t0 = time.Now()
	seq := fs.apply(4)
	select {
	case r := <-done:
		if el := time.Since(t0); el > 10*time.Second {
			t.Errorf("the poll answered %v after the batch", el)
		}
		sameChanges(t, "a waiting poll", r.Changes, fs.after(seq-1, nil))
	case <-time.After(30 * time.Second):
		t.Fatal("a waiting poll did not answer a batch applied meanwhile")
	}

	// The refusals.
	_, newest := fs.vm.LogSeqs()
	c.expect("GET", fmt.Sprintf("/v1/changes?follow=1&from=%d", newest+1), nil, 400, fmt.Sprintf("from %d is above this server's newest seq, %d", newest+1, newest))
	c.expect("GET", "/v1/changes?follow=maybe", nil, 400, `follow must be 1 (long polling) or sse (Server-Sent Events), got "maybe"`)
	c.expect("GET", "/v1/changes?follow=1&from=1&to=2", nil, 400, "to lists the changes between two points")
	c.expect("GET", "/v1/changes?follow=1&wait=2h", nil, 400, "wait must be a duration from 0s to 1m0s")
	c.expect("GET", "/v1/changes?from=1&to=2&wait=1s", nil, 400, "wait is for following the changes (follow=1)")
	c.expect("GET", "/v1/changes?follow=1&cursor=x1", nil, 400, `cursor must be a follow cursor`)
	c.expect("GET", "/v1/changes?follow=1&cursor=1&from=1", nil, 400, "give cursor (a previous response's next_cursor) or from, not both")
	c.expect("GET", fmt.Sprintf("/v1/changes?follow=1&cursor=%d:99", seqs[0]), nil, 400, fmt.Sprintf("batch %d holds fewer than 99 operations", seqs[0]))
	// Another server's cursor: its seqs are its own.
	_, other := fs.server(nil)
	newClient(t, other, "", cov).expect("GET", "/v1/changes?follow=1&cursor="+url.QueryEscape(end), nil, 409, "was given by another server")
}

// stripped is cs without their cursors.
func stripped(cs []FollowChange) []FollowChange {
	out := make([]FollowChange, len(cs))
	for i, c := range cs {
		c.Cursor = ""
		out[i] = c
	}
	return out
}

// TestFollowBounds: a follower further behind than the log holds, or
// from before the server started, gets 410 naming the oldest seq it can
// follow from; followers past MaxFollowers get 503 with Retry-After; a
// token without the read scope gets 403.
func TestFollowBounds(t *testing.T) {
	fs := newFollowStore(t, 16)
	cov := &coverage{}
	_, hs := fs.server(func(c *Config) {
		c.Limits.MaxFollowers = 1
		c.Token = testToken
		c.Tokens = []Token{{readToken, ScopeRead}, {writeToken, ScopeWrite}}
	})
	c := newClient(t, hs, readToken, cov)
	first := fs.apply(10)
	fs.apply(10) // the log of 16 has dropped some of the first batch
	oldest, _ := fs.vm.LogSeqs()
	if oldest != first {
		t.Fatalf("the oldest seq to follow from is %d, want %d", oldest, first)
	}
	c.expect("GET", "/v1/changes?follow=1&from=0", nil, 410, fmt.Sprintf("the changes after seq 0 are no longer all in this server's change log (it keeps the newest 16 operations, and none from before it started); the oldest seq to follow from is %d", first))
	r, _ := poll(t, c, fmt.Sprintf("from=%d", first))
	sameChanges(t, "from the oldest", r.Changes, fs.after(first, nil))
	newClient(t, hs, writeToken, cov).expect("GET", "/v1/changes?follow=1", nil, 403, "read")

	// One follower at a time: the second waits for nothing but gets 503.
	// The one that waits may itself be refused, when it arrives while a
	// probe below holds the one place (its wait is 0, but it holds it
	// while it is answered): it tries again until it is the one.
	done := make(chan error, 1)
	go func() {
		for {
			req, _ := http.NewRequest("GET", hs.URL+"/v1/changes?follow=1&wait=30s", nil)
			req.Header.Set("Authorization", "Bearer "+readToken)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				done <- err
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			switch resp.StatusCode {
			case http.StatusServiceUnavailable:
				time.Sleep(5 * time.Millisecond)
				continue
			case http.StatusOK:
				done <- nil
			default:
				done <- fmt.Errorf("the follower that waits: status %d", resp.StatusCode)
			}
			return
		}
	}()
	deadline := time.Now().Add(30 * time.Second)
	for {
		rep := c.do("GET", "/v1/changes?follow=1&wait=0s", nil, false)
		if rep.status == http.StatusServiceUnavailable {
			if !strings.Contains(rep.errorMsg(), "1 clients follow changes already") || rep.header.Get("Retry-After") != "5" {
				t.Errorf("the follower past the cap: %v, Retry-After %q", rep, rep.header.Get("Retry-After"))
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a second follower was never refused while one waits")
		}
		time.Sleep(20 * time.Millisecond)
	}
	fs.apply(1)
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	// A restart: the log starts empty at the store's newest seq.
	newest := fs.apply(2)
	fs.vm.Close()
	if err := fs.store.Flush(); err != nil {
		t.Fatal(err)
	}
	fs.store.Close()
	fs.open(0)
	_, hs2 := fs.server(nil)
	c2 := newClient(t, hs2, "", cov)
	c2.expect("GET", fmt.Sprintf("/v1/changes?follow=1&from=%d", newest-1), nil, 410, fmt.Sprintf("the oldest seq to follow from is %d", newest))
	r, _ = poll(t, c2, fmt.Sprintf("wait=0s&from=%d", newest))
	if len(r.Changes) != 0 || r.Seq != newest {
		t.Errorf("following from the newest seq after a restart: %s", js(r))
	}
}

// sseEvent is one Server-Sent Event.
type sseEvent struct {
	event, id, data string
}

// sseStream reads events from an event stream's body.
type sseStream struct {
	resp     *http.Response
	sc       *bufio.Scanner
	comments int // comment lines read
}

// openSSE starts an event stream of GET /v1/changes?query (Accept:
// text/event-stream, Last-Event-ID lastID when not empty).
func openSSE(t *testing.T, base, query, lastID string) *sseStream {
	t.Helper()
	req, err := http.NewRequest("GET", base+"/v1/changes?"+query, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Fatalf("event stream: %d %s %s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	return &sseStream{resp: resp, sc: bufio.NewScanner(resp.Body)}
}

// next reads the next event (false at the end of the stream).
func (s *sseStream) next() (sseEvent, bool) {
	var e sseEvent
	seen := false
	for s.sc.Scan() {
		line := s.sc.Text()
		switch {
		case line == "":
			if seen {
				return e, true
			}
		case strings.HasPrefix(line, ":"):
			s.comments++
		default:
			k, v, _ := strings.Cut(line, ": ")
			switch k {
			case "event":
				e.event, seen = v, true
			case "id":
				e.id, seen = v, true
			case "data":
				e.data, seen = v, true
			case "retry":
			default:
				panic("unknown field " + line)
			}
		}
	}
	return e, false
}

func (s *sseStream) close() { s.resp.Body.Close() }

// changes reads n change events (failing on any other).
func (s *sseStream) changes(t *testing.T, n int) []FollowChange {
	t.Helper()
	var out []FollowChange
	for len(out) < n {
		e, ok := s.next()
		if !ok {
			t.Fatalf("the stream ended after %d of %d changes", len(out), n)
		}
		if e.event == "progress" {
			continue
		}
		var c FollowChange
		if e.event != "change" || json.Unmarshal([]byte(e.data), &c) != nil || c.Cursor != e.id {
			t.Fatalf("event %+v is not a change with its cursor as id", e)
		}
		out = append(out, c)
	}
	return out
}

// TestFollowSSE follows the changes as an event stream, drops the
// connection in the middle of a batch and resumes with Last-Event-ID, and
// checks that every operation applied arrives once and in order; that an
// idle stream sends heartbeats, that it outlives the server's read and
// write timeouts, that it ends at its maximum duration and at shutdown,
// and that a follower the log dropped operations from gets an error
// event.
func TestFollowSSE(t *testing.T) {
	fs := newFollowStore(t, 64)
	s, _ := fs.server(func(c *Config) {
		c.Limits.FollowHeartbeat = 50 * time.Millisecond
		c.Limits.FollowMaxDuration = 3 * time.Second
		c.Limits.RequestTimeout = 100 * time.Millisecond // the follow outlives it
	})
	// A real http.Server as serve runs it, with read and write timeouts far
	// below the stream's life.
	srv := s.HTTPServer()
	srv.ReadTimeout, srv.WriteTimeout = 300*time.Millisecond, 300*time.Millisecond
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	defer srv.Close()
	base := "http://" + ln.Addr().String()

	start := fs.apply(3)
	st := openSSE(t, base, fmt.Sprintf("follow=sse&from=%d", start), "")
	fs.apply(5)
	got := st.changes(t, 2) // and 3 more of that batch to come: drop them
	st.close()
	last := got[len(got)-1].Cursor
	if !strings.Contains(last, ":2@") {
		t.Fatalf("the second change of a batch of 5 has cursor %q", last)
	}
	// Resume: the EventSource way, the URL as first given and the last id.
	st = openSSE(t, base, fmt.Sprintf("follow=sse&from=%d", start), last)
	time.Sleep(600 * time.Millisecond) // past the server's read and write timeouts, idle
	fs.apply(4)
	got = append(got, st.changes(t, 3+4)...)
	if st.comments < 5 {
		t.Errorf("an idle stream sent %d heartbeats in 600ms, at 50ms each", st.comments)
	}
	time.Sleep(400 * time.Millisecond)
	fs.apply(2)
	got = append(got, st.changes(t, 2)...)
	sameChanges(t, "the event stream", got, fs.after(start, nil))
	// Its maximum duration ends it: the stream reaches its end.
	t0 := time.Now()
	for {
		if _, ok := st.next(); !ok {
			break
		}
	}
	if el := time.Since(t0); el > 4*time.Second {
		t.Errorf("the stream ended %v after its last change, past its 3s", el)
	}
	st.close()

	// A long poll outlives the server's write timeout too.
	t0 = time.Now()
	resp, err := http.Get(base + "/v1/changes?follow=1&wait=700ms")
	if err != nil {
		t.Fatalf("a long poll of 700ms on a server with a write timeout of 300ms: %v", err)
	}
	var pr FollowResponse
	if err := json.NewDecoder(resp.Body).Decode(&pr); err != nil || resp.StatusCode != 200 || len(pr.Changes) != 0 || time.Since(t0) < 700*time.Millisecond {
		t.Errorf("a long poll of 700ms: %d %s %v after %v", resp.StatusCode, js(pr), err, time.Since(t0))
	}
	resp.Body.Close()

	// Shutdown ends a stream at once.
	st = openSSE(t, base, "follow=sse", "")
	ended := make(chan struct{})
	go func() {
		for {
			if _, ok := st.next(); !ok {
				close(ended)
				return
			}
		}
	}()
	time.Sleep(100 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		t.Errorf("shutdown waited for the follower: %v", err)
	}
	select {
	case <-ended:
	case <-time.After(2 * time.Second):
		t.Error("a stream outlived the server's shutdown")
	}
	st.close()

	// A follower the log left behind: an error event, then the end.
	_, hs := fs.server(nil)
	st = openSSE(t, hs.URL, "follow=sse", "")
	defer st.close()
	fs.apply(100) // more than the log's 64 in one batch
	e, ok := st.next()
	for ok && e.event == "change" {
		e, ok = st.next()
	}
	if e.event != "error" || !strings.Contains(e.data, "no longer all in this server's change log") {
		t.Fatalf("a follower the log dropped operations from got %+v (%v)", e, ok)
	}
	if e, ok := st.next(); ok {
		t.Fatalf("the stream went on after its error: %+v", e)
	}
	// And refusals come before the stream: limit is for polls.
	req, _ := http.NewRequest("GET", hs.URL+"/v1/changes?follow=sse&limit=5", nil)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 400 || !strings.Contains(string(b), "limit and wait are for long polling") {
		t.Errorf("follow=sse&limit=5: %d %s", resp.StatusCode, b)
	}
}

// TestFollowCursors: the cursor's forms, and that every resume point a
// stream gives is exact (the changes after it are the oracle's).
func TestFollowCursors(t *testing.T) {
	fs := newFollowStore(t, 0)
	s, hs := fs.server(nil)
	seq := fs.apply(6)
	o := s.reader.Origin
	for _, tc := range []struct {
		cur  string
		want followPoint
	}{
		{fmt.Sprint(seq), followPoint{seq: seq}},
		{fmt.Sprintf("%d:3", seq), followPoint{seq: seq, skip: 3}},
		{followCursor(followPoint{seq: seq, skip: 2}, o), followPoint{seq: seq, skip: 2}},
	} {
		p, err := s.parseFollowCursor("cursor", tc.cur)
		if err != nil || p != tc.want {
			t.Errorf("cursor %q: %+v, %v; want %+v", tc.cur, p, err, tc.want)
		}
	}
	for _, bad := range []string{"", "x", "3:", ":3", "3:0", "0:1", "-1", "3:x", "3@"} {
		if _, err := s.parseFollowCursor("cursor", bad); err == nil {
			t.Errorf("cursor %q was taken", bad)
		}
	}
	c := newClient(t, hs, "", &coverage{})
	for k := range 6 {
		cur := fmt.Sprintf("%d:%d", seq, k)
		if k == 0 {
			cur = fmt.Sprint(seq - 1)
		}
		r, _ := poll(t, c, "wait=0s&cursor="+url.QueryEscape(cur))
		want := fs.after(seq-1, nil)[k:]
		sameChanges(t, "after "+cur, r.Changes, want)
		if !slices.Equal([]string{r.NextCursor}, []string{followCursor(followPoint{seq: seq}, o)}) {
			t.Errorf("after %s: next cursor %q", cur, r.NextCursor)
		}
	}
}

// TestFollowSlowClient: a client that opens an event stream and never
// reads is cut off once a write has waited FollowWriteTimeout, and its
// follower slot is free again; an event stream of one type moves its
// place on with progress events over operations of other types.
func TestFollowSlowClient(t *testing.T) {
	fs := newFollowStore(t, 1<<20)
	_, hs := fs.server(func(c *Config) {
		c.Limits.MaxFollowers = 1
		c.Limits.FollowWriteTimeout = 300 * time.Millisecond
		c.Limits.FollowMaxDuration = 5 * time.Second // a stream that misses its progress event ends
	})
	conn, err := net.Dial("tcp", hs.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := fmt.Fprintf(conn, "GET /v1/changes?follow=sse HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	// It holds the one slot.
	c := newClient(t, hs, "", &coverage{})
	deadline := time.Now().Add(10 * time.Second)
	for c.do("GET", "/v1/changes?follow=1&wait=0s", nil, false).status != http.StatusServiceUnavailable {
		if time.Now().After(deadline) {
			t.Fatal("the stream never took the follower slot")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Far more than the socket buffers take, unread.
	for range 40 {
		fs.apply(5000)
	}
	deadline = time.Now().Add(20 * time.Second)
	for {
		rep := c.do("GET", "/v1/changes?follow=1&wait=0s", nil, false)
		if rep.status == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a client that does not read still holds its slot: %v", rep)
		}
		time.Sleep(50 * time.Millisecond)
	}

	// Progress: a stream of type pay, over a batch whose last operation is
	// of the default type.
	_, newest := fs.vm.LogSeqs()
	st := openSSE(t, hs.URL, fmt.Sprintf("follow=sse&types=pay&from=%d", newest), "")
	defer st.close()
	seq := fs.apply(2) // k=fs.n*1000: pay, then default
	want := fs.after(newest, map[string]bool{"pay": true})
	var got []FollowChange
	for {
		e, ok := st.next()
		if !ok {
			t.Fatal("the stream ended")
		}
		if e.event == "progress" {
			if !strings.HasPrefix(e.id, fmt.Sprintf("%d@", seq)) || e.data != fmt.Sprintf(`{"seq":%d}`, seq) {
				t.Fatalf("progress event %+v, want the end of batch %d", e, seq)
			}
			break
		}
		var ch FollowChange
		if err := json.Unmarshal([]byte(e.data), &ch); err != nil {
			t.Fatal(err)
		}
		got = append(got, ch)
	}
	sameChanges(t, "of type pay", got, want)
}

package kafkatest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/graphtide/graphtide/internal/api"
)

// TestFollowChangesWhileServeIngests: graphtide serve, a process of its
// own on the real broker, ingests JSON edge records of two partitions in
// two rounds while two clients follow GET /v1/changes from the seq before
// the first: one as Server-Sent Events that drops its connection in the
// middle and resumes with Last-Event-ID, one by long polling. Each gets
// every edge produced exactly once, no other, with its keys and weight,
// in seq order, and each partition's edges in the order they were
// produced.
func TestFollowChangesWhileServeIngests(t *testing.T) {
	t.Parallel()
	addrs := needBroker(t)
	bin := graphtideBinary(t)
	topic := uniq("follow")
	createTopic(t, topic, 2)
	port := freeTCPPort(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	log := &logBuffer{}
	srv := startServe(t, bin, log, "--brokers", strings.Join(addrs, ","), "--topics", topic, "--topic-format", topic+"=json",
		"--group", uniq("follow-group"), "--dir", filepath.Join(t.TempDir(), "data"), "--memory-budget", "256MiB",
		"--http-addr", fmt.Sprintf("127.0.0.1:%d", port), "--alert-topic", "", "--dead-letter-topic", uniq("follow-dead"),
		"--flush-interval", "200ms")
	if !waitFor(2*time.Minute, func() bool { code, _ := httpGet(base + "/readyz"); return code == 200 || !srv.alive() }) || !srv.alive() {
		t.Fatalf("serve did not become ready:\n%s", log.tail(40))
	}
	var start api.FollowResponse
	if !getJSON(base+"/v1/changes?follow=1&wait=0s", &start) {
		t.Fatal("a poll without from did not answer")
	}

	// The records: edge i from "p<part>-<i>" to "d<i>" of weight i.
	const perRound = 400
	type edge struct {
		src, dst string
		weight   float64
		part     int
	}
	var rounds [2][]*record
	var produced []edge
	for round := range 2 {
		for i := round * perRound; i < (round+1)*perRound; i++ {
			e := edge{fmt.Sprintf("p%d-%d", i%2, i), fmt.Sprintf("d%d", i), float64(i), i % 2}
			produced = append(produced, e)
			b, _ := json.Marshal(map[string]any{"src": e.src, "dst": e.dst, "weight": e.weight})
			rounds[round] = append(rounds[round], &record{topic: topic, part: int32(e.part), value: b, offset: -1})
		}
	}
	index := map[[2]string]int{}
	for i, e := range produced {
		index[[2]string{e.src, e.dst}] = i
	}
	// check compares what a follower got with what was produced.
	check := func(who string, got []api.FollowChange) {
		t.Helper()
		seen := map[int]bool{}
		last := [2]int{-1, -1} // per partition, the index of the last edge
		var seq uint64
		for k, c := range got {
			i, ok := index[[2]string{c.SrcKey, c.DstKey}]
			switch {
			case !ok:
				t.Fatalf("%s: change %d, %s -> %s, was never produced", who, k, c.SrcKey, c.DstKey)
			case seen[i]:
				t.Fatalf("%s: change %d, %s -> %s, came twice", who, k, c.SrcKey, c.DstKey)
			case c.Op != "upsert" || c.Weight == nil || *c.Weight != produced[i].weight:
				t.Fatalf("%s: change %d is %+v, want an upsert of weight %v", who, k, c, produced[i].weight)
			case c.Seq < seq || c.Seq <= start.Seq:
				t.Fatalf("%s: change %d has seq %d after seq %d (started after %d)", who, k, c.Seq, seq, start.Seq)
			case i < last[produced[i].part]:
				t.Fatalf("%s: %s -> %s came after %s -> %s of the same partition, produced later", who, c.SrcKey, c.DstKey,
					produced[last[produced[i].part]].src, produced[last[produced[i].part]].dst)
			}
			seen[i], seq, last[produced[i].part] = true, c.Seq, i
		}
		if len(seen) != len(produced) {
			t.Fatalf("%s: %d of the %d edges produced came", who, len(seen), len(produced))
		}
	}

	// The long-polling follower, from the start to the last edge.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var polled []api.FollowChange
	var pollErr error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		cl, err := api.NewClient(base, api.ClientOptions{Timeout: 20 * time.Second})
		if err != nil {
			pollErr = err
			return
		}
		cursor := start.NextCursor
		for len(polled) < len(produced) && ctx.Err() == nil {
			r, err := cl.Follow(ctx, "", cursor, "", 10*time.Second)
			if err != nil {
				pollErr = err
				return
			}
			polled = append(polled, r.Changes...)
			cursor = r.NextCursor
		}
	}()

	// The event stream, from the start: half of the first round, then a
	// new connection from the last id.
	u := fmt.Sprintf("%s/v1/changes?follow=sse&from=%d", base, start.Seq)
	st := openEvents(ctx, t, u, "")
	prod := newProducer(t)
	if err := produce(ctx, prod, rounds[0]); err != nil {
		t.Fatal(err)
	}
	streamed := st.changes(t, perRound/2)
	st.close()
	st = openEvents(ctx, t, u, streamed[len(streamed)-1].Cursor)
	defer st.close()
	if err := produce(ctx, prod, rounds[1]); err != nil {
		t.Fatal(err)
	}
	streamed = append(streamed, st.changes(t, len(produced)-len(streamed))...)
	check("the event stream", streamed)
	wg.Wait()
	if pollErr != nil {
		t.Fatalf("the long polls: %v", pollErr)
	}
	check("the long polls", polled)
	// Nothing more comes: no change twice.
	var more api.FollowResponse
	if !getJSON(base+"/v1/changes?follow=1&wait=1s&cursor="+url.QueryEscape(streamed[len(streamed)-1].Cursor), &more) || len(more.Changes) != 0 {
		t.Fatalf("after the last edge produced: %+v", more)
	}
	if err := srv.stop(); err != nil {
		t.Fatalf("serve: %v\n%s", err, log.tail(20))
	}
}

// events reads a Server-Sent Events stream.
type events struct {
	resp *http.Response
	sc   *bufio.Scanner
}

func openEvents(ctx context.Context, t *testing.T, u, lastID string) *events {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, "GET", u, nil)
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
	if resp.StatusCode != 200 {
		resp.Body.Close()
		t.Fatalf("GET %s (Last-Event-ID %q): %d", u, lastID, resp.StatusCode)
	}
	return &events{resp: resp, sc: bufio.NewScanner(resp.Body)}
}

func (e *events) close() { e.resp.Body.Close() }

// changes reads n change events (progress events and comments skipped).
func (e *events) changes(t *testing.T, n int) []api.FollowChange {
	t.Helper()
	var out []api.FollowChange
	var kind, id, data string
	for len(out) < n && e.sc.Scan() {
		line := e.sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			kind = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "id: "):
			id = strings.TrimPrefix(line, "id: ")
		case strings.HasPrefix(line, "data: "):
			data = strings.TrimPrefix(line, "data: ")
		case line == "" && kind != "":
			if kind == "error" {
				t.Fatalf("error event: %s", data)
			}
			if kind == "change" {
				var c api.FollowChange
				if err := json.Unmarshal([]byte(data), &c); err != nil || c.Cursor != id {
					t.Fatalf("change event %q (id %q): %v", data, id, err)
				}
				out = append(out, c)
			}
			kind, id, data = "", "", ""
		}
	}
	if len(out) < n {
		t.Fatalf("the event stream ended after %d of %d changes: %v", len(out), n, e.sc.Err())
	}
	return out
}

package api

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/keydict"
	"github.com/graphtide/graphtide/internal/views"
)

// The follow mode of GET /v1/changes: the operations applied after a seq,
// one by one as they are applied (GraphOne's stateless stream view over
// HTTP), by long polling (follow=1) or as Server-Sent Events
// (follow=sse, or Accept: text/event-stream).
//
// A follower reads the views' edge log (views.Manager.ReadLog) from a
// position and holds nothing else: no queue per follower, no registration
// the log waits for. What one may cost is bounded:
//
//   - at most Limits.MaxFollowers follow at once (503 with Retry-After
//     beyond);
//   - a long poll waits at most Limits.MaxFollowWait and returns at most a
//     page of changes;
//   - an event stream lasts at most Limits.FollowMaxDuration (the client
//     then reconnects with Last-Event-ID), writes a heartbeat comment
//     every Limits.FollowHeartbeat while idle, and gives each write
//     Limits.FollowWriteTimeout: a client that stops reading is cut off
//     then, and one that went away is noticed at the next heartbeat;
//   - it writes a chunk of at most followChunk changes at a time from one
//     reused buffer;
//   - a follower further behind than the log holds (serve
//     --view-log-capacity operations) is told so (410, or an error event)
//     instead of being waited for;
//   - server shutdown ends every follower (HTTPServer registers it).
//
// Where a follower is goes in a follow cursor, "SEQ" (past every batch up
// to SEQ) or "SEQ:K" (and the first K operations of batch SEQ), tagged
// "@ORIGIN" with the server that numbered the seqs: seqs are each
// replica's own, so as for a listing's cursor another server (another
// replica, or this one after a restart) refuses it with 409.

// FollowChange is one operation as the follow mode hands it out.
type FollowChange struct {
	Seq    uint64   `json:"seq"` // the seq of its batch
	Op     string   `json:"op"`  // upsert, delete_edge or delete_vertex
	Src    uint64   `json:"src"`
	SrcKey string   `json:"src_key,omitempty"`
	Dst    *uint64  `json:"dst,omitempty"` // not for delete_vertex
	DstKey string   `json:"dst_key,omitempty"`
	Type   string   `json:"type,omitempty"`
	Weight *float64 `json:"weight,omitempty"` // an upsert's
	Time   string   `json:"time,omitempty"`   // its event time, when it has one
	// Cursor is where a follow resumes past this change (cursor=, or the
	// event's id as Last-Event-ID).
	Cursor string `json:"cursor"`
}

// FollowResponse answers a long poll of GET /v1/changes (follow=1): the
// changes after the start, at once if there are any, else as soon as one
// is applied, or none when wait runs out.
type FollowResponse struct {
	Changes []FollowChange `json:"changes"`
	// Seq: every batch up to it has been handed out whole.
	Seq uint64 `json:"seq"`
	// NextCursor is where the next poll starts (cursor=).
	NextCursor string `json:"next_cursor"`
	// More says that more changes exist already: poll again at once.
	More bool `json:"more"`
}

// followChunk is how many operations an event stream reads and writes at a
// time.
const followChunk = 256

// followPoint is a place in the stream of operations: past the batches up
// to seq (skip 0), or past those before batch seq and the first skip
// operations of batch seq.
type followPoint struct {
	seq, skip uint64
}

// followCursor writes p as a cursor of the server o.
func followCursor(p followPoint, o Origin) string {
	s := strconv.FormatUint(p.seq, 10)
	if p.skip > 0 {
		s += ":" + strconv.FormatUint(p.skip, 10)
	}
	return s + "@" + hex.EncodeToString(o[:])
}

// parseFollowCursor reads a follow cursor; one without "@ORIGIN" is taken
// as this server's.
func (s *Server) parseFollowCursor(name, c string) (followPoint, error) {
	var p followPoint
	body, origin, tagged := strings.Cut(c, "@")
	seq, skip, hasSkip := strings.Cut(body, ":")
	var err error
	if p.seq, err = strconv.ParseUint(seq, 10, 64); err == nil && hasSkip {
		p.skip, err = strconv.ParseUint(skip, 10, 64)
		if err == nil && (p.skip == 0 || p.seq == 0) {
			err = errors.New("zero")
		}
	}
	if err != nil {
		return p, errorf(http.StatusBadRequest, "%s must be a follow cursor (SEQ, SEQ:K or either with @SERVER, as a change's cursor or an event's id gives it), got %q", name, c)
	}
	if tagged && origin != hex.EncodeToString(s.reader.Origin[:]) {
		return p, errorf(http.StatusConflict, "%s %q was given by another server (another replica, or this one before a restart): seqs are each server's own. "+
			"Read what you need here and follow from this server's seq (a response's seq, or follow without from to start at the newest)", name, c)
	}
	return p, nil
}

// followMode says how r follows: "" (it does not), "poll" or "sse".
func followMode(r *http.Request) (string, error) {
	f := r.URL.Query().Get("follow")
	sse := strings.Contains(r.Header.Get("Accept"), "text/event-stream")
	switch f {
	case "":
		if sse {
			return "sse", nil
		}
		return "", nil
	case "sse":
		return "sse", nil
	case "1", "true", "poll":
		if sse {
			return "sse", nil
		}
		return "poll", nil
	}
	return "", errorf(http.StatusBadRequest, "follow must be 1 (long polling) or sse (Server-Sent Events), got %q", f)
}

// followsChanges reports whether r asks to follow (a request of GET
// /v1/changes).
func followsChanges(r *http.Request) bool {
	mode, _ := followMode(r)
	return mode != ""
}

// follow answers GET /v1/changes in follow mode.
func (s *Server) follow(w http.ResponseWriter, r *http.Request, q map[string][]string, mode string) error {
	get := func(k string) string {
		if v := q[k]; len(v) > 0 {
			return v[0]
		}
		return ""
	}
	for _, k := range []string{"to", "to_time", "from_time", "after", "after_dst", "after_type"} {
		if get(k) != "" {
			return errorf(http.StatusBadRequest, "%s lists the changes between two points; follow (from a seq or a cursor) takes from, cursor, types, limit and wait", k)
		}
	}
	if mode == "sse" && (get("limit") != "" || get("wait") != "") {
		return errorf(http.StatusBadRequest, "limit and wait are for long polling (follow=1); an event stream sends every change as it comes")
	}
	types, err := s.reader.TypeFilter(get("types"))
	if err != nil {
		return err
	}
	start, err := s.followStart(get("from"), get("cursor"), r.Header.Get("Last-Event-ID"))
	if err != nil {
		return err
	}
	vm := s.cfg.Views
	pos, err := vm.LogPosition(start.seq, start.skip)
	if err != nil {
		return s.followGone(start.settled(), err)
	}
	select {
	case s.followers <- struct{}{}:
		defer func() { <-s.followers }()
	default:
		w.Header().Set("Retry-After", "5")
		return errorf(http.StatusServiceUnavailable, "%d clients follow changes already, the most this server allows: try again later", cap(s.followers))
	}
	// The server's shutdown ends a follower.
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	defer context.AfterFunc(s.stopping, cancel)()
	f := &follower{s: s, types: types, at: start, pos: pos}
	if mode == "sse" {
		return f.stream(ctx, w)
	}
	limit, err := intParam(q, "limit", s.cfg.Limits.DefaultPage, 1, s.cfg.Limits.MaxPage)
	if err != nil {
		return err
	}
	wait := 30 * time.Second
	if v := get("wait"); v != "" {
		if wait, err = time.ParseDuration(v); err != nil || wait < 0 || wait > s.cfg.Limits.MaxFollowWait {
			return errorf(http.StatusBadRequest, "wait must be a duration from 0s to %v (serve's limit), e.g. 30s, got %q", s.cfg.Limits.MaxFollowWait, v)
		}
	}
	wait = min(wait, s.cfg.Limits.MaxFollowWait)
	return f.poll(ctx, w, wait, limit)
}

// followStart is where a follow starts: Last-Event-ID (a reconnecting
// event stream), else cursor, else from; none: the newest seq.
func (s *Server) followStart(from, cursor, lastID string) (followPoint, error) {
	switch {
	case lastID != "":
		return s.parseFollowCursor("Last-Event-ID", lastID)
	case cursor != "" && from != "":
		return followPoint{}, errorf(http.StatusBadRequest, "give cursor (a previous response's next_cursor) or from, not both")
	case cursor != "":
		return s.parseFollowCursor("cursor", cursor)
	}
	_, newest := s.cfg.Views.LogSeqs()
	if from == "" {
		return followPoint{seq: newest}, nil
	}
	seq, err := strconv.ParseUint(from, 10, 64)
	if err != nil {
		return followPoint{}, errorf(http.StatusBadRequest, "from must be a sequence number (an unsigned integer), got %q", from)
	}
	if seq > newest {
		return followPoint{}, errorf(http.StatusBadRequest, "from %d is above this server's newest seq, %d (seqs are each replica's own); follow from a seq this server gave (or leave out from: the newest)", seq, newest)
	}
	return followPoint{seq: seq}, nil
}

// followGone turns LogPosition's error into the answer.
func (s *Server) followGone(seq uint64, err error) error {
	var gone *views.LogGoneError
	if errors.As(err, &gone) {
		return errorf(http.StatusGone, "the changes after seq %d are no longer all in this server's change log (it keeps the newest %d operations, and none from before it started); "+
			"the oldest seq to follow from is %d: read what you need as of a newer seq and follow from it, or list GET /v1/changes?from=%d&to=%d (the store must keep that history)",
			seq, s.cfg.Views.LogCapacity(), gone.Oldest, seq, gone.Oldest)
	}
	return errorf(http.StatusBadRequest, "%v", err)
}

// follower is one follow request's place in the stream.
type follower struct {
	s     *Server
	types *engine.TypeSet
	at    followPoint // what it has handed out
	pos   uint64      // the log position of the next operation
	buf   []views.Edge
}

// next reads the operations from pos (waiting for one until ctx ends) and
// turns those of its types into changes, advancing at and pos; ended
// reports whether at is at a batch's end (a seq).
func (f *follower) next(ctx context.Context, n int) (out []FollowChange, ended bool, err error) {
	es, ends, err := f.s.cfg.Views.ReadLog(ctx, f.pos, n, f.buf[:0])
	f.buf = es[:0]
	if err != nil {
		var gone *views.LogGoneError
		if errors.As(err, &gone) {
			return nil, false, f.s.followGone(f.at.seq, err)
		}
		return nil, false, err
	}
	f.pos += uint64(len(es))
	q := f.s.reader
	for i, e := range es {
		if e.Seq != f.at.seq {
			f.at = followPoint{seq: e.Seq}
		}
		f.at.skip++
		if i == len(es)-1 && ends || i < len(es)-1 && es[i+1].Seq != e.Seq {
			f.at.skip = 0 // its batch's last
		}
		op := e.Op
		if f.types != nil && op.Kind != engine.OpDeleteVertex && !f.types.Has(op.Type) {
			continue
		}
		out = append(out, changeOf(q.Dict, q.typeName, e, followCursor(f.at, q.Origin)))
	}
	return out, f.at.skip == 0, nil
}

// changeOf is a logged operation as a FollowChange.
func changeOf(dict *keydict.Dict, typeName func(uint16) string, e views.Edge, cursor string) FollowChange {
	op := e.Op
	c := FollowChange{Seq: e.Seq, Src: extID(dict, op.Src), SrcKey: keyOf(dict, op.Src), Time: eventTime(op.EventTime), Cursor: cursor}
	switch op.Kind {
	case engine.OpDeleteVertex:
		c.Op = "delete_vertex"
		return c
	case engine.OpDeleteEdge:
		c.Op = "delete_edge"
	default:
		c.Op = "upsert"
		w := op.Weight
		c.Weight = &w
	}
	d := extID(dict, op.Dst)
	c.Dst, c.DstKey, c.Type = &d, keyOf(dict, op.Dst), typeName(op.Type)
	return c
}

// settled is the last seq handed out whole.
func (p followPoint) settled() uint64 {
	if p.skip > 0 {
		return p.seq - 1
	}
	return p.seq
}

// poll answers a long poll: the changes that exist, or the first ones to
// be applied within wait, or none.
func (f *follower) poll(ctx context.Context, w http.ResponseWriter, wait time.Duration, limit int) error {
	s := f.s
	rc := http.NewResponseController(w)
	// The server's write timeout is for a request of RequestTimeout. (Its
	// read timeout ends once the request is read.)
	_ = rc.SetWriteDeadline(time.Now().Add(wait + s.cfg.Limits.RequestTimeout + 10*time.Second))
	out := FollowResponse{Changes: []FollowChange{}}
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	for len(out.Changes) < limit {
		cs, _, err := f.next(wctx, limit-len(out.Changes))
		if err != nil {
			if ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
				break // wait ran out
			}
			return err
		}
		out.Changes = append(out.Changes, cs...)
		if len(out.Changes) > 0 {
			break
		}
		// Only operations of other types: wait on for one of ours.
	}
	_, newest := s.cfg.Views.LogSeqs()
	out.Seq, out.NextCursor, out.More = f.at.settled(), followCursor(f.at, s.reader.Origin), f.at.settled() < newest
	writeJSON(w, http.StatusOK, out)
	return nil
}

// stream answers with an event stream: an event per change ("change",
// its cursor as id), a "progress" event with the cursor when the changes
// of other types moved it, heartbeat comments while idle, and an "error"
// event when it cannot go on.
func (f *follower) stream(ctx context.Context, w http.ResponseWriter) error {
	s := f.s
	lim := s.cfg.Limits
	ctx, cancel := context.WithTimeout(ctx, lim.FollowMaxDuration)
	defer cancel()
	rc := http.NewResponseController(w) // each write gets FollowWriteTimeout
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("X-Accel-Buffering", "no") // a proxy in front passes each event on
	var b bytes.Buffer
	send := func() error {
		if err := rc.SetWriteDeadline(time.Now().Add(lim.FollowWriteTimeout)); err != nil {
			return err
		}
		_, err := w.Write(b.Bytes())
		b.Reset()
		if err == nil {
			err = rc.Flush()
		}
		return err
	}
	fmt.Fprintf(&b, "retry: 1000\n: following the changes after %s\n\n", followCursor(f.at, s.reader.Origin))
	w.WriteHeader(http.StatusOK)
	if err := send(); err != nil {
		return nil // the client went away: nothing to tell it
	}
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	lastID := "" // of the last change event
	for {
		hctx, hcancel := context.WithTimeout(ctx, lim.FollowHeartbeat)
		cs, ended, err := f.next(hctx, followChunk)
		hcancel()
		switch {
		case err == nil:
		case ctx.Err() != nil:
			return nil // its time is up, the client went away, or the server stops
		case errors.Is(err, context.DeadlineExceeded):
			b.WriteString(": heartbeat\n\n")
			if send() != nil {
				return nil
			}
			continue
		default:
			msg := err.Error()
			if errors.Is(err, views.ErrClosed) {
				msg = "shutting down: " + msg
			}
			b.WriteString("event: error\ndata: ")
			_ = enc.Encode(ErrorResponse{msg}) // a string always encodes
			b.WriteString("\n")
			_ = send()
			return nil
		}
		for _, c := range cs {
			fmt.Fprintf(&b, "event: change\nid: %s\ndata: ", c.Cursor)
			_ = enc.Encode(c) // its fields always encode; Encode ends the line
			b.WriteString("\n")
			lastID = c.Cursor
		}
		if at := followCursor(f.at, s.reader.Origin); ended && lastID != at {
			// Operations of other types only: the client's place moves on.
			fmt.Fprintf(&b, "event: progress\nid: %s\ndata: {\"seq\":%d}\n\n", at, f.at.seq)
			lastID = at
		}
		if send() != nil {
			return nil
		}
	}
}

// Follow sends one long poll of GET /v1/changes: the changes after cursor
// (a previous poll's next_cursor or a change's cursor), or after seq from
// when cursor is "" (from "" too: the newest seq), of types ("": all),
// waiting up to wait (at most the client's timeout less a margin) for one.
func (c *Client) Follow(ctx context.Context, from, cursor, types string, wait time.Duration) (FollowResponse, error) {
	q := map[string][]string{"follow": {"1"}, "wait": {c.followWait(wait).String()}}
	for k, v := range map[string]string{"from": from, "cursor": cursor, "types": types} {
		if v != "" {
			q[k] = []string{v}
		}
	}
	var r FollowResponse
	return r, c.do(ctx, http.MethodGet, "/v1/changes", q, nil, &r)
}

// followWait is wait within the client's timeout, with room for the
// answer.
func (c *Client) followWait(wait time.Duration) time.Duration {
	room := c.hc.Timeout - max(c.hc.Timeout/4, time.Second)
	return max(0, min(wait, room)).Truncate(time.Millisecond)
}

// FollowChanges follows a server's changes by long polling, from seq from
// ("": the newest) or past cursor, and calls f with each change, in seq
// order and each once, until ctx ends (it then returns nil) or f or a poll
// fails. Only a server has changes to follow: with a data directory it
// says so.
func (q *Querier) FollowChanges(ctx context.Context, from, cursor, types string, f func(FollowChange) error) error {
	if q.client == nil {
		return errors.New("following changes needs a running serve (--server): nothing ingests into a data directory read here")
	}
	for {
		r, err := q.client.Follow(ctx, from, cursor, types, 30*time.Second)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return err
		}
		for _, c := range r.Changes {
			if err := f(c); err != nil {
				return err
			}
		}
		from, cursor = "", r.NextCursor
	}
}

// WriteText prints the change in one line: its seq, its operation, the
// edge (a vertex by its key when it has one, else its id), its type, its
// weight and event time when it has them, and the cursor to resume after
// it: "12 upsert acct-1 -> 42 type=pay weight=3 cursor=12:1@9c…".
func (c FollowChange) WriteText(w io.Writer) {
	name := func(id uint64, key string) string {
		if key == "" {
			return strconv.FormatUint(id, 10)
		}
		if _, err := strconv.ParseUint(key, 10, 64); err == nil {
			return "key:" + key // not the id of that number
		}
		return key
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d %s %s", c.Seq, c.Op, name(c.Src, c.SrcKey))
	if c.Dst != nil {
		t := c.Type
		if t == "" {
			t = "default"
		}
		fmt.Fprintf(&b, " -> %s type=%s", name(*c.Dst, c.DstKey), t)
	}
	if c.Weight != nil {
		fmt.Fprintf(&b, " weight=%v", *c.Weight)
	}
	if c.Time != "" {
		fmt.Fprintf(&b, " time=%s", c.Time)
	}
	fmt.Fprintf(&b, " cursor=%s\n", c.Cursor)
	_, _ = io.WriteString(w, b.String())
}

// Package writestest is the oracle of the writes topic's tests: it
// replays a writes topic's records, in log order, on a plain map of
// edges, applying each idempotency key's first batch only and each batch
// only when its conditions hold, and says what serve must have applied
// and answered. It knows numeric ids, type 0, and the conditions on edges
// and out-degrees (not vertex_exists, whose meaning depends on in-edges).
package writestest

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/graphtide/graphtide/internal/api"
	"github.com/graphtide/graphtide/internal/budget"
	"github.com/graphtide/graphtide/internal/ingest/decode"
	"github.com/graphtide/graphtide/internal/server"
	"github.com/graphtide/graphtide/internal/writes"
)

// Record is one record of a writes topic (one partition).
type Record struct {
	Offset int64
	Key    string // the idempotency key header ("" none)
	Value  []byte
}

// Edge is a directed edge of type 0.
type Edge struct{ Src, Dst uint64 }

// Outcome is what the oracle says became of a batch.
type Outcome struct {
	Applied bool
	Failed  int   // the failed condition's index when not applied
	Offset  int64 // of the record that decided it (a key's first)
}

// Oracle is the replay's result.
type Oracle struct {
	Graph    map[Edge]float64
	ByKey    map[string]Outcome
	ByOffset map[int64]Outcome // of the records that decided (not retries)
}

type op struct {
	Op     string   `json:"op"`
	Src    uint64   `json:"src"`
	Dst    uint64   `json:"dst"`
	Weight *float64 `json:"weight"`
}

// Replay replays recs, which must be in offset order.
func Replay(recs []Record) (*Oracle, error) {
	o := &Oracle{Graph: map[Edge]float64{}, ByKey: map[string]Outcome{}, ByOffset: map[int64]Outcome{}}
	for _, r := range recs {
		if _, seen := o.ByKey[r.Key]; seen && r.Key != "" {
			continue // a retry
		}
		rawOps, conds, err := writes.Parse(r.Value)
		if err != nil {
			return nil, fmt.Errorf("offset %d: %w", r.Offset, err)
		}
		var ops []op
		if err := json.Unmarshal(rawOps, &ops); err != nil {
			return nil, fmt.Errorf("offset %d: ops: %w", r.Offset, err)
		}
		out := Outcome{Applied: true, Offset: r.Offset}
		for i, c := range conds {
			ok, err := o.holds(c)
			if err != nil {
				return nil, fmt.Errorf("offset %d: condition %d: %w", r.Offset, i, err)
			}
			if !ok {
				out = Outcome{Failed: i, Offset: r.Offset}
				break
			}
		}
		if out.Applied {
			for _, p := range ops {
				switch p.Op {
				case "", "add", "upsert":
					w := 1.0
					if p.Weight != nil {
						w = *p.Weight
					}
					o.Graph[Edge{p.Src, p.Dst}] = w
				case "delete":
					delete(o.Graph, Edge{p.Src, p.Dst})
				case "delete_vertex":
					for e := range o.Graph {
						if e.Src == p.Src || e.Dst == p.Src {
							delete(o.Graph, e)
						}
					}
				default:
					return nil, fmt.Errorf("offset %d: op %q", r.Offset, p.Op)
				}
			}
		}
		o.ByOffset[r.Offset] = out
		if r.Key != "" {
			o.ByKey[r.Key] = out
		}
	}
	return o, nil
}

func num(v json.RawMessage) (uint64, error) {
	n, key, err := writes.ParseVertex(v)
	if err == nil && key != "" {
		err = fmt.Errorf("key %q: the oracle knows ids only", key)
	}
	return n, err
}

func (o *Oracle) holds(c writes.Condition) (bool, error) {
	if c.Type != nil {
		return false, fmt.Errorf("types: the oracle knows type 0 only")
	}
	if c.Kind == writes.KindDegreeAtMost {
		v, err := num(c.Vertex)
		if err != nil {
			return false, err
		}
		d := 0
		for e := range o.Graph {
			if e.Src == v {
				d++
			}
		}
		return float64(d) <= *c.Value, nil
	}
	src, err := num(c.Src)
	if err != nil {
		return false, err
	}
	dst, err := num(c.Dst)
	if err != nil {
		return false, err
	}
	w, there := o.Graph[Edge{src, dst}]
	switch c.Kind {
	case writes.KindEdgeExists:
		return there, nil
	case writes.KindEdgeAbsent:
		return !there, nil
	case writes.KindWeightEquals:
		return there && w == *c.Value, nil
	case writes.KindWeightBelow:
		return there && w < *c.Value, nil
	}
	return false, fmt.Errorf("kind %q: not in the oracle", c.Kind)
}

// RandomRequest is a batch of 1 to 3 ops on vertices 0 to n-1 with 0 to
// 2 conditions, chosen so that both outcomes are common: inserts while an
// edge is absent, deletes while it exists, weights raised while below a
// value, inserts while an out-degree is small.
func RandomRequest(r *rand.Rand, n uint64) *writes.Request {
	v := func() json.RawMessage { return json.RawMessage(fmt.Sprint(r.Uint64N(n))) }
	var ops []string
	var conds []writes.Condition
	for range 1 + r.IntN(3) {
		src, dst := v(), v()
		switch r.IntN(4) {
		case 0, 1:
			ops = append(ops, fmt.Sprintf(`{"op":"add","src":%s,"dst":%s,"weight":%d}`, src, dst, r.IntN(10)))
		case 2:
			ops = append(ops, fmt.Sprintf(`{"op":"delete","src":%s,"dst":%s}`, src, dst))
		default:
			if r.IntN(8) == 0 {
				ops = append(ops, fmt.Sprintf(`{"op":"delete_vertex","src":%s}`, src))
			} else {
				ops = append(ops, fmt.Sprintf(`{"op":"add","src":%s,"dst":%s}`, src, dst))
			}
		}
	}
	for range r.IntN(3) {
		val := float64(r.IntN(10))
		switch r.IntN(5) {
		case 0:
			conds = append(conds, writes.Condition{Kind: writes.KindEdgeAbsent, Src: v(), Dst: v()})
		case 1:
			conds = append(conds, writes.Condition{Kind: writes.KindEdgeExists, Src: v(), Dst: v()})
		case 2:
			conds = append(conds, writes.Condition{Kind: writes.KindWeightBelow, Src: v(), Dst: v(), Value: &val})
		case 3:
			conds = append(conds, writes.Condition{Kind: writes.KindWeightEquals, Src: v(), Dst: v(), Value: &val})
		default:
			val = float64(r.IntN(4))
			conds = append(conds, writes.Condition{Kind: writes.KindDegreeAtMost, Vertex: v(), Value: &val})
		}
	}
	raw := make([]json.RawMessage, len(ops))
	for i, s := range ops {
		raw[i] = json.RawMessage(s)
	}
	b, err := json.Marshal(raw)
	if err != nil {
		panic(err) // valid JSON by construction
	}
	return &writes.Request{Ops: b, Conditions: conds}
}

// Answer is what a client was told about one request.
type Answer struct {
	Key string
	// Reused: the request reused an earlier request's key with another
	// batch (the server must answer 422 and apply nothing).
	Reused bool
	Status int // 200, 409 or 422
	Resp   api.BatchResponse
}

// Check compares the answers with the oracle: each key's answers give its
// first batch's outcome, the offset of that batch, and exactly one of
// them is not a duplicate (when the first request got an answer); a reused
// key is refused; applied batches' seqs rise with their offsets.
func Check(o *Oracle, answers []Answer) []string {
	var problems []string
	firsts := map[string]int{}
	seqAt := map[int64]uint64{}
	for _, a := range answers {
		want, ok := o.ByKey[a.Key]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("key %s was answered %d but is not in the topic", a.Key, a.Status))
			continue
		case a.Reused:
			if a.Status != 422 {
				problems = append(problems, fmt.Sprintf("key %s reused with another batch: %d, want 422", a.Key, a.Status))
			}
			continue
		}
		r := a.Resp
		wantStatus := 409
		if want.Applied {
			wantStatus = 200
		}
		if a.Status != wantStatus || r.Applied != want.Applied || r.Offset != want.Offset ||
			!want.Applied && (r.Precondition == nil || r.Precondition.Index != want.Failed) {
			problems = append(problems, fmt.Sprintf("key %s: answered %d %+v, the oracle says %+v", a.Key, a.Status, r, want))
			continue
		}
		if !r.Duplicate {
			firsts[a.Key]++
		}
		if r.Applied {
			if s, seen := seqAt[r.Offset]; seen && s != r.Seq {
				problems = append(problems, fmt.Sprintf("key %s: offset %d answered seq %d and %d", a.Key, r.Offset, s, r.Seq))
			}
			seqAt[r.Offset] = r.Seq
		}
	}
	for k, n := range firsts {
		if n > 1 {
			problems = append(problems, fmt.Sprintf("key %s: %d answers are not duplicates, want 1", k, n))
		}
	}
	offs := make([]int64, 0, len(seqAt))
	for off := range seqAt {
		offs = append(offs, off)
	}
	slices.Sort(offs)
	for i := 1; i < len(offs); i++ {
		if seqAt[offs[i]] <= seqAt[offs[i-1]] {
			problems = append(problems, fmt.Sprintf("offset %d got seq %d, offset %d seq %d: seqs do not follow the log", offs[i-1], seqAt[offs[i-1]], offs[i], seqAt[offs[i]]))
		}
	}
	return problems
}

// ReadTopic reads partition 0 of topic from its start to its end.
func ReadTopic(ctx context.Context, brokers []string, topic string, opts ...kgo.Opt) ([]Record, error) {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(brokers...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}})}, opts...)...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err != nil {
		return nil, err
	}
	end, ok := ends.Lookup(topic, 0)
	if !ok || end.Err != nil {
		return nil, fmt.Errorf("the end of %s/0: %w (found %v)", topic, end.Err, ok)
	}
	var recs []Record
	for int64(len(recs)) < end.Offset {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		var ferr error
		fs.EachError(func(_ string, _ int32, err error) { ferr = err })
		if ferr != nil {
			return nil, ferr
		}
		fs.EachRecord(func(r *kgo.Record) {
			rec := Record{Offset: r.Offset, Value: r.Value}
			for _, h := range r.Headers {
				if h.Key == writes.HeaderKey {
					rec.Key = string(h.Value)
				}
			}
			recs = append(recs, rec)
		})
	}
	return recs, nil
}

// RunClients runs clients goroutines, each sending requests random
// batches (RandomRequest on vertices 0 to n-1) with keys of their own; a
// request that gets no answer (an error: the server down, a 503) is sent
// again, with its key, until it gets one or ctx ends. After an answer, a
// request is sometimes sent once more (a retry: the answer must be the
// first's) or its key reused with another batch (422). It returns every
// answer and how many sends got none.
func RunClients(ctx context.Context, c *api.Client, clients, requests int, n uint64, seed uint64) ([]Answer, int) {
	var mu sync.Mutex
	var answers []Answer
	unanswered := 0
	var wg sync.WaitGroup
	for g := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(seed, uint64(g)))
			send := func(req *writes.Request, reused bool) bool {
				for ctx.Err() == nil {
					resp, err := c.PostBatch(ctx, req)
					var se *api.StatusError
					status := 200
					switch {
					case err == nil && !resp.Applied:
						status = 409
					case errors.As(err, &se) && se.Status == 422:
						status = 422
					case err != nil:
						mu.Lock()
						unanswered++
						mu.Unlock()
						time.Sleep(50 * time.Millisecond)
						continue
					}
					mu.Lock()
					answers = append(answers, Answer{Key: req.IdempotencyKey, Reused: reused, Status: status, Resp: resp})
					mu.Unlock()
					return true
				}
				return false
			}
			for i := range requests {
				req := RandomRequest(r, n)
				req.IdempotencyKey = fmt.Sprintf("c%d-%d", g, i)
				if !send(req, false) {
					return
				}
				switch r.IntN(8) {
				case 0, 1:
					if !send(req, false) {
						return
					}
				case 2:
					other := *req
					other.Ops = append(append(json.RawMessage(nil), req.Ops[:len(req.Ops)-1]...), `,{"op":"add","src":0,"dst":0}]`...)
					if !send(&other, true) {
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	return answers, unanswered
}

// RequestOf is the request that produced r (the same batch and key).
func RequestOf(r Record) (*writes.Request, error) {
	ops, conds, err := writes.Parse(r.Value)
	if err != nil {
		return nil, err
	}
	return &writes.Request{Ops: ops, Conditions: conds, IdempotencyKey: r.Key}, nil
}

// Serve runs graphtide serve (package server) with a writes topic until
// stop is called or the test ends: cfg as given, its zero fields filled
// (a new data directory, the embedded broker unless cfg.Kafka names
// brokers, topic "edges", writes topic "writes", HTTP on a free loopback
// port). stop ends Run, checks it returned nil, and closes the server.
func Serve(tb testing.TB, cfg server.Config) (srv *server.Server, stop func()) {
	tb.Helper()
	if cfg.Dir == "" {
		cfg.Dir = tb.TempDir()
	}
	if cfg.Plan.Total == 0 {
		plan, err := budget.Divide(512<<20, budget.Explicit{})
		if err != nil {
			tb.Fatal(err)
		}
		cfg.Plan = plan
	}
	if len(cfg.Topics) == 0 {
		cfg.Topics = []string{"edges"}
	}
	cfg.Group = cmp.Or(cfg.Group, "g")
	cfg.Format = cmp.Or(cfg.Format, decode.FormatBinary)
	cfg.DeadLetterTopic = cmp.Or(cfg.DeadLetterTopic, "dlq")
	cfg.FlushInterval = cmp.Or(cfg.FlushInterval, 50*time.Millisecond)
	cfg.Reset = cmp.Or(cfg.Reset, "earliest")
	cfg.WritesTopic = cmp.Or(cfg.WritesTopic, "writes")
	cfg.WritesRetention = cmp.Or(cfg.WritesRetention, time.Hour)
	cfg.HTTP.Addr = cmp.Or(cfg.HTTP.Addr, "127.0.0.1:0")
	cfg.HTTP.RequestTimeout = cmp.Or(cfg.HTTP.RequestTimeout, 30*time.Second)
	cfg.HTTP.PathBudget = cmp.Or(cfg.HTTP.PathBudget, 1000)
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := server.Open(ctx, cfg)
	if err != nil {
		cancel()
		tb.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				tb.Errorf("serve: %v", err)
			}
			srv.Close()
		})
	}
	tb.Cleanup(stop)
	return srv, stop
}

package graphtide

import (
	"context"
	"crypto/x509"
	"errors"
	"time"

	"github.com/graphtide/graphtide/internal/api"
	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/ingest/decode"
	"github.com/graphtide/graphtide/internal/writes"
)

// Server is a running `graphtide serve`, reached over its HTTP API: the
// durable write of a Go program that does not embed the store. Write
// sends a batch through serve's writes topic (POST /v1/batches): once it
// returns, the batch is applied, visible to reads, and as durable as any
// record of Kafka (a crash of serve replays it), applied exactly once.
// Safe for concurrent use.
type Server struct{ c *api.Client }

// ServerOptions configure Dial. The zero value is fine for a local serve
// without a token.
type ServerOptions struct {
	Token   string         // serve's bearer token, if it has one
	RootCAs *x509.CertPool // verify an https server (default: the system roots)
	Timeout time.Duration  // of each request (default 30s)
}

// Dial returns the serve at url, such as http://127.0.0.1:9464. It does
// not connect until the first call.
func Dial(url string, o *ServerOptions) (*Server, error) {
	var opts ServerOptions
	if o != nil {
		opts = *o
	}
	c, err := api.NewClient(url, api.ClientOptions{Token: opts.Token, RootCAs: opts.RootCAs, Timeout: opts.Timeout})
	if err != nil {
		return nil, err
	}
	return &Server{c: c}, nil
}

// Close releases idle connections.
func (s *Server) Close() { s.c.Close() }

// WriteOptions are the optional parts of a Write.
type WriteOptions struct {
	// IdempotencyKey makes a retry safe: a batch whose key serve has seen
	// (within its --writes-key-retention) is not applied again, and the
	// answer is the first one's outcome (Duplicate).
	IdempotencyKey string
	// Conditions must all hold on the graph the batch applies to, or
	// nothing of it is applied (Applied false, Failed says which).
	Conditions []Condition
}

// WriteResult is the outcome of a Write.
type WriteResult struct {
	Applied bool // the batch was applied (now, or by the first Write of its IdempotencyKey)
	// Seq: applied, the batch's sequence number; refused, the one its
	// conditions were evaluated against.
	Seq uint64
	// Duplicate: the key was seen before; this is the first batch's
	// outcome, and nothing was applied now.
	Duplicate bool
	// Failed names the condition that refused the batch (nil when
	// applied).
	Failed *FailedCondition
	// Partition and Offset of the batch's record in the writes topic.
	Partition int32
	Offset    int64 // see Partition
}

// FailedCondition is the condition that refused a batch.
type FailedCondition struct {
	Index     int    // in WriteOptions.Conditions
	Condition string // as serve read it
	Actual    string // what the graph held instead
}

// Write sends b (vertex ids as the server's sources give them; a key
// vertex is the HTTP API's, see docs/http-api.md) and returns once serve has
// applied it or a condition refused it. An error leaves the outcome
// unknown: retry with the same IdempotencyKey to learn it without
// applying the batch twice.
func (s *Server) Write(ctx context.Context, b *Batch, o WriteOptions) (WriteResult, error) {
	req, err := requestOf(b, o)
	if err != nil {
		return WriteResult{}, err
	}
	r, err := s.c.PostBatch(ctx, req)
	if err != nil {
		return WriteResult{}, err
	}
	out := WriteResult{Applied: r.Applied, Seq: r.Seq, Duplicate: r.Duplicate, Partition: r.Partition, Offset: r.Offset}
	if p := r.Precondition; p != nil {
		out.Failed = &FailedCondition{Index: p.Index, Condition: p.Condition, Actual: p.Actual}
	}
	return out, nil
}

// requestOf is the HTTP request of b and o.
func requestOf(b *Batch, o WriteOptions) (*writes.Request, error) {
	if err := b.b.Err(); err != nil {
		return nil, err
	}
	if b.Len() == 0 {
		return nil, errors.New("graphtide: an empty batch: nothing to write")
	}
	ops := []byte{'['}
	add := func(e decode.Edge) {
		if len(ops) > 1 {
			ops = append(ops, ',')
		}
		ops = decode.AppendJSON(ops, e, "", "")
	}
	b.b.InOrder(func(i int) {
		op := b.b.Op(i)
		e := decode.Edge{Src: op.Src, Dst: op.Dst, Type: op.Type, EventTime: op.Time()}
		switch op.Kind {
		case engine.OpUpsert:
			e.Op, e.Weight, e.HasWeight = decode.OpUpsert, op.Weight, true
			e.EventRef, e.Props = []byte(op.EventRef), []byte(op.Props)
		case engine.OpDeleteEdge:
			e.Op = decode.OpDeleteEdge
		default:
			e.Op, e.Dst = decode.OpDeleteVertex, 0
		}
		add(e)
	}, func(k int) {
		v, rec := b.b.VertexAt(k)
		add(decode.Edge{Op: decode.OpPutVertex, Src: v, Label: []byte(rec.Label), Props: rec.Props})
	})
	ops = append(ops, ']')
	req := &writes.Request{Ops: ops, IdempotencyKey: o.IdempotencyKey}
	for _, c := range o.Conditions {
		req.Conditions = append(req.Conditions, writes.ConditionOf(c.c))
	}
	return req, req.Check()
}

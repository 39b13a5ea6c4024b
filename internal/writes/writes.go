// Package writes is graphtide's own writes topic (issue 15's durable
// writes outside topics): a batch sent over HTTP (POST /v1/batches) is
// produced to that topic and applied by the ingester in log order, like
// every other record, so it has the same exactly-once and crash
// guarantees. A batch may carry preconditions (a conditional batch) and
// an idempotency key.
//
// This package holds what both ends share: the request and its record
// (Request, Encode, Parse), the outcome log that makes outcomes survive
// crashes and retries (Log), and the waiters that hand an outcome to the
// HTTP request that produced it (Waiters).
//
// What it promises:
//   - A record's value is the batch alone; the same request always gives
//     the same value, so its SHA-256 (Fingerprint) tells a retry from a
//     different batch under the same key.
//   - Every keyed or conditional write has its outcome (applied, with
//     its seq; or refused, naming the failed precondition) in the Log,
//     synced, before the batch can become durable in the store: a replay
//     of its record after a crash repeats the outcome instead of
//     evaluating again on a state that may differ (records of other
//     partitions can interleave differently), and a retry with the key
//     gets the first outcome instead of applying again.
package writes

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/graphtide/graphtide/internal/engine"
)

// Record headers of a write.
const (
	// HeaderRequest is a random id of the HTTP request that produced the
	// record: the process that waits for its outcome knows it.
	HeaderRequest = "graphtide-request"
	// HeaderKey is the idempotency key, when the request has one.
	HeaderKey = "graphtide-idempotency-key"
)

// ErrTooLarge is the error of a batch whose record the writes topic refused as too large
// (its max.message.bytes); no retry can succeed.
var ErrTooLarge = errors.New("the batch is larger than the writes topic takes (its max.message.bytes): split it")

// Bounds of one request.
const (
	MaxKeyLen     = 256 // bytes of an idempotency key
	MaxOps        = 10000
	MaxConditions = 100
)

// Condition kinds as requests name them.
const (
	KindEdgeExists   = "edge_exists"
	KindEdgeAbsent   = "edge_absent"
	KindWeightEquals = "weight_equals"
	KindWeightBelow  = "weight_below"
	KindVertexExists = "vertex_exists"
	KindDegreeAtMost = "degree_at_most"
)

// kindInfo pairs a request kind with the engine's, and says what the
// condition takes: an edge (src, dst, type; else a vertex) and a value.
type kindInfo struct {
	name        string
	kind        engine.CondKind
	edge, value bool
}

var kinds = []kindInfo{
	{KindEdgeExists, engine.CondEdgeExists, true, false},
	{KindEdgeAbsent, engine.CondEdgeAbsent, true, false},
	{KindWeightEquals, engine.CondWeightEquals, true, true},
	{KindWeightBelow, engine.CondWeightBelow, true, true},
	{KindVertexExists, engine.CondVertexExists, false, false},
	{KindDegreeAtMost, engine.CondDegreeAtMost, false, true},
}

// kindOf is the kind named name.
func kindOf(name string) (kindInfo, bool) {
	for _, k := range kinds {
		if k.name == name {
			return k, true
		}
	}
	return kindInfo{}, false
}

// EngineKind is the engine's kind of a request's kind name (0: unknown).
func EngineKind(name string) engine.CondKind {
	k, _ := kindOf(name)
	return k.kind
}

// ConditionOf is the request's form of the engine's condition c, its
// vertices and type as numbers (a condition of an unknown kind has none
// of them: Check refuses it).
func ConditionOf(c engine.Condition) Condition {
	num := func(v uint64) json.RawMessage { return strconv.AppendUint(nil, v, 10) }
	for _, k := range kinds {
		if k.kind != c.Kind {
			continue
		}
		out := Condition{Kind: k.name}
		if k.edge {
			out.Src, out.Dst = num(c.Src), num(c.Dst)
			if c.Type != 0 {
				out.Type = num(uint64(c.Type))
			}
		} else {
			out.Vertex = num(c.Src)
		}
		if k.value {
			v := c.Value
			out.Value = &v
		}
		return out
	}
	return Condition{Kind: fmt.Sprintf("engine kind %d", c.Kind)}
}

// Condition is one precondition of a request. Src, Dst and Vertex are
// vertices as in the JSON record format: a JSON integer is an id, a JSON
// string a key. Type is a type name or number (absent: type 0).
type Condition struct {
	Kind   string          `json:"kind"`
	Src    json.RawMessage `json:"src,omitempty"`
	Dst    json.RawMessage `json:"dst,omitempty"`
	Vertex json.RawMessage `json:"vertex,omitempty"`
	Type   json.RawMessage `json:"type,omitempty"`
	Value  *float64        `json:"value,omitempty"`
}

// Request is the body of POST /v1/batches.
type Request struct {
	// Ops are edge operations in the JSON record format (package decode):
	// [{"op":"add","src":1,"dst":2,"weight":0.5,"type":"pay"}, ...].
	Ops json.RawMessage `json:"ops"`
	// Conditions must all hold on the graph the batch applies to, or
	// nothing of it is applied.
	Conditions []Condition `json:"conditions,omitempty"`
	// IdempotencyKey (or the Idempotency-Key header): a retry with the same
	// key and batch applies once and gets the first outcome.
	IdempotencyKey string `json:"idempotency_key,omitempty"`
}

// value is a record's value: the batch without its key.
type value struct {
	Ops        json.RawMessage `json:"ops"`
	Conditions []Condition     `json:"conditions,omitempty"`
}

// Check validates the request's shape (not its ops' contents, which the
// caller checks with a decoder): ops a non-empty JSON array of at most
// MaxOps, known condition kinds with the fields each needs, a key within
// MaxKeyLen.
func (r *Request) Check() error {
	if len(r.IdempotencyKey) > MaxKeyLen {
		return fmt.Errorf("the idempotency key is %d bytes; at most %d", len(r.IdempotencyKey), MaxKeyLen)
	}
	if !utf8.ValidString(r.IdempotencyKey) {
		return errors.New("the idempotency key is not valid UTF-8")
	}
	var ops []json.RawMessage
	if err := json.Unmarshal(r.Ops, &ops); err != nil || len(ops) == 0 {
		return errors.New(`"ops" must be a non-empty array of operations in the JSON record format`)
	}
	if len(ops) > MaxOps {
		return fmt.Errorf("a batch has at most %d ops, got %d", MaxOps, len(ops))
	}
	if len(r.Conditions) > MaxConditions {
		return fmt.Errorf("a batch has at most %d conditions, got %d", MaxConditions, len(r.Conditions))
	}
	for i, c := range r.Conditions {
		if err := c.check(); err != nil {
			return fmt.Errorf("condition %d: %w", i, err)
		}
	}
	return nil
}

func (c *Condition) check() error {
	k, ok := kindOf(c.Kind)
	if !ok {
		names := make([]string, len(kinds))
		for j, k := range kinds {
			names[j] = k.name
		}
		return fmt.Errorf("unknown kind %q: one of %s", c.Kind, strings.Join(names, ", "))
	}
	edge, val := k.edge, k.value
	if edge {
		if c.Src == nil || c.Dst == nil || c.Vertex != nil {
			return fmt.Errorf("%s takes src and dst (and no vertex)", c.Kind)
		}
	} else if c.Vertex == nil || c.Src != nil || c.Dst != nil || c.Type != nil {
		return fmt.Errorf("%s takes vertex (and no src, dst or type)", c.Kind)
	}
	if val != (c.Value != nil) {
		if val {
			return fmt.Errorf("%s takes a value", c.Kind)
		}
		return fmt.Errorf("%s takes no value", c.Kind)
	}
	for _, v := range []json.RawMessage{c.Src, c.Dst, c.Vertex} {
		if v != nil {
			if _, _, err := ParseVertex(v); err != nil {
				return err
			}
		}
	}
	if c.Type != nil {
		if _, _, err := ParseType(c.Type); err != nil {
			return err
		}
	}
	return nil
}

// ParseVertex reads a vertex as the JSON record format gives it: an id
// (plain digits) or a key (a JSON string, always a key).
func ParseVertex(v json.RawMessage) (id uint64, key string, err error) {
	v = bytes.TrimSpace(v)
	if len(v) > 0 && v[0] == '"' {
		if err := json.Unmarshal(v, &key); err != nil || key == "" {
			return 0, "", fmt.Errorf("vertex %s is not a non-empty JSON string", v)
		}
		return 0, key, nil
	}
	id, err = strconv.ParseUint(string(v), 10, 64)
	if err != nil {
		return 0, "", fmt.Errorf("vertex %s is neither an unsigned integer nor a string key", v)
	}
	if id > engine.MaxVertex {
		return 0, "", fmt.Errorf("vertex id %d is above the largest allowed, %d", id, uint64(engine.MaxVertex))
	}
	return id, "", nil
}

// ParseType reads an edge type: a name (a JSON string) or a number.
func ParseType(v json.RawMessage) (num uint16, name string, err error) {
	v = bytes.TrimSpace(v)
	if len(v) > 0 && v[0] == '"' {
		if err := json.Unmarshal(v, &name); err != nil || name == "" {
			return 0, "", fmt.Errorf("type %s is not a non-empty JSON string", v)
		}
		return 0, name, nil
	}
	n, err := strconv.ParseUint(string(v), 10, 16)
	if err != nil || n >= uint64(engine.MaxEdgeTypes) {
		return 0, "", fmt.Errorf("type %s is neither a name nor a number below %d", v, engine.MaxEdgeTypes)
	}
	return uint16(n), "", nil
}

// Encode is the record value of r (after Check): compact JSON of its ops
// and conditions, the key left out (it goes in HeaderKey).
func Encode(r *Request) ([]byte, error) {
	var ops bytes.Buffer
	if err := json.Compact(&ops, r.Ops); err != nil {
		return nil, err
	}
	cs := make([]Condition, len(r.Conditions))
	for i, c := range r.Conditions {
		cs[i] = c
		for _, f := range []*json.RawMessage{&cs[i].Src, &cs[i].Dst, &cs[i].Vertex, &cs[i].Type} {
			if *f != nil {
				var b bytes.Buffer
				if err := json.Compact(&b, *f); err != nil {
					return nil, err
				}
				*f = b.Bytes()
			}
		}
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false) // '<' stays one byte: a record is no larger than its request
	if err := enc.Encode(value{Ops: ops.Bytes(), Conditions: cs}); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(out.Bytes(), []byte("\n")), nil
}

// Parse reads a record value: its ops (the JSON array, for a decoder)
// and conditions. Any error is the record's fault (a dead letter).
func Parse(b []byte) (ops json.RawMessage, conds []Condition, err error) {
	var v value
	if err := decodeOne(b, &v); err != nil {
		return nil, nil, fmt.Errorf("writes: not a batch: %w", err)
	}
	r := Request{Ops: v.Ops, Conditions: v.Conditions}
	if err := r.Check(); err != nil {
		return nil, nil, fmt.Errorf("writes: %w", err)
	}
	return v.Ops, v.Conditions, nil
}

// ErrTrailingData is the error of a body or value with data after its JSON object.
var ErrTrailingData = errors.New("data after the object")

// DecodeRequest reads a request body: one JSON object of a Request's
// fields only (not yet checked: see Check).
func DecodeRequest(b []byte) (*Request, error) {
	var r Request
	if err := decodeOne(b, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// decodeOne decodes b, one JSON object with only v's fields, into v.
func decodeOne(b []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return err
	}
	if d.More() {
		return ErrTrailingData
	}
	return nil
}

// Fingerprint identifies a record value: equal values, equal prints.
func Fingerprint(value []byte) [16]byte {
	s := sha256.Sum256(value)
	var f [16]byte
	copy(f[:], s[:])
	return f
}

// MaxBatchBytes is the most a batch may take as JSON: serve's request
// limit.
const MaxBatchBytes = 1 << 20

// ReadBatch reads a batch as `graphtide write` takes it, from r (named
// name in errors): a request object, or a bare list of ops; key, if not
// empty, is its idempotency key (a batch's own must then be the same).
// The batch is checked (Check).
func ReadBatch(r io.Reader, name, key string) (*Request, error) {
	raw, err := io.ReadAll(io.LimitReader(r, MaxBatchBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", name, err)
	}
	if len(raw) > MaxBatchBytes {
		return nil, fmt.Errorf("%s: a batch is at most 1 MiB (serve's request limit)", name)
	}
	req, err := parseBatch(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if key != "" {
		if req.IdempotencyKey != "" && req.IdempotencyKey != key {
			return nil, errors.New("--idempotency-key and the batch's idempotency_key differ: give one")
		}
		req.IdempotencyKey = key
	}
	if err := req.Check(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return req, nil
}

// parseBatch reads a batch: a request object, or a bare list of ops.
func parseBatch(raw []byte) (*Request, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '[' {
		return &Request{Ops: raw}, nil
	}
	req, err := DecodeRequest(raw)
	switch {
	case errors.Is(err, ErrTrailingData):
		return nil, errors.New("data after the batch")
	case err != nil:
		return nil, fmt.Errorf(`a batch is a JSON list of operations or an object {"ops": [...], "conditions": [...]}: %w`, err)
	case strings.TrimSpace(string(req.Ops)) == "":
		return nil, errors.New(`the batch has no "ops"`)
	}
	return req, nil
}

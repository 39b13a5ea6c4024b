package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/graphtide/graphtide/internal/ingest/decode"
	"github.com/graphtide/graphtide/internal/keydict"
	"github.com/graphtide/graphtide/internal/typedict"
	"github.com/graphtide/graphtide/internal/writes"
)

// Writer sends a batch through graphtide's writes topic and waits until
// it is applied (serve's, see package writes). An error is the topic's or
// the deadline's: the batch may or may not have been applied.
type Writer interface {
	Submit(ctx context.Context, r *writes.Request) (writes.Result, error)
}

// BatchResponse is the answer to POST /v1/batches, applied (200) or
// refused by a precondition (409).
type BatchResponse struct {
	Applied bool `json:"applied"`
	// Seq: applied, the batch's sequence number (read as_of_seq it or
	// later to see it); refused, the seq its conditions were evaluated
	// against.
	Seq uint64 `json:"seq"`
	// Duplicate: the idempotency key was seen before; this is the first
	// write's outcome, and nothing was applied now.
	Duplicate bool `json:"duplicate,omitempty"`
	// Partition and Offset of the record that decided the outcome in the
	// writes topic: this request's, or for a duplicate its key's first.
	Partition int32 `json:"partition"`
	Offset    int64 `json:"offset"`
	// Error and Precondition: the condition that failed (409 only).
	Error        string        `json:"error,omitempty"`
	Precondition *Precondition `json:"precondition,omitempty"`
}

// WriteText writes the outcome as `graphtide write` prints it.
func (r BatchResponse) WriteText(w io.Writer) {
	dup := ""
	if r.Duplicate {
		dup = " (a retry: the first batch with this key)"
	}
	if r.Applied {
		fmt.Fprintf(w, "applied at seq %d%s; writes topic partition %d, offset %d\n", r.Seq, dup, r.Partition, r.Offset)
	} else {
		fmt.Fprintf(w, "refused%s: %s\n", dup, r.Error)
	}
}

// Precondition names the condition that refused a batch.
type Precondition struct {
	Index     int    `json:"index"`
	Condition string `json:"condition"`
	Actual    string `json:"actual"`
	Seq       uint64 `json:"seq"`
}

// checkOnly resolves every key and type name to 0 without assigning
// anything: a decoder with it checks a batch's ops as ingestion will
// decode them (only a key or type dictionary that fails could refuse
// them then).
type checkOnly struct{ keys bool }

func (c checkOnly) ID(string) (uint64, error) {
	if !c.keys {
		return 0, errors.New("this store has no string keys: give vertex ids as numbers")
	}
	return 0, nil
}

type checkTypes struct{}

func (checkTypes) ID(name string) (uint16, error) {
	if why := typedict.NameReason(name); why != "" {
		return 0, &typedict.NameError{Reason: why}
	}
	return 0, nil
}

// batches is POST /v1/batches.
func (s *Server) batches(w http.ResponseWriter, r *http.Request) error {
	if _, err := params(r); err != nil {
		return err
	}
	if s.cfg.Writes == nil {
		return errorf(http.StatusNotFound, "writes are off: serve runs with an empty --writes-topic")
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.Limits.MaxBodyBytes))
	if err != nil {
		return err
	}
	req, err := writes.DecodeRequest(body)
	switch {
	case errors.Is(err, writes.ErrTrailingData):
		return errorf(http.StatusBadRequest, "body must hold one JSON object, and nothing after it")
	case err != nil:
		return errorf(http.StatusBadRequest, `body must be one batch as a JSON object {"ops": [...], "conditions": [...]}: %v`, err)
	}
	if h := r.Header.Get("Idempotency-Key"); len(h) > writes.MaxKeyLen {
		return tooLong(http.StatusBadRequest, "the Idempotency-Key header", len(h), writes.MaxKeyLen)
	}
	if err := checkBatchLengths(req); err != nil {
		return err
	}
	if h := r.Header.Get("Idempotency-Key"); h != "" {
		if req.IdempotencyKey != "" && req.IdempotencyKey != h {
			return errorf(http.StatusBadRequest, "the Idempotency-Key header and the body's idempotency_key differ: give one")
		}
		req.IdempotencyKey = h
	}
	if err := req.Check(); err != nil {
		return errorf(http.StatusBadRequest, "%v", err)
	}
	var keys decode.KeyResolver = checkOnly{keys: s.cfg.Dict != nil}
	if err := decode.New(decode.FormatJSON, decode.WithTypes(keys, checkTypes{})).Decode(req.Ops, func(decode.Edge) {}); err != nil {
		return errorf(http.StatusBadRequest, "ops: %v", err)
	}
	for i, c := range req.Conditions {
		for _, v := range [][]byte{c.Src, c.Dst, c.Vertex} {
			if id, _, err := writes.ParseVertex(v); v != nil && err == nil && s.cfg.Dict != nil && id >= keydict.KeyBase {
				return errorf(http.StatusBadRequest, "condition %d: vertex id %d is in the range of string keys (from %d)", i, id, uint64(keydict.KeyBase))
			}
		}
	}
	res, err := s.cfg.Writes.Submit(r.Context(), req)
	switch {
	case errors.Is(err, writes.ErrTooLarge):
		return errorf(http.StatusRequestEntityTooLarge, "%v", err)
	case err != nil:
		return errorf(http.StatusServiceUnavailable, "%v", err)
	}
	switch {
	case res.Err != "":
		return errorf(http.StatusUnprocessableEntity, "the batch could not be applied (it went to the dead letters): %s", res.Err)
	case res.Mismatch:
		return errorf(http.StatusUnprocessableEntity, "the idempotency key %q was used by another batch (partition %d, offset %d): use a new key for a new batch",
			req.IdempotencyKey, res.Partition, res.Offset)
	}
	out := BatchResponse{Applied: res.Applied, Seq: res.Seq, Duplicate: res.Duplicate, Partition: res.Partition, Offset: res.Offset}
	if res.Applied {
		writeJSON(w, http.StatusOK, out)
		return nil
	}
	out.Precondition = &Precondition{Index: res.Index, Condition: res.Condition, Actual: res.Actual, Seq: res.Seq}
	out.Error = fmt.Sprintf("precondition %d (%s) failed as of seq %d: %s; nothing was applied", res.Index, res.Condition, res.Seq, res.Actual)
	writeJSON(w, http.StatusConflict, out)
	return nil
}

// BatchLimits is the most bytes of each string of a POST /v1/batches
// body, by its JSON name ("conditions[].src": a condition's). A vertex's
// and a type's is of the string a JSON string holds (a key, a name); a
// number is shorter. The ops' strings are the JSON record format's, which
// its decoder bounds (keys, type names, labels, props) before the batch
// goes anywhere.
var BatchLimits = map[string]int{
	"idempotency_key":   writes.MaxKeyLen,
	"conditions[].kind": MaxParamBytes, "conditions[].src": keydict.MaxKeyLen, "conditions[].dst": keydict.MaxKeyLen,
	"conditions[].vertex": keydict.MaxKeyLen, "conditions[].type": typedict.MaxNameLen,
}

// checkBatchLengths refuses a string of the batch longer than its bound
// (BatchLimits), before anything parses or echoes it.
func checkBatchLengths(req *writes.Request) error {
	if n := len(req.IdempotencyKey); n > BatchLimits["idempotency_key"] {
		return tooLong(http.StatusBadRequest, "idempotency_key", n, BatchLimits["idempotency_key"])
	}
	for i, c := range req.Conditions {
		if n, most := len(c.Kind), BatchLimits["conditions[].kind"]; n > most {
			return tooLong(http.StatusBadRequest, fmt.Sprintf("condition %d: kind", i), n, most)
		}
		for _, f := range []struct {
			name string
			raw  json.RawMessage
		}{{"src", c.Src}, {"dst", c.Dst}, {"vertex", c.Vertex}, {"type", c.Type}} {
			most := BatchLimits["conditions[]."+f.name]
			// A JSON string of most bytes takes at most 6 bytes a byte
			// (\u escapes) and its quotes.
			n := len(f.raw)
			if n <= 6*most+2 {
				var str string
				if json.Unmarshal(f.raw, &str) != nil {
					continue // not a string: Check reads it
				}
				n = len(str)
			}
			if n > most {
				return tooLong(http.StatusBadRequest, fmt.Sprintf("condition %d: %s", i, f.name), n, most)
			}
		}
	}
	return nil
}

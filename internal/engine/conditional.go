package engine

import (
	"errors"
	"fmt"
	"strconv"
)

// Conditional batches (issue 15's read-write transactions): a batch with
// preconditions on the graph it applies to. ApplyIf evaluates them on the
// store as of the newest batch, with the store's one writer lock held
// from the evaluation to the apply, so no batch lands in between: every
// conditional batch is serializable with every other batch, in the order
// of their sequence numbers (one applier executes them all in that
// order). If a condition fails, nothing of the batch is applied.

// CondKind is what a Condition asks of the graph.
type CondKind uint8

const (
	// CondEdgeExists holds when the edge (Src, Dst, Type) is there.
	CondEdgeExists CondKind = iota + 1
	// CondEdgeAbsent holds when it is not.
	CondEdgeAbsent
	// CondWeightEquals holds when it is there with weight Value.
	CondWeightEquals
	// CondWeightBelow holds when it is there with a weight below Value.
	CondWeightBelow
	// CondVertexExists holds when Src has a vertex record or an edge, out
	// or (in a store that keeps in-edges) in (Snapshot.VertexExists).
	CondVertexExists
	// CondDegreeAtMost holds when Src has at most Value out-edges (of
	// every type).
	CondDegreeAtMost
)

// Condition is one precondition of ApplyIf.
type Condition struct {
	Kind     CondKind
	Src, Dst uint64
	Type     uint16
	Value    float64
}

func (c Condition) String() string {
	edge := fmt.Sprintf("(%d, %d, type %d)", c.Src, c.Dst, c.Type)
	switch c.Kind {
	case CondEdgeExists:
		return "edge " + edge + " exists"
	case CondEdgeAbsent:
		return "edge " + edge + " is absent"
	case CondWeightEquals:
		return "edge " + edge + " has weight " + strconv.FormatFloat(c.Value, 'g', -1, 64)
	case CondWeightBelow:
		return "edge " + edge + " has a weight below " + strconv.FormatFloat(c.Value, 'g', -1, 64)
	case CondVertexExists:
		return fmt.Sprintf("vertex %d exists", c.Src)
	case CondDegreeAtMost:
		return fmt.Sprintf("vertex %d has at most %v out-edges", c.Src, c.Value)
	}
	return fmt.Sprintf("condition kind %d", c.Kind)
}

// PreconditionError is ApplyIf's error when a condition does not hold:
// the batch was not applied. Seq is the newest batch the conditions were
// evaluated against.
type PreconditionError struct {
	Index  int // of the condition that failed
	Cond   Condition
	Actual string // what the store holds instead
	Seq    uint64
}

func (e *PreconditionError) Error() string {
	return fmt.Sprintf("engine: precondition %d (%s) failed as of seq %d: %s", e.Index, e.Cond, e.Seq, e.Actual)
}

// ApplyIf applies b atomically if every condition holds on the store as
// of the newest batch, and returns its sequence number; otherwise it
// applies nothing and returns a *PreconditionError naming the first that
// failed. See the top of this file for the isolation it gives.
func (s *Store) ApplyIf(b *Batch, conds []Condition) (uint64, error) {
	return s.ApplyIfThen(b, conds, nil)
}

// validConditions checks each condition's kind and type.
func validConditions(conds []Condition) error {
	for i, c := range conds {
		if c.Kind < CondEdgeExists || c.Kind > CondDegreeAtMost {
			return fmt.Errorf("%w: condition %d has an unknown kind %d", ErrInvalid, i, c.Kind)
		}
		if int(c.Type) >= MaxEdgeTypes {
			return fmt.Errorf("%w: condition %d: edge type %d is not below %d", ErrInvalid, i, c.Type, MaxEdgeTypes)
		}
	}
	return nil
}

// ApplyIfThen is ApplyIf with a step between the evaluation and the
// apply: before (when not nil) is called with the outcome, the sequence
// number the batch is about to get (next) or the *PreconditionError that
// refuses it (perr), while no other batch can apply. If before fails,
// nothing is applied and its error is returned. The writes topic records
// each conditional batch's outcome there (synced before the batch can
// become durable), so that a replay repeats it.
func (s *Store) ApplyIfThen(b *Batch, conds []Condition, before func(next uint64, perr *PreconditionError) error) (uint64, error) {
	if b.err != nil {
		return 0, b.err
	}
	if err := validConditions(conds); err != nil {
		return 0, err
	}
	s.applyMu.Lock()
	defer s.applyMu.Unlock()
	// With applyMu held no batch applies until this one: the snapshot is of
	// the state the batch applies to, and its seq plus one is the seq the
	// batch gets (the core numbers batches one by one, all under applyMu).
	newest, err := s.check(conds)
	var perr *PreconditionError
	if err != nil && !errors.As(err, &perr) {
		return 0, err
	}
	if before != nil {
		if berr := before(newest+1, perr); berr != nil {
			return 0, berr
		}
	}
	if perr != nil {
		return 0, perr
	}
	return s.applyLocked(b)
}

// check evaluates conds on a snapshot of the newest batch and returns
// that batch's seq: the error is nil when all hold, else a
// *PreconditionError (or the error of a read).
func (s *Store) check(conds []Condition) (uint64, error) {
	sn, err := s.Snapshot()
	if err != nil {
		return 0, err
	}
	defer sn.Release()
	for i, c := range conds {
		actual, ok, err := s.holds(sn, c)
		if err != nil {
			return 0, err
		}
		if !ok {
			return sn.Seq(), &PreconditionError{Index: i, Cond: c, Actual: actual, Seq: sn.Seq()}
		}
	}
	return sn.Seq(), nil
}

// holds evaluates c on sn: whether it holds, and if not what sn holds.
func (s *Store) holds(sn *Snapshot, c Condition) (string, bool, error) {
	switch c.Kind {
	case CondVertexExists:
		ok, err := sn.VertexExists(c.Src)
		return "it has no record and no edge", ok, err
	case CondDegreeAtMost:
		d, err := sn.Degree(c.Src, Out)
		if err != nil {
			return "", false, err
		}
		return fmt.Sprintf("its out-degree is %d", d), float64(d) <= c.Value, nil
	}
	cols, err := sn.Edge(c.Src, c.Dst)
	if err != nil {
		return "", false, err
	}
	w, there := 0.0, false
	for i, t := range cols.Types {
		if t == c.Type {
			w, there = cols.Weights[i], true
		}
	}
	switch c.Kind {
	case CondEdgeExists:
		return "it is absent", there, nil
	case CondEdgeAbsent:
		return "it exists", !there, nil
	}
	if !there {
		return "it is absent", false, nil
	}
	actual := "its weight is " + strconv.FormatFloat(w, 'g', -1, 64)
	if c.Kind == CondWeightEquals {
		return actual, w == c.Value, nil
	}
	return actual, w < c.Value, nil
}

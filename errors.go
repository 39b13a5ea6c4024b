package graphtide

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/keydict"
	"github.com/graphtide/graphtide/internal/views/analytics"
)

// The errors a caller branches on. Every error of this package that means
// one of them matches it with errors.Is, whatever its message adds (which
// vertex, which setting, what to do).
var (
	// ErrInvalid: an argument was refused (a batch's vertex id, label or
	// properties, a key, an analytic's option, a seq to read at). Nothing
	// was changed.
	ErrInvalid = errors.New("graphtide: invalid argument")
	// ErrLocked: Open found the data directory open in another process
	// (a serve, a load) or another DB of this one.
	ErrLocked = errors.New("graphtide: the data directory is in use")
	// ErrUnknownAnalytic: no analytic of that name is registered.
	ErrUnknownAnalytic = errors.New("graphtide: no analytic of that name")
	// ErrAnalyticExists: Register or RegisterAnalytic was given a name
	// already registered.
	ErrAnalyticExists = errors.New("graphtide: an analytic of that name is registered")
)

// PreconditionError is ApplyIf's error when a condition does not hold:
// nothing of the batch was applied. It matches ErrInvalid too.
type PreconditionError struct {
	// Index is the failed condition's place in ApplyIf's list (from 0).
	Index int
	// Condition says what the condition asked, its vertices by their
	// keys when they have keys: `edge ("alice", "bob", type default)
	// is absent`.
	Condition string
	// Actual says what the graph held instead: "it exists", "its weight
	// is 150", "its out-degree is 3".
	Actual string
	// Seq is the sequence number of the newest batch the conditions were
	// evaluated against.
	Seq uint64
}

func (e *PreconditionError) Error() string {
	return fmt.Sprintf("precondition %d failed as of seq %d: %s, but %s; nothing of the batch was applied: read the graph again and retry with conditions that hold",
		e.Index, e.Seq, e.Condition, e.Actual)
}

// Is makes a *PreconditionError match ErrInvalid.
func (e *PreconditionError) Is(target error) bool { return target == ErrInvalid }

// SeqError is SnapshotAt's error for a seq it cannot read: above the
// newest (Seq > Newest), or below the oldest readable one (Seq < Oldest:
// Options.HistorySeqs let it go, or the store keeps no history). It
// matches ErrInvalid too.
type SeqError struct {
	Seq    uint64 // the seq asked for
	Oldest uint64 // the oldest seq the store can read now
	Newest uint64 // the newest seq applied
}

func (e *SeqError) Error() string {
	if e.Seq > e.Newest {
		return fmt.Sprintf("seq %d is not applied yet: the newest is %d; read at a seq from %d to %d, or take DB.Snapshot",
			e.Seq, e.Newest, e.Oldest, e.Newest)
	}
	return fmt.Sprintf("seq %d is no longer readable: the store reads seqs %d to %d; open it with a larger Options.HistorySeqs to keep more",
		e.Seq, e.Oldest, e.Newest)
}

// Is makes a *SeqError match ErrInvalid.
func (e *SeqError) Is(target error) bool { return target == ErrInvalid }

// CorruptionError is a damaged file of the data directory, found by Open
// or a read: a checksum or format failure. The message says how to list
// and repair the damage (graphtide inspect --verify, graphtide repair).
type CorruptionError struct {
	File   string // the path of the damaged file
	Offset uint64 // the byte offset of the damaged block or record
	Reason string // what is wrong there
	msg    string
}

func (e *CorruptionError) Error() string { return e.msg }

// OptionError is Register's refusal of an analytic's option, the same for
// the typed options (BFS, FanIn, ...) and for a Spec: the message names
// the analytic, the option, its value and the allowed range. It matches
// ErrInvalid too.
type OptionError struct {
	// Option is the option as a Spec names it: "batch_size", "window",
	// "threshold", "root"; "" when a Spec is not key=value pairs.
	Option string
	// Field is the field of the typed options that sets it: "BatchSize",
	// "Window", "Threshold", "Root"; "" for "type" (the options' Go type)
	// and for "stale" (no field).
	Field string
	msg   string
	cause error
}

func (e *OptionError) Error() string { return e.msg }

// Is makes an *OptionError match ErrInvalid.
func (e *OptionError) Is(target error) bool { return target == ErrInvalid }

// Unwrap is the cause, when another error is (a root key the key
// dictionary refused).
func (e *OptionError) Unwrap() error { return e.cause }

// fieldOf is the typed options' field of each spec key.
var fieldOf = map[string]string{
	"name": "Name", "root": "Root", "types": "Types", "batch_size": "BatchSize", "interval": "Interval",
	"max_behind": "MaxBehind", "damping": "Damping", "tolerance": "Tolerance", "max_iterations": "MaxIterations",
	"threshold": "Threshold", "direction": "Direction", "window_edges": "WindowEdges", "window": "Window",
	"max_span": "MaxSpan", "ring_search": "RingSearch", "min_ratio": "MinRatio",
	"lateness": "Lateness", "max_cycle": "MaxCycle", "search_budget": "SearchBudget", "pull_timeout": "PullTimeout",
	"pull_memory_mib": "PullMemoryMiB",
	"measure":         "Measure", "evidence": "Evidence", "mule_senders": "MuleSenders", "mule_receivers": "MuleReceivers",
}

// publicError is an error of an internal package as this package gives
// it: its message without the internal packages' prefixes, its vertices
// by their keys, and the sentinel of this package it means.
type publicError struct {
	msg   string
	is    error // one of this package's sentinels, or nil
	cause error
}

func (e *publicError) Error() string { return e.msg }

func (e *publicError) Unwrap() []error {
	if e.is == nil {
		return []error{e.cause}
	}
	return []error{e.is, e.cause}
}

// internalPrefix matches the prefixes internal packages put on their
// errors, which name nothing a user of this package knows.
var internalPrefix = regexp.MustCompile(`\b(engine|datadir|analytics|keydict|typedict|views): (invalid argument: )?`)

// vertexID matches a vertex id in an internal message.
var vertexID = regexp.MustCompile(`\bvertex (\d+)`)

// namer names vertices and edge types in messages; its fields may be nil
// (then ids and type numbers stand).
type namer struct {
	key      func(id uint64) (string, bool)
	typeName func(t uint16) string
}

// ours reports whether err is already an error of this package.
func ours(err error) bool {
	var (
		p *PreconditionError
		s *SeqError
		c *CorruptionError
		o *OptionError
		e *publicError
	)
	return errors.Is(err, ErrClosed) || errors.Is(err, ErrStreamLost) || errors.Is(err, ErrNoInEdges) ||
		errors.As(err, &p) || errors.As(err, &s) || errors.As(err, &c) || errors.As(err, &o) || errors.As(err, &e)
}

// publicErr is err as this package gives it (see publicError), naming
// vertices and types with n. Errors of this package pass as they are.
func publicErr(err error, n namer) error {
	if err == nil || ours(err) {
		return err
	}
	var (
		perr *engine.PreconditionError
		serr *engine.SeqError
		cerr *engine.CorruptionError
		oerr *analytics.SettingError
	)
	key := n.key
	switch {
	case errors.As(err, &perr):
		return &PreconditionError{Index: perr.Index, Condition: n.describe(perr.Cond), Actual: perr.Actual, Seq: perr.Seq}
	case errors.As(err, &serr):
		return &SeqError{Seq: serr.Seq, Oldest: serr.Oldest, Newest: serr.Newest}
	case errors.As(err, &cerr):
		return &CorruptionError{File: cerr.File, Offset: cerr.Offset, Reason: cerr.Reason, msg: clean(err.Error(), key)}
	case errors.As(err, &oerr):
		return &OptionError{Option: oerr.Key, Field: fieldOf[oerr.Key], msg: clean(oerr.Msg, key), cause: oerr.Err}
	}
	e := &publicError{msg: clean(err.Error(), key), cause: err}
	switch {
	case errors.Is(err, engine.ErrClosed):
		e.is = ErrClosed
	case errors.Is(err, engine.ErrLocked):
		e.is = ErrLocked
	case errors.Is(err, engine.ErrInvalid), errors.Is(err, keydict.ErrInvalidKey):
		e.is = ErrInvalid
	case errors.Is(err, analytics.ErrNotFound):
		e.is = ErrUnknownAnalytic
		e.msg = strings.Replace(e.msg, "no analytic of that name: ", "no analytic of that name is registered: ", 1) +
			": register it first (DB.Register, DB.RegisterAnalytic), or use the name Register returned"
	case errors.Is(err, analytics.ErrExists):
		e.is = ErrAnalyticExists
		e.msg += ": give the new one another Name, or Unregister the old one first"
	}
	return e
}

// clean takes the internal prefixes out of msg and names each vertex that
// has a key by its key.
func clean(msg string, key func(uint64) (string, bool)) string {
	msg = internalPrefix.ReplaceAllString(msg, "")
	if key == nil {
		return msg
	}
	return vertexID.ReplaceAllStringFunc(msg, func(m string) string {
		id, err := strconv.ParseUint(m[len("vertex "):], 10, 64)
		if err != nil || !keydict.IsKeyID(id) {
			return m
		}
		if k, ok := key(id); ok {
			return "vertex " + strconv.Quote(k)
		}
		return m
	})
}

// describe says what c asks, naming its vertices by their keys and its
// type by its name.
func (n namer) describe(c engine.Condition) string {
	name := func(v uint64) string {
		if n.key != nil && keydict.IsKeyID(v) {
			if k, ok := n.key(v); ok {
				return strconv.Quote(k)
			}
		}
		return strconv.FormatUint(v, 10)
	}
	typ := strconv.Itoa(int(c.Type))
	if n.typeName != nil {
		typ = n.typeName(c.Type)
	}
	edge := fmt.Sprintf("edge (%s, %s, type %s)", name(c.Src), name(c.Dst), typ)
	num := func(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }
	switch c.Kind {
	case engine.CondEdgeExists:
		return edge + " exists"
	case engine.CondEdgeAbsent:
		return edge + " is absent"
	case engine.CondWeightEquals:
		return edge + " has weight " + num(c.Value)
	case engine.CondWeightBelow:
		return edge + " has a weight below " + num(c.Value)
	case engine.CondVertexExists:
		return "vertex " + name(c.Src) + " exists"
	case engine.CondDegreeAtMost:
		return "vertex " + name(c.Src) + " has at most " + num(c.Value) + " out-edges"
	}
	return c.String()
}

// err is publicErr naming vertices by the keys of db's dictionary.
func (db *DB) err(err error) error {
	return publicErr(err, namer{key: db.dir.Keys.Key, typeName: db.dir.Types.Name})
}

// Package typedict names edge types. The store keeps an edge's type as a
// number (0 to engine.MaxEdgeTypes-1); this dictionary, the data
// directory's types.json, gives the numbers names (payment, login,
// shares-device) so that records, queries and analytics can use names.
//
// What it promises:
//
//   - Type 0 is the default type, the type of every edge whose record names
//     none; its name is "default" and it is always there. Named types get
//     the numbers 1, 2, ... in the order they are first seen, at most
//     engine.MaxEdgeTypes-1 of them.
//   - A name's number is durable before ID returns it (the file is
//     replaced atomically and fsynced: package durable), so no edge of the
//     store ever has a number the dictionary lost, and a name keeps its
//     number forever.
//   - A name is 1 to MaxNameLen bytes of valid UTF-8 without control
//     characters, commas or '|' (they separate types in lists), and not
//     only digits (a number in a record or a filter is the type number
//     itself).
//   - Open refuses, with a *CorruptError naming the file and a byte offset,
//     a file that breaks these rules, whose CRC-32C of the names does not
//     match, or that differs in any byte from what this package writes for
//     its names (so no damaged byte goes unnoticed); OpenReadOnly never
//     writes.
//   - Len counts the names; the data directory records it with every
//     flush of the store (internal/datadir's claims), so that a deleted
//     or older types.json, whose next new name would take a lost name's
//     number and its edges, is refused there.
//   - Safe for concurrent use.
package typedict

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unicode"
	"unicode/utf8"

	"github.com/graphtide/graphtide/internal/durable"
	"github.com/graphtide/graphtide/internal/engine"
)

// MaxTypes is the number of edge types: names and numbers 0 to MaxTypes-1.
const MaxTypes = engine.MaxEdgeTypes

// MaxNameLen is the longest type name, in bytes.
const MaxNameLen = 64

// Default is the name of type 0.
const Default = "default"

// fileFormat is the version of types.json this package writes and reads.
const fileFormat = 1

// file is types.json: Types[i] names type i (Types[0] is Default), and
// CRC32C is the CRC-32C of the JSON of Types.
type file struct {
	Format int      `json:"format"`
	Types  []string `json:"types"`
	CRC32C uint32   `json:"crc32c"`
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// checksum is the CRC-32C of the JSON of names.
func checksum(names []string) uint32 {
	b, _ := json.Marshal(names) // strings always marshal
	return crc32.Checksum(b, castagnoli)
}

// encode is the file for names, byte for byte: what ID writes, and the
// only bytes open accepts for them.
func encode(names []string) []byte {
	b, _ := json.Marshal(file{Format: fileFormat, Types: names, CRC32C: checksum(names)}) // plain fields always marshal
	return append(b, '\n')
}

// CorruptError is a type dictionary file that is not one graphtide wrote:
// what is wrong, and the byte offset where it was found (0 when it is the
// file as a whole); its Kind is "typedict".
type CorruptError = durable.CorruptError

// Dict is the type dictionary of one data directory.
type Dict struct {
	path     string
	readOnly bool

	mu     sync.RWMutex
	names  []string          // names[t] names type t; Protected by mu.
	byName map[string]uint16 // Protected by mu.
	// n is len(names), for Len without the lock (ID holds it while it
	// writes the file).
	n atomic.Int32
}

// Open opens the dictionary at path for reading and adding names; a
// missing file is an empty dictionary (created by the first new name).
// The caller keeps other writers out (datadir opens it under the store's
// LOCK).
func Open(path string) (*Dict, error) { return open(path, false) }

// OpenReadOnly opens the dictionary without ever writing: ID of a new name
// is an error.
func OpenReadOnly(path string) (*Dict, error) { return open(path, true) }

func open(path string, readOnly bool) (*Dict, error) {
	d := &Dict{path: path, readOnly: readOnly, names: []string{Default}, byName: map[string]uint16{Default: 0}}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return d, nil
	}
	if err != nil {
		return nil, fmt.Errorf("typedict: %w", err)
	}
	if off, what := d.parse(b); what != "" {
		return nil, &CorruptError{Kind: "typedict", File: path, Offset: off, What: what}
	}
	d.n.Store(int32(len(d.names)))
	return d, nil
}

// Len is the number of types with a name, type 0 (Default) included: 1
// while the file does not exist. It only grows, and a number it counts
// is durable.
func (d *Dict) Len() int {
	if d == nil {
		return 1
	}
	if n := int(d.n.Load()); n > 0 {
		return n
	}
	return 1
}

// parse loads the file's bytes, checking every rule, its checksum and that
// they are the bytes encode writes; it says what is wrong and where, or
// "".
func (d *Dict) parse(b []byte) (int64, string) {
	var f file
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		off := dec.InputOffset()
		var se *json.SyntaxError
		if errors.As(err, &se) {
			off = se.Offset
		}
		return off, fmt.Sprintf("not a type dictionary: %v", err)
	}
	if f.Format != fileFormat {
		return 0, fmt.Sprintf("format %d: this build reads format %d", f.Format, fileFormat)
	}
	if len(f.Types) == 0 || f.Types[0] != Default {
		return 0, fmt.Sprintf("type 0 must be %q", Default)
	}
	if len(f.Types) > engine.MaxEdgeTypes {
		return 0, fmt.Sprintf("%d types: at most %d", len(f.Types), engine.MaxEdgeTypes)
	}
	for i, n := range f.Types[1:] {
		if why := NameReason(n); why != "" {
			return 0, fmt.Sprintf("type %d: %s", i+1, why)
		}
		if _, dup := d.byName[n]; dup {
			return 0, fmt.Sprintf("type %d: the name %q is taken by type %d", i+1, n, d.byName[n])
		}
		d.names = append(d.names, n)
		d.byName[n] = uint16(i + 1)
	}
	if c := checksum(f.Types); c != f.CRC32C {
		return 0, fmt.Sprintf("checksum mismatch: stored %d, computed %d from the names", f.CRC32C, c)
	}
	if e := encode(f.Types); !bytes.Equal(b, e) {
		off := 0
		for off < len(b) && off < len(e) && b[off] == e[off] {
			off++
		}
		return int64(off), "not in the form graphtide writes (a byte changed outside the names, or bytes after the object)"
	}
	return 0, ""
}

// NameReason says why n cannot name a type, or "".
func NameReason(n string) string {
	switch {
	case n == "":
		return "a type name must not be empty"
	case len(n) > MaxNameLen:
		return fmt.Sprintf("a type name is at most %d bytes, got %d", MaxNameLen, len(n))
	case !utf8.ValidString(n):
		return fmt.Sprintf("the type name %q is not valid UTF-8", n)
	case n == Default:
		return fmt.Sprintf("%q names type 0", Default)
	case strings.ContainsAny(n, ",|"):
		return fmt.Sprintf("the type name %q has a comma or a '|' (they separate types in lists)", n)
	case strings.IndexFunc(n, unicode.IsControl) >= 0:
		return fmt.Sprintf("the type name %q has a control character", n)
	case strings.Trim(n, "0123456789") == "":
		return fmt.Sprintf("the type name %q is a number: a number is the type itself", n)
	}
	return ""
}

// ID is the number of the type named name, adding it (durably) when new.
// It does not keep name (a decoder passes a view of a record's bytes): a
// name it adds is copied.
// A name that breaks the rules is an *NameError; a full dictionary, a
// read-only one or a failed write is another error.
func (d *Dict) ID(name string) (uint16, error) {
	d.mu.RLock()
	t, ok := d.byName[name]
	d.mu.RUnlock()
	if ok {
		return t, nil
	}
	if why := NameReason(name); why != "" {
		return 0, &NameError{Reason: why}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if t, ok := d.byName[name]; ok {
		return t, nil
	}
	if d.readOnly {
		return 0, fmt.Errorf("typedict: %s is open read-only: cannot add the type %q", d.path, name)
	}
	name = strings.Clone(name) // kept: the caller's may be a view of its bytes
	if len(d.names) >= engine.MaxEdgeTypes {
		return 0, &NameError{Reason: fmt.Sprintf("no room for the type %q: the dictionary holds the most types there can be (%d)", name, engine.MaxEdgeTypes)}
	}
	names := slices.Concat(d.names, []string{name}) // a new array: readers may hold d.names
	// INVARIANT: the name's number is durable before anyone can use it.
	if err := durable.WriteFile(d.path, encode(names), 0o644); err != nil {
		return 0, fmt.Errorf("typedict: adding the type %q: %w", name, err)
	}
	t = uint16(len(d.names))
	d.names = names
	d.byName[name] = t
	d.n.Store(int32(len(names)))
	return t, nil
}

// NameError is a type name that cannot be used: the record naming it is
// at fault, not the dictionary.
type NameError struct{ Reason string }

func (e *NameError) Error() string { return e.Reason }

// empty is the dictionary a nil *Dict reads as: type 0 alone.
var empty = &Dict{names: []string{Default}, byName: map[string]uint16{Default: 0}, readOnly: true}

// Name is the name of type t: Default for 0, its name when it has one,
// else the number as text. A nil Dict names type 0 alone (as do Names,
// Lookup and Set).
func (d *Dict) Name(t uint16) string {
	if d == nil {
		d = empty
	}
	d.mu.RLock()
	defer d.mu.RUnlock()
	if int(t) < len(d.names) {
		return d.names[t]
	}
	return strconv.Itoa(int(t))
}

// Names lists the named types, type 0 first.
func (d *Dict) Names() []string {
	if d == nil {
		d = empty
	}
	d.mu.RLock()
	defer d.mu.RUnlock()
	return append([]string(nil), d.names...)
}

// Lookup is the number of the type s names without adding anything: a
// known name, or a number below engine.MaxEdgeTypes.
func (d *Dict) Lookup(s string) (uint16, error) {
	if d == nil {
		d = empty
	}
	d.mu.RLock()
	t, ok := d.byName[s]
	known := len(d.names)
	d.mu.RUnlock()
	if ok {
		return t, nil
	}
	if n, err := strconv.ParseUint(s, 10, 16); err == nil && int(n) < engine.MaxEdgeTypes {
		return uint16(n), nil
	}
	return 0, fmt.Errorf("unknown edge type %q: the store knows %d (%s), or give a number below %d", s, known, strings.Join(d.Names(), ", "), engine.MaxEdgeTypes)
}

// Set parses a comma-separated list of types (names or numbers) into a
// filter; an empty list, or an unknown name, is an error.
func (d *Dict) Set(list string) (engine.TypeSet, error) { return d.set(list, d.Lookup) }

// Resolver is d's Resolve as an analytics registry takes it
// (analytics.RegistryConfig.Types); a nil d reads type numbers and
// Default only.
func Resolver(d *Dict) func(string) (*engine.TypeSet, error) {
	return func(list string) (*engine.TypeSet, error) {
		ts, err := d.Resolve(list)
		if err != nil {
			return nil, err
		}
		return &ts, nil
	}
}

// Resolve is Set adding the names it does not know (as ID does): for an
// analytic registered before the first edge of its type arrives.
func (d *Dict) Resolve(list string) (engine.TypeSet, error) {
	return d.set(list, func(s string) (uint16, error) {
		if t, err := d.Lookup(s); err == nil {
			return t, nil
		}
		if d == nil {
			return 0, fmt.Errorf("edge type %q: no type dictionary to name it in (give a number below %d)", s, engine.MaxEdgeTypes)
		}
		return d.ID(s)
	})
}

func (d *Dict) set(list string, lookup func(string) (uint16, error)) (engine.TypeSet, error) {
	var ts engine.TypeSet
	n := 0
	for _, s := range strings.Split(list, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		t, err := lookup(s)
		if err != nil {
			return ts, err
		}
		ts.Add(t)
		n++
	}
	if n == 0 {
		return ts, errors.New("an edge type list names no type")
	}
	return ts, nil
}

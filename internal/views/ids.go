package views

import (
	"fmt"
	"math/bits"
	"math/rand/v2"
	"slices"
	"sync/atomic"

	"github.com/graphtide/graphtide/internal/engine"
)

// IDSpace maps the vertex ids a view can hold onto the dense indexes
// [0, Len()), so that analytics keep per-vertex state in slices whatever
// the ids: any id of the 64-bit range, numbers and string keys mixed.
//
// Layout of the indexes of one generation (see vertexIndex):
//
//	[0, D)              numeric ids [0, D), identity: id i is index i
//	[D, D+K)            string-key ids [HighIDBase, HighIDBase+K), in order
//	[D+K, Len())        every other id (sparse numbers, late keys), through
//	                    a hash table, in the order they were first seen
//
// INVARIANTS: D is at most twice the ids of [0, D) present when the
// generation is built, K likewise for the keys, so the identity regions
// cost O(vertices present). Each region covers the ids of which at least
// half are present and then up to half as many again, as headroom: ids are
// handed out in increasing order (keys and mapped numbers by the key
// dictionary, dense numbers by most sources), so the vertices that arrive
// later fall into the region, not into the hash table. A generation's layout (D, K,
// the hash part's order) never changes: later vertices only append indexes,
// so a space made later in the same generation extends an earlier one
// (Extends). A new generation (regions rebuilt to take in the ids that
// became dense) holds every id of the one before, at other indexes.
//
// An IDSpace is an immutable value, safe for concurrent use: its lookups
// take no lock while the index's single writer goes on appending to the
// same generation. They read only what was published before the space was
// made (under the index's lock, which the space's taker held): D and K,
// which never change; the elements sparse[:len] of its own slice header,
// which the writer never writes again (an append writes past every
// published length, or copies to a new array); and the hash table, read
// with atomic loads (see idTable for why a lookup never sees a half-made
// entry). An id the writer appended later may be in the table, but its
// position is past len(sparse) and the lookup rejects it.
type IDSpace struct {
	dense uint64     // D
	keys  uint64     // K
	n     int        // the indexes of the space: [0, n)
	hp    *hashedIDs // the ids of [D+K, n); nil when there are none
	gen   *idGen     // the generation; spaces of one generation share indexes
}

// hashedIDs is the hash part of one IDSpace (immutable).
type hashedIDs struct {
	base   int      // D+K, the index of sparse[0]
	tab    *idTable // holds every id of sparse (and maybe later ones)
	sparse []uint64 // sparse[j]: the id of index base+j
}

// highBase is engine.HighIDBase, the first id of the string keys.
const highBase = engine.HighIDBase

// MaxIndexLen bounds an index: at most 2^31-1 vertex indexes (analytics
// keep int32 indexes). The identity regions count whole: ids without edges
// inside [0, D) count too, at most as many as the vertices present.
const MaxIndexLen = 1<<31 - 1

// DenseIDs is the space of the ids [0, n), each its own index: for graphs
// whose ids are dense by construction (a static CSR).
func DenseIDs(n uint64) IDSpace {
	return IDSpace{dense: n, n: int(n), gen: &idGen{dense: n}}
}

// NewIDSpace builds a standalone space holding ids (in any order,
// duplicates allowed), laid out as an index generation would be.
func NewIDSpace(ids []uint64) (IDSpace, error) {
	s := slices.Clone(ids)
	slices.Sort(s)
	g, err := buildGen(slices.Compact(s))
	if err != nil {
		return IDSpace{}, err
	}
	return g.space(), nil
}

// Len is the number of indexes of the space.
func (s IDSpace) Len() int { return s.n }

// Index returns v's dense index, or false when v is not in the space. It
// takes no lock; an id of the numeric identity region costs one comparison
// (inlined into the caller). Translating a whole neighbor list is cheaper
// with Indexes.
func (s IDSpace) Index(v uint64) (int, bool) {
	if v < s.dense {
		return int(v), true
	}
	return s.index(v)
}

// index is Index for an id outside the numeric identity region.
func (s IDSpace) index(v uint64) (int, bool) {
	if k := v - highBase; k < s.keys { // wraps above any K for v < highBase
		return int(s.dense + k), true
	}
	h := s.hp
	if h == nil {
		return 0, false
	}
	j, ok := h.tab.get(v)
	if !ok || j >= len(h.sparse) { // appended after this space was made
		return 0, false
	}
	return h.base + j, true
}

// Indexes sets out[k] to the dense index of ids[k], for a whole list of
// ids at once (a neighbor list): cheaper than one Index per id when some
// are hashed, since the table's cache lines are fetched for a group of ids
// before any is probed. out must be at least as long as ids. It returns
// len(ids), or the position of the first id that is not in the space (the
// entries before it are set).
func (s IDSpace) Indexes(ids []uint64, out []int32) int {
	out = out[:len(ids)]
	hashed := false
	for k, v := range ids {
		if v < s.dense {
			out[k] = int32(v)
		} else if kk := v - highBase; kk < s.keys {
			out[k] = int32(s.dense + kk)
		} else {
			out[k] = -1
			hashed = true
		}
	}
	if !hashed {
		return len(ids)
	}
	return s.hp.indexes(ids, out)
}

// indexGroup is how many hashed ids Indexes fetches the slots of before it
// probes them.
const indexGroup = 16

// indexes sets the entries of out that Indexes left at -1 (h may be nil).
func (h *hashedIDs) indexes(ids []uint64, out []int32) int {
	if h == nil {
		for k := range ids {
			if out[k] < 0 {
				return k
			}
		}
		return len(ids)
	}
	t, base := h.tab, int32(h.base)
	var homes [indexGroup]uint64
	for g := 0; g < len(ids); g += indexGroup {
		e := min(g+indexGroup, len(ids))
		// Fetch: independent loads, no branch on their values, so the
		// processor has them all in flight at once (an atomic load is
		// never dropped as unused).
		for k := g; k < e; k++ {
			h := t.home(ids[k])
			homes[k-g] = h
			t.slots[h].val.Load()
		}
		for k := g; k < e; k++ {
			if out[k] >= 0 {
				continue
			}
			j, ok := t.probe(ids[k], homes[k-g])
			if !ok || j >= len(h.sparse) {
				return k
			}
			out[k] = base + int32(j)
		}
	}
	return len(ids)
}

// ID is the vertex id of dense index i, 0 <= i < Len().
func (s IDSpace) ID(i int) uint64 {
	u := uint64(i)
	if u < s.dense {
		return u
	}
	if u -= s.dense; u < s.keys {
		return highBase + u
	}
	return s.hp.sparse[u-s.keys]
}

// Extends reports whether every id of o has the same index in s: o is
// empty, or s and o are of one generation and s is no smaller, or both are
// identity spaces (DenseIDs) and s is no smaller. Per-vertex state kept for
// o then carries over to s by appending entries.
func (s IDSpace) Extends(o IDSpace) bool {
	if o.n == 0 {
		return true
	}
	if s.gen == o.gen {
		return o.n <= s.n
	}
	return o.keys == 0 && o.hp == nil && s.keys == 0 && s.hp == nil && o.dense <= s.dense
}

// Regions returns D and K, the sizes of the identity regions, and the
// number of ids hashed (for tests, metrics and benchmarks).
func (s IDSpace) Regions() (dense, keys uint64, hashed int) {
	return s.dense, s.keys, s.n - int(s.dense+s.keys)
}

// bitmap is a set of small integers.
type bitmap []uint64

func newBitmap(n uint64) bitmap    { return make(bitmap, (n+63)/64) }
func (b bitmap) set(i uint64)      { b[i/64] |= 1 << (i % 64) }
func (b bitmap) clear(i uint64)    { b[i/64] &^= 1 << (i % 64) }
func (b bitmap) has(i uint64) bool { return b[i/64]>>(i%64)&1 == 1 }

// idTable is an open-addressing hash table (linear probing) from id to
// its position in a generation's sparse list.
//
// Concurrency: one writer inserts (holding the index's lock) while any
// number of readers look up without a lock. Why that is safe, by the Go
// memory model (atomic operations are sequentially consistent, and an
// atomic load that observes an atomic store is synchronized after it):
//   - put stores a slot's key, then its val; get loads val, then key. A
//     reader that observes val != 0 therefore observes the key stored
//     before it, never a half-written slot.
//   - Slots are never removed, moved or overwritten: once a reader sees an
//     entry it stays, and a probe sequence that reached an id stays the
//     same, so an id inserted before a space was made is always found
//     through that space.
//   - The table never fills: put is called only while full is false (at
//     most idTableLoad of the slots used), so every probe reaches an empty
//     slot and ends.
//   - Growing builds a new table, filled before it is published (under the
//     index's lock); spaces made before keep reading the old one, which is
//     never written again and holds every entry they can find (their own
//     bound, len(hashedIDs.sparse), rejects later positions).
//   - slots, mask, shift and seed are set before the table is published
//     and never change; count is the writer's alone.
type idTable struct {
	slots []idSlot
	mask  uint64
	shift uint8  // 64 - log2(len(slots))
	seed  uint64 // random per table: ids cannot be chosen to collide
	count int    // entries; writer only
}

// idSlot: val is 1 + the position, 0 when the slot is empty.
type idSlot struct{ key, val atomic.Uint64 }

// idTableLoad is the most entries per slot before the table grows: a
// lookup probes about 2 slots on average (16 bytes each, 4 per cache line).
const idTableLoad = 0.7

// idTableMul is the odd multiplier of the table's mixer (2^64 / golden ratio).
const idTableMul = 0x9E3779B97F4A7C15

func newIDTable(entries int) *idTable {
	size := uint64(16)
	for float64(size)*idTableLoad < float64(entries+1) {
		size *= 2
	}
	return &idTable{slots: make([]idSlot, size), mask: size - 1, shift: uint8(64 - bits.TrailingZeros64(size)),
		seed: rand.Uint64()}
}

// home is v's first slot: the high bits of a folded multiply (the high and
// low halves of the 128-bit product, xored) of v and the table's seed,
// which spreads any pattern of ids (strides, multiples of the multiplier's
// inverse, ids that differ only in high bits) over the table, and which
// ids picked without knowing the seed cannot defeat.
func (t *idTable) home(v uint64) uint64 {
	hi, lo := bits.Mul64(v^t.seed, idTableMul)
	return (hi ^ lo) >> t.shift
}

// get returns the position of v, and false when v is not in the table.
func (t *idTable) get(v uint64) (int, bool) { return t.probe(v, t.home(v)) }

// probe is get from v's home slot h.
func (t *idTable) probe(v, h uint64) (int, bool) {
	for ; ; h = (h + 1) & t.mask {
		sl := &t.slots[h]
		x := sl.val.Load()
		if x == 0 {
			return 0, false
		}
		if sl.key.Load() == v {
			return int(x - 1), true
		}
	}
}

// put inserts v (not in the table) at position j. Writer only; the table
// must have room (full is false).
func (t *idTable) put(v uint64, j int) {
	h := t.home(v)
	for t.slots[h].val.Load() != 0 {
		h = (h + 1) & t.mask
	}
	t.slots[h].key.Store(v)
	t.slots[h].val.Store(uint64(j) + 1)
	t.count++
}

func (t *idTable) full() bool { return float64(t.count+1) > float64(len(t.slots))*idTableLoad }

func (t *idTable) bytes() int64 { return int64(len(t.slots)) * 16 }

// idGen is one generation of a vertex index: its identity regions, which
// of their ids are present, and the hash part. Only the index's writer
// (holding its lock) calls its methods other than space's results.
type idGen struct {
	dense, keys         uint64
	seenDense, seenKeys bitmap // ids of the identity regions present
	tab                 *idTable
	sparse              []uint64
	// checked is len(sparse) when the generation was built or last found
	// not worth rebuilding (see vertexIndex.maybeRebuild).
	checked int
}

// space is the generation as it is now.
func (g *idGen) space() IDSpace {
	s := IDSpace{dense: g.dense, keys: g.keys, n: int(g.dense+g.keys) + len(g.sparse), gen: g}
	if len(g.sparse) > 0 {
		s.hp = &hashedIDs{base: int(g.dense + g.keys), tab: g.tab, sparse: g.sparse[:len(g.sparse):len(g.sparse)]}
	}
	return s
}

// len is the number of indexes.
func (g *idGen) len() int { return int(g.dense+g.keys) + len(g.sparse) }

// add records v as present, appending an index for it when it has none.
// It fails when the index would exceed MaxIndexLen.
func (g *idGen) add(v uint64) error {
	if v < g.dense {
		g.seenDense.set(v)
		return nil
	}
	if k := v - highBase; k < g.keys {
		g.seenKeys.set(k)
		return nil
	}
	if g.tab != nil {
		if _, ok := g.tab.get(v); ok {
			return nil
		}
	}
	if g.len() >= MaxIndexLen {
		return fmt.Errorf("views: the vertex index holds %d vertex indexes, the most it can (%d)", g.len(), MaxIndexLen)
	}
	if g.tab == nil || g.tab.full() {
		t := newIDTable(2 * (len(g.sparse) + 1))
		for j, x := range g.sparse {
			t.put(x, j)
		}
		g.tab = t
	}
	g.tab.put(v, len(g.sparse))
	g.sparse = append(g.sparse, v)
	return nil
}

// ids appends every id present in the generation to out, sorted.
func (g *idGen) ids(out []uint64) []uint64 {
	for w, word := range g.seenDense {
		for ; word != 0; word &= word - 1 {
			out = append(out, uint64(w*64+bits.TrailingZeros64(word)))
		}
	}
	at := len(out)
	out = append(out, g.sparse...)
	slices.Sort(out[at:])
	// Sparse keys sort after sparse numbers; the identity keys go between.
	split := at + keysFrom(out[at:])
	tail := slices.Clone(out[split:])
	out = out[:split]
	for w, word := range g.seenKeys {
		for ; word != 0; word &= word - 1 {
			out = append(out, highBase+uint64(w*64+bits.TrailingZeros64(word)))
		}
	}
	return append(out, tail...)
}

// keysFrom is where the string-key ids start in the sorted ids s.
func keysFrom(s []uint64) int {
	i, _ := slices.BinarySearch(s, highBase)
	return i
}

// bytes is the memory the generation holds.
func (g *idGen) bytes() int64 {
	b := int64(len(g.seenDense)+len(g.seenKeys))*8 + int64(cap(g.sparse))*8
	if g.tab != nil {
		b += g.tab.bytes()
	}
	return b
}

// prefix returns, for sorted unique ids all at least base, one past the
// largest offset o = id - base such that at least half of [0, o] are
// offsets of ids (0 when none is), and n, how many ids lie below it: the
// identity region it can cover.
func prefix(ids []uint64, base uint64) (end uint64, n int) {
	for k, x := range ids {
		if o := x - base; o < 2*uint64(k+1) {
			end, n = o+1, k+1
		}
	}
	return end, n
}

// region is the identity region a generation lays out for ids (sorted,
// unique, all at least base): the prefix, and half as much again as
// headroom, within twice the ids it holds (so the numeric region ends far
// below the keys' 2^62 for any set of ids that fits in memory).
func region(ids []uint64, base uint64) uint64 {
	p, n := prefix(ids, base)
	return max(p, min(p+p/2, 2*uint64(n)))
}

// buildGen lays out a generation for sorted, unique ids.
func buildGen(ids []uint64) (*idGen, error) {
	split := keysFrom(ids)
	d, k := region(ids[:split], 0), region(ids[split:], highBase)
	g := &idGen{dense: d, keys: k, seenDense: newBitmap(d), seenKeys: newBitmap(k)}
	var sparse []uint64
	for _, x := range ids {
		switch {
		case x < d:
			g.seenDense.set(x)
		case x >= highBase && x-highBase < k:
			g.seenKeys.set(x - highBase)
		default:
			sparse = append(sparse, x)
		}
	}
	if n := uint64(len(sparse)) + d + k; n > MaxIndexLen {
		return nil, fmt.Errorf("views: %d vertices need %d vertex indexes, more than the most an index holds (%d)", len(ids), n, MaxIndexLen)
	}
	if len(sparse) > 0 {
		g.tab = newIDTable(len(sparse))
		for j, x := range sparse {
			g.tab.put(x, j)
		}
	}
	g.sparse, g.checked = sparse, len(sparse)
	return g, nil
}

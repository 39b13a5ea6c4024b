package views

import (
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
)

// TestIDSpaceConcurrentOracle: several goroutines take spaces of a vertex
// index and look ids up in them, without a lock, while the index's writer
// adds ids (appending through the hash table and growing it) and lays out
// new generations as ids become dense. Readers keep old spaces and look up
// in them again after the index moved on. Every lookup is checked against
// a plain map of the ids added before the space was taken: an id added
// before is found, at an index that maps back to it and that stays the
// same; any other id is found only inside an identity region, as itself.
// Run it under the race detector.
func TestIDSpaceConcurrentOracle(t *testing.T) {
	const (
		rounds  = 240
		perRnd  = 150
		readers = 4
	)
	x := &vertexIndex{m: &Manager{cfg: Config{IndexRebuildMin: 64}}}
	g0, err := buildGen(nil)
	if err != nil {
		t.Fatal(err)
	}
	x.gen = g0
	var added []uint64 // every id added, in order, duplicates too; Protected by x.mu

	// A taken space, with how many ids had been added when it was made.
	type taken struct {
		s IDSpace
		n int
	}
	// take returns the index's current space and the ids added since
	// len(have) (under the index's lock, as spaceFor hands spaces out).
	take := func(have int) (taken, []uint64) {
		x.mu.Lock()
		defer x.mu.Unlock()
		return taken{x.gen.space(), len(added)}, append([]uint64(nil), added[have:]...)
	}

	// The writer's ids, by family. Sparse numbers are even and sparse keys
	// are even offsets: readers probe odd ones, which are never added.
	// Dense numbers are those not 3 mod 4 (identity regions form over
	// them, and readers probe the 3s inside and beyond them).
	tables := map[*idTable]bool{}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(done)
		r := rand.New(rand.NewPCG(1, 2))
		dense, key := uint64(0), uint64(0)
		for i := 0; i < rounds; i++ {
			batch := make([]uint64, 0, perRnd)
			for j := 0; j < perRnd; j++ {
				switch {
				case i < rounds/3 || j%3 == 0: // sparse: numbers over the 62-bit range, far keys
					if j%2 == 0 {
						batch = append(batch, r.Uint64N(highBase)&^1)
					} else {
						batch = append(batch, highBase+(1<<20+r.Uint64N(1<<50))&^1)
					}
				case j%3 == 1:
					if dense%4 == 3 {
						dense++
					}
					batch = append(batch, dense)
					dense++
				default:
					batch = append(batch, highBase+key)
					key++
				}
			}
			if i%10 == 9 { // ids again, and the ends of the range
				batch = append(batch, batch[:20]...)
				batch = append(batch, 0, highBase-2, highBase, ^uint64(0)-1)
			}
			x.mu.Lock()
			for _, v := range batch {
				if err := x.gen.add(v); err != nil {
					t.Error(err)
				}
			}
			added = append(added, batch...)
			if err := x.maybeRebuild(); err != nil {
				t.Error(err)
			}
			if x.gen.tab != nil {
				tables[x.gen.tab] = true
			}
			x.mu.Unlock()
			runtime.Gosched()
		}
	}()

	for rd := 0; rd < readers; rd++ {
		wg.Add(1)
		go func(rd int) {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(rd), 7))
			first := map[uint64]int{} // id -> position in added of its first add (the oracle)
			var order []uint64        // added, as far as this reader has copied it
			var held []taken          // spaces kept to look up in again later
			answers := map[*taken]map[uint64]int{}
			fail := func(format string, args ...any) {
				t.Helper()
				t.Errorf("reader %d: "+format, append([]any{rd}, args...)...)
			}
			// check looks v up in p and compares with the oracle.
			check := func(p *taken, v uint64) bool {
				i, ok := p.s.Index(v)
				f, seen := first[v]
				present := seen && f < p.n
				d, k, _ := p.s.Regions()
				ident, identIdx := false, uint64(0)
				if v < d {
					ident, identIdx = true, v
				} else if v >= highBase && v-highBase < k {
					ident, identIdx = true, d+v-highBase
				}
				if ok != (present || ident) {
					fail("space of %d ids: Index(%d) = %d %v; added before: %v, identity region: %v", p.n, v, i, ok, present, ident)
					return false
				}
				if !ok {
					return true
				}
				if i < 0 || i >= p.s.Len() || p.s.ID(i) != v || ident && uint64(i) != identIdx {
					fail("space of %d ids: Index(%d) = %d (len %d, ID %d, identity %v)", p.n, v, i, p.s.Len(), p.s.ID(i), ident)
					return false
				}
				if a := answers[p]; a != nil {
					if j, had := a[v]; had && j != i {
						fail("space of %d ids: Index(%d) = %d, earlier %d", p.n, v, i, j)
						return false
					}
					a[v] = i
				}
				return true
			}
			probe := func() uint64 {
				switch r.IntN(5) {
				case 0:
					return r.Uint64N(highBase) | 1 // a sparse number never added
				case 1:
					return highBase + (1<<20 + r.Uint64N(1<<50)) | 1 // a far key never added
				case 2:
					return 4*r.Uint64N(uint64(len(order))/2+1) + 3 // a small number never added
				case 3:
					return highBase + r.Uint64N(uint64(len(order))/2+1) // a key, added or not (yet)
				default:
					return order[r.IntN(len(order))] // an id added, before or after the space
				}
			}
			for stop := false; !stop; {
				select {
				case <-done:
					stop = true // one last round over the final index
				default:
				}
				p, more := take(len(order))
				for _, v := range more {
					if _, ok := first[v]; !ok {
						first[v] = len(order)
					}
					order = append(order, v)
				}
				if len(order) == 0 {
					continue
				}
				np := &p
				answers[np] = map[uint64]int{}
				// The space's size: the identity regions and one index per
				// other id added before it.
				d, k, h := p.s.Regions()
				others := 0
				for v, f := range first {
					if f < p.n && v >= d && (v < highBase || v-highBase >= k) {
						others++
					}
				}
				if h != others || p.s.Len() != int(d+k)+h {
					fail("space of %d ids: %d hashed and len %d, want %d hashed and len %d", p.n, h, p.s.Len(), others, int(d+k)+others)
				}
				// Identity regions stay within twice the ids in them.
				inD, inK := 0, 0
				for v, f := range first {
					if f < p.n && v < d {
						inD++
					}
					if f < p.n && v >= highBase && v-highBase < k {
						inK++
					}
				}
				if d > 2*uint64(inD) || k > 2*uint64(inK) {
					fail("space of %d ids: identity regions %d and %d for %d and %d ids", p.n, d, k, inD, inK)
				}
				// Every id added before it, and every index; Indexes on
				// lists of them (and of ids never added) agrees with Index.
				for _, v := range order[:p.n] {
					if !check(np, v) {
						return
					}
				}
				var list []uint64
				out := make([]int32, 40)
				for j := 0; j < 50; j++ {
					list = list[:0]
					for k := r.IntN(40); k > 0; k-- {
						list = append(list, order[r.IntN(p.n)])
					}
					if r.IntN(3) == 0 {
						list = append(list, probe())
					}
					got := p.s.Indexes(list, out)
					want := len(list)
					for k, v := range list {
						i, ok := p.s.Index(v)
						if !ok {
							want = k
							break
						}
						if int(out[k]) != i {
							fail("Indexes(%v)[%d] = %d, Index(%d) = %d", list, k, out[k], v, i)
							return
						}
					}
					if got != want {
						fail("Indexes of %d ids returned %d, want %d", len(list), got, want)
						return
					}
				}
				for i := 0; i < p.s.Len(); i += 1 + r.IntN(7) {
					if j, ok := p.s.Index(p.s.ID(i)); !ok || j != i {
						fail("space of %d ids: index %d -> id %d -> %d %v", p.n, i, p.s.ID(i), j, ok)
						return
					}
				}
				// The spaces held: look up again while the writer goes on.
				held = append(held, p)
				if len(held) > 6 {
					delete(answers, &held[0])
					held = held[1:]
				}
				for hi := range held {
					old := &held[hi]
					if answers[old] == nil {
						answers[old] = map[uint64]int{}
					}
					for j := 0; j < 300; j++ {
						if !check(old, probe()) {
							return
						}
					}
					// A later space of the same generation keeps its indexes.
					if p.s.Extends(old.s) {
						if p.s.gen != old.s.gen && old.s.Len() > 0 {
							fail("a space extends one of another generation")
							return
						}
						for j := 0; j < 100 && old.n > 0; j++ {
							v := order[r.IntN(old.n)]
							a, _ := old.s.Index(v)
							b, _ := p.s.Index(v)
							if a != b {
								fail("id %d: index %d in a space, %d in a later one of the same generation", v, a, b)
								return
							}
						}
					} else if p.s.gen == old.s.gen {
						fail("a later space of one generation does not extend an earlier one")
						return
					}
				}
			}
		}(rd)
	}
	wg.Wait()
	// The writer's schedule alone decides these: the test went through
	// several generations and table growths.
	st := x.stats
	if st.Generations < 3 || len(tables) < 5 {
		t.Fatalf("only %d generations and %d hash tables: the test did not exercise growth", st.Generations, len(tables))
	}
	d, k, h := x.gen.space().Regions()
	t.Logf("%d ids added; final generation: D=%d K=%d hashed=%d; %d generations, %d tables", len(added), d, k, h, st.Generations, len(tables))
}

// TestIDTableMixesPatterns: ids built to collide under a plain
// multiplicative hash (multiples of the inverse of its multiplier, which
// it maps to 0, 1, 2, ... and so to one home slot), strided ids and ids
// that differ only in their high bits all probe about as few slots as
// random ids do.
func TestIDTableMixesPatterns(t *testing.T) {
	inv := uint64(1) // the inverse of idTableMul mod 2^64, by Newton's iteration
	for i := 0; i < 6; i++ {
		inv *= 2 - idTableMul*inv
	}
	if inv*idTableMul != 1 {
		t.Fatal("no inverse")
	}
	const n = 20000
	r := rand.New(rand.NewPCG(5, 5))
	families := map[string]func(i uint64) uint64{
		"inverse multiples": func(i uint64) uint64 { return (i + 1) * inv },
		"stride 2^32":       func(i uint64) uint64 { return (i + 1) << 32 },
		"high bits":         func(i uint64) uint64 { return (i+1)<<44 | 12345 },
		"random":            func(uint64) uint64 { return r.Uint64() },
	}
	for name, f := range families {
		tab := newIDTable(n)
		ids := make([]uint64, 0, n)
		have := map[uint64]bool{}
		for i := uint64(0); len(ids) < n; i++ {
			if v := f(i); !have[v] {
				have[v] = true
				ids = append(ids, v)
			}
		}
		for j, v := range ids {
			tab.put(v, j)
		}
		probes := 0
		for j, v := range ids {
			p, ok := 1, false
			for h := tab.home(v); ; h = (h + 1) & tab.mask {
				if tab.slots[h].key.Load() == v && tab.slots[h].val.Load() == uint64(j)+1 {
					ok = true
					break
				}
				if tab.slots[h].val.Load() == 0 {
					break
				}
				p++
			}
			if got, found := tab.get(v); !ok || !found || got != j {
				t.Fatalf("%s: id %d not found at %d", name, v, j)
			}
			probes += p
		}
		// Linear probing at load at most 0.7 averages about 2.2 probes per
		// hit for well-spread keys; a pattern the mixer fails on averages
		// hundreds.
		if avg := float64(probes) / n; avg > 4 {
			t.Errorf("%s: %.1f probes per lookup on average", name, avg)
		} else {
			t.Logf("%s: %.2f probes per lookup", name, avg)
		}
	}
}

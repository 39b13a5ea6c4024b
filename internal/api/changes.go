package api

import (
	"context"
	"net/http"
	"strings"

	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/views"
)

// The changes between two points of the store's history (GraphOne's
// get-prior-edges, as a difference of two views).

// Change is one edge that differs between the two seqs: "added" (there at
// to, not at from), "removed" (the other way) or "changed" (its weight or
// event time). Weight and Time are the edge's at to (at from for a
// removed one); OldWeight its weight at from, for a changed one only.
type Change struct {
	Src       uint64   `json:"src"`
	SrcKey    string   `json:"src_key,omitempty"`
	Dst       uint64   `json:"dst"`
	DstKey    string   `json:"dst_key,omitempty"`
	Type      string   `json:"type,omitempty"`
	Change    string   `json:"change"`
	Weight    float64  `json:"weight"`
	OldWeight *float64 `json:"old_weight,omitempty"` // a changed edge's only
	Time      string   `json:"time,omitempty"`
}

// ChangesResponse answers GET /v1/changes: a page of the out-edges that
// differ between seq From and seq To, in (src, dst, type descending)
// order of this store's ids, and when more remain the cursor of the last
// one (NextCursor; or after, after_dst and after_type). Seqs and the ids
// of keys are each replica's own: a listing is continued on the server
// that began it (another refuses its cursor with 409).
type ChangesResponse struct {
	From    uint64   `json:"from"`
	To      uint64   `json:"to"`
	Changes []Change `json:"changes"`
	// EdgesRead counts the edges both views read for this page.
	EdgesRead int64 `json:"edges_read"`
	// NextCursor continues the listing on this server: pass it as cursor=.
	NextCursor    string  `json:"next_cursor,omitempty"`
	NextAfter     *uint64 `json:"next_after,omitempty"`
	NextAfterDst  *uint64 `json:"next_after_dst,omitempty"`
	NextAfterType string  `json:"next_after_type,omitempty"`
}

// ChangeCursor is where a page of changes starts: past the change of the
// edge (Src, Dst, Type).
type ChangeCursor struct {
	Src, Dst uint64
	Type     uint16
}

// changeEnds parses the two points of a changes request, each a seq or a
// time (from or from_time, to or to_time).
func changeEnds(from, to AsOf) ([2]Point, error) {
	var ends [2]Point
	for i, e := range []struct {
		name string
		at   AsOf
	}{{"from", from}, {"to", to}} {
		if e.at.Seq == "" && e.at.Time == "" {
			return ends, errorf(http.StatusBadRequest, "%s (a sequence number) or %s_time (an RFC 3339 time) is required", e.name, e.name)
		}
		p, err := changeEnd(e.name, e.at)
		if err != nil {
			return ends, err
		}
		ends[i] = p
	}
	return ends, nil
}

// changeEnd parses one point of a changes request, named name.
func changeEnd(name string, at AsOf) (Point, error) {
	p, err := ParsePoint("", at)
	if err != nil {
		return p, errorf(http.StatusBadRequest, "%s", strings.NewReplacer("as_of_seq", name, "as_of_time", name+"_time").Replace(err.Error()))
	}
	return p, nil
}

// changesStart reads the two points of a listing of changes and where
// its page starts: from a cursor of this server (a cursor of another is
// 409: its seqs and ids are that server's own), whose listing from and to
// may repeat; else from and to, and the legacy after, after_dst and
// after_type (vertices by id or key, resolved here).
func (q Reader) changesStart(from, to AsOf, pg PageOptions) ([2]Point, *ChangeCursor, error) {
	var ends [2]Point
	if pg.Cursor == "" {
		ends, err := changeEnds(from, to)
		if err != nil {
			return ends, nil, err
		}
		switch {
		case pg.After != "" && pg.AfterDst != "":
			c := &ChangeCursor{}
			if c.Src, err = q.resolveVertex("after", pg.After); err != nil {
				return ends, nil, err
			}
			if c.Dst, err = q.resolveVertex("after_dst", pg.AfterDst); err != nil {
				return ends, nil, err
			}
			ec, err := q.Cursor(c.Dst, pg.AfterType)
			if err != nil {
				return ends, nil, err
			}
			c.Type = ec.Type
			return ends, c, nil
		case pg.After != "" || pg.AfterDst != "" || pg.AfterType != "":
			return ends, nil, errorf(http.StatusBadRequest, "after and after_dst go together (next_after and next_after_dst of the previous page), with after_type when it gave one")
		}
		return ends, nil, nil
	}
	if pg.After != "" || pg.AfterDst != "" || pg.AfterType != "" {
		return ends, nil, errorf(http.StatusBadRequest, "give cursor (the previous page's next_cursor), or after, after_dst and after_type, not both")
	}
	c, err := decodeCursor(pg.Cursor, cursorChange)
	if err != nil {
		return ends, nil, errorf(http.StatusBadRequest, "%v", err)
	}
	if c.origin != q.Origin || q.Origin == (Origin{}) {
		return ends, nil, errorf(http.StatusConflict, "this cursor continues a listing of changes made by another server (another replica, or this one before a restart): "+
			"the seqs and store ids in it are that server's own; list the changes again here, from its first page")
	}
	ends = [2]Point{{Kind: views.Fresh, AsOf: &c.from}, {Kind: views.Fresh, AsOf: &c.to}}
	for _, e := range []struct {
		name string
		at   AsOf
		seq  uint64
	}{{"from", from, c.from}, {"to", to, c.to}} {
		if e.at == (AsOf{}) {
			continue
		}
		p, err := changeEnd(e.name, e.at)
		if err == nil {
			p, err = q.resolve(p)
		}
		if err != nil {
			return ends, nil, err
		}
		if *p.AsOf != e.seq {
			return ends, nil, errorf(http.StatusBadRequest, "the cursor continues the listing from seq %d to seq %d, and %s names seq %d: leave out from and to, or give the first page's", c.from, c.to, e.name, *p.AsOf)
		}
	}
	return ends, &c.change, nil
}

// changeScan is how many vertices and edges one scan of a view reads at a
// time (a vertex with more edges grows the buffer).
const changeScanVertices, changeScanEdges = 1024, 1 << 16

// Changes lists up to limit out-edges (of types, a TypeFilter list) that
// differ between the points from and to (each a seq or a time, both
// within the store's history),
// past after (nil: from the first vertex). The net difference: an edge
// added and deleted again between them is no change. It reads both views
// from the cursor on, a window of vertices at a time, so a page costs the
// edges up to its last change and the whole listing the edges of both
// views.
func (q Reader) Changes(ctx context.Context, fromAt, toAt Point, types string, after *ChangeCursor, limit int) (ChangesResponse, error) {
	out := ChangesResponse{Changes: []Change{}}
	if limit < 1 {
		return out, errorf(http.StatusBadRequest, "limit must be positive, got %d", limit)
	}
	var err error
	if fromAt, err = q.resolve(fromAt); err != nil {
		return out, err
	}
	if toAt, err = q.resolve(toAt); err != nil {
		return out, err
	}
	from, to := *fromAt.AsOf, *toAt.AsOf
	out.From, out.To = from, to
	if from > to {
		return out, errorf(http.StatusBadRequest, "from (%d) must not be above to (%d)", from, to)
	}
	va, err := q.view(ctx, Point{Kind: views.Fresh, AsOf: &from}, engine.Out, types)
	if err != nil {
		return out, err
	}
	defer va.Release()
	vb, err := q.view(ctx, Point{Kind: views.Fresh, AsOf: &to}, engine.Out, types)
	if err != nil {
		return out, err
	}
	defer vb.Release()
	bufs := [2]*engine.ScanBuffer{engine.NewScanBuffer(changeScanVertices, changeScanEdges, true),
		engine.NewScanBuffer(changeScanVertices, changeScanEdges, true)}
	for _, b := range bufs {
		b.Types, b.Times = []uint16{}, []int64{}
	}
	// The id ranges of both views, band by band (numbers, then keys): a
	// band either view has is scanned in both, to the larger bound.
	type span struct{ lo, hi uint64 }
	spans := []span{{0, 0}, {engine.HighIDBase, engine.HighIDBase}}
	for _, v := range []*views.StaticView{va, vb} {
		err := v.Ranges(func(lo, hi uint64) error {
			band := 0
			if lo >= engine.HighIDBase {
				band = 1
			}
			spans[band].hi = max(spans[band].hi, hi)
			return nil
		})
		if err != nil {
			return out, err
		}
	}
	var last ChangeCursor // of the page's last change, in store ids
	emit := func(src, dst uint64, t uint16, kind string, w, old float64, tm int64) bool {
		if after != nil && (src < after.Src || src == after.Src && (dst < after.Dst || dst == after.Dst && t >= after.Type)) {
			return true // at or before the cursor
		}
		if len(out.Changes) == limit { // one more: the page ends at the last
			lc := out.Changes[len(out.Changes)-1]
			out.NextAfter, out.NextAfterDst = &lc.Src, &lc.Dst
			out.NextAfterType = lc.Type
			out.NextCursor = cursor{kind: cursorChange, origin: q.Origin, from: from, to: to, change: last}.encode()
			return false
		}
		last = ChangeCursor{Src: src, Dst: dst, Type: t}
		c := Change{Src: extID(q.Dict, src), SrcKey: keyOf(q.Dict, src), Dst: extID(q.Dict, dst), DstKey: keyOf(q.Dict, dst),
			Type: q.typeName(t), Change: kind, Weight: w, Time: eventTime(tm)}
		if kind == "changed" {
			c.OldWeight = &old
		}
		out.Changes = append(out.Changes, c)
		return true
	}
	for _, sp := range spans {
		pos := sp.lo
		if after != nil {
			pos = max(pos, after.Src)
		}
		for pos < sp.hi {
			if err := ctx.Err(); err != nil {
				return out, err
			}
			// Both views over [pos, bound): bound is where the view that
			// stopped first stopped, so both hold every vertex below it.
			bound := sp.hi
			for i, v := range []*views.StaticView{va, vb} {
				next, err := v.Scan(pos, sp.hi, engine.Out, bufs[i])
				if err != nil {
					return out, err
				}
				bound = min(bound, next)
				out.EdgesRead += int64(len(bufs[i].Dsts))
			}
			ia, ib := 0, 0
			a, b := bufs[0], bufs[1]
			for {
				sa, sb := uint64(0), uint64(0)
				hasA, hasB := ia < a.Len() && a.Vertices[ia] < bound, ib < b.Len() && b.Vertices[ib] < bound
				if !hasA && !hasB {
					break
				}
				if hasA {
					sa = a.Vertices[ia]
				}
				if hasB {
					sb = b.Vertices[ib]
				}
				src := sa
				ra, rb := [2]uint64{}, [2]uint64{} // edge index ranges of src in a and b
				switch {
				case hasA && (!hasB || sa < sb):
					ra = [2]uint64{a.Offsets[ia], a.Offsets[ia+1]}
					ia++
				case hasB && (!hasA || sb < sa):
					src = sb
					rb = [2]uint64{b.Offsets[ib], b.Offsets[ib+1]}
					ib++
				default:
					ra = [2]uint64{a.Offsets[ia], a.Offsets[ia+1]}
					rb = [2]uint64{b.Offsets[ib], b.Offsets[ib+1]}
					ia++
					ib++
				}
				if !diffLists(src, a, ra, b, rb, emit) {
					return out, nil
				}
			}
			pos = bound
		}
	}
	return out, nil
}

// diffLists emits the differences between src's edges a[ra] (at from)
// and b[rb] (at to), both in (dst ascending, type descending) order; false
// once emit is full.
func diffLists(src uint64, a *engine.ScanBuffer, ra [2]uint64, b *engine.ScanBuffer, rb [2]uint64,
	emit func(src, dst uint64, t uint16, kind string, w, old float64, tm int64) bool) bool {
	i, j := ra[0], rb[0]
	for i < ra[1] || j < rb[1] {
		// -1: a's edge comes first (removed); 1: b's (added); 0: both.
		c := 0
		switch {
		case j == rb[1]:
			c = -1
		case i == ra[1]:
			c = 1
		case a.Dsts[i] != b.Dsts[j]:
			c = -1
			if a.Dsts[i] > b.Dsts[j] {
				c = 1
			}
		case a.Types[i] != b.Types[j]:
			c = -1 // types descending: the larger first
			if a.Types[i] < b.Types[j] {
				c = 1
			}
		}
		ok := true
		switch c {
		case -1:
			ok = emit(src, a.Dsts[i], a.Types[i], "removed", a.Weights[i], 0, a.Times[i])
			i++
		case 1:
			ok = emit(src, b.Dsts[j], b.Types[j], "added", b.Weights[j], 0, b.Times[j])
			j++
		default:
			if a.Weights[i] != b.Weights[j] || a.Times[i] != b.Times[j] {
				ok = emit(src, b.Dsts[j], b.Types[j], "changed", b.Weights[j], a.Weights[i], b.Times[j])
			}
			i++
			j++
		}
		if !ok {
			return false
		}
	}
	return true
}

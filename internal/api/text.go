package api

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
)

// The responses as 'graphtide query' prints them for people (its --json
// prints the responses themselves). Write errors are the caller's to see
// on w; these print what they can.

// VertexName names a vertex for people: its key and id, or its id.
func VertexName(id uint64, key string) string {
	if key != "" {
		return fmt.Sprintf("%s (%d)", key, id)
	}
	return strconv.FormatUint(id, 10)
}

// WriteText prints the degree in one line.
func (r DegreeResponse) WriteText(w io.Writer) {
	fmt.Fprintf(w, "%s-degree of %s: %d (%s view at seq %d)\n", r.Dir, VertexName(r.Vertex, r.Key), r.Degree, r.View, r.Seq)
}

// WriteText prints whether the vertex exists, and its record.
func (r VertexResponse) WriteText(w io.Writer) {
	name := VertexName(r.Vertex.ID, r.Vertex.Key)
	switch {
	case r.Record:
		fmt.Fprintf(w, "vertex %s (%s view at seq %d)\nlabel: %s\n", name, r.View, r.Seq, r.Label)
		if len(r.Props) > 0 {
			fmt.Fprintf(w, "props: %s\n", r.Props)
		}
	case r.Exists:
		fmt.Fprintf(w, "vertex %s exists by its edges and has no record (%s view at seq %d)\n", name, r.View, r.Seq)
	default:
		fmt.Fprintf(w, "vertex %s does not exist (%s view at seq %d)\n", name, r.View, r.Seq)
	}
}

// WriteText prints the page as a table, and how to ask for the next one.
func (r NeighborsResponse) WriteText(w io.Writer) {
	fmt.Fprintf(w, "%s-neighbors of %s: %d in all (%s view at seq %d)\n", r.Dir, VertexName(r.Vertex, r.Key), r.Degree, r.View, r.Seq)
	writeEdges(w, r.Neighbors)
	if r.NextCursor != "" {
		fmt.Fprintln(w, "more: --cursor "+r.NextCursor)
	}
}

// writeEdges prints edges as a table: each one's neighbor id, key and
// weight, and its TYPE and TIME columns only where some edge has a type
// other than the default, or an event time; accumulate edges add EVENTS
// and FIRST (their count of events and first event time), references a
// REF column, properties PROPS, and windows WINDOW EVENTS and WINDOW SUM,
// then each window's events listed below the table.
func writeEdges(w io.Writer, ns []Neighbor) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	typed := slices.ContainsFunc(ns, func(n Neighbor) bool { return n.Type != "" })
	timed := slices.ContainsFunc(ns, func(n Neighbor) bool { return n.Time != "" })
	aggs := slices.ContainsFunc(ns, func(n Neighbor) bool { return n.Aggregate != nil })
	refs := slices.ContainsFunc(ns, func(n Neighbor) bool { return n.Ref != "" })
	props := slices.ContainsFunc(ns, func(n Neighbor) bool { return len(n.Props) > 0 })
	windows := slices.ContainsFunc(ns, func(n Neighbor) bool { return n.Window != nil })
	dash := func(s string) string {
		if s == "" {
			return "-"
		}
		return s
	}
	head := "ID\tKEY\tWEIGHT"
	if typed {
		head += "\tTYPE"
	}
	if timed {
		head += "\tTIME"
	}
	if aggs {
		head += "\tEVENTS\tFIRST"
	}
	if windows {
		head += "\tWINDOW EVENTS\tWINDOW SUM"
	}
	if refs {
		head += "\tREF"
	}
	if props {
		head += "\tPROPS"
	}
	fmt.Fprintln(tw, head)
	for _, n := range ns {
		line := fmt.Sprintf("%d\t%s\t%v", n.ID, n.Key, n.Weight)
		if typed {
			t := n.Type
			if t == "" {
				t = "default"
			}
			line += "\t" + t
		}
		if timed {
			line += "\t" + dash(n.Time)
		}
		if aggs {
			if a := n.Aggregate; a != nil {
				line += fmt.Sprintf("\t%d\t%s", a.Count, dash(a.FirstTime))
			} else {
				line += "\t-\t-"
			}
		}
		if windows {
			if x := n.Window; x != nil {
				line += fmt.Sprintf("\t%d\t%v", x.Count, x.Sum)
			} else {
				line += "\t-\t-"
			}
		}
		if refs {
			line += "\t" + dash(n.Ref)
		}
		if props {
			line += "\t" + dash(string(n.Props))
		}
		fmt.Fprintln(tw, line)
	}
	tw.Flush()
	for _, n := range ns {
		if n.Window == nil || len(n.Window.Events) == 0 {
			continue
		}
		name := n.Key
		if name == "" {
			name = strconv.FormatUint(n.ID, 10)
		}
		if n.Type != "" {
			name += " " + n.Type
		}
		fmt.Fprintf(w, "events of %s since %s:\n", name, n.Window.Since)
		writeEvents(w, n.Window.Events, n.Window.More)
	}
}

// writeEvents prints events as a table, and a line when more were left
// out.
func writeEvents(w io.Writer, es []EdgeEvent, more bool) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME\tAMOUNT\tREF\tPROPS\tSEQ")
	for _, e := range es {
		t, ref, props := e.Time, e.Ref, string(e.Props)
		for _, p := range []*string{&t, &ref, &props} {
			if *p == "" {
				*p = "-"
			}
		}
		fmt.Fprintf(tw, "%s\t%v\t%s\t%s\t%d\n", t, e.Amount, ref, props, e.Seq)
	}
	tw.Flush()
	if more {
		fmt.Fprintln(w, "(more events than listed: --limit)")
	}
}

// WriteText prints the events as a table with their count and sum.
func (r EventsResponse) WriteText(w io.Writer) {
	from, to := VertexName(r.Src.ID, r.Src.Key), VertexName(r.Dst.ID, r.Dst.Key)
	t := r.Type
	if t == "" {
		t = "default"
	}
	fmt.Fprintf(w, "events from %s to %s of type %s", from, to, t)
	if r.Since != "" {
		fmt.Fprintf(w, " since %s", r.Since)
	}
	fmt.Fprintf(w, ": %d, sum %v (%s view at seq %d)\n", r.Count, r.Sum, r.View, r.Seq)
	if len(r.Events) > 0 {
		writeEvents(w, r.Events, r.More)
	}
	if r.Folded {
		fmt.Fprintln(w, "older events are folded into the edge's aggregate (query edge)")
	}
}

// WriteText prints the edges found, or that there is none.
func (r EdgeResponse) WriteText(w io.Writer) {
	from, to := VertexName(r.Src.ID, r.Src.Key), VertexName(r.Dst.ID, r.Dst.Key)
	if !r.Found {
		fmt.Fprintf(w, "no edge from %s to %s (%s view at seq %d)\n", from, to, r.View, r.Seq)
		return
	}
	fmt.Fprintf(w, "edges from %s to %s: %d (%s view at seq %d)\n", from, to, len(r.Edges), r.View, r.Seq)
	writeEdges(w, r.Edges)
}

// WriteText prints the changes as a table, and how to ask for the next
// page.
func (r ChangesResponse) WriteText(w io.Writer) {
	fmt.Fprintf(w, "changes from seq %d to seq %d: %d on this page (%d edges read)\n", r.From, r.To, len(r.Changes), r.EdgesRead)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CHANGE\tSRC\tDST\tTYPE\tWEIGHT\tWAS")
	for _, c := range r.Changes {
		t, was := c.Type, ""
		if t == "" {
			t = "default"
		}
		if c.OldWeight != nil {
			was = strconv.FormatFloat(*c.OldWeight, 'g', -1, 64)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%v\t%s\n", c.Change, VertexName(c.Src, c.SrcKey), VertexName(c.Dst, c.DstKey), t, c.Weight, was)
	}
	tw.Flush()
	if r.NextAfter != nil {
		more := fmt.Sprintf("more: --after %d --after-dst %d", *r.NextAfter, *r.NextAfterDst)
		if r.NextAfterType != "" {
			more += " --after-type " + r.NextAfterType
		}
		fmt.Fprintln(w, more)
	}
}

// WriteText prints the path, or that there is none.
func (r PathResponse) WriteText(w io.Writer) {
	by := "hops"
	if r.Weighted {
		by = "weight"
	}
	within := ""
	if r.MaxDepth > 0 {
		within = fmt.Sprintf(" within %d hops", r.MaxDepth)
	}
	from, to := VertexName(r.From.ID, r.From.Key), VertexName(r.To.ID, r.To.Key)
	if !r.Found {
		fmt.Fprintf(w, "no path from %s to %s%s (read %d edges, seq %d)\n", from, to, within, r.EdgesRead, r.Seq)
		return
	}
	fmt.Fprintf(w, "shortest path from %s to %s by %s%s: %v (read %d edges, seq %d)\n", from, to, by, within, *r.Length, r.EdgesRead, r.Seq)
	names := make([]string, len(r.Path))
	for i, p := range r.Path {
		names[i] = VertexName(p.ID, p.Key)
	}
	fmt.Fprintln(w, strings.Join(names, " -> "))
}

// WriteText prints the ranking as a table.
func (r TopResponse) WriteText(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "#\tVERTEX\tKEY\tRANK")
	for i, x := range r.Top {
		fmt.Fprintf(tw, "%d\t%d\t%s\t%.6g\n", i+1, x.Vertex, x.Key, x.Rank)
	}
	tw.Flush()
	if !r.Ready {
		fmt.Fprintf(w, "analytic %s has not finished its first compute\n", r.Analytic)
	}
}

// WriteComponentText prints a vertex's component (a wcc result) in one
// line.
func WriteComponentText(w io.Writer, r VertexResultResponse, c ComponentResult) {
	fmt.Fprintf(w, "component of %s: %s (its smallest vertex), %d vertices (seq %d)\n",
		VertexName(r.Vertex, r.Key), VertexName(c.Component, c.ComponentKey), c.Size, r.Seq)
}

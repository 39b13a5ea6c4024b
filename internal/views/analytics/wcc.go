package analytics

import (
	"context"

	"github.com/graphtide/graphtide/internal/views"
	"github.com/graphtide/graphtide/internal/views/analytics/repair"
)

// wcc keeps the weakly connected components (repair.Components: the
// component of a vertex is named by its smallest vertex id in the store),
// recomputed with Afforest and repaired batch by batch.
type wcc struct {
	spec Spec

	guarded[*repair.Components]
}

func newWCC(s Spec) *wcc { return &wcc{spec: s} }

func (a *wcc) Spec() Spec { return a.spec }

func (a *wcc) Recompute(ctx context.Context, g *views.Topo) error {
	st, err := repair.NewComponents(ctx, g)
	if err != nil {
		return err
	}
	a.swap(st)
	return nil
}

func (a *wcc) Update(ctx context.Context, g *views.Topo, edges []views.Edge) (bool, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	ok, err := a.st.Update(ctx, g, edges)
	if err != nil {
		return false, err
	}
	if !ok {
		return true, a.unlocked(func() error { return a.Recompute(ctx, g) })
	}
	return false, ctx.Err()
}

// WCCSummary is the result of a wcc analytic.
type WCCSummary struct {
	Seq        uint64 `json:"seq"`
	Components int    `json:"components"` // components of two or more vertices
	Largest    int    `json:"largest"`    // vertices in the largest component
}

func (a *wcc) Summary() any {
	a.mu.RLock()
	defer a.mu.RUnlock()
	var s WCCSummary
	if a.st == nil {
		return s
	}
	s.Seq = a.st.Sequence()
	s.Components, s.Largest = a.st.Counts()
	return s
}

// VertexComponent is the per-vertex result of wcc.
type VertexComponent struct {
	Component uint64 `json:"component"` // smallest vertex id of the component
	Size      int    `json:"size"`
}

func (a *wcc) Vertex(v uint64) (any, bool) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	if a.st == nil {
		return nil, false
	}
	id, size := a.st.Component(v)
	return VertexComponent{id, size}, true
}

// MemoryBytes is the components' (repair.Components.Bytes).
func (a *wcc) MemoryBytes() int64 {
	a.mu.RLock()
	defer a.mu.RUnlock()
	if a.st == nil {
		return 0
	}
	return a.st.Bytes()
}

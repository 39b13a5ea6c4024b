package analytics

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/graphtide/graphtide/internal/checkpoint"
	"github.com/graphtide/graphtide/internal/views"
)

// Checkpoints of the built-in analytics (every one but those of some edge
// types that follow a topology of their own): the topology the graph
// analytics and the degree and fraud monitors read, and each one's state
// (the fanin and fanout monitors' windows need no topology), all at one
// sequence number of the store, with the source position after it and
// where the alert sinks' delivered alerts stood. A restart that replays
// the source from that position (the records after it go through the
// store again, which changes nothing they had made) restores them there
// instead of recomputing: see Restore.
//
// File layout (package checkpoint): a "meta" section (CheckpointMeta as
// JSON), a "topology" section (views.SaveTopo) when meta.Topology, then
// one "analytic" section per analytic of meta's list, in its order (the
// name, then the state, over the topology's canonical space).

// CheckpointVersion is the version of the checkpoint's content.
// 2: a fraud monitor's window holds event times in µs and its late count.
// 3: the degree, fanin and fanout monitors are in it; the topology may not
// be (meta.Topology); a window's late count follows its operations.
// 4: a fraud monitor's state ends with its ring window (ringWindow.save);
// a fan window (fanin, fanout, fraud) holds each operation's endpoints,
// amount, seq, reference, type and the payload of the newest, and the
// vertices above the threshold and the mules.
const CheckpointVersion = 4

// CheckpointMeta describes a checkpoint.
type CheckpointMeta struct {
	Version int `json:"version"`
	// Seq is the store's sequence number the topology and the states are
	// at; Position the source position after it (opaque here: what the
	// ingester records with the store's batches).
	Seq      uint64    `json:"seq"`
	Position []byte    `json:"position"`
	Created  time.Time `json:"created"`
	// Analytics are the specs of the states saved, in section order.
	Analytics []Spec `json:"analytics"`
	// Topology: the file holds the topology (some analytic saved reads
	// it).
	Topology bool `json:"topology"`
	// Sinks holds, for each of the registry's alert sinks that can
	// (checkpointSink), where its delivered alerts stood (nil for others).
	Sinks [][]byte `json:"sinks,omitempty"`
	// CatchUp is how long the analytics took to reach Seq (the rest of a
	// checkpoint's time is the sinks' acknowledgements and the writing);
	// Bytes the file's size. Not stored.
	CatchUp time.Duration `json:"-"`
	Bytes   int64         `json:"-"`
}

// checkpointSink is an AlertSink whose delivery a checkpoint covers (the
// Kafka sink): alerts exactly once across restarts.
type checkpointSink interface {
	AlertSink
	// Checkpoint returns the sink's state once every analytic has seen
	// the records below position (the checkpoint's source position),
	// failing if an alert published so far was lost: what a restart
	// needs to deliver each alert once.
	Checkpoint(ctx context.Context, position []byte) ([]byte, error)
	// Resume gives the sink back its state (what a Checkpoint returned),
	// before the replay after a restart raises the alerts since again.
	Resume(ctx context.Context, pos []byte) error
}

// ErrNoCheckpoint is returned by Restore when there is no checkpoint file.
var ErrNoCheckpoint = checkpoint.ErrNotExist

// ResumeError is Restore's error when an alert sink could not learn which
// of its alerts were delivered since the checkpoint (the Kafka sink asks
// the brokers): nothing was registered, and the checkpoint itself was
// read whole and accepted, so a later Restore of the same file may
// succeed once the sink's brokers answer.
type ResumeError struct {
	Sink int // the sink's index in RegistryConfig.Sinks
	Err  error
}

func (e *ResumeError) Error() string {
	return fmt.Sprintf("analytics: alert sink %d could not learn which alerts were delivered since the checkpoint: %v", e.Sink, e.Err)
}

func (e *ResumeError) Unwrap() error { return e.Err }

// MaxCheckpointDeferrals is how many checkpoints in a row may keep the
// file on disk (DeferredError) rather than leave out an analytic that did
// not catch up.
const MaxCheckpointDeferrals = 3

// DeferredError is Checkpoint's error when analytics did not catch up in
// time and the checkpoint file on disk holds their state: that file is
// kept whole, as it is (a restart restores them, with every other
// analytic and the alert sinks' state, from there and replays from its
// position), rather than replaced by one without them, which would make
// them compute from scratch after a restart. At most
// MaxCheckpointDeferrals checkpoints in a row are deferred so; the next
// leaves them out, so that the replay a restart needs stays bounded.
type DeferredError struct {
	Analytics []string // those that did not catch up, in name order
	Deferrals int      // the checkpoints in a row deferred, this one included
}

func (e *DeferredError) Error() string {
	return fmt.Sprintf("analytics: %s did not catch up for the checkpoint: the one on disk, which holds their state, is kept (%d of at most %d in a row)",
		strings.Join(e.Analytics, ", "), e.Deferrals, MaxCheckpointDeferrals)
}

// deferFor is the DeferredError of a checkpoint that analytics late did
// not catch up for, when the file on disk holds the state of one of them
// and fewer than MaxCheckpointDeferrals checkpoints in a row were
// deferred; else nil (the checkpoint is written without them).
func (r *Registry) deferFor(late []*entry) error {
	r.ckFileMu.Lock()
	defer r.ckFileMu.Unlock()
	if len(late) == 0 || r.onDisk == nil || r.deferred >= MaxCheckpointDeferrals {
		return nil
	}
	held := false
	var names []string
	for _, e := range late {
		s := e.a.Spec()
		names = append(names, s.Name)
		if k, ok := r.onDisk[s.Name]; ok && k == specKey(s) {
			held = true
		}
	}
	if !held {
		return nil
	}
	r.deferred++
	return &DeferredError{Analytics: names, Deferrals: r.deferred}
}

// keptOnDisk records the analytics of the checkpoint file on disk (meta
// its, just written or read whole).
func (r *Registry) keptOnDisk(meta CheckpointMeta) {
	r.ckFileMu.Lock()
	defer r.ckFileMu.Unlock()
	r.onDisk, r.deferred = map[string]string{}, 0
	for _, s := range meta.Analytics {
		r.onDisk[s.Name] = specKey(s)
	}
}

// catchUpReq asks an analytic's goroutine to bring its state to at least
// seq and answer on done.
type catchUpReq struct {
	seq  uint64
	done chan struct{}
}

// request queues a catch-up request and wakes the analytic's wait.
func (e *entry) request(seq uint64) *catchUpReq {
	q := &catchUpReq{seq: seq, done: make(chan struct{})}
	e.ckMu.Lock()
	e.ckReqs = append(e.ckReqs, q)
	wake := e.ckWake
	e.ckMu.Unlock()
	if wake != nil {
		wake()
	}
	return q
}

// waitContext is ctx, also canceled as soon as a catch-up request is
// pending: the analytic's waits (its pace, its stream's Pull) use it.
func (e *entry) waitContext(ctx context.Context) (context.Context, func()) {
	wctx, cancel := context.WithCancel(ctx)
	e.ckMu.Lock()
	pending := len(e.ckReqs) > 0
	e.ckWake = cancel
	e.ckMu.Unlock()
	if pending {
		cancel()
	}
	return wctx, func() {
		e.ckMu.Lock()
		e.ckWake = nil
		e.ckMu.Unlock()
		cancel()
	}
}

// pending reports whether a catch-up request waits.
func (e *entry) pending() bool {
	e.ckMu.Lock()
	defer e.ckMu.Unlock()
	return len(e.ckReqs) > 0
}

// answer answers the requests that seq satisfies.
func (e *entry) answer(seq uint64) {
	e.ckMu.Lock()
	defer e.ckMu.Unlock()
	k := 0
	for _, q := range e.ckReqs {
		if q.seq <= seq {
			close(q.done)
			continue
		}
		e.ckReqs[k] = q
		k++
	}
	e.ckReqs = e.ckReqs[:k]
}

// sinkAt is sinks[i], nil past the end.
func sinkAt(sinks []AlertSink, i int) AlertSink {
	if i < len(sinks) {
		return sinks[i]
	}
	return nil
}

// specKey is what must be equal for a saved state to serve a spec: every
// setting but the cadence (batch size, interval, max behind), which does
// not change the result.
func specKey(s Spec) string {
	s.BatchSize, s.Interval, s.MaxBehind = 0, 0, 0
	b, _ := json.Marshal(s)
	return string(b)
}

// serves reports whether the state saved for spec saved serves spec s:
// the same settings but cadence, except that a pagerank saved at a
// tighter tolerance serves a looser one (its ranks are at least as
// close; the updates then push to s's target). So a pagerank that states
// no tolerance, saved when the default was 1e-6, restores under today's
// default (1e-4) rather than computing from the store.
func serves(saved, s Spec) bool {
	if s.Type == "pagerank" && saved.Type == "pagerank" && saved.Tolerance <= s.Tolerance {
		saved.Tolerance = s.Tolerance
	}
	return specKey(saved) == specKey(s)
}

// Checkpoint writes the state of every built-in analytic (and the
// topology, when one of them reads it) to path, all at the store's newest
// sequence number, with position (the source position after it). Each
// analytic's goroutine is asked to catch up first. When one does not
// within two thirds of ctx's time and the file on disk holds its state,
// that file is kept as it is and a *DeferredError returned (at most
// MaxCheckpointDeferrals times in a row): a restart restores it from
// there, the whole file being one consistent point (the analytics, the
// topology, the alert sinks' state and the source position to replay
// from), rather than computing it from scratch. Otherwise one that did
// not catch up is left out (it computes from the store after a restart).
// The caller must
// keep the store from changing meanwhile (serve's ingester calls it
// between two batches, once they are durable). With no such analytic it
// writes nothing and returns a zero CheckpointMeta.
func (r *Registry) Checkpoint(ctx context.Context, path string, position []byte) (CheckpointMeta, error) {
	sm, err := r.m.Store().Metrics()
	if err != nil {
		return CheckpointMeta{}, err
	}
	head := sm.LastSeq
	es := r.checkpointedEntries()
	if len(es) == 0 {
		return CheckpointMeta{}, nil
	}
	meta := CheckpointMeta{Version: CheckpointVersion, Position: position, Created: time.Now().UTC()}
	meta.CatchUp = r.catchUp(ctx, es, head)
	// Before the sinks: a deferred checkpoint changes nothing.
	var late []*entry
	for _, e := range es {
		if e.a.Seq() != head {
			late = append(late, e)
		}
	}
	if err := r.deferFor(late); err != nil {
		return CheckpointMeta{}, err
	}
	if meta.Sinks, err = r.holdAlerts(ctx, position); err != nil {
		return CheckpointMeta{}, err
	}
	write := func(g *views.Topo) error { return writeCheckpoint(path, &meta, es, head, g) }
	if slices.ContainsFunc(es, func(e *entry) bool { k, _ := kindOf(e.a.Spec().Type); return k.topo }) {
		err = r.m.Topology().Save(write)
	} else {
		err = write(nil)
	}
	if err != nil {
		return CheckpointMeta{}, err
	}
	r.keptOnDisk(meta)
	return meta, nil
}

// checkpointedEntries are the analytics a checkpoint keeps, in name order
// (the same registry writes the same file).
func (r *Registry) checkpointedEntries() []*entry {
	var es []*entry
	for _, e := range r.list() {
		if checkpointed(e.a.Spec()) {
			es = append(es, e)
		}
	}
	slices.SortFunc(es, func(a, b *entry) int { return strings.Compare(a.a.Spec().Name, b.a.Spec().Name) })
	return es
}

// catchUp asks each of es to catch up to head and waits for them, for two
// thirds of ctx's time (one that does not make it is left out, and the
// sinks and the file still get the rest); it returns how long it waited.
func (r *Registry) catchUp(ctx context.Context, es []*entry, head uint64) time.Duration {
	reqs := make([]*catchUpReq, len(es))
	for i, e := range es {
		reqs[i] = e.request(head)
	}
	wctx := ctx
	if dl, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		wctx, cancel = context.WithDeadline(ctx, time.Now().Add(time.Until(dl)*2/3))
		defer cancel()
	}
	t0 := time.Now()
	for i, q := range reqs {
		select {
		case <-q.done:
			continue
		default:
		}
		select {
		case <-q.done:
		case <-wctx.Done():
			r.cfg.Logger.Warn("an analytic did not catch up for the checkpoint", "analytic", es[i].a.Spec().Name)
		}
	}
	return time.Since(t0)
}

// holdAlerts makes every alert raised up to now delivered, or kept by its
// sink, and the alert history durable, before the checkpoint is taken
// past them (one a crash takes from the history was raised after it, and
// comes again). It returns each sink's position (nil for a sink that
// keeps none).
func (r *Registry) holdAlerts(ctx context.Context, position []byte) ([][]byte, error) {
	var sinks [][]byte
	for _, sk := range r.cfg.Sinks {
		var pos []byte
		if cs, ok := sk.(checkpointSink); ok {
			var err error
			if pos, err = cs.Checkpoint(ctx, position); err != nil {
				return nil, err
			}
		}
		sinks = append(sinks, pos)
	}
	if h := r.cfg.History; h != nil {
		if err := h.Sync(); err != nil {
			return nil, fmt.Errorf("analytics: the alert history: %w", err)
		}
	}
	return sinks, nil
}

// writeCheckpoint writes the checkpoint file at path: meta, completed
// with what it holds, g's topology unless g is nil, and the state of
// each of es at head (those not at head are left out).
func writeCheckpoint(path string, meta *CheckpointMeta, es []*entry, head uint64, g *views.Topo) error {
	if g != nil && g.Seq != head {
		return fmt.Errorf("analytics: the topology is at seq %d, the store at %d: the store changed during the checkpoint", g.Seq, head)
	}
	meta.Seq, meta.Topology = head, g != nil
	var keep []*entry
	for _, e := range es {
		if e.a.Seq() == head {
			keep = append(keep, e)
			meta.Analytics = append(meta.Analytics, e.a.Spec())
		}
	}
	if len(keep) == 0 {
		return errors.New("analytics: no analytic caught up for the checkpoint")
	}
	var c views.IDSpace // the topology's canonical space (none without one)
	var ids []uint64
	if g != nil {
		var err error
		if c, ids, err = views.CanonicalIDs(g); err != nil {
			return err
		}
	}
	w, err := checkpoint.Create(path)
	if err != nil {
		return err
	}
	mb, err := json.Marshal(meta)
	if err != nil {
		w.Abort()
		return err
	}
	err = w.Section("meta", func(en *checkpoint.Encoder) { en.Bytes(mb) })
	if err == nil && g != nil {
		err = w.Section("topology", func(en *checkpoint.Encoder) { en.Fail(views.SaveTopo(en, g, c, ids)) })
	}
	for _, e := range keep {
		if err != nil {
			break
		}
		err = w.Section("analytic", func(en *checkpoint.Encoder) {
			en.Bytes([]byte(e.a.Spec().Name))
			seq, serr := e.a.(stateSaver).saveState(en, c)
			if serr == nil && seq != head {
				serr = fmt.Errorf("analytics: %q moved to seq %d during the checkpoint at %d", e.a.Spec().Name, seq, head)
			}
			en.Fail(serr)
		})
	}
	if err != nil {
		w.Abort()
		return err
	}
	meta.Bytes = w.Size()
	return w.Commit()
}

// checkpointed says whether a checkpoint keeps the state of an analytic of
// spec s: a built-in one (a custom analytic's state is its own) that does
// not follow a topology of some edge types (the checkpoint holds the
// topology of every type only: it computes again on start).
func checkpointed(s Spec) bool {
	k, _ := kindOf(s.Type)
	return k.build != nil && (k.stream || s.Types == "")
}

// Restore reads the checkpoint at path and registers, with their saved
// state, the analytics of specs that it holds a state for (by name, with
// the same settings but cadence: serves), after accept approved the checkpoint's
// meta (serve checks it against the store and arranges the replay from
// meta.Position). They resume from the checkpoint: the operations applied
// to the store from now on must start with the replay of everything after
// meta.Seq (see views.Topology.Restore). It returns the names restored
// (in name order); the caller registers the other specs as usual. Names
// with an error: the checkpoint was used, but some of its analytics could
// not be registered (the error says why); the replay is needed all the
// same.
//
// The whole file is read and checked before anything is registered: a
// damaged checkpoint (a *checkpoint.CorruptError), one accept refuses, or
// no file at all (ErrNoCheckpoint) restores nothing; so does a sink that
// cannot resume (a *ResumeError): Restore may then be called again (a
// sink's Resume replaces what an earlier one learnt). Call it before any
// graph analytic is registered.
func (r *Registry) Restore(ctx context.Context, path string, specs []Spec, accept func(CheckpointMeta) error) ([]string, error) {
	rd, err := checkpoint.Open(path)
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	meta, err := readMeta(rd, path)
	if err != nil {
		return nil, err
	}
	if err := accept(meta); err != nil {
		return nil, err
	}
	var g *views.Topo // nil: the file holds no topology
	if meta.Topology {
		err = rd.Section("topology", func(d *checkpoint.Decoder) (err error) { g, err = views.LoadTopo(d); return err })
		if err != nil {
			return nil, err
		}
	}
	got, err := r.readAnalytics(rd, meta, specs, g)
	if err != nil {
		return nil, err
	}
	if err := rd.End(); err != nil {
		return nil, err
	}
	if err := rd.Close(); err != nil {
		return nil, err
	}
	r.keptOnDisk(meta) // read whole and accepted: a restart may restore from it
	if len(got) == 0 {
		return nil, nil
	}
	return r.resume(ctx, meta, got, g)
}

// readMeta reads the meta section of the checkpoint at path, and refuses
// another content version.
func readMeta(rd *checkpoint.Reader, path string) (CheckpointMeta, error) {
	var meta CheckpointMeta
	err := rd.Section("meta", func(d *checkpoint.Decoder) error {
		if b := d.Bytes(); d.Err() == nil {
			if err := json.Unmarshal(b, &meta); err != nil {
				d.Fail("%v", err)
			}
		}
		return nil
	})
	if err != nil {
		return CheckpointMeta{}, err
	}
	if meta.Version != CheckpointVersion {
		return CheckpointMeta{}, fmt.Errorf("analytics: checkpoint %s has content version %d, this graphtide reads %d", path, meta.Version, CheckpointVersion)
	}
	return meta, nil
}

// restoredAnalytic is an analytic read from a checkpoint, not registered yet.
type restoredAnalytic struct {
	s    Spec
	a    Analytic
	root uint64
}

// readAnalytics reads the state of every analytic meta lists, and makes
// those of specs it serves (the others are skipped) with their state, on
// g's id space (nil: the file holds no topology).
func (r *Registry) readAnalytics(rd *checkpoint.Reader, meta CheckpointMeta, specs []Spec, g *views.Topo) ([]restoredAnalytic, error) {
	var c views.IDSpace
	if g != nil {
		c = g.IDs
	}
	want := map[string]Spec{}
	for _, s := range specs {
		if err := s.Validate(); err == nil {
			want[s.Name] = s
		}
	}
	var got []restoredAnalytic
	for _, saved := range meta.Analytics {
		err := rd.Section("analytic", func(d *checkpoint.Decoder) error {
			if name := string(d.Bytes()); d.Err() == nil && name != saved.Name {
				d.Fail("the state of %q where meta lists %q", name, saved.Name)
			}
			s, ok := want[saved.Name]
			if !ok || !serves(saved, s) || !checkpointed(s) {
				d.Skip() // not registered now, or with other settings
				return nil
			}
			x, ok, err := r.readAnalytic(d, s, g != nil, c, meta.Seq)
			if ok {
				got = append(got, x)
			}
			return err
		})
		if err != nil {
			return nil, err
		}
	}
	return got, nil
}

// readAnalytic makes the analytic of s and loads its state from d, at seq
// over c (topology: the file holds the topology). ok is false when it
// read none: skipped (a root that no longer resolves: registered as
// usual, which reports it) or refused (d failed).
func (r *Registry) readAnalytic(d *checkpoint.Decoder, s Spec, topology bool, c views.IDSpace, seq uint64) (x restoredAnalytic, ok bool, err error) {
	var root uint64
	if NeedsRoot(s.Type) {
		if root, err = r.cfg.Resolve(s.Root); err != nil {
			d.Skip()
			return restoredAnalytic{}, false, nil
		}
	}
	a, err := New(s, root, func(al []Alert) { r.raise(s.Name, al) })
	if err != nil {
		return restoredAnalytic{}, false, err
	}
	ss, isSaver := a.(stateSaver)
	if !isSaver {
		d.Fail("%q is a %s analytic, which keeps no state in a checkpoint", s.Name, s.Type)
		return restoredAnalytic{}, false, nil
	}
	if k, _ := kindOf(s.Type); k.topo && !topology {
		d.Fail("the state of %s analytic %q without the topology it reads", s.Type, s.Name)
		return restoredAnalytic{}, false, nil
	}
	if err := ss.loadState(d, c, seq); err != nil {
		return restoredAnalytic{}, false, err
	}
	return restoredAnalytic{s, a, root}, true, nil
}

// resume brings back the restored analytics got: the sinks learn where
// the checkpoint left them, the topology g is restored when one of them
// reads it, and each is registered from there. It returns the names
// registered, in name order.
func (r *Registry) resume(ctx context.Context, meta CheckpointMeta, got []restoredAnalytic, g *views.Topo) ([]string, error) {
	// The sinks learn which alerts were delivered since the checkpoint
	// before the replay raises them again.
	for i, pos := range meta.Sinks {
		if cs, ok := sinkAt(r.cfg.Sinks, i).(checkpointSink); ok && pos != nil {
			if err := cs.Resume(ctx, pos); err != nil {
				return nil, &ResumeError{Sink: i, Err: err}
			}
		}
	}
	// The topology is restored only for analytics that read it: held with
	// no stream open, it would be memory nobody uses.
	from := r.m.ResumePosition()
	if g != nil && slices.ContainsFunc(got, func(x restoredAnalytic) bool { k, _ := kindOf(x.s.Type); return k.topo }) {
		var err error
		if from, err = r.m.Topology().Restore(g); err != nil {
			return nil, err
		}
	}
	// From here the topology is the checkpoint's: the restored analytics,
	// and the replay the caller must arrange, go together. One that cannot
	// be registered (memory) is reported and left out; the others stand.
	var names []string
	var errs []error
	// Streams with Presence first: another restored analytic's first
	// pull may advance the topology, and a stream with Presence opened
	// after that would be Lost.
	slices.SortStableFunc(got, func(a, b restoredAnalytic) int {
		switch pa, pb := NeedsPresence(a.s), NeedsPresence(b.s); {
		case pa == pb:
			return 0
		case pa:
			return -1
		}
		return 1
	})
	for _, x := range got {
		if _, err := r.register(x.s, x.a, &from, nil); err != nil {
			errs = append(errs, err)
			continue
		}
		names = append(names, x.s.Name)
	}
	slices.Sort(names)
	return names, errors.Join(errs...)
}

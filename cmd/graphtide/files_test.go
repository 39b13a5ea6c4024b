package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/graphtide/graphtide/internal/api"
	"github.com/graphtide/graphtide/internal/datadir"
	"github.com/graphtide/graphtide/internal/durable"
	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/history"
	"github.com/graphtide/graphtide/internal/memdir"
	"github.com/graphtide/graphtide/internal/server"
	"github.com/graphtide/graphtide/internal/testref/volume"
	"github.com/graphtide/graphtide/internal/writes"
)

// Every file kind of a data directory, held to the core's rule: the test
// fills a data directory the way serve does, lists every entry in it,
// fails on one that no kind of datadir.Entries matches (or that the table
// below does not damage), and damages each kind as its table entry says
// (a flipped bit at every byte or a sample, a cut at every offset or a
// sample, a deletion, garbage where nothing is read). Each damaged copy
// must be refused (inspect --verify's check reports it naming the file,
// the read-write open serve makes refuses naming it, and so does the
// read-only open when it reads the file) or be provably harmless (the
// check finds nothing, every open reads exactly the original), or, where
// the kind allows it, be what a crash leaves: a torn tail past what the
// store's durable state claims, cut; a MANIFEST back at an earlier flush.
//
// A new kind of file (an alert history, say) is one entry in
// datadir.Entries (with its claim and verify when the store depends on
// it) and one entry in fileKindTests; fillLikeServe must make serve write
// one, and readView read its content, so that "harmless" compares it too.

// outcome is what a damage must do.
type outcome int

const (
	// refused: the check reports the file; the opens that read it refuse
	// naming it; the others read exactly the original.
	refused outcome = iota + 1
	// harmless: the check finds no problem (notes allowed); every open
	// reads exactly the original.
	harmless
	// tornPastClaim: refused, harmless, or (only when the damage is in the last
	// record and the store's durable state does not claim that record) a
	// torn tail: every open reads the original without that record. For
	// keys.dict the claim is the store's key-id bound: a cut may drop only
	// keys no edge of the store uses (a write refused by its condition
	// named them).
	tornPastClaim
	// earlierFlush: refused, or the store opens at an earlier flush (a
	// MANIFEST cut at a record boundary is what a crash before the last
	// flush leaves; Kafka replays the rest).
	earlierFlush
)

// kindTest is how the test damages one kind of entry.
type kindTest struct {
	// make creates an entry of the kind in dir (for kinds serve leaves
	// only after a crash or a repair) and returns its path in dir.
	make func(t *testing.T, dir string) string
	// flip and cut pick the offsets to flip a bit at and to cut at (nil:
	// none: a directory, an empty file).
	flip, cut func(size int64) []int64
	// what each damage must do (0: not tried, see why).
	flipWant, cutWant, deleteWant, garbageWant outcome
	// roReads: the read-only open (inspect, query) reads the file.
	roReads bool
	// why the entry is not damaged here, when it is not.
	why string
}

// every offset of a file.
func every(size int64) []int64 {
	out := make([]int64, size)
	for i := range out {
		out[i] = int64(i)
	}
	return out
}

// sample: every offset of a small file, else its first and last bytes
// and offsets spread over the rest.
func sample(n int64) func(size int64) []int64 {
	return func(size int64) []int64 {
		if size <= 3*n {
			return every(size)
		}
		var out []int64
		for i := int64(0); i < n; i++ {
			out = append(out, i, size-n+i, n+(size-2*n)*i/n)
		}
		slices.Sort(out)
		return slices.Compact(out)
	}
}

// lastRecordOnly: offsets in the last record only (its start is found by
// the judge; the store's own tests cut elsewhere).
var fileKindTests = map[string]kindTest{
	"store/MANIFEST":            {flip: sample(48), cut: sample(48), flipWant: refused, cutWant: earlierFlush, deleteWant: refused, roReads: true},
	"store/*.seg":               {flip: sample(12), cut: sample(6), flipWant: refused, cutWant: refused, deleteWant: refused, roReads: true},
	"store/MANIFEST.tmp":        {make: makeFile("store/MANIFEST.tmp"), garbageWant: harmless, deleteWant: harmless, roReads: true},
	"store/LOCK":                {garbageWant: harmless, deleteWant: harmless, roReads: true},
	"keys.dict":                 {flip: sample(64), cut: sample(64), flipWant: refused, cutWant: tornPastClaim, deleteWant: refused, roReads: true},
	"keys.dict.tmp":             {make: makeFile("keys.dict.tmp"), garbageWant: harmless, deleteWant: harmless, roReads: true},
	"types.json":                {flip: every, cut: every, flipWant: refused, cutWant: refused, deleteWant: refused, roReads: true},
	"history.idx":               {flip: every, cut: every, flipWant: tornPastClaim, cutWant: tornPastClaim, deleteWant: refused, roReads: true},
	"writes.log":                {flip: every, cut: every, flipWant: tornPastClaim, cutWant: tornPastClaim, deleteWant: refused},
	"alerts.log":                {flip: sample(150), cut: sample(150), flipWant: tornPastClaim, cutWant: tornPastClaim, deleteWant: refused, roReads: false},
	"registered-analytics.json": {flip: every, cut: every, flipWant: refused, cutWant: refused, deleteWant: refused},
	"analytics.ckpt":            {flip: sample(64), cut: sample(64), flipWant: harmless, cutWant: harmless, deleteWant: harmless},
	"analytics.ckpt.tmp":        {make: makeFile("analytics.ckpt.tmp"), garbageWant: harmless, deleteWant: harmless},
	".*.tmp-*":                  {make: makeFile(".types.json.tmp-123456"), garbageWant: harmless, deleteWant: harmless},
	"embedded-broker": {why: "the embedded broker's own data (kfake checksums its records): not read by the data directory; " +
		"TestEveryFileKind checks that serve refuses the new cluster a deleted one starts"},
	"repair-*": {make: func(t *testing.T, dir string) string {
		t.Helper()
		rel := "repair-20261201T000000.000Z"
		if err := os.MkdirAll(filepath.Join(dir, rel), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, rel, "REPAIR.txt"), []byte("garbage"), 0o644); err != nil {
			t.Fatal(err)
		}
		return rel
	}, deleteWant: harmless, why: "backups of what a repair changed: never read"},
}

// makeFile makes a leftover at rel holding garbage.
func makeFile(rel string) func(t *testing.T, dir string) string {
	return func(t *testing.T, dir string) string {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(rel)), []byte("\x00garbage\xff"), 0o644); err != nil {
			t.Fatal(err)
		}
		return rel
	}
}

// fileView is everything the opens read of a data directory.
type fileView struct {
	contents
	durableSeq uint64
	samples    []history.Sample
	entries    []writes.Entry
	specs      []string
	alerts     []string
}

func (v fileView) equal(o fileView) bool {
	return v.contents.equal(o.contents) && v.durableSeq == o.durableSeq && slices.Equal(v.samples, o.samples) &&
		slices.EqualFunc(v.entries, o.entries, func(a, b writes.Entry) bool { return fmt.Sprint(a) == fmt.Sprint(b) }) &&
		slices.Equal(v.specs, o.specs) && slices.Equal(v.alerts, o.alerts)
}

// serveOptions is the read-write open serve makes.
var serveOptions = datadir.Options{Store: engine.Options{KeepHistory: true}, Times: true, Writes: true, Registered: true, Alerts: true}

// readView opens dir (read-only, or as serve does) and reads everything.
func readView(dir string, readOnly bool) (fileView, error) {
	var d *datadir.Dir
	var err error
	if readOnly {
		d, err = datadir.OpenReadOnly(dir)
	} else {
		d, err = datadir.Open(dir, serveOptions)
	}
	if err != nil {
		return fileView{}, err
	}
	defer d.Close()
	var v fileView
	if v.contents, err = readContents(d); err != nil {
		return v, err
	}
	m, err := d.Store.Metrics()
	if err != nil {
		return v, err
	}
	v.durableSeq = m.DurableSeq
	if d.Times != nil {
		v.samples = d.Times.Samples()
	}
	if d.Writes != nil {
		v.entries = d.Writes.Entries()
	}
	if d.Alerts != nil {
		al, total, _, err := d.Alerts.Alerts()
		if err != nil {
			return v, err
		}
		for _, a := range al {
			v.alerts = append(v.alerts, a.ID)
		}
		v.alerts = append(v.alerts, fmt.Sprint("total ", total))
	}
	if d.Registered != nil {
		for _, s := range d.Registered.Specs() {
			v.specs = append(v.specs, string(s.JSON))
		}
	}
	return v, nil
}

// serveOptionsFor are the flags serve runs with to fill dir: JSON records
// with string keys and edge types, history, a writes topic, a configured
// analytic, the embedded broker.
func serveOptionsFor(t *testing.T, dir string) *server.Options {
	t.Helper()
	o := &server.Options{Dir: dir, Topics: []string{"edges"}, Group: "g", Format: "json", DeadLetterTopic: "dlq",
		FlushInterval: 100 * time.Millisecond, CheckpointInterval: time.Hour, Reset: "earliest", HTTPAddr: "127.0.0.1:0",
		MemGraphMiB: 1, EmbeddedPort: 0, LogCapacity: 1 << 16, HistoryRetention: time.Hour, WritesTopic: "writes",
		AnalyticFlags: []string{"type=wcc", "type=fanin,threshold=2,window_edges=1000"}, WritesRetention: time.Hour, HTTPTimeout: 10 * time.Second, HTTPPathBudget: api.DefaultPathBudget,
		// payment accumulates: its events from Kafka keep their records'
		// source positions (format-6 files, the MANIFEST's source records).
		MappingFlags: []string{"edges:src=/src,dst=/dst,weight=/weight,time=/ts,type=/type,op=/op,types=payment:accumulate"}}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	return o
}

// fillLikeServe runs serve on a new data directory: records with keys and
// typed edges, an analytic registered over the API, keyed writes (one
// applied, one refused, one retried), more records, a clean stop (which
// checkpoints the analytics). It returns the directory.
func fillLikeServe(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	o := serveOptionsFor(t, dir)
	out := &syncBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- runServe(ctx, o, slog.New(slog.NewTextHandler(io.Discard, nil)), out) }()
	var broker, base string
	waitFor(t, "serve to print its addresses", func() bool {
		m := regexp.MustCompile(`embedded broker listening on (\S+);`).FindStringSubmatch(out.String())
		h := regexp.MustCompile(`http listening on (\S+)`).FindStringSubmatch(out.String())
		if m != nil && h != nil {
			broker, base = m[1], "http://"+h[1]
			return true
		}
		return false
	})
	records := func(from, n int) {
		t.Helper()
		var b strings.Builder
		types := []string{"payment", "login", "refund"}
		for i := from; i < from+n; i++ {
			fmt.Fprintf(&b, `{"op":"add","src":"acct-%d","dst":"acct-%d","type":%q,"weight":%d,"ts":%d}`+"\n",
				i%13, (i*7+3)%17, types[i%3], i%5+1, 1764000000000+int64(i)*1000)
		}
		file := filepath.Join(t.TempDir(), "records.json")
		if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, _, err := execute(t, "produce", "--brokers", broker, "--topic", "edges", file); err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf(`graphtide_ingest_records_total{topic="edges"} %d`, from+n)
		waitFor(t, "the records ingested", func() bool { _, body := httpGet(base + "/metrics"); return strings.Contains(body, want) })
	}
	post := func(path, body, key string, want int) {
		t.Helper()
		req, _ := http.NewRequest("POST", base+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if key != "" {
			req.Header.Set("Idempotency-Key", key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Fatalf("POST %s %s: %d %s, want %d", path, body, resp.StatusCode, b, want)
		}
	}
	records(0, 40)
	post("/v1/analytics", `{"name":"pr","type":"pagerank","damping":0.85}`, "", 201)
	write := `{"ops":[{"op":"add","src":"acct-1","dst":"acct-99","type":"refund","weight":7}]}`
	post("/v1/batches", write, "w-1", 200)
	post("/v1/batches", write, "w-1", 200) // a retry: its outcome is the first's
	post("/v1/batches", `{"ops":[{"op":"add","src":"acct-2","dst":"acct-98"}],"conditions":[{"kind":"edge_absent","src":"acct-1","dst":"acct-99","type":"refund"}]}`, "w-2", 409)
	time.Sleep(1500 * time.Millisecond) // history samples, a second apart
	records(40, 40)
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("serve: %v", err)
	}
	return dir
}

// listEntries lists the entries of the data directory dir: every file
// and directory, '/'-separated, not descending into the entries of a
// kind that is a directory of its own.
func listEntries(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, e os.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		if e.IsDir() {
			if k := datadir.Lookup(rel); k != nil && k.Dir {
				out = append(out, rel)
				return filepath.SkipDir
			}
			if rel == datadir.StoreName {
				return nil // the store's files are entries of their own
			}
		}
		out = append(out, rel)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// original is the undamaged directory as the opens read it.
type original struct {
	ro, rw fileView
	claims datadir.Claims
	// keyBound is one past the largest key id the store's edges use.
	keyBound uint64
}

// damaged is one damaged copy to judge.
type damaged struct {
	kind, rel, how string
	want           outcome
	roReads        bool
}

func TestEveryFileKind(t *testing.T) {
	src := fillLikeServe(t)
	for _, e := range datadir.Entries {
		if _, ok := fileKindTests[e.Name]; !ok {
			t.Errorf("datadir.Entries has %s, which this test does not damage: add it to fileKindTests", e.Name)
		}
	}
	for name := range fileKindTests {
		if !slices.ContainsFunc(datadir.Entries, func(e datadir.Entry) bool { return e.Name == name }) {
			t.Errorf("fileKindTests has %s, which is no kind of datadir.Entries", name)
		}
	}
	seen := map[string][]string{}
	for _, rel := range listEntries(t, src) {
		k := datadir.Lookup(rel)
		if k == nil {
			t.Errorf("the data directory holds %s, which is no kind of datadir.Entries: add its kind there, and its damage here", rel)
			continue
		}
		seen[k.Name] = append(seen[k.Name], rel)
	}
	for _, e := range datadir.Entries {
		if kt := fileKindTests[e.Name]; kt.make == nil && len(seen[e.Name]) == 0 {
			t.Errorf("serve left no %s in the data directory: the test does not exercise it", e.Name)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	var orig original
	var err error
	if orig.ro, err = readView(src, true); err != nil {
		t.Fatal(err)
	}
	d, err := datadir.OpenReadOnly(src)
	if err != nil {
		t.Fatal(err)
	}
	orig.claims = d.Claims()
	// The store numbers the topic's partitions as event sources, and a
	// file keeps the payments' source positions (format 6): the damage
	// below reaches both.
	if srcs := d.Store.EventSources(); len(srcs) == 0 || !strings.HasPrefix(srcs[0], "edges/") {
		t.Fatalf("the store numbers event sources %q, want the edges topic's partitions", srcs)
	}
	segs, _ := filepath.Glob(filepath.Join(src, "store", "*.seg"))
	format6 := false
	for _, f := range segs {
		if b, err := os.ReadFile(f); err == nil && len(b) > 12 && binary.LittleEndian.Uint32(b[8:]) == 6 {
			format6 = true
		}
	}
	if !format6 {
		t.Fatalf("no segment file of format 6 (source positions) among %v", segs)
	}
	sn, err := d.Store.DurableSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	_, orig.keyBound = sn.VertexBounds()
	sn.Release()
	d.Close()
	for _, name := range []string{datadir.TypesName, datadir.HistoryName, datadir.WritesName, datadir.RegisteredName, datadir.AlertsName} {
		if _, ok := orig.claims[name]; !ok {
			t.Fatalf("the store's durable state does not claim %s: claims %v", name, orig.claims)
		}
	}
	// The directory copied and opened per case: on tmpfs (memdir), not
	// the disk.
	work := filepath.Join(memdir.TempDir(t), "d")
	copyTree(t, src, work)
	if orig.rw, err = readView(work, false); err != nil {
		t.Fatal(err)
	}
	if len(orig.rw.samples) < 2 || len(orig.rw.entries) < 3 || len(orig.rw.specs) != 1 || len(orig.rw.types) < 4 || len(orig.rw.keys) < 10 || len(orig.rw.alerts) < 4 {
		t.Fatalf("serve left too little to damage: %d samples, %d writes, %d registered, types %v, %d keys, alerts %v",
			len(orig.rw.samples), len(orig.rw.entries), len(orig.rw.specs), orig.rw.types, len(orig.rw.keys), orig.rw.alerts)
	}
	// The read-write open of an undamaged copy reads what the read-only
	// one does.
	if !orig.rw.contents.equal(orig.ro.contents) || !slices.Equal(orig.rw.samples, orig.ro.samples) {
		t.Fatal("the read-write open reads other contents than the read-only one")
	}

	// Every damaged copy to judge, judged by as many workers as the test
	// may run at once, each on a copy of its own (a case's copy, damage
	// and judgement share nothing with another case's).
	type damageCase struct {
		name, rel, how string
		make           func(t *testing.T, dir string) string
		apply          func(path string) error
		want           outcome
		roReads        bool
	}
	var all []damageCase
	for _, name := range slices.Sorted(maps.Keys(fileKindTests)) {
		kt := fileKindTests[name]
		rels := seen[name]
		if kt.make != nil {
			copyDataDir(t, src, work)
			rels = []string{kt.make(t, work)}
		}
		if name == "store/*.seg" && len(rels) > 2 {
			slices.Sort(rels)
			rels = []string{rels[0], rels[len(rels)-1]}
		}
		for _, rel := range rels {
			var size int64
			if info, err := os.Stat(filepath.Join(src, rel)); err == nil && !info.IsDir() {
				size = info.Size()
			}
			add := func(how string, want outcome, apply func(path string) error) {
				all = append(all, damageCase{name: name, rel: rel, how: how, make: kt.make, apply: apply, want: want, roReads: kt.roReads})
			}
			if kt.flip != nil && kt.flipWant != 0 {
				for _, off := range kt.flip(size) {
					add(fmt.Sprintf("bit flipped at %d", off), kt.flipWant, func(p string) error { return flipBit(p, off) })
				}
			}
			if kt.cut != nil && kt.cutWant != 0 {
				for _, off := range kt.cut(size) {
					add(fmt.Sprintf("cut at %d", off), kt.cutWant, func(p string) error { return os.Truncate(p, off) })
				}
			}
			if kt.garbageWant != 0 {
				add("garbage written", kt.garbageWant, func(p string) error { return os.WriteFile(p, []byte("\x00garbage\xff"), 0o644) })
			}
			if kt.deleteWant != 0 {
				add("deleted", kt.deleteWant, os.RemoveAll)
			}
		}
	}
	// Under the race detector, which makes each case several times dearer,
	// every stride-th case of each kind from a phase drawn per run (all the
	// cases of a kind with no more than stride): every kind is still damaged,
	// and make test-volume judges every case without it.
	if stride := volume.Size(1, 8); stride > 1 {
		phase := rand.IntN(stride)
		t.Logf("under the race detector: every %dth damaged copy of each kind, from the %dth", stride, phase)
		cases, kept := map[string]int{}, all[:0:0]
		for _, c := range all {
			cases[c.name]++
		}
		at := map[string]int{}
		for _, c := range all {
			if at[c.name]%stride == phase || cases[c.name] <= stride {
				kept = append(kept, c)
			}
			at[c.name]++
		}
		all = kept
	}
	var mu sync.Mutex // protects tried and outcomes
	tried, outcomes := map[string]int{}, map[string]map[string]int{}
	workers := min(runtime.GOMAXPROCS(0), len(all))
	t.Run("damaged copies", func(pt *testing.T) {
		for w := range workers {
			pt.Run(fmt.Sprint("worker ", w), func(t *testing.T) {
				t.Parallel()
				work := filepath.Join(memdir.TempDir(t), "d")
				for i := w; i < len(all) && !pt.Failed(); i += workers {
					c := all[i]
					copyDataDir(t, src, work)
					if c.make != nil {
						c.make(t, work)
					}
					path := filepath.Join(work, filepath.FromSlash(c.rel))
					if err := c.apply(path); err != nil {
						t.Fatal(err)
					}
					got := judgeDamage(t, work, path, damaged{kind: c.name, rel: c.rel, how: c.how, want: c.want, roReads: c.roReads}, orig)
					mu.Lock()
					tried[c.name]++
					if outcomes[c.name] == nil {
						outcomes[c.name] = map[string]int{}
					}
					outcomes[c.name][got]++
					mu.Unlock()
				}
			})
		}
	})
	if t.Failed() {
		t.FailNow()
	}
	for _, name := range slices.Sorted(maps.Keys(tried)) {
		t.Logf("%s: %d damaged copies: %v", name, tried[name], outcomes[name])
	}

	// serve itself refuses the damage the issue found, before it starts
	// anything, naming the file, and changes nothing.
	cutLast := func(p string) error {
		info, err := os.Stat(p)
		if err != nil {
			return err
		}
		return os.Truncate(p, info.Size()-1)
	}
	flipLast := func(p string) error {
		info, err := os.Stat(p)
		if err != nil {
			return err
		}
		return flipBit(p, info.Size()-3)
	}
	for _, c := range []struct {
		rel    string
		how    string
		damage func(string) error
	}{
		{datadir.TypesName, "deleted", os.Remove},
		{datadir.WritesName, "a bit flipped in its last record", flipLast},
		{datadir.WritesName, "cut by 1 byte", cutLast},
		{datadir.HistoryName, "a bit flipped in its last sample", flipLast},
		{datadir.HistoryName, "cut by 1 byte", cutLast},
		{datadir.RegisteredName, "damping 0.85 read as 0.84", func(p string) error {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(p, []byte(strings.Replace(string(b), "0.85", "0.84", 1)), 0o644)
		}},
		{datadir.RegisteredName, "deleted", os.Remove},
	} {
		copyTree(t, src, work)
		path := filepath.Join(work, c.rel)
		if err := c.damage(path); err != nil {
			t.Fatal(err)
		}
		before := hashDir(t, work)
		err := runServe(context.Background(), serveOptionsFor(t, work), slog.New(slog.NewTextHandler(io.Discard, nil)), io.Discard)
		if err == nil || !strings.Contains(err.Error(), path) {
			t.Fatalf("serve with %s %s: %v, want a refusal naming it", c.rel, c.how, err)
		}
		after := hashDir(t, work)
		delete(before, filepath.Join(datadir.StoreName, "LOCK"))
		delete(after, filepath.Join(datadir.StoreName, "LOCK"))
		if !maps.Equal(before, after) {
			t.Fatalf("serve with %s %s changed the data directory it refused", c.rel, c.how)
		}
	}

	// The embedded broker's data deleted: serve starts a new cluster,
	// which the store refuses (its offsets are of the old one).
	copyTree(t, src, work)
	if err := os.RemoveAll(filepath.Join(work, datadir.EmbeddedBrokerName)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = runServe(ctx, serveOptionsFor(t, work), slog.New(slog.NewTextHandler(io.Discard, nil)), io.Discard)
	if err == nil || !strings.Contains(err.Error(), "cluster") {
		t.Fatalf("serve with the embedded broker's data deleted: %v, want a refusal of the new cluster", err)
	}
}

func flipBit(path string, off int64) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	b[off] ^= 1 << (off % 8)
	return os.WriteFile(path, b, 0o644)
}

// judgeDamage checks one damaged copy of the data directory work and
// says what it did: "refused", "harmless", "torn", "earlier flush".
func judgeDamage(t *testing.T, work, path string, c damaged, orig original) string {
	t.Helper()
	what := fmt.Sprintf("%s %s", c.rel, c.how)
	before := hashDir(t, work)
	r, err := datadir.Check(work)
	if err != nil {
		t.Fatalf("%s: check: %v", what, err)
	}
	if after := hashDir(t, work); !maps.Equal(before, after) {
		t.Fatalf("%s: the check changed the data directory", what)
	}
	roV, roErr := readView(work, true)
	after := hashDir(t, work)
	delete(after, filepath.Join(datadir.StoreName, "LOCK")) // a deleted LOCK is created again by any open
	delete(before, filepath.Join(datadir.StoreName, "LOCK"))
	if !maps.Equal(before, after) {
		t.Fatalf("%s: the read-only open changed the data directory", what)
	}
	rwV, rwErr := readView(work, false)

	names := func(s string) bool { return strings.Contains(s, path) }
	problem := false
	for _, p := range r.Problems {
		problem = problem || p.File == path || names(p.File+": "+p.What)
	}
	deleted := c.how == "deleted"
	roRefuses := c.roReads || deleted
	refusedOK := problem && rwErr != nil && names(rwErr.Error()) &&
		(roRefuses && roErr != nil && names(roErr.Error()) || !roRefuses && roErr == nil && roV.equal(orig.ro))
	if refusedOK {
		var ce *durable.CorruptError
		var ee *engine.CorruptionError
		if !errors.As(rwErr, &ce) && !errors.As(rwErr, &ee) && !namesFile(rwErr, path) {
			t.Fatalf("%s: refused with an untyped error: %v", what, rwErr)
		}
	}
	harmlessOK := r.OK() && roErr == nil && rwErr == nil && roV.equal(orig.ro) && rwV.equal(orig.rw)
	describe := func() string {
		return fmt.Sprintf("check problems %v; read-only open: %v; read-write open: %v", r.Problems, roErr, rwErr)
	}
	switch c.want {
	case refused:
		if !refusedOK {
			t.Fatalf("%s: want it refused naming %s: %s", what, path, describe())
		}
		return "refused"
	case harmless:
		if !harmlessOK {
			t.Fatalf("%s: want it harmless: %s (read the same: %v/%v)", what, describe(), roV.equal(orig.ro), rwV.equal(orig.rw))
		}
		return "harmless"
	case tornPastClaim:
		switch {
		case refusedOK:
			return "refused"
		case harmlessOK: // a seal damaged: it holds nothing new
			return "harmless"
		}
		torn := orig.rw
		switch c.kind {
		case datadir.HistoryName:
			n := len(torn.samples)
			if torn.samples[n-1].Seq <= orig.claims[datadir.HistoryName] {
				t.Fatalf("%s: the claimed last sample (seq %d, claim %d) was taken for a torn tail: %s", what, torn.samples[n-1].Seq, orig.claims[datadir.HistoryName], describe())
			}
			torn.samples = torn.samples[:n-1]
		case datadir.AlertsName:
			n := len(torn.alerts) - 1 // the last is the total
			if uint64(n) <= orig.claims[datadir.AlertsName] {
				t.Fatalf("%s: the claimed last alert (%d, claim %d) was taken for a torn tail: %s", what, n, orig.claims[datadir.AlertsName], describe())
			}
			torn.alerts = append(torn.alerts[:n-1:n-1], fmt.Sprint("total ", n-1))
		case datadir.WritesName:
			n := len(torn.entries)
			if uint64(n) <= orig.claims[datadir.WritesName] {
				t.Fatalf("%s: the claimed last record (%d, claim %d) was taken for a torn tail: %s", what, n, orig.claims[datadir.WritesName], describe())
			}
			torn.entries = torn.entries[:n-1]
		case datadir.KeysName:
			for id := range torn.keys {
				if _, ok := rwV.keys[id]; !ok && id < orig.keyBound {
					t.Fatalf("%s: key id %d, which the store uses, was lost: %s", what, id, describe())
				}
			}
			torn.keys = rwV.keys
		}
		if !r.OK() || roErr != nil || rwErr != nil || !rwV.equal(torn) {
			t.Fatalf("%s: want it refused, or a torn tail past the claim: %s", what, describe())
		}
		return "torn"
	case earlierFlush:
		if refusedOK {
			return "refused"
		}
		if !r.OK() || roErr != nil || rwErr != nil || rwV.durableSeq >= orig.rw.durableSeq {
			t.Fatalf("%s: want it refused, or the store at an earlier flush: %s (durable seq %d, was %d)", what, describe(), rwV.durableSeq, orig.rw.durableSeq)
		}
		return "earlier flush"
	}
	t.Fatalf("%s: no outcome wanted", what)
	return ""
}

// copyDataDir copies the data directory from to to, but for the
// embedded broker's data (which no open reads).
func copyDataDir(t *testing.T, from, to string) {
	t.Helper()
	if err := os.RemoveAll(to); err != nil {
		t.Fatal(err)
	}
	err := filepath.WalkDir(from, func(p string, e os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		if rel == datadir.EmbeddedBrokerName {
			return filepath.SkipDir
		}
		if e.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

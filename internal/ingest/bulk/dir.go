package bulk

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/graphtide/graphtide/internal/datadir"
	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/ingest/decode"
	"github.com/graphtide/graphtide/internal/progress"
	"github.com/graphtide/graphtide/internal/settings"
)

// DirLoad is a load into the store of a data directory (graphtide load).
type DirLoad struct {
	Dir   string
	Store engine.Options // for a new store; InEdges below decides its in-edges
	// InEdges, if set, is what the store keeps: a new store is created
	// so, an existing one must match. nil: a new store keeps in-edges (as
	// Store.InEdges says), an existing one what it was created with.
	InEdges *bool
	Files   []string
	Format  Format
	// MappingFile, if set, is a field mapping (YAML, of which JSON is a
	// part): every line is a JSON event read through it.
	MappingFile string
	Batch       int
	Progress    func(bytesRead, applied int64) // as Config's
}

// RunDirLoad is 'graphtide load': LoadDir with its progress drawn on
// errOut (package progress: bytes read of the files' size, every
// interval off a terminal) and what it loaded printed on out. l.Progress
// is its own.
func RunDirLoad(ctx context.Context, l DirLoad, out, errOut io.Writer, every time.Duration) error {
	var total int64
	for _, f := range l.Files {
		if info, err := os.Stat(f); err == nil {
			total += info.Size()
		}
	}
	start := time.Now()
	prog := progress.New(errOut, progress.IsTerminal(errOut), "load", "edges", "bytes", total, every, start)
	l.Progress = prog.Update
	n, err := LoadDir(ctx, l)
	// A bar's line must end before an error is printed.
	prog.Finish(n.BytesRead, n.Total())
	if err != nil {
		return err
	}
	secs := time.Since(start).Seconds()
	_, err = fmt.Fprintf(out, "loaded %d operations (%d upserts, %d edge deletes, %d vertex deletes, %d vertex records) from %d files into %s in %.3f s: %.0f ops/s, flushed\n",
		n.Total(), n.Upserts, n.Deletes, n.VertexDeletes, n.Vertices, len(l.Files), datadir.StorePath(l.Dir), secs, float64(n.Total())/secs)
	return err
}

// LoadDir opens (or creates) the data directory's store, sets the
// aggregates of the mapping's types before anything is applied, drops
// the analytics' checkpoint (serve could not replay what a load applies
// into them: they compute from the store at its next start), then Loads
// the files as Load does, and closes the directory.
func LoadDir(ctx context.Context, l DirLoad) (n Counts, err error) {
	var mapping *decode.Mapping
	if l.MappingFile != "" {
		if mapping, err = ReadMapping(l.MappingFile); err != nil {
			return n, err
		}
		l.Format = JSON
	}
	d, err := datadir.Open(l.Dir, datadir.Options{Store: l.Store, InEdges: l.InEdges, Create: true})
	if err != nil {
		return n, err
	}
	defer func() {
		if cerr := d.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	if mapping != nil {
		as, err := mapping.TypeAggregates()
		if err != nil {
			return n, err
		}
		byNum, err := ResolveAggregates(as, d.Types)
		if err != nil {
			return n, err
		}
		if _, err := ConfigureAggregates(d.Store, byNum); err != nil {
			return n, err
		}
	}
	if err := datadir.DropCheckpoint(l.Dir); err != nil {
		return n, err
	}
	return Load(ctx, Config{Store: d.Store, Keys: d.Keys, Types: d.Types, Batch: l.Batch, Progress: l.Progress, Mapping: mapping}, l.Files, l.Format)
}

// ReadMapping reads a mapping file (YAML, of which JSON is a part),
// refusing unknown fields and a mapping that does not compile.
func ReadMapping(path string) (*decode.Mapping, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--mapping: %w", err)
	}
	var m decode.Mapping
	if err := settings.DecodeStrict(raw, &m); err != nil {
		return nil, fmt.Errorf("--mapping %s: %w", path, err)
	}
	if _, err := decode.NewMapped(m, nil); err != nil {
		return nil, fmt.Errorf("--mapping %s: %w", path, err)
	}
	return &m, nil
}

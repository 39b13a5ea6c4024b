package server

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"sort"
	"sync"

	"github.com/graphtide/graphtide/internal/api"
	"github.com/graphtide/graphtide/internal/datadir"
	"github.com/graphtide/graphtide/internal/jsontext"
	"github.com/graphtide/graphtide/internal/views/analytics"
)

// The analytics registered over the HTTP API outlive the process: each
// POST /v1/analytics is stored in <dir>/registered-analytics.json (as the
// API's spec) before it is answered, each DELETE removes it first. At
// start, serve registers the configuration's analytics (--analytic and the
// config file's analytics section), then the stored ones. How the two
// lists combine:
//
//   - The configuration is declared state: its analytics are registered
//     at every start. A DELETE of one stops it until the next start.
//   - A stored analytic whose name the configuration also uses is not
//     registered (a WARN says so): the configuration's runs. It stays in
//     the file until a DELETE of that name, which removes both.
//   - Analytics of the API restored from the checkpoint that hold the
//     memory a configured analytic needs stop for it (a WARN says so; they
//     stay stored): Server.makeRoomFor.
//   - A stored analytic that no longer validates (its type or a setting
//     changed meaning) is not registered (a WARN says why) and stays
//     stored.
//
// A file that cannot be read as that list stops serve at start with the
// file and the byte offset: nothing in it is dropped silently. The file's
// format (checksummed; the data directory claims it, so a deleted or
// older copy is refused too) is package datadir's (datadir.Registered);
// this file says what its specs mean.

// registered is the stored list. It implements api.Persist.
type registered struct {
	file *datadir.Registered
	path string
	mu   sync.Mutex
	// specs by name, the file's content. Protected by mu.
	specs map[string]api.Spec
}

// loadRegistered reads the stored list of the data directory d (opened
// with datadir.Options.Registered).
func loadRegistered(d *datadir.Dir) (*registered, error) {
	r := &registered{file: d.Registered, path: d.Registered.Path(), specs: map[string]api.Spec{}}
	for i, raw := range d.Registered.Specs() {
		var s api.Spec
		if _, off, err := jsontext.DecodeStrict(raw.JSON, &s); err != nil {
			return nil, fmt.Errorf("%s: byte offset %d: %w (analytic %d of those registered over the API; restore the file from a backup)", r.path, raw.Offset+off, err, i)
		}
		if s.Name == "" {
			return nil, fmt.Errorf("%s: byte offset %d: analytic %d has no name", r.path, raw.Offset, i)
		}
		if _, dup := r.specs[s.Name]; dup {
			return nil, fmt.Errorf("%s: byte offset %d: two analytics are named %q", r.path, raw.Offset, s.Name)
		}
		r.specs[s.Name] = s
	}
	return r, nil
}

// startList returns the analytics to register at start: the configured
// ones, then the stored ones the rules above let in.
func (r *registered) startList(configured []analytics.Spec, log *slog.Logger) []analytics.Spec {
	out := append([]analytics.Spec(nil), configured...)
	names := map[string]bool{}
	for _, s := range configured {
		names[s.Name] = true
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, name := range r.sortedNames() {
		s := r.specs[name]
		if names[name] {
			log.Warn("an analytic registered over the API is not started: the configuration has one of the same name, which runs (DELETE it to remove both)", "name", name, "file", r.path)
			continue
		}
		sp, err := s.Analytics()
		if err == nil {
			err = sp.Validate()
		}
		if err != nil {
			log.Warn("an analytic registered over the API is not started: its spec does not validate (it stays stored; DELETE it to remove it)", "name", name, "file", r.path, "err", err)
			continue
		}
		out = append(out, sp)
	}
	return out
}

func (r *registered) sortedNames() []string {
	names := make([]string, 0, len(r.specs))
	for n := range r.specs {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Registered stores s.
func (r *registered) Registered(s analytics.Spec) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	old, had := r.specs[s.Name]
	r.specs[s.Name] = api.SpecOf(s)
	if err := r.save(); err != nil {
		if had {
			r.specs[s.Name] = old
		} else {
			delete(r.specs, s.Name)
		}
		return err
	}
	return nil
}

// Unregistered removes name, if stored, and says whether it was.
func (r *registered) Unregistered(name string) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	old, had := r.specs[name]
	if !had {
		return false, nil // a configured analytic: it comes back at the next start
	}
	delete(r.specs, name)
	if err := r.save(); err != nil {
		r.specs[name] = old
		return true, err
	}
	return true, nil
}

// save writes the file. Called with mu held.
func (r *registered) save() error {
	specs := make([]json.RawMessage, 0, len(r.specs))
	for _, n := range r.sortedNames() {
		b, err := json.Marshal(r.specs[n])
		if err != nil {
			return err
		}
		specs = append(specs, b)
	}
	return r.file.Save(specs)
}

package api

import (
	"errors"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/graphtide/graphtide/internal/keydict"
)

// ResolveRoot gives an unknown key or mapped number the id its first edge
// will have, durably; ResolveVertex then finds it, and a reopened
// dictionary still holds it. A known one resolves as ResolveVertex does.
func TestResolveRootAssignsDurably(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keys.dict")
	d, err := keydict.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	d.SetMapNumbers(true)
	big := strconv.FormatUint(keydict.MapFrom+5, 10)
	var unknown *UnknownVertexError
	for _, s := range []string{"acct-1", "key:42", big} {
		if _, err := ResolveVertex(d)(s); !errors.As(err, &unknown) {
			t.Fatalf("%s before: %v", s, err)
		}
	}
	ids := map[string]uint64{}
	for _, s := range []string{"acct-1", "key:42", big, "7"} {
		id, err := ResolveRoot(d)(s)
		if err != nil {
			t.Fatal(err)
		}
		if again, err := ResolveVertex(d)(s); err != nil || again != id {
			t.Fatalf("%s: ResolveRoot %d, then ResolveVertex %d %v", s, id, again, err)
		}
		ids[s] = id
	}
	if ids["7"] != 7 {
		t.Fatalf("a small number resolved to %d", ids["7"])
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	d, err = keydict.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	d.SetMapNumbers(true)
	if id, ok := d.Lookup("acct-1"); !ok || id != ids["acct-1"] {
		t.Fatalf("after reopening: acct-1 is %d %v, was %d", id, ok, ids["acct-1"])
	}
	if id, ok := d.LookupNum(keydict.MapFrom + 5); !ok || id != ids[big] {
		t.Fatalf("after reopening: %s is %d %v, was %d", big, id, ok, ids[big])
	}
}

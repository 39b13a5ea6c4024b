package export

import (
	"fmt"
	"io"
)

// CheckDirs checks the parts in dirs as one set (CheckSet) and prints
// what the set holds on out.
func CheckDirs(out io.Writer, dirs []string) error {
	ms, err := ReadManifests(dirs...)
	if err != nil {
		return err
	}
	if err := CheckSet(ms); err != nil {
		return err
	}
	var edges, recs int64
	for _, m := range ms {
		edges, recs = edges+m.Edges, recs+m.Vertices
	}
	fmt.Fprintf(out, "%d parts, one cut of %d partitions: %d edges, %d vertex records\n", len(ms), len(ms[0].Cut), edges, recs)
	return nil
}

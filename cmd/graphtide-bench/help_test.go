package main

import (
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/graphtide/graphtide/internal/bench/dgsbench"
)

// TestBenchDGSHelpNamesWhatItReports: bench dgs measures vertex records
// (INSVTX, GETVTX) and says so, and every key of its JSON line the help
// names is one of the result's.
func TestBenchDGSHelpNamesWhatItReports(t *testing.T) {
	out, _, err := execute(t, "dgs", "--help")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"INSVTX", "GETVTX", "insvtx_ops_per_sec", "getvtx_ops_per_sec"} {
		if !strings.Contains(out, want) {
			t.Errorf("bench dgs --help lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "not measured") {
		t.Errorf("bench dgs --help says something is not measured:\n%s", out)
	}
	keys := map[string]bool{}
	rt := reflect.TypeOf(dgsbench.Result{})
	for i := range rt.NumField() {
		name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
		keys[name] = true
	}
	long, _, _ := strings.Cut(out, "Usage:")
	for _, k := range regexp.MustCompile(`\b[a-z]+(?:_[a-z0-9]+)+\b`).FindAllString(long, -1) {
		if !keys[k] {
			t.Errorf("bench dgs --help names the key %q, which its JSON line does not have", k)
		}
	}
}

// TestDeadServerSaysWhatToCheck: query and write against an address where
// nothing listens say that the server is not reachable there and what to

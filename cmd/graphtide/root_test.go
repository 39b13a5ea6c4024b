package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/graphtide/graphtide/internal/datadir"
	"github.com/graphtide/graphtide/internal/engine"
)

// execute runs the graphtide command tree in-process with args and returns
// what it wrote to stdout and stderr.
func execute(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	root := newRootCmd()
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(args)
	err = root.Execute()
	return out.String(), errOut.String(), err
}

func TestRootHelpListsCommands(t *testing.T) {
	out, _, err := execute(t, "--help")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"graphtide is a streaming graph store", "gen ", "version ", "load ", "inspect ", "compact "} {
		if !strings.Contains(out, want) {
			t.Errorf("root help does not contain %q:\n%s", want, out)
		}
	}
}

func TestStoreCommandsHelpHasExamples(t *testing.T) {
	for _, cmd := range []string{"load", "inspect", "compact"} {
		out, _, err := execute(t, cmd, "--help")
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"Examples:\n  graphtide " + cmd + " ", "--dir string", "--config string", "GRAPHTIDE_"} {
			if !strings.Contains(out, want) {
				t.Errorf("%s --help does not contain %q:\n%s", cmd, want, out)
			}
		}
	}
}

func TestUnknownCommand(t *testing.T) {
	_, stderr, err := execute(t, "frobnicate")
	if err == nil || !strings.Contains(err.Error(), `unknown command "frobnicate"`) {
		t.Fatalf("error = %v, want unknown command", err)
	}
	if !strings.Contains(stderr, "frobnicate") {
		t.Errorf("stderr %q does not report the error", stderr)
	}
}

func TestRuntimeErrorsDoNotPrintUsage(t *testing.T) {
	_, stderr, err := execute(t, "gen", "--scale", "2", "--out", t.TempDir()+"/missing-dir/g.el")
	if err == nil {
		t.Fatal("writing into a missing directory succeeded")
	}
	if strings.Contains(stderr, "Usage:") {
		t.Errorf("a runtime error printed the usage text:\n%s", stderr)
	}
}

// openStore opens the store of the data directory dir directly through the
// engine, as it was created: what the engine itself says, beside what the
// commands print.
func openStore(dir string, opts engine.Options) (*engine.Store, error) {
	opts.InEdgesAsStored = true
	return engine.Open(datadir.StorePath(dir), &opts)
}

package main

import (
	"runtime"
	"testing"
)

func TestVersion(t *testing.T) {
	out, _, err := execute(t, "version")
	if err != nil {
		t.Fatal(err)
	}
	want := "graphtide version dev\nbuilt with " + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH + "\n"
	if out != want {
		t.Errorf("version printed %q, want %q", out, want)
	}
}

func TestVersionOverride(t *testing.T) {
	old := version
	version = "v9.9.9" // what -ldflags "-X main.version=v9.9.9" does
	t.Cleanup(func() { version = old })
	out, _, err := execute(t, "version")
	if err != nil {
		t.Fatal(err)
	}
	if want := "graphtide version v9.9.9\n"; len(out) < len(want) || out[:len(want)] != want {
		t.Errorf("version printed %q, want it to start with %q", out, want)
	}
}

func TestVersionRejectsArgs(t *testing.T) {
	if _, _, err := execute(t, "version", "extra"); err == nil {
		t.Error("version accepted a positional argument")
	}
}

package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/graphtide/graphtide/internal/gen"
)

func TestGenWritesReadableFile(t *testing.T) {
	for _, tc := range []struct {
		file       string
		formatFlag []string
		format     gen.Format
	}{
		{"g.bin", nil, gen.FormatBinary}, // inferred from the extension
		{"g.el", nil, gen.FormatText},
		{"g.data", []string{"--format", "bin"}, gen.FormatBinary},
		{"g.bin.txt", []string{"--format", "el"}, gen.FormatText},
	} {
		t.Run(tc.file, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), tc.file)
			args := append([]string{"gen", "--scale", "8", "--edge-factor", "4", "--seed", "3", "--out", path}, tc.formatFlag...)
			out, _, err := execute(t, args...)
			if err != nil {
				t.Fatal(err)
			}
			info, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			wantLine := regexp.MustCompile(`^wrote 1024 edges over 256 vertices \(scale 8, edge factor 4, seed 3\) to ` +
				regexp.QuoteMeta(path) + `: format ` + tc.format.String() + `, ` + regexp.QuoteMeta(strconv.FormatInt(info.Size(), 10)) +
				` bytes; generated in \S+, written in \S+\n$`)
			if !wantLine.MatchString(out) {
				t.Errorf("summary %q does not match %v", out, wantLine)
			}

			edges, err := gen.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			want := gen.RMAT{Scale: 8, EdgeFactor: 4, Seed: 3}.Generate()
			if !slices.Equal(edges, want) {
				t.Fatalf("file holds %d edges that differ from the generator's %d", len(edges), len(want))
			}
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if isBinary := strings.HasPrefix(string(data), gen.BinaryMagic); isBinary != (tc.format == gen.FormatBinary) {
				t.Errorf("file starts with %q, want format %v", data[:8], tc.format)
			}
		})
	}
}

func TestGenDeterministic(t *testing.T) {
	dir := t.TempDir()
	var files [3][]byte
	for i, seed := range []string{"5", "5", "6"} {
		path := filepath.Join(dir, "g"+strconv.Itoa(i)+".el")
		if _, _, err := execute(t, "gen", "--scale", "6", "--seed", seed, "--out", path); err != nil {
			t.Fatal(err)
		}
		var err error
		if files[i], err = os.ReadFile(path); err != nil {
			t.Fatal(err)
		}
	}
	if string(files[0]) != string(files[1]) {
		t.Error("the same seed produced different files")
	}
	if string(files[0]) == string(files[2]) {
		t.Error("different seeds produced the same file")
	}
}

func TestGenFlagErrors(t *testing.T) {
	out := filepath.Join(t.TempDir(), "g.el")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--scale", "40", "--out", out}, "--scale must be between 1 and 32, got 40"},
		{[]string{"--scale", "0", "--out", out}, "--scale must be between 1 and 32, got 0"},
		{[]string{"--edge-factor", "0", "--out", out}, "--edge-factor must be at least 1, got 0"},
		{[]string{"--scale", "32", "--edge-factor", "4294967296", "--out", out}, "--edge-factor 4294967296 is too large for --scale 32"},
		{[]string{"--format", "csv", "--out", out}, `--format must be one of: el, bin; got "csv"`},
		{[]string{"--scale", "4"}, "--out or --brokers is required"},
		{[]string{"--seed", "-1", "--out", out}, `invalid argument "-1" for "--seed"`},
		{[]string{"--out", out, "extra"}, `unknown command "extra"`},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			stdout, _, err := execute(t, append([]string{"gen"}, tc.args...)...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want one containing %q", err, tc.want)
			}
			if stdout != "" {
				t.Errorf("a failed gen printed %q to stdout", stdout)
			}
			if _, statErr := os.Stat(out); statErr == nil {
				t.Errorf("a failed gen created %s", out)
			}
		})
	}
}

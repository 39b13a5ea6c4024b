package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/graphtide/graphtide/internal/edgefile"
	"github.com/graphtide/graphtide/internal/gen"
)

func TestGenWritesReadableFile(t *testing.T) {
	for _, tc := range []struct {
		file       string
		formatFlag []string
		format     edgefile.Format
	}{
		{"g.bin", nil, edgefile.FormatBinary}, // inferred from the extension
		{"g.el", nil, edgefile.FormatText},
		{"g.data", []string{"--format", "bin"}, edgefile.FormatBinary},
		{"g.bin.txt", []string{"--format", "el"}, edgefile.FormatText},
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

			edges, err := edgefile.ReadFile(path)
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
			if isBinary := strings.HasPrefix(string(data), edgefile.BinaryMagic); isBinary != (tc.format == edgefile.FormatBinary) {
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
		{[]string{"--scale", "4"}, "give one of --out or --brokers"},
		{[]string{"--scale", "4", "--brokers", "127.0.0.1:1", "--sasl-mechanism", "gssapi", "--sasl-user", "u"}, `--sasl-mechanism must be one of: plain, scram-sha-256, scram-sha-512, oauthbearer; got "gssapi"`},
		{[]string{"--scale", "4", "--brokers", "127.0.0.1:1", "--tls-ca", "ca.pem"}, "--tls-ca needs --tls"},
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

// TestGenNoBroker: with no broker answering, gen --brokers gives up after
// --timeout, before generating, with a message naming the brokers and the
// timeout (it hung silently before).
func TestGenNoBroker(t *testing.T) {
	addr := deadAddr(t)
	t0 := time.Now()
	out, _, err := execute(t, "gen", "--scale", "6", "--brokers", addr, "--timeout", "1s")
	took := time.Since(t0)
	if err == nil || !strings.Contains(err.Error(), "no Kafka broker answered at "+addr+" within 1s (--timeout)") {
		t.Fatalf("gen with no broker: %v", err)
	}
	if out != "" {
		t.Errorf("a failed gen printed %q", out)
	}
	t.Logf("gave up after %v", took.Round(time.Millisecond))
	if took > 20*time.Second {
		t.Errorf("gen took %v to give up with --timeout 1s", took)
	}
	if _, _, err := execute(t, "gen", "--scale", "6", "--brokers", addr, "--timeout", "2h"); err == nil || !strings.Contains(err.Error(), "--timeout must be between 1s and 1h") {
		t.Errorf("--timeout 2h: %v", err)
	}
}

// TestGenRateProgress: gen --brokers --rate prints progress lines to
// stderr when it is not a terminal (it printed nothing for minutes), and
// produces every event.
func TestGenRateProgress(t *testing.T) {
	defer func(d time.Duration) { progressEvery = d }(progressEvery)
	progressEvery = 50 * time.Millisecond
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "edges"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// 1024 events at 2000 per second: about half a second.
	out, stderr, err := execute(t, "gen", "--scale", "8", "--edge-factor", "4", "--brokers", c.ListenAddrs()[0], "--rate", "2000")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out, "produced 1024 events (1024 upserts, 0 deletes) to topic edges") {
		t.Errorf("summary %q", out)
	}
	lines := regexp.MustCompile(`(?m)^gen: +\d+% \(\d+ of 1024 records\), \d+ records/s$`).FindAllString(stderr, -1)
	if len(lines) < 2 {
		t.Errorf("progress on stderr: %q; want a line every %v", stderr, progressEvery)
	}
}

package bench

import (
	"testing"

	"github.com/spf13/pflag"
)

func TestValidateGraph(t *testing.T) {
	for _, c := range []struct {
		scale, edgeFactor, maxScale, maxEdgeFactor int
		want                                       string
	}{
		{20, 16, 26, 64, ""},
		{32, 1, 32, 0, ""},
		{0, 16, 26, 64, "--scale must be between 1 and 26, got 0"},
		{25, 16, 24, 64, "--scale must be between 1 and 24, got 25"},
		{20, 0, 26, 64, "--edge-factor must be between 1 and 64, got 0"},
		{20, 65, 26, 64, "--edge-factor must be between 1 and 64, got 65"},
		{20, 0, 32, 0, "--edge-factor must be at least 1 and edge-factor x 2^scale must fit in 63 bits, got 0"},
		{32, 1 << 31, 32, 0, "--edge-factor must be at least 1 and edge-factor x 2^scale must fit in 63 bits, got 2147483648"},
	} {
		got := ""
		if err := ValidateGraph(c.scale, c.edgeFactor, c.maxScale, c.maxEdgeFactor); err != nil {
			got = err.Error()
		}
		if got != c.want {
			t.Errorf("ValidateGraph(%d, %d, %d, %d) = %q, want %q", c.scale, c.edgeFactor, c.maxScale, c.maxEdgeFactor, got, c.want)
		}
	}
}

func TestGraphFlagsKeepDefaults(t *testing.T) {
	scale, edgeFactor, seed := 20, 16, uint64(1)
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	GraphFlags(fs, &scale, &edgeFactor, &seed, "scale usage", "seed usage")
	if err := fs.Parse([]string{"--edge-factor", "8"}); err != nil {
		t.Fatal(err)
	}
	if scale != 20 || edgeFactor != 8 || seed != 1 {
		t.Errorf("scale %d, edge factor %d, seed %d; want 20, 8, 1", scale, edgeFactor, seed)
	}
	if f := fs.Lookup("scale"); f.DefValue != "20" || f.Usage != "scale usage" {
		t.Errorf("--scale: default %q, usage %q", f.DefValue, f.Usage)
	}
	if f := fs.Lookup("seed"); f.DefValue != "1" || f.Usage != "seed usage" {
		t.Errorf("--seed: default %q, usage %q", f.DefValue, f.Usage)
	}
}

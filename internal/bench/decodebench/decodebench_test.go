package decodebench

import (
	"testing"

	"github.com/graphtide/graphtide/internal/testkit/benchtest"
)

// TestConfig: the defaults are valid, and each setting out of range is
// refused with a message naming its flag.
func TestConfig(t *testing.T) {
	benchtest.WantRefusals(t, DefaultConfig, (*Config).Validate, []benchtest.Refusal[Config]{
		{Set: func(c *Config) { c.Records = 0 }, Want: "--records must be between 1 and 100000000, got 0"},
		{Set: func(c *Config) { c.Records = 100_000_001 }, Want: "--records must be between 1 and 100000000, got 100000001"},
		{Set: func(c *Config) { c.Accounts = 1 }, Want: "--accounts must be between 2 and 100000000, got 1"},
		{Set: func(c *Config) { c.Repeats = 0 }, Want: "--repeats must be between 1 and 100, got 0"},
		{Set: func(c *Config) { c.Repeats = 101 }, Want: "--repeats must be between 1 and 100, got 101"},
	})
}

// TestRunSmall runs the benchmark at a tiny size: every decoder decoded
// the records configured, its figures are there and positive, and the
// page's fields are all in the JSON. The record sizes order as the
// records do: binary numeric ids are smaller than native JSON of the same
// operations, and the mapped payment events carry fields the native
// records do not (an event id, a currency, metadata).
func TestRunSmall(t *testing.T) {
	res, err := Run(Config{Records: 3000, Accounts: 500, Repeats: 1, Seed: 1, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if res.Records != 3000 {
		t.Errorf("records = %d, want 3000", res.Records)
	}
	for name, f := range map[string]Figures{"mapped": res.Mapped, "native": res.Native, "binary": res.Binary} {
		if f.RecordsPerSec <= 0 || f.FirstPassSec <= 0 || f.BytesPerRecord <= 0 || f.AllocsPerRecord < 0 {
			t.Errorf("%s: %+v, want positive rates, times and sizes", name, f)
		}
	}
	if !(res.Binary.BytesPerRecord < res.Native.BytesPerRecord && res.Native.BytesPerRecord < res.Mapped.BytesPerRecord) {
		t.Errorf("bytes per record: binary %v, native %v, mapped %v; want binary < native < mapped",
			res.Binary.BytesPerRecord, res.Native.BytesPerRecord, res.Mapped.BytesPerRecord)
	}
	if want := res.Mapped.RecordsPerSec / res.Native.RecordsPerSec; res.MappedOverNative != want {
		t.Errorf("mapped_over_native = %v, want %v", res.MappedOverNative, want)
	}
	benchtest.PageFields(t, "decode", res)
}

// Package decodebench is `graphtide bench decode`: how fast do JSON events
// of a real shape decode through a field mapping? It generates payment
// events as a payments team produces them (an event id, account keys, an
// amount as a string or a number, a currency, an RFC 3339 or epoch time,
// nested metadata the mapping ignores) and decodes them, on one core,
// with the payment mapping into a real key dictionary; in the same run it
// decodes the same operations in graphtide's native JSON format (smaller
// records of only its fields, on the same scanner) and in the binary
// format (numeric ids: the ceiling). It reports records per second of each, the ratio
// mapped over native, and allocations per record. The first pass of each
// sees every account for the first time (the dictionary grows); the
// figures are the best of the later passes, as a stream of known accounts.
package decodebench

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"time"

	"github.com/spf13/pflag"

	"github.com/graphtide/graphtide/internal/ingest/decode"
	"github.com/graphtide/graphtide/internal/keydict"
)

// Config of one run (DefaultConfig has the defaults shown).
type Config struct {
	Records  int       // events (1,000,000)
	Accounts int       // distinct account keys (100,000)
	Repeats  int       // timed passes after the first; the best counts (3)
	Seed     uint64    // (1)
	Dir      string    // scratch directory (the key dictionaries)
	Log      io.Writer // progress; nil = discard
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{Records: 1_000_000, Accounts: 100_000, Repeats: 3, Seed: 1}
}

// AddFlags adds the flags of bench decode.
func (c *Config) AddFlags(fs *pflag.FlagSet) {
	fs.IntVar(&c.Records, "records", c.Records, "payment events to decode")
	fs.IntVar(&c.Accounts, "accounts", c.Accounts, "distinct account keys")
	fs.IntVar(&c.Repeats, "repeats", c.Repeats, "timed passes after the first (the best counts)")
	fs.Uint64Var(&c.Seed, "seed", c.Seed, "random seed")
	fs.StringVar(&c.Dir, "dir", c.Dir, "scratch directory for the key dictionaries (default: a temporary one)")
}

// Validate checks the settings.
func (c Config) Validate() error {
	switch {
	case c.Records < 1 || c.Records > 100_000_000:
		return fmt.Errorf("--records must be between 1 and 100000000, got %d", c.Records)
	case c.Accounts < 2 || c.Accounts > 100_000_000:
		return fmt.Errorf("--accounts must be between 2 and 100000000, got %d", c.Accounts)
	case c.Repeats < 1 || c.Repeats > 100:
		return fmt.Errorf("--repeats must be between 1 and 100, got %d", c.Repeats)
	}
	return nil
}

// PaymentMapping is the mapping of the generated events.
var PaymentMapping = decode.Mapping{Src: "/from_account", Dst: "/to_account", Weight: "/amount", Time: "/ts"}

// Figures are one decoder's.
type Figures struct {
	RecordsPerSec   float64 `json:"records_per_sec"`
	FirstPassSec    float64 `json:"first_pass_sec"` // new keys
	BytesPerRecord  float64 `json:"bytes_per_record"`
	AllocsPerRecord float64 `json:"allocs_per_record"`
}

// Result of a run.
type Result struct {
	Records int `json:"records"`
	// Mapped: the payment events through PaymentMapping; Native: the same
	// operations in the native JSON format; Binary: numeric ids in the
	// binary format.
	Mapped           Figures `json:"mapped"`
	Native           Figures `json:"native"`
	Binary           Figures `json:"binary"`
	MappedOverNative float64 `json:"mapped_over_native"` // records/s ratio
}

// Run runs the benchmark.
func Run(cfg Config) (Result, error) {
	log := cfg.Log
	if log == nil {
		log = io.Discard
	}
	res := Result{Records: cfg.Records}
	r := rand.New(rand.NewPCG(cfg.Seed, 5))
	mapped, native, binary := make([][]byte, cfg.Records), make([][]byte, cfg.Records), make([][]byte, cfg.Records)
	base := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	for i := range mapped {
		from, to := r.IntN(cfg.Accounts), r.IntN(cfg.Accounts)
		cents := r.IntN(1_000_000)
		ts := base.Add(time.Duration(i) * time.Millisecond)
		var amount, when string
		if i%2 == 0 {
			amount = fmt.Sprintf(`"%d.%02d"`, cents/100, cents%100)
		} else {
			amount = fmt.Sprintf("%d.%02d", cents/100, cents%100)
		}
		if i%4 < 3 {
			when = `"` + ts.Format(time.RFC3339) + `"`
		} else {
			when = fmt.Sprint(ts.UnixMilli())
		}
		ev := fmt.Sprintf(`{"event_id":"e-%d","from_account":"acct-%d","to_account":"acct-%d","amount":%s,"currency":"EUR","ts":%s`, i, from, to, amount, when)
		if i%8 == 0 {
			ev += `,"meta":{"ip":"10.1.2.3","device":{"os":"ios","v":[17,1]},"tags":["card","3ds"]}`
		}
		mapped[i] = []byte(ev + "}")
		e := decode.Edge{Op: decode.OpUpsert, Weight: float64(cents) / 100, HasWeight: true, EventTime: ts}
		native[i] = decode.AppendJSON(nil, e, fmt.Sprintf("acct-%d", from), fmt.Sprintf("acct-%d", to))
		e.Src, e.Dst = uint64(from), uint64(to)
		binary[i] = decode.AppendBinary(nil, e)
	}
	for _, c := range []struct {
		name string
		recs [][]byte
		fig  *Figures
		dec  func(*keydict.Dict) (decode.Decoder, error)
	}{
		{"mapped", mapped, &res.Mapped, func(d *keydict.Dict) (decode.Decoder, error) { return decode.NewMapped(PaymentMapping, d) }},
		{"native", native, &res.Native, func(d *keydict.Dict) (decode.Decoder, error) { return decode.New(decode.FormatJSON, d), nil }},
		{"binary", binary, &res.Binary, func(*keydict.Dict) (decode.Decoder, error) { return decode.New(decode.FormatBinary, nil), nil }},
	} {
		dict, err := keydict.Open(filepath.Join(cfg.Dir, c.name+".dict"))
		if err != nil {
			return res, err
		}
		dec, err := c.dec(dict)
		if err != nil {
			dict.Close()
			return res, err
		}
		if err := pass(c.fig, dec, c.recs, cfg.Repeats); err != nil {
			dict.Close()
			return res, fmt.Errorf("%s: %w", c.name, err)
		}
		if err := dict.Close(); err != nil {
			return res, err
		}
		fmt.Fprintf(log, "%s: %.0f records/s (first pass, new keys: %.2fs), %.0f bytes and %.2f allocations per record\n",
			c.name, c.fig.RecordsPerSec, c.fig.FirstPassSec, c.fig.BytesPerRecord, c.fig.AllocsPerRecord)
	}
	res.MappedOverNative = res.Mapped.RecordsPerSec / res.Native.RecordsPerSec
	fmt.Fprintf(log, "mapped over native JSON: %.2fx\n", res.MappedOverNative)
	return res, nil
}

// pass decodes recs once (new keys), then repeats times, keeping the best.
func pass(fig *Figures, dec decode.Decoder, recs [][]byte, repeats int) error {
	n := 0
	emit := func(decode.Edge) { n++ }
	bytes := 0
	for _, v := range recs {
		bytes += len(v)
	}
	fig.BytesPerRecord = float64(bytes) / float64(len(recs))
	best := time.Duration(1<<63 - 1)
	for k := 0; k <= repeats; k++ {
		n = 0
		runtime.GC()
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		t0 := time.Now()
		for _, v := range recs {
			if err := dec.Decode(v, emit); err != nil {
				return err
			}
		}
		d := time.Since(t0)
		runtime.ReadMemStats(&m1)
		if n != len(recs) {
			return errors.New("a record decoded to other than one edge")
		}
		if k == 0 {
			fig.FirstPassSec = d.Seconds()
			continue
		}
		if d < best {
			best = d
			fig.AllocsPerRecord = float64(m1.Mallocs-m0.Mallocs) / float64(len(recs))
		}
	}
	fig.RecordsPerSec = float64(len(recs)) / best.Seconds()
	return nil
}

package bench

import (
	"encoding/json"
	"testing"
)

func TestWithCalibrationAddsTheFirstField(t *testing.T) {
	c := Calibration{LoadAvg1m: 0.5, SortMs: 80, CopyGBps: 12.5, RandomReadNs: 190}
	for _, tc := range []struct{ in, want string }{
		{`{"edges":3,"name":"x"}`, `{"calibration":{"load_avg_1m":0.5,"sort_ms":80,"copy_gb_per_sec":12.5,"random_read_ns":190},"edges":3,"name":"x"}`},
		{`{}`, `{"calibration":{"load_avg_1m":0.5,"sort_ms":80,"copy_gb_per_sec":12.5,"random_read_ns":190}}`},
	} {
		got, err := WithCalibration([]byte(tc.in), c)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != tc.want {
			t.Errorf("WithCalibration(%s) = %s, want %s", tc.in, got, tc.want)
		}
		if !json.Valid(got) {
			t.Errorf("WithCalibration(%s) is not JSON: %s", tc.in, got)
		}
	}
	for _, bad := range []string{``, `[1,2]`, `3`, `"x"`} {
		if _, err := WithCalibration([]byte(bad), c); err == nil {
			t.Errorf("WithCalibration(%q) took a result that is not an object", bad)
		}
	}
}

// TestCalibrateMeasuresAndGivesBackItsMemory: the figures are positive,
// and the calibration's 512 MiB of copy buffers are given back and the
// peak resident set reset after them (the peak is about the resident set
// the calibration left, not that plus its buffers), so a benchmark's own
// peak is not the calibration's. Less sorting and chasing than a benchmark's calibration
// (fullWork), the same copy buffers.
func TestCalibrateMeasuresAndGivesBackItsMemory(t *testing.T) {
	c, err := calibrate(work{sortN: 1 << 14, copyBytes: fullWork.copyBytes, chaseN: 1 << 16, chaseSteps: 1 << 14})
	if err != nil {
		t.Fatal(err)
	}
	if !(c.SortMs > 0 && c.CopyGBps > 0 && c.RandomReadNs > 0 && c.LoadAvg1m >= 0) {
		t.Fatalf("calibration %+v", c)
	}
	m, err := ReadMemory()
	if err != nil {
		t.Fatal(err)
	}
	if m.PeakRSS-m.RSS > 128<<20 {
		t.Errorf("after calibrating, peak RSS %d MiB and RSS %d MiB: the calibration's buffers count against the benchmark's peak", m.PeakRSS>>20, m.RSS>>20)
	}
}

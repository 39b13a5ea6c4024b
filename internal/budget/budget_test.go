package budget

import (
	"strings"
	"testing"
)

func TestDivideDefaults(t *testing.T) {
	for _, total := range []int64{MinBudget, 512 << 20, DefaultBudget, 3 << 30, 64 << 30, MaxBudget} {
		p, err := Divide(total, Explicit{})
		if err != nil {
			t.Fatalf("%s: %v", Format(total), err)
		}
		if sum := p.Store + p.EdgeLog + p.Fetch + p.Analytics + p.Alerts; sum > total*9/10 {
			t.Errorf("%s: the parts take %s, more than nine tenths", Format(total), Format(sum))
		}
		if p.Store != p.MemGraphBytes*StoreFactor || p.EdgeLog != int64(p.EdgeLogOps)*EdgeLogBytes ||
			p.Fetch != int64(p.FetchMaxBytes)*int64(p.MaxConcurrentFetches) {
			t.Errorf("%s: inconsistent plan %+v", Format(total), p)
		}
		if p.Headroom != total/16 || p.GoLimit != total-p.Store-p.Headroom {
			t.Errorf("%s: GOMEMLIMIT %s, headroom %s; want the budget less the store's share and a sixteenth", Format(total), Format(p.GoLimit), Format(p.Headroom))
		}
		if rest := p.Parts()["go_runtime_rest"]; rest < total/20 {
			t.Errorf("%s: the Go runtime's rest %s, under a twentieth", Format(total), Format(rest))
		}
		if p.Alerts != min(max(total/20, AlertsMin), AlertsMax) {
			t.Errorf("%s: the alerts' share %s, want 5%% within %s and %s", Format(total), Format(p.Alerts), Format(AlertsMin), Format(AlertsMax))
		}
		if p.MemGraphBytes < minMemGraph || p.EdgeLogOps < minEdgeLogOps || p.FetchMaxBytes < minFetchBytes {
			t.Errorf("%s: a part below its minimum: %+v", Format(total), p)
		}
		var parts int64
		for name, v := range p.Parts() {
			if v < 0 {
				t.Errorf("%s: part %s is negative", Format(total), name)
			}
			if name != "total" {
				parts += v
			}
		}
		if parts != total {
			t.Errorf("%s: parts add up to %s", Format(total), Format(parts))
		}
	}
	p, _ := Divide(DefaultBudget, Explicit{})
	// 1 GiB: a store of about 300 MiB (61.4 MiB MemGraphs), 2.2M edge log
	// operations, 25.6 MiB fetches.
	if p.MemGraphBytes != DefaultBudget*3/10/5 || p.EdgeLogOps != DefaultBudget/10/EdgeLogBytes {
		t.Errorf("1 GiB plan %+v", p)
	}
}

func TestDivideExplicit(t *testing.T) {
	p, err := Divide(DefaultBudget, Explicit{MemGraphBytes: 16 << 20, EdgeLogOps: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if p.MemGraphBytes != 16<<20 || p.Store != 80<<20 || p.EdgeLogOps != 1<<20 {
		t.Errorf("explicit parts not taken as given: %+v", p)
	}
	for _, c := range []struct {
		x    Explicit
		want string
	}{
		{Explicit{MemGraphBytes: 128 << 20}, "--memgraph-mib 128 takes 640 MiB for the store"},
		{Explicit{EdgeLogOps: 10_000_000}, "--view-log-capacity 10000000 takes 1.2 GiB"},
		{Explicit{MemGraphBytes: 100 << 20, EdgeLogOps: 4 << 20}, "--memgraph-mib 100 takes 500 MiB for the store (5x one MemGraph) and --view-log-capacity 4194304"},
	} {
		_, err := Divide(DefaultBudget, c.x)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "raise --memory-budget") {
			t.Errorf("%+v: error %v, want one with %q", c.x, err, c.want)
		}
	}
	for _, total := range []int64{MinBudget - 1, 0, -1, MaxBudget + 1} {
		if _, err := Divide(total, Explicit{}); err == nil || !strings.Contains(err.Error(), "--memory-budget must be between 256 MiB and 1 TiB") {
			t.Errorf("%d: %v", total, err)
		}
	}
}

func TestParse(t *testing.T) {
	for in, want := range map[string]int64{
		"1073741824": 1 << 30, "1GiB": 1 << 30, "1g": 1 << 30, "1 GB": 1 << 30, "512MiB": 512 << 20, "512m": 512 << 20,
		"1.5G": 3 << 29, "2TiB": 2 << 40, "64k": 64 << 10, "100B": 100, " 3 gib ": 3 << 30,
	} {
		if got, err := Parse(in); err != nil || got != want {
			t.Errorf("Parse(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "GiB", "1 gallon", "-1G", "1e3", "1..2G", "9999999999T"} {
		if _, err := Parse(in); err == nil {
			t.Errorf("Parse(%q) accepted", in)
		}
	}
}

func TestFormat(t *testing.T) {
	for n, want := range map[int64]string{512: "512 B", 1 << 30: "1 GiB", 80530636: "76.8 MiB", 1 << 40: "1 TiB"} {
		if got := Format(n); got != want {
			t.Errorf("Format(%d) = %q, want %q", n, got, want)
		}
	}
}

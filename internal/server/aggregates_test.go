package server

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/ingest/bulk"
	"github.com/graphtide/graphtide/internal/ingest/decode"
	"github.com/graphtide/graphtide/internal/typedict"
)

// TestServeTypeAggregates: the mappings' types merge into one aggregate
// per type (two topics may name one type alike, not differently: refused
// at start naming both), and the type dictionary gives the names their
// numbers, assigning those it has not seen.
func TestServeTypeAggregates(t *testing.T) {
	o := Options{Topics: []string{"payments", "refunds"},
		MappingFlags: []string{"payments:src=/a,dst=/b,types=payment:accumulate:24h|login:replace|3:accumulate",
			"refunds:src=/a,dst=/b,types=payment:accumulate:24h|default:replace"}}
	if err := o.validateMappings(); err != nil {
		t.Fatal(err)
	}
	as, err := MappingAggregates(o.Mappings)
	if err != nil {
		t.Fatal(err)
	}
	want := []decode.TypeAggregate{{Type: "3", Accumulate: true}, {Type: "default"}, {Type: "login"},
		{Type: "payment", Accumulate: true, Retain: 24 * time.Hour}}
	if !reflect.DeepEqual(as, want) {
		t.Fatalf("aggregates %+v, want %+v", as, want)
	}
	dict, err := typedict.Open(filepath.Join(t.TempDir(), "types.json"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dict.ID("refund"); err != nil { // type 1, seen before
		t.Fatal(err)
	}
	byNum, err := bulk.ResolveAggregates(as, dict)
	if err != nil {
		t.Fatal(err)
	}
	login, _ := dict.Lookup("login")
	payment, _ := dict.Lookup("payment")
	if login == 0 || payment == 0 || login == payment || login == 1 || payment == 1 {
		t.Fatalf("login %d, payment %d: want new numbers", login, payment)
	}
	wantNum := map[uint16]decode.TypeAggregate{3: want[0], 0: want[1], login: want[2], payment: want[3]}
	if !reflect.DeepEqual(byNum, wantNum) {
		t.Fatalf("by number %+v, want %+v", byNum, wantNum)
	}
	st, err := engine.Open(filepath.Join(t.TempDir(), "store"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	acc, err := bulk.ConfigureAggregates(st, byNum)
	if err != nil || acc != engine.TypesOf(3, payment) {
		t.Fatalf("accumulating %+v, %v", acc, err)
	}
	if a := st.AggregateOf(payment); a != (engine.Aggregate{Accumulate: true, Retain: 24 * time.Hour}) {
		t.Fatalf("the store's aggregate of payment: %+v", a)
	}

	bad := Options{Topics: []string{"payments", "refunds"},
		MappingFlags: []string{"payments:src=/a,dst=/b,types=payment:accumulate:24h", "refunds:src=/a,dst=/b,types=payment:accumulate:1h"}}
	err = bad.validateMappings()
	if err == nil || !strings.Contains(err.Error(), "the mappings of topics payments and refunds give type payment two aggregates (accumulate, retain 24h0m0s and accumulate, retain 1h0m0s)") {
		t.Fatalf("got %v", err)
	}
	bad = Options{Topics: []string{"p"}, MappingFlags: []string{"p:src=/a,dst=/b,types=payment:accumulate:31d"}}
	if err := bad.validateMappings(); err == nil || !strings.Contains(err.Error(), `--mapping topic p: types: payment: retain "31d"`) {
		t.Fatalf("got %v", err)
	}
}

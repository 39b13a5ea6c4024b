package ingest

import (
	"reflect"
	"testing"
)

func TestPositionRoundTrip(t *testing.T) {
	p := Position{}
	p.Set("edges", 0, 17)
	p.Set("edges", 3, 1<<40)
	p.Set("payments", 1, 0)
	got, err := DecodePosition(p.Encode())
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, p) {
		t.Fatalf("round trip: %v != %v", got, p)
	}
	if string(p.Encode()) != string(p.Clone().Encode()) {
		t.Fatal("encoding is not deterministic")
	}
	empty, err := DecodePosition(nil)
	if err != nil || len(empty) != 0 {
		t.Fatalf("empty position: %v %v", empty, err)
	}
}

func TestPositionDecodeErrors(t *testing.T) {
	good := Position{"t": {0: 5}}.Encode()
	for name, b := range map[string][]byte{
		"version":  append([]byte{9}, good[1:]...),
		"header":   good[:3],
		"entry":    good[:len(good)-1],
		"trailing": append(append([]byte{}, good...), 0),
	} {
		if _, err := DecodePosition(b); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

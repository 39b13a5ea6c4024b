package decode

import (
	"strings"
	"testing"
)

func TestParseFormat(t *testing.T) {
	for in, want := range map[string]Format{"binary": FormatBinary, "bin": FormatBinary, "json": FormatJSON, "text": FormatText, "el": FormatText} {
		got, err := ParseFormat(in)
		if err != nil || got != want {
			t.Fatalf("ParseFormat(%q) = %v, %v; want %v", in, got, err, want)
		}
		if back, err := ParseFormat(got.String()); err != nil || back != got {
			t.Fatalf("ParseFormat(%q.String()) = %v, %v", in, back, err)
		}
		if d := New(got, nil); d.Format() != got {
			t.Fatalf("New(%v).Format() = %v", got, d.Format())
		}
	}
	for _, bad := range []string{"", "JSON", "csv", "binary "} {
		if _, err := ParseFormat(bad); err == nil || !strings.Contains(err.Error(), "unknown record format") {
			t.Fatalf("ParseFormat(%q) error = %v", bad, err)
		}
	}
	names := []string{FormatBinary.String(), FormatJSON.String(), FormatText.String(), Format(0).String()}
	if strings.Join(names, ",") != "binary,json,text,Format(0)" {
		t.Fatalf("names = %v", names)
	}
	if s := OpUpsert.String() + "," + OpDeleteEdge.String() + "," + OpDeleteVertex.String() + "," + Op(9).String(); s != "upsert,delete_edge,delete_vertex,Op(9)" {
		t.Fatalf("op names = %s", s)
	}
}

func TestNewUnknownFormatPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("New(Format(0)) did not panic")
		}
	}()
	New(Format(0), nil)
}

func TestErrorMessage(t *testing.T) {
	err := &Error{Format: FormatJSON, Offset: 12, Reason: "missing src"}
	if got := err.Error(); got != "decode json: byte offset 12: missing src" {
		t.Fatalf("Error() = %q", got)
	}
}

package settings

import (
	"strings"
	"testing"
)

type spec struct {
	Name        string `yaml:"name"`
	MuleSenders int    `yaml:"mule_senders,omitempty"`
	Skipped     int    `yaml:"-"`
}

// TestUnknownKeysNameWhatIsAllowed: a key a config section does not have
// is refused naming it and the keys allowed there, not a Go type.
func TestUnknownKeysNameWhatIsAllowed(t *testing.T) {
	var out []spec
	err := DecodeStrict([]byte("- name: fraud\n  mule_sender: 3\n"), &out)
	if err == nil {
		t.Fatal("an unknown key was accepted")
	}
	msg := err.Error()
	if !strings.Contains(msg, `unknown key "mule_sender"; allowed: mule_senders, name`) || strings.Contains(msg, "settings.spec") {
		t.Fatalf("error %q", msg)
	}
	var ok []spec
	if err := DecodeStrict([]byte("- name: fraud\n  mule_senders: 3\n"), &ok); err != nil || ok[0].MuleSenders != 3 {
		t.Fatalf("a known key: %v %+v", err, ok)
	}
}

package server

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/graphtide/graphtide/internal/api"
	"github.com/graphtide/graphtide/internal/ingest/decode"
)

// TestServeHTTPToken: the token from the environment, not both sources, a
// long enough token, and beyond loopback only with one.
func TestServeHTTPToken(t *testing.T) {
	o := Options{HTTPAddr: "0.0.0.0:9464", HTTPTimeout: time.Second, HTTPPathBudget: 1}
	t.Setenv("GRAPHTIDE_HTTP_TOKEN", " env-token-0123456789 \n")
	if err := o.validateHTTP(); err != nil || !slices.Equal(o.HTTPTokens, []api.Token{{Secret: "env-token-0123456789", Scopes: api.AllScopes}}) {
		t.Fatalf("token from the environment: %+v, %v", o.HTTPTokens, err)
	}
	o.HTTPTokenFile = filepath.Join(t.TempDir(), "token")
	if err := o.validateHTTP(); err == nil || err.Error() != "the HTTP token comes from --http-token-file or GRAPHTIDE_HTTP_TOKEN: give one, not both" {
		t.Errorf("two token sources: %v", err)
	}
	o.HTTPTokenFile = ""
	t.Setenv("GRAPHTIDE_HTTP_TOKEN", "short")
	if err := o.validateHTTP(); err == nil || err.Error() != "GRAPHTIDE_HTTP_TOKEN: line 1: a token must be at least 16 characters (e.g. openssl rand -hex 32), got 5" {
		t.Errorf("short token: %v", err)
	}
	// A file of tokens with their scopes; a malformed one, naming the line.
	os.Unsetenv("GRAPHTIDE_HTTP_TOKEN")
	o.HTTPTokenFile = filepath.Join(t.TempDir(), "tokens")
	const reader, admin = "reader-0123456789abcdef", "admin-0123456789abcdef"
	if err := os.WriteFile(o.HTTPTokenFile, []byte("# dashboards\n"+reader+" read\n# operators\n"+admin+" read,write,admin\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	want := []api.Token{{Secret: reader, Scopes: api.ScopeRead}, {Secret: admin, Scopes: api.AllScopes}}
	if err := o.validateHTTP(); err != nil || !slices.Equal(o.HTTPTokens, want) {
		t.Errorf("tokens file: %+v, %v; want %+v", o.HTTPTokens, err, want)
	}
	if err := os.WriteFile(o.HTTPTokenFile, []byte(reader+" read\n"+admin+" everything\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := o.validateHTTP(); err == nil || err.Error() != "--http-token-file "+o.HTTPTokenFile+`: line 2: unknown scope "everything"; the scopes are read, write and admin` {
		t.Errorf("malformed tokens file: %v", err)
	}
}

// TestServeMappings: --mapping beats the config file's mapping of the same
// topic, and a mapping of a topic not consumed, one that does not compile,
// or one whose topic --topic-format gives another format is refused.
func TestServeMappings(t *testing.T) {
	o := Options{Topics: []string{"payments", "logins"}, Format: "binary",
		Mappings:     map[string]decode.Mapping{"payments": {Src: "/a", Dst: "/b"}, "logins": {Src: "key", Dst: "/device"}},
		MappingFlags: []string{"payments:src=/from,dst=/to,weight=/amount"}}
	if err := o.validateMappings(); err != nil {
		t.Fatal(err)
	}
	if m := o.Mappings["payments"]; m.Src != "/from" || m.Weight != "/amount" || o.Mappings["logins"].Src != "key" {
		t.Fatalf("mappings: %+v", o.Mappings)
	}
	for _, c := range []struct {
		o      Options
		reason string
	}{
		{Options{Topics: []string{"edges"}, MappingFlags: []string{"payments:src=/a,dst=/b"}}, `a mapping names topic "payments", which --topics does not consume (edges)`},
		{Options{Topics: []string{"p"}, MappingFlags: []string{"p:src=/a,dst=b"}}, `--mapping topic p: dst "b": a source is`},
		{Options{Topics: []string{"p"}, Mappings: map[string]decode.Mapping{"p": {Src: "/a"}}}, "mapping of topic p: a mapping needs src and dst"},
		{Options{Topics: []string{"p"}, TopicFormats: []string{"p=text"}, MappingFlags: []string{"p:src=/a,dst=/b"}}, "topic p has a mapping, which reads JSON records, but --topic-format gives it text"},
	} {
		if err := c.o.validateMappings(); err == nil || !strings.Contains(err.Error(), c.reason) {
			t.Errorf("%+v: got %v, want %q", c.o, err, c.reason)
		}
	}
}

// TestServeConfigFileMappings: the config file's mappings section (the
// README's example) is read strictly and validated; an unknown field of a
// mapping is refused with its name.
func TestServeConfigFileMappings(t *testing.T) {
	const file = `topics: [payments, logins]
brokers: [127.0.0.1:9092]
mappings:
  payments:
    src: /from_account
    dst: /to_account
    weight: /amount
    time: /ts
    op: /kind
    op_values: {paid: upsert, refunded: delete, closed: delete_vertex}
    tombstone: delete
    key_separator: "|"
    tombstone_src: key:0
    tombstone_dst: key:1
  logins:
    src: header:user
    dst: /device/id
`
	read := func(text string) (*Options, error) {
		p := filepath.Join(t.TempDir(), "graphtide.yaml")
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		var o Options
		fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
		o.AddFlags(fs)
		if err := fs.Set("config", p); err != nil {
			t.Fatal(err)
		}
		if err := o.ReadConfig(fs); err != nil {
			return nil, err
		}
		return &o, o.Validate()
	}
	o, err := read(file)
	if err != nil {
		t.Fatal(err)
	}
	if m := o.Mappings["payments"]; m.Src != "/from_account" || m.OpValues["refunded"] != "delete" || m.TombstoneDst != "key:1" || o.Mappings["logins"].Src != "header:user" {
		t.Fatalf("mappings read: %+v", o.Mappings)
	}
	if _, err := read(strings.Replace(file, "    time: /ts", "    when: /ts", 1)); err == nil || !strings.Contains(err.Error(), `unknown key "when"; allowed: dst,`) {
		t.Fatalf("an unknown mapping field: %v", err)
	}
}

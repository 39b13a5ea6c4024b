package doctest

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// helpBinary answers --help as cobra does, for a root with the commands
// serve, bench (with bench serve) and help.
const helpBinary = `#!/usr/bin/env bash
case "$*" in
"--help") cat <<'EOF'
graphtide is a store.

Available Commands:
  bench       Run benchmarks
  help        Help about any command
  serve       Consume edge events

Flags:
  -h, --help   help for graphtide
EOF
;;
"serve --help") cat <<'EOF'
Flags:
      --brokers strings      Kafka bootstrap brokers (default: an embedded broker)
      --embedded-port int    port of the embedded broker (default 9092)
      --http-addr string     address of the HTTP API (default "127.0.0.1:9464")
      --http-path-budget int edges one path query may read (default 9464000)
      --topics strings       topics (default [edges])
  -h, --help                 help for serve
EOF
;;
"bench --help") cat <<'EOF'
Available Commands:
  serve       serve through Kafka

Global Flags:
      --scale int   scale (default 20)
EOF
;;
"bench serve --help") cat <<'EOF'
Flags:
      --brokers strings   brokers (default [localhost:19092,127.0.0.1:9090])
      --metrics string    where (default "http://127.0.0.1:9999")
EOF
;;
*) echo "unknown: $*" >&2; exit 1 ;;
esac
`

func TestFlagDefaults(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "graphtide")
	if err := os.WriteFile(bin, []byte(helpBinary), 0o755); err != nil {
		t.Fatal(err)
	}
	got, err := FlagDefaults(bin)
	if err != nil {
		t.Fatal(err)
	}
	want := []FlagDefault{
		{Command: []string{"bench", "serve"}, Flag: "brokers", Default: "localhost:19092,127.0.0.1:9090"},
		{Command: []string{"serve"}, Flag: "embedded-port", Default: "9092"},
		{Command: []string{"serve"}, Flag: "http-addr", Default: "127.0.0.1:9464"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
	if e := want[2].Env(); e != "GRAPHTIDE_HTTP_ADDR" {
		t.Errorf("Env() = %s", e)
	}
	if err := os.WriteFile(bin, []byte("#!/bin/sh\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := FlagDefaults(bin); err == nil {
		t.Error("a binary whose --help fails was accepted")
	}
}

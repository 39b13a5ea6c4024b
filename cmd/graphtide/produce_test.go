package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestProduceSendsEveryLine(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, "t"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	file := filepath.Join(t.TempDir(), "e.jsonl")
	lines := []string{`{"op":"add","src":"alice","dst":"bob","weight":2}`, `{"op":"delete","src": "carol" ,"dst":"bob"}`, "", "7 8 1.5", "dv 9", "d 3 4"}
	if err := os.WriteFile(file, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, err := execute(t, "produce", "--brokers", c.ListenAddrs()[0], "--topic", "t", file)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out, "produced 5 records to topic t in ") {
		t.Fatalf("summary %q", out)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.ConsumeTopics("t"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	got := map[string]string{}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for len(got) < 5 && ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) { got[string(r.Value)] = string(r.Key) })
	}
	want := map[string]string{lines[0]: "alice", lines[1]: "carol", lines[3]: "7", lines[4]: "9", lines[5]: "3"}
	for v, k := range want {
		if got[v] != k {
			t.Errorf("record %q: key %q, want %q (got %v)", v, got[v], k, got)
		}
	}
	if _, _, err := execute(t, "produce", "--key", "dst"); err == nil || err.Error() != `--key must be src or none, got "dst"` {
		t.Fatalf("bad --key: %v", err)
	}
}

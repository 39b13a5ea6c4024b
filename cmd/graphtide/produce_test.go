package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
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
	if _, _, err := execute(t, "produce", "--key", "dst"); err == nil || err.Error() != `--key must be src, a JSON pointer such as /from_account, or none; got "dst"` {
		t.Fatalf("bad --key: %v", err)
	}
	if _, _, err := execute(t, "produce", "--sasl-mechanism", "plain"); err == nil || err.Error() != "--sasl-user is required with --sasl-mechanism" {
		t.Fatalf("--sasl-mechanism without --sasl-user: %v", err)
	}
}

// TestProducePartitions: --partitions creates a missing topic with that
// many partitions, accepts one that has them, and refuses one that has
// another count, naming both.
func TestProducePartitions(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, "three"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	file := filepath.Join(t.TempDir(), "e.txt")
	if err := os.WriteFile(file, []byte("1 2\n3 4\nalice bob\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	broker := c.ListenAddrs()[0]
	for _, run := range []struct {
		topic string
		n     string
		err   string
	}{
		{"fresh", "5", ""},
		{"fresh", "5", ""},
		{"three", "3", ""},
		{"three", "4", "topic three exists with 3 partitions, not 4 (--partitions): produce to a topic of 4 partitions, or give --partitions 3"},
		{"fresh", "0", ""},
		{"fresh", "-1", "--partitions must be between 1 and 1048576 (or 0: as the brokers make the topic), got -1"},
	} {
		_, _, err := execute(t, "produce", "--brokers", broker, "--topic", run.topic, "--partitions", run.n, file)
		if (err == nil) != (run.err == "") || err != nil && err.Error() != run.err {
			t.Fatalf("produce --topic %s --partitions %s: %v, want %q", run.topic, run.n, err, run.err)
		}
	}
	adm := kadm.NewClient(func() *kgo.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(broker))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}())
	td, err := adm.ListTopics(context.Background(), "fresh")
	if err != nil || len(td["fresh"].Partitions) != 5 {
		t.Fatalf("topic fresh: %v %v; want 5 partitions", td, err)
	}
}

// executeIn runs the root command with stdin.
func executeIn(t *testing.T, stdin io.Reader, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	root := newRootCmd()
	var out, errOut bytes.Buffer
	root.SetIn(stdin)
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(args)
	err = root.Execute()
	return out.String(), errOut.String(), err
}

// deadAddr returns a loopback address where nothing listens.
func deadAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// TestProduceNoBroker: with no broker answering, produce gives up after
// --timeout with a message naming the brokers and the timeout (it hung
// silently before).
func TestProduceNoBroker(t *testing.T) {
	addr := deadAddr(t)
	t0 := time.Now()
	_, _, err := executeIn(t, strings.NewReader("1 2\n3 4\n"), "produce", "--brokers", addr, "--timeout", "1s")
	took := time.Since(t0)
	if err == nil || !strings.Contains(err.Error(), "no Kafka broker answered at "+addr+" within 1s (--timeout)") {
		t.Fatalf("produce with no broker: %v", err)
	}
	t.Logf("gave up after %v: %v", took.Round(time.Millisecond), err)
	if took > 20*time.Second {
		t.Errorf("produce took %v to give up with --timeout 1s", took)
	}
	if _, _, err := execute(t, "produce", "--timeout", "0s"); err == nil || !strings.Contains(err.Error(), "--timeout must be between 1s and 1h") {
		t.Errorf("--timeout 0s: %v", err)
	}
}

// TestProduceProgress: a long produce prints progress lines to stderr
// when it is not a terminal.
func TestProduceProgress(t *testing.T) {
	defer func(d time.Duration) { progressEvery = d }(progressEvery)
	progressEvery = 20 * time.Millisecond
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "t"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// Lines arrive slowly, for about half a second.
	pr, pw := io.Pipe()
	go func() {
		for i := 0; i < 50; i++ {
			fmt.Fprintf(pw, "%d %d\n", i, i+1)
			time.Sleep(10 * time.Millisecond)
		}
		pw.Close()
	}()
	out, stderr, err := executeIn(t, pr, "produce", "--brokers", c.ListenAddrs()[0], "--topic", "t")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out, "produced 50 records to topic t in ") {
		t.Errorf("summary %q", out)
	}
	lines := regexp.MustCompile(`(?m)^produce: \d+ records, \d+ records/s$`).FindAllString(stderr, -1)
	if len(lines) < 2 {
		t.Errorf("progress on stderr: %q; want a line every %v", stderr, progressEvery)
	}
	// From files, progress counts bytes too.
	file := filepath.Join(t.TempDir(), "e.txt")
	var b strings.Builder
	for i := 0; i < 20000; i++ {
		fmt.Fprintf(&b, "%d %d\n", i, i+1)
	}
	if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	progressEvery = time.Millisecond
	_, stderr, err = execute(t, "produce", "--brokers", c.ListenAddrs()[0], "--topic", "t", file)
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^produce: +\d+% \(\d+ of \d+ bytes\), \d+ records, \d+ records/s$`).MatchString(stderr) {
		t.Errorf("progress of a file: %q", stderr)
	}
}

// TestProduceBrokerStopsAnswering: a broker that answers metadata but
// never acknowledges a record (every produce gets a retriable error)
// makes produce give up after --timeout, saying so.
func TestProduceBrokerStopsAnswering(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "t"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.ControlKey(int16(kmsg.Produce), func(kr kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		req := kr.(*kmsg.ProduceRequest)
		resp := req.ResponseKind().(*kmsg.ProduceResponse)
		for _, rt := range req.Topics {
			st := kmsg.NewProduceResponseTopic()
			st.Topic, st.TopicID = rt.Topic, rt.TopicID
			for _, rp := range rt.Partitions {
				sp := kmsg.NewProduceResponseTopicPartition()
				sp.Partition, sp.ErrorCode = rp.Partition, kerr.NotEnoughReplicas.Code
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil, true
	})
	t0 := time.Now()
	_, _, err = executeIn(t, strings.NewReader("1 2\n"), "produce", "--brokers", c.ListenAddrs()[0], "--topic", "t", "--timeout", "1s")
	if err == nil || !strings.Contains(err.Error(), "acknowledged a record within 1s (--timeout)") {
		t.Fatalf("produce to a broker that acknowledges nothing: %v", err)
	}
	t.Logf("gave up after %v: %v", time.Since(t0).Round(time.Millisecond), err)
	if took := time.Since(t0); took > time.Minute {
		t.Errorf("produce took %v to give up with --timeout 1s", took)
	}
}

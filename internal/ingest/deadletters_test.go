package ingest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// fakeDLClient is the Kafka client as the dead letters see it: it
// answers each dead letter as its source record's script says (ok at
// once by default; "late" keeps the answer until answerLate), and the
// topic's max.message.bytes as set.
type fakeDLClient struct {
	answers  map[string][]string // by source ("edges/1@7"), the next first
	late     map[string]func(*kgo.Record, error)
	produced []string // of the last command
	limit    int32
	limitErr error
	purges   int
}

func newFakeDLClient() *fakeDLClient {
	return &fakeDLClient{answers: map[string][]string{}, late: map[string]func(*kgo.Record, error){}, limit: DefaultMaxMessageBytes}
}

// fakeAnswers are the answers a script gives a dead letter.
var fakeAnswers = map[string]error{"ok": nil, "refused": errors.New("refused"), "too-large": kerr.MessageTooLarge}

func (f *fakeDLClient) Produce(_ context.Context, r *kgo.Record, promise func(*kgo.Record, error)) {
	h := headerMap(r)
	src := h[HeaderSourceTopic] + "/" + h[HeaderSourcePartition] + "@" + h[HeaderSourceOffset]
	f.produced = append(f.produced, fmt.Sprintf("%s to %s: key=%dB value=%dB truncated=%s", src, r.Topic, len(r.Key), len(r.Value), h[HeaderTruncated]))
	answer := "ok"
	if q := f.answers[src]; len(q) > 0 {
		answer, f.answers[src] = q[0], q[1:]
	}
	if answer == "late" {
		f.late[src] = promise
		return
	}
	promise(r, fakeAnswers[answer])
}

func (f *fakeDLClient) ensureTopic(context.Context, string) error { return nil }

func (f *fakeDLClient) maxMessageBytes(context.Context, string) (int32, error) {
	return f.limit, f.limitErr
}

func (f *fakeDLClient) purge(string) { f.purges++ }

func (f *fakeDLClient) batchCap() int32 { return 100<<20 - 4096 }

// TestDeadLetters runs the scripts of testdata/deadletters against the
// dead letters part, a fake Kafka client and the pauses part (over a
// fake pauser), wired as the Ingester wires them (ingester_deadletter.go).
// Commands (a source record is "topic/partition@offset"):
//
//	set-limit [bytes=<n>] [err=unknown-topic]  what the topic's limit reads as
//	read-limit                                 the worker's read of it
//	send                                       one poll's dead letters; input lines:
//	    <source> [key=<bytes>] value=<bytes> [answers=<a>,<a>...]
//	    each answer ok, refused, too-large or late (kept until answer-late)
//	answer-late src=<source> with=<answer>
//	retry after=<duration>                     the worker, that much later
//	poll polled=<position>                     the poll loop's unblockAcked
//	revoke partitions=<set>                    dropBlocks
//
// Each prints the dead letters produced, what it returned, the client's
// pauses and resumes, the blocks, the partitions held, the limits and
// the counters.
func TestDeadLetters(t *testing.T) {
	runScripts(t, "deadletters", deadLettersScript)
}

// deadLettersScript runs one script of TestDeadLetters.
func deadLettersScript() func(t *testing.T, d *datadriven.TestData) string {
	m := NewMetrics(nil)
	dl := newDeadLetters(&Config{DeadLetterTopic: "dlt", DeadLetterTimeout: 50 * time.Millisecond, Metrics: m, Logger: slog.New(slog.DiscardHandler)})
	dl.setLogInterval(slog.New(slog.DiscardHandler), time.Hour)
	cl := newFakeDLClient()
	fp := &fakePauser{paused: partitionSet{}}
	pz := newPauses(fp)
	ctx := context.Background()
	return func(t *testing.T, d *datadriven.TestData) string {
		cl.produced, fp.calls = nil, nil
		var out []string
		switch d.Cmd {
		case "set-limit":
			cl.limitErr = nil
			if d.HasArg("bytes") {
				cl.limit = int32(atoi(t, argString(t, d, "bytes")))
			}
			if argString(t, d, "err") == "unknown-topic" {
				cl.limitErr = kerr.UnknownTopicOrPartition
			}
			return "ok"
		case "read-limit":
			dl.readLimit(ctx, cl, 0)
		case "send":
			cut, err := dl.send(ctx, cl, deadRecords(t, d.Input, cl))
			if err != nil {
				t.Fatal(err)
			}
			if len(cut) > 0 {
				pz.holdDeadLetters(dl.block(cut))
			}
			out = append(out, kv("cut", dash(fmtBlocks(cut))))
		case "answer-late":
			src := argString(t, d, "src")
			answer, ok := fakeAnswers[argString(t, d, "with")]
			if !ok || cl.late[src] == nil {
				t.Fatalf("no late answer %q for %s", argString(t, d, "with"), src)
			}
			cl.late[src](nil, answer)
			delete(cl.late, src)
		case "retry":
			after, err := time.ParseDuration(argString(t, d, "after"))
			if err != nil {
				t.Fatal(err)
			}
			dl.retry(ctx, cl, time.Now().Add(after))
		case "poll":
			u := dl.unblock(argPosition(t, d, "polled"))
			if len(u.done) > 0 {
				pz.releaseDeadLetters(u.resume, false)
			}
			out = append(out, kv("next", show(u.next)), kv("fetch from", dash(fmtEpochOffsets(u.offsets))))
		case "revoke":
			if gone := dl.drop(parseAssignment(t, argString(t, d, "partitions"))); len(gone) > 0 {
				pz.releaseDeadLetters(gone, true)
			}
		default:
			t.Fatalf("unknown command %q", d.Cmd)
		}
		return lines(append([]string{kv("produced", len(cl.produced))}, append(prefixed("  ", cl.produced), append(out, deadLettersState(dl, pz, fp, m, cl))...)...)...)
	}
}

// deadRecords are the records of a send's input lines, with their
// answers given to cl.
func deadRecords(t *testing.T, input string, cl *fakeDLClient) []deadRecord {
	t.Helper()
	var dead []deadRecord
	for _, line := range strings.Split(strings.TrimSpace(input), "\n") {
		f := strings.Fields(line)
		topic, rest, _ := strings.Cut(f[0], "/")
		part, off, ok := strings.Cut(rest, "@")
		if !ok {
			t.Fatalf("%q: want topic/partition@offset", f[0])
		}
		r := &kgo.Record{Topic: topic, Partition: int32(atoi(t, part)), Offset: atoi(t, off)}
		for _, a := range f[1:] {
			k, v, _ := strings.Cut(a, "=")
			switch k {
			case "key":
				r.Key = []byte(strings.Repeat("k", int(atoi(t, v))))
			case "value":
				r.Value = []byte(strings.Repeat("v", int(atoi(t, v))))
			case "answers":
				cl.answers[f[0]] = strings.Split(v, ",")
			default:
				t.Fatalf("%q: unknown field %q", line, k)
			}
		}
		dead = append(dead, deadRecord{r: r, reason: "bad"})
	}
	return dead
}

// deadLettersState is what every command prints after its own.
func deadLettersState(dl *deadLetters, pz *pauses, fp *fakePauser, m *Metrics, cl *fakeDLClient) string {
	calls := "none"
	if len(fp.calls) > 0 {
		calls = strings.Join(fp.calls, "; ")
	}
	dl.mu.Lock()
	var blocks []string
	for _, b := range dl.blocks {
		err := "-"
		if b.lastErr != nil {
			err = b.lastErr.Error()
		}
		blocks = append(blocks, fmt.Sprintf("%s/%d@%d tries=%d running=%v acked=%v backoff=%v err=%s", b.topic, b.partition, b.offset, b.tries, b.running, b.acked, b.backoff, err))
	}
	limits := fmt.Sprintf("topic=%d known=%v stale=%v client=%d purges=%d", dl.topicLimit, dl.limitKnown, dl.limitStale, dl.clientLimit.Load(), cl.purges)
	dl.mu.Unlock()
	slices.Sort(blocks)
	pz.mu.Lock()
	held := dash(pz.deadLetter.String())
	pz.mu.Unlock()
	return lines(append(append([]string{kv("client", calls), kv("blocks", len(blocks))}, prefixed("  ", blocks)...),
		kv("held", held),
		kv("limit", limits),
		fmt.Sprintf("counts: dead-lettered=%v failures=%v truncated=%v", testutil.ToFloat64(m.DeadLetters.WithLabelValues("edges")),
			testutil.ToFloat64(m.DeadLetterFailures), testutil.ToFloat64(m.DeadLettersTruncated)))...)
}

// prefixed is each of ss after p.
func prefixed(p string, ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = p + s
	}
	return out
}

// fmtBlocks is "topic/partition@offset" of each block, sorted.
func fmtBlocks(bs map[tp]*dlBlock) string {
	var out []string
	for k, b := range bs {
		out = append(out, fmt.Sprintf("%s/%d@%d", k.topic, k.partition, b.offset))
	}
	slices.Sort(out)
	return strings.Join(out, " ")
}

// fmtEpochOffsets is the offsets SetOffsets is given, as a position.
func fmtEpochOffsets(offs map[string]map[int32]kgo.EpochOffset) string {
	p := Position{}
	for t, ps := range offs {
		for part, eo := range ps {
			p.Set(t, part, eo.Offset)
		}
	}
	return fmtOffsets(p)
}

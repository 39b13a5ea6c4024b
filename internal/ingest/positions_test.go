package ingest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
)

// TestPositions runs the scripts of testdata/positions against the
// positions part alone. Commands (positions as fmtOffsets writes them,
// "+" between topics):
//
//	new applied=<pos> [durable=<pos>] [checkpoint=<pos>]
//	apply pos=<pos>                the applier publishes a batch's position
//	accept pos=<pos>               history took partitions at these starts
//	take-pending polled=<pos>      the poll loop takes them into its position
//	resume partition=t/p [follow-group]
//	flush seq=<n>                  a blocking flush of what is applied
//	mark-durable seq=<n> pos=<pos> the poll loop saw batch seq durable
//	checkpoint [fail]              the applier's checkpoint after a flush
//	discard all | discard topic=<t>
//	show
func TestPositions(t *testing.T) {
	runScripts(t, "positions", positionsScript)
}

// positionsScript runs one script of TestPositions.
func positionsScript() func(t *testing.T, d *datadriven.TestData) string {
	var s *positions
	return func(t *testing.T, d *datadriven.TestData) string {
		switch d.Cmd {
		case "new":
			s = newPositions(argPosition(t, d, "applied"), argPosition(t, d, "durable"), argPosition(t, d, "checkpoint"))
			return showPositions(s)
		case "apply":
			var seq uint64
			if d.HasArg("seq") {
				d.ScanArgs(t, "seq", &seq)
			}
			s.setApplied(seq, argPosition(t, d, "pos"))
			return showPositions(s)
		case "applied-at":
			seq, pos := s.appliedAt()
			return fmt.Sprintf("seq %d: %s", seq, show(pos))
		case "ending-at":
			if seq, pos, ok := s.endingAt(argPosition(t, d, "cut"), argOwns(t, d)); ok {
				return fmt.Sprintf("the batch of seq %d ended there, at %s", seq, show(pos))
			}
			return "no kept batch ended there"
		case "share":
			pos := argPosition(t, d, "pos")
			before := show(pos)
			share := shareOf(pos, argPosition(t, d, "cut"), argOwns(t, d))
			if show(pos) != before {
				t.Fatalf("shareOf modified pos: %s, was %s", show(pos), before)
			}
			return show(share)
		case "stand":
			st, err := Stand(argPosition(t, d, "pos"), argPosition(t, d, "cut"), argOwns(t, d))
			if err != nil {
				return err.Error()
			}
			return [...]string{"before the cut", "at the cut", "past the cut"}[st]
		case "accept":
			s.accept(argPosition(t, d, "pos"))
			return showPositions(s)
		case "take-pending":
			polled := argPosition(t, d, "polled")
			before := fmtOffsets(polled)
			next := s.takePending(polled)
			if fmtOffsets(polled) != before {
				t.Fatalf("takePending modified polled: %s, was %s", show(polled), before)
			}
			return lines(kv("next", show(next)), kv("pending", show(s.pending)))
		case "resume":
			topic, p := argPartition(t, d, "partition")
			if o, ok := s.resumeAt(topic, p, d.HasArg("follow-group")); ok {
				return fmt.Sprintf("%s/%d resumes at %d", topic, p, o)
			}
			return fmt.Sprintf("%s/%d: no offset of the store's (the group's, then the reset policy, decide)", topic, p)
		case "flush":
			var seq uint64
			d.ScanArgs(t, "seq", &seq)
			s.lockFlush()
			s.flushed(s.appliedNow(), seq)
			s.unlockFlush()
			return showPositions(s)
		case "mark-durable":
			var seq uint64
			d.ScanArgs(t, "seq", &seq)
			return lines(kv("marked", s.markDurable(seq, argPosition(t, d, "pos"))), showPositions(s))
		case "checkpoint":
			pos, seq, due := s.checkpointDue()
			if !due {
				return "nothing new since the last checkpoint"
			}
			if d.HasArg("fail") {
				return fmt.Sprintf("checkpoint of %s at seq %d failed: owed", show(pos), seq)
			}
			s.checkpointed(pos, seq)
			return showPositions(s)
		case "discard":
			s.discard(d.HasArg("all"), argString(t, d, "topic"))
			return showPositions(s)
		case "show":
			return showPositions(s)
		}
		t.Fatalf("unknown command %q", d.Cmd)
		return ""
	}
}

// showPositions prints every position s holds.
func showPositions(s *positions) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	ck := "none"
	if s.checkpoint != nil {
		ck = show(s.checkpoint) + fmt.Sprintf(" (seq %d)", s.checkpointSeq)
	}
	return lines(kv("applied", show(s.applied)), kv("durable", fmt.Sprintf("%s (seq %d)", show(s.durable), s.durableSeq)),
		kv("accepted", show(s.accepted)), kv("pending", show(s.pending)), kv("checkpoint", ck))
}

// argOwns is the partitions of the argument own ("edges/0,edges/2"; none
// when it is missing) as Stand's owns.
func argOwns(t *testing.T, d *datadriven.TestData) func(string, int32) bool {
	own := map[string]bool{}
	if d.HasArg("own") {
		var s string
		d.ScanArgs(t, "own", &s)
		for _, x := range strings.Split(s, ",") {
			own[x] = true
		}
	}
	return func(topic string, p int32) bool { return own[fmt.Sprintf("%s/%d", topic, p)] }
}

// TestBatchEndsKeepTheNewest: past maxBatchEnds batches, the oldest ends
// are dropped and the newest found, each with its own position.
func TestBatchEndsKeepTheNewest(t *testing.T) {
	s := newPositions(Position{}, Position{}, nil)
	owns := func(string, int32) bool { return true }
	const n = maxBatchEnds + 10
	for seq := uint64(1); seq <= n; seq++ {
		s.setApplied(seq, Position{"edges": {0: int64(seq) * 3}})
	}
	for seq := uint64(1); seq <= n; seq++ {
		got, pos, ok := s.endingAt(Position{"edges": {0: int64(seq) * 3}}, owns)
		kept := seq > n-maxBatchEnds
		if ok != kept || ok && (got != seq || pos["edges"][0] != int64(seq)*3) {
			t.Fatalf("batch %d: found %v (seq %d, %v), want found %v", seq, ok, got, pos, kept)
		}
	}
	if seq, pos := s.appliedAt(); seq != n || pos["edges"][0] != n*3 {
		t.Fatalf("applied at %d %v, want %d", seq, pos, n)
	}
}

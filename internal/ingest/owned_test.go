package ingest

import (
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/graphtide/graphtide/internal/ingest/decode"
	"github.com/graphtide/graphtide/internal/keydict"
	"github.com/graphtide/graphtide/internal/ownership"
)

// TestCheckCount: partitioned mode notices a topic whose partition count
// is no longer the map's, but not a listing that carries an error (kadm
// lists a topic's error as partition -1), nor anything in group mode.
func TestCheckCount(t *testing.T) {
	listing := func(n int, topicErr error) kadm.ListedOffsets {
		l := kadm.ListedOffsets{"edges": {}}
		if topicErr != nil {
			l["edges"][-1] = kadm.ListedOffset{Topic: "edges", Partition: -1, Err: topicErr}
			return l
		}
		for p := int32(0); p < int32(n); p++ {
			l["edges"][p] = kadm.ListedOffset{Topic: "edges", Partition: p, Offset: 10}
		}
		return l
	}
	for _, c := range []struct {
		name  string
		own   []int32
		list  kadm.ListedOffsets
		grown bool
	}{
		{"same count", []int32{0, 1}, listing(4, nil), false},
		{"a topic error", []int32{0, 1}, listing(0, errors.New("NOT_LEADER_OR_FOLLOWER")), false},
		{"grown", []int32{0, 1}, listing(5, nil), true},
		{"group mode", nil, listing(5, nil), false},
	} {
		cfg := Config{Brokers: []string{"x"}, Topics: []string{"edges"}, Own: c.own}
		if c.own != nil {
			cfg.Partitions = 4
		}
		cfg, err := cfg.withDefaults()
		if err != nil {
			t.Fatal(err)
		}
		a := newAssignment(&cfg)
		a.checkCount(c.list)
		if (a.grown != nil) != c.grown {
			t.Errorf("%s: grown %v, want %v", c.name, a.grown, c.grown)
		}
		if c.grown && !strings.Contains(a.grown.Error(), `topic "edges" has 5 partitions now, but --owners maps 4`) {
			t.Errorf("%s: %v", c.name, a.grown)
		}
	}
}

// TestOwnerCheck: a record passes when every event's source vertex (its
// number, or its string key through the dictionary) is of the record's
// partition; the first that is not makes it misplaced, named. Held vertex
// records keep their label and properties after the decoder's buffers
// change.
func TestOwnerCheck(t *testing.T) {
	dict, err := keydict.Open(filepath.Join(t.TempDir(), "keys"))
	if err != nil {
		t.Fatal(err)
	}
	defer dict.Close()
	alice, err := dict.ID("alice")
	if err != nil {
		t.Fatal(err)
	}
	part := ownership.NewPartitioner()
	c := newOwnerCheck(4, dict)
	pa := part.Of("alice", 4)
	other := uint64(7) // a number of another partition than alice's
	for part.Of(strconv.FormatUint(other, 10), 4) == pa {
		other++
	}
	p7 := part.Of(strconv.FormatUint(other, 10), 4)
	label := []byte("Person")
	c.add(decode.Edge{Op: decode.OpPutVertex, Src: alice, Label: label})
	copy(label, "XXXXXX") // the decoder's scratch, reused
	if err := c.misplaced(pa); err != nil {
		t.Fatalf("alice's record on alice's partition %d: %v", pa, err)
	}
	if string(c.buf[0].Label) != "Person" {
		t.Fatalf("held label %q: not copied", c.buf[0].Label)
	}
	c.add(decode.Edge{Op: decode.OpUpsert, Src: other, Dst: alice})
	err = c.misplaced(pa)
	var me *MisplacedError
	if !errors.As(err, &me) || me.Key != strconv.FormatUint(other, 10) || me.Partition != p7 || me.Record != pa {
		t.Fatalf("%d's event in a record of partition %d: %v; want misplaced, belonging to %d", other, pa, err, p7)
	}
}

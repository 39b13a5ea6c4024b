package ingest

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// ps builds a partitionSet from "topic:p,p,p" strings.
func ps(specs ...string) partitionSet {
	s := partitionSet{}
	for _, spec := range specs {
		t, list, _ := strings.Cut(spec, ":")
		if list == "" {
			s[t] = map[int32]bool{}
			continue
		}
		for _, p := range strings.Split(list, ",") {
			var n int32
			fmt.Sscan(p, &n)
			s.add(t, n)
		}
	}
	return s
}

func TestCheckAssignment(t *testing.T) {
	four := map[string]int32{"e": 4}
	for _, tc := range []struct {
		name       string
		history    partitionSet
		assigned   partitionSet
		committed  partitionSet
		partitions map[string]int32
		topics     []string
		// want: "" for no conflict, else "elsewhere / elsewhere with
		// history / foreign" as partition sets.
		elsewhere, elsewhereHistory, foreign string
	}{
		{name: "fresh store holds the whole topic", assigned: ps("e:0,1,2,3"), partitions: four},
		{name: "resumes its whole history", history: ps("e:0,1,2,3"), assigned: ps("e:0,1,2,3"), committed: ps(), partitions: four},
		{name: "its own committed offsets do not count", history: ps("e:0,1,2,3"), assigned: ps("e:0,1,2,3"), committed: ps("e:0,1,2,3"), partitions: four},
		{name: "lost partitions it has history for", history: ps("e:0,1,2,3"), assigned: ps("e:0,1"), partitions: four,
			elsewhere: "e[2,3]", elsewhereHistory: "e[2,3]"},
		{name: "second member: history elsewhere", assigned: ps("e:2,3"), committed: ps("e:2,3"), partitions: four,
			elsewhere: "e[0,1]", foreign: "e[2,3]"},
		{name: "second member of a fresh group", assigned: ps("e:2,3"), partitions: four, elsewhere: "e[0,1]"},
		{name: "the topic grew", history: ps("e:0,1,2,3"), assigned: ps("e:0,1,2,3,4,5"), partitions: map[string]int32{"e": 6}},
		{name: "a new partition another store consumed", history: ps("e:0,1,2,3"), assigned: ps("e:0,1,2,3,4,5"), committed: ps("e:4"),
			partitions: map[string]int32{"e": 6}, foreign: "e[4]"},
		{name: "nothing assigned", history: ps("e:0"), assigned: ps(), partitions: four,
			elsewhere: "e[0,1,2,3]", elsewhereHistory: "e[0]"},
		{name: "topic not created yet", assigned: ps(), partitions: map[string]int32{}},
		{name: "new member holds nothing yet", assigned: ps(), partitions: four},
		{name: "history of a topic no longer consumed", history: ps("old:0,1", "e:0"), assigned: ps("e:0"), partitions: map[string]int32{"e": 1, "old": 2}},
		{name: "history beyond the known partitions", history: ps("e:0,5"), assigned: ps("e:0"), partitions: map[string]int32{"e": 1},
			elsewhere: "e[5]", elsewhereHistory: "e[5]"},
		{name: "two topics split between members", history: ps(), assigned: ps("a:0,1"), partitions: map[string]int32{"a": 2, "b": 3},
			topics: []string{"a", "b"}, elsewhere: "b[0,1,2]"},
		{name: "both rules", history: ps("a:0", "b:0"), assigned: ps("a:0,1", "b:1"), committed: ps("a:1", "b:1"),
			partitions: map[string]int32{"a": 2, "b": 2}, topics: []string{"a", "b"}, elsewhere: "b[0]", elsewhereHistory: "b[0]", foreign: "a[1] b[1]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			topics := tc.topics
			if topics == nil {
				topics = []string{"e"}
			}
			f := assignmentFacts{group: "g", topics: topics, history: tc.history, assigned: tc.assigned, committed: tc.committed, partitions: tc.partitions}
			got := checkAssignment(f)
			want := oracleVerdict(f)
			if (got == nil) != (want == nil) || got != nil && (got.elsewhere.String() != want[0] || got.elsewhereHistory.String() != want[1] || got.foreign.String() != want[2]) {
				t.Fatalf("checkAssignment = %v, oracle %q", got, want)
			}
			if tc.elsewhere+tc.foreign == "" {
				if got != nil {
					t.Fatalf("conflict %v, want none", got)
				}
				return
			}
			if got == nil {
				t.Fatalf("no conflict, want elsewhere %q, foreign %q", tc.elsewhere, tc.foreign)
			}
			if g := [3]string{got.elsewhere.String(), got.elsewhereHistory.String(), got.foreign.String()}; g != [3]string{tc.elsewhere, tc.elsewhereHistory, tc.foreign} {
				t.Fatalf("conflict %q, want %q", g, [3]string{tc.elsewhere, tc.elsewhereHistory, tc.foreign})
			}
			msg := got.Error()
			for _, w := range []string{"--reset-source-position", "--group", `"g"`} {
				if !strings.Contains(msg, w) {
					t.Errorf("the reason lacks %q: %s", w, msg)
				}
			}
			if tc.elsewhere != "" && !strings.Contains(msg, tc.elsewhere) || tc.foreign != "" && !strings.Contains(msg, tc.foreign) {
				t.Errorf("the reason does not name the partitions: %s", msg)
			}
		})
	}
}

// oracleVerdict decides partition by partition, over every partition
// number any input mentions, from the rules as the README states them:
// this store must hold every partition of its topics that exists or that
// it has history for, and may not take one whose history is elsewhere.
// It returns nil or [elsewhere, elsewhere with history, foreign].
func oracleVerdict(f assignmentFacts) *[3]string {
	maxP := int32(0)
	for _, s := range []partitionSet{f.history, f.assigned, f.committed} {
		for _, m := range s {
			for p := range m {
				maxP = max(maxP, p+1)
			}
		}
	}
	for _, n := range f.partitions {
		maxP = max(maxP, n)
	}
	var el, elh, fo []string
	configured := map[string]bool{}
	for _, t := range f.topics {
		configured[t] = true
	}
	// Holding nothing, with no history, it ingests nothing.
	holds := false
	for t := range configured {
		for p := int32(0); p < maxP; p++ {
			holds = holds || f.assigned[t][p] || f.history[t][p]
		}
	}
	if !holds {
		return nil
	}
	var topics []string
	for t := range configured {
		topics = append(topics, t)
	}
	slices.Sort(topics)
	for _, t := range topics {
		var e, eh, fr []string
		for p := int32(0); p < maxP; p++ {
			hist := f.history[t][p]
			exists := p < f.partitions[t]
			mine := f.assigned[t][p]
			if (hist || exists) && !mine {
				e = append(e, fmt.Sprint(p))
				if hist {
					eh = append(eh, fmt.Sprint(p))
				}
			}
			if mine && !hist && f.committed[t][p] {
				fr = append(fr, fmt.Sprint(p))
			}
		}
		list := func(out *[]string, l []string) {
			if len(l) > 0 {
				*out = append(*out, t+"["+strings.Join(l, ",")+"]")
			}
		}
		list(&el, e)
		list(&elh, eh)
		list(&fo, fr)
	}
	if len(el)+len(fo) == 0 {
		return nil
	}
	return &[3]string{strings.Join(el, " "), strings.Join(elh, " "), strings.Join(fo, " ")}
}

// TestCheckAssignmentRandom compares checkAssignment with the oracle on
// random facts over two topics of up to 6 partitions.
func TestCheckAssignmentRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 8))
	random := func(p float64) partitionSet {
		s := partitionSet{}
		for _, tp := range []string{"a", "b", "c"} {
			for q := int32(0); q < 6; q++ {
				if r.Float64() < p {
					s.add(tp, q)
				}
			}
		}
		return s
	}
	conflicts := 0
	for i := range 5000 {
		f := assignmentFacts{group: "g", topics: []string{"a", "b"}, history: random(0.3), assigned: random(0.7), committed: random(0.2),
			partitions: map[string]int32{"a": int32(r.IntN(7)), "c": 3}}
		if r.IntN(2) == 0 {
			f.partitions["b"] = int32(r.IntN(7))
		}
		got := checkAssignment(f)
		want := oracleVerdict(f)
		var g *[3]string
		if got != nil {
			g = &[3]string{got.elsewhere.String(), got.elsewhereHistory.String(), got.foreign.String()}
			conflicts++
		}
		if !reflect.DeepEqual(g, want) {
			t.Fatalf("case %d %+v: checkAssignment %v, oracle %v", i, f, g, want)
		}
	}
	if conflicts == 0 || conflicts == 5000 {
		t.Fatalf("%d of 5000 random cases conflict: the cases test one side only", conflicts)
	}
}

func TestCheckSource(t *testing.T) {
	idA, idB := TopicID{0xa}, TopicID{0xb}
	rec := Recorded{ClusterID: "c1", TopicIDs: map[string]TopicID{"e": idA, "x": idA}, Position: Position{"e": {0: 5}, "x": {0: 1}}}
	src := func(cluster string, ids map[string]TopicID) sourceInfo {
		return sourceInfo{cluster: cluster, ids: ids, partitions: map[string]int32{}}
	}
	for _, tc := range []struct {
		name string
		rec  Recorded
		src  sourceInfo
		want *SourceMismatchError
	}{
		{name: "same source", rec: rec, src: src("c1", map[string]TopicID{"e": idA})},
		{name: "nothing recorded", rec: Recorded{}, src: src("other", nil)},
		{name: "another cluster", rec: rec, src: src("c2", map[string]TopicID{"e": idA}),
			want: &SourceMismatchError{RecordedCluster: "c1", Cluster: "c2"}},
		{name: "offsets without a source", rec: Recorded{Position: Position{"e": {0: 1}}}, src: src("c1", map[string]TopicID{"e": idA}),
			want: &SourceMismatchError{RecordedCluster: "", Cluster: "c1"}},
		{name: "topic re-created", rec: rec, src: src("c1", map[string]TopicID{"e": idB}),
			want: &SourceMismatchError{RecordedCluster: "c1", Cluster: "c1", Topics: []TopicMismatch{{Topic: "e", Recorded: idA, Found: idB}}}},
		{name: "topic deleted", rec: rec, src: src("c1", map[string]TopicID{}),
			want: &SourceMismatchError{RecordedCluster: "c1", Cluster: "c1", Topics: []TopicMismatch{{Topic: "e", Recorded: idA, Missing: true}}}},
		{name: "brokers without IDs, recorded so", rec: Recorded{TopicIDs: map[string]TopicID{}, Position: Position{"e": {0: 1}}}, src: src("", map[string]TopicID{"e": {}})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// "x" has offsets but is not configured: never checked.
			got := checkSource(tc.rec, tc.src, []string{"e", "e", "new"})
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("checkSource = %#v, want %#v", got, tc.want)
			}
		})
	}

	msg := (&SourceMismatchError{RecordedCluster: "c1", Cluster: "c2", Dir: "./graphtide-data"}).Error()
	for _, w := range []string{`"c1"`, `"c2"`, "--reset-source-position", "another Kafka cluster", "the store in ./graphtide-data",
		"point --brokers at the cluster", "another --dir"} {
		if !strings.Contains(msg, w) {
			t.Errorf("cluster mismatch message lacks %q: %s", w, msg)
		}
	}
	msg = (&SourceMismatchError{RecordedCluster: "c1", Cluster: "c1", Topics: []TopicMismatch{{Topic: "e", Recorded: idA, Found: idB}}}).Error()
	for _, w := range []string{`"e"`, idA.String(), idB.String(), "--reset-source-position", "re-created", "another --dir"} {
		if !strings.Contains(msg, w) {
			t.Errorf("topic mismatch message lacks %q: %s", w, msg)
		}
	}
}

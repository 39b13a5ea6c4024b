// Package ownership is partitioned mode's map: which instance owns which
// partitions of the topics, and which partition a vertex belongs to.
//
// What it promises: a vertex's partition is the one Kafka's default
// partitioner gives a record keyed by the vertex as requests name it (its
// decimal id, or its string key): murmur2 of the key, positive, modulo
// the partition count, computed by franz-go's StickyKeyPartitioner, the
// partitioner graphtide's own producers (gen, produce) use and the one
// Java clients default to for keyed records. A Map covers every partition
// exactly once; Parse refuses anything else with a message that says
// what is allowed.
package ownership

import (
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Owner is one instance (or a Service in front of the replicas of one)
// and the partitions it owns.
type Owner struct {
	Partitions []int32 // ascending
	URL        *url.URL
}

// Map is every owner of a partitioned graph; Self is this instance's
// index in Owners.
type Map struct {
	Count  int32 // partitions of every topic
	Owners []Owner
	Self   int
	// owner[p] is the index in Owners of partition p's owner.
	owner []int
	part  Partitioner
}

// Partitioner computes partitions as Kafka's default partitioner does for
// keyed records. Safe for concurrent use.
type Partitioner struct{ tp kgo.TopicPartitioner }

// NewPartitioner returns a Partitioner.
func NewPartitioner() Partitioner {
	return Partitioner{kgo.StickyKeyPartitioner(nil).ForTopic("")}
}

// Of returns the partition, of n, of a record keyed by key.
func (p Partitioner) Of(key string, n int32) int32 {
	return int32(p.tp.Partition(&kgo.Record{Key: []byte(key)}, int(n)))
}

// Parse reads --owners ("PARTITIONS=URL,...", where PARTITIONS is a set
// as ParseSet reads it with '+' between its items, e.g.
// "0-1=http://a:9464,2+3=http://b:9464") and --own-partitions (this
// instance's set, which must be one entry's).
func Parse(owners, own string) (*Map, error) {
	if strings.TrimSpace(owners) == "" || strings.TrimSpace(own) == "" {
		return nil, fmt.Errorf("partitioned mode needs both --owners (PARTITIONS=URL,... for every partition) and --own-partitions (this instance's entry)")
	}
	m := &Map{Self: -1}
	seen := map[int32]string{}
	for _, e := range strings.Split(owners, ",") {
		ps, u, ok := strings.Cut(strings.TrimSpace(e), "=")
		if !ok {
			return nil, fmt.Errorf("--owners: %q must look like PARTITIONS=URL, e.g. 0-1=http://graphtide-a:9464", e)
		}
		set, err := ParseSet(strings.ReplaceAll(ps, "+", ","))
		if err != nil {
			return nil, fmt.Errorf("--owners %q: %w", e, err)
		}
		base, err := url.Parse(u)
		if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" || (base.Path != "" && base.Path != "/") || base.RawQuery != "" || base.User != nil {
			return nil, fmt.Errorf("--owners %q: the owner must be a base URL http://host:port or https://host:port (its API's address; no user or password: requests carry the bearer token), got %q", e, u)
		}
		base.Path = ""
		for _, p := range set {
			if prev, dup := seen[p]; dup {
				return nil, fmt.Errorf("--owners: partition %d is given to %s and to %s: each partition has one owner", p, prev, base)
			}
			seen[p] = base.String()
		}
		m.Owners = append(m.Owners, Owner{Partitions: set, URL: base})
	}
	m.Count = int32(len(seen))
	for p := int32(0); p < m.Count; p++ {
		if _, ok := seen[p]; !ok {
			return nil, fmt.Errorf("--owners gives partitions up to %d but none owns partition %d: every partition of the topics, from 0, needs an owner", slices.Max(slices.Collect(maps.Keys(seen))), p)
		}
	}
	mine, err := ParseSet(own)
	if err != nil {
		return nil, fmt.Errorf("--own-partitions: %w", err)
	}
	m.owner = make([]int, m.Count)
	var entries []string
	for i, o := range m.Owners {
		for _, p := range o.Partitions {
			m.owner[p] = i
		}
		if slices.Equal(o.Partitions, mine) {
			m.Self = i
		}
		entries = append(entries, FormatSet(o.Partitions))
	}
	if m.Self < 0 {
		return nil, fmt.Errorf("--own-partitions %s is not one entry of --owners (%s): an instance owns exactly the partitions --owners gives its address, so that every instance routes a vertex to the one that ingests it",
			FormatSet(mine), strings.Join(entries, "; "))
	}
	m.part = NewPartitioner()
	return m, nil
}

// ParseSet reads a set of partitions: items separated by ',' (or '+'),
// each a partition N or a range N-M; it returns them ascending, without
// repeats.
func ParseSet(s string) ([]int32, error) {
	var out []int32
	for _, item := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == '+' }) {
		item = strings.TrimSpace(item)
		lo, hi, isRange := strings.Cut(item, "-")
		a, err1 := strconv.ParseInt(lo, 10, 32)
		b := a
		var err2 error
		if isRange {
			b, err2 = strconv.ParseInt(hi, 10, 32)
		}
		if err1 != nil || err2 != nil || a < 0 || b < a || b >= 1<<20 {
			return nil, fmt.Errorf("%q is not a partition or a range of partitions (N or N-M, 0 <= N <= M < %d)", item, 1<<20)
		}
		for p := a; p <= b; p++ {
			out = append(out, int32(p))
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no partitions given: list them as 0,1 or 0-1")
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// FormatSet writes a set as ranges joined by '+': "0-1+4".
func FormatSet(ps []int32) string {
	var b strings.Builder
	for i := 0; i < len(ps); {
		j := i
		for j+1 < len(ps) && ps[j+1] == ps[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte('+')
		}
		b.WriteString(strconv.Itoa(int(ps[i])))
		if j > i {
			b.WriteString("-" + strconv.Itoa(int(ps[j])))
		}
		i = j + 1
	}
	return b.String()
}

// Own is this instance's partitions.
func (m *Map) Own() []int32 { return m.Owners[m.Self].Partitions }

// Partition returns the partition of a record keyed by key.
func (m *Map) Partition(key string) int32 {
	return m.part.Of(key, m.Count)
}

// Key is the record key of vertex v as a request or a record names it: a
// number as its canonical decimal ("007" is 7, "7"), a string key as it
// is; "key:" forces a string key (as in requests) and is not part of it.
func Key(v string) string {
	if k, ok := strings.CutPrefix(v, "key:"); ok {
		return k
	}
	if n, err := strconv.ParseUint(v, 10, 64); err == nil {
		return strconv.FormatUint(n, 10)
	}
	return v
}

// Owner returns the partition of vertex v, as a request names it (see
// Key), and the base URL of its owner, nil when it is this instance.
func (m *Map) Owner(v string) (*url.URL, int32) {
	p := m.Partition(Key(v))
	o := m.owner[p]
	if o == m.Self {
		return nil, p
	}
	return m.Owners[o].URL, p
}

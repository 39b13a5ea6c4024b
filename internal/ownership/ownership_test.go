package ownership

import (
	"strconv"
	"strings"
	"testing"
)

// murmur2 is Kafka's (org.apache.kafka.common.utils.Utils.murmur2),
// written out from the Java source: the oracle of Partition.
func murmur2(data []byte) int32 {
	const seed, m, r = uint32(0x9747b28c), uint32(0x5bd1e995), 24
	n := len(data)
	h := seed ^ uint32(n)
	for i := 0; i+4 <= n; i += 4 {
		k := uint32(data[i]) | uint32(data[i+1])<<8 | uint32(data[i+2])<<16 | uint32(data[i+3])<<24
		k *= m
		k ^= k >> r
		k *= m
		h *= m
		h ^= k
	}
	tail := data[n&^3:]
	switch len(tail) {
	case 3:
		h ^= uint32(tail[2]) << 16
		fallthrough
	case 2:
		h ^= uint32(tail[1]) << 8
		fallthrough
	case 1:
		h ^= uint32(tail[0])
		h *= m
	}
	h ^= h >> 13
	h *= m
	h ^= h >> 15
	return int32(h)
}

func TestMurmur2MatchesKafka(t *testing.T) {
	// Kafka's own test vectors (UtilsTest.testMurmur2).
	for key, want := range map[string]int32{
		"21": -973932308, "foobar": -790332482, "a-little-bit-long-string": -985981536,
		"a-little-bit-longer-string": -1486304829, "lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971, "abc": 479470107,
	} {
		if got := murmur2([]byte(key)); got != want {
			t.Errorf("murmur2(%q) = %d, Kafka says %d", key, got, want)
		}
	}
}

func TestPartitionIsKafkas(t *testing.T) {
	for _, n := range []int{1, 2, 3, 4, 7, 12} {
		var owners []string
		for p := 0; p < n; p++ {
			owners = append(owners, strconv.Itoa(p)+"=http://o"+strconv.Itoa(p)+":9464")
		}
		m, err := Parse(strings.Join(owners, ","), "0")
		if err != nil {
			t.Fatal(err)
		}
		counts := make([]int, n)
		for i := 0; i < 20000; i++ {
			key := strconv.Itoa(i * 7919)
			if i%3 == 0 {
				key = "user-" + key
			}
			want := int32(uint32(murmur2([]byte(key)))&0x7fffffff) % int32(n)
			if got := m.Partition(key); got != want {
				t.Fatalf("n=%d: Partition(%q) = %d, Kafka's default partitioner gives %d", n, key, got, want)
			}
			counts[want]++
			u, p := m.Owner(key)
			if p != want || (want == 0) != (u == nil) || (u != nil && u.String() != "http://o"+strconv.Itoa(int(want))+":9464") {
				t.Fatalf("n=%d: Owner(%q) = %v, %d; want partition %d and its owner", n, key, u, p, want)
			}
			if u2, p2 := m.Owner("key:" + key); p2 != p || u2 != u {
				t.Fatalf("Owner(key:%s) differs from Owner(%s)", key, key)
			}
			if _, p3 := m.Owner("00" + key); !strings.HasPrefix(key, "user-") && p3 != p {
				t.Fatalf("Owner(00%s) is partition %d, Owner(%s) %d: a number's key is its canonical decimal", key, p3, key, p)
			}
		}
		for p, c := range counts {
			if c == 0 {
				t.Errorf("n=%d: no key fell on partition %d", n, p)
			}
		}
	}
}

func TestParse(t *testing.T) {
	m, err := Parse(" 0-1=http://a:9464 , 2+4=https://b:8443/, 3=http://c:1", "4+2")
	if err != nil {
		t.Fatal(err)
	}
	if m.Count != 5 || m.Self != 1 || FormatSet(m.Own()) != "2+4" || m.Owners[1].URL.String() != "https://b:8443" {
		t.Fatalf("parsed %+v", m)
	}
	for _, c := range []struct{ owners, own, want string }{
		{"", "0", "needs both"},
		{"0-1=http://a:1", "", "needs both"},
		{"0-1", "0-1", "must look like PARTITIONS=URL"},
		{"0-1=ftp://a:1", "0-1", "base URL"},
		{"0-1=http://a:1/api", "0-1", "base URL"},
		{"0-1=http://u:secret@a:1", "0-1", "no user or password"},
		{"0-1=http://a:1,1-2=http://b:1", "0-1", "partition 1 is given to http://a:1 and to http://b:1"},
		{"0-1=http://a:1,3=http://b:1", "0-1", "none owns partition 2"},
		{"0-1=http://a:1,2=http://b:1", "0", "is not one entry of --owners (0-1; 2)"},
		{"0-1=http://a:1,2=http://b:1", "0-2", "is not one entry"},
		{"x=http://a:1", "0", `"x" is not a partition`},
		{"2-1=http://a:1", "0", `"2-1" is not a partition`},
		{"0=http://a:1", "-1", `is not a partition`},
	} {
		_, err := Parse(c.owners, c.own)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Parse(%q, %q) = %v; want an error saying %q", c.owners, c.own, err, c.want)
		}
	}
}

func TestSets(t *testing.T) {
	for in, want := range map[string]string{"0": "0", "3,1,2": "1-3", "0-1+4": "0-1+4", "5,5,0-2": "0-2+5", "7-7": "7"} {
		ps, err := ParseSet(in)
		if err != nil {
			t.Fatal(err)
		}
		if got := FormatSet(ps); got != want {
			t.Errorf("FormatSet(ParseSet(%q)) = %q, want %q", in, got, want)
		}
		again, _ := ParseSet(want)
		if FormatSet(again) != want {
			t.Errorf("%q does not read back", want)
		}
	}
	for _, bad := range []string{"", ",", "a", "1-", "-1", "3-2", "1048576"} {
		if _, err := ParseSet(bad); err == nil {
			t.Errorf("ParseSet(%q) accepted", bad)
		}
	}
}

func TestKey(t *testing.T) {
	for in, want := range map[string]string{"7": "7", "007": "7", "0": "0", "key:007": "007", "alice": "alice", "key:alice": "alice",
		"18446744073709551615": "18446744073709551615", "18446744073709551616": "18446744073709551616", "-1": "-1", "1e3": "1e3"} {
		if got := Key(in); got != want {
			t.Errorf("Key(%q) = %q, want %q", in, got, want)
		}
	}
}

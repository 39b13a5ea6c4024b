package doctest

import (
	"errors"
	"reflect"
	"testing"
)

func TestDocPorts(t *testing.T) {
	text := "kafka.sh start --port 19092 --ssl-port=19094 --dir /tmp/k\n" +
		"curl http://127.0.0.1:9465/readyz localhost:9471 0.0.0.0:80 10.0.0.1:9092 127.0.0.1:0 --embedded-port 9093 --topics 9000"
	want := []int{9465, 9471, 80, 19092, 19094, 9093}
	if got := DocPorts(text); !reflect.DeepEqual(got, want) {
		t.Errorf("DocPorts = %v, want %v", got, want)
	}
}

func TestMapping(t *testing.T) {
	next := 30000
	alloc := func() (int, error) {
		next += 2
		switch next {
		case 30004:
			return 9464, nil // a docs' port: must not be taken
		case 30008:
			return 30003, nil // the port above 30002, taken by 9090's broker's controller
		}
		return next, nil
	}
	page := "serve --http-addr 127.0.0.1:9465 --brokers 127.0.0.1:19092"
	m, err := NewMapping([]string{page}, map[int]int{TourBrokerPort: 25000}, alloc, "/work/t/tmp")
	if err != nil {
		t.Fatal(err)
	}
	// FixedPorts and the page's, sorted: 9090, 9092, 9464, 9465 get
	// allocated ports (the allocator's 9464 and 30003 refused), 19092 the
	// broker's.
	want := map[int]int{9090: 30002, 9092: 30006, 9464: 30010, 9465: 30012, 19092: 25000}
	if !reflect.DeepEqual(m.ports, want) {
		t.Errorf("ports %v, want %v", m.ports, want)
	}
	for in, out := range map[string]string{
		"curl -s 127.0.0.1:9464/readyz":                       "curl -s 127.0.0.1:30010/readyz",
		"--http-addr localhost:9465 --http-addr=0.0.0.0:9090": "--http-addr localhost:30012 --http-addr=0.0.0.0:30002",
		"kafka.sh start --port 19092 --dir /tmp/gt-kafka":     "kafka.sh start --port 25000 --dir /work/t/tmp/gt-kafka",
		"--embedded-port=9092 --port 1234 10.0.0.1:9464":      "--embedded-port=30006 --port 1234 10.0.0.1:9464",
		"dir: /tmp\nx=/tmp/a y='/tmp/b' /tmpx a/tmp/b":        "dir: /work/t/tmp\nx=/work/t/tmp/a y='/work/t/tmp/b' /tmpx a/tmp/b",
		"127.0.0.1:94640 127.0.0.1:19092":                     "127.0.0.1:94640 127.0.0.1:25000",
	} {
		if got := m.Apply(in); got != out {
			t.Errorf("Apply(%q) = %q, want %q", in, got, out)
		}
	}
	for in, out := range map[string]string{
		"listening on 127.0.0.1:30010, broker 127.0.0.1:25000": "listening on 127.0.0.1:9464, broker 127.0.0.1:19092",
		"data in /work/t/tmp/data, 127.0.0.1:30009":            "data in /tmp/data, 127.0.0.1:30009",
	} {
		if got := m.Reverse(in); got != out {
			t.Errorf("Reverse(%q) = %q, want %q", in, got, out)
		}
	}
	if _, err := NewMapping(nil, nil, func() (int, error) { return 0, errors.New("none") }, ""); err == nil {
		t.Error("an allocator's error was not returned")
	}
}

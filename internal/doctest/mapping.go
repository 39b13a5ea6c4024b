package doctest

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// The fixed addresses of the docs (docs/doctest.md lists them).
const (
	TourBrokerPort = 19092 // the tour's real broker, 127.0.0.1:19092
	HTTPPort       = 9464  // serve's HTTP API and metrics, 127.0.0.1:9464
	EmbeddedPort   = 9092  // serve's embedded broker, 127.0.0.1:9092
	PrometheusPort = 9090  // Prometheus, 127.0.0.1:9090
)

// FixedPorts are the ports every page gets a port of its own for, named in
// its text or not: commands default to them.
var FixedPorts = []int{TourBrokerPort, HTTPPort, EmbeddedPort, PrometheusPort}

var (
	// hostPortRE: a loopback (or any-interface) address with its port.
	hostPortRE = regexp.MustCompile(`\b(127\.0\.0\.1|localhost|0\.0\.0\.0):(\d{1,5})\b`)
	// portFlagRE: a port given alone to a flag whose name ends in port
	// (--port, --ssl-port, --embedded-port ...), as its next word or after =.
	portFlagRE = regexp.MustCompile(`(--[a-z-]*port[= ]+)(\d{1,5})\b`)
	// tmpRE: /tmp at the start of a path.
	tmpRE = regexp.MustCompile(`(^|[\s='"(:,])/tmp\b`)
)

// Mapping moves a page's fixed addresses to the ports of one run: the
// address 127.0.0.1:P (also localhost:P and 0.0.0.0:P) and a port P given
// to a --...port flag become the run's port for P, the same for every
// occurrence in the page, and /tmp at the start of a path becomes the
// page's own temporary directory. Reverse does the opposite to what the
// commands print, so transcripts show the docs' addresses.
type Mapping struct {
	ports   map[int]int // the docs' port -> the run's
	reverse map[int]int // the run's port -> the docs'
	tmp     string      // what /tmp stands for
}

// NewMapping maps the ports named in texts and the FixedPorts: each to
// fixed[P] if given (the shared broker's port for TourBrokerPort), else to
// a port from alloc (neither it nor the one above it given to another
// port of the page or named by it), and /tmp to tmp.
func NewMapping(texts []string, fixed map[int]int, alloc func() (int, error), tmp string) (*Mapping, error) {
	m := &Mapping{ports: map[int]int{}, reverse: map[int]int{}, tmp: tmp}
	want := map[int]bool{}
	for _, p := range FixedPorts {
		want[p] = true
	}
	for _, t := range texts {
		for _, p := range DocPorts(t) {
			want[p] = true
		}
	}
	ports := make([]int, 0, len(want))
	for p := range want {
		ports = append(ports, p)
	}
	sort.Ints(ports)
	for _, p := range ports {
		if a, ok := fixed[p]; ok {
			m.ports[p], m.reverse[a] = a, p
		}
	}
	// used: the ports given out and the one above each (a broker's
	// controller port is its client port + 1).
	used := map[int]bool{}
	for a := range m.reverse {
		used[a], used[a+1] = true, true
	}
	for _, p := range ports {
		if _, ok := m.ports[p]; ok {
			continue
		}
		for tries := 0; ; tries++ {
			a, err := alloc()
			if err != nil {
				return nil, fmt.Errorf("a port for %d: %w", p, err)
			}
			if !used[a] && !used[a+1] && !want[a] && !want[a+1] {
				m.ports[p], m.reverse[a] = a, p
				used[a], used[a+1] = true, true
				break
			}
			if tries > 100 {
				return nil, fmt.Errorf("a port for %d: the allocator keeps giving taken ports", p)
			}
		}
	}
	return m, nil
}

// DocPorts returns the ports a text names: in 127.0.0.1:P, localhost:P,
// 0.0.0.0:P, and after a --...port flag. Port 0 (any free port) is not
// one.
func DocPorts(text string) []int {
	var ps []int
	for _, re := range []*regexp.Regexp{hostPortRE, portFlagRE} {
		for _, m := range re.FindAllStringSubmatch(text, -1) {
			if p, err := strconv.Atoi(m[2]); err == nil && p > 0 && p < 65536 {
				ps = append(ps, p)
			}
		}
	}
	return ps
}

// Port returns the run's port for the docs' port p (p itself if it is not
// mapped).
func (m *Mapping) Port(p int) int {
	if a, ok := m.ports[p]; ok {
		return a
	}
	return p
}

// Apply maps a text of the docs (a command, a file) to this run.
func (m *Mapping) Apply(s string) string {
	s = m.replacePorts(s, m.ports)
	if m.tmp != "" {
		s = tmpRE.ReplaceAllString(s, "${1}"+m.tmp)
	}
	return s
}

// Reverse maps what a command printed back to the docs' addresses and
// paths.
func (m *Mapping) Reverse(s string) string {
	if m.tmp != "" {
		s = strings.ReplaceAll(s, m.tmp, "/tmp")
	}
	return hostPortRE.ReplaceAllStringFunc(s, func(hp string) string {
		sm := hostPortRE.FindStringSubmatch(hp)
		p, _ := strconv.Atoi(sm[2])
		if d, ok := m.reverse[p]; ok {
			return sm[1] + ":" + strconv.Itoa(d)
		}
		return hp
	})
}

func (m *Mapping) replacePorts(s string, to map[int]int) string {
	s = hostPortRE.ReplaceAllStringFunc(s, func(hp string) string {
		sm := hostPortRE.FindStringSubmatch(hp)
		p, _ := strconv.Atoi(sm[2])
		if a, ok := to[p]; ok {
			return sm[1] + ":" + strconv.Itoa(a)
		}
		return hp
	})
	return portFlagRE.ReplaceAllStringFunc(s, func(f string) string {
		sm := portFlagRE.FindStringSubmatch(f)
		p, _ := strconv.Atoi(sm[2])
		if a, ok := to[p]; ok {
			return sm[1] + strconv.Itoa(a)
		}
		return f
	})
}

// Ports returns the docs' ports and the run's, sorted by the docs' port
// ("9464->41234"), for messages.
func (m *Mapping) Ports() string {
	ds := make([]int, 0, len(m.ports))
	for d := range m.ports {
		ds = append(ds, d)
	}
	sort.Ints(ds)
	parts := make([]string, len(ds))
	for i, d := range ds {
		parts[i] = fmt.Sprintf("%d->%d", d, m.ports[d])
	}
	return strings.Join(parts, " ")
}

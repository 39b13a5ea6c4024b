// Package graphid is a graph's identity on a Kafka cluster: its name, how
// serve derives one from the topics it consumes, and the Kafka names that
// default from it (the consumer group, the writes, alert and dead-letter
// topics).
//
// A graph is what every replica of one deployment holds: the same topics
// read the same way. Its replicas (and the owners of partitioned mode)
// share its writes and alert topics; two graphs on one cluster must share
// nothing. So every name serve would otherwise share by default is
// derived from the graph's name, and the records serve produces carry
// it (HeaderGraph), so that a store can refuse a record addressed to
// another graph.
//
// What it promises:
//
//   - Derive gives the same name for the same set of topics, in any order
//     and with repeats, and different names for different sets (a set of
//     one topic is named by the topic, any other set by its first topic
//     and a hash of all of them), always a Valid name.
//   - Defaults(g) gives names no other graph's Defaults gives (a group no
//     other graph's group, topics no other graph's topics: every topic ends
//     in a suffix without '.', which tells the three kinds apart), and each
//     a valid Kafka group or topic name. Defaults("") are the names every
//     store used before graphs had names (graphtide, graphtide-writes,
//     graphtide-alerts, graphtide-dead-letters): a store that recorded no
//     graph keeps them, so that an upgrade moves nothing.
package graphid

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
)

// MaxLen is the longest graph name, in bytes: with the longest suffix of
// Defaults the names stay within Kafka's 249.
const MaxLen = 200

// HeaderGraph names the graph a record serve produced is for (writes,
// alerts, dead letters).
const HeaderGraph = "graphtide-graph"

// Validate checks a graph name: 1 to MaxLen letters, digits, '.', '_' or
// '-' (what Kafka allows in topic names), and not "." or "..".
func Validate(name string) error {
	if name == "" {
		return fmt.Errorf("a graph name must not be empty")
	}
	if len(name) > MaxLen {
		return fmt.Errorf("a graph name is at most %d characters, got %d", MaxLen, len(name))
	}
	if name == "." || name == ".." {
		return fmt.Errorf("the graph name %q is not allowed (Kafka refuses it as a topic name)", name)
	}
	for _, c := range name {
		if !legal(c) {
			return fmt.Errorf("graph name %q: only letters, digits, '.', '_' and '-' are allowed", name)
		}
	}
	return nil
}

func legal(c rune) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
}

// hashLen is how many hex digits of SHA-256 name a set of topics.
const hashLen = 12

// Derive names the graph of topics: the topic itself when there is one
// (and it is a valid name), else the first topic in byte order, cut to
// fit, then '-' and 12 hex digits of the SHA-256 of every topic, sorted,
// each followed by a zero byte. Two sets of topics get the same name only
// if they are the same set, or with the probability of a 48-bit hash
// collision.
func Derive(topics []string) string {
	ts := slices.Clone(topics)
	slices.Sort(ts)
	ts = slices.Compact(ts)
	if len(ts) == 1 && Validate(ts[0]) == nil && !hashed(ts[0]) {
		return ts[0]
	}
	h := sha256.New()
	for _, t := range ts {
		h.Write([]byte(t))
		h.Write([]byte{0})
	}
	sum := hex.EncodeToString(h.Sum(nil))[:hashLen]
	head := ""
	if len(ts) > 0 {
		head = strings.Map(func(c rune) rune {
			if legal(c) {
				return c
			}
			return '_'
		}, ts[0])
	}
	if most := MaxLen - hashLen - 1; len(head) > most {
		head = head[:most]
	}
	if head == "" || head == "." || head == ".." {
		return sum
	}
	return head + "-" + sum
}

// hashed reports whether a single topic's name looks like Derive's name of
// a set (a '-' and hashLen hex digits at its end): such a topic is named by
// a hash too, so that no single topic can take the name of a set.
func hashed(t string) bool {
	if len(t) < hashLen+1 || t[len(t)-hashLen-1] != '-' {
		return false
	}
	for _, c := range t[len(t)-hashLen:] {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// Names are the Kafka names a graph uses by default.
type Names struct {
	Group       string // the consumer group
	Writes      string // serve's writes topic (POST /v1/batches)
	Alerts      string // the monitors' alert topic
	DeadLetters string // the dead-letter topic
}

// Defaults returns graph's default names: graphtide.<graph>,
// graphtide.<graph>.writes, graphtide.<graph>.alerts and
// graphtide.<graph>.dead-letters; for graph "" (a store that recorded no
// graph: written before graphs had names) the names every graph shared
// then.
func Defaults(graph string) Names {
	if graph == "" {
		return Names{Group: "graphtide", Writes: "graphtide-writes", Alerts: "graphtide-alerts", DeadLetters: "graphtide-dead-letters"}
	}
	p := "graphtide." + graph
	return Names{Group: p, Writes: p + ".writes", Alerts: p + ".alerts", DeadLetters: p + ".dead-letters"}
}

package server

import (
	"fmt"
	"net"
	"strings"
)

// What serve prints to whoever started it (Config.Out) says how to use it
// from there: the embedded broker's line how to feed it, the HTTP line
// where the API listens and the first queries to try, as commands that
// run as printed in the shell serve was started from (the program as it
// was invoked, Config.Program) but for the placeholders in capitals.

// Hub of the stream feedCommand produces (gen's R-MAT stream of scale 16,
// edge factor 16, seed 1): the vertex with the most distinct
// out-neighbors, 6,098. hint_test.go computes it from package gen.
const (
	feedScale = 16
	feedSeed  = 1
	feedHub   = 8677
)

// program is the command that runs graphtide in the notices.
func (c Config) program() string {
	if c.Program == "" {
		return "graphtide"
	}
	return c.Program
}

// feedCommand is the command that feeds broker's topic with a small
// deterministic stream.
func feedCommand(prog, broker, topic string) string {
	return fmt.Sprintf("%s gen --scale %d --seed %d --brokers %s --topic %s", prog, feedScale, feedSeed, broker, topic)
}

// queryHint is what follows the "http listening on" line: the first
// queries to try against the API at addr (the listener's address), over
// TLS or not, with a bearer token or not; embedded: serve runs the
// embedded broker, so the stream of feedCommand is what it holds.
func queryHint(prog, addr string, tls, tokens, embedded bool) string {
	scheme := "http"
	if tls {
		scheme = "https"
	}
	url := scheme + "://" + dialAddr(addr)
	var curl, query []string
	if tls {
		curl = append(curl, "--cacert CA.pem")
		query = append(query, "--server-ca CA.pem")
	}
	if tokens {
		curl = append(curl, `-H "Authorization: Bearer TOKEN"`)
		query = append(query, "--token-file TOKEN_FILE")
	}
	vertex, note := "VERTEX", " (VERTEX: a vertex id or key)"
	if embedded {
		vertex, note = fmt.Sprint(feedHub), fmt.Sprintf(" (%d: the hub of the stream the gen command above produces)", feedHub)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "query it: curl -s%s %s/v1/stats\n", join(curl), url)
	fmt.Fprintf(&b, "      or: %s query neighbors %s --limit 5 --server %s%s%s\n", prog, vertex, url, join(query), note)
	fmt.Fprintf(&b, "    more: %s query --help; the API's OpenAPI document: curl -s%s %s/v1/openapi.yaml\n", prog, join(curl), url)
	return b.String()
}

// join returns the options as " a b" (nothing for none), to follow a
// word.
func join(opts []string) string {
	if len(opts) == 0 {
		return ""
	}
	return " " + strings.Join(opts, " ")
}

// dialAddr is the address a client on this machine dials to reach a
// listener on addr: loopback for an unspecified host (0.0.0.0, ::).
func dialAddr(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}

package servebench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/graphtide/graphtide/internal/bench"
	"github.com/graphtide/graphtide/internal/genkafka"
)

// Edge events end to end (issue 42): the same payments, as JSON records
// in the shape, consumed by serve through a field mapping three
// times, each by a serve process of its own on a fresh data directory:
//   - replace: the mapping of today (the newest payment of a pair is the
//     edge);
//   - accumulate: types=payment:accumulate;
//   - accumulate_props: that, with event_id and props.currency,
//     props.channel.
//
// Per run: serve's CPU time (utime+stime of the process, from readiness to
// every record ingested: fetch, JSON decode, key dictionary, Apply,
// flushes and compactions) per payment, and the bytes its data
// directory's store holds per distinct pair, twice: once serve stopped
// (the store as serve leaves it), and after `graphtide compact` on that
// directory (a full compaction: the store records its accumulate types,
// their retain and its newest event time in its MANIFEST, so an offline
// compaction folds what serve's own would). The target (an
// accumulate type at most 1.5x replace's bytes per edge on disk after
// compaction) is judged on the compacted figure.

// EventsResult is bench serve's edge_events.
type EventsResult struct {
	Payments      int         `json:"payments"`
	Accounts      int         `json:"accounts"`
	DistinctPairs int         `json:"distinct_pairs"`
	EventsPerPair float64     `json:"events_per_pair"`
	Replace       EventsServe `json:"replace"`
	Accumulate    EventsServe `json:"accumulate"`
	Props         EventsServe `json:"accumulate_props"`
	Mappings      [3]string   `json:"mappings"`
}

// EventsServe is one serve run's figures.
type EventsServe struct {
	CPUNsPerEvent      float64 `json:"cpu_ns_per_event"`
	EventsPerSec       float64 `json:"events_per_sec"`
	StoreBytesPerEdge  float64 `json:"store_bytes_per_edge"`
	CPUOverReplace     float64 `json:"cpu_over_replace"`
	StoreBytesOverRepl float64 `json:"store_bytes_over_replace"`
	// After `graphtide compact` on serve's data directory.
	CompactedBytesPerEdge  float64 `json:"compacted_bytes_per_edge"`
	CompactedBytesOverRepl float64 `json:"compacted_bytes_over_replace"`
}

// paymentJSON is one payment as the producer sends it.
func paymentJSON(i int, p bench.Payment) ([]byte, error) {
	channels := [...]string{"card", "transfer", "wallet", "direct-debit"}
	return json.Marshal(map[string]any{
		"event_id": "e-" + strconv.Itoa(i), "from_account": fmt.Sprintf("acct-%d", p.Src), "to_account": fmt.Sprintf("acct-%d", p.Dst),
		"amount": p.Amount, "currency": "EUR", "channel": channels[i%len(channels)],
		"ts": time.UnixMicro(p.Time).UTC().Format(time.RFC3339Nano), "type": "payment",
	})
}

// RunEvents runs the edge-events comparison with cfg's binary, brokers,
// partitions and directory.
func RunEvents(ctx context.Context, cfg Config, payments, accounts int) (EventsResult, error) {
	res := EventsResult{Payments: payments, Accounts: accounts}
	pays := bench.PaymentStream(payments, accounts, cfg.Seed)
	pairs := map[[2]uint64]struct{}{}
	path := filepath.Join(cfg.Dir, "payments.jsonl")
	f, err := os.Create(path)
	if err != nil {
		return res, err
	}
	for i, p := range pays {
		pairs[[2]uint64{p.Src, p.Dst}] = struct{}{}
		line, err := paymentJSON(i, p)
		if err == nil {
			_, err = f.Write(append(line, '\n'))
		}
		if err != nil {
			f.Close()
			return res, err
		}
	}
	if err := f.Close(); err != nil {
		return res, err
	}
	res.DistinctPairs = len(pairs)
	res.EventsPerPair = float64(payments) / float64(len(pairs))
	fmt.Fprintf(cfg.Log, "edge events: %d payments among %d accounts, %d distinct pairs (%.2f payments per pair)\n", payments, accounts, len(pairs), res.EventsPerPair)

	topic := fmt.Sprintf("graphtide-bench-serve-events-%d", time.Now().UnixNano())
	cl, err := kgo.NewClient(kgo.SeedBrokers(cfg.Brokers...))
	if err != nil {
		return res, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)

	// The mappings, without the topic (each run has a topic of its own).
	base := "src=/from_account,dst=/to_account,weight=/amount,time=/ts,type=/type"
	res.Mappings = [3]string{base, base + ",types=payment:accumulate",
		base + ",types=payment:accumulate,event_id=/event_id,props.currency=/currency,props.channel=/channel"}
	outs := []*EventsServe{&res.Replace, &res.Accumulate, &res.Props}
	for i, name := range []string{"replace", "accumulate", "accumulate_props"} {
		t := topic + "-" + name
		if err := bench.CreateTopic(ctx, adm, t, cfg.Partitions); err != nil {
			return res, err
		}
		defer func() { _, _ = adm.DeleteTopics(context.Background(), t) }() // best effort, as Run's
		o, err := serveEvents(ctx, cfg, t, t+":"+res.Mappings[i], path, payments, len(pairs))
		if err != nil {
			return res, fmt.Errorf("edge events, %s: %w", name, err)
		}
		*outs[i] = o
	}
	for i, o := range outs {
		o.CPUOverReplace = o.CPUNsPerEvent / res.Replace.CPUNsPerEvent
		o.StoreBytesOverRepl = o.StoreBytesPerEdge / res.Replace.StoreBytesPerEdge
		o.CompactedBytesOverRepl = o.CompactedBytesPerEdge / res.Replace.CompactedBytesPerEdge
		fmt.Fprintf(cfg.Log, "edge events, %s: %.0f ns of serve's CPU per payment (%.2fx replace), %.0f payments/s, %.1f store bytes per pair as serve left it (%.2fx), %.1f after graphtide compact (%.2fx)\n",
			[]string{"replace", "accumulate", "accumulate_props"}[i], o.CPUNsPerEvent, o.CPUOverReplace, o.EventsPerSec, o.StoreBytesPerEdge, o.StoreBytesOverRepl,
			o.CompactedBytesPerEdge, o.CompactedBytesOverRepl)
	}
	return res, nil
}

// serveEvents runs one serve process on the topic through mapping until it
// ingested every record.
func serveEvents(ctx context.Context, cfg Config, topic, mapping, path string, payments, pairs int) (EventsServe, error) {
	var o EventsServe
	dir := filepath.Join(cfg.Dir, topic)
	port, err := freePort()
	if err != nil {
		return o, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	logFile, err := os.Create(dir + ".log")
	if err != nil {
		return o, err
	}
	defer logFile.Close()
	group := topic
	args := []string{"serve", "--brokers", strings.Join(cfg.Brokers, ","), "--topics", topic, "--group", group, "--mapping", mapping,
		"--dir", dir, "--http-addr", addr, "--alert-topic", "", "--dead-letter-topic", group + "-dead"}
	cmd := exec.CommandContext(ctx, cfg.Binary, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	fmt.Fprintf(cfg.Log, "starting %s %s\n", cfg.Binary, strings.Join(args, " "))
	if err := cmd.Start(); err != nil {
		return o, err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stopped := false
	stop := func() error {
		if stopped {
			return nil
		}
		stopped = true
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-exited:
			return err
		case <-time.After(2 * time.Minute):
			_ = cmd.Process.Kill()
			return errors.New("serve did not stop within 2 minutes of SIGTERM")
		}
	}
	defer func() { _ = stop() }()
	base := "http://" + addr
	if err := waitFor(ctx, exited, 2*time.Minute, func() (bool, error) {
		code, _, err := get(base + "/readyz")
		return err == nil && code == 200, nil
	}); err != nil {
		return o, fmt.Errorf("serve never became ready (log %s): %w", logFile.Name(), err)
	}
	// serve is idle: its CPU from here on is what the records cost it (the
	// producer is this process).
	cpu0, err := processCPU(cmd.Process.Pid)
	if err != nil {
		return o, err
	}
	t0 := time.Now()
	n, err := genkafka.ProduceLines(ctx, genkafka.LinesConfig{Brokers: cfg.Brokers, Topic: topic, KeyBySource: true}, []string{path}, nil)
	if err != nil {
		return o, err
	}
	if n != payments {
		return o, fmt.Errorf("produced %d records, want %d", n, payments)
	}
	if err := waitFor(ctx, exited, cfg.CatchUpWait, func() (bool, error) {
		rec, err := scrape(base, "graphtide_ingest_records_total")
		if err != nil {
			return false, nil
		}
		var n int64
		for _, v := range rec {
			n += v
		}
		return n >= int64(payments), nil
	}); err != nil {
		return o, fmt.Errorf("serve did not ingest every record (log %s): %w", logFile.Name(), err)
	}
	cpu, err := processCPU(cmd.Process.Pid)
	if err != nil {
		return o, err
	}
	wall := time.Since(t0)
	if err := stop(); err != nil {
		return o, fmt.Errorf("serve exited with %w (log %s)", err, logFile.Name())
	}
	o.CPUNsPerEvent = float64((cpu - cpu0).Nanoseconds()) / float64(payments)
	o.EventsPerSec = float64(payments) / wall.Seconds()
	size, err := dirBytes(filepath.Join(dir, "store"))
	if err != nil {
		return o, err
	}
	o.StoreBytesPerEdge = float64(size) / float64(pairs)
	// A full compaction of what serve left (serve has stopped).
	ccmd := exec.CommandContext(ctx, cfg.Binary, "compact", "--dir", dir)
	ccmd.Stdout, ccmd.Stderr = logFile, logFile
	fmt.Fprintf(cfg.Log, "running %s compact --dir %s\n", cfg.Binary, dir)
	if err := ccmd.Run(); err != nil {
		return o, fmt.Errorf("graphtide compact --dir %s: %w (log %s)", dir, err, logFile.Name())
	}
	if size, err = dirBytes(filepath.Join(dir, "store")); err != nil {
		return o, err
	}
	o.CompactedBytesPerEdge = float64(size) / float64(pairs)
	return o, nil
}

// processCPU is the user and system CPU time of process pid.
func processCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The fields after the command (which may hold spaces) in parentheses.
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(fields))
	}
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	const ticksPerSecond = 100 // USER_HZ on Linux
	return time.Duration(utime+stime) * time.Second / ticksPerSecond, nil
}

// dirBytes is the size of the regular files under dir.
func dirBytes(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		info, err := d.Info()
		if err == nil {
			n += info.Size()
		}
		return err
	})
	return n, err
}

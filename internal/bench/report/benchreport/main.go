// Command benchreport is the Go half of scripts/bench-report.sh: it
// describes and calibrates the machine, runs one benchmark of the report
// with its stated command, and renders docs/benchmarks.md from
// docs/bench/*.json. The work is in internal/bench/report.
//
//	benchreport machine -dir docs/bench
//	benchreport run -dir docs/bench -bin bin/graphtide [-brokers B] NAME
//	benchreport render -dir docs/bench -out docs/benchmarks.md
//	benchreport list            (each benchmark's name, and "kafka" if it needs a broker)
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/graphtide/graphtide/internal/bench/report"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "benchreport:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("usage: benchreport machine|run|render|list [flags]")
	}
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	dir := fs.String("dir", "docs/bench", "the directory of the JSON files")
	out := fs.String("out", "docs/benchmarks.md", "render: the page to write")
	bin := fs.String("bin", "bin/graphtide", "run: the graphtide binary")
	brokers := fs.String("brokers", "", "run: the Kafka bootstrap address for $BROKERS")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	switch args[0] {
	case "list":
		for _, b := range report.Benchmarks {
			line := b.Name
			if b.NeedsBroker() {
				line += " kafka"
			}
			if b.NeedsDD() {
				line += " dd"
			}
			fmt.Println(line)
		}
		return nil
	case "machine":
		m, err := report.ReadMachine()
		if err != nil {
			return err
		}
		return report.WriteMachine(*dir, m)
	case "run":
		if fs.NArg() != 1 {
			return fmt.Errorf("run: name one benchmark")
		}
		b, err := report.Find(fs.Arg(0))
		if err != nil {
			return err
		}
		r, err := report.RunBenchmark(b, *bin, *brokers, os.Stderr)
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "benchreport: %s took %.0f s\n", b.Name, r.Seconds)
		return report.WriteRun(*dir, r)
	case "render":
		page, err := report.Render(*dir)
		if err != nil {
			return err
		}
		return os.WriteFile(*out, page, 0o644)
	}
	return fmt.Errorf("unknown command %q: machine, run, render or list", args[0])
}

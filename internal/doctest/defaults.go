package doctest

import (
	"bufio"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
)

// FlagDefault is a flag of a graphtide command whose default is one of the
// fixed addresses (serve's --http-addr, produce's --brokers ...): in a
// page, the command gets the page's address instead, through the flag's
// GRAPHTIDE_<FLAG> variable.
type FlagDefault struct {
	Command []string // the command's path below graphtide, e.g. [serve], [bench serve]
	Flag    string   // the flag's name without dashes
	Default string   // its default as help prints it (a list as a,b)
}

// Env is the flag's environment variable.
func (d FlagDefault) Env() string {
	return "GRAPHTIDE_" + strings.ToUpper(strings.ReplaceAll(d.Flag, "-", "_"))
}

var (
	helpFlagRE = regexp.MustCompile(`^\s+(?:-\w, )?--([a-z0-9-]+)\b.*\(default (.+)\)\s*$`)
	helpCmdRE  = regexp.MustCompile(`^  ([a-z][a-z0-9-]*)\s{2,}\S`)
)

// FlagDefaults reads the help of every command of the graphtide binary
// (walking "Available Commands") and returns the flags whose default names
// a fixed port: 127.0.0.1:P or localhost:P for P one of FixedPorts, or P
// alone.
func FlagDefaults(binary string) ([]FlagDefault, error) {
	fixed := map[int]bool{}
	for _, p := range FixedPorts {
		fixed[p] = true
	}
	var out []FlagDefault
	var walk func(path []string) error
	walk = func(path []string) error {
		args := append(append([]string{}, path...), "--help")
		b, err := exec.Command(binary, args...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("%s %s: %w\n%s", binary, strings.Join(args, " "), err, b)
		}
		var subs []string
		section := ""
		sc := bufio.NewScanner(strings.NewReader(string(b)))
		for sc.Scan() {
			l := sc.Text()
			if strings.HasSuffix(l, ":") && !strings.HasPrefix(l, " ") {
				section = l
				continue
			}
			switch section {
			case "Available Commands:":
				if m := helpCmdRE.FindStringSubmatch(l); m != nil && m[1] != "help" && m[1] != "completion" {
					subs = append(subs, m[1])
				}
			case "Flags:", "Global Flags:":
				m := helpFlagRE.FindStringSubmatch(l)
				if m == nil {
					continue
				}
				v := strings.Trim(m[2], `"[]`)
				if namesFixedPort(v, fixed) {
					out = append(out, FlagDefault{Command: append([]string{}, path...), Flag: m[1], Default: v})
				}
			}
		}
		for _, s := range subs {
			if err := walk(append(append([]string{}, path...), s)); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(nil); err != nil {
		return nil, err
	}
	return out, nil
}

func namesFixedPort(v string, fixed map[int]bool) bool {
	if p, err := strconv.Atoi(v); err == nil {
		return fixed[p]
	}
	for _, p := range DocPorts(v) {
		if fixed[p] {
			return true
		}
	}
	return false
}

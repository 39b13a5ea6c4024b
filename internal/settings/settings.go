// Package settings is how every graphtide command takes its settings: a
// flag on the command line beats the environment variable GRAPHTIDE_<FLAG>
// (upper case, '-' -> '_'), which beats the YAML file named by --config
// (keyed by flag name), which beats the flag's default.
//
// What it promises: a key of the file that is neither a flag nor a known
// section is refused with the allowed names; sections are decoded
// strictly (an unknown field is an error).
package settings

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"sort"
	"strings"

	"github.com/spf13/pflag"
	"gopkg.in/yaml.v3"
)

// AddConfigFlag adds the --config flag that Apply reads.
func AddConfigFlag(fs *pflag.FlagSet) {
	fs.String("config", "", "YAML file of settings keyed by flag name (flags and GRAPHTIDE_* variables take precedence)")
}

// Apply fills every flag that was not given on the command line,
// first from GRAPHTIDE_<FLAG> environment variables, then from the YAML
// config file named by the --config flag (if any), whose keys are the flag
// names. Precedence: command line > environment > config file > default.
func Apply(fs *pflag.FlagSet) error {
	if err := bindEnv(fs); err != nil {
		return err
	}
	path, raw, err := readConfigFile(fs)
	if raw == nil || err != nil {
		return err
	}
	var doc map[string]any
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return fmt.Errorf("--config %s: %w", path, err)
	}
	keys := make([]string, 0, len(doc))
	for k := range doc {
		if !configSections[k] {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		f := fs.Lookup(k)
		if f == nil || k == "config" {
			return fmt.Errorf("--config %s: unknown setting %q; allowed: %s", path, k, flagNames(fs))
		}
		if f.Changed {
			continue // set on the command line or by the environment
		}
		var val string
		switch v := doc[k].(type) {
		case []any:
			parts := make([]string, len(v))
			for i, x := range v {
				parts[i] = fmt.Sprint(x)
			}
			val = strings.Join(parts, ",")
		default:
			val = fmt.Sprint(v)
		}
		if err := fs.Set(k, val); err != nil {
			return fmt.Errorf("--config %s: %s: %w", path, k, err)
		}
	}
	return nil
}

// ApplyChecked is what a command does with its flags before it runs:
// Apply, then o.Validate.
func ApplyChecked(fs *pflag.FlagSet, o interface{ Validate() error }) error {
	if err := Apply(fs); err != nil {
		return err
	}
	return o.Validate()
}

// readConfigFile reads the file named by --config; raw is nil when there
// is none.
func readConfigFile(fs *pflag.FlagSet) (path string, raw []byte, err error) {
	path, _ = fs.GetString("config")
	if path == "" {
		return "", nil, nil
	}
	raw, err = os.ReadFile(path)
	if err != nil {
		return path, nil, fmt.Errorf("--config: %w", err)
	}
	return path, raw, nil
}

// configSections are the keys of the config file that are not flags: the
// commands that take them read them with Section.
var configSections = map[string]bool{"analytics": true, "mappings": true}

// Section decodes the section key of the --config file (if any)
// into out; it leaves out untouched when there is no file or no such key.
func Section(fs *pflag.FlagSet, key string, out any) error {
	path, raw, err := readConfigFile(fs)
	if raw == nil || err != nil {
		return err
	}
	var doc map[string]yaml.Node
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return fmt.Errorf("--config %s: %w", path, err)
	}
	n, ok := doc[key]
	if !ok {
		return nil
	}
	if err := decodeStrict(&n, out); err != nil {
		return fmt.Errorf("--config %s: %s: %w", path, key, err)
	}
	return nil
}

// decodeStrict decodes a YAML node, rejecting unknown fields.
func decodeStrict(n *yaml.Node, out any) error {
	b, err := yaml.Marshal(n)
	if err != nil {
		return err
	}
	return DecodeStrict(b, out)
}

// DecodeStrict decodes a YAML (or JSON) document into out, rejecting
// fields out does not have.
func DecodeStrict(raw []byte, out any) error {
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	return unknownKeys(dec.Decode(out), out)
}

// unknownFieldRE matches yaml's refusal of a field a type does not have.
var unknownFieldRE = regexp.MustCompile(`line \d+: field (\S+) not found in type (\S+)`)

// unknownKeys rewrites yaml's "line N: field X not found in type T" (a
// Go type, and a line of the decoded part, not of the file) into what a
// user can act on: the unknown key and the keys allowed there.
func unknownKeys(err error, out any) error {
	if err == nil || !unknownFieldRE.MatchString(err.Error()) {
		return err
	}
	keys := map[string][]string{}
	yamlKeys(reflect.TypeOf(out), keys)
	return errors.New(unknownFieldRE.ReplaceAllStringFunc(err.Error(), func(m string) string {
		sm := unknownFieldRE.FindStringSubmatch(m)
		if ks := keys[sm[2]]; len(ks) > 0 {
			return fmt.Sprintf("unknown key %q; allowed: %s", sm[1], strings.Join(ks, ", "))
		}
		return fmt.Sprintf("unknown key %q", sm[1])
	}))
}

// yamlKeys records in keys, by type name (as yaml names it), the sorted
// YAML keys of every struct type t holds (through pointers, slices, maps
// and fields).
func yamlKeys(t reflect.Type, keys map[string][]string) {
	for t != nil && (t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array || t.Kind() == reflect.Map) {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct {
		return
	}
	if _, seen := keys[t.String()]; seen {
		return
	}
	keys[t.String()] = nil
	var ks []string
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name != "" && name != "-" {
			ks = append(ks, name)
		}
		yamlKeys(f.Type, keys)
	}
	sort.Strings(ks)
	keys[t.String()] = ks
}

func flagNames(fs *pflag.FlagSet) string {
	var names []string
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Name != "config" && f.Name != "help" {
			names = append(names, f.Name)
		}
	})
	return strings.Join(names, ", ")
}

// bindEnv sets every flag not given on the command line from
// GRAPHTIDE_<NAME> when that variable is set.
func bindEnv(fs *pflag.FlagSet) error {
	var err error
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Changed || err != nil {
			return
		}
		name := "GRAPHTIDE_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		if v, ok := os.LookupEnv(name); ok {
			if e := fs.Set(f.Name, v); e != nil {
				err = fmt.Errorf("%s: %w", name, e)
			}
		}
	})
	return err
}

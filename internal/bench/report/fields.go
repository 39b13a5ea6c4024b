package report

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// MissingFields renders the tables of the benchmark named name (Find)
// from result, a benchmark's JSON line, and returns the fields the tables
// read that result lacks, as dotted paths: every entry of a map and
// element of a list is checked, and an object the tables read through a
// pointer (one older results, or some settings, leave out) may be absent
// whole. Rendering reads a missing field as zero, so a benchmark's test
// calls it on the result of a real run to catch a field renamed on one
// side only.
func MissingFields(name string, result []byte) ([]string, error) {
	b, err := Find(name)
	if err != nil {
		return nil, err
	}
	p := page{audit: true}
	if err := b.render(&p, result); err != nil {
		return nil, fmt.Errorf("render %s: %w", name, err)
	}
	slices.Sort(p.missing)
	return slices.Compact(p.missing), nil
}

// absent appends to missing the fields of t, the type a table decodes
// into, that raw (the result decoded as it is, at path) lacks.
func absent(t reflect.Type, raw any, path string, missing *[]string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct:
		obj, _ := raw.(map[string]any)
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "" || name == "-" {
				continue
			}
			v, ok := obj[name]
			switch {
			case ok:
				absent(f.Type, v, join(path, name), missing)
			case f.Type.Kind() != reflect.Pointer:
				*missing = append(*missing, join(path, name))
			}
		}
	case reflect.Map:
		obj, _ := raw.(map[string]any)
		for k, v := range obj {
			absent(t.Elem(), v, join(path, k), missing)
		}
	case reflect.Slice:
		list, _ := raw.([]any)
		for i, v := range list {
			absent(t.Elem(), v, fmt.Sprintf("%s[%d]", path, i), missing)
		}
	}
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

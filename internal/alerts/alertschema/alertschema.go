// Package alertschema checks alerts against deploy/alerts/alert.schema.json,
// the JSON Schema (2020-12) of an alert that graphtide ships for its
// consumers, with a JSON Schema validator (formats asserted). For tests:
// of the HTTP API, the alert topic and alerts.log, that what each gives is
// what the schema says.
package alertschema

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Path is the schema's file, from the repository's root.
const Path = "deploy/alerts/alert.schema.json"

// File is the schema's file in this source tree: found from the working
// directory up (a test runs in its package's directory) to the module's
// root, the directory of go.mod. Not from the source file's own path,
// which -trimpath (make test's go commands) turns into an import path.
func File() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("alertschema: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			p := filepath.Join(dir, Path)
			if _, err := os.Stat(p); err != nil {
				return "", fmt.Errorf("alertschema: %w", err)
			}
			return p, nil
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", errors.New("alertschema: no go.mod above the working directory: cannot tell where the source tree is")
		}
		dir = up
	}
}

// Schema is the compiled schema.
type Schema struct{ s *jsonschema.Schema }

// Load compiles the schema's file.
func Load() (*Schema, error) {
	p, err := File()
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	s, err := c.Compile(p)
	if err != nil {
		return nil, fmt.Errorf("alertschema: %s: %w", p, err)
	}
	return &Schema{s}, nil
}

// Validate checks one alert's JSON.
func (s *Schema) Validate(alert []byte) error {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(alert))
	if err != nil {
		return fmt.Errorf("alertschema: not JSON: %w", err)
	}
	if err := s.s.Validate(v); err != nil {
		return fmt.Errorf("alertschema: %s: %w", alert, err)
	}
	return nil
}

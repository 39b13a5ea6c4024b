package api

import (
	"encoding/json"
	"os"
	"slices"
	"sort"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/graphtide/graphtide/internal/alerts/alertschema"
)

// The OpenAPI document's Alert and the alerts' JSON Schema
// (deploy/alerts/alert.schema.json) describe one shape: the same fields,
// the same required ones, the same kinds, at every level (the evidence,
// the totals, the Kafka records).
func TestOpenAPIAlertIsTheAlertSchema(t *testing.T) {
	p, err := alertschema.File()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var js map[string]any
	if err := json.Unmarshal(b, &js); err != nil {
		t.Fatal(err)
	}
	defs := js["$defs"].(map[string]any)
	deref := func(s map[string]any) map[string]any {
		if r, ok := s["$ref"].(string); ok {
			return defs[r[len("#/$defs/"):]].(map[string]any)
		}
		return s
	}
	doc := loadDoc(t)
	var compare func(path string, j map[string]any, o *openapi3.Schema)
	compare = func(path string, j map[string]any, o *openapi3.Schema) {
		j = deref(j)
		jt, _ := j["type"].(string)
		if ot := o.Type.Slice(); len(ot) != 1 || ot[0] != jt {
			t.Errorf("%s: type %v in the OpenAPI document, %q in the schema", path, ot, jt)
		}
		if e, ok := j["enum"].([]any); ok {
			if len(e) != len(o.Enum) {
				t.Errorf("%s: enum %v in the OpenAPI document, %v in the schema", path, o.Enum, e)
			}
			for i := range min(len(e), len(o.Enum)) {
				if e[i] != o.Enum[i] {
					t.Errorf("%s: enum %v in the OpenAPI document, %v in the schema", path, o.Enum, e)
				}
			}
		}
		if jt == "array" {
			compare(path+"[]", j["items"].(map[string]any), o.Items.Value)
		}
		props, ok := j["properties"].(map[string]any)
		if !ok {
			return
		}
		var jreq []string
		for _, r := range j["required"].([]any) {
			jreq = append(jreq, r.(string))
		}
		oreq := slices.Clone(o.Required)
		sort.Strings(jreq)
		sort.Strings(oreq)
		if !slices.Equal(jreq, oreq) {
			t.Errorf("%s: required %v in the OpenAPI document, %v in the schema", path, oreq, jreq)
		}
		if o.AdditionalProperties.Has == nil || *o.AdditionalProperties.Has || j["additionalProperties"] != false {
			t.Errorf("%s: additional properties are not refused by both", path)
		}
		for name := range o.Properties {
			if _, ok := props[name]; !ok {
				t.Errorf("%s.%s is in the OpenAPI document, not in the schema", path, name)
			}
		}
		for name, sub := range props {
			op, ok := o.Properties[name]
			if !ok {
				t.Errorf("%s.%s is in the schema, not in the OpenAPI document", path, name)
				continue
			}
			compare(path+"."+name, sub.(map[string]any), op.Value)
		}
	}
	compare("alert", js, doc.Components.Schemas["Alert"].Value)
}

package decode

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/graphtide/graphtide/internal/jsontext"
	"github.com/graphtide/graphtide/internal/typedict"
	"gopkg.in/yaml.v3"
)

// An upsert's payload in the mapped format: its event reference
// (Mapping.EventID) and its edge properties (Mapping.Props), and the
// aggregates a mapping gives edge types (Mapping.Types).

// The limits of an edge payload (engine.MaxEventRef and
// engine.MaxEdgeProps; a test holds them equal), and of a mapping.
const (
	MaxEventRef  = 255     // bytes of UTF-8 of an event reference
	MaxEdgeProps = 4 << 10 // bytes of an edge's property document
	// MaxPropFields bounds the properties a mapping builds props of.
	MaxPropFields = 64
	// MaxPropName bounds a property's name, in bytes.
	MaxPropName = 64
	// MaxRetain is the longest retain of an accumulate type.
	MaxRetain = 30 * 24 * time.Hour
)

// maxArena bounds the scratch space a mapped decoder keeps between
// records for what it builds (props of fields, event references).
const maxArena = 1 << 20

// PropsMapping is where an operation's property document comes from:
// either Source, a source holding a JSON object (props: /attrs), or
// Fields, a map of property name -> source from which the object is
// built (props: {currency: /currency, channel: header:channel}). In YAML
// and JSON it is the string or the map.
type PropsMapping struct {
	Source string
	Fields map[string]string
}

// IsZero reports a mapping with no props (for omitempty).
func (p PropsMapping) IsZero() bool { return p.Source == "" && len(p.Fields) == 0 }

// UnmarshalYAML reads a source (a string) or a map of name -> source.
func (p *PropsMapping) UnmarshalYAML(n *yaml.Node) error {
	*p = PropsMapping{}
	switch n.Kind {
	case yaml.ScalarNode:
		return n.Decode(&p.Source)
	case yaml.MappingNode:
		return n.Decode(&p.Fields)
	}
	return fmt.Errorf("line %d: props: want a source or a map of property name -> source", n.Line)
}

// MarshalYAML writes the string or the map.
func (p PropsMapping) MarshalYAML() (any, error) {
	if len(p.Fields) > 0 {
		return p.Fields, nil
	}
	return p.Source, nil
}

// UnmarshalJSON reads a source (a string) or an object of name -> source.
func (p *PropsMapping) UnmarshalJSON(b []byte) error {
	*p = PropsMapping{}
	if err := json.Unmarshal(b, &p.Source); err == nil {
		return nil
	}
	if err := json.Unmarshal(b, &p.Fields); err != nil {
		return errors.New("props: want a source or an object of property name -> source")
	}
	return nil
}

// MarshalJSON writes the string or the object.
func (p PropsMapping) MarshalJSON() ([]byte, error) {
	if len(p.Fields) > 0 {
		return json.Marshal(p.Fields)
	}
	return json.Marshal(p.Source)
}

// TypeSettings is one entry of a mapping's types section.
type TypeSettings struct {
	// Aggregate is replace (the default) or accumulate.
	Aggregate string `yaml:"aggregate,omitempty" json:"aggregate,omitempty"`
	// Retain (accumulate only) is how long, in event time before the
	// store's newest event, an edge's events stay readable one by one: a
	// duration (24h, 90m) of at most MaxRetain; older ones are folded
	// into the edge's aggregate. Default 0.
	Retain string `yaml:"retain,omitempty" json:"retain,omitempty"`
}

// The aggregates of an edge type.
const (
	AggregateReplace    = "replace"
	AggregateAccumulate = "accumulate"
)

// TypeAggregate is a type's aggregate as TypeAggregates reads it.
type TypeAggregate struct {
	// Type is the type's name, typedict.Default for type 0, or (for a
	// number) its digits.
	Type       string
	Accumulate bool
	Retain     time.Duration
}

// TypeAggregates reads m's types section, sorted by type, or says which
// key is wrong and what is allowed.
func (m Mapping) TypeAggregates() ([]TypeAggregate, error) {
	if len(m.Types) > MaxEdgeTypes {
		return nil, fmt.Errorf("types: %d types, at most %d", len(m.Types), MaxEdgeTypes)
	}
	out := make([]TypeAggregate, 0, len(m.Types))
	seen := map[string]string{}
	for name, s := range m.Types {
		id, named, why := typeText(name)
		if why != "" {
			return nil, fmt.Errorf("types: %s: %s", clip(name), strings.TrimPrefix(why, "is "))
		}
		a := TypeAggregate{Type: name}
		if !named {
			a.Type = fmt.Sprint(id)
			if id == 0 {
				a.Type = typedict.Default
			}
		}
		if other, dup := seen[a.Type]; dup {
			return nil, fmt.Errorf("types: %s and %s are the same type", clip(other), clip(name))
		}
		seen[a.Type] = name
		switch s.Aggregate {
		case "", AggregateReplace:
		case AggregateAccumulate:
			a.Accumulate = true
		default:
			return nil, fmt.Errorf("types: %s: aggregate %s: want replace or accumulate", name, clip(s.Aggregate))
		}
		if s.Retain != "" {
			d, err := time.ParseDuration(s.Retain)
			switch {
			case err != nil:
				return nil, fmt.Errorf("types: %s: retain %s: want a duration such as 24h or 90m", name, clip(s.Retain))
			case !a.Accumulate:
				return nil, fmt.Errorf("types: %s: retain is for an accumulate type (aggregate: accumulate)", name)
			case d < 0 || d > MaxRetain:
				return nil, fmt.Errorf("types: %s: retain %s: want 0 to %v (30 days)", name, s.Retain, MaxRetain)
			}
			a.Retain = d
		}
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Type < out[j].Type })
	return out, nil
}

// refReason says why an event reference is refused, or "".
func refReason(ref []byte) string {
	switch {
	case len(ref) > MaxEventRef:
		return fmt.Sprintf("an event reference has at most %d bytes, got %d", MaxEventRef, len(ref))
	case !utf8.Valid(ref):
		return "an event reference must be UTF-8"
	}
	return ""
}

// edgePropsReason says why an edge's property document is refused, or
// "": the rules of engine.CheckEdgePayload (a test holds them equal on
// what a JSON path passes here: valid JSON).
func edgePropsReason(props []byte) string {
	switch {
	case len(props) > MaxEdgeProps:
		return fmt.Sprintf("an edge's props have at most %d bytes, got %d", MaxEdgeProps, len(props))
	case len(props) > 0 && props[0] != '{':
		return "an edge's props must be a JSON object"
	}
	if off, why := jsontext.Check(props); why != "" {
		return fmt.Sprintf("an edge's props: %s at byte %d of them", why, off)
	}
	return ""
}

// propNameReason says why a property name is refused, or "".
func propNameReason(name string) string {
	switch {
	case name == "":
		return "empty"
	case len(name) > MaxPropName:
		return fmt.Sprintf("longer than %d bytes", MaxPropName)
	case !utf8.ValidString(name):
		return "not UTF-8"
	}
	for _, c := range name {
		if c < 0x20 || c == 0x7f {
			return "holds a control character"
		}
	}
	return ""
}

// Package jsontext holds the rules graphtide puts on JSON text beyond its
// syntax (which encoding/json.Valid checks), shared by the record decoders
// and the engine's checks of a vertex's property document, so that what
// one accepts the other does too: the text is valid UTF-8, no string holds
// an escaped lone surrogate (encoding/json would read each as U+FFFD), and
// nothing is nested deeper than MaxDepth.
package jsontext

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"
)

// MaxDepth bounds the nesting of objects and arrays (deeper is an error,
// not a deep recursion in a reader).
const MaxDepth = 64

// Check returns the offset in v of the first byte that breaks a rule, and
// which ("" when none does). Other syntax is left to the parser: v need
// not be valid JSON for Check to pass.
func Check(v []byte) (int, string) {
	inString := false
	depth := 0
	for i := 0; i < len(v); {
		c := v[i]
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRune(v[i:])
			if r == utf8.RuneError && size == 1 {
				return i, fmt.Sprintf("invalid UTF-8 (byte 0x%02x)", c)
			}
			i += size
			continue
		}
		switch {
		case !inString:
			switch c {
			case '"':
				inString = true
			case '{', '[':
				if depth++; depth > MaxDepth {
					return i, fmt.Sprintf("JSON nested deeper than %d", MaxDepth)
				}
			case '}', ']':
				depth--
			}
		case c == '"':
			inString = false
		case c == '\\' && i+1 < len(v) && v[i+1] == 'u':
			u, ok := Hex4(v, i+2)
			switch {
			case !ok:
				// Not an escape: the parser says so.
			case u >= 0xd800 && u <= 0xdbff:
				if lo, ok := Hex4(v, i+8); ok && v[i+6] == '\\' && v[i+7] == 'u' && lo >= 0xdc00 && lo <= 0xdfff {
					i += 12
					continue
				}
				return i, fmt.Sprintf("escaped lone surrogate \\u%04x in a string (not followed by a low surrogate)", u)
			case u >= 0xdc00 && u <= 0xdfff:
				return i, fmt.Sprintf("escaped lone surrogate \\u%04x in a string (no high surrogate before it)", u)
			default:
				i += 6
				continue
			}
		case c == '\\':
			i += 2 // an escaped character, '"' and '\\' included
			continue
		}
		i++
	}
	return 0, ""
}

// Hex4 parses the four hex digits of v at i.
func Hex4(v []byte, i int) (rune, bool) {
	if i < 0 || i+4 > len(v) {
		return 0, false
	}
	var r rune
	for _, c := range v[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

// DecodeStrict decodes the JSON value at the start of raw into v, refusing
// fields v does not have, and returns dec to read on. On an error it
// returns the offset in raw of the byte at fault (best known: the end of
// raw for a value cut short).
func DecodeStrict(raw []byte, v any) (dec *json.Decoder, off int64, err error) {
	dec = json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err = dec.Decode(v); err == nil {
		return dec, 0, nil
	}
	off = dec.InputOffset()
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se): // Offset: past the byte at fault
		off = se.Offset - 1
	case errors.As(err, &te):
		off = te.Offset - 1
	case errors.Is(err, io.ErrUnexpectedEOF):
		off = int64(len(raw))
	}
	return dec, off, err
}

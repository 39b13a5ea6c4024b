// Package edgefile reads and writes graphtide's edge files: the inputs
// of 'graphtide load' and the outputs of 'graphtide gen'. Reading streams
// (memory is bounded whatever the file size) and reports malformed content
// as a *FormatError naming the input and the line or byte offset; it never
// guesses past damage.
//
// # Edge file formats
//
// Text (".el", [FormatText]): one edge per line, "src dst\n", ids as unsigned
// decimal integers, fields separated by spaces or tabs (SNAP style). When
// reading, blank lines and lines whose first non-blank character is '#' or
// '%' are skipped, a trailing '\r' is tolerated, and an optional third
// column holding a finite float64 weight is accepted (see [Reader.Weight]). Any
// other line is an error that names the input and the 1-based line number.
// [WriteText] writes exactly "src dst\n" per edge, with no header.
//
// Binary ([FormatBinary]): a fixed header followed by fixed-size records,
// all integers little-endian, no padding, no trailer, no checksum:
//
//	offset      size  field
//	0           8     magic, the ASCII bytes "GTEL0001"
//	                  (0x47 0x54 0x45 0x4C 0x30 0x30 0x30 0x31)
//	8           8     N, the number of edges, uint64 little-endian
//	16 + 16*i   8     src of edge i (0 <= i < N), uint64 little-endian
//	24 + 16*i   8     dst of edge i, uint64 little-endian
//
// A valid file is exactly 16 + 16*N bytes long. The last four magic bytes
// are the format version; a file that starts with "GTEL" but carries another
// version is rejected rather than parsed as text. Readers report a short
// header or record as truncation, and bytes after the N-th record as
// trailing data, naming the input and the byte offset.
//
// [ReadFile] and [NewReader] detect the format from the first 8 bytes: the
// binary magic selects the binary format, anything else is read as text.
// Errors in the input's content are returned as *[FormatError].
package edgefile

package dgsbench

/*
#cgo CXXFLAGS: -std=c++17 -O2 -Wall -Wextra
#cgo LDFLAGS: -lstdc++
#include "ccsr.h"
*/
import "C"

import (
	"errors"
	"unsafe"
)

// cppCSR is the plain C++ CSR (ccsr.h) of the same edges as a csr: the
// baseline as fast as the study's own C++ CSR.
type cppCSR struct{ h *C.gtb_csr }

func newCppCSR(g *csr) (*cppCSR, error) {
	h := C.gtb_csr_new((*C.int64_t)(unsafe.Pointer(&g.off[0])), C.size_t(len(g.off)-1), u32p(g.nbrs))
	if h == nil {
		return nil, errors.New("the C++ CSR: out of memory")
	}
	return &cppCSR{h: h}, nil
}

func (c *cppCSR) free() {
	C.gtb_csr_free(c.h)
	c.h = nil
}

// search is how many of the edges srcs[i] -> dsts[i] it holds.
func (c *cppCSR) search(srcs, dsts []uint64) int {
	if len(srcs) == 0 {
		return 0
	}
	return int(C.gtb_csr_search(c.h, u64p(srcs), u64p(dsts), C.size_t(len(srcs))))
}

// scan reads every neighbor of vids: how many, and their sum.
func (c *cppCSR) scan(vids []uint64) (n int, sum uint64) {
	if len(vids) == 0 {
		return 0, 0
	}
	var s C.uint64_t
	n = int(C.gtb_csr_scan(c.h, u64p(vids), C.size_t(len(vids)), &s))
	return n, uint64(s)
}

func u64p(s []uint64) *C.uint64_t { return (*C.uint64_t)(unsafe.Pointer(&s[0])) }

func u32p(s []uint32) *C.uint32_t {
	if len(s) == 0 {
		return nil
	}
	return (*C.uint32_t)(unsafe.Pointer(&s[0]))
}

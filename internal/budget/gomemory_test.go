package budget

import (
	"math"
	"runtime/debug"
	"testing"
)

// TestGoMemory: GoMemory reads the limit the runtime holds (none, then
// one set) beside the memory it holds, which is more than nothing.
func TestGoMemory(t *testing.T) {
	prev := debug.SetMemoryLimit(math.MaxInt64)
	defer debug.SetMemoryLimit(prev)
	if held, limit := GoMemory(); held <= 0 || limit != math.MaxInt64 {
		t.Fatalf("GoMemory() = %d, %d with no limit", held, limit)
	}
	debug.SetMemoryLimit(3 << 30)
	if held, limit := GoMemory(); held <= 0 || limit != 3<<30 {
		t.Fatalf("GoMemory() = %d, %d with a limit of 3 GiB", held, limit)
	}
}

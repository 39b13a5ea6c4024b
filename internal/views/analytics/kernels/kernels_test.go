package kernels

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestBarrier: no goroutine leaves a round of the barrier before all have
// arrived, whether the others spin or park (one worker sleeps now and
// then, long past the spins).
func TestBarrier(t *testing.T) {
	const n, rounds = 3, 300
	b := newBarrier(n)
	var arrived [rounds]atomic.Int32
	var bad atomic.Int32
	var wg sync.WaitGroup
	for id := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var sense int32
			for r := range rounds {
				if id == 0 && r%20 == 0 {
					time.Sleep(2 * time.Millisecond)
				}
				arrived[r].Add(1)
				b.wait(&sense)
				if arrived[r].Load() != n {
					bad.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if k := bad.Load(); k > 0 {
		t.Fatalf("%d times a goroutine left a round before all %d arrived", k, n)
	}
}

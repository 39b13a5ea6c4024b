package bench

import "testing"

func TestQuantile(t *testing.T) {
	xs := make([]float64, 200)
	for i := range xs {
		xs[i] = float64(200 - i) // 200 .. 1
	}
	for _, c := range []struct{ p, want float64 }{{0.99, 198}, {0.5, 100}, {1, 200}, {0.001, 1}} {
		if got := Quantile(xs, c.p); got != c.want {
			t.Errorf("Quantile(1..200, %v) = %v, want %v", c.p, got, c.want)
		}
	}
	if Quantile(nil, 0.99) != 0 || Quantile([]float64{3}, 0.99) != 3 {
		t.Error("Quantile of none or one")
	}
}

package bench

import (
	"fmt"
	"math"

	"github.com/spf13/pflag"

	"github.com/graphtide/graphtide/internal/gen"
)

// GraphFlags binds the RMAT graph's flags --scale, --edge-factor and
// --seed to scale, edgeFactor and seed, whose values are the defaults; the
// usage of --scale and --seed is each benchmark's own.
func GraphFlags(fs *pflag.FlagSet, scale, edgeFactor *int, seed *uint64, scaleUsage, seedUsage string) {
	fs.IntVar(scale, "scale", *scale, scaleUsage)
	fs.IntVar(edgeFactor, "edge-factor", *edgeFactor, "edges per vertex")
	fs.Uint64Var(seed, "seed", *seed, seedUsage)
}

// ValidateGraph checks the --scale and --edge-factor flags: scale between
// gen.MinScale and maxScale, edge factor between 1 and maxEdgeFactor, or
// with maxEdgeFactor 0 as large as an edge count of edge-factor x 2^scale
// allows.
func ValidateGraph(scale, edgeFactor, maxScale, maxEdgeFactor int) error {
	if scale < gen.MinScale || scale > maxScale {
		return fmt.Errorf("--scale must be between %d and %d, got %d", gen.MinScale, maxScale, scale)
	}
	if maxEdgeFactor == 0 {
		if edgeFactor < 1 || edgeFactor > math.MaxInt>>scale {
			return fmt.Errorf("--edge-factor must be at least 1 and edge-factor x 2^scale must fit in 63 bits, got %d", edgeFactor)
		}
	} else if edgeFactor < 1 || edgeFactor > maxEdgeFactor {
		return fmt.Errorf("--edge-factor must be between 1 and %d, got %d", maxEdgeFactor, edgeFactor)
	}
	return nil
}

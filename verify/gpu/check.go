package gpu

import (
	"fmt"
	"math"
	"runtime"
	"sync"

	"convtgen/gen/geom"
	"convtgen/gen/ref"
)

// PoisonBits is the pattern the output is filled with before the launch: a
// quiet NaN with a payload no arithmetic produces, so after the run an
// output still holding exactly these bits was never written, and any other
// NaN was computed.
const PoisonBits uint32 = 0x7FC0DEAD

// CompareConfig decides how much of the output is checked.
type CompareConfig struct {
	Tol float64
	// FullMax: compare every output (ref.Forward) when there are at most
	// this many and the reference's multiply-adds are at most FullMACs;
	// otherwise compare Samples uniformly drawn outputs (ref.At).
	FullMax  int
	FullMACs float64
	Samples  int
	Seed     uint64
}

// DefaultCompare is the gate the verifier uses.
var DefaultCompare = CompareConfig{Tol: Tolerance, FullMax: 2_000_000, FullMACs: 4e9, Samples: 200_000, Seed: 1}

// CountNaN counts the NaN outputs and, of those, the ones still holding
// the poison.
func CountNaN(y []float32) (nan, unwritten int) {
	for _, v := range y {
		if v != v {
			nan++
			if math.Float32bits(v) == PoisonBits {
				unwritten++
			}
		}
	}
	return nan, unwritten
}

// Compare checks a kernel's output y against the float64 reference: the
// convolution, and the store's ops of it where the kernel applies them
// (store nil: none).
func Compare(c geom.Conv, in Inputs, store *Store, y []float32, cfg CompareConfig) (Outcome, Compared) {
	o := Outcome{Outputs: c.OutputLen()}
	o.NaN, o.Unwritten = CountNaN(y)
	if len(y) != o.Outputs {
		o.Err = fmt.Errorf("output has %d elements, want %d", len(y), o.Outputs)
		return o, Compared{}
	}
	var storeErr error
	var once sync.Once
	stored := func(v float64, i int) float64 {
		r, err := store.Apply(c, in.Extras, v, i)
		if err != nil {
			once.Do(func() { storeErr = err })
		}
		return r
	}
	if o.Outputs <= cfg.FullMax && c.FLOPs()/2 <= cfg.FullMACs {
		want := ref.Forward(c, in.X, in.W, in.B)
		for i := range want {
			want[i] = stored(want[i], i)
		}
		o.RelL2, o.Err = ref.RelL2(y, want), storeErr
		o.Compared = o.Outputs
		return o, Compared{Count: o.Compared, Mode: "all"}
	}
	idx := SampleIndices(o.Outputs, cfg.Samples, cfg.Seed)
	got := make([]float32, len(idx))
	want := make([]float64, len(idx))
	parallel(len(idx), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			got[i] = y[idx[i]]
			want[i] = stored(ref.At(c, in.X, in.W, in.B, idx[i]), idx[i])
		}
	})
	o.RelL2, o.Err = ref.RelL2(got, want), storeErr
	o.Compared = len(idx)
	mode := "sampled"
	if len(idx) == o.Outputs {
		mode = "all"
	}
	return o, Compared{Count: o.Compared, Mode: mode}
}

// parallel splits [0, n) into contiguous ranges over the CPUs.
func parallel(n int, body func(lo, hi int)) {
	workers := max(1, min(runtime.GOMAXPROCS(0), n/1024))
	var wg sync.WaitGroup
	for w := range workers {
		lo, hi := n*w/workers, n*(w+1)/workers
		wg.Add(1)
		go func() {
			defer wg.Done()
			body(lo, hi)
		}()
	}
	wg.Wait()
}

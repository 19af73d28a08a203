package gpu

import (
	"math"
	"math/rand/v2"
	"runtime"
	"sync"

	"convtgen/gen/geom"
)

// Inputs are the host tensors of one run, in PyTorch's layouts.
type Inputs struct {
	X, W, B []float32 // B is nil without bias
	// Extras are the tensors a level-2 kernel's store reads for its ops
	// (MakeExtras), in parameter order; nil for a store without ops.
	Extras [][]float32
}

// InitBound is PyTorch's default initialisation bound for
// nn.ConvTranspose3d's weight and bias: kaiming_uniform_(a=sqrt(5)) gives
// U(-1/sqrt(fan_in), 1/sqrt(fan_in)), and for a transposed convolution
// fan_in is the weight's dimension 1 (out_channels/groups) times the taps.
func InitBound(c geom.Conv) float64 {
	return 1 / math.Sqrt(float64(c.OutPerGroup()*c.Taps()))
}

// chunk is how many elements one RNG stream fills: tensors are generated
// in chunks, in parallel, each chunk from its own seeded stream, so the
// values depend only on the seed and never on the number of CPUs.
const chunk = 1 << 20

// MakeInputs draws the inputs of a run: x from U[0,1) ("rand") or N(0,1)
// ("randn"), weight and bias from U(-b, b) with PyTorch's default bound.
// The same seed always gives the same tensors.
func MakeInputs(c geom.Conv, dist string, seed uint64) Inputs {
	b := InitBound(c)
	in := Inputs{
		X: make([]float32, c.InputLen()),
		W: make([]float32, c.WeightLen()),
	}
	xdraw := func(r *rand.Rand) float32 { return r.Float32() }
	if dist == "randn" {
		xdraw = func(r *rand.Rand) float32 { return float32(r.NormFloat64()) }
	}
	udraw := func(r *rand.Rand) float32 { return float32((2*r.Float64() - 1) * b) }
	fill(in.X, seed, 1, xdraw)
	fill(in.W, seed, 2, udraw)
	if c.Bias {
		in.B = make([]float32, c.OutChannels)
		fill(in.B, seed, 3, udraw)
	}
	return in
}

// fill writes draw's values into dst, chunk by chunk in parallel; chunk i
// of tensor t uses the stream (seed, t<<40 | i).
func fill(dst []float32, seed, tensor uint64, draw func(*rand.Rand) float32) {
	chunks := (len(dst) + chunk - 1) / chunk
	work := make(chan int, chunks)
	for i := 0; i < chunks; i++ {
		work <- i
	}
	close(work)
	var wg sync.WaitGroup
	for range min(chunks, runtime.GOMAXPROCS(0)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				r := rand.New(rand.NewPCG(seed, tensor<<40|uint64(i)))
				part := dst[i*chunk : min(len(dst), (i+1)*chunk)]
				for j := range part {
					part[j] = draw(r)
				}
			}
		}()
	}
	wg.Wait()
}

package gpu

import (
	"math/rand/v2"
	"sort"
)

// SampleIndices returns k distinct indices drawn uniformly from [0, total),
// sorted, the same for the same seed (Floyd's algorithm: every k-subset is
// equally likely, k draws, no rejection loop). With k >= total it returns
// every index.
func SampleIndices(total, k int, seed uint64) []int {
	if total <= 0 || k <= 0 {
		return nil
	}
	if k >= total {
		all := make([]int, total)
		for i := range all {
			all[i] = i
		}
		return all
	}
	r := rand.New(rand.NewPCG(seed, 0x5a4d504c45)) // "SAMPLE"-ish stream
	chosen := make(map[int]struct{}, k)
	out := make([]int, 0, k)
	for j := total - k; j < total; j++ {
		t := r.IntN(j + 1)
		if _, dup := chosen[t]; dup {
			t = j
		}
		chosen[t] = struct{}{}
		out = append(out, t)
	}
	sort.Ints(out)
	return out
}

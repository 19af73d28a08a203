package plan

import (
	"math/rand"
	"testing"
)

// TestBalancedRuns checks balancedRuns against every way of cutting small
// lists into runs: exactly the runs asked for, each non-empty and in
// order from the first entry, and the largest run's sum the least any
// cut reaches.
func TestBalancedRuns(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	for trial := 0; trial < 2000; trial++ {
		n := 1 + r.Intn(9)
		weights := make([]int, n)
		for i := range weights {
			weights[i] = 1 + r.Intn(20)
		}
		parts := 1 + r.Intn(n)
		starts := balancedRuns(weights, parts)
		if len(starts) != parts || starts[0] != 0 {
			t.Fatalf("%v in %d: starts %v", weights, parts, starts)
		}
		for k := 1; k < parts; k++ {
			if starts[k] <= starts[k-1] || starts[k] >= n {
				t.Fatalf("%v in %d: starts %v not increasing inside the list", weights, parts, starts)
			}
		}
		if got, want := largestRun(weights, starts), leastLargestRun(weights, parts); got != want {
			t.Fatalf("%v in %d: starts %v give a largest run of %d, the least is %d", weights, parts, starts, got, want)
		}
	}
}

// largestRun is the largest sum of the runs that start at starts.
func largestRun(weights, starts []int) int {
	most := 0
	for k, s := range starts {
		end := len(weights)
		if k+1 < len(starts) {
			end = starts[k+1]
		}
		sum := 0
		for _, v := range weights[s:end] {
			sum += v
		}
		most = max(most, sum)
	}
	return most
}

// leastLargestRun tries every cut of weights into parts runs (each a
// choice of parts-1 of the n-1 gaps).
func leastLargestRun(weights []int, parts int) int {
	n, best := len(weights), -1
	for mask := 0; mask < 1<<(n-1); mask++ {
		starts := []int{0}
		for gap := 0; gap < n-1; gap++ {
			if mask>>gap&1 == 1 {
				starts = append(starts, gap+1)
			}
		}
		if len(starts) != parts {
			continue
		}
		if v := largestRun(weights, starts); best < 0 || v < best {
			best = v
		}
	}
	return best
}

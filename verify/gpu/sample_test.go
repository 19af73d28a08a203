package gpu

import (
	"reflect"
	"testing"
)

func TestSampleIndices(t *testing.T) {
	const total, k = 5_000_000, 200_000
	idx := SampleIndices(total, k, 42)
	if len(idx) != k {
		t.Fatalf("%d indices, want %d", len(idx), k)
	}
	for i, v := range idx {
		if v < 0 || v >= total {
			t.Fatalf("index %d out of range", v)
		}
		if i > 0 && v <= idx[i-1] {
			t.Fatalf("indices not strictly increasing (distinct, sorted) at %d: %d, %d", i, idx[i-1], v)
		}
	}
	if again := SampleIndices(total, k, 42); !reflect.DeepEqual(idx, again) {
		t.Fatal("same seed, different sample")
	}
	if other := SampleIndices(total, k, 43); reflect.DeepEqual(idx, other) {
		t.Fatal("different seeds, same sample")
	}
	// Uniform: each of 50 equal buckets holds about k/50 = 4000 (sd ~62);
	// a chi-square over 49 degrees of freedom stays far below 120.
	const buckets = 50
	var count [buckets]int
	for _, v := range idx {
		count[v*buckets/total]++
	}
	var chi2 float64
	for _, c := range count {
		d := float64(c) - k/buckets
		chi2 += d * d / (k / buckets)
	}
	if chi2 > 120 {
		t.Errorf("bucket counts %v: chi-square %.1f, not uniform", count, chi2)
	}
	// The ends of the range are reachable.
	small := map[int]int{}
	for s := uint64(0); s < 2000; s++ {
		for _, v := range SampleIndices(10, 3, s) {
			small[v]++
		}
	}
	for v := 0; v < 10; v++ {
		if n := small[v]; n < 450 || n > 750 { // expected 600 each
			t.Errorf("SampleIndices(10, 3): index %d drawn %d times in 2000 samples, want about 600", v, n)
		}
	}
}

func TestSampleIndicesAll(t *testing.T) {
	if got := SampleIndices(5, 5, 1); !reflect.DeepEqual(got, []int{0, 1, 2, 3, 4}) {
		t.Errorf("k == total: %v", got)
	}
	if got := SampleIndices(3, 10, 1); !reflect.DeepEqual(got, []int{0, 1, 2}) {
		t.Errorf("k > total: %v", got)
	}
	if got := SampleIndices(0, 10, 1); got != nil {
		t.Errorf("empty: %v", got)
	}
}

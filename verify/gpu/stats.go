package gpu

import "sort"

// Summarize reduces per-run times (ms) to the reported timing.
func Summarize(ms []float64) Timing {
	if len(ms) == 0 {
		return Timing{}
	}
	s := append([]float64(nil), ms...)
	sort.Float64s(s)
	var sum float64
	for _, v := range s {
		sum += v
	}
	med := s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return Timing{MeanMS: sum / float64(len(s)), MedianMS: med, MinMS: s[0], Runs: len(s)}
}

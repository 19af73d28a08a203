package gen

import (
	"testing"

	"convtgen/gen/plan"
)

// TestWinogradSums: each output of a pair adds a product's sums with the
// coefficients of plan.Winograd's Out row, zeros left out by the
// condition: F(2,3)'s as its kernels wrote them by hand, F(2,5)'s with
// the points' 2 and -2.
func TestWinogradSums(t *testing.T) {
	for _, c := range []struct {
		r    int
		want [2]WinogradSum
	}{
		{3, [2]WinogradSum{{"p != 3", "m"}, {"p != 0", "p == 2 ? -m : m"}}},
		{5, [2]WinogradSum{{"p != 5", "m"}, {"p != 0", "p == 2 ? -m : p == 3 ? 2.0f * m : p == 4 ? -2.0f * m : m"}}},
	} {
		w, ok := plan.NewWinograd(c.r)
		if !ok {
			t.Fatalf("no F(2,%d)", c.r)
		}
		for o, row := range w.Out {
			if got := winogradSum(row); got != c.want[o] {
				t.Errorf("F(2,%d) output %d: got %+v, want %+v", c.r, o, got, c.want[o])
			}
		}
	}
	if got, want := winogradSum([]float64{1, 0, 0, -1}), (WinogradSum{"p != 1 && p != 2", "p == 3 ? -m : m"}); got != want {
		t.Errorf("two zeros: got %+v, want %+v", got, want)
	}
}

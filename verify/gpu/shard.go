package gpu

import (
	"fmt"
	"strconv"
	"strings"
)

// Shard is one of N deterministic slices of the item list: item k belongs to
// shard k mod N, so every shard gets a mix of the list (the full-size
// level-1 specs come first and would otherwise all land on one GPU).
type Shard struct{ I, N int }

// All is the trivial sharding: one shard holding everything.
var All = Shard{0, 1}

// ParseShard reads "i/n" with 0 <= i < n.
func ParseShard(s string) (Shard, error) {
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(strings.TrimSpace(a))
	n, err2 := strconv.Atoi(strings.TrimSpace(b))
	if !ok || err1 != nil || err2 != nil || n < 1 || i < 0 || i >= n {
		return Shard{}, fmt.Errorf("shard %q: want i/n with 0 <= i < n", s)
	}
	return Shard{i, n}, nil
}

func (s Shard) String() string { return fmt.Sprintf("%d/%d", s.I, s.N) }

// Owns reports whether item k belongs to this shard.
func (s Shard) Owns(k int) bool { return s.N <= 1 || k%s.N == s.I }

// Indices lists the items of a list of n that this shard owns, in order.
func (s Shard) Indices(n int) []int {
	var out []int
	for k := 0; k < n; k++ {
		if s.Owns(k) {
			out = append(out, k)
		}
	}
	return out
}

package gpu

import (
	"reflect"
	"testing"
)

func TestParseShard(t *testing.T) {
	for _, s := range []string{"0/1", "3/8", " 1 / 2 "} {
		if _, err := ParseShard(s); err != nil {
			t.Errorf("ParseShard(%q): %v", s, err)
		}
	}
	for _, s := range []string{"", "1", "1/1", "-1/2", "2/2", "0/0", "a/b", "1/2/3"} {
		if sh, err := ParseShard(s); err == nil {
			t.Errorf("ParseShard(%q) = %v, want an error", s, sh)
		}
	}
	if sh, _ := ParseShard("3/8"); sh != (Shard{3, 8}) || sh.String() != "3/8" {
		t.Errorf("ParseShard(3/8) = %v", sh)
	}
}

// Every item is in exactly one shard, shard i holds the items k with
// k mod n == i, and the assignment does not change between calls.
func TestShardsPartition(t *testing.T) {
	for n := 1; n <= 9; n++ {
		for items := 0; items <= 25; items++ {
			owner := make([]int, items)
			for i := range owner {
				owner[i] = -1
			}
			for i := 0; i < n; i++ {
				s := Shard{i, n}
				got := s.Indices(items)
				if again := s.Indices(items); !reflect.DeepEqual(got, again) {
					t.Fatalf("shard %v of %d items: %v then %v", s, items, got, again)
				}
				for _, k := range got {
					if owner[k] != -1 {
						t.Fatalf("%d items: item %d in shards %d and %d of %d", items, k, owner[k], i, n)
					}
					if k%n != i {
						t.Fatalf("item %d in shard %v", k, s)
					}
					owner[k] = i
				}
			}
			for k, o := range owner {
				if o == -1 {
					t.Fatalf("%d items, %d shards: item %d in no shard", items, n, k)
				}
			}
		}
	}
}

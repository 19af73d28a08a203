package gpu

import (
	"math"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func shardReport(shard Shard, n int, gpu string) *Report {
	r := &Report{GPU: gpu, Driver: 13000, Date: "2026-01-02T00:00:0" + shard.String()[:1] + "Z", Commit: "abc", Host: "h", Seed: 1, Shard: shard.String(), Timed: true}
	for _, k := range shard.Indices(n) {
		rel := Float(1e-7)
		r.Results = append(r.Results, Result{Index: k, Spec: "spec" + string(rune('a'+k)), Backend: "cuda", Disposition: Passed, RelL2: &rel})
	}
	return r
}

func TestMerge(t *testing.T) {
	const n = 7
	var reports []*Report
	for i := 2; i >= 0; i-- { // out of order on purpose
		reports = append(reports, shardReport(Shard{i, 3}, n, "NVIDIA H200"))
	}
	m, err := Merge(reports)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Results) != n {
		t.Fatalf("%d results, want %d", len(m.Results), n)
	}
	for k, r := range m.Results {
		if r.Index != k {
			t.Fatalf("result %d has index %d: not in item order", k, r.Index)
		}
	}
	if !reflect.DeepEqual(m.Shards, []string{"0/3", "1/3", "2/3"}) || m.Shard != "" {
		t.Errorf("shards %v, shard %q", m.Shards, m.Shard)
	}
	if m.GPU != "NVIDIA H200" || m.Commit != "abc" || m.Date != "2026-01-02T00:00:00Z" || !m.Timed || m.Driver != 13000 {
		t.Errorf("header: %+v", *m)
	}

	// A merged report merges again with nothing lost.
	again, err := Merge([]*Report{m})
	if err != nil || !reflect.DeepEqual(again.Results, m.Results) || !reflect.DeepEqual(again.Shards, m.Shards) {
		t.Errorf("re-merge: %v", err)
	}
}

func TestMergeConflicts(t *testing.T) {
	a := shardReport(Shard{0, 2}, 4, "g")
	if _, err := Merge([]*Report{a, a}); err == nil || !strings.Contains(err.Error(), "is in report 0 and report 1") {
		t.Errorf("duplicate items: %v", err)
	}
	b := shardReport(Shard{1, 2}, 4, "g")
	b.Results[0].Index = 0 // index 0 is a different spec in a
	if _, err := Merge([]*Report{a, b}); err == nil || !strings.Contains(err.Error(), "different item lists") {
		t.Errorf("index clash: %v", err)
	}
	c := shardReport(Shard{1, 2}, 4, "g")
	c.Seed = 2
	if _, err := Merge([]*Report{a, c}); err == nil {
		t.Error("different seeds merged")
	}
	if _, err := Merge(nil); err == nil {
		t.Error("nothing merged")
	}
	d := shardReport(Shard{1, 2}, 4, "other GPU")
	d.Timed = false
	m, err := Merge([]*Report{a, d})
	if err != nil || m.GPU != "g, other GPU" || m.Timed {
		t.Errorf("differing headers: %v %+v", err, m)
	}
}

func TestReportFileRoundTrip(t *testing.T) {
	r := shardReport(Shard{0, 1}, 3, "g")
	inf := Float(math.Inf(1))
	r.Results[1].RelL2 = &inf
	r.Results[1].Disposition = Incorrect
	r.Results[2].Arch = map[string]ArchInfo{"sm_90a": {Registers: 90, SmemBytes: 4096}}
	r.Results[2].SetTiming(Timing{MeanMS: 1, MedianMS: 0.9, Runs: 100})
	path := filepath.Join(t.TempDir(), "r.json")
	if err := WriteReport(path, r); err != nil {
		t.Fatal(err)
	}
	back, err := ReadReport(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, r) {
		t.Errorf("round trip:\n%+v\n%+v", back, r)
	}
}

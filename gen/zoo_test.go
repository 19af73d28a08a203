package gen

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"convtgen/gen/geom"
	"convtgen/gen/spec"
)

// zooDir holds the realistic shapes the plan's choices are judged on; the
// kinds below are the ones the chooser must get right, so losing one
// (a spec edited or deleted) must fail here rather than go unnoticed.
const zooDir = SpecDir + "/zoo/"

// zooKinds are the shapes the zoo must hold, each told from the decoded
// problem (never from a spec's name).
var zooKinds = []struct {
	name string
	is   func(c geom.Conv) bool
}{
	{"stride 2, kernel 2", func(c geom.Conv) bool { return c.Stride == [3]int{2, 2, 2} && c.Kernel == [3]int{2, 2, 2} }},
	{"stride 2, kernel 4", func(c geom.Conv) bool { return c.Stride == [3]int{2, 2, 2} && c.Kernel == [3]int{4, 4, 4} }},
	{"stride (1,2,2)", func(c geom.Conv) bool { return c.Stride == [3]int{1, 2, 2} }},
	{"depthwise (groups = channels)", func(c geom.Conv) bool {
		return c.Groups > 1 && c.Groups == c.InChannels && c.Groups == c.OutChannels
	}},
	{"grouped (1 < groups < channels)", func(c geom.Conv) bool {
		return c.Groups > 1 && c.Groups < c.InChannels && c.Groups < c.OutChannels
	}},
	{"one output channel", func(c geom.Conv) bool { return c.OutChannels == 1 }},
	{"batch >= 32", func(c geom.Conv) bool { return c.Batch >= 32 }},
	{"dilation > 1", func(c geom.Conv) bool { return max(c.Dilation[0], c.Dilation[1], c.Dilation[2]) > 1 }},
	{"output_padding > 0", func(c geom.Conv) bool {
		return max(c.OutputPadding[0], c.OutputPadding[1], c.OutputPadding[2]) > 0
	}},
	{"kernel 1", func(c geom.Conv) bool { return c.Kernel == [3]int{1, 1, 1} }},
	{"tiny (< 1e7 MACs)", func(c geom.Conv) bool { return c.FLOPs()/2 < 1e7 }},
	{"huge (> 1e11 MACs)", func(c geom.Conv) bool { return c.FLOPs()/2 > 1e11 }},
}

// TestZooCoverage: the zoo plans (LoadAll refuses nothing), holds at least
// 40 specs, every one named zoo_*, with none of its own kernel choice (the
// plan chooses: its kernel decodes to what no kernel section gives), each
// planned for both targets and backends with the chooser's picks, and
// every kind of zooKinds at least once.
func TestZooCoverage(t *testing.T) {
	specs, err := LoadAll("..")
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	n := 0
	for _, l := range specs {
		if !strings.HasPrefix(l.Path, zooDir) {
			continue
		}
		n++
		s := l.Spec()
		if !strings.HasPrefix(s.Name, "zoo_") {
			t.Errorf("%s: name %s does not start with zoo_", l.Path, s.Name)
		}
		raw, err := spec.Load(filepath.Join("..", l.Path))
		if err != nil {
			t.Fatal(err)
		}
		if none := (spec.Kernel{Backends: spec.DefaultBackends, BackendsOmitted: true}); !reflect.DeepEqual(raw.Kernel, none) {
			t.Errorf("%s: has a kernel section; a zoo spec leaves the choice to the plan", l.Path)
		}
		// Both backends, each target's files from the chooser's pick.
		for _, p := range l.Plans {
			_, d := Chooser.Choose(raw, p.Target)
			if len(d.CUDA) == 0 || len(d.Triton) == 0 {
				t.Errorf("%s: %s: the chooser ranked %d CUDA and %d Triton candidates", l.Path, p.Target.Name, len(d.CUDA), len(d.Triton))
				continue
			}
			if got := p.Tile.Choice().String(); got != d.CUDA[0].Resolved {
				t.Errorf("%s: %s: planned %s, the chooser's pick is %s", l.Path, p.Target.Name, got, d.CUDA[0].Resolved)
			}
			if got := resolvedTriton(p).String(); got != d.Triton[0].Resolved {
				t.Errorf("%s: %s: Triton %s, the chooser's pick is %s", l.Path, p.Target.Name, got, d.Triton[0].Resolved)
			}
		}
		for _, k := range zooKinds {
			if k.is(s.Problem.Conv) {
				count[k.name]++
			}
		}
	}
	if n < 40 {
		t.Errorf("%d zoo specs under %s, want at least 40", n, zooDir)
	}
	for _, k := range zooKinds {
		if count[k.name] == 0 {
			t.Errorf("no zoo spec is %s", k.name)
		}
		t.Logf("%-32s %d", k.name, count[k.name])
	}
}

// TestZooKindsTellShapesApart: each kind's test accepts a shape of its
// kind and refuses the plain stride-1 kernel-3 convolution, so a kind
// that accepted everything could not pass TestZooCoverage vacuously.
func TestZooKindsTellShapesApart(t *testing.T) {
	plain := geom.Conv{Batch: 8, InChannels: 64, OutChannels: 64, In: [3]int{16, 16, 16},
		Kernel: [3]int{3, 3, 3}, Stride: [3]int{1, 1, 1}, Dilation: [3]int{1, 1, 1}, Groups: 1}
	examples := map[string]func(*geom.Conv){
		"stride 2, kernel 2":              func(c *geom.Conv) { c.Stride, c.Kernel = [3]int{2, 2, 2}, [3]int{2, 2, 2} },
		"stride 2, kernel 4":              func(c *geom.Conv) { c.Stride, c.Kernel = [3]int{2, 2, 2}, [3]int{4, 4, 4} },
		"stride (1,2,2)":                  func(c *geom.Conv) { c.Stride = [3]int{1, 2, 2} },
		"depthwise (groups = channels)":   func(c *geom.Conv) { c.Groups = 64 },
		"grouped (1 < groups < channels)": func(c *geom.Conv) { c.Groups = 4 },
		"one output channel":              func(c *geom.Conv) { c.OutChannels = 1 },
		"batch >= 32":                     func(c *geom.Conv) { c.Batch = 32 },
		"dilation > 1":                    func(c *geom.Conv) { c.Dilation = [3]int{1, 1, 2} },
		"output_padding > 0":              func(c *geom.Conv) { c.Stride, c.OutputPadding = [3]int{2, 2, 2}, [3]int{0, 1, 0} },
		"kernel 1":                        func(c *geom.Conv) { c.Kernel = [3]int{1, 1, 1} },
		"tiny (< 1e7 MACs)":               func(c *geom.Conv) { c.Batch, c.InChannels, c.OutChannels = 1, 4, 4 },
		"huge (> 1e11 MACs)":              func(c *geom.Conv) { c.In = [3]int{64, 128, 128} },
	}
	for _, k := range zooKinds {
		edit, ok := examples[k.name]
		if !ok {
			t.Errorf("%s: no example", k.name)
			continue
		}
		c := plain
		edit(&c)
		if !k.is(c) {
			t.Errorf("%s: refuses its own example %+v", k.name, c)
		}
		if k.is(plain) {
			t.Errorf("%s: accepts the plain convolution %+v", k.name, plain)
		}
	}
}

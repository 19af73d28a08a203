package plan_test

import (
	"fmt"
	"math/rand"
	"reflect"
	"testing"

	"convtgen/gen/plan"
)

// TestWindowBruteForce walks the W-window direct kernel's index arithmetic
// (templates/cuda_direct.tmpl, "direct_window") over the plan of random
// configurations and compares what it accumulates with the brute force:
// every contributing (output, input, weight tap) exactly once, nothing
// else, every output written exactly once, every window read inside the
// window, and float4 loads and stores only where they are aligned.
func TestWindowBruteForce(t *testing.T) {
	r := rand.New(rand.NewSource(5))
	checked, pairs, vector := 0, 0, 0
	for checked < 300 {
		c := randomConfig(r, 9, 5, 3, 3)
		c.batch, c.cin, c.cout, c.groups, c.precision = 1+r.Intn(2), 2, 2, 1, ""
		if r.Intn(3) == 0 {
			c.in[2] = 4 * (1 + r.Intn(4)) // widths where float4 loads may apply
		}
		tw := c.s[2] * (1 + r.Intn(16/c.s[2]))
		c.tile = fmt.Sprintf("{bm: 32, bn: 4, tw: %d, direct: true}", tw)
		out, empty := c.out()
		if empty {
			continue
		}
		p, err := plan.New(c.parse(t), plan.SM90)
		if err != nil {
			t.Fatalf("%+v: %v", c, err)
		}
		if p.TapFold > 0 {
			continue // another convolution, the same memory: TestOnePositionTapFold (verify/emulate)
		}
		c.s = p.Conv.Stride // raised where the input has one position (TestPhasesBruteForce)
		if err := checkWindow(c, p, out); err != nil {
			t.Fatalf("%+v (tw %d, window %+v):\n%v", c, tw, p.Window, err)
		}
		pairs += len(contributingPairs(c, out))
		checked++
		if p.Window.Vector {
			vector++
		}
	}
	t.Logf("%d configurations, %d pairs, %d with float4 windows", checked, pairs, vector)
	if pairs < 50000 || vector < 20 {
		t.Errorf("weak sample: %d pairs, %d with float4 windows", pairs, vector)
	}
}

// checkWindow runs the kernel's loops, as the template writes them, on
// plan p and returns the first discrepancy.
func checkWindow(c config, p *plan.Plan, out [3]int) error {
	tw, w := p.Tile.TW(), p.Window
	sw, pw, dw, kw := c.s[2], c.p[2], c.d[2], c.k[2]
	if w.Vector && (w.Lo%4 != 0 || w.Len%4 != 0 || c.in[2]%4 != 0 || tw/sw%4 != 0) {
		return fmt.Errorf("float4 window %+v with input width %d, tw/stride %d", w, c.in[2], tw/sw)
	}
	if p.Epilogue.VectorStore && (out[2]%4 != 0 || tw%4 != 0) {
		return fmt.Errorf("float4 stores with output width %d, tw %d", out[2], tw)
	}
	reached := 0 // outputs whose sums some (output, kw) pair below updates
	for j := range tw {
		for k := range kw {
			if (j+pw-k*dw)%sw == 0 {
				reached++
				break
			}
		}
	}
	if reached != w.Reached {
		return fmt.Errorf("%d of %d outputs have a kw, the plan counts %d", reached, tw, w.Reached)
	}
	got := map[pair]int{}
	written := map[[3]int]int{}
	for _, ph := range p.Phases {
		if ph.R[2] != 0 || ph.Q[2] != (out[2]+tw-1)/tw {
			return fmt.Errorf("phase %+v: W must be unsplit, %d chunks", ph, (out[2]+tw-1)/tw)
		}
		for q0 := range ph.Q[0] {
			for q1 := range ph.Q[1] {
				for chunk := range ph.Q[2] {
					o := [3]int{ph.R[0] + c.s[0]*q0, ph.R[1] + c.s[1]*q1, 0}
					for j := range tw {
						if o[2] = chunk*tw + j; o[2] < out[2] {
							written[o] += c.batch
						}
					}
					for _, tp := range p.Taps[ph.TapStart : ph.TapStart+ph.TapCount] {
						if tp.K[2] != 0 || tp.Off[2] != 0 || tp.Flat != (tp.K[0]*c.k[1]+tp.K[1])*kw {
							return fmt.Errorf("tap %+v: want kw 0 with no W offset", tp)
						}
						in := [3]int{q0 + tp.Off[0], q1 + tp.Off[1], 0}
						rowInside := in[0] >= 0 && in[0] < c.in[0] && in[1] >= 0 && in[1] < c.in[1]
						win0 := chunk*(tw/sw) + w.Lo
						for k := range kw {
							for j := range tw {
								v := j + pw - k*dw
								if v%sw != 0 {
									continue
								}
								e := v/sw - w.Lo
								if e < 0 || e >= w.Len {
									return fmt.Errorf("output %d, kw %d reads window column %d of %d", j, k, e, w.Len)
								}
								o[2], in[2] = chunk*tw+j, win0+e
								if o[2] < out[2] && rowInside && in[2] >= 0 && in[2] < c.in[2] {
									got[pair{o, in, tp.Flat + k}]++
								}
							}
						}
					}
				}
			}
		}
	}
	for o0 := range out[0] {
		for o1 := range out[1] {
			for o2 := range out[2] {
				if o := [3]int{o0, o1, o2}; written[o] != c.batch {
					return fmt.Errorf("output %v written %d times for batch %d", o, written[o], c.batch)
				}
			}
		}
	}
	if want := contributingPairs(c, out); !reflect.DeepEqual(got, want) {
		for pr, n := range want {
			if got[pr] != n {
				return fmt.Errorf("pair %+v: accumulated %d times, want %d", pr, got[pr], n)
			}
		}
		for pr, n := range got {
			if want[pr] == 0 {
				return fmt.Errorf("pair %+v accumulated %d times but does not contribute", pr, n)
			}
		}
	}
	return nil
}

// TestWindowCheckerCatches makes sure checkWindow is not vacuous: each
// corruption of a correct window plan must be reported.
func TestWindowCheckerCatches(t *testing.T) {
	c := config{batch: 2, cin: 2, cout: 2, groups: 1, k: [3]int{3, 2, 5}, in: [3]int{3, 4, 8},
		s: [3]int{2, 1, 2}, p: [3]int{1, 0, 2}, op: [3]int{1, 0, 1}, d: [3]int{1, 2, 1},
		tile: "{bm: 32, bn: 4, tw: 8, direct: true}"}
	out, _ := c.out()
	good, err := plan.New(c.parse(t), plan.SM90)
	if err != nil {
		t.Fatal(err)
	}
	if err := checkWindow(c, good, out); err != nil {
		t.Fatalf("correct plan: %v", err)
	}
	if !good.Window.Vector || !good.Epilogue.VectorStore {
		t.Fatalf("window %+v: want float4 loads and stores (input width 8, tw/stride 4, output width %d)", good.Window, out[2])
	}
	for name, corrupt := range map[string]func(p *plan.Plan){
		"window shifted":   func(p *plan.Plan) { p.Window.Lo++ },
		"window too short": func(p *plan.Plan) { p.Window.Len-- },
		"tw halved": func(p *plan.Plan) {
			d := *p.Tile.Direct // a copy: good's tile is shared
			d.TW /= 2
			p.Tile.Direct = &d
		},
		"one more reached": func(p *plan.Plan) { p.Window.Reached++ },
		"vector misused":   func(p *plan.Plan) { p.Window.Lo, p.Window.Len = p.Window.Lo-1, p.Window.Len+1 },
		"tap off by one in H": func(p *plan.Plan) {
			p.Taps = append([]plan.Tap(nil), p.Taps...)
			p.Taps[0].Off[1]++
		},
		"chunk missing": func(p *plan.Plan) {
			p.Phases = append([]plan.Phase(nil), p.Phases...)
			p.Phases[0].Q[2]--
		},
	} {
		bad := *good
		corrupt(&bad)
		if err := checkWindow(c, &bad, out); err == nil {
			t.Errorf("%s: not reported", name)
		}
	}
}

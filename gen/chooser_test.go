package gen

import (
	"path/filepath"
	"testing"

	"convtgen/gen/choose"
	"convtgen/gen/plan"
	"convtgen/gen/spec"
)

// tritonPairs are level-2 problems whose two Triton files ran different
// choices on one H100 (docs/perf/data/level2-h100-2026-12-05b.json, the
// evaluator's timing, means in ms; Triton compiles both files for the GPU
// it runs on, so they are two choices on one machine), the faster first.
// In each the slower one copies the input channels last before the GEMM,
// a kernel of its own whose traffic the GEMM cannot hide. One problem
// went the other way and is left out: #13 (channels last 9.19 ms against
// 10.52), whose 64 output channels a program reads along contiguous rows.
var tritonPairs = []struct {
	problem        string
	fast, slow     spec.Triton
	fastMS, slowMS float64
}{
	{"50_scaling_avgpool_biasadd_scaling", tri(128, 16, 16, 4, false), tri(128, 16, 16, 8, true), 2.165, 3.715},
	{"58_logsumexp_hardswish_subtract_clamp", tri(128, 16, 16, 4, false), tri(128, 16, 16, 8, true), 2.218, 3.863},
	{"100_clamp_min_divide", tri(128, 64, 32, 4, false), tri(128, 64, 32, 8, true), 9.369, 10.393},
	{"38_avgpool_clamp_softmax_multiply", tri(128, 64, 32, 4, false), tri(128, 64, 32, 8, true), 2.911, 3.194},
	{"3_sum_layernorm_avgpool_gelu", tri(128, 64, 32, 4, false), tri(128, 64, 32, 8, true), 2.751, 3.046},
	{"15_batchnorm_subtract", tri(128, 32, 16, 4, false), tri(128, 32, 16, 8, true), 0.885, 0.949},
	{"20_sum_residualadd_multiply_residualadd", tri(128, 64, 32, 4, false), tri(128, 64, 32, 8, true), 0.889, 0.965},
	{"49_softmax_sigmoid", tri(128, 64, 32, 4, false), tri(128, 64, 32, 8, true), 1.355, 1.490},
}

func tri(bm, bn, bk, warps int, channelsLast bool) spec.Triton {
	return spec.Triton{Precision: "3xtf32", BlockM: bm, BlockN: bn, BlockK: bk, Warps: warps, Stages: 3, ChannelsLast: channelsLast}
}

// TestTritonModelAgainstLevel2Pairs: on each pair the sm90 model estimates
// the faster choice faster. While the model let the re-layout's traffic
// hide under the GEMM's products, it tied each pair on compute and the
// chooser took the channels-last copy for one target or the other.
func TestTritonModelAgainstLevel2Pairs(t *testing.T) {
	for _, c := range tritonPairs {
		s, err := spec.Load(filepath.Join("..", "specs", "level2", c.problem+".yaml"))
		if err != nil {
			t.Fatal(err)
		}
		est := func(choice spec.Triton) choose.Estimate {
			sc := *s
			sc.Kernel = spec.Kernel{Backends: []string{"triton"}, Triton: choice}
			p, err := plan.New(&sc, plan.SM90)
			if err != nil {
				t.Fatalf("%s: %v no longer plans: %v", c.problem, choice, err)
			}
			_, shape := tritonLayout(p)
			return choose.EstimateTriton(plan.SM90.Name, p, shape)
		}
		fast, slow := est(c.fast), est(c.slow)
		t.Logf("%-42s measured %.3f < %.3f ms, estimated %.3f / %.3f", c.problem, c.fastMS, c.slowMS, fast.Seconds*1e3, slow.Seconds*1e3)
		if fast.Seconds >= slow.Seconds {
			t.Errorf("%s: %v measured %.3f ms against %v's %.3f, but the model estimates %v >= %v",
				c.problem, c.fast, c.fastMS, c.slow, c.slowMS, fast, slow)
		}
	}
}

package gen

import (
	"testing"

	"convtgen/gen/plan"
)

// TestRandomCoversTheSpace checks that the random sweep's draws reach the
// corners of the valid space the issue of wrong kernels came from, in the
// shares the sweep promises: residues no tap reaches, depthwise, kernel 1,
// strides of 4 and 5, channel counts off multiples of 4, and every kernel
// family and Triton option.
func TestRandomCoversTheSpace(t *testing.T) {
	const n = 1000
	specs, err := Random(n, 7)
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, l := range specs {
		p := l.Plans[0]
		c, k := p.Conv, p.Spec.Kernel
		has := func(label string, ok bool) {
			if ok {
				count[label]++
			}
		}
		has("tap-less residue", plan.TaplessAxis(c) >= 0)
		has("depthwise", c.Groups > 1 && c.InChannels == c.Groups && c.OutChannels == c.Groups)
		has("kernel 1", c.Kernel == [3]int{1, 1, 1})
		has("stride 4 or 5", max(c.Stride[0], c.Stride[1], c.Stride[2]) >= 4)
		has("channels a group off multiples of 4", p.CinG%4 != 0)
		has("grouped", c.Groups > 1)
		has("bias", c.Bias)
		has("output_padding", c.OutputPadding != [3]int{})
		has("cuda fp32 tile", p.Tile.FFMA != nil)
		has("cuda direct", p.Tile.Direct != nil && p.Tile.TW() == 0)
		has("cuda direct window", p.Tile.TW() > 0)
		has("cuda mma.sync", p.Tile.MMA != nil)
		has("cuda wgmma", p.Tile.WGMMA != nil)
		has("cuda kw_in_n", p.Tile.KWInN())
		has("cuda winograd", p.Tile.WGMMA != nil && p.Tile.WGMMA.Winograd)
		has("cuda park_sums", p.Tile.WGMMA != nil && p.Tile.WGMMA.ParkSums)
		has("cuda bulk_weights", p.Tile.WGMMA != nil && p.Tile.WGMMA.BulkWeights)
		tt := k.Triton
		has("triton 3xtf32", k.PrecisionFor("triton") == "3xtf32")
		has("triton channels_last", tt.ChannelsLast)
		has("triton fuse_w", tt.FuseW)
		has("triton fold_w", tt.FoldW > 1)
		has("triton pad_input", tt.PadInput)
		has("triton flat_k", tt.FlatK)
		has("triton split_weight", tt.SplitWeight)
		has("triton channels_last on a tap-less problem", tt.ChannelsLast && plan.TaplessAxis(c) >= 0)
		has("triton channels_last pipelined on a tap-less problem", tt.ChannelsLast && tt.Stages != 1 && plan.TaplessAxis(c) >= 0)
	}
	least := map[string]float64{"tap-less residue": 0.10, "depthwise": 0.05, "kernel 1": 0.03, "stride 4 or 5": 0.10,
		"channels a group off multiples of 4": 0.30,
		// The class the plan refused while Triton 3.6 miscompiled it (docs/perf/PERF.md v35, v36).
		"triton channels_last pipelined on a tap-less problem": 0.05}
	for label, got := range count {
		t.Logf("%-45s %4d of %d", label, got, n)
	}
	for _, label := range []string{"tap-less residue", "depthwise", "kernel 1", "stride 4 or 5", "channels a group off multiples of 4",
		"grouped", "bias", "output_padding", "cuda fp32 tile", "cuda direct", "cuda direct window", "cuda mma.sync", "cuda wgmma",
		"cuda kw_in_n", "cuda winograd", "cuda park_sums", "cuda bulk_weights", "triton 3xtf32", "triton channels_last",
		"triton fuse_w", "triton fold_w", "triton pad_input", "triton flat_k", "triton split_weight",
		"triton channels_last on a tap-less problem", "triton channels_last pipelined on a tap-less problem"} {
		share := least[label]
		if share == 0 {
			share = 0.01
		}
		if got := count[label]; float64(got) < share*n {
			t.Errorf("%s: %d of %d draws, want at least %.0f%%", label, got, n, 100*share)
		}
	}
}

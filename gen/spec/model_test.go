package spec

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestModelErrors: the layers, inputs and ops are validated like the
// rest, every problem at once with its position (testdata/level2.yaml is
// KernelBench level 2's #89).
func TestModelErrors(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "level2.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Parse("level2.yaml", data); err != nil {
		t.Fatalf("the base spec is refused: %v", err)
	}
	cases := []struct {
		name     string
		old, new []string
		want     []string
	}{
		{"unknown op and module, bad view, all at once",
			[]string{"{softmax: {dim: 1}}", "module: MaxPool3d", "view: [1, -1, 1, 1, 1]"},
			[]string{"{softermax: {dim: 1}}", "module: MaxPool4d", "view: [1, 1, 1, 1, 2]"},
			[]string{
				`level2.yaml:37:32: reference.layers[0].module: must be one of AdaptiveAvgPool3d, AvgPool3d, BatchNorm3d, GELU, GroupNorm, LayerNorm, LeakyReLU, MaxPool3d, ReLU, Sigmoid, Softmax (got "MaxPool4d")`,
				`level2.yaml:41:8: reference.forward[1]: unknown op (ops: add, sub, mul, div, relu, gelu, sigmoid, tanh, swish, hardswish, mul_hardswish, clamp, apply, softmax, logsumexp, mean, sum, max, sub_mean, leaky_relu, sigmoid_gate) (got softermax)`,
			}},
		{"operand that does not broadcast per channel",
			[]string{"view: [1, -1, 1, 1, 1]"}, []string{"view: [1, 1, 1, 1, -1]"},
			[]string{`level2.yaml:42:13: reference.forward[2].sub: subtract of shape (1, 1, 1, 1, 16) broadcasts over (128, 16, 16, 32, 32) as neither a scalar nor one value per channel (got subtract)`}},
		{"unknown operand and reduction axis",
			[]string{"{sub: {operand: subtract", "{max: {dim: 1}}"}, []string{"{sub: {operand: subtrahend", "{max: {dim: 5}}"},
			[]string{`level2.yaml:42:13: reference.forward[2].sub: is not a layer, an input or conv (got subtrahend)`}},
		{"reduction axis out of range",
			[]string{"{max: {dim: 1}}"}, []string{"{max: {dim: 5}}"},
			[]string{`level2.yaml:44:13: reference.forward[4].max: dims must be distinct axes 1 to 4 of the 5-d tensor (batch is axis 0) (got [5])`}},
		{"parameter without a shape, layer name taken",
			[]string{`{attr: subtract, parameter: randn, shape: "out_channels"}`, "attr: max_pool,"},
			[]string{`{attr: subtract, parameter: randn}`, "attr: conv_transpose,"},
			[]string{
				`level2.yaml:37:14: reference.layers[0].attr: is already set (the convolution) (got conv_transpose)`,
				`level2.yaml:38:7: reference.layers[1]: a randn parameter needs a shape`,
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := string(data)
			for i, o := range c.old {
				if !strings.Contains(src, o) {
					t.Fatalf("base has no %q", o)
				}
				src = strings.Replace(src, o, c.new[i], 1)
			}
			_, err := Parse("level2.yaml", []byte(src))
			if err == nil {
				t.Fatal("accepted")
			}
			got := strings.Split(err.Error(), "\n")
			if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(c.want, "\n"))
			}
		})
	}
}

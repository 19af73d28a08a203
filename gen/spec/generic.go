package spec

import (
	"fmt"
	"strings"

	"convtgen/gen/geom"
)

// Generic writes the spec of a configuration whose reference model takes
// every nn.ConvTranspose3d argument as an __init__ parameter (per-dimension
// values as tuples): how random configurations, tuning variants of them and
// tests describe a bare convolution. The kernel section lists k's backends,
// its CUDA family when one is set and its Triton choices when any is.
func Generic(name, title string, c geom.Conv, inputDist string, k Kernel) string {
	list := func(v [3]int) string { return fmt.Sprintf("[%d, %d, %d]", v[0], v[1], v[2]) }
	tile := ""
	if k.CUDA.Family != nil {
		tile = "\n  cuda: " + k.CUDA.String()
	}
	if k.Triton != (Triton{}) {
		tile += "\n  triton: " + k.Triton.String()
	}
	// Empty strings are left out: a spec's empty value is null, refused.
	if title != "" {
		title = "\ntitle: " + title
	}
	return fmt.Sprintf(`version: 2
name: %s%s
problem:
  batch: %d
  in_channels: %d
  out_channels: %d
  kernel: %s
  input: %s
  stride: %s
  padding: %s
  output_padding: %s
  dilation: %s
  groups: %d
  bias: %t
  input_dist: %s
reference:
  params:
    - {name: in_channels, type: int}
    - {name: out_channels, type: int}
    - {name: kernel_size, type: tuple}
    - {name: stride, type: tuple, default: [1, 1, 1]}
    - {name: padding, type: tuple, default: [0, 0, 0]}
    - {name: output_padding, type: tuple, default: [0, 0, 0]}
    - {name: dilation, type: tuple, default: [1, 1, 1]}
    - {name: groups, type: int, default: 1}
    - {name: bias, type: bool, default: false}
  conv:
    - in_channels
    - out_channels
    - kernel_size
    - stride=stride
    - padding=padding
    - output_padding=output_padding
    - dilation=dilation
    - groups=groups
    - bias=bias
  init_inputs: [%d, %d, %s, %s, %s, %s, %s, %d, %t]
kernel:
  backends: [%s]%s
`, name, title, c.Batch, c.InChannels, c.OutChannels, list(c.Kernel), list(c.In), list(c.Stride),
		list(c.Padding), list(c.OutputPadding), list(c.Dilation), c.Groups, c.Bias, inputDist,
		c.InChannels, c.OutChannels, list(c.Kernel), list(c.Stride), list(c.Padding), list(c.OutputPadding),
		list(c.Dilation), c.Groups, c.Bias, strings.Join(k.Backends, ", "), tile)
}

package ref

import (
	"fmt"
	"math"
	"slices"

	"convtgen/gen/spec"
)

// The reference model's ops around the convolution in float64, each
// from its PyTorch definition (torch.nn.functional and the nn modules,
// training mode), independent of the plan's passes: the oracle the
// emulated forward is checked against.

// Tensor is a float64 tensor, row-major.
type Tensor struct {
	Shape []int
	Data  []float64
}

func numel(s []int) int {
	n := 1
	for _, v := range s {
		n *= v
	}
	return n
}

// Params gives a tensor argument's values by its Python expression, as
// the submission's forward passes it: "self.bias", "self.norm.weight",
// "self.bn.running_mean", or an input's name.
type Params func(expr string) []float64

// ChainResult is the forward's output and the BatchNorm running
// statistics after it (by expression: "self.bn.running_mean", ...).
type ChainResult struct {
	Out     Tensor
	Updates map[string][]float64
}

// Prologue runs the reference's ops before the convolution on x.
func Prologue(r *spec.Reference, x Tensor) (Tensor, error) {
	for _, op := range r.Prologue {
		l := r.Layer(op.Attr)
		if op.Name != "apply" || l == nil {
			return x, fmt.Errorf("prologue op %s is not a layer", op.Name)
		}
		var err error
		if x, err = pool(l, x); err != nil {
			return x, err
		}
	}
	return x, nil
}

// Chain runs the reference's forward ops on conv, the convolution's
// output (N, C, D, H, W).
func Chain(r *spec.Reference, conv Tensor, params Params) (ChainResult, error) {
	e := &evaluator{r: r, conv: conv, params: params, res: ChainResult{Updates: map[string][]float64{}}}
	x := Tensor{Shape: slices.Clone(conv.Shape), Data: slices.Clone(conv.Data)}
	for _, op := range r.Forward {
		var err error
		if x, err = e.op(op, x); err != nil {
			return e.res, fmt.Errorf("%s: %v", op.Name, err)
		}
	}
	e.res.Out = x
	return e.res, nil
}

type evaluator struct {
	r      *spec.Reference
	conv   Tensor
	params Params
	res    ChainResult
}

// operand is the other side of an arithmetic op as a function of the
// element's flat index and channel.
func (e *evaluator) operand(o spec.Operand, x Tensor) (func(i, c int) float64, error) {
	if o.Name == "" {
		return func(int, int) float64 { return o.Num }, nil
	}
	if o.Name == "conv" {
		return func(i, _ int) float64 { return e.conv.Data[i] }, nil
	}
	if l := e.r.Layer(o.Name); l != nil {
		if l.Kind == "value" {
			return func(int, int) float64 { return l.Num }, nil
		}
		v := e.params("self." + o.Name)
		switch {
		case len(v) == 1:
			return func(int, int) float64 { return v[0] }, nil
		case len(x.Shape) > 1 && len(v) == x.Shape[1]:
			return func(_, c int) float64 { return v[c] }, nil
		}
		return nil, fmt.Errorf("%s: %d values on %v", o.Name, len(v), x.Shape)
	}
	v := e.params(o.Name)
	if len(v) != len(x.Data) {
		return nil, fmt.Errorf("input %s: %d values on %v", o.Name, len(v), x.Shape)
	}
	return func(i, _ int) float64 { return v[i] }, nil
}

func (e *evaluator) bound(o *spec.Operand) float64 {
	if o.Name != "" {
		return e.r.Layer(o.Name).Num
	}
	return o.Num
}

// channelOf is the channel of flat index i of x (axis 1).
func channelOf(x Tensor, i int) int {
	inner := numel(x.Shape[2:])
	return i / inner % x.Shape[1]
}

func pointwise(x Tensor, f func(v float64, i, c int) float64) Tensor {
	out := Tensor{Shape: x.Shape, Data: make([]float64, len(x.Data))}
	for i, v := range x.Data {
		c := 0
		if len(x.Shape) > 1 {
			c = channelOf(x, i)
		}
		out.Data[i] = f(v, i, c)
	}
	return out
}

func sigmoid(v float64) float64 { return 1 / (1 + math.Exp(-v)) }

func hardswish(v float64) float64 { return v * math.Min(math.Max(v+3, 0), 6) / 6 }

func gelu(v float64) float64 { return 0.5 * v * (1 + math.Erf(v/math.Sqrt2)) }

// Arith is v op b for the four arithmetic ops (add, sub, mul, div); ok
// is false for any other kind.
func Arith(kind string, v, b float64) (r float64, ok bool) {
	switch kind {
	case "add":
		return v + b, true
	case "sub":
		return v - b, true
	case "mul":
		return v * b, true
	case "div":
		return v / b, true
	}
	return 0, false
}

// Activation is the one-value op kind at v, from its PyTorch definition:
// slope is leaky_relu's negative slope, shift and divisor sigmoid_gate's
// (v * sigmoid(v + shift) / divisor); ok is false for any other kind.
func Activation(kind string, v, slope, shift, divisor float64) (r float64, ok bool) {
	switch kind {
	case "relu":
		return math.Max(v, 0), true
	case "gelu":
		return gelu(v), true
	case "sigmoid":
		return sigmoid(v), true
	case "tanh":
		return math.Tanh(v), true
	case "swish":
		return v * sigmoid(v), true
	case "hardswish":
		return hardswish(v), true
	case "mul_hardswish":
		return v * hardswish(v), true
	case "leaky_relu":
		if v >= 0 {
			return v, true
		}
		return v * slope, true
	case "sigmoid_gate":
		return v * sigmoid(v+shift) / divisor, true
	}
	return 0, false
}

func (e *evaluator) op(o spec.Op, x Tensor) (Tensor, error) {
	if _, ok := Arith(o.Name, 0, 1); ok {
		b, err := e.operand(o.Operand, x)
		if err != nil {
			return x, err
		}
		return pointwise(x, func(v float64, i, c int) float64 { r, _ := Arith(o.Name, v, b(i, c)); return r }), nil
	}
	if _, ok := Activation(o.Name, 0, o.Slope, o.Shift, o.Divisor); ok {
		return activation(x, o.Name, o.Slope, o.Shift, o.Divisor), nil
	}
	switch o.Name {
	case "clamp":
		lo, hi := math.Inf(-1), math.Inf(1)
		if o.Min != nil {
			lo = e.bound(o.Min)
		}
		if o.Max != nil {
			hi = e.bound(o.Max)
		}
		return pointwise(x, func(v float64, _, _ int) float64 { return math.Min(math.Max(v, lo), hi) }), nil
	case "softmax":
		return softmax(x, o.Dims), nil
	case "logsumexp", "sum", "max", "mean":
		return reduce(x, o.Name, o.Dims, o.Keepdim), nil
	case "sub_mean":
		m := reduce(x, "mean", o.Dims, true)
		g := groups(x.Shape, o.Dims)
		return pointwise(x, func(v float64, i, _ int) float64 { return v - m.Data[g(i)] }), nil
	case "apply":
		return e.apply(e.r.Layer(o.Attr), x)
	}
	return x, fmt.Errorf("op %s has no reference", o.Name)
}

// activation applies Activation(kind, ...) to every element of x.
func activation(x Tensor, kind string, slope, shift, divisor float64) Tensor {
	return pointwise(x, func(v float64, _, _ int) float64 {
		r, _ := Activation(kind, v, slope, shift, divisor)
		return r
	})
}

// groups maps a flat index of a tensor of shape to the flat index, in
// the keepdim shape, of its slice over dims.
func groups(shape []int, dims []int) func(i int) int {
	return func(i int) int {
		g, gstride := 0, 1
		for k := len(shape) - 1; k >= 0; k-- {
			idx := i % shape[k]
			i /= shape[k]
			if slices.Contains(dims, k) {
				continue
			}
			g += idx * gstride
			gstride *= shape[k]
		}
		return g
	}
}

func keptShape(shape, dims []int) []int {
	out := slices.Clone(shape)
	for _, d := range dims {
		out[d] = 1
	}
	return out
}

// reduce is torch's logsumexp, sum, amax (torch.max over a dim's values)
// or mean over dims.
func reduce(x Tensor, kind string, dims []int, keepdim bool) Tensor {
	kept := keptShape(x.Shape, dims)
	g := groups(x.Shape, dims)
	n := numel(kept)
	out := make([]float64, n)
	count := len(x.Data) / n
	mx := make([]float64, n)
	for k := range mx {
		mx[k] = math.Inf(-1)
	}
	for i, v := range x.Data {
		mx[g(i)] = math.Max(mx[g(i)], v)
	}
	for i, v := range x.Data {
		switch kind {
		case "logsumexp":
			out[g(i)] += math.Exp(v - mx[g(i)])
		case "sum", "mean":
			out[g(i)] += v
		}
	}
	for k := range out {
		switch kind {
		case "logsumexp":
			out[k] = mx[k] + math.Log(out[k])
		case "mean":
			out[k] /= float64(count)
		case "max":
			out[k] = mx[k]
		}
	}
	shape := kept
	if !keepdim {
		shape = nil
		for k, v := range x.Shape {
			if !slices.Contains(dims, k) {
				shape = append(shape, v)
			}
		}
	}
	return Tensor{Shape: shape, Data: out}
}

// softmax is torch.softmax over dims (a dim, or the flattened dims).
func softmax(x Tensor, dims []int) Tensor {
	mx := reduce(x, "max", dims, true)
	g := groups(x.Shape, dims)
	sum := make([]float64, len(mx.Data))
	for i, v := range x.Data {
		sum[g(i)] += math.Exp(v - mx.Data[g(i)])
	}
	return pointwise(x, func(v float64, i, _ int) float64 { return math.Exp(v-mx.Data[g(i)]) / sum[g(i)] })
}

// moments are the mean and biased variance of each slice of x over dims,
// with the count of elements a slice.
func moments(x Tensor, g func(int) int, n int) (mean, variance []float64, count int) {
	mean, variance = make([]float64, n), make([]float64, n)
	count = len(x.Data) / n
	for i, v := range x.Data {
		mean[g(i)] += v
	}
	for k := range mean {
		mean[k] /= float64(count)
	}
	for i, v := range x.Data {
		d := v - mean[g(i)]
		variance[g(i)] += d * d
	}
	for k := range variance {
		variance[k] /= float64(count)
	}
	return mean, variance, count
}

func num(v spec.Value) float64 {
	f, _ := v.Number()
	return f
}

func (e *evaluator) apply(l *spec.Layer, x Tensor) (Tensor, error) {
	self := "self." + l.Attr
	switch l.Module {
	case "ReLU":
		return pointwise(x, func(v float64, _, _ int) float64 { return math.Max(v, 0) }), nil
	case "GELU":
		return activation(x, "gelu", 0, 0, 1), nil
	case "Sigmoid":
		return activation(x, "sigmoid", 0, 0, 1), nil
	case "LeakyReLU":
		return activation(x, "leaky_relu", num(l.Built["negative_slope"]), 0, 1), nil
	case "Softmax":
		return softmax(x, []int{l.Built["dim"].Int}), nil
	case "BatchNorm3d":
		// Training mode: normalised by the batch's biased variance; the
		// running variance takes the unbiased one.
		g := groups(x.Shape, []int{0, 2, 3, 4})
		c := x.Shape[1]
		mean, variance, count := moments(x, g, c)
		eps, m := num(l.Built["eps"]), num(l.Built["momentum"])
		w, b := e.params(self+".weight"), e.params(self+".bias")
		rm, rv := slices.Clone(e.params(self+".running_mean")), slices.Clone(e.params(self+".running_var"))
		for k := range c {
			rm[k] = (1-m)*rm[k] + m*mean[k]
			rv[k] = (1-m)*rv[k] + m*variance[k]*float64(count)/float64(count-1)
		}
		e.res.Updates[self+".running_mean"], e.res.Updates[self+".running_var"] = rm, rv
		nb := slices.Clone(e.params(self + ".num_batches_tracked"))
		nb[0]++
		e.res.Updates[self+".num_batches_tracked"] = nb
		return pointwise(x, func(v float64, i, ch int) float64 {
			return (v-mean[g(i)])/math.Sqrt(variance[g(i)]+eps)*w[ch] + b[ch]
		}), nil
	case "GroupNorm":
		ng := l.Built["num_groups"].Int
		cg := x.Shape[1] / ng
		inner := numel(x.Shape[2:])
		g := func(i int) int { return i / (cg * inner) } // (n, group): contiguous
		mean, variance, _ := moments(x, g, x.Shape[0]*ng)
		eps := num(l.Built["eps"])
		w, b := e.params(self+".weight"), e.params(self+".bias")
		return pointwise(x, func(v float64, i, ch int) float64 {
			return (v-mean[g(i)])/math.Sqrt(variance[g(i)]+eps)*w[ch] + b[ch]
		}), nil
	case "LayerNorm":
		last := len(x.Shape) - 1
		g := groups(x.Shape, []int{last})
		mean, variance, _ := moments(x, g, len(x.Data)/x.Shape[last])
		eps := num(l.Built["eps"])
		w, b := e.params(self+".weight"), e.params(self+".bias")
		return pointwise(x, func(v float64, i, _ int) float64 {
			j := i % x.Shape[last]
			return (v-mean[g(i)])/math.Sqrt(variance[g(i)]+eps)*w[j] + b[j]
		}), nil
	case "AvgPool3d", "MaxPool3d":
		return pool(l, x)
	case "AdaptiveAvgPool3d":
		if o := l.Built["output_size"]; !(o.Kind == spec.TupleValue && slices.Equal(o.Tuple, []int{1, 1, 1}) || o.Kind == spec.IntValue && o.Int == 1) {
			return x, fmt.Errorf("nn.AdaptiveAvgPool3d(%s) has no reference (output size 1 has)", o.Python())
		}
		return reduce(x, "mean", []int{2, 3, 4}, true), nil
	}
	return x, fmt.Errorf("nn.%s has no reference", l.Module)
}

func triple(v spec.Value) [3]int {
	if v.Kind == spec.TupleValue && len(v.Tuple) == 3 {
		return [3]int{v.Tuple[0], v.Tuple[1], v.Tuple[2]}
	}
	return [3]int{v.Int, v.Int, v.Int}
}

// pool is nn.AvgPool3d (count_include_pad, floor mode) or nn.MaxPool3d
// (padding never chosen) of layer l on x.
func pool(l *spec.Layer, x Tensor) (Tensor, error) {
	k := triple(l.Built["kernel_size"])
	s := k
	if v, ok := l.Built["stride"]; ok {
		s = triple(v)
	}
	p := triple(l.Built["padding"])
	in := x.Shape[2:]
	shape := slices.Clone(x.Shape)
	for d := range 3 {
		shape[2+d] = (in[d]+2*p[d]-k[d])/s[d] + 1
	}
	max := l.Module == "MaxPool3d"
	out := Tensor{Shape: shape, Data: make([]float64, numel(shape))}
	planes := shape[0] * shape[1]
	for pl := range planes {
		src := x.Data[pl*numel(in) : (pl+1)*numel(in)]
		for od := range shape[2] {
			for oh := range shape[3] {
				for ow := range shape[4] {
					acc := 0.0
					if max {
						acc = math.Inf(-1)
					}
					for kd := range k[0] {
						for kh := range k[1] {
							for kw := range k[2] {
								d, h, w := od*s[0]-p[0]+kd, oh*s[1]-p[1]+kh, ow*s[2]-p[2]+kw
								if d < 0 || h < 0 || w < 0 || d >= in[0] || h >= in[1] || w >= in[2] {
									continue // padding: -inf for max, 0 for the average
								}
								v := src[(d*in[1]+h)*in[2]+w]
								if max {
									acc = math.Max(acc, v)
								} else {
									acc += v
								}
							}
						}
					}
					if !max {
						acc /= float64(k[0] * k[1] * k[2])
					}
					out.Data[((pl*shape[2]+od)*shape[3]+oh)*shape[4]+ow] = acc
				}
			}
		}
	}
	return out, nil
}

package spec

import (
	"strconv"
	"strings"
)

// The reference model as Python: __init__'s statements after super(), and
// forward's. The generated problem.py prints them; the submissions copy
// __init__'s, so seeded initialisation gives the same weights.

// canon renders an expression the spec validated in canonical form.
func canon(src string) string {
	a, err := parseConvArg(src)
	if err != nil {
		panic("spec: canon on an unvalidated spec: " + err.Error())
	}
	return a.value.Python()
}

// InitLines are __init__'s assignments in order, the convolution's among
// them.
func (r Reference) InitLines() []string {
	conv := "self." + r.Attr + " = nn.ConvTranspose3d(" + r.ConvArgs() + ")"
	var out []string
	for i, l := range r.Layers {
		if i == r.ConvAt {
			out = append(out, conv)
		}
		out = append(out, "self."+l.Attr+" = "+l.python())
	}
	if r.ConvAt >= len(r.Layers) {
		out = append(out, conv)
	}
	return out
}

func (l Layer) python() string {
	switch l.Kind {
	case "parameter":
		if l.Init == "tensor" {
			return "nn.Parameter(torch.tensor(" + canon(l.Value) + "))"
		}
		return "nn.Parameter(torch." + l.Init + "(" + canon(l.Shape) + "))"
	case "module":
		args := make([]string, len(l.Args))
		for i, src := range l.Args {
			a, _ := parseConvArg(src)
			args[i] = a.value.Python()
			if a.keyword != "" {
				args[i] = a.keyword + "=" + args[i]
			}
		}
		return "nn." + l.Module + "(" + strings.Join(args, ", ") + ")"
	}
	return canon(l.Value)
}

// ForwardParams is forward's parameter list after self.
func (r Reference) ForwardParams() string {
	ins := r.inputs()
	parts := make([]string, len(ins))
	for i, in := range ins {
		parts[i] = in.Name + ": torch.Tensor"
	}
	return strings.Join(parts, ", ")
}

func (r Reference) inputs() []Input {
	if len(r.Inputs) == 0 {
		return []Input{{Name: "x"}}
	}
	return r.Inputs
}

// InputNames are forward's inputs, in order.
func (r Reference) InputNames() []string {
	var out []string
	for _, in := range r.inputs() {
		out = append(out, in.Name)
	}
	return out
}

// UsesConv tells whether an op reads the convolution's output after
// later ops changed the tensor (the reference keeps a copy).
func (r Reference) UsesConv() bool {
	for _, op := range r.Forward {
		if op.Operand.Name == "conv" {
			return true
		}
	}
	return false
}

// ForwardLines are forward's statements: the prologue, the convolution,
// the ops, the return.
func (r Reference) ForwardLines() []string {
	x := r.inputs()[0].Name
	if len(r.Forward) == 0 && len(r.Prologue) == 0 {
		return []string{"return self." + r.Attr + "(" + x + ")"}
	}
	var out []string
	for _, op := range r.Prologue {
		out = append(out, x+" = "+r.opPython(op, x))
	}
	out = append(out, x+" = self."+r.Attr+"("+x+")")
	if r.UsesConv() {
		out = append(out, "conv = "+x)
	}
	for _, op := range r.Forward {
		out = append(out, x+" = "+r.opPython(op, x))
	}
	return append(out, "return "+x)
}

func dimsPython(ds []int) string {
	if len(ds) == 1 {
		return strconv.Itoa(ds[0])
	}
	parts := make([]string, len(ds))
	for i, d := range ds {
		parts[i] = strconv.Itoa(d)
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

func (r Reference) opPython(op Op, x string) string {
	keep := func() string {
		if op.Keepdim {
			return ", keepdim=True"
		}
		return ""
	}
	switch op.Name {
	case "add", "sub", "mul", "div":
		sym := map[string]string{"add": "+", "sub": "-", "mul": "*", "div": "/"}[op.Name]
		return x + " " + sym + " " + op.Operand.Python(&r)
	case "clamp":
		var args []string
		if op.Min != nil {
			args = append(args, "min="+op.Min.Python(&r))
		}
		if op.Max != nil {
			args = append(args, "max="+op.Max.Python(&r))
		}
		return "torch.clamp(" + x + ", " + strings.Join(args, ", ") + ")"
	case "relu", "sigmoid", "tanh":
		return "torch." + op.Name + "(" + x + ")"
	case "gelu", "hardswish":
		return "torch.nn.functional." + op.Name + "(" + x + ")"
	case "swish":
		return "torch.sigmoid(" + x + ") * " + x
	case "mul_hardswish":
		return x + " * torch.nn.functional.hardswish(" + x + ")"
	case "leaky_relu":
		return "torch.nn.functional.leaky_relu(" + x + ", " + PyFloat(op.Slope) + ")"
	case "sigmoid_gate":
		return x + " * torch.sigmoid(" + x + " + " + PyFloat(op.Shift) + ") / " + PyFloat(op.Divisor)
	case "softmax":
		if len(op.Dims) > 1 {
			return "torch.softmax(" + x + ".flatten(2), dim=2).view_as(" + x + ")"
		}
		return "torch.softmax(" + x + ", dim=" + strconv.Itoa(op.Dims[0]) + ")"
	case "logsumexp", "mean", "sum":
		return "torch." + op.Name + "(" + x + ", dim=" + dimsPython(op.Dims) + keep() + ")"
	case "max":
		return "torch.amax(" + x + ", dim=" + dimsPython(op.Dims) + keep() + ")"
	case "sub_mean":
		return x + " - torch.mean(" + x + ", dim=" + dimsPython(op.Dims) + ", keepdim=True)"
	case "apply":
		return "self." + op.Attr + "(" + x + ")"
	}
	panic("spec: unknown op " + op.Name)
}

// InputLines are get_inputs()'s statements: each input drawn, then the
// list returned.
func (r Reference) InputLines(dist string, convInput []int) []string {
	var out, names []string
	for i, in := range r.inputs() {
		shape := in.Shape
		if shape == nil && i == 0 {
			shape = convInput
		}
		parts := make([]string, len(shape))
		for j, v := range shape {
			parts[j] = strconv.Itoa(v)
		}
		out = append(out, in.Name+" = torch."+dist+"("+strings.Join(parts, ", ")+")")
		names = append(names, in.Name)
	}
	return append(out, "return ["+strings.Join(names, ", ")+"]")
}

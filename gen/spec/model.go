package spec

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// The rest of the reference model: the attributes __init__ sets besides
// the convolution (parameters, layers, plain values), forward's inputs,
// and the ops forward runs before and after the convolution.

// Layer is one attribute __init__ sets besides the convolution.
type Layer struct {
	Attr   string
	Kind   string   // "parameter", "module" or "value"
	Init   string   // parameter: randn, ones, zeros or tensor
	Shape  string   // parameter randn, ones, zeros: its shape, a Python expression
	Value  string   // parameter tensor and value: a Python expression
	Module string   // module: the torch.nn class
	Args   []string // module: its arguments, "expr" or "keyword=expr"

	// Filled by validation.
	Dims  []int            // parameter: its shape ([] for a 0-dim tensor)
	Num   float64          // parameter tensor, value: the number
	Built map[string]Value // module: every argument, PyTorch's defaults included
}

// Input is one of forward's inputs; Shape nil is the problem's input.
type Input struct {
	Name  string
	Shape []int
}

// Op is one step of forward.
type Op struct {
	Name     string   // see opKinds
	Operand  Operand  // add, sub, mul, div
	Min, Max *Operand // clamp (at least one)
	Attr     string   // apply: the layer it runs
	Dims     []int    // softmax, logsumexp, mean, sum, max, sub_mean
	Keepdim  bool
	Slope    float64 // leaky_relu
	Shift    float64 // sigmoid_gate: x * sigmoid(x + shift) / divisor
	Divisor  float64
}

// Operand is the other side of an arithmetic op or a clamp bound: a
// number, or a name (a layer's attribute, an input, or conv: the
// convolution's output as it left the convolution).
type Operand struct {
	Name string
	Num  float64
	View []int // a parameter's .view(...) before it broadcasts
}

// Python renders an operand as the reference's forward reads it.
func (o Operand) Python(r *Reference) string {
	if o.Name == "" {
		return PyFloat(o.Num)
	}
	s := o.Name
	if r.Layer(o.Name) != nil {
		s = "self." + o.Name
	}
	if o.View != nil {
		parts := make([]string, len(o.View))
		for i, v := range o.View {
			parts[i] = strconv.Itoa(v)
		}
		s += ".view(" + strings.Join(parts, ", ") + ")"
	}
	return s
}

// Layer returns the layer set as attr, or nil.
func (r *Reference) Layer(attr string) *Layer {
	for i := range r.Layers {
		if r.Layers[i].Attr == attr {
			return &r.Layers[i]
		}
	}
	return nil
}

// opKinds are the forward ops: which take an operand, no arguments, or
// arguments of their own.
var (
	arithOps  = []string{"add", "sub", "mul", "div"}
	bareOps   = []string{"relu", "gelu", "sigmoid", "tanh", "swish", "hardswish", "mul_hardswish"}
	argOps    = []string{"clamp", "apply", "softmax", "logsumexp", "mean", "sum", "max", "sub_mean", "leaky_relu", "sigmoid_gate"}
	paramInit = []string{"randn", "ones", "zeros", "tensor"}
)

// moduleSig is a torch.nn layer's constructor: its arguments in
// positional order, how many are required, and the defaults of the rest
// (a missing default is None).
type moduleSig struct {
	params   []string
	required int
	defaults map[string]Value
}

func num(f float64) Value { return Value{Kind: FloatValue, Float: f} }

var modules = map[string]moduleSig{
	"BatchNorm3d":       {[]string{"num_features", "eps", "momentum"}, 1, map[string]Value{"eps": num(1e-5), "momentum": num(0.1)}},
	"GroupNorm":         {[]string{"num_groups", "num_channels", "eps"}, 2, map[string]Value{"eps": num(1e-5)}},
	"LayerNorm":         {[]string{"normalized_shape", "eps"}, 1, map[string]Value{"eps": num(1e-5)}},
	"AvgPool3d":         {[]string{"kernel_size", "stride", "padding"}, 1, map[string]Value{"padding": {Kind: IntValue}}},
	"MaxPool3d":         {[]string{"kernel_size", "stride", "padding"}, 1, map[string]Value{"padding": {Kind: IntValue}}},
	"AdaptiveAvgPool3d": {[]string{"output_size"}, 1, nil},
	"ReLU":              {nil, 0, nil},
	"GELU":              {nil, 0, nil},
	"Sigmoid":           {nil, 0, nil},
	"Softmax":           {[]string{"dim"}, 1, nil},
	"LeakyReLU":         {[]string{"negative_slope"}, 0, map[string]Value{"negative_slope": num(0.01)}},
}

// ---- decoding ----------------------------------------------------------

func (d *decoder) layers(n *yaml.Node, f string, r *Reference) {
	if n.Kind != yaml.SequenceNode || !d.plain(n, f) {
		d.fail(n, f, source(n), "must be a list of layers")
		return
	}
	conv := false
	for i, c := range n.Content {
		field := fmt.Sprintf("%s[%d]", f, i)
		d.pos[field] = c
		if c.Kind == yaml.ScalarNode {
			if s, ok := d.str(c, field); ok {
				if s != "conv" || conv {
					d.fail(c, field, source(c), "a layer is a mapping; the one string is conv, once, where the convolution is created")
				}
				conv = true
				r.ConvAt = len(r.Layers)
			}
			continue
		}
		var l Layer
		d.fields(c, field, map[string]func(*yaml.Node, string){
			"attr":      func(n *yaml.Node, f string) { l.Attr, _ = d.str(n, f) },
			"parameter": func(n *yaml.Node, f string) { l.Kind = "parameter"; l.Init, _ = d.str(n, f) },
			"shape":     func(n *yaml.Node, f string) { l.Shape = d.exprSource(n, f) },
			"value":     func(n *yaml.Node, f string) { l.Value = d.exprSource(n, f) },
			"module":    func(n *yaml.Node, f string) { l.Kind = "module"; l.Module, _ = d.str(n, f) },
			"args":      func(n *yaml.Node, f string) { l.Args = d.strList(n, f) },
		}, "attr")
		if l.Kind == "" {
			l.Kind = "value"
		}
		r.Layers = append(r.Layers, l)
	}
}

// exprSource reads a Python expression: a scalar's text (a name, a number)
// or a list of them (a tuple).
func (d *decoder) exprSource(n *yaml.Node, f string) string {
	if n.Kind == yaml.SequenceNode && d.plain(n, f) {
		parts := make([]string, len(n.Content))
		for i, c := range n.Content {
			parts[i] = d.exprSource(c, fmt.Sprintf("%s[%d]", f, i))
		}
		if len(parts) == 1 {
			return "(" + parts[0] + ",)"
		}
		return "(" + strings.Join(parts, ", ") + ")"
	}
	s, _ := d.str(n, f)
	return s
}

func (d *decoder) inputs(n *yaml.Node, f string, r *Reference) {
	if n.Kind != yaml.SequenceNode || !d.plain(n, f) || len(n.Content) == 0 {
		d.fail(n, f, source(n), "must be a non-empty list of inputs")
		return
	}
	for i, c := range n.Content {
		field := fmt.Sprintf("%s[%d]", f, i)
		d.pos[field] = c
		var in Input
		d.fields(c, field, map[string]func(*yaml.Node, string){
			"name":  func(n *yaml.Node, f string) { in.Name, _ = d.str(n, f) },
			"shape": func(n *yaml.Node, f string) { in.Shape = d.intList(n, f) },
		}, "name")
		r.Inputs = append(r.Inputs, in)
	}
}

func (d *decoder) intList(n *yaml.Node, f string) []int {
	if n.Kind != yaml.SequenceNode || !d.plain(n, f) || len(n.Content) == 0 {
		d.fail(n, f, source(n), "must be a non-empty list of integers")
		return nil
	}
	out := []int{}
	for i, c := range n.Content {
		v, _ := d.int(c, fmt.Sprintf("%s[%d]", f, i))
		out = append(out, v)
	}
	return out
}

func (d *decoder) ops(n *yaml.Node, f string) []Op {
	if n.Kind != yaml.SequenceNode || !d.plain(n, f) {
		d.fail(n, f, source(n), "must be a list of ops")
		return nil
	}
	var out []Op
	for i, c := range n.Content {
		field := fmt.Sprintf("%s[%d]", f, i)
		d.pos[field] = c
		out = append(out, d.op(c, field))
	}
	return out
}

func (d *decoder) op(n *yaml.Node, f string) Op {
	known := strings.Join(slices.Concat(arithOps, bareOps, argOps), ", ")
	if n.Kind == yaml.ScalarNode {
		s, ok := d.str(n, f)
		if ok && !slices.Contains(bareOps, s) {
			d.fail(n, f, source(n), "unknown op without arguments (ops: %s)", known)
		}
		return Op{Name: s}
	}
	if n.Kind != yaml.MappingNode || len(n.Content) != 2 || !d.plain(n, f) {
		d.fail(n, f, source(n), "an op is a name or a mapping of one name to its arguments")
		return Op{}
	}
	k, v := n.Content[0], n.Content[1]
	op := Op{Name: k.Value}
	field := f + "." + k.Value
	d.pos[field] = v
	args := map[string]func(*yaml.Node, string){}
	dims := func(n *yaml.Node, f string) { op.Dims = d.intList(n, f) }
	dim := func(n *yaml.Node, f string) { x, _ := d.int(n, f); op.Dims = []int{x} }
	keep := func(n *yaml.Node, f string) { op.Keepdim, _ = d.bool(n, f) }
	switch {
	case slices.Contains(arithOps, op.Name):
		op.Operand = d.operand(v, field)
		return op
	case op.Name == "apply":
		op.Attr, _ = d.str(v, field)
		return op
	case op.Name == "clamp":
		args["min"] = func(n *yaml.Node, f string) { o := d.operand(n, f); op.Min = &o }
		args["max"] = func(n *yaml.Node, f string) { o := d.operand(n, f); op.Max = &o }
	case op.Name == "softmax":
		args["dim"], args["dims"] = dim, dims
	case op.Name == "logsumexp" || op.Name == "mean" || op.Name == "sum" || op.Name == "max":
		args["dim"], args["dims"], args["keepdim"] = dim, dims, keep
	case op.Name == "sub_mean":
		args["dims"] = dims
	case op.Name == "leaky_relu":
		args["negative_slope"] = func(n *yaml.Node, f string) { op.Slope = d.number(n, f) }
	case op.Name == "sigmoid_gate":
		args["shift"] = func(n *yaml.Node, f string) { op.Shift = d.number(n, f) }
		args["divisor"] = func(n *yaml.Node, f string) { op.Divisor = d.number(n, f) }
	default:
		d.fail(k, f, source(k), "unknown op (ops: %s)", known)
		return op
	}
	d.fields(v, field, args)
	if op.Name == "sigmoid_gate" && op.Divisor == 0 && d.ok(field) {
		d.fail(v, field+".divisor", "", "required field is missing (and may not be 0)")
	}
	return op
}

// number reads an integer or a float as a float64.
func (d *decoder) number(n *yaml.Node, f string) float64 {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!int" {
		x, _ := d.int(n, f)
		return float64(x)
	}
	x, _ := d.float(n, f)
	return x
}

// operand reads a number, a name, or {operand: name, view: [...]}.
func (d *decoder) operand(n *yaml.Node, f string) Operand {
	var o Operand
	switch {
	case n.Kind == yaml.MappingNode:
		d.fields(n, f, map[string]func(*yaml.Node, string){
			"operand": func(n *yaml.Node, f string) { o.Name, _ = d.str(n, f) },
			"view":    func(n *yaml.Node, f string) { o.View = d.intList(n, f) },
		}, "operand", "view")
	case n.Kind == yaml.ScalarNode && (n.Tag == "!!int" || n.Tag == "!!float"):
		o.Num = d.number(n, f)
	default:
		o.Name, _ = d.str(n, f)
	}
	return o
}

// ---- validation --------------------------------------------------------

// validateModel checks the layers, inputs and ops, with env holding every
// __init__ parameter's value and out the convolution's output shape.
func (d *decoder) validateModel(s *Spec, env map[string]Value) {
	r := &s.Reference
	names := map[string]string{r.Attr: "the convolution"}
	for i := range r.Layers {
		l := &r.Layers[i]
		f := fmt.Sprintf("reference.layers[%d]", i)
		if !d.pythonName(f+".attr", l.Attr) {
			continue
		}
		if what, dup := names[l.Attr]; dup {
			d.failAt(f+".attr", l.Attr, "is already set (%s)", what)
			continue
		}
		names[l.Attr] = "a layer"
		d.validateLayer(l, f, env)
	}
	p := s.Problem
	in := []int{p.Batch, p.InChannels, p.In[0], p.In[1], p.In[2]}
	if r.Inputs == nil {
		r.Inputs = []Input{{Name: "x"}}
	}
	for i := range r.Inputs {
		f := fmt.Sprintf("reference.inputs[%d]", i)
		x := &r.Inputs[i]
		if !d.pythonName(f+".name", x.Name) {
			continue
		}
		if what, dup := names[x.Name]; dup || x.Name == "conv" {
			d.failAt(f+".name", x.Name, "is already a name of the model (%s)", what)
		}
		names[x.Name] = "an input"
		if i > 0 && x.Shape == nil {
			d.failAt(f, "", "needs a shape (only the first input defaults to the problem's)")
		}
		for _, v := range x.Shape {
			if v <= 0 || v > MaxExtent {
				d.failAt(f+".shape", fmt.Sprint(x.Shape), "sizes must be 1 to %d", MaxExtent)
				break
			}
		}
	}
	for _, f := range []string{"reference.layers", "reference.inputs", "reference.prologue", "reference.forward"} {
		if d.hasError(f) {
			return // the ops are traced over valid layers and inputs only
		}
	}
	first := r.Inputs[0].Shape
	if first == nil {
		first = in
		r.Inputs[0].Shape = in
	}
	t := &tracer{d: d, r: r, conv: nil}
	got := t.run("reference.prologue", r.Prologue, first)
	if got != nil && !slices.Equal(got, in) {
		f := "reference.prologue"
		if len(r.Prologue) == 0 {
			f = "reference.inputs[0].shape"
		}
		d.failAt(f, shapeString(got), "gives the convolution an input of shape %s; the problem's is %s", shapeString(got), shapeString(in))
	}
	out := p.Out()
	t.conv = []int{p.Batch, p.OutChannels, out[0], out[1], out[2]}
	t.run("reference.forward", r.Forward, t.conv)
}

func (d *decoder) validateLayer(l *Layer, f string, env map[string]Value) {
	eval := func(field, src string) (Value, bool) {
		a, err := parseConvArg(src)
		if err == nil && a.keyword != "" {
			err = fmt.Errorf("a keyword argument is not an expression")
		}
		if err != nil {
			d.failAt(field, strconv.Quote(src), "%v", err)
			return Value{}, false
		}
		v, err := a.value.eval(env)
		if err != nil {
			d.failAt(field, strconv.Quote(src), "%v", err)
			return Value{}, false
		}
		return v, true
	}
	unused := func(key, val string) {
		if val != "" {
			d.failAt(f+"."+key, val, "is not an argument of a %s layer", l.Kind)
		}
	}
	switch l.Kind {
	case "parameter":
		unused("module", l.Module)
		if l.Args != nil {
			d.failAt(f+".args", "", "is not an argument of a parameter")
		}
		switch {
		case !slices.Contains(paramInit, l.Init):
			d.failAt(f+".parameter", strconv.Quote(l.Init), "must be one of %s (torch.randn(shape), torch.ones(shape), torch.zeros(shape), torch.tensor(value))", strings.Join(paramInit, ", "))
		case l.Init == "tensor":
			unused("shape", l.Shape)
			if l.Value == "" {
				d.failAt(f, "", "a tensor parameter needs a value")
			} else if v, ok := eval(f+".value", l.Value); ok {
				if x, isNum := v.Number(); isNum && v.Kind == FloatValue {
					l.Num, l.Dims = x, []int{}
				} else {
					d.failAt(f+".value", v.Python(), "torch.tensor(value) makes a parameter only of a float")
				}
			}
		default:
			unused("value", l.Value)
			if l.Shape == "" {
				d.failAt(f, "", "a %s parameter needs a shape", l.Init)
			} else if v, ok := eval(f+".shape", l.Shape); ok {
				switch {
				case v.Kind == IntValue && v.Int > 0:
					l.Dims = []int{v.Int}
				case v.Kind == TupleValue && len(v.Tuple) > 0 && !slices.ContainsFunc(v.Tuple, func(x int) bool { return x <= 0 || x > MaxExtent }):
					l.Dims = v.Tuple
				default:
					d.failAt(f+".shape", v.Python(), "must be a positive size or a tuple of them")
				}
			}
		}
	case "module":
		unused("shape", l.Shape)
		unused("value", l.Value)
		sig, ok := modules[l.Module]
		if !ok {
			d.failAt(f+".module", strconv.Quote(l.Module), "must be one of %s", strings.Join(sortedKeys(modules), ", "))
			return
		}
		l.Built = map[string]Value{}
		for k, v := range sig.defaults {
			l.Built[k] = v
		}
		given := map[string]bool{}
		keywords := false
		for i, src := range l.Args {
			field := fmt.Sprintf("%s.args[%d]", f, i)
			a, err := parseConvArg(src)
			if err != nil {
				d.failAt(field, strconv.Quote(src), "%v", err)
				continue
			}
			name := a.keyword
			switch {
			case name == "" && keywords:
				d.failAt(field, strconv.Quote(src), "positional argument after a keyword argument")
				continue
			case name == "" && i >= len(sig.params):
				d.failAt(field, strconv.Quote(src), "nn.%s takes %d arguments here (%s)", l.Module, len(sig.params), strings.Join(sig.params, ", "))
				continue
			case name == "":
				name = sig.params[i]
			case !slices.Contains(sig.params, name):
				d.failAt(field, strconv.Quote(src), "nn.%s takes %s here", l.Module, strings.Join(sig.params, ", "))
				continue
			default:
				keywords = true
			}
			if given[name] {
				d.failAt(field, strconv.Quote(src), "%s given twice", name)
				continue
			}
			given[name] = true
			v, err := a.value.eval(env)
			if err != nil {
				d.failAt(field, strconv.Quote(src), "%v", err)
				continue
			}
			l.Built[name] = v
		}
		for _, p := range sig.params[:sig.required] {
			if !given[p] {
				d.failAt(f+".args", "", "nn.%s needs %s", l.Module, p)
			}
		}
	default:
		unused("shape", l.Shape)
		if l.Args != nil {
			d.failAt(f+".args", "", "is not an argument of a plain value")
		}
		if l.Value == "" {
			d.failAt(f, "", "a layer is a parameter, a module or a value (got none of them)")
		} else if v, ok := eval(f+".value", l.Value); ok {
			if x, isNum := v.Number(); isNum {
				l.Num = x
			} else {
				d.failAt(f+".value", v.Python(), "a plain value must be a number")
			}
		}
	}
}

// tracer follows a tensor's shape through a list of ops, refusing what
// the op cannot take.
type tracer struct {
	d    *decoder
	r    *Reference
	conv []int // the convolution's output shape (nil in the prologue)
}

func shapeString(s []int) string {
	parts := make([]string, len(s))
	for i, v := range s {
		parts[i] = strconv.Itoa(v)
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// run returns the shape after the ops, or nil where an op was refused.
func (t *tracer) run(f string, ops []Op, shape []int) []int {
	for i, op := range ops {
		field := fmt.Sprintf("%s[%d]", f, i)
		shape = t.op(field, op, shape)
		if shape == nil {
			return nil
		}
	}
	return shape
}

func (t *tracer) op(f string, op Op, x []int) []int {
	d := t.d
	bad := func(sub, got, format string, a ...any) []int {
		field := f
		if sub != "" {
			field += "." + sub
		}
		d.failAt(field, got, format, a...)
		return nil
	}
	dims := func() ([]int, bool) {
		seen := map[int]bool{}
		for _, k := range op.Dims {
			if k < 1 || k >= len(x) || seen[k] {
				bad(op.Name, fmt.Sprint(op.Dims), "dims must be distinct axes 1 to %d of the %d-d tensor (batch is axis 0)", len(x)-1, len(x))
				return nil, false
			}
			seen[k] = true
		}
		if len(op.Dims) == 0 {
			bad(op.Name, "", "needs dim or dims")
			return nil, false
		}
		return op.Dims, true
	}
	reduce := func(keep bool) []int {
		ds, ok := dims()
		if !ok {
			return nil
		}
		var out []int
		for k, v := range x {
			switch {
			case !slices.Contains(ds, k):
				out = append(out, v)
			case keep:
				out = append(out, 1)
			}
		}
		return out
	}
	switch {
	case slices.Contains(arithOps, op.Name):
		if !t.operand(f+"."+op.Name, op.Operand, x) {
			return nil
		}
		return x
	case slices.Contains(bareOps, op.Name), op.Name == "leaky_relu", op.Name == "sigmoid_gate":
		return x
	case op.Name == "clamp":
		if op.Min == nil && op.Max == nil {
			return bad("clamp", "", "needs min or max")
		}
		for _, b := range []*Operand{op.Min, op.Max} {
			if b != nil && !t.scalar(f+".clamp", *b) {
				return nil
			}
		}
		return x
	case op.Name == "softmax":
		ds, ok := dims()
		if !ok {
			return nil
		}
		if len(ds) > 1 && (ds[0] != 2 || !slices.Equal(ds, []int{2, 3, 4}[:len(ds)]) || len(ds) != len(x)-2) {
			return bad("softmax.dims", fmt.Sprint(ds), "a softmax over several axes covers every axis after the channels, in order")
		}
		return x
	case op.Name == "logsumexp" || op.Name == "mean" || op.Name == "sum":
		return reduce(op.Keepdim)
	case op.Name == "max":
		if len(op.Dims) > 1 {
			return bad("max.dims", fmt.Sprint(op.Dims), "torch.max reduces one axis")
		}
		return reduce(op.Keepdim)
	case op.Name == "sub_mean":
		if reduce(true) == nil {
			return nil
		}
		return x
	case op.Name == "apply":
		return t.apply(f, op.Attr, x)
	}
	return bad("", op.Name, "unknown op")
}

// operand checks an arithmetic operand against the tensor's shape: a
// number, a plain value, a parameter that broadcasts (after its view), an
// input or the convolution's output of the same shape.
func (t *tracer) operand(f string, o Operand, x []int) bool {
	d := t.d
	if o.Name == "" {
		return true
	}
	if o.Name == "conv" {
		if t.conv == nil || !slices.Equal(t.conv, x) {
			d.failAt(f, "conv", "the convolution's output has shape %s here, not the tensor's %s", shapeString(t.conv), shapeString(x))
			return false
		}
		return o.View == nil || t.noView(f)
	}
	for _, in := range t.r.Inputs {
		if in.Name == o.Name {
			if !slices.Equal(in.Shape, x) {
				d.failAt(f, o.Name, "input %s has shape %s; the tensor here is %s", o.Name, shapeString(in.Shape), shapeString(x))
				return false
			}
			return o.View == nil || t.noView(f)
		}
	}
	l := t.r.Layer(o.Name)
	switch {
	case l == nil:
		d.failAt(f, o.Name, "is not a layer, an input or conv")
		return false
	case l.Kind == "value":
		return o.View == nil || t.noView(f)
	case l.Kind != "parameter":
		d.failAt(f, o.Name, "is a module; an operand is a number, a parameter, a value, an input or conv")
		return false
	}
	shape := l.Dims
	if o.View != nil {
		shape = nil
		n, free := 1, -1
		for i, v := range o.View {
			switch {
			case v == -1 && free < 0:
				free = i
			case v <= 0:
				d.failAt(f+".view", fmt.Sprint(o.View), "sizes must be positive, one of them -1")
				return false
			default:
				n *= v
			}
			shape = append(shape, v)
		}
		total := 1
		for _, v := range l.Dims {
			total *= v
		}
		if free >= 0 {
			shape[free] = total / n
			n *= shape[free]
		}
		if n != total {
			d.failAt(f+".view", fmt.Sprint(o.View), "does not hold the %d elements of %s", total, o.Name)
			return false
		}
	}
	if len(shape) > len(x) {
		d.failAt(f, o.Name, "%s of shape %s has more axes than the tensor %s", o.Name, shapeString(shape), shapeString(x))
		return false
	}
	// The epilogue takes a scalar or one value per channel: every axis
	// broadcast (size 1) but the channels'.
	off := len(x) - len(shape)
	for i, v := range shape {
		k := i + off
		if v != 1 && (k != 1 || v != x[1]) {
			d.failAt(f, o.Name, "%s of shape %s broadcasts over %s as neither a scalar nor one value per channel", o.Name, shapeString(shape), shapeString(x))
			return false
		}
	}
	return true
}

func (t *tracer) noView(f string) bool {
	t.d.failAt(f+".view", "", "only a parameter takes a view")
	return false
}

// scalar checks a clamp bound: a number or a plain value.
func (t *tracer) scalar(f string, o Operand) bool {
	if o.Name == "" {
		return true
	}
	if l := t.r.Layer(o.Name); l == nil || l.Kind != "value" || o.View != nil {
		t.d.failAt(f, o.Name, "a bound is a number or a plain value")
		return false
	}
	return true
}

func (t *tracer) apply(f, attr string, x []int) []int {
	d := t.d
	l := t.r.Layer(attr)
	if l == nil || l.Kind != "module" {
		d.failAt(f+".apply", attr, "is not a module layer")
		return nil
	}
	b := l.Built
	bad := func(format string, a ...any) []int {
		d.failAt(f+".apply", attr, format, a...)
		return nil
	}
	intArg := func(name string) (int, bool) {
		v := b[name]
		return v.Int, v.Kind == IntValue
	}
	switch l.Module {
	case "BatchNorm3d", "GroupNorm":
		c, ok := intArg("num_features")
		if l.Module == "GroupNorm" {
			c, ok = intArg("num_channels")
			g, gok := intArg("num_groups")
			if !gok || g <= 0 || !ok || c%g != 0 {
				return bad("nn.GroupNorm needs num_channels divisible by num_groups")
			}
		}
		if !ok || len(x) != 5 || x[1] != c {
			return bad("nn.%s of %s channels on a tensor of shape %s", l.Module, b["num_features"].Python(), shapeString(x))
		}
		for _, k := range []string{"eps", "momentum"} {
			if v, has := b[k]; has {
				if e, isNum := v.Number(); !isNum || e < 0 || k == "momentum" && e > 1 {
					return bad("nn.%s's %s must be a number (got %s)", l.Module, k, v.Python())
				}
			}
		}
		return x
	case "LayerNorm":
		ns := b["normalized_shape"]
		shape := ns.Tuple
		if ns.Kind == IntValue {
			shape = []int{ns.Int}
		}
		if len(shape) == 0 || len(shape) > len(x) || !slices.Equal(shape, x[len(x)-len(shape):]) {
			return bad("nn.LayerNorm(%s) normalises the last axes, which are %s here", ns.Python(), shapeString(x))
		}
		if len(shape) != 1 {
			return bad("nn.LayerNorm over %d axes: the epilogue normalises the last one", len(shape))
		}
		return x
	case "AvgPool3d", "MaxPool3d":
		k, kok := window(b["kernel_size"])
		s, sok := window(b["stride"])
		if _, has := b["stride"]; !has {
			s, sok = k, kok // stride None: the kernel size
		}
		p, pok := window(b["padding"])
		if !kok || !sok || !pok || len(x) != 5 {
			return bad("nn.%s's kernel_size, stride and padding must be integers or 3-tuples", l.Module)
		}
		out := slices.Clone(x)
		for i := 0; i < 3; i++ {
			if k[i] <= 0 || s[i] <= 0 || p[i] < 0 || 2*p[i] > k[i] {
				return bad("nn.%s: kernel and stride positive, padding at most half the kernel", l.Module)
			}
			out[2+i] = (x[2+i]+2*p[i]-k[i])/s[i] + 1
			if out[2+i] <= 0 {
				return bad("nn.%s's window %v is larger than the tensor %s", l.Module, k, shapeString(x))
			}
		}
		return out
	case "AdaptiveAvgPool3d":
		o, ok := window(b["output_size"])
		if !ok || o != [3]int{1, 1, 1} || len(x) != 5 {
			return bad("nn.AdaptiveAvgPool3d: the epilogue takes output_size 1 (a global mean)")
		}
		return []int{x[0], x[1], 1, 1, 1}
	case "Softmax":
		if dim, ok := intArg("dim"); !ok || dim != 1 {
			return bad("nn.Softmax: the epilogue takes dim=1 (channels)")
		}
		return x
	case "LeakyReLU":
		if _, ok := b["negative_slope"].Number(); !ok {
			return bad("nn.LeakyReLU's negative_slope must be a number")
		}
		return x
	}
	return x // ReLU, GELU, Sigmoid
}

// window reads a pool size: an integer for all three axes or a 3-tuple.
func window(v Value) ([3]int, bool) {
	switch {
	case v.Kind == IntValue:
		return [3]int{v.Int, v.Int, v.Int}, true
	case v.Kind == TupleValue && len(v.Tuple) == 3:
		return [3]int{v.Tuple[0], v.Tuple[1], v.Tuple[2]}, true
	}
	return [3]int{}, false
}

package importer

import (
	"slices"
	"strconv"
	"strings"

	"convtgen/gen/spec"
)

// Level 2: the attributes __init__ sets besides the convolution, and the
// ops forward runs around it, read into the spec's layers and op chain.
// Each statement is matched against the forms the spec's ops print as;
// anything else is refused where it is.

// moduleNames are the torch.nn layers the spec describes.
var moduleNames = []string{"BatchNorm3d", "GroupNorm", "LayerNorm", "AvgPool3d", "MaxPool3d", "AdaptiveAvgPool3d",
	"ReLU", "GELU", "Sigmoid", "Softmax", "LeakyReLU"}

// layer reads self.<attr> = <value>: a parameter, a layer or a plain
// value; ok is false where it was refused.
func (im *importer) layer(s *stmt, params map[string]bool) (spec.Layer, bool) {
	attr := s.targets[0].name
	v := s.value
	l := spec.Layer{Attr: attr}
	switch f := im.resolve(calledFunc(v)); {
	case f == "torch.nn.Parameter":
		if len(v.args) != 1 || v.args[0].keyword != "" {
			im.refuseStmt(s, "parameter self.%s: nn.Parameter takes one tensor here", attr)
			return l, false
		}
		t := v.args[0].value
		init := strings.TrimPrefix(im.resolve(calledFunc(t)), "torch.")
		if t.kind != eCall || !slices.Contains([]string{"randn", "ones", "zeros", "tensor"}, init) {
			im.refuseExpr(t, "parameter self.%s: the spec's parameters are torch.randn, torch.ones, torch.zeros(shape) or torch.tensor(value)", attr)
			return l, false
		}
		var parts []string
		for _, a := range t.args {
			src, ok := im.convExpr(a.value, params)
			if !ok || a.keyword != "" {
				if ok {
					im.refuseArg(a, "parameter self.%s: keyword arguments are not supported", attr)
				}
				return l, false
			}
			parts = append(parts, src)
		}
		l.Kind, l.Init = "parameter", init
		switch {
		case init == "tensor" && len(parts) == 1:
			l.Value = parts[0]
		case init == "tensor" || len(parts) == 0:
			im.refuseExpr(t, "parameter self.%s: torch.%s takes one value here", attr, init)
			return l, false
		case len(parts) == 1:
			l.Shape = parts[0]
		default:
			l.Shape = "(" + strings.Join(parts, ", ") + ")"
		}
		return l, true
	case strings.HasPrefix(f, "torch.nn."):
		name := strings.TrimPrefix(f, "torch.nn.")
		if !slices.Contains(moduleNames, name) {
			im.refuseStmt(s, "extra layer self.%s (nn.%s): the spec's layers are nn.%s", attr, name, strings.Join(moduleNames, ", nn."))
			return l, false
		}
		l.Kind, l.Module, l.Args = "module", name, []string{}
		for _, a := range v.args {
			src, ok := im.convExpr(a.value, params)
			if !ok {
				return l, false
			}
			if a.keyword != "" {
				src = a.keyword + "=" + src
			}
			l.Args = append(l.Args, src)
		}
		return l, true
	case f != "":
		im.refuseStmt(s, "extra attribute self.%s: %s is not a layer the spec describes", attr, f)
		return l, false
	}
	src, ok := im.convExpr(v, params)
	if !ok {
		return l, false
	}
	l.Kind, l.Value = "value", src
	return l, true
}

// chain reads forward's statements into the prologue and the ops after
// the convolution. cur is the name that holds the tensor.
type chain struct {
	im       *importer
	attr     string
	inputs   map[string]bool
	layers   map[string]spec.Layer
	prologue []spec.Op
	ops      []spec.Op
	conv     string // the name the convolution's output was saved to, while it is unchanged
	saved    map[string]bool
	flat     bool     // the tensor is viewed (b, c, -1)
	shape    []string // b, c, d, h, w = x.shape
	after    bool     // the convolution ran
}

func isName(e *expr, n string) bool { return e != nil && e.kind == eName && e.name == n }

func (c *chain) push(op spec.Op) {
	if c.after {
		c.ops = append(c.ops, op)
	} else {
		c.prologue = append(c.prologue, op)
	}
}

// kwargs returns a call's keyword arguments and its positional ones.
func kwargs(e *expr) (map[string]*expr, []*expr) {
	kw := map[string]*expr{}
	var pos []*expr
	for _, a := range e.args {
		if a.keyword != "" {
			kw[a.keyword] = a.value
		} else {
			pos = append(pos, a.value)
		}
	}
	return kw, pos
}

// number reads a literal number, with its sign.
func number(e *expr) (float64, bool) {
	switch {
	case e.kind == eInt:
		return float64(e.ival), true
	case e.kind == eFloat:
		return e.fval, true
	case e.kind == eUnary && e.name == "-":
		v, ok := number(e.x)
		return -v, ok
	}
	return 0, false
}

func (c *chain) intArg(e *expr) (int, bool) {
	if e == nil {
		return 0, false
	}
	v, ok := number(e)
	return int(v), ok && (e.kind == eInt || e.kind == eUnary && e.x.kind == eInt)
}

// dims reads dim=k or dim=(a, b, c).
func (c *chain) dims(e *expr) ([]int, bool) {
	if e == nil {
		return nil, false
	}
	if k, ok := c.intArg(e); ok {
		return []int{k}, true
	}
	if e.kind != eTuple {
		return nil, false
	}
	var out []int
	for _, x := range e.elts {
		k, ok := c.intArg(x)
		if !ok {
			return nil, false
		}
		out = append(out, k)
	}
	return out, true
}

func isTrue(e *expr) bool { return isName(e, "True") }

// operand reads the other side of an arithmetic op.
func (c *chain) operand(e *expr) (spec.Operand, bool) {
	if v, ok := number(e); ok {
		return spec.Operand{Num: v}, true
	}
	switch {
	case isSelfAttr(e):
		_, ok := c.layers[e.name]
		return spec.Operand{Name: e.name}, ok
	case e.kind == eName && c.saved[e.name]:
		return spec.Operand{Name: "conv"}, true
	case e.kind == eName && c.inputs[e.name]:
		return spec.Operand{Name: e.name}, true
	case e.kind == eCall && e.x.kind == eAttr && e.x.name == "view" && isSelfAttr(e.x.x):
		o := spec.Operand{Name: e.x.x.name}
		for _, a := range e.args {
			k, ok := c.intArg(a.value)
			if !ok || a.keyword != "" {
				return o, false
			}
			o.View = append(o.View, k)
		}
		_, ok := c.layers[o.Name]
		return o, ok
	}
	return spec.Operand{}, false
}

// fn names a call's function through the imports (torch.sigmoid).
func (c *chain) fn(e *expr) string {
	if e == nil || e.kind != eCall {
		return ""
	}
	return c.im.resolve(e.x)
}

// unaryOf reads f(x) for the pointwise functions the spec names.
func (c *chain) unaryOf(e *expr, x string) string {
	if e.kind != eCall || len(e.args) != 1 || e.args[0].keyword != "" || !isName(e.args[0].value, x) {
		return ""
	}
	switch c.fn(e) {
	case "torch.relu", "torch.nn.functional.relu":
		return "relu"
	case "torch.nn.functional.gelu":
		return "gelu"
	case "torch.sigmoid":
		return "sigmoid"
	case "torch.tanh":
		return "tanh"
	case "torch.nn.functional.hardswish":
		return "hardswish"
	}
	return ""
}

// expr reads one assigned value as ops on x; ok is false for anything
// the spec does not describe.
func (c *chain) expr(e *expr, x string) ([]spec.Op, bool) {
	one := func(op spec.Op) ([]spec.Op, bool) { return []spec.Op{op}, true }
	if e.kind == eCall && isSelfAttr(e.x) && len(e.args) == 1 && isName(e.args[0].value, x) && e.args[0].keyword == "" {
		if l, ok := c.layers[e.x.name]; ok && l.Kind == "module" {
			return one(spec.Op{Name: "apply", Attr: e.x.name})
		}
		return nil, false
	}
	if name := c.unaryOf(e, x); name != "" {
		return one(spec.Op{Name: name})
	}
	if e.kind == eBinary {
		ops := map[string]string{"+": "add", "-": "sub", "*": "mul", "/": "div"}
		// x * sigmoid(x + s) / d
		if e.name == "/" && e.x.kind == eBinary && e.x.name == "*" && isName(e.x.x, x) {
			g := e.x.y
			if c.fn(g) == "torch.sigmoid" && len(g.args) == 1 {
				a := g.args[0].value
				div, dok := number(e.y)
				if a.kind == eBinary && a.name == "+" && isName(a.x, x) && dok {
					if shift, ok := number(a.y); ok {
						return one(spec.Op{Name: "sigmoid_gate", Shift: shift, Divisor: div})
					}
				}
			}
		}
		if e.name == "*" && isName(e.y, x) && c.unaryOf(e.x, x) == "sigmoid" {
			return one(spec.Op{Name: "swish"})
		}
		if e.name == "*" && isName(e.x, x) && c.unaryOf(e.y, x) == "hardswish" {
			return one(spec.Op{Name: "mul_hardswish"})
		}
		if e.name == "-" && isName(e.x, x) && c.fn(e.y) == "torch.mean" {
			kw, pos := kwargs(e.y)
			ds, ok := c.dims(kw["dim"])
			if ok && len(pos) == 1 && isName(pos[0], x) && isTrue(kw["keepdim"]) && len(kw) == 2 {
				return one(spec.Op{Name: "sub_mean", Dims: ds})
			}
			return nil, false
		}
		if name, ok := ops[e.name]; ok && isName(e.x, x) {
			if o, ok := c.operand(e.y); ok {
				return one(spec.Op{Name: name, Operand: o})
			}
		}
		return nil, false
	}
	if e.kind == eSubscript && len(e.elts) == 1 && e.elts[0].kind == eInt && e.elts[0].ival == 0 && c.fn(e.x) == "torch.max" {
		kw, pos := kwargs(e.x)
		ds, ok := c.dims(kw["dim"])
		if ok && len(pos) == 1 && isName(pos[0], x) && len(kw) == 1 {
			return one(spec.Op{Name: "max", Dims: ds})
		}
		return nil, false
	}
	if e.kind != eCall {
		return nil, false
	}
	kw, pos := kwargs(e)
	target := func() bool { return len(pos) >= 1 && isName(pos[0], x) }
	switch f := c.fn(e); {
	case f == "torch.clamp" && target():
		bounds := []*expr{kw["min"], kw["max"]}
		if len(pos) > 1 {
			if len(kw) > 0 || len(pos) > 3 {
				return nil, false
			}
			bounds = []*expr{pos[1], nil}
			if len(pos) == 3 {
				bounds[1] = pos[2]
			}
		}
		op := spec.Op{Name: "clamp"}
		for i, b := range bounds {
			if b == nil {
				continue
			}
			o, ok := c.operand(b)
			if !ok {
				return nil, false
			}
			if i == 0 {
				op.Min = &o
			} else {
				op.Max = &o
			}
		}
		return one(op)
	case f == "torch.softmax" && target() && len(pos) == 1 && len(kw) == 1:
		ds, ok := c.dims(kw["dim"])
		if !ok || len(ds) != 1 {
			return nil, false
		}
		if c.flat {
			if ds[0] != 2 {
				return nil, false
			}
			return one(spec.Op{Name: "softmax", Dims: []int{2, 3, 4}})
		}
		return one(spec.Op{Name: "softmax", Dims: ds})
	case (f == "torch.logsumexp" || f == "torch.sum" || f == "torch.mean") && target() && len(pos) == 1:
		ds, ok := c.dims(kw["dim"])
		if !ok || len(kw) > 2 || len(kw) == 2 && kw["keepdim"] == nil {
			return nil, false
		}
		return one(spec.Op{Name: strings.TrimPrefix(f, "torch."), Dims: ds, Keepdim: isTrue(kw["keepdim"])})
	case e.x.kind == eAttr && e.x.name == "mean" && isName(e.x.x, x) && len(pos) == 0:
		ds, ok := c.dims(kw["dim"])
		if !ok || len(kw) > 2 || len(kw) == 2 && kw["keepdim"] == nil {
			return nil, false
		}
		return one(spec.Op{Name: "mean", Dims: ds, Keepdim: isTrue(kw["keepdim"])})
	case e.x.kind == eAttr && e.x.name == "view" && isName(e.x.x, x) && len(kw) == 0 && len(c.shape) == 5:
		// x.view(b, c, -1) and back: the flattened softmax's frame.
		if !c.flat && len(pos) == 3 && isName(pos[0], c.shape[0]) && isName(pos[1], c.shape[1]) {
			if k, ok := c.intArg(pos[2]); ok && k == -1 {
				c.flat = true
				return nil, true
			}
		}
		if c.flat && len(pos) == 5 {
			for i, p := range pos {
				if !isName(p, c.shape[i]) {
					return nil, false
				}
			}
			c.flat = false
			return nil, true
		}
	}
	return nil, false
}

// forward2 reads forward's statements into the model's prologue and ops.
func (im *importer) forward2(d *stmt, m *model) {
	attr := m.attr
	if len(d.params) < 2 || d.params[0].name != "self" {
		im.refuse(d.at, text(im.src, d.off, d.end), "forward's first parameter must be self, then its inputs")
		return
	}
	c := &chain{im: im, attr: attr, inputs: map[string]bool{}, layers: map[string]spec.Layer{}, saved: map[string]bool{}}
	for _, l := range m.layers {
		c.layers[l.Attr] = l
	}
	for _, p := range d.params[1:] {
		if p.def != nil {
			im.refuseExpr(p.def, "forward's input has a default: the spec's model takes its inputs from get_inputs()")
		}
		m.inputNames = append(m.inputNames, p.name)
		if p.name != d.params[1].name {
			c.inputs[p.name] = true
		}
	}
	cur := d.params[1].name
	want := "forward must return self." + attr + "(" + cur + ")"
	done := false
	for _, s := range d.body {
		switch {
		case isDoc(s):
		case done:
			im.refuseStmt(s, "statements after forward's return are not supported")
			return
		case s.kind == sReturn:
			switch {
			case !c.after && s.value != nil && s.value.kind == eCall && isSelfAttr(s.value.x) && s.value.x.name == attr &&
				len(s.value.args) == 1 && isName(s.value.args[0].value, cur):
				c.after = true
			case !c.after:
				im.refuseStmt(s, "%s: operations before or around the convolution are not supported except layer calls assigned to the input", want)
				return
			case s.value == nil || !isName(s.value, cur):
				im.refuseStmt(s, "operations after the convolution are not supported in return: assign each to the tensor (x = op(x)) and return it")
				return
			}
			done = true
		case s.kind == sAssign && len(s.targets) == 1 && s.targets[0].kind == eName && s.value.kind == eCall &&
			isSelfAttr(s.value.x) && s.value.x.name == attr:
			if c.after || len(s.value.args) != 1 || !isName(s.value.args[0].value, cur) {
				im.refuseStmt(s, "the convolution runs once, on forward's input")
				return
			}
			c.after, cur = true, s.targets[0].name
			c.conv = cur
			c.saved[cur] = true
		case s.kind == sAssign && len(s.targets) == 1 && s.targets[0].kind == eName && c.after &&
			s.value.kind == eCall && len(s.value.args) == 0 && s.value.x.kind == eAttr && s.value.x.name == "detach" &&
			s.value.x.x.kind == eCall && s.value.x.x.x.kind == eAttr && s.value.x.x.x.name == "clone" && isName(s.value.x.x.x.x, cur) && c.conv == cur:
			c.saved[s.targets[0].name] = true // original = x.clone().detach(): the convolution's output
		case s.kind == sAssign && len(s.targets) == 1 && s.targets[0].kind == eTuple && len(s.targets[0].elts) == 5 &&
			s.value.kind == eAttr && s.value.name == "shape" && isName(s.value.x, cur):
			c.shape = nil
			for _, t := range s.targets[0].elts {
				if t.kind != eName {
					im.refuseStmt(s, "unpack the shape into names")
					return
				}
				c.shape = append(c.shape, t.name)
			}
		case s.kind == sAssign && len(s.targets) == 1 && s.targets[0].kind == eName:
			if !c.after && s.targets[0].name != cur {
				im.refuseStmt(s, "%s: before the convolution, layers run on the input in place (x = self.pool(x))", want)
				return
			}
			ops, ok := c.expr(s.value, cur)
			if !ok || !c.after && (len(ops) != 1 || ops[0].Name != "apply") {
				im.refuseStmt(s, "operations after the convolution are not supported in this form: the spec's ops are %s",
					"layer calls, arithmetic with numbers, parameters, values, inputs and the saved convolution output, clamp, relu, gelu, sigmoid, tanh, hardswish, swish, softmax, logsumexp, mean, sum, max and x - mean")
				return
			}
			if t := s.targets[0].name; t != cur {
				if c.after && len(ops) > 0 {
					cur = t // y = op(x): the tensor is y from here
				}
			}
			for _, op := range ops {
				c.push(op)
				c.conv = ""
			}
		default:
			im.refuseStmt(s, "this statement is not supported in forward")
			return
		}
	}
	if !done {
		im.refuse(d.at, text(im.src, d.off, d.end), "%s", want)
	}
	if c.flat {
		im.refuse(d.at, text(im.src, d.off, d.end), "forward leaves the tensor viewed as (b, c, -1)")
	}
	m.prologue, m.ops = c.prologue, c.ops
}

// yamlOp writes one op as the spec's forward list takes it.
func yamlOp(op spec.Op) string {
	operand := func(o spec.Operand) string {
		s := o.Name
		if s == "" {
			s = spec.PyFloat(o.Num)
		}
		if o.View != nil {
			return "{operand: " + s + ", view: " + ints(o.View) + "}"
		}
		return s
	}
	switch op.Name {
	case "add", "sub", "mul", "div":
		return "{" + op.Name + ": " + operand(op.Operand) + "}"
	case "apply":
		return "{apply: " + op.Attr + "}"
	case "clamp":
		var parts []string
		if op.Min != nil {
			parts = append(parts, "min: "+operand(*op.Min))
		}
		if op.Max != nil {
			parts = append(parts, "max: "+operand(*op.Max))
		}
		return "{clamp: {" + strings.Join(parts, ", ") + "}}"
	case "softmax", "logsumexp", "mean", "sum", "max", "sub_mean":
		args := "dims: " + ints(op.Dims)
		if len(op.Dims) == 1 && op.Name != "sub_mean" {
			args = "dim: " + strconv.Itoa(op.Dims[0])
		}
		if op.Keepdim {
			args += ", keepdim: true"
		}
		return "{" + op.Name + ": {" + args + "}}"
	case "leaky_relu":
		return "{leaky_relu: {negative_slope: " + spec.PyFloat(op.Slope) + "}}"
	case "sigmoid_gate":
		return "{sigmoid_gate: {shift: " + spec.PyFloat(op.Shift) + ", divisor: " + spec.PyFloat(op.Divisor) + "}}"
	}
	return op.Name
}

func ints(v []int) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = strconv.Itoa(x)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// yamlLayer writes one layer as the spec's layers list takes it.
func yamlLayer(l spec.Layer) string {
	s := "{attr: " + yamlString(l.Attr)
	switch l.Kind {
	case "parameter":
		s += ", parameter: " + l.Init
		if l.Shape != "" {
			s += ", shape: " + strconv.Quote(l.Shape)
		}
		if l.Value != "" {
			s += ", value: " + strconv.Quote(l.Value)
		}
	case "module":
		s += ", module: " + l.Module
		if len(l.Args) > 0 {
			parts := make([]string, len(l.Args))
			for i, a := range l.Args {
				parts[i] = strconv.Quote(a)
			}
			s += ", args: [" + strings.Join(parts, ", ") + "]"
		}
	default:
		s += ", value: " + strconv.Quote(l.Value)
	}
	return s + "}"
}

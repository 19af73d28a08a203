"""Probe: which reduction steps of the tap-less-phase regression come out
wrong under Triton's pipelining. Variant T keeps only step T's weights (the B
tile masked to step == T); its outputs are compared with the float64
transposed convolution of that tap alone.

Run on a GPU host from the repository root:
    python3 docs/perf/probes/triton_tapless_steps.py out/regress_triton_tapless_phases
"""
import importlib.util
import os
import sys
import tempfile

import torch

folder = sys.argv[1]
src = open(os.path.join(folder, "triton." + os.environ.get("TARGET", "sm90") + ".py")).read()
MASK = "        b_mask = ci_ok[:, None] & b_ok[None, :]\n"
assert MASK in src


def load(text, name):
    path = os.path.join(tempfile.mkdtemp(), name + ".py")
    open(path, "w").write(text)
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


problem = load(open(os.path.join(folder, "problem.py")).read(), "problem")
torch.manual_seed(42)
ref = problem.Model(*problem.get_init_inputs()).cuda()
torch.manual_seed(7)
x = problem.get_inputs()[0].cuda()
conv = ref.conv_transpose3d
kd, kh, kw = conv.kernel_size
for stages in (3, 1):
    for t in range(kd * kh * kw):
        # The tap phase has taps k = 0, 1, 2 per axis in this problem: step t
        # is tap (t // 9, t // 3 % 3, t % 3).
        td, th, tw = t // (kh * kw), t // kw % kh, t % kw
        w = torch.zeros_like(conv.weight.double())
        w[:, :, td, th, tw] = conv.weight.double()[:, :, td, th, tw]
        y64 = torch.nn.functional.conv_transpose3d(
            x.double(), w, conv.bias.double(), conv.stride, conv.padding, conv.output_padding, conv.groups,
            conv.dilation)
        text = src.replace(MASK, MASK[:-1] + f" & (step == {t})\n").replace("NUM_STAGES = 3", f"NUM_STAGES = {stages}")
        mod = load(text, f"s{stages}_t{t}")
        torch.manual_seed(42)
        m = mod.Model(*problem.get_init_inputs()).cuda()
        y = m(x).double()
        b = conv.bias.double().view(1, -1, 1, 1, 1)
        err = ((y - y64).norm() / (y64 - b).norm()).item()
        print(f"stages {stages} step {t:2d} tap ({td},{th},{tw}): error {err:.2e}", flush=True)
        if stages == 1 and t > 2:
            break

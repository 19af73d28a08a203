"""Probe: the Triton submission of specs/regress/triton_tapless_phases.yaml
under edits of its emitted source, each checked against float64.

Run on a GPU host from the repository root:
    python3 docs/perf/probes/triton_tapless.py out/regress_triton_tapless_phases [OUTDIR]
VARIANTS (comma-separated labels) picks some. Prints one line per variant: relative L2 error over all outputs, over the
outputs of phases with taps, and over the bias-only ones; with OUTDIR, the
Triton IR of every variant is copied there.
"""
import glob
import importlib.util
import os
import re
import shutil
import sys
import tempfile

import torch

folder = sys.argv[1]
outdir = sys.argv[2] if len(sys.argv) > 2 else None
src = open(os.path.join(folder, "triton." + os.environ.get("TARGET", "sm90") + ".py")).read()

LOOP = "    for step in range(steps):\n"
DECODE = """        tap = step // CI_CHUNKS
        td = tap // tl.maximum(taps_hw, 1)
        th = (tap // tl.maximum(taps_w, 1)) % tl.maximum(taps_h, 1)
        tw = tap % tl.maximum(taps_w, 1)
"""


def incremental(s):
    """The step's tap (td, th, tw) carried across iterations and advanced by
    one each step (CI_CHUNKS is 1 here), instead of divided out of step."""
    s = s.replace(LOOP, "    td = pid * 0\n    th = pid * 0\n    tw = pid * 0\n" + LOOP)
    s = s.replace(DECODE, "        tap = step // CI_CHUNKS\n")
    adv = ("        tw += 1\n        wrap_w = tw == taps_w\n        tw = tl.where(wrap_w, 0, tw)\n"
           "        th = tl.where(wrap_w, th + 1, th)\n        wrap_h = th == taps_h\n"
           "        th = tl.where(wrap_h, 0, th)\n        td = tl.where(wrap_h, td + 1, td)\n")
    return s.replace("\n\n    # ---- Epilogue", "\n" + adv + "\n    # ---- Epilogue")


def under_if(s):
    """The reduction loop inside `if steps > 0:`, its body indented."""
    head, rest = s.split(LOOP, 1)
    body, tail = rest.split("\n    # ---- Epilogue", 1)
    body = "\n".join(("    " + l) if l else l for l in body.split("\n"))
    return head + "    if steps > 0:\n    " + LOOP + body + "\n    # ---- Epilogue" + tail


VARIANTS = {
    "as emitted": lambda s: s,
    "num_stages 1": lambda s: s.replace("NUM_STAGES = 3", "NUM_STAGES = 1"),
    "num_stages 2": lambda s: s.replace("NUM_STAGES = 3", "NUM_STAGES = 2"),
    "channels first": lambda s: s.replace("CHANNELS_LAST=True", "CHANNELS_LAST=False"),
    # Steps without tl.where: every program of a phase runs its taps, rows
    # past the phase masked (m_ok already masks them).
    "steps without where": lambda s: re.sub(r"steps = tl\.where\(pid_m \* BLOCK_M < rows, (.*), 0\)\n",
                                            r"steps = \1\n", s),
    # The loop inside a branch taken only when it runs.
    "loop under if": lambda s: under_if(s),
    "tl.range": lambda s: s.replace(LOOP, "    for step in tl.range(0, steps, num_stages=NUM_STAGES):\n"),
    # Programs of tap-less phases store nothing (their outputs are then
    # garbage; only the error over the outputs with taps counts).
    "tap-less store nothing": lambda s: s.replace("    tl.store(y_ptrs, acc, mask=y_ok)\n",
                                                  "    tl.store(y_ptrs, acc, mask=y_ok & (steps > 0))\n"),
    # Every program runs the tap phase's trip count (tap-less ones compute
    # garbage; only the error over the outputs with taps counts).
    "trip count constant": lambda s: re.sub(r"steps = tl\.where\(pid_m \* BLOCK_M < rows, (.*), 0\)\n",
                                            r"steps = tl.where(pid_m * BLOCK_M < rows, 27 * CI_CHUNKS, 0)\n", s),
    # The tap phase's divisors as constants (3 taps per axis; right only
    # for programs with taps, the only outputs this variant's error counts).
    "constant divisors": lambda s: s.replace(DECODE, DECODE.replace("tl.maximum(taps_hw, 1)", "9").replace(
        "tl.maximum(taps_w, 1)", "3").replace("tl.maximum(taps_h, 1)", "3")),
    "incremental taps": incremental,
    # Every program stores ones: the outputs its stores reach.
    "store ones": lambda s: s.replace("    tl.store(y_ptrs, acc, mask=y_ok)\n",
                                      "    tl.store(y_ptrs, acc * 0 + 1, mask=y_ok)\n"),
    "block_m 64": lambda s: s.replace("BLOCK_M=128", "BLOCK_M=64").replace("M_TILES=5", "M_TILES=10").replace(
        "PROGRAMS = 405", "PROGRAMS = 810"),
}


def load(text, name):
    d = tempfile.mkdtemp()
    path = os.path.join(d, name + ".py")
    open(path, "w").write(text)
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def rel(a, b):
    return ((a - b).norm() / b.norm().clamp_min(1e-30)).item()


problem = load(open(os.path.join(folder, "problem.py")).read(), "problem")
torch.manual_seed(42)
ref = problem.Model(*problem.get_init_inputs()).cuda()
torch.manual_seed(7)
x = problem.get_inputs()[0].cuda()
conv = ref.conv_transpose3d
y64 = torch.nn.functional.conv_transpose3d(
    x.double(), conv.weight.double(), conv.bias.double(), conv.stride, conv.padding,
    conv.output_padding, conv.groups, conv.dilation)
# The outputs some tap reaches (the others hold only the bias).
tap = torch.nn.functional.conv_transpose3d(
    torch.ones_like(x.double()), torch.ones_like(conv.weight.double()), None, conv.stride, conv.padding,
    conv.output_padding, conv.groups, conv.dilation) > 0
cache = os.environ.get("TRITON_CACHE_DIR", os.path.expanduser("~/.triton/cache"))
only = os.environ.get("VARIANTS")
for i, (label, edit) in enumerate(VARIANTS.items()):
    if only and label not in only.split(","):
        continue
    text = edit(src)
    if text == src and label != "as emitted":
        print(f"{label:22s} edit did not apply")
        continue
    irs = lambda: set(glob.glob(os.path.join(cache, "*", "*.ttgir")) + glob.glob(os.path.join(cache, "*", "*.ptx")))
    before = irs()
    try:
        mod = load(text, f"variant{i}")
        torch.manual_seed(42)
        m = mod.Model(*problem.get_init_inputs()).cuda()
        # Poison the memory the output will take (the caching allocator
        # hands the freed block back): an output never written stays NaN.
        torch.full(tuple(y64.shape), float("nan"), device="cuda")
        y = m(x).double()
        torch.cuda.synchronize()
        d, b = (y - y64)[tap], (y64 - conv.bias.double().view(1, -1, 1, 1, 1).expand_as(y64))[tap]
        fit = ((d * b).sum() / (b * b).sum()).item()  # y - y64 = fit * (y64 - bias) + rest on the tap outputs
        print(f"{label:22s} fit {fit:+.3f} rest {rel(d - fit * b, b):.2e} ", end="")
        print(f"{label:22s} all {rel(y, y64):.2e}  taps {rel(y[tap], y64[tap]):.2e}  "
              f"bias-only {rel(y[~tap], y64[~tap]):.2e}  nan {torch.isnan(y).sum().item()} "
              f"(taps {torch.isnan(y[tap]).sum().item()} of {tap.sum().item()}), ones {(y == 1).sum().item()}")
    except Exception as e:  # a probe reports, it does not stop
        print(f"{label:22s} failed: {type(e).__name__}: {str(e)[:200]}")
    if outdir:
        for f in irs() - before:
            shutil.copy(f, os.path.join(outdir, f"{os.path.basename(folder)}-v{i}-" + os.path.basename(f)))

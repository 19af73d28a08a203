"""Probe: the root cause of the wrong sums of specs/regress/triton_tapless_phases.yaml
under Triton's software pipelining (channels last, 3xtf32, tap-less phases).

Run on a GPU host (python3 with torch and triton, no Go):
    python3 docs/perf/probes/triton_rootcause.py out/regress_triton_tapless_phases/triton.py SUMMARY [IRDIR]

Every variant is the emitted file with its text edited (one hypothesis or one
candidate fix each, at NUM_STAGES 3 unless its name says otherwise), run on the
same input and weights, and compared with torch's float64 conv_transpose3d:
relative L2 over all outputs and over the outputs some tap reaches. A variant
that does not apply, compile or run is reported, never fatal. SUMMARY gets one
line per variant first (name, errors, verdict), then the diagnostics: for the
3-stage and 1-stage kernels, the input value each tap-phase output actually
multiplied with each tap's weights (recovered by least squares from runs that
keep one tap's weights) and where in the input that value sits, against
where it should. With IRDIR, the TTGIR, LLIR and PTX of the variants named in
DUMP (comma-separated, env; default the controls) are written there.
"""
import glob
import importlib.util
import os
import re
import sys
import tempfile
import time
import traceback

import torch
import torch.nn.functional as F

T0 = time.time()
path = sys.argv[1]
if os.path.isdir(path):
    path = os.path.join(path, "triton.py")
summary_path = sys.argv[2]
irdir = sys.argv[3] if len(sys.argv) > 3 else None
SRC = open(path).read()
lines = []  # the summary's variant lines
notes = []  # the diagnostics after them


def say(s, to=None):
    print(s, flush=True)
    (lines if to is None else to).append(s)


# ---- The problem, from the emitted file's constants ----------------------------
def consts(name):
    m = re.search(r"^" + name + r" = dict\((.*?)\n\)", SRC, re.S | re.M)
    return {k: eval(v) for k, v in re.findall(r"(\w+)=([^,\n]+)", m.group(1))}


P = consts("PROBLEM")
TL = consts("TILING")
IN_SHAPE = eval(re.search(r"^INPUT_SHAPE = (\(.*?\))", SRC, re.M).group(1))
W_SHAPE = eval(re.search(r"^WEIGHT_SHAPE = (\(.*?\))", SRC, re.M).group(1))
HAS_BIAS = "BIAS_SHAPE = (" in SRC
STRIDE = (P["STRIDE_D"], P["STRIDE_H"], P["STRIDE_W"])
PAD = (P["PAD_D"], P["PAD_H"], P["PAD_W"])
DIL = (P["DIL_D"], P["DIL_H"], P["DIL_W"])
KS = (P["K_D"], P["K_H"], P["K_W"])
GROUPS = P["C_IN"] // P["C_IN_G"]
CIG, COG = P["C_IN_G"], P["C_OUT_G"]
name = re.search(r"^def (\w+)_phase_igemm\(", SRC, re.M).group(1)

dev = "cuda"
g = torch.Generator().manual_seed(42)
X = torch.randn(IN_SHAPE, generator=g).to(dev)
W = (torch.randn(W_SHAPE, generator=g) * 0.2).to(dev)
B = torch.randn(W_SHAPE[1] * GROUPS, generator=g).to(dev) if HAS_BIAS else None


def ref64(w, b):
    return F.conv_transpose3d(X.double(), w.double(), None if b is None else b.double(), STRIDE, PAD, 0, GROUPS, DIL)


Y64 = ref64(W, B)
TAP = F.conv_transpose3d(torch.ones_like(X, dtype=torch.float64), torch.ones_like(W, dtype=torch.float64), None,
                         STRIDE, PAD, 0, GROUPS, DIL) > 0


def rel(a, b):
    return ((a - b).norm() / b.norm().clamp_min(1e-30)).item()


# ---- Edits ------------------------------------------------------------------------
class NoEdit(Exception):
    pass


def sub(s, old, new, count=1):
    """Replace old (a literal) by new; a missing old is an edit that did not apply."""
    if old not in s:
        raise NoEdit(repr(old[:70]))
    return s.replace(old, new, count)


def resub(s, pat, new):
    t, n = re.subn(pat, new, s, flags=re.M)
    if n == 0:
        raise NoEdit(pat[:70])
    return t


def stages(n):
    return lambda s: resub(s, r"^NUM_STAGES = \d+", f"NUM_STAGES = {n}")


S3 = stages(3)


def chain(*fs):
    def f(s):
        for e in fs:
            s = e(s)
        return s
    return f


def precision(p):
    return lambda s: sub(s, 'input_precision="tf32x3"', f'input_precision="{p}"')


def tap_residues():
    """Per dimension, the residues some tap reaches."""
    out = []
    for k, st, pd, dl in zip(KS, STRIDE, PAD, DIL):
        out.append([r for r in range(st) if any((r + pd - j * dl) % st == 0 for j in range(k))])
    return out


def residue_const(s):
    """Every program computes the (single) tap phase: r constant. Tests whether
    the runtime phase (r from pid % NUM_PHASES) matters. Only the tap outputs'
    error counts (the bias-only ones are never written)."""
    rd, rh, rw = (r[0] for r in tap_residues())
    s = sub(s, "    r_d = phase // (STRIDE_H * R_W)\n", f"    r_d = phase * 0 + {rd}\n")
    s = sub(s, "    r_h = (phase // R_W) % STRIDE_H\n", f"    r_h = phase * 0 + {rh}\n")
    return sub(s, "    r_w = phase % R_W  # the first of the program's W residues\n", f"    r_w = phase * 0 + {rw}\n")


def residue_constexpr(s):
    """As residue_const, with r plain Python ints (tl.constexpr): the whole
    phase (taps, extents, offsets) folds to constants, like a 1-phase problem."""
    rd, rh, rw = (r[0] for r in tap_residues())
    s = sub(s, "    r_d = phase // (STRIDE_H * R_W)\n", f"    r_d = {rd}\n")
    s = sub(s, "    r_h = (phase // R_W) % STRIDE_H\n", f"    r_h = {rh}\n")
    return sub(s, "    r_w = phase % R_W  # the first of the program's W residues\n", f"    r_w = {rw}\n")


# The input inside 2048 zeros each side, so that unmasked reads stay in the buffer.
PAD_ALLOC = ("    xk = torch.empty(X_SHAPE, device=x.device, dtype=torch.float32)\n",
             "    xk = torch.zeros(torch.Size(X_SHAPE).numel() + 4096, device=x.device)[2048:-2048].view(X_SHAPE)\n")
PAD_W = ("    wt = torch.empty(WEIGHT_RELAID, device=x.device, dtype=torch.float32)\n",
         "    wt = torch.zeros(wt_len := torch.Size(WEIGHT_RELAID).numel() + 4096, device=x.device)[:wt_len - 4096].view(WEIGHT_RELAID)\n")
A_MASK = "            a = tl.load(a_ptrs, mask=inside[:, None] & ci_ok[None, :], other=0.0)\n"
B_MASK = "        b_mask = ci_ok[:, None] & b_ok[None, :]\n"
DOT = '        acc += tl.dot(a, b, input_precision="tf32x3")  # [BLOCK_M, BLOCK_N], from zero\n'
LOOP = "    for step in range(steps):\n"


def a_rows_only(s):
    """A masked by rows only (its padded channels read neighbours; B's zero rows
    cancel them): the A mask constant along K over the whole block."""
    s = sub(s, *PAD_ALLOC)
    return sub(s, A_MASK, "            a = tl.load(a_ptrs, mask=inside[:, None], other=0.0)\n")


def b_cols_only(s):
    """B masked by columns only (A's zero channels cancel the extra rows)."""
    s = sub(s, *PAD_W)
    return sub(s, B_MASK, "        b_mask = tl.broadcast_to(b_ok[None, :], (BLOCK_K, BLOCK_N))\n")


def no_inside(s):
    """A masked only by its channels: rows outside the input read whatever is
    there (a padded buffer; wrong sums), to see whether the row mask matters."""
    s = sub(s, *PAD_ALLOC)
    return sub(s, A_MASK, "            a = tl.load(a_ptrs, mask=(inside | True)[:, None] & ci_ok[None, :], other=0.0)\n")


def a_where(s):
    """A loaded unmasked along rows where in bounds and zeroed after the load by
    tl.where (the mask then is no part of the async copy)."""
    s = sub(s, *PAD_ALLOC)
    return sub(s, A_MASK, "            a = tl.load(a_ptrs, mask=ci_ok[None, :], other=0.0)\n"
                          "            a = tl.where(inside[:, None], a, 0.0)\n")


INSIDE = """            inside = (m_ok & (qd + off_d >= 0) & (qd + off_d < IN_D) & (qh + off_h >= 0) & (qh + off_h < IN_H)
                      & (iw + off_w >= 0) & (iw + off_w < IN_W))  # [BLOCK_M]; outside reads zero
"""
TERMS = {"m": "m_ok", "d": "(qd + off_d >= 0) & (qd + off_d < IN_D)", "h": "(qh + off_h >= 0) & (qh + off_h < IN_H)",
         "w": "(iw + off_w >= 0) & (iw + off_w < IN_W)"}


def split_mask(in_load):
    """The row mask's terms in in_load stay in the load's mask, the others zero
    the loaded rows by tl.where after it (reads they no longer guard stay in the
    padded buffer)."""
    def f(s):
        s = sub(s, *PAD_ALLOC)
        s = sub(s, INSIDE, INSIDE + "            in_load = (" + " & ".join(TERMS[t] for t in in_load) + ")\n"
                "            in_rest = (" + " & ".join(TERMS[t] for t in "mdhw" if t not in in_load) + ")\n")
        return sub(s, A_MASK, "            a = tl.load(a_ptrs, mask=in_load[:, None] & ci_ok[None, :], other=0.0)\n"
                              "            a = tl.where(in_rest[:, None], a, 0.0)\n")
    return f


def one_residue_const(dim):
    """Only one dimension's residue constant (its taps then fold)."""
    def f(s):
        r = tap_residues()["dhw".index(dim)][0]
        line = {"d": "    r_d = phase // (STRIDE_H * R_W)\n", "h": "    r_h = (phase // R_W) % STRIDE_H\n",
                "w": "    r_w = phase % R_W  # the first of the program's W residues\n"}[dim]
        return sub(s, line, f"    r_{dim} = phase * 0 + {r}\n")
    return f


def a_clamped(s):
    """Candidate fix: the row mask leaves the async copy: rows outside read
    the group's first input row (in bounds: offset 0 along the rows) under the
    channel mask alone, and tl.where zeroes them after the load."""
    return sub(s, A_MASK, "            a = tl.load(x_ptr + tl.where(inside, x_row + ((off_d * X_H + off_h) * X_W + off_w) * X_POS, 0)[:, None]"
                          " + (ci * X_CH)[None, :], mask=ci_ok[None, :], other=0.0)\n"
                          "            a = tl.where(inside[:, None], a, 0.0)\n")


def dot_swapped(s):
    """The product transposed: acc^T = b^T a^T (b in registers, a from shared
    memory), another MMA shape."""
    return sub(s, DOT, '        acc += tl.trans(tl.dot(tl.trans(b), tl.trans(a), input_precision="tf32x3"))\n')


def dot_fma(s):
    """No tensor cores: the product as a broadcast multiply and sum."""
    return sub(s, DOT, "        acc += tl.sum(a[:, :, None] * b[None, :, :], axis=1)\n")


def split_manual(s):
    """3xTF32 written out: each operand split into a TF32-rounded high part and
    the rest, three tf32 dots (what input_precision="tf32x3" lowers to)."""
    body = ("        a_hi = a.to(tl.float32).to(tl.int32, bitcast=True)\n"
            "        a_hi = ((a_hi + 0x1000) & -8192).to(tl.float32, bitcast=True)\n"
            "        b_hi = ((b.to(tl.int32, bitcast=True) + 0x1000) & -8192).to(tl.float32, bitcast=True)\n"
            '        part = tl.dot(a - a_hi, b_hi, input_precision="tf32")\n'
            '        part = tl.dot(a_hi, b - b_hi, part, input_precision="tf32")\n'
            '        acc += tl.dot(a_hi, b_hi, part, input_precision="tf32")\n')
    return sub(s, DOT, body)


def tl_range(n):
    return lambda s: sub(s, LOOP, f"    for step in tl.range(steps, num_stages={n}):\n")


def tl_range_flat(s):
    return sub(s, LOOP, "    for step in tl.range(steps, flatten=False, warp_specialize=False):\n")


def trip_upper(s):
    """The loop runs the largest trip count every program (a constant) and
    masks the steps past its own: the pipeliner sees a constant trip count."""
    s = sub(s, LOOP, "    for step in range(TRIP):\n")
    s = sub(s, "        ci_ok = ci < C_IN_G\n", "        ci_ok = (ci < C_IN_G) & (step < steps)\n")
    trip = KS[0] * KS[1] * KS[2] * TL["CI_CHUNKS"]
    return sub(s, "    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)\n",
               f"    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)\n    TRIP: tl.constexpr = {trip}\n")


def block_k(n):
    return lambda s: resub(s, r"BLOCK_K=\d+", f"BLOCK_K={n}")


def warps(n):
    return lambda s: resub(s, r"^NUM_WARPS = \d+", f"NUM_WARPS = {n}")


VARIANTS = [
    # name, edit, expectation (right/wrong/?), what it tests
    ("s1 (control)", stages(1), "right", "1 stage: no pipelining"),
    ("s3 (control)", S3, "wrong", "as emitted at 3 stages"),
    ("s2", stages(2), "wrong", "2 stages"),
    ("s3 tf32", chain(S3, precision("tf32")), "?", "one tf32 product (error 1e-3 when right)"),
    ("s3 ieee", chain(S3, precision("ieee")), "?", "fp32 FMA dot: no wgmma"),
    ("s3 fma", chain(S3, dot_fma), "?", "no tl.dot at all"),
    ("s3 split manual", chain(S3, split_manual), "?", "3xtf32 written out"),
    ("s3 dot swapped", chain(S3, dot_swapped), "?", "acc^T = b^T a^T"),
    ("s3 r const", chain(S3, residue_const), "?", "phase residue a runtime constant expression"),
    ("s3 r constexpr", chain(S3, residue_constexpr), "?", "phase folded to constants"),
    ("s3 A rows-only mask", chain(S3, a_rows_only), "?", "A mask constant along K"),
    ("s3 B cols-only mask", chain(S3, b_cols_only), "?", "B mask constant along K"),
    ("s3 A where", chain(S3, a_where), "?", "A rows zeroed after the load"),
    ("s3 A no row mask", chain(S3, no_inside), "wrong", "rows outside read (wrong by design)"),
    ("s3 A clamped", chain(S3, a_clamped), "?", "row mask out of the copy, rows clamped and zeroed"),
    ("s3 load m", chain(S3, split_mask("m")), "?", "only m_ok in the load mask"),
    ("s3 load d", chain(S3, split_mask("d")), "?", "only the D bounds in the load mask"),
    ("s3 load h", chain(S3, split_mask("h")), "?", "only the H bounds in the load mask"),
    ("s3 load w", chain(S3, split_mask("w")), "?", "only the W bounds in the load mask"),
    ("s3 load dhw", chain(S3, split_mask("dhw")), "?", "bounds in the load mask, m_ok after"),
    ("s3 r_d const", chain(S3, one_residue_const("d")), "?", "r_d constant"),
    ("s3 r_h const", chain(S3, one_residue_const("h")), "?", "r_h constant"),
    ("s3 r_w const", chain(S3, one_residue_const("w")), "?", "r_w constant"),
    ("s3 trip const", chain(S3, trip_upper), "?", "constant trip count, steps masked"),
    ("s3 tl.range", chain(S3, tl_range(3)), "?", "tl.range(num_stages=3)"),
    ("s3 bk32", chain(S3, block_k(32)), "wrong", "BLOCK_K 32"),
    ("s3 warps8", chain(S3, warps(8)), "?", "8 warps"),
]



def opaque_phase(s):
    """Candidate fix: the phase index through an identity inline asm, so that
    LLVM knows no range for it: the phase arithmetic (residues, first taps,
    offsets) stays 32-bit instead of being narrowed to i8 and packed two to a
    register (add.s16x2 with an undefined half), the code ptxas gets wrong."""
    return sub(s, "    phase = pid % NUM_PHASES\n",
               "    phase = tl.inline_asm_elementwise(\"mov.b32 $0, $1;\", \"=r,r\", [pid % NUM_PHASES], dtype=tl.int32,\n"
               "                                      is_pure=True, pack=1)\n")


# Candidate fixes under test.
FIXES = [
    ("s3 fix opaque phase", chain(S3, opaque_phase), "right", "phase range hidden from LLVM"),
]


def load(text, tag):
    d = tempfile.mkdtemp(prefix="rc_")
    os.environ["TRITON_CACHE_DIR"] = os.path.join(d, "cache")
    p = os.path.join(d, tag + ".py")
    open(p, "w").write(text)
    spec = importlib.util.spec_from_file_location(tag, p)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod, d


def forward(mod, w, b):
    bb = b if b is not None else torch.zeros(W_SHAPE[1] * GROUPS, device=dev)
    # Poison the memory the output will take: an output never written stays NaN.
    torch.full(tuple(Y64.shape), float("nan"), device=dev)
    y = mod.implicit_gemm_forward(X, w, bb)
    torch.cuda.synchronize()
    return y.double()


def dump_ir(mod, d, tag):
    if not irdir:
        return
    os.makedirs(irdir, exist_ok=True)
    safe = re.sub(r"[^A-Za-z0-9]+", "_", tag).strip("_")
    n = 0
    for f in glob.glob(os.path.join(d, "cache", "*", "*")):
        if f.endswith((".ttgir", ".ttir", ".llir", ".ptx", ".cubin")):
            base = os.path.basename(f)
            kind = "relayout" if "relayout" in base else "igemm"
            open(os.path.join(irdir, f"{safe}.{kind}{os.path.splitext(base)[1]}"), "wb").write(open(f, "rb").read())
            n += 1
    if n == 0:
        notes.append(f"{tag}: no IR found in the variant's cache dir")


DUMP = set(os.environ.get("DUMP", "s1 (control),s3 (control)").split(","))
ONLY = os.environ.get("VARIANTS")
mods = {}
say(f"# {os.path.basename(path)}: torch {torch.__version__}, triton {__import__('triton').__version__}, "
    f"{torch.cuda.get_device_name()}; errors are relative L2 vs float64: all outputs / tap outputs")
for i, (vname, edit, expect, what) in enumerate(VARIANTS + FIXES):
    if ONLY and vname not in ONLY.split(","):
        continue
    if time.time() - T0 > 110:
        say(f"{vname:24s} skipped: time budget")
        continue
    try:
        text = edit(SRC)
    except NoEdit as e:
        say(f"{vname:24s} edit did not apply: {e}")
        continue
    try:
        mod, d = load(text, f"v{i}")
        y = forward(mod, W, B)
        nan = torch.isnan(y[TAP]).sum().item()
        ea, et = rel(y, Y64), rel(y[TAP], Y64[TAP])
        verdict = "right" if et < 1e-5 else ("right@tf32" if et < 5e-3 else "WRONG")
        say(f"{vname:24s} all {ea:.2e} taps {et:.2e} nan(taps) {nan:5d}  {verdict:10s} "
            f"(expect {expect}; {what})")
        mods[vname] = mod
        if vname in DUMP:
            dump_ir(mod, d, vname)
    except Exception as e:  # a probe reports, it does not stop
        msg = str(e).strip().splitlines()
        say(f"{vname:24s} failed: {type(e).__name__}: {(msg[-1] if msg else '')[:160]}")
        notes.append(f"{vname}: " + traceback.format_exc()[-1500:])
        if "CUDA" in str(e) and "illegal" in str(e):
            say("CUDA context lost: stopping")
            break


# ---- The PTX with its undefined 16-bit halves defined ----------------------------
def define_halves(ptx):
    """Give every 16-bit register that is used but never written a value (0)
    at the top of the kernel. In PTX those halves are don't-cares of packed
    moves ({%rsA, %rsB}); the result must not change if ptxas is right."""
    defs = set(re.findall(r"^\s*[a-z][\w.]*\s+(%rs\d+)\b", ptx, re.M))
    for grp in re.findall(r"\{([^}]*)\},\s*%r\d+", ptx):  # unpacking moves define their halves
        defs.update(re.findall(r"%rs\d+", grp))
    used = set(re.findall(r"%rs\d+", ptx))
    undef = sorted(used - defs, key=lambda r: int(r[3:]))
    decl = list(re.finditer(r"^\s*\.reg .*;\n", ptx, re.M))
    at = decl[-1].end()
    return ptx[:at] + "".join(f"\tmov.b16 \t{r}, 0;\n" for r in undef) + ptx[at:], undef


def ptx_override_run():
    """Compile the 3-stage file with its kernels dumped, patch the GEMM's PTX
    (define_halves), and run it again through TRITON_KERNEL_OVERRIDE."""
    text = S3(SRC)
    dump = tempfile.mkdtemp(prefix="rc_dump_")
    os.environ["TRITON_KERNEL_DUMP"] = "1"
    os.environ["TRITON_DUMP_DIR"] = dump
    try:
        mod, _ = load(text, "ptxdump")
        y = forward(mod, W, B)
    finally:
        os.environ.pop("TRITON_KERNEL_DUMP", None)
    ptxs = [f for f in glob.glob(os.path.join(dump, "*", "*.ptx")) if "phase_igemm" in f]
    if not ptxs:
        return f"ptx override: no dumped GEMM PTX under {dump}"
    over = tempfile.mkdtemp(prefix="rc_over_")
    undef = []
    for f in glob.glob(os.path.join(dump, "*", "*")):
        sub_dir = os.path.join(over, os.path.basename(os.path.dirname(f)))
        os.makedirs(sub_dir, exist_ok=True)
        if f in ptxs:
            patched, undef = define_halves(open(f).read())
            open(os.path.join(sub_dir, os.path.basename(f)), "w").write(patched)
            if irdir:
                open(os.path.join(irdir, "s3_patched.igemm.ptx"), "w").write(patched)
    os.environ["TRITON_KERNEL_OVERRIDE"] = "1"
    os.environ["TRITON_OVERRIDE_DIR"] = over
    try:
        mod2, _ = load(text, "ptxover")
        y2 = forward(mod2, W, B)
    finally:
        os.environ.pop("TRITON_KERNEL_OVERRIDE", None)
    return (f"s3 PTX as compiled: taps {rel(y[TAP], Y64[TAP]):.2e}; the same PTX with its {len(undef)} undefined "
            f"16-bit halves ({' '.join(undef)}) set to 0 by mov.b16: taps {rel(y2[TAP], Y64[TAP]):.2e}")


try:
    if time.time() - T0 < 120:
        m = ptx_override_run()
        say(m)
except Exception:
    say("ptx override failed: " + traceback.format_exc()[-600:].replace("\n", " | "))


# ---- Diagnostics: what each tap-phase output actually multiplied -----------------
def recover(mod, label, max_steps=None):
    """Keep one tap's weights at a time; solve y = W_tap^T a per output for a
    (C_IN_G values, least squares over C_OUT_G >= C_IN_G outputs), and look that
    value up in the input: the offset from the input index the tap should read."""
    if COG < CIG:
        notes.append(f"{label}: recovery needs C_OUT_G >= C_IN_G")
        return
    taps = [(a, b_, c) for a in range(KS[0]) for b_ in range(KS[1]) for c in range(KS[2])]
    xs = X.double().flatten().cpu()
    order = torch.sort(xs)
    out = []
    for t, (kd, kh, kw) in enumerate(taps[:max_steps]):
        w = torch.zeros_like(W)
        w[:, :, kd, kh, kw] = W[:, :, kd, kh, kw]
        y = forward(mod, w, None).cpu()
        y0 = ref64(w, None).cpu()
        # Outputs this tap reaches with an input index inside the input.
        n_, c_, D, H, Wd = y.shape
        od = torch.arange(D).view(-1, 1, 1)
        oh = torch.arange(H).view(1, -1, 1)
        ow = torch.arange(Wd).view(1, 1, -1)
        idx = []
        ok = torch.ones(D, H, Wd, dtype=torch.bool)
        hit = torch.ones(D, H, Wd, dtype=torch.bool)
        for o, k, st, pd, dl, lim in zip((od, oh, ow), (kd, kh, kw), STRIDE, PAD, DIL, IN_SHAPE[2:]):
            num = o + pd - k * dl
            hit = hit & (num % st == 0)
            ok = ok & (num % st == 0) & (num // st >= 0) & (num // st < lim)
            idx.append(num // st)
        # Outputs of the tap's phase whose input index is outside: must stay 0.
        outside = hit & ~ok
        stray = (y[:, :, outside].abs() > 1e-6).sum().item()
        if ok.sum() == 0:
            continue
        pos = ok.nonzero()  # [P, 3] output positions (d, h, w)
        tally = {}
        worst = 0.0
        for grp in range(GROUPS):
            Wt = w[grp * CIG:(grp + 1) * CIG, :, kd, kh, kw].double().cpu()  # [CIG, COG]
            pinv = torch.linalg.pinv(Wt.T)  # [CIG, COG]
            ys = y[:, grp * COG:(grp + 1) * COG][:, :, pos[:, 0], pos[:, 1], pos[:, 2]]  # [N, COG, P]
            a = torch.einsum("ij,njp->nip", pinv, ys)  # [N, CIG, P] recovered inputs
            resid = (torch.einsum("ji,nip->njp", Wt.T, a) - ys).abs().max().item()
            worst = max(worst, resid)
            for nb in range(n_):
                for ci in range(CIG):
                    vals = a[nb, ci]
                    # Expected input index of each position.
                    ed = idx[0].expand(D, H, Wd)[pos[:, 0], pos[:, 1], pos[:, 2]]
                    eh = idx[1].expand(D, H, Wd)[pos[:, 0], pos[:, 1], pos[:, 2]]
                    ew = idx[2].expand(D, H, Wd)[pos[:, 0], pos[:, 1], pos[:, 2]]
                    j = torch.searchsorted(order.values, vals).clamp(1, xs.numel() - 1)
                    lo, hi = order.values[j - 1], order.values[j]
                    pick = torch.where((vals - lo).abs() < (hi - vals).abs(), j - 1, j)
                    src = order.indices[pick]
                    err = (xs[src] - vals).abs() / vals.abs().clamp_min(1e-3)
                    zero = vals.abs() < 1e-6
                    sw = src % IN_SHAPE[4]
                    sh = src // IN_SHAPE[4] % IN_SHAPE[3]
                    sd = src // (IN_SHAPE[4] * IN_SHAPE[3]) % IN_SHAPE[2]
                    sc = src // (IN_SHAPE[4] * IN_SHAPE[3] * IN_SHAPE[2]) % IN_SHAPE[1]
                    sn = src // (IN_SHAPE[4] * IN_SHAPE[3] * IN_SHAPE[2] * IN_SHAPE[1])
                    rows = zip(zero.tolist(), err.tolist(), (sn - nb).tolist(), (sc - (grp * CIG + ci)).tolist(),
                               (sd - ed).tolist(), (sh - eh).tolist(), (sw - ew).tolist())
                    for z, er, *key in rows:
                        if z:
                            key = "zero"
                        elif er > 1e-4:
                            key = "no match"
                        else:
                            key = tuple(key)
                            key = "exact" if key == (0, 0, 0, 0, 0) else "off " + str(key)
                        tally[key] = tally.get(key, 0) + 1
        top = sorted(tally.items(), key=lambda kv: -kv[1])[:5]
        e = rel(y[:, :, pos[:, 0], pos[:, 1], pos[:, 2]], y0[:, :, pos[:, 0], pos[:, 1], pos[:, 2]])
        out.append(f"{label} tap {t:2d} ({kd},{kh},{kw}): err {e:.1e} fit-resid {worst:.1e} "
                   f"nonzero-outside {stray}/{outside.sum().item() * n_ * c_}; " +
                   ", ".join(f"{k}: {v}" for k, v in top))
    return out


def by_row(mod, label):
    """Which GEMM rows of the tap phase come out wrong: error per output row
    block of BLOCK_M rows and per position class along each axis."""
    y = forward(mod, W, B)
    bad = ((y - Y64).abs() > 1e-4 * Y64.abs().max()) & TAP
    res = []
    for ax, nm in ((2, "d"), (3, "h"), (4, "w")):
        dims = [d for d in (0, 1, 2, 3, 4) if d != ax]
        cnt = bad.sum(dim=dims).tolist()
        tot = TAP.sum(dim=dims).tolist()
        res.append(f"{label} wrong tap outputs by o{nm}: " + " ".join(f"{c}/{t}" for c, t in zip(cnt, tot) if t))
    res.append(f"{label} wrong tap outputs by channel: " + " ".join(
        f"{c}/{t}" for c, t in zip(bad.sum(dim=(0, 2, 3, 4)).tolist(), TAP.sum(dim=(0, 2, 3, 4)).tolist())))
    res.append(f"{label} wrong tap outputs by batch: " + " ".join(
        f"{c}/{t}" for c, t in zip(bad.sum(dim=(1, 2, 3, 4)).tolist(), TAP.sum(dim=(1, 2, 3, 4)).tolist())))
    return res


for label in ("s3 (control)", "s1 (control)"):
    if label not in mods:
        continue
    if time.time() - T0 > 135:
        notes.append(f"{label}: diagnostics skipped (time)")
        continue
    try:
        notes.extend(by_row(mods[label], label))
        notes.extend(recover(mods[label], label, None if label.startswith("s3") else 3) or [])
    except Exception:
        notes.append(f"{label} diagnostics failed: " + traceback.format_exc()[-1500:])

notes.append(f"elapsed {time.time() - T0:.0f} s")
with open(summary_path, "w") as f:
    f.write("\n".join(lines) + "\n\n" + "\n".join(notes) + "\n")
print("\n".join(notes))

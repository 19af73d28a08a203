"""Probe, not a generated submission: hand-edited copies of an emitted CUDA
submission, to bisect what sets its kernel's time one change at a time
before the change goes into a template.

  python3 docs/perf/probes/variants.py out/l1_61_square_input_square_kernel /tmp/var base minb3
  python3 docs/perf/probes/variants.py out/l1_70_asymmetric_input_square_kernel /tmp/var early+span16
  python3 docs/perf/probes/variants.py out/l1_77_padded_dilated_strided /tmp/var base prologue
  python3 docs/perf/probes/profile.py /tmp/var/*

writes one folder per named variant (its cuda.sm90.py edited: the edits
target the sm_90a code; its extension renamed, problem.py beside it); a
name joined by + applies each edit in turn. A variant whose edit finds nothing to replace is an error: a stale
edit must not pass for a measurement.
"""
import os
import re
import shutil
import sys

# The wgmma step's A loads, issued after the products are waited for (as
# emitted) or right after they are committed, so that the loads fly while
# the tensor cores work (their registers then live beside the A parts).
_LOAD_AFTER = "            if (!kStageA && s + 1 < P.steps) load_a(s + 1);\n        }\n        if (!active) continue;"
_COMMIT = "            wgmma_commit();\n"

# The wgmma GEMM's own store of an output (a tile without kw_in_n).
_STORE = "                    y[yb[sl][r] + (idx_t)co * kOutDHW] = acc[sl][e];"

# #77's bias fill launch, and its tap-less lines written from the GEMM
# (the bias is zero): line j of a block's share at step s.
_FILL77_LAUNCH = "    l1_77_padded_dilated_strided_fill_bias<<<139425, 256>>>(nullptr, (float*)y.data_ptr());\n"


def _fill77(line, count, cs=False, sweep=False):
    """Lines of #77's fill from the GEMM: a block's 409 consecutive lines
    (or with sweep, line ((s * 4096 + block) * 16 + warp * 4 + i), so that
    the blocks resident together write neighbouring lines); cs: streaming
    stores (evict first), which leave the input's lines in L2."""
    first = "j = " + ("(s * 4096 + blockIdx.x) * 16 + warp * 4 + i" if sweep else f"blockIdx.x * 409 + jj")
    cond = "j < 16 * 64 * 1633" if sweep else "jj < 409 && j < 16 * 64 * 1633"
    st = (lambda at: f"__stcs(o + {at}, 0.0f);") if cs else (lambda at: f"o[{at}] = 0.0f;")
    return f"""            #pragma unroll
            for (int i = 0; i < {count}; ++i) {{
                const int jj = {line}, {first};
                if ({cond}) {{
                    const int vol = j / 1633;
                    int k = j - vol * 1633, d, h;
                    if (k < 1105) {{ d = 2 * (k / 65); h = k - k / 65 * 65; }}
                    else {{ k -= 1105; d = 2 * (k / 33) + 1; h = 2 * (k - k / 33 * 33); }}
                    float* o = y + (vol * 33 + d) * kOutHW + h * 65;
                    const int lane = tid % 32;
                    {st("lane")}
                    {st("lane + 32")}
                    if (lane == 0) {st("64")}
                }}
            }}
"""


VARIANTS = {
    "base": [],
    "nominb": [("__launch_bounds__(128, 1)", "__launch_bounds__(128)")],
    "minb2": [("__launch_bounds__(128, 1)", "__launch_bounds__(128, 2)")],
    "minb3": [("__launch_bounds__(128, 1)", "__launch_bounds__(128, 3)")],
    "wide": [("typedef int idx_t;", "typedef long long idx_t;")],
    "early": [
        (_LOAD_AFTER, "#if !defined(__CUDA_ARCH_FEAT_SM90_ALL)\n" + _LOAD_AFTER.replace("\n        }", "\n#endif\n        }", 1)),
        (_COMMIT, _COMMIT + "            if (!kStageA && s + 1 < P.steps) load_a(s + 1);\n"),
    ],
    # kw_in_n's epilogue without its output loop, and with the loop but
    # without its global stores (wrong output: the time alone).
    "noepi": [("for (int base = 0; base < kOutSlots; base += kSlotsPerPass) {", "for (int base = 0; base < 0; base += kSlotsPerPass) {")],
    "nostorekw": [("                out[(idx_t)c * kOutDHW] = sum;", "                if (sum == 1234.5f) out[0] = 0.0f;")],
    # kw_in_n without its GEMM's products (wrong output: the rest's time).
    "noproducts": [("            const unsigned long long desc = wgmma_desc(stage);\n            wgmma_fence();",
                    "            const unsigned long long desc = wgmma_desc(stage);\n            wgmma_fence();\n            if (kTotalSteps > 0) continue;")],
    "span16": [("static constexpr int kSpan = 4;", "static constexpr int kSpan = 16;")],
    # #70's tap offsets computed, not read from constant memory (#70 only).
    # "pdl": see pdl() below.
    "tap70": [("const idx_t off = live ? ch + kTapTable[P.tap_start + tap * kKW + kKW - 1].off : 0;",
               "const idx_t off = live ? ch - (idx_t)((tap / 3) * 480000 + (tap % 3) * 4800 + 96) : 0;")],
    # Wrong outputs, the time alone: the GEMM without its stores, and with
    # them packed (each channel's rows of a block and phase contiguous, in
    # whole sectors; wrapped within the first batch's outputs).
    "nostore": [(_STORE, "                    if (acc[sl][e] == 1234.5f) y[0] = 0.0f;")],
    "packed": [(_STORE, """                    y[((((idx_t)blockIdx.x * kNumPhases + ph) * kNP + co) * kRows + sl * 64 + warp * 16 + g + 8 * r)
                      % ((idx_t)kCout * kOutDHW)] = acc[sl][e];""")],
    # #77 only (the bias is zero, odd outputs the GEMM's): the GEMM also
    # writes the even W neighbour before each of its outputs (and after the
    # line's last), so that its lines are written whole.
    "wbox77": [(_STORE,
                """                {
                    float* o = y + yb[sl][r] + (idx_t)co * kOutDHW;
                    o[-1] = 0.0f;
                    *o = acc[sl][e];
                    if (yb[sl][r] % kOutW == kOutW - 2) o[1] = 0.0f;
                }""")],
    # #77 only (result() stores, the tile as emitted since v29): wbox77's
    # even W neighbours.
    "wbox77r": [("                    y[yb[sl][r] + (idx_t)co * kOutDHW] = result(sl, e);",
                 """                {
                    float* o = y + yb[sl][r] + (idx_t)co * kOutDHW;
                    o[-1] = 0.0f;
                    *o = result(sl, e);
                    if (yb[sl][r] % kOutW == kOutW - 2) o[1] = 0.0f;
                }""")],
    # #77 only, with wbox77r: no fill kernel; the GEMM's blocks write the
    # tap-less lines (an even depth or height: 1633 a (batch, channel)
    # volume), 409 lines a block, 4 a warp each step, while its products
    # run (between commit and wait), a warp a line in three stores.
    "fillin77": [(_FILL77_LAUNCH, ""), (_COMMIT, _COMMIT + _fill77("s * 16 + warp * 4 + i", 4))],
    "fillin77cs": [(_FILL77_LAUNCH, ""), (_COMMIT, _COMMIT + _fill77("s * 16 + warp * 4 + i", 4, cs=True))],
    "fillsweep77": [(_FILL77_LAUNCH, ""), (_COMMIT, _COMMIT + _fill77("0", 4, sweep=True))],
    "fillsweep77cs": [(_FILL77_LAUNCH, ""), (_COMMIT, _COMMIT + _fill77("0", 4, cs=True, sweep=True))],
    # #77 only: every 32-byte sector written whole by one kernel. The fill
    # writes the sectors that touch no GEMM line (an odd depth and height);
    # the GEMM writes its lines whole (wbox77r) and the tap-less floats
    # from each line's ends out to the sector bounds, so that no sector is
    # written in part (a partial sector costs DRAM a read).
    "sector77": [
        (_FILL77_LAUNCH, _FILL77_LAUNCH.replace("139425", "69713")),
        ("    #pragma unroll\n    for (int e = 0; e < 4; ++e) {\n        const idx_t i = (idx_t)blockIdx.x * 1024 + e * 256 + threadIdx.x;\n        if (i < kOutLen) y[i] = 0.0f;\n    }",
         """    const idx_t f = ((idx_t)blockIdx.x * 256 + threadIdx.x) * 8;
    auto in_line = [](idx_t x) { const int r = (int)(x % 139425), d = r / 4225, h = r % 4225 / 65; return (d & h & 1) != 0; };
    if (f < kOutLen && !in_line(f) && !in_line(f + 7)) {
        reinterpret_cast<float4*>(y + f)[0] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        reinterpret_cast<float4*>(y + f)[1] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    }"""),
        ("                    y[yb[sl][r] + (idx_t)co * kOutDHW] = result(sl, e);",
         """                {
                    float* o = y + yb[sl][r] + (idx_t)co * kOutDHW;
                    o[-1] = 0.0f;
                    *o = result(sl, e);
                    const int ow = yb[sl][r] % kOutW;
                    if (ow == 1) {
                        for (float* z = y + ((yb[sl][r] + (idx_t)co * kOutDHW - 1) & ~(idx_t)7); z < o - 1; ++z) *z = 0.0f;
                    }
                    if (ow == kOutW - 2) {
                        o[1] = 0.0f;
                        for (float* z = o + 2; z < y + ((yb[sl][r] + (idx_t)co * kOutDHW + 2 + 7) & ~(idx_t)7); ++z) *z = 0.0f;
                    }
                }"""),
    ],
    "earlyk": [("static constexpr bool kEarlyA = false;", "static constexpr bool kEarlyA = true;")],
    # Three blocks an SM on Hopper, so that the inputs' registers fit
    # beside the A parts while the products run.
    "minb3k": [("static constexpr int kMinBlocks = 4;", "static constexpr int kMinBlocks = 3;"),
               ("static constexpr bool kEarlyA = false;", "static constexpr bool kEarlyA = true;")],
    # The GEMM's own output stores streaming (evict first).
    "cs": [("                    y[yb[sl][r] + (idx_t)co * kOutDHW] = result(sl, e);",
            "                    __stcs(y + yb[sl][r] + (idx_t)co * kOutDHW, result(sl, e));")],
    # The same lines, all at the block's start (before its first step).
    "fillpre77": [(_FILL77_LAUNCH, ""),
                  ("        if (!kStageA && active && P.steps > 0) load_a(0);\n",
                   "        for (int s = 0; s < 27; ++s) {\n" + _fill77("s * 16 + warp * 4 + i", 4) + "        }\n"
                   "        if (!kStageA && active && P.steps > 0) load_a(0);\n")],
    # #77 only, with wbox77: the fill writes only the lines of no GEMM output
    # (an even depth or height).
    "linefill77": [("        if (i < kOutLen) y[i] = 0.0f;",
                    """        const idx_t line = i / kOutW;
        if (i < kOutLen && (line % kOutH % 2 == 0 || line / kOutH % kOutD % 2 == 0)) y[i] = 0.0f;""")],
}


def side(src):
    """Probe only (a submission may not use streams): the bias fill on a
    side stream, beside the GEMM; the forward's stream waits for it at the
    end. How much of the fill the GEMM could hide."""
    fill = re.search(r"    (\w+_fill_bias)<<<(\d+), 256>>>\((.*?)\);\n", src)
    if not fill:
        raise SystemExit("variants: side needs a bias fill")
    name, blocks, args = fill.groups()
    src = src.replace(fill.group(0), f"""    static cudaStream_t side = [] {{ cudaStream_t s; cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking); return s; }}();
    static cudaEvent_t ready = [] {{ cudaEvent_t e; cudaEventCreateWithFlags(&e, cudaEventDisableTiming); return e; }}();
    static cudaEvent_t filled = [] {{ cudaEvent_t e; cudaEventCreateWithFlags(&e, cudaEventDisableTiming); return e; }}();
    cudaEventRecord(ready, 0);
    cudaStreamWaitEvent(side, ready, 0);
    {name}<<<{blocks}, 256, 0, side>>>({args});
    cudaEventRecord(filled, side);
""")
    return edit(src, [("    return y;\n", "    cudaStreamWaitEvent(0, filled, 0);\n    return y;\n")])


def pdl(src):
    """The bias fill and the GEMM overlapped by programmatic dependent launch
    (sm_90): the fill, two grid-striding blocks an SM (room for the GEMM's
    beside them), lets the GEMM launch at once; the GEMM waits for the
    fill's stores only before its own."""
    fill = re.search(r"(\w+_fill_bias)<<<(\d+), 256>>>", src)
    body = re.search(r"    #pragma unroll\n    for \(int e = 0; e < 4; \+\+e\) \{\n.*?\n        if \(i < kOutLen\) y\[i\] = (.*?);\n    \}\n", src, re.S)
    gemm = re.search(r"(\w+_igemm)<<<dim3\((\d+), (\d+), (\d+)\), (\d+), (\d+)>>>\(\n\s*(.*?)\);", src, re.S)
    if not (fill and body and gemm):
        raise SystemExit("variants: pdl needs a bias fill and a dynamic-smem GEMM launch")
    src = src.replace(body.group(0), f"""#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
    for (idx_t i = (idx_t)blockIdx.x * 256 + threadIdx.x; i < kOutLen; i += (idx_t)gridDim.x * 256) y[i] = {body.group(1)};
""")
    src = src.replace(fill.group(0), f"{fill.group(1)}<<<264, 256>>>")
    name, gx, gy, gz, threads, smem, args = gemm.groups()
    src = src.replace(gemm.group(0), f"""{{
        cudaLaunchConfig_t cfg = {{}};
        cfg.gridDim = dim3({gx}, {gy}, {gz});
        cfg.blockDim = dim3({threads}, 1, 1);
        cfg.dynamicSmemBytes = {smem};
        cudaLaunchAttribute attr;
        attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
        attr.val.programmaticStreamSerializationAllowed = 1;
        cfg.attrs = &attr;
        cfg.numAttrs = 1;
        TORCH_CHECK(cudaLaunchKernelEx(&cfg, {name}, {args.replace("nullptr", "(const float*)nullptr")}) == cudaSuccess, "launch");
    }}""")
    return edit(src, [("        // The phase's outputs: 8-column block cb holds", """#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
        asm volatile("griddepcontrol.wait;" ::: "memory");  // the fill's stores land first
#endif
        // The phase's outputs: 8-column block cb holds""")])


def prologue(src):
    """The weight repack, the input re-layout and the bias fill in one
    launch: the re-layout's blocks first, then the repack's, then the
    fill's, each block doing its own kernel's work (the bodies become
    device functions of their block index), so that the re-layout's reads
    and writes overlap the fill's writes and two launches go."""
    launches = {}
    for role in ("repack_weight", "relayout_input", "fill_bias"):
        m = re.search(r"    (\w+)_" + role + r"<<<(\d+), 256>>>\((.*?)\);\n", src)
        if not m:
            raise SystemExit(f"variants: prologue needs a {role} launch")
        launches[role] = m
        prefix = m.group(1)
        head = re.search(r'extern "C" __global__ void (?:__launch_bounds__\(\w+\) )?' + prefix + "_" + role + r"\((.*?)\)\n\{\n", src)
        end = src.index("\n}\n", head.end())
        body = src[head.end():end].replace("blockIdx.x", "bx_")
        src = src[:head.start()] + f"__device__ __forceinline__ void {role}_body(int bx_, {head.group(1)})\n{{\n" + body + src[end:]
    relayout, repack, fill = (int(launches[r].group(2)) for r in ("relayout_input", "repack_weight", "fill_bias"))
    fused = f"""
extern "C" __global__ void __launch_bounds__(256) {prefix}_prologue(const float* __restrict__ w, float* __restrict__ img,
    const float* __restrict__ x, float* __restrict__ xr, const float* __restrict__ bias, float* __restrict__ y)
{{
    int b = blockIdx.x;
    if (b < {relayout}) {{ relayout_input_body(b, x, xr); return; }}
    b -= {relayout};
    if (b < {repack}) {{ repack_weight_body(b, w, img); return; }}
    fill_bias_body(b - {repack}, bias, y);
}}
"""
    at = src.index("\n}\n", src.index("void fill_bias_body(")) + 3
    src = src[:at] + fused + src[at:]
    args = [launches[r].group(3) for r in ("repack_weight", "relayout_input", "fill_bias")]
    src = src.replace(launches["repack_weight"].group(0), "").replace(launches["relayout_input"].group(0), "")
    return src.replace(launches["fill_bias"].group(0),
                       f"    {prefix}_prologue<<<{relayout + repack + fill}, 256>>>({args[0]}, {args[1]}, {args[2]});\n")


_TMA77_HELPERS = r"""
// #77 probe: zeros from shared memory to global by the TMA unit (sm_90a),
// one thread's bulk stores, so no warp spends instructions on the fill.
__device__ __forceinline__ void tma_zero(float* dst, const float* zeros, int floats, unsigned long long policy)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    const unsigned src = (unsigned)__cvta_generic_to_shared(zeros);
    for (int done = 0; done < floats; done += 1024) {
        const int n = min(1024, floats - done);
        if (HINT)
            asm volatile("cp.async.bulk.global.shared::cta.bulk_group.L2::cache_hint [%0], [%1], %2, %3;"
                         :: "l"(dst + done), "r"(src), "r"(n * 4), "l"(policy) : "memory");
        else
            asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;"
                         :: "l"(dst + done), "r"(src), "r"(n * 4) : "memory");
    }
#endif
}
// Start of GEMM line (n, c, qd, qh): an odd depth and height.
__device__ __forceinline__ long long line77(int n, int c, int qd, int qh)
{
    return ((long long)(n * 64 + c) * 33 + 2 * qd + 1) * 4225 + (2 * qh + 1) * 65;
}
"""

# Block b's share of the tap-less outputs: for each channel, the gap after
# each of its two GEMM lines, up to the next GEMM line (block 0 also the
# gap before the first). PREFILL: the gaps shrunk to 16-byte bounds (the
# prefill kernel wrote the float4s that touch a GEMM line); else the GEMM
# writes its lines whole (wbox77r) and a gap's ragged ends are plain stores.
_TMA77_ISSUE = r"""
    {
        float* const zeros = b_stage + 12288;
        for (int i = tid; i < 1024; i += kThreads) zeros[i] = 0.0f;
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
#endif
        __syncthreads();
        unsigned long long policy = 0;
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
        if (HINT) asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
#endif
        const int b = blockIdx.x, n = b / 256, qd = b / 16 % 16, qh0 = b % 16 * 2;
        const long long total = 16LL * 64 * 139425;
        for (int k = tid; k < 129; k += kThreads) {
            long long from, to;
            if (k == 128) {
                if (b != 0) continue;
                from = 0; to = line77(0, 0, 0, 0);
            } else {
                const int c = k / 2, qh = qh0 + k % 2;
                from = line77(n, c, qd, qh) + 65;
                if (qh < 31) to = line77(n, c, qd, qh + 1);
                else if (qd < 15) to = line77(n, c, qd + 1, 0);
                else if (c < 63) to = line77(n, c + 1, 0, 0);
                else if (n < 15) to = line77(n + 1, 0, 0, 0);
                else to = total;
            }
            const long long a = (from + 3) & ~3LL, e = to & ~3LL;
            if (!PREFILL) {
                for (long long i = from; i < a && i < to; ++i) y[i] = 0.0f;
                for (long long i = e > a ? e : a; i < to; ++i) y[i] = 0.0f;
            }
            if (e > a) tma_zero(y + a, zeros, (int)(e - a), policy);
        }
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
        asm volatile("cp.async.bulk.commit_group;" ::: "memory");
#endif
    }
"""


def tma77(src, prefill, hint):
    """#77 probe: no fill kernel over the whole output; the GEMM's blocks
    have the TMA unit store the zeros of the tap-less lines (bulk stores
    from 4 KiB of zeroed shared memory) while they compute. hint: the bulk
    stores marked evict-first in L2.
    With prefill, a kernel first writes the float4s that touch a GEMM line
    (the GEMM's even W neighbours); else the GEMM writes them (wbox77r)."""
    src = edit(src, [
        ("    __shared__ __align__(128) float b_stage[49152 / 4];",
         "    extern __shared__ __align__(128) float b_stage[];"),
        ("// The blocks an SM that the registers are capped for:",
         _TMA77_HELPERS.replace("HINT", "1" if hint else "0") + "// The blocks an SM that the registers are capped for:"),
        ("    if (!kPhasePipeline) {\n        for (int gs = 0; gs < kStages - 1; ++gs) load_b(gs, kTotalSteps);",
         _TMA77_ISSUE.replace("PREFILL", "1" if prefill else "0").replace("HINT", "1" if hint else "0")
         + "    if (!kPhasePipeline) {\n        for (int gs = 0; gs < kStages - 1; ++gs) load_b(gs, kTotalSteps);"),
        ('\n}\n"""\n\n# The host side',
         '\n#if defined(__CUDA_ARCH_FEAT_SM90_ALL)\n    asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");\n#endif\n}\n"""\n\n# The host side'),
        ("    l1_77_padded_dilated_strided_igemm<<<dim3(4096, 1, 1), 128>>>(",
         "    cudaFuncSetAttribute(l1_77_padded_dilated_strided_igemm, cudaFuncAttributeMaxDynamicSharedMemorySize, 53248);\n"
         "    l1_77_padded_dilated_strided_igemm<<<dim3(4096, 1, 1), 128, 53248>>>("),
    ])
    if prefill:
        return edit(src, [
            ("        if (i < kOutLen) y[i] = 0.0f;",
             """        if (e == 0) {
            const idx_t f = ((idx_t)blockIdx.x * 256 + threadIdx.x) * 4;
            auto in_line = [](idx_t x) { const int r = (int)(x % 139425), d = r / 4225, h = r % 4225 / 65; return (d & h & 1) != 0; };
            if (f < kOutLen && (in_line(f) || in_line(f + 3)))
                *reinterpret_cast<float4*>(y + f) = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        }""")])
    return edit(edit(src, VARIANTS["wbox77r"]), [(_FILL77_LAUNCH, "")])


def edit(src, edits):
    for old, new in edits:
        if src.count(old) != 1:
            raise SystemExit(f"variants: {old!r} found {src.count(old)} times, not once")
        src = src.replace(old, new)
    return src


def main():
    if len(sys.argv) < 4:
        raise SystemExit(__doc__)
    folder, root, names = sys.argv[1], sys.argv[2], sys.argv[3:]
    with open(os.path.join(folder, "cuda.sm90.py")) as f:
        src = f.read()
    tag = os.path.basename(os.path.normpath(folder))
    for name in names:
        text = src
        for part in name.split("+"):
            if part == "prologue":
                text = prologue(text)
                continue
            if part in ("pdl", "side"):
                text = pdl(text) if part == "pdl" else side(text)
                continue
            if part.startswith("tma77"):  # tma77, tma77h (evict-first hint), tma77w, tma77wh (no prefill)
                text = tma77(text, prefill="w" not in part, hint=part.endswith("h"))
                continue
            if part not in VARIANTS:
                raise SystemExit(f"variants: no variant {part!r} (have {', '.join(VARIANTS)})")
            text = edit(text, VARIANTS[part])
        out = os.path.join(root, f"{tag}.{name}")
        os.makedirs(out, exist_ok=True)
        suffix = name.replace("+", "_")
        text = re.sub(r'name="([^"]+)"', lambda m: f'name="{m.group(1)}_{suffix}"', text, count=1)
        with open(os.path.join(out, "cuda.sm90.py"), "w") as f:
            f.write(text)
        shutil.copy(os.path.join(folder, "problem.py"), out)
        print(out)


if __name__ == "__main__":
    main()

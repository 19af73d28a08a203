"""Are two renderings' pre-GEMM kernels the same function? (CPU, no GPU.)

For each pair of CUDA files (OLD NEW, a pair a line on stdin), runs every
launch the host wrapper makes before the main kernel (the weight re-layout,
the input re-layout, the bias fill, in whatever kernels the file splits
them into) on the CPU, against the emulator's stand-ins
(verify/emulate/shim.h), on the same random weight, input and bias, and
compares what they write (the weight image, the re-laid input, the
output) bit for bit. The wgmma tile's sm90 files qualify too: their
products are in the main kernel, which is not run.

    git diff --name-only | grep 'cuda.sm..\\.py' | while read f; do
        mkdir -p /tmp/old/$(dirname $f); git show HEAD:$f >/tmp/old/$f
        echo /tmp/old/$f $f; done | python3 docs/perf/probes/prepare_identity.py

Exit status 1 if any pair differs.
"""
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SHIM = open(os.path.join(HERE, "..", "..", "..", "verify", "emulate", "shim.h")).read()

# A launch in the host wrapper: name<<<blocks, threads>>>(args);
LAUNCH = re.compile(r"(\w+)<<<(?:dim3\()?([\d, ]+?)\)?, (\d+)(?:, \d+)?>>>\((.*?)\);", re.S)
EMPTY = re.compile(r"auto (\w+) = torch::empty\(\{([\d, ]+)\}")


def sources(path):
    text = open(path).read()
    kernel = re.search(r'KERNEL_SOURCE = r"""(.*?)"""', text, re.S).group(1)
    host = re.search(r'HOST_SOURCE = r"""(.*?)"""', text, re.S).group(1)
    return kernel, host


def product(dims):
    n = 1
    for v in dims.split(","):
        n *= int(v)
    return n


def buffers(host):
    """The tensors the launches read and write, with their lengths."""
    sizes = {}
    m = re.search(r"x\.sizes\(\) == torch::IntArrayRef\(\{([\d, ]+)\}\)", host)
    sizes["x"] = product(m.group(1))
    m = re.search(r"weight\.sizes\(\) == torch::IntArrayRef\(\{([\d, ]+)\}\)", host)
    sizes["weight"] = product(m.group(1))
    m = re.search(r"bias\.sizes\(\) == torch::IntArrayRef\(\{([\d, ]+)\}\)", host)
    if m:
        sizes["bias"] = product(m.group(1))
    for name, dims in EMPTY.findall(host):
        sizes[name] = product(dims)
    return sizes


def prepare_launches(host, main):
    """The launches before the main kernel's, as (name, grid, threads, args)."""
    out = []
    for name, grid, threads, args in LAUNCH.findall(host):
        if name == main:
            break
        grid = [int(v) for v in grid.split(",")] + [1, 1]
        args = [re.sub(r"\((?:const )?float\*\)(\w+)\.data_ptr\(\)", r"\1", a.strip()) for a in args.split(",")]
        out.append((name, grid[:3], int(threads), args))
    return out


def strip_gemm(kernel, main):
    """The kernel source without the main kernel (and the PTX it alone uses)."""
    i = kernel.index("extern \"C\" __global__")
    j = kernel.index(main + "(")
    j = kernel.rindex("extern \"C\"", 0, j)
    end = kernel.index("\n}\n", j) + 3
    src = kernel[:j] + kernel[end:]

    def stub(m):
        # A helper written in PTX is the main kernel's (copies, products,
        # barriers): an empty body, so that the rest compiles on the host.
        head, ret, body = m.group(1), m.group(2).split()[-1], m.group(3)
        if "asm" not in body and "__cvta" not in body:
            return m.group(0)
        return head + ("\n}\n" if ret == "void" else "\n    return {};\n}\n")

    return re.sub(r"(__device__ __forceinline__ ([\w ]+?\**) \w+\([^)]*\)\s*\{)(.*?)\n\}\n", stub, src, flags=re.S)


DRIVER = r"""
#include <cstdio>
#include <vector>
static std::vector<float> random_floats(size_t n, unsigned long long s)
{
    std::vector<float> v(n);
    for (size_t i = 0; i < n; ++i) {
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        v[i] = (float)((double)(s >> 11) / 9007199254740992.0 * 2.0 - 1.0);
    }
    return v;
}
int main(int argc, char** argv)
{
%(decls)s
%(launches)s
    FILE* f = std::fopen(argv[1], "wb");
%(writes)s
    std::fclose(f);
    return 0;
}
"""


def run(path, work, tag):
    kernel, host = sources(path)
    main = re.search(r'extern "C" __global__ void (?:__launch_bounds__\([^)]*\) )?\n?(\w+_igemm)\(', kernel)
    main = main.group(1) if main else re.search(r"(\w+_igemm)<<<", host).group(1)
    sizes = buffers(host)
    launches = prepare_launches(host, main)
    decls, calls, written = [], [], []
    for i, (name, n) in enumerate(sorted(sizes.items())):
        if name in ("x", "weight", "bias"):
            decls.append("    std::vector<float> %s = random_floats(%d, %d);" % (name, n, 17 + i))
        else:
            decls.append("    std::vector<float> %s(%d, -7.25f);" % (name, n))
    for k, (name, grid, threads, args) in enumerate(launches):
        cargs = ["nullptr" if a == "nullptr" else a + ".data()" for a in args]
        calls.append(
            "    { std::vector<dim3_> b; gridDim = {%du, %du, %du}; for (unsigned z = 0; z < %d; ++z) for (unsigned y = 0; y < %d; ++y) for (unsigned x = 0; x < %d; ++x) b.push_back({x, y, z});\n"
            "      run_block_list(std::move(b), %d, %d, [&] { %s(%s); }); }"
            % (grid[0], grid[1], grid[2], grid[2], grid[1], grid[0], threads, 3 + k, name, ", ".join(cargs)))
        for a in args:
            if a not in ("x", "weight", "bias", "nullptr") and a not in written:
                written.append(a)
    writes = ["    std::fwrite(%s.data(), 4, %s.size(), f);" % (a, a) for a in sorted(written)]
    src = SHIM + "\n" + strip_gemm(kernel, main) + DRIVER % dict(decls="\n".join(decls), launches="\n".join(calls), writes="\n".join(writes))
    cpp = os.path.join(work, tag + ".cpp")
    open(cpp, "w").write(src)
    exe = os.path.join(work, tag)
    subprocess.run(["g++", "-O1", "-std=c++17", "-w", "-o", exe, cpp, "-lpthread"], check=True)
    out = os.path.join(work, tag + ".bin")
    subprocess.run([exe, out], check=True)
    return open(out, "rb").read(), [l[0] for l in launches], sorted(written)


def main():
    bad = 0
    with tempfile.TemporaryDirectory() as work:
        work = os.environ.get("PROBE_WORK", work)
        for line in sys.stdin:
            if not line.strip():
                continue
            old, new = line.split()
            a, la, wa = run(old, work, "old")
            b, lb, wb = run(new, work, "new")
            same = a == b and wa == wb
            bad += not same
            print("%s %s: %s -> %s (%s, %d bytes)" % ("same" if same else "DIFFERENT", new, "+".join(la), "+".join(lb), ", ".join(wb), len(b)), flush=True)
    print("different:", bad)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()

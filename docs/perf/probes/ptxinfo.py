# Probe: registers and spills of the GEMM kernel ("igemm") of each folder's
# cuda.sm90.py on sm_90a (ptxas -v), e.g. for variants.py's folders:
#   python3 docs/perf/probes/ptxinfo.py /tmp/var/*
# KERNEL=name picks another kernel (plane77.py's is gemm77).
import os, re, subprocess, sys, tempfile
name = os.environ.get("KERNEL", "igemm")
for folder in sys.argv[1:]:
    src = open(os.path.join(folder, "cuda.sm90.py")).read()
    kernel = re.search(r'KERNEL_SOURCE = r"""(.*?)"""', src, re.S).group(1)
    with tempfile.TemporaryDirectory() as d:
        cu = os.path.join(d, "k.cu")
        open(cu, "w").write(kernel)
        r = subprocess.run(["nvcc", "-cubin", "-arch=sm_90a", "-O3", "-Xptxas", "-v", "-o", os.path.join(d, "k.cubin"), cu], capture_output=True, text=True)
        lines = r.stderr.splitlines()
        at = [i for i, l in enumerate(lines) if "Compiling entry function" in l and name in l][0]
        warn = [l for l in lines if "arning" in l]
        print(os.path.basename(folder), "\n  " + "\n  ".join(warn + lines[at:at + 5]), flush=True)

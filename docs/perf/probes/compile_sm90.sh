#!/usr/bin/env bash
# Compiles the kernel source of every sm90 CUDA file under the given
# folders (default: out) for sm_90a, in parallel, as the sm90 files build
# (nvcc -gencode arch=compute_90a,code=sm_90a, CUDA 12.0 or later), and
# reports each failure, spill and serialized wgmma; exit status 1 if any.
# For a GPU host or any machine with CUDA 12+; needs python3, no Go.
#   docs/perf/probes/compile_sm90.sh [DIR...]   (JOBS=n, NVCC=path)
set -u
NVCC=${NVCC:-nvcc}
JOBS=${JOBS:-$(nproc)}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
[ $# -eq 0 ] && set -- out
files=$(find "$@" -name 'cuda.sm90.py' | sort)
[ -n "$files" ] || { echo "compile_sm90: no cuda.sm90.py under $*" >&2; exit 1; }

one() {
	py=$1 work=$2 nvcc=$3
	dir=$work/$(echo "$py" | tr '/' '_')
	mkdir -p "$dir"
	python3 - "$py" "$dir/kernel.cu" <<'EOF' || { echo "FAIL $py: no KERNEL_SOURCE"; return; }
import sys
src = open(sys.argv[1]).read()
start = src.index('KERNEL_SOURCE = r"""') + len('KERNEL_SOURCE = r"""')
open(sys.argv[2], "w").write(src[start:src.index('"""', start)])
EOF
	if ! "$nvcc" -cubin -gencode arch=compute_90a,code=sm_90a -O3 -Xptxas -v -o "$dir/kernel.cubin" "$dir/kernel.cu" >"$dir/log" 2>&1; then
		echo "FAIL $py"; sed 's/^/    /' "$dir/log" | tail -20; return
	fi
	if grep -Eq '[1-9][0-9]* bytes spill (stores|loads)' "$dir/log"; then
		echo "SPILL $py"; grep -E 'spill' "$dir/log" | sed 's/^/    /'; return
	fi
	if grep -q 'wgmma.mma_async instructions are serialized' "$dir/log"; then
		echo "SERIAL $py"; grep 'serialized' "$dir/log" | sed 's/^/    /'; return
	fi
	echo "ok $py (most registers: $(grep -o 'Used [0-9]* registers' "$dir/log" | awk '{print $2}' | sort -n | tail -1))"
}
export -f one
echo "$files" | xargs -P "$JOBS" -I{} bash -c 'one "$@"' _ {} "$work" "$NVCC" | tee "$work/report"
n=$(echo "$files" | wc -l)
bad=$(grep -c '^\(FAIL\|SPILL\|SERIAL\)' "$work/report")
echo "compile_sm90: $((n - bad)) of $n sm90 kernels compiled for sm_90a without spills or serialized wgmma"
[ "$bad" -eq 0 ]

#!/usr/bin/env bash
# The GPU host's half of verification (python3 with torch there; no Go).
# Runs every committed submission the evaluator's way, with timing, then the
# random sweep (rendered here by `make random`) for correctness, then the Go
# kernel verifier if it was built and carried (bin/verify). Results land in
# $OUT (default build/gpu) as JSON; `make report` renders out/REPORT.md.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-build/gpu}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
export TORCH_EXTENSIONS_DIR=${TORCH_EXTENSIONS_DIR:-/tmp/convtgen-extensions}
status=0

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv | tee "$out/gpu.csv"
echo "${COMMIT:-$(git rev-parse HEAD 2>/dev/null)}" >"$out/commit"

python3 verify/harness/evaluate.py --time --json "$out/e2e.json" out ${EXTRA_DIRS:-} || status=1
if [ -d build/tune ]; then
  python3 verify/harness/evaluate.py --time --no-ref-time --json "$out/tune.json" build/tune || status=1
fi
if [ -d build/random ]; then
  python3 verify/harness/evaluate.py --json "$out/random.json" build/random || status=1
fi
if [ -x bin/verify ]; then
  bin/verify -root . -time -json "$out/kernels.json" ${VERIFY_FLAGS:-} || status=1
fi
exit $status

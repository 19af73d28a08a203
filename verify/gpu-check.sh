#!/usr/bin/env bash
# The GPU host's half of verification (python3 with torch there; no Go).
#   1. the kernel verifier (bin/verify, built here by `make verifier`): every
#      registered kernel and RANDOM_N random configurations, plus the tuning
#      candidates when build/tune exists (`make tune`);
#   2. the evaluator-style harness over every submission in out/, timed
#      (embedded in bin/verify; the file itself when bin/verify is absent);
#   3. when build/random exists (`make random`), its Triton submissions in a
#      parallel correctness sweep (the CUDA ones are the kernel verifier's).
# Results land in $OUT (default build/gpu); copy that folder back and run
# `make report` (and `make apply-tune` after a tuning run).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-build/gpu}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
export TORCH_EXTENSIONS_DIR=${TORCH_EXTENSIONS_DIR:-/tmp/convtgen-extensions}
status=0

nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/gpu.csv"
echo "${COMMIT:-$(git rev-parse HEAD 2>/dev/null)}" >"$out/commit"

if [ -x bin/verify ]; then
  bin/verify -root . -time -random "${RANDOM_N:-60}" -seed "${SEED:-1}" -json "$out/kernels.json" || status=1
  if [ -d build/tune/specs ]; then
    bin/verify -root . -time -specs "$(ls build/tune/specs/*.yaml | paste -sd, -)" -json "$out/tune-kernels.json" || status=1
    bin/verify -merge "$out/kernels.json" "$out/tune-kernels.json" -json "$out/kernels.json" || status=1
  fi
else
  echo "gpu-check: no bin/verify (make verifier, and carry bin/): kernel tier skipped" >&2
fi
if [ -x bin/verify ]; then
  bin/verify -root . -tiers e2e -time -e2e-json "$out/e2e.json" || status=1
else
  python3 verify/harness/evaluate.py --time --json "$out/e2e.json" out || status=1
fi
if [ -d build/random ]; then
  python3 verify/harness/evaluate.py --sweep --backends triton --json "$out/random.json" build/random || status=1
fi
exit $status

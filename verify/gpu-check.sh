#!/usr/bin/env bash
# The GPU host's half of verification (python3 with torch there; no Go).
# Usage: verify/gpu-check.sh [STAGE ...]   (default: kernels tune e2e random)
#   kernels  the kernel verifier (bin/verify, built here by `make verifier`):
#            every registered kernel and RANDOM_N random configurations
#            (seed SEED); GPUS=N shards them over N GPUs (one child each);
#   tune     the tuning candidates of build/tune (`make tune`): CUDA ones
#            through the kernel verifier, Triton ones (and the specs' own
#            Triton choices in out/) through the harness, timed (with
#            GPUS=N dealt out over N GPUs); TUNE (default "cuda triton")
#            picks the backends;
#   e2e      the evaluator-style harness over every submission in out/,
#            timed (embedded in bin/verify; the file itself without it);
#            with GPUS=2 or more, CUDA and Triton on two GPUs at once,
#            merged into one e2e.json;
#   random   the Triton submissions of build/random (`make random`) in a
#            parallel correctness sweep (the CUDA ones are the kernel
#            verifier's).
# Results land in $OUT (default build/gpu); copy that folder back and run
# `make report` (and `make apply-tune` after a tuning run). Each stage's
# failure is reported in the exit status; the later stages still run.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-build/gpu}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
export TORCH_EXTENSIONS_DIR=${TORCH_EXTENSIONS_DIR:-/tmp/convtgen-extensions}
harness=verify/harness/evaluate.py
status=0

nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/gpu.csv"
echo "${COMMIT:-$(git rev-parse HEAD 2>/dev/null)}" >"$out/commit"

need_verify() {
  [ -x bin/verify ] && return 0
  echo "gpu-check: no bin/verify (make verifier, and carry bin/): $1 skipped" >&2
  return 1
}

stages=${*:-kernels tune e2e random}
for s in $stages; do
  echo "== gpu-check: $s"
  case $s in
  kernels)
    need_verify "kernel tier" &&
      { bin/verify -root . -time -random "${RANDOM_N:-60}" -seed "${SEED:-1}" -gpus "${GPUS:-0}" -json "$out/kernels.json" || status=1; } ;;
  tune)
    tune=${TUNE:-cuda triton}
    if [[ $tune == *cuda* ]] && [ -d build/tune/specs ] && need_verify "CUDA tuning"; then
      bin/verify -root . -time -specs "$(ls build/tune/specs/*.yaml | paste -sd, -)" -json "$out/tune-kernels.json" || status=1
    fi
    if [[ $tune == *triton* ]] && [ -d build/tune ]; then
      # Fewer trials than the evaluator's: this ranks candidates; the
      # winners are measured the evaluator's way afterwards (e2e). With
      # GPUS=N the candidates are dealt out over N GPUs, one shard each,
      # and the shards' results merged.
      rank=(--time --no-ref-time --trials 2 --timed 30 --timeout 300 --backends triton)
      shards=${GPUS:-0}
      if [ "$shards" -ge 2 ]; then
        dirs=()
        for d in out/*/ build/tune/*/; do [ -f "$d/triton.py" ] && dirs+=("$d"); done
        pids=() parts=()
        for ((g = 0; g < shards; g++)); do
          mine=()
          for ((i = g; i < ${#dirs[@]}; i += shards)); do mine+=("${dirs[i]}"); done
          parts+=("$out/tune-triton-$g.json")
          CUDA_VISIBLE_DEVICES=$g python3 "$harness" "${rank[@]}" --json "$out/tune-triton-$g.json" "${mine[@]}" &
          pids+=($!)
        done
        for pid in "${pids[@]}"; do wait "$pid" || status=1; done
        python3 "$harness" --merge --json "$out/tune-triton.json" "${parts[@]}" || status=1
      else
        python3 "$harness" "${rank[@]}" --json "$out/tune-triton.json" build/tune out || status=1
      fi
    fi ;;
  e2e)
    if [ "${GPUS:-0}" -ge 2 ]; then
      # One backend per GPU (CUDA on the first, Triton on the second), then
      # one document: each row is still timed alone on its GPU.
      CUDA_VISIBLE_DEVICES=0 python3 "$harness" --time --backends cuda --json "$out/e2e-cuda.json" out & cuda=$!
      CUDA_VISIBLE_DEVICES=1 python3 "$harness" --time --backends triton --json "$out/e2e-triton.json" out & triton=$!
      wait $cuda || status=1
      wait $triton || status=1
      python3 "$harness" --merge --json "$out/e2e.json" "$out/e2e-cuda.json" "$out/e2e-triton.json" || status=1
    elif [ -x bin/verify ]; then
      bin/verify -root . -tiers e2e -time -e2e-json "$out/e2e.json" || status=1
    else
      python3 "$harness" --time --json "$out/e2e.json" out || status=1
    fi ;;
  random)
    [ -d build/random ] && { python3 "$harness" --sweep --backends triton --json "$out/random.json" build/random || status=1; } ;;
  *)
    echo "gpu-check: unknown stage $s" >&2
    exit 2 ;;
  esac
done
exit $status

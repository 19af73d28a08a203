#!/usr/bin/env bash
# The GPU host's half of verification (python3 with torch there; no Go).
# Usage: verify/gpu-check.sh [STAGE ...]   (default: kernels tune e2e random)
#   kernels  the kernel verifier (bin/verify, built here by `make verifier`):
#            every registered kernel of both targets and RANDOM_N random
#            configurations (seed SEED), each compiled for its own target:
#            sm80 kernels run as sm_80 cubins on an A100 and as compute_80
#            PTX (the driver's JIT) on later GPUs, sm90 kernels (sm_90a)
#            only on compute capability 9.0 (elsewhere: not_supported);
#            GPUS=N shards them over N GPUs (one child each);
#   tune     the tuning candidates of build/tune (`make tune`): CUDA ones
#            through the kernel verifier, Triton ones (and the specs' own
#            Triton choices in out/) through the harness, timed (with
#            GPUS=N dealt out over N GPUs); TUNE (default "cuda triton")
#            picks the backends;
#   e2e      the evaluator-style harness over every submission in out/,
#            timed (embedded in bin/verify; the file itself without it);
#            with GPUS=N (2 or more), the problems dealt out over N GPUs
#            and the runs merged into one e2e.json; ONLY (an extended
#            regex on the folder) and TARGETS run a part (e.g. the zoo in
#            slices: that e2e.json then holds those files alone);
#   zoo      the zoo's submissions of out/ (zoo_*) the evaluator's way into
#            zoo.json (the report's zoo section); ONLY (an extended regex
#            on the folder) and TARGETS run a part: a call's worth at a
#            time, merged afterwards (evaluate.py --merge); CHANGED=1 runs
#            only the files whose code changed since out/gpu/zoo.json
#            measured them on this GPU model, for `evaluate.py --merge
#            --newer --json out/gpu/zoo.json out/gpu/zoo.json NEW.json`;
#   level2   the level-2 submissions of out/ (l2_*) the evaluator's way,
#            each problem's reference timed in the same run eager, strict
#            fp32 and under torch.compile (warmed while the files build;
#            COMPILE=0 leaves it out: it costs about 20 s a problem);
#            TARGETS (default sm80,sm90) picks the files, ONLY (an
#            extended regex on the folder) the problems; GPUS=N shares
#            them out over N GPUs;
#   random   the Triton submissions of build/random (`make random`) in a
#            parallel correctness sweep (the CUDA ones are the kernel
#            verifier's);
#   big      the submissions of build/big (`make big`: tensors of 2^31+
#            elements) through verify/harness/bigcheck.py.
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

# run_sharded OUT.json HARNESS-ARGS... -- DIR...: with GPUS=N (2 or more)
# the folders are dealt out over N GPUs, one harness run each (a spec's
# submissions and its references stay together), and the runs' results
# merged into OUT.json; otherwise one run over them all.
run_sharded() {
  local json=$1 args=() dirs pids=() parts=() g i
  shift
  while [ "$1" != "--" ]; do args+=("$1"); shift; done
  shift
  dirs=("$@")
  if [ "${GPUS:-0}" -lt 2 ]; then
    python3 "$harness" "${args[@]}" --json "$json" "${dirs[@]}" || status=1
    return
  fi
  for ((g = 0; g < GPUS; g++)); do
    local mine=()
    for ((i = g; i < ${#dirs[@]}; i += GPUS)); do mine+=("${dirs[i]}"); done
    [ ${#mine[@]} -gt 0 ] || continue
    parts+=("$json.$g")
    CUDA_VISIBLE_DEVICES=$g python3 "$harness" "${args[@]}" --json "$json.$g" "${mine[@]}" &
    pids+=($!)
  done
  for i in "${pids[@]}"; do wait "$i" || status=1; done
  python3 "$harness" --merge --json "$json" "${parts[@]}" || status=1
}

# spec_dirs PATTERN ROOT...: the folders right under each ROOT that hold a
# file matching PATTERN (problem.py, triton.*.py).
spec_dirs() {
  local pattern=$1 root d
  shift
  for root in "$@"; do
    for d in "$root"/*/; do compgen -G "$d$pattern" >/dev/null && echo "${d%/}"; done
  done
}

need_verify() {
  [ -x bin/verify ] && return 0
  echo "gpu-check: no bin/verify (make verifier, and carry bin/): $1 skipped" >&2
  return 1
}

# tune_cuda_specs: the CUDA tuning candidates of build/tune as -specs
# entries, each spec file for the target it was made for (FILE@TARGET),
# and the specs' own choices by their registry names (NAME@TARGET), so that
# every candidate is timed beside the choice it would replace, in one run.
tune_cuda_specs() {
  python3 - build/tune/manifest.json <<'PY'
import json, sys
cands = json.load(open(sys.argv[1]))
print(",".join(f"{c['Spec']}@{c['Target']}" if c["Current"] else
               f"build/tune/specs/{c['Variant']}.yaml@{c['Target']}"
               for c in cands if c["Backend"] == "cuda"))
PY
}

stages=${*:-kernels tune e2e random}
for s in $stages; do
  echo "== gpu-check: $s"
  case $s in
  kernels)
    need_verify "kernel tier" &&
      { bin/verify -root . -time -random "${RANDOM_N:-60}" -seed "${SEED:-1}" -gpus "${GPUS:-0}" \
        -json "$out/kernels.json" || status=1; } ;;
  tune)
    tune=${TUNE:-cuda triton}
    if [[ $tune == *cuda* ]] && [ -d build/tune/specs ] && need_verify "CUDA tuning"; then
      bin/verify -root . -time -specs "$(tune_cuda_specs)" -json "$out/tune-kernels.json" || status=1
    fi
    if [[ $tune == *triton* ]] && [ -d build/tune ]; then
      # Fewer trials than the evaluator's: this ranks candidates; the
      # winners are measured the evaluator's way afterwards (e2e).
      mapfile -t dirs < <(spec_dirs 'triton.*.py' out build/tune)
      run_sharded "$out/tune-triton.json" --time --no-ref-time --trials 2 --timed 30 --timeout 300 --backends triton -- "${dirs[@]}"
    fi ;;
  e2e)
    if [ -n "${ONLY:-}" ]; then
      # A part of the specs (the zoo is longer than one call): the harness
      # over the folders ONLY matches, TARGETS' files.
      mapfile -t dirs < <(spec_dirs problem.py out | grep -E -- "$ONLY")
      run_sharded "$out/e2e.json" --time --targets "${TARGETS:-sm80,sm90}" -- "${dirs[@]}"
    elif [ "${GPUS:-0}" -ge 2 ]; then
      mapfile -t dirs < <(spec_dirs problem.py out)
      run_sharded "$out/e2e.json" --time -- "${dirs[@]}"
    elif [ -x bin/verify ]; then
      bin/verify -root . -tiers e2e -time -e2e-json "$out/e2e.json" || status=1
    else
      python3 "$harness" --time --json "$out/e2e.json" out || status=1
    fi ;;
  zoo)
    mapfile -t dirs < <(spec_dirs problem.py out | grep '/zoo_' | grep -E -- "${ONLY:-.}")
    changed=()
    [ -n "${CHANGED:-}" ] && changed=(--changed-since out/gpu/zoo.json)
    run_sharded "$out/zoo.json" --time ${changed[@]+"${changed[@]}"} --targets "${TARGETS:-sm80,sm90}" -- "${dirs[@]}" ;;
  level2)
    mapfile -t dirs < <(spec_dirs problem.py out | grep '/l2_' | grep -E -- "${ONLY:-.}")
    compile=(--compile)
    [ "${COMPILE:-1}" = 0 ] && compile=()
    run_sharded "$out/level2.json" --time "${compile[@]}" --targets "${TARGETS:-sm80,sm90}" -- "${dirs[@]}" ;;
  random)
    [ -d build/random ] && { python3 "$harness" --sweep --backends triton --json "$out/random.json" build/random || status=1; } ;;
  big)
    [ -d build/big ] && { COMMIT=$(cat "$out/commit") python3 verify/harness/bigcheck.py --json "$out/big.json" build/big || status=1; } ;;
  *)
    echo "gpu-check: unknown stage $s" >&2
    exit 2 ;;
  esac
done
exit $status

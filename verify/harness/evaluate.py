#!/usr/bin/env python3
"""Judge generated ConvTranspose3d submissions the way the KernelBench evaluator does.

Usage: evaluate.py [--time] [--trials 5] [--timed 100] [--tol 1e-5] [--jobs N]
                   [--timeout S] [--json OUT.json] DIR [DIR ...]

A DIR is a spec directory (problem.py plus submissions named <backend>.<target>.py:
cuda.sm80.py, cuda.sm90.py, triton.sm80.py, triton.sm90.py) or a parent of such directories
(one level down). A file whose target this GPU cannot run (an sm90 CUDA file anywhere but on
compute capability 9.0, an sm80 one below 8.0) is skipped, with the reason, not failed. An
sm80 CUDA file on a later GPU runs its compute_80 PTX, compiled by the driver. Triton files of
both targets run on any GPU: Triton compiles for the GPU it runs on, so a Triton sm80 file on
an H200 is not the A100's code (the result's "ran" says so). For every other submission file:

1. Build: all submissions are imported in parallel worker processes (at the lowest CPU
   priority), only so that their load_inline builds land in torch's extension cache; the
   later imports are fast. With --compile, each reference is compiled once first as well.
2. Evaluate, one file at a time as soon as its own build is done (the builds of later files
   go on beside it, niced), each in its own child process (a CUDA fault poisons the
   context of the process it happens in, never the next file's); the next file's child
   is started while one runs, and imports torch and its files then, so that only the
   GPU work is left when its turn comes:
   - seeded construction on the CPU, reference first, as the evaluator does; weights are
     not copied, so every parameter must come out equal;
   - trials with the evaluator's per-trial seeds: the output block is poisoned with NaN
     first (an unwritten output shows up), then shape, dtype, NaN count, unmodified
     inputs, relative L2 error against a float64 run of the reference (the truth), and
     allclose against the default (TF32) reference at 1e-2 and 1e-4 as facts; the inputs
     and truth of each trial are drawn and computed by a problem's first file and shared
     with its other files through a cache (in /dev/shm where it has room, else on disk),
     dropped when the problem is done: a float64 convolution, and drawing a large input
     on the CPU, cost seconds a trial, more than most files' own work;
   - with --time: the evaluator's CUDA-event timing with an L2 flush before each trial;
     the reference is timed once per spec, with PyTorch defaults and with strict fp32
     (with --compile also under torch.compile, Inductor's default mode).
3. Report: a progress line per item, a table at the end, optionally a JSON document.

Dispositions: passed (every trial within --tol of float64, no NaN, shapes match, inputs
unmodified), incorrect (with the reason), failed (build or runtime error), skipped (its target
is not this GPU). Exit status 0 if everything run passed, 1 otherwise, 2 for a usage error.

This file is self-contained (standard library + torch) and must run from a file on disk:
it re-runs itself in child processes, and the spawn start method re-imports it.
"""

import argparse
import contextlib
import copy
import dataclasses
import datetime
import hashlib
import importlib.util
import io
import json
import math
import multiprocessing
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool

try:
    import torch
except ImportError:  # the pure parts are unit-tested on machines without torch
    torch = None

SCRIPT = os.path.abspath(__file__)
SEED = 42  # the evaluator's seed for weights, timing inputs and the trial seeds
BACKENDS = ("cuda", "triton")  # submission backends, in report order
# The targets (gen/plan/target.go is their source): the compute capability a CUDA file is
# built for, whether it runs only there (sm_90a) or also on later GPUs (through its PTX),
# and the GPU it stands for.
TARGETS = {
    "sm80": {"cc": (8, 0), "exact": False, "gpu": "A100"},
    "sm90": {"cc": (9, 0), "exact": True, "gpu": "H100/H200"},
}
WARMUP = 3
FLUSH_FLOATS = 64 * 1024 * 1024  # 256 MB written before each timed trial, as the evaluator does
TRUTH_CACHE_BYTES = 4 << 30  # the largest float64 truth, or inputs, a trial shares
SHARED_BYTES = 2 * 5 * TRUTH_CACHE_BYTES  # a problem's shares at most: five trials' truths and inputs
TAIL_CHARS = 4000  # enough of a compiler log or traceback to show the first error
RESULT_KEYS = (
    "spec", "backend", "target", "ran", "disposition", "reason", "max_rel_l2", "ref_default_rel_l2",
    "allclose_1e2", "allclose_1e4", "nan_outputs", "trials",
    "time_ms", "ref_default_ms", "ref_strict_ms", "ref_compile_ms", "sha256", "seconds",
)
NO_REF_TIMES = {"ref_default_ms": None, "ref_strict_ms": None, "ref_compile_ms": None}
SWEEP_TASKS_PER_WORKER = 8  # files a sweep worker evaluates before it is replaced


# ---------------------------------------------------------------- command line

def default_jobs():
    return min(16, os.cpu_count() or 1)


def positive_int(text):
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text} is not a positive integer")
    return value


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog="evaluate.py",
        description="Judge ConvTranspose3d submissions the way the KernelBench evaluator does.")
    parser.add_argument("dirs", nargs="*", metavar="DIR",
                        help="a spec directory (problem.py + <backend>.<target>.py files) or a parent of some")
    parser.add_argument("--time", action="store_true",
                        help="also time submissions and references the evaluator's way")
    parser.add_argument("--sweep", action="store_true",
                        help="correctness only, many small configurations: --jobs worker processes "
                             "evaluate the files in-process (no per-file child, no build phase)")
    parser.add_argument("--backends", default=",".join(BACKENDS),
                        help="comma-separated submission backends to evaluate (default: all)")
    parser.add_argument("--targets", default=",".join(TARGETS),
                        help="comma-separated targets whose files to evaluate (default: all)")
    parser.add_argument("--compile", action="store_true",
                        help="with --time, also time torch.compile(reference) (Inductor's default "
                             "mode, default precision); its compilation is warmed in the build phase")
    parser.add_argument("--no-ref-time", action="store_true",
                        help="with --time, skip timing the references (tuning candidates share one problem)")
    parser.add_argument("--trials", type=positive_int, default=5, help="correctness trials (default 5)")
    parser.add_argument("--timed", type=positive_int, default=100, help="timed trials (default 100)")
    parser.add_argument("--tol", type=float, default=1e-5,
                        help="largest relative L2 error against float64 that passes (default 1e-5)")
    parser.add_argument("--jobs", type=positive_int, default=default_jobs(),
                        help="parallel build workers (default min(16, CPUs))")
    parser.add_argument("--timeout", type=positive_int, default=1200,
                        help="seconds allowed for one file's evaluation (default 1200)")
    parser.add_argument("--json", metavar="OUT.json", help="write the results as JSON")
    parser.add_argument("--merge", action="store_true",
                        help="the arguments are result JSON files of one machine (say one per GPU): "
                             "write their results as one document to --json")
    parser.add_argument("--changed-since", metavar="OLD.json",
                        help="leave out the submissions whose code (sha256) passed in OLD.json on this "
                             "GPU model: a run of what changed since, for --merge --newer")
    parser.add_argument("--newer", action="store_true",
                        help="with --merge, a later file's result replaces an earlier one's for the "
                             "same file (a --changed-since run over its OLD.json)")
    # Internal modes: the parent re-runs this file in a child process for each evaluation.
    parser.add_argument("--item", help=argparse.SUPPRESS)
    parser.add_argument("--ref-timing", help=argparse.SUPPRESS)
    parser.add_argument("--result", help=argparse.SUPPRESS)
    parser.add_argument("--wait-go", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--truth-cache", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    child_mode = args.item or args.ref_timing
    if not child_mode and not args.dirs:
        parser.error("at least one DIR is required")
    if args.sweep and args.time:
        parser.error("--sweep checks correctness only; time without it")
    if args.compile and (not args.time or args.no_ref_time):
        parser.error("--compile times the compiled reference: it needs --time and reference timing")
    if args.merge and not args.json:
        parser.error("--merge writes its document to --json")
    if args.newer and not args.merge:
        parser.error("--newer is a way to --merge")
    args.backends = [b.strip() for b in args.backends.split(",")]
    if not args.backends or any(b not in BACKENDS for b in args.backends):
        parser.error(f"--backends: choose from {', '.join(BACKENDS)}")
    args.targets = [t.strip() for t in args.targets.split(",")]
    if not args.targets or any(t not in TARGETS for t in args.targets):
        parser.error(f"--targets: choose from {', '.join(TARGETS)}")
    if child_mode and not args.result:
        parser.error("--item and --ref-timing need --result")
    return args


def child_command(mode, target, result_path, args, truth_cache=None):
    """The command that runs one evaluation (mode --item or --ref-timing) in a child process;
    truth_cache: the folder where the files of its problem share their float64 truths."""
    command = [sys.executable, SCRIPT, mode, target, "--result", result_path,
               "--trials", str(args.trials), "--timed", str(args.timed), "--tol", repr(args.tol)]
    if truth_cache:
        command += ["--truth-cache", truth_cache]
    if args.time:
        command.append("--time")
    if args.compile:
        command.append("--compile")
    return command


# ---------------------------------------------------------------- discovery

@dataclasses.dataclass
class Spec:
    name: str
    path: str
    submissions: list  # paths of the submission files present, by backend then target


def is_spec_dir(path):
    return os.path.isfile(os.path.join(path, "problem.py"))


def spec_dirs(root):
    """root itself if it holds problem.py, else its immediate subdirectories that do."""
    if is_spec_dir(root):
        return [root]
    if not os.path.isdir(root):
        raise ValueError(f"{root}: not a directory")
    found = sorted(p for p in (os.path.join(root, n) for n in os.listdir(root)) if is_spec_dir(p))
    if not found:
        raise ValueError(f"{root}: no problem.py in it or in its subdirectories")
    return found


def submission_names(backends=BACKENDS, targets=tuple(TARGETS)):
    """The submission file names, <backend>.<target>.py, by backend then target."""
    return [f"{b}.{t}.py" for b in BACKENDS if b in backends for t in TARGETS if t in targets]


def discover_specs(roots, backends=BACKENDS, targets=tuple(TARGETS)):
    specs, seen = [], set()
    for root in roots:
        for path in spec_dirs(root):
            real = os.path.realpath(path)
            if real in seen:
                continue
            seen.add(real)
            files = [os.path.join(real, name) for name in submission_names(backends, targets)]
            specs.append(Spec(os.path.basename(real), real, [f for f in files if os.path.isfile(f)]))
    return specs


def label(path):
    """spec/backend.target for a submission path."""
    return f"{os.path.basename(os.path.dirname(os.path.abspath(path)))}/{backend_of(path)}.{target_of(path)}"


def backend_of(path):
    return os.path.basename(path).split(".")[0]


def target_of(path):
    """The target a submission file names (cuda.sm80.py: sm80), "" for none."""
    parts = os.path.basename(path).split(".")
    return parts[1] if len(parts) == 3 else ""


def not_this_gpu(path, cc):
    """Why a submission file cannot run on compute capability cc (a tuple), or None.

    An sm90 CUDA file is built for sm_90a, which runs on 9.0 alone; an sm80 one embeds
    compute_80 PTX, which runs on 8.0 and every later GPU. A Triton file of either target
    runs on whatever GPU is present: Triton compiles for it."""
    t = TARGETS.get(target_of(path))
    if t is None or cc is None or backend_of(path) != "cuda":
        return None
    target = target_of(path)
    if t["exact"] and tuple(cc) != t["cc"]:
        return (f"not this GPU: an {target} CUDA file ({t['gpu']}) needs compute capability "
                f"{t['cc'][0]}.{t['cc'][1]} exactly; this GPU is {cc[0]}.{cc[1]}")
    if tuple(cc) < t["cc"]:
        return (f"not this GPU: an {target} CUDA file ({t['gpu']}) needs compute capability "
                f"{t['cc'][0]}.{t['cc'][1]} or later; this GPU is {cc[0]}.{cc[1]}")
    return None


def ran_note(path, cc):
    """How a file runs on compute capability cc where that is not its target's own code."""
    t = TARGETS.get(target_of(path))
    if t is None or cc is None or tuple(cc)[0] == t["cc"][0]:
        return None
    if backend_of(path) == "triton":
        return (f"Triton compiled for this GPU ({cc[0]}.{cc[1]}): the {target_of(path)} file's "
                f"choices, not the {t['gpu']}'s code")
    return f"compute_{t['cc'][0]}{t['cc'][1]} PTX, JIT-compiled for {cc[0]}.{cc[1]}"


# ---------------------------------------------------------------- results

def new_result(path, disposition="failed", reason=""):
    """A result with every JSON key; null means not measured."""
    result = dict.fromkeys(RESULT_KEYS)
    result.update(spec=os.path.basename(os.path.dirname(os.path.abspath(path))),
                  backend=backend_of(path), target=target_of(path), disposition=disposition, reason=reason,
                  sha256=code_sha256(path))
    return result


def code_sha256(path):
    """The submission's digest, of everything after its module docstring (the
    report's codeSHA256 takes the same bytes): the report tells a result of
    older code from one of the file now in out/, and prose edits to the
    docstring leave a measurement current."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    start = data.find(b'"""')
    end = data.find(b'"""', start + 3) if start >= 0 else -1
    if end >= 0:
        data = data[end + 3:]
    return hashlib.sha256(data).hexdigest()


def tail(text, limit=TAIL_CHARS):
    text = text.strip()
    return text if len(text) <= limit else "..." + text[-limit:]


def worst(values):
    """The largest value; NaN if any is NaN (max() would hide it); None if there are none."""
    values = list(values)
    if not values:
        return None
    if any(math.isnan(v) for v in values):
        return math.nan
    return max(values)


def trial_issues(trial, tol):
    """(kind, message) for everything wrong in one trial's record."""
    if trial["mismatch"]:
        return [("mismatch", trial["mismatch"])]
    issues = []
    if trial["nan_count"]:
        issues.append(("nan", f"{trial['nan_count']} outputs are NaN (not written?)"))
    if trial["inputs_modified"]:
        issues.append(("inputs", "the submission modified its inputs"))
    if not trial["rel_l2"] <= tol:  # written this way so that NaN fails too
        issues.append(("error", f"relative L2 error {trial['rel_l2']:.3e} > {tol:g}"))
    return issues


def summarize(trials, tol, weight_issue=None):
    """Disposition and summary fields from the trial records (plain values, see run_trial)."""
    measured = [t for t in trials if not t["mismatch"]]
    issues = {"weights": weight_issue} if weight_issue else {}
    for index, trial in enumerate(trials):
        for kind, message in trial_issues(trial, tol):
            issues.setdefault(kind, f"trial {index}: {message}")  # first occurrence of each kind
    return {
        "disposition": "incorrect" if issues or not trials else "passed",
        "reason": "; ".join(issues.values()),
        "max_rel_l2": worst(t["rel_l2"] for t in measured),
        "ref_default_rel_l2": worst(t["ref_rel_l2"] for t in measured),
        "allclose_1e2": bool(trials) and all(not t["mismatch"] and t["allclose_1e2"] for t in trials),
        "allclose_1e4": bool(trials) and all(not t["mismatch"] and t["allclose_1e4"] for t in trials),
        "nan_outputs": max((t["nan_count"] for t in measured), default=None),
        "trials": len(trials),
    }


def timing_stats(times):
    return {"mean": statistics.fmean(times), "median": statistics.median(times)}


def speedup(ref_stats, stats):
    """Reference mean / submission mean, the evaluator's speedup."""
    if not ref_stats or not stats:
        return None
    return ref_stats["mean"] / stats["mean"]


def finite(value):
    """value with every non-finite float replaced by null (JSON has no NaN; Go rejects it)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    return value


def json_document(env, results):
    document = dict(env)
    document["results"] = [{k: r[k] for k in RESULT_KEYS} for r in results]
    return finite(document)


ENV_KEYS = ("gpu", "torch", "cuda", "cudnn", "driver")


def merge_documents(docs, newer=False):
    """One document of several runs' results, sorted by spec, backend and target: the
    runs must share the machine's environment and not repeat a result. The
    date is the earliest run's. With newer, a later run's result replaces an
    earlier one's, and the date is the first run's, naming each later run
    and how many of the results are its own (new or replacing)."""
    if not docs:
        raise ValueError("nothing to merge")
    for doc in docs[1:]:
        for key in ENV_KEYS:
            if doc.get(key) != docs[0].get(key):
                raise ValueError(f"runs differ in {key}: {docs[0].get(key)!r} and {doc.get(key)!r}")
    merged = {k: v for k, v in docs[0].items() if k != "results"}
    merged["date"] = min(doc.get("date") or "" for doc in docs)
    results, later = {}, []
    for i, doc in enumerate(docs):
        count = 0
        for r in doc["results"]:
            key = (r["spec"], r["backend"], r.get("target") or "")
            if key in results and not newer:
                raise ValueError(f"{key[0]}/{key[1]}.{key[2]} is in more than one run")
            results[key] = r
            count += 1
        if newer and i > 0 and count:
            later.append(f"{count} files from {doc.get('date')}")
    if later:
        merged["date"] = f"{docs[0].get('date')} ({', '.join(later)})"
    merged["results"] = [results[k] for k in sorted(results)]
    return merged


def passed_before(path, gpu):
    """The (label, sha256) pairs of the files that passed in the results document at
    path, measured on this GPU model (gpu); none where it was another."""
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    if doc.get("gpu") != gpu:
        progress(f"--changed-since: {path} was measured on {doc.get('gpu')}, this GPU is {gpu}: every file runs")
        return set()
    return {(f"{r['spec']}/{r['backend']}.{r.get('target') or ''}", r.get("sha256"))
            for r in doc["results"] if r.get("disposition") == "passed"}


def merge_main(args):
    docs = []
    for path in args.dirs:
        with open(path, encoding="utf-8") as f:
            docs.append(json.load(f))
    try:
        merged = merge_documents(docs, args.newer)
    except ValueError as exc:
        print(f"evaluate.py --merge: {exc}", file=sys.stderr)
        return 2
    write_json(args.json, merged, allow_nan=False)
    return 0


def write_json(path, value, allow_nan=True):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(value, f, indent=2, allow_nan=allow_nan)
        f.write("\n")


def utc_now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


# ---------------------------------------------------------------- text output

STARTED = time.monotonic()


def progress(message):
    """A progress line, stamped with the seconds since this process started (a long run's
    log then shows where its time went)."""
    print(f"{time.monotonic() - STARTED:7.1f}s {message}", flush=True)


def fmt_err(value):
    if value is None:
        return "-"
    return "nan" if math.isnan(value) else f"{value:.2e}"


def fmt_ms(stats):
    return "-" if not stats else f"{stats['mean']:.3f}/{stats['median']:.3f}"


def fmt_flag(value):
    return "-" if value is None else ("yes" if value else "no")


def fmt_speedup(value):
    return "-" if value is None else f"{value:.2f}x"


def first_line(text, limit=160):
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= limit else line[:limit - 3] + "..."


def item_line(index, total, result):
    parts = [f"[{index}/{total}] {result['spec']}/{result['backend']}.{result['target']}: {result['disposition']}",
             f"max rel L2 {fmt_err(result['max_rel_l2'])}"]
    if result["time_ms"]:
        parts.append(f"{fmt_ms(result['time_ms'])} ms")
    if result.get("ran"):
        parts.append(f"({result['ran']})")
    if result.get("seconds"):
        parts.append("(" + ", ".join(f"{k} {v:.1f} s" for k, v in result["seconds"].items()) + ")")
    if result["reason"]:
        parts.append(first_line(result["reason"]))
    return "  ".join(parts)


TABLE_HEADER = ["spec", "backend", "target", "disposition", "max rel L2", "allclose 1e-2/1e-4",
                "ms mean/median", "ref tf32 ms", "ref ieee ms", "ref compile ms",
                "speedup tf32/ieee/compile"]


def table_row(r):
    compiled = r.get("ref_compile_ms")
    return [
        r["spec"], r["backend"], r["target"] or "-", r["disposition"], fmt_err(r["max_rel_l2"]),
        f"{fmt_flag(r['allclose_1e2'])}/{fmt_flag(r['allclose_1e4'])}",
        fmt_ms(r["time_ms"]), fmt_ms(r["ref_default_ms"]), fmt_ms(r["ref_strict_ms"]),
        fmt_ms(compiled) if compiled else "-",
        f"{fmt_speedup(speedup(r['ref_default_ms'], r['time_ms']))}/"
        f"{fmt_speedup(speedup(r['ref_strict_ms'], r['time_ms']))}/"
        f"{fmt_speedup(speedup(compiled, r['time_ms'])) if compiled else '-'}",
    ]


def format_table(results):
    rows = [TABLE_HEADER] + [table_row(r) for r in results]
    widths = [max(len(row[i]) for row in rows) for i in range(len(TABLE_HEADER))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    reasons = [f"{r['spec']}/{r['backend']}.{r['target']}: {first_line(r['reason'])}"
               for r in results if r["disposition"] != "passed"]
    notes = sorted({r["ran"] for r in results if r.get("ran")})
    return "\n".join(lines + ([""] + reasons if reasons else []) + ([""] + notes if notes else []))


# ---------------------------------------------------------------- build phase (worker processes)

def load_module(path):
    """Import a file under a name unique to its path (every spec has a problem.py and several
    submissions)."""
    digest = hashlib.sha1(os.path.abspath(path).encode()).hexdigest()[:12]
    name = f"evaluated_{backend_of(path)}_{target_of(path) or 'x'}_{digest}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # triton and dataclasses look a function's module up by name
    spec.loader.exec_module(module)
    return module


def build_one(path):
    """Import one submission (running its load_inline build); the error text, or None.

    The text starts with the exception's first line, so that a one-line summary says what
    failed; the tail of the log and traceback that follows holds the compiler's errors."""
    log = io.StringIO()
    try:
        with contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
            load_module(path)
    except Exception as exc:
        details = tail(log.getvalue() + "\n" + traceback.format_exc())
        return first_line(f"{type(exc).__name__}: {exc}") + "\n" + details
    return None


def warm_compile(spec_dir):
    """Compile one spec's reference with torch.compile and run it once, so that Inductor's
    on-disk caches hold its kernels when the timing child compiles it again; the error
    text, or None. Compiling is CPU work: done here, it overlaps the extension builds."""
    log = io.StringIO()
    try:
        with contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
            problem = load_module(os.path.join(spec_dir, "problem.py"))
            model = torch.compile(construct(problem.Model, init_inputs(problem)))
            model(*timing_inputs(problem))
            torch.cuda.synchronize()
    except Exception as exc:
        return first_line(f"{type(exc).__name__}: {exc}") + "\n" + tail(log.getvalue() + "\n" + traceback.format_exc())
    return None


WARM_JOBS = 4  # torch.compile warm-ups at once: each holds a full-size model on the GPU


def lower_priority():
    """Run a build worker at the lowest CPU priority: an evaluation beside the builds then
    gets a core whenever it wants one, and its launches are not delayed by them."""
    os.nice(19)


class Builds:
    """The build phase, running beside the evaluation: every submission's build is queued at
    once (niced worker processes, a fresh interpreter each, so no module or extension state
    leaks between builds), and the evaluation of a file waits only for its own build. The
    torch.compile warm-ups run GPU work, so they run first, in a pool of their own, and
    warmed() waits for all of them before anything is timed."""

    def __init__(self, paths, jobs, compile_dirs=()):
        context = multiprocessing.get_context("spawn")  # CUDA state must never be forked
        self.total = len(paths) + len(compile_dirs)
        self.done = 0
        self.lock = threading.Lock()  # the pools' threads run the done callbacks
        self.pools = []
        self.warmups = [self._submit(warm_compile, d, min(WARM_JOBS, jobs), context, None)
                        for d in compile_dirs]
        self.builds = {p: self._submit(build_one, p, jobs, context, lower_priority) for p in paths}

    def _submit(self, fn, key, workers, context, initializer):
        pool = next((q for q in self.pools if q[0] is fn), None)
        if pool is None:
            pool = (fn, ProcessPoolExecutor(max_workers=max(1, workers), mp_context=context,
                                            max_tasks_per_child=1, initializer=initializer))
            self.pools.append(pool)
        future = pool[1].submit(fn, key)
        future.add_done_callback(lambda f: self._report(fn, key, f))
        return future

    def _report(self, fn, key, future):
        with self.lock:
            self.done += 1
            done = self.done
        what = label(key) if fn is build_one else f"{os.path.basename(key)} torch.compile"
        error = self._outcome(future)
        status = ("failed: " + first_line(error) if error else
                  "worker died, deferred to evaluation" if future.exception() else "ok")
        progress(f"[build {done}/{self.total}] {what}: {status}")

    @staticmethod
    def _outcome(future):
        try:
            return future.result()
        except BrokenProcessPool:
            return None  # the isolated evaluation imports the file again and will tell

    def error(self, path):
        """Wait for path's build; its error text, or None (built, or a worker died)."""
        future = self.builds.get(path)
        return self._outcome(future) if future else None

    def warmed(self):
        """Wait for every torch.compile warm-up (a failed one is only reported: the timing
        child compiles again and records what it gets)."""
        for future in self.warmups:
            self._outcome(future)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for _, pool in self.pools:
            pool.shutdown(wait=True, cancel_futures=exc[0] is not None)


def build_all(paths, jobs, compile_dirs=()):
    """Build every submission (and warm torch.compile for compile_dirs) and wait for all;
    path -> build error text, or None (built or unknown)."""
    with Builds(paths, jobs, compile_dirs) as builds:
        builds.warmed()
        return {p: builds.error(p) for p in paths}


# ---------------------------------------------------------------- evaluation phase (parent side)

GO = "go\n"  # what a started child waits for on stdin before its GPU work


class Child:
    """One evaluation in a child process, started ahead of its turn.

    The child prepares at once (starts Python, imports torch, the problem and the file,
    builds the models on the CPU: seconds a file, most of a small problem's time) and
    then waits on stdin; go() lets it use the GPU. The parent starts the next file's
    child while this one runs, so the preparation overlaps the previous file's GPU work
    and never the timing of its own."""

    def __init__(self, mode, target, args, truth_cache=None):
        self.timeout = args.timeout
        self.tmp = tempfile.TemporaryDirectory(prefix="evaluate-")
        self.result_path = os.path.join(self.tmp.name, "result.json")
        self.log = open(os.path.join(self.tmp.name, "output.txt"), "w+", encoding="utf-8", errors="replace")
        command = child_command(mode, target, self.result_path, args, truth_cache) + ["--wait-go"]
        self.proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=self.log,
                                     stderr=subprocess.STDOUT, text=True)
        self.started = None

    def go(self):
        """Let the child use the GPU; the timeout counts from here."""
        if self.started is not None:
            return
        self.started = time.monotonic()
        try:
            self.proc.stdin.write(GO)
            self.proc.stdin.close()
        except (BrokenPipeError, OSError):
            pass  # it ended while preparing: its result file or its output says why

    def result(self):
        """Let the child run (if not yet) and wait for it; (its JSON result or None,
        its output tail)."""
        self.go()
        left = max(0.0, self.timeout - (time.monotonic() - self.started))
        try:
            status = f"exit status {self.proc.wait(timeout=left)}"
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            status = f"timed out after {self.timeout} s"
        try:
            self.log.seek(0)
            output = tail(f"{status}\n{self.log.read()}")
            if not os.path.exists(self.result_path):
                return None, output
            with open(self.result_path, encoding="utf-8") as f:
                return json.load(f), output
        finally:
            self.close()

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.log.close()
        self.tmp.cleanup()


def wait_for_go(args):
    """In a child started with --wait-go: block until the parent says go; a closed
    pipe (the parent is gone) ends the child before it touches the GPU."""
    if args.wait_go and sys.stdin.readline() != GO:
        sys.exit(0)


def run_child(mode, target, args):
    """Run one evaluation in a child process now; (its JSON result or None, its output tail)."""
    return Child(mode, target, args).result()


def evaluate_file(path, build_error, args, child=None, truth_cache=None):
    """One file's result: its build's failure, or its child's verdict (child: one
    started ahead for it, else one is started now)."""
    if build_error:
        return new_result(path, reason="build failed: " + build_error)
    result, output = (child or Child("--item", path, args, truth_cache)).result()
    if result is None:
        return new_result(path, reason="evaluation process died: " + output)
    return result


def time_reference(spec, args, child=None):
    times, output = (child or Child("--ref-timing", spec.path, args)).result()
    if times is None:
        progress(f"[reference] {spec.name}: timing failed, speedups will be missing\n{output}")
        return NO_REF_TIMES
    compiled = times.get("ref_compile_ms")
    seconds = times.pop("seconds", None) or {}
    progress(f"[reference] {spec.name}: tf32 {fmt_ms(times['ref_default_ms'])} ms, "
             f"ieee {fmt_ms(times['ref_strict_ms'])} ms"
             + (f", torch.compile {fmt_ms(compiled)} ms" if compiled else "")
             + "".join(f", {k} {v:.1f} s" for k, v in seconds.items()))
    return times


def truth_folder(shm="/dev/shm"):
    """Where a problem's float64 truths and inputs are shared: /dev/shm when it holds a
    problem's largest (a container's is often 64 MB), else the temporary folder on disk;
    a share that does not fit is recomputed by each file."""
    if os.path.isdir(shm) and shutil.disk_usage(shm).free >= SHARED_BYTES:
        return shm
    return None


def evaluate_all(specs, builds, args, on_result=lambda results: None):
    """Evaluate every submission in its own child process, each as soon as its build is done
    (builds: Builds, or a dict of build errors); on_result sees the results so far after
    each one (a long run cut short keeps what it measured)."""
    build_error = builds.get if isinstance(builds, dict) else builds.error
    if not isinstance(builds, dict):
        builds.warmed()
    # The runs in order: each spec's reference timing (spec, None), then its files
    # (spec, path). The child of the next run is started as soon as the current one
    # has the GPU (once the next file's build is done).
    runs = []
    for spec in specs:
        if args.time and not args.no_ref_time and spec.submissions:
            runs.append((spec, None))
        runs.extend((spec, path) for path in spec.submissions)

    # The float64 truths a problem's files share, in memory where /dev/shm has room.
    truths = tempfile.TemporaryDirectory(prefix="evaluate-truth-", dir=truth_folder())
    progress(f"[truths] shared through {truths.name} ({shutil.disk_usage(truths.name).free / 2**30:.1f} GiB free)")

    def truth_cache(spec):
        return os.path.join(truths.name, str(specs.index(spec)))

    def start(run):
        spec, path = run
        if path is None:
            return None, Child("--ref-timing", spec.path, args)
        error = build_error(path)
        return error, None if error else Child("--item", path, args, truth_cache(spec))

    results = []
    total = sum(len(s.submissions) for s in specs)
    ref_times = NO_REF_TIMES
    ahead = start(runs[0]) if runs else None
    try:
        for i, (spec, path) in enumerate(runs):
            if i > 0 and runs[i - 1][0] is not spec:
                shutil.rmtree(truth_cache(runs[i - 1][0]), ignore_errors=True)
            (error, child), ahead = ahead, None
            if child:
                child.go()
            if i + 1 < len(runs):
                ahead = start(runs[i + 1])
            if path is None:
                ref_times = time_reference(spec, args, child)
                continue
            if i == 0 or runs[i - 1][0] is not spec:
                ref_times = NO_REF_TIMES  # a spec whose reference is not timed
            result = evaluate_file(path, error, args, child, truth_cache(spec))
            result.update(ref_times)
            results.append(result)
            progress(item_line(len(results), total, result))
            on_result(results)
    finally:
        if ahead and ahead[1]:
            ahead[1].close()
        truths.cleanup()
    return results


def sweep_all(paths, args, evaluate=None):
    """Evaluate many small submissions in parallel worker processes, each file in-process.

    The files go in rounds of SWEEP_TASKS_PER_WORKER per worker, each round in a fresh pool,
    so a fault that poisons one CUDA context costs at most a round's files of that worker;
    a worker that dies fails only the files it held. (Not the pool's own max_tasks_per_child:
    on Python 3.11 and 3.12 a pool with it stops once a worker reaches its limit while files
    are queued, CPython gh-115634.) Every failure is then judged again alone (recheck_alone)."""
    evaluate = evaluate or evaluate_submission
    results = {}
    context = multiprocessing.get_context("spawn")
    workers = min(args.jobs, len(paths)) or 1
    per_round = workers * SWEEP_TASKS_PER_WORKER
    done = 0
    for start in range(0, len(paths), per_round):
        batch = paths[start:start + per_round]
        with ProcessPoolExecutor(max_workers=min(workers, len(batch)), mp_context=context) as pool:
            futures = {pool.submit(evaluate, path, args): path for path in batch}
            for future in as_completed(futures):
                path = futures[future]
                try:
                    results[path] = future.result()
                except BrokenProcessPool as exc:
                    results[path] = new_result(path, reason=f"worker process died: {exc}")
                done += 1
                progress(item_line(done, len(paths), results[path]))
    return recheck_alone(paths, [results[p] for p in paths], args)


def recheck_alone(paths, results, args, evaluate=None):
    """A CUDA fault poisons its worker's context, and the files that worker takes next
    fail with the same error: judge every failed or incorrect file again in a fresh
    process of its own, and keep that verdict (a file that passes alone says so)."""
    evaluate = evaluate or (lambda path: evaluate_file(path, None, args))
    checked = []
    for path, result in zip(paths, results):
        if result["disposition"] != "passed":
            again = evaluate(path)
            if again["disposition"] == "passed":
                again["reason"] = "passed alone; in the sweep: " + result["reason"].split("\n")[0]
            progress(f"[alone] {label(path)}: {again['disposition']} (in the sweep: {result['disposition']})")
            result = again
        checked.append(result)
    return checked


def driver_version():
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=60, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return out.split("\n")[0].strip() or None


def environment():
    return {
        "gpu": torch.cuda.get_device_name(),
        "torch": str(torch.__version__),
        "cuda": torch.version.cuda,
        "cudnn": str(torch.backends.cudnn.version()),
        "driver": driver_version(),
        "date": utc_now(),
    }


def run_all(args):
    try:
        specs = discover_specs(args.dirs, args.backends, args.targets)
    except ValueError as exc:
        print(f"evaluate.py: {exc}", file=sys.stderr)
        return 2
    for spec in specs:
        if not spec.submissions:
            progress(f"warning: {spec.path} has no {' or '.join(submission_names(args.backends, args.targets))}")
    # The evaluator compiles with device-side assertions on and keeps the variable set;
    # children inherit it, so builds and cache lookups see the same flags.
    os.environ["TORCH_USE_CUDA_DSA"] = "1"
    cc = device_capability()
    skipped = {}
    for spec in specs:
        for path in spec.submissions:
            why = not_this_gpu(path, cc)
            if why:
                skipped[path] = new_result(path, "skipped", why)
        spec.submissions = [p for p in spec.submissions if p not in skipped]
    for result in skipped.values():
        progress(f"[skipped] {result['spec']}/{result['backend']}.{result['target']}: {result['reason']}")
    env = environment()
    if args.changed_since:
        before = passed_before(args.changed_since, env["gpu"])
        for spec in specs:
            spec.submissions = [p for p in spec.submissions if (label(p), code_sha256(p)) not in before]
        specs = [s for s in specs if s.submissions]
        progress(f"--changed-since: {sum(len(s.submissions) for s in specs)} files changed since {args.changed_since}")
    paths = [p for s in specs for p in s.submissions]

    def finish(results):
        for result in results:
            result["ran"] = ran_note(os.path.join(result["spec"], f"{result['backend']}.{result['target']}.py"), cc)
        results = sorted(results + list(skipped.values()), key=lambda r: (r["spec"], r["backend"], r["target"]))
        if args.json:
            write_json(args.json, json_document(env, results), allow_nan=False)
        return results

    if args.sweep:
        results = sweep_all(paths, args)
    else:
        compile_dirs = [s.path for s in specs if s.submissions] if args.compile else []
        with Builds(paths, args.jobs, compile_dirs) as builds:
            results = evaluate_all(specs, builds, args, lambda so_far: finish(list(so_far)))
    results = finish(results)
    print()
    print(format_table(results), flush=True)
    return 0 if run_passed(results) else 1


def run_passed(results):
    """Whether a run passed: something ran, and everything that ran passed."""
    ran = [r for r in results if r["disposition"] != "skipped"]
    return bool(ran) and all(r["disposition"] == "passed" for r in ran)


def device_capability():
    """This GPU's compute capability, or None without torch or a GPU (nothing is skipped:
    the files fail on their own)."""
    if torch is None or not torch.cuda.is_available():
        return None
    return tuple(torch.cuda.get_device_capability())


# ---------------------------------------------------------------- child side (GPU work)

def set_seed(seed):
    torch.manual_seed(seed)
    torch.cuda.manual_seed(seed)


def to_device(x):
    # The evaluator casts every tensor to the fp32 precision, then moves it to the GPU.
    return x.to(dtype=torch.float32).to("cuda") if isinstance(x, torch.Tensor) else x


def init_inputs(problem):
    set_seed(SEED)
    return [to_device(x) for x in problem.get_init_inputs()]


def construct(model_class, inits):
    """Seed, build on the CPU, move to the GPU: what the evaluator does for each model."""
    with torch.no_grad():
        set_seed(SEED)
        model = model_class(*inits)
    return model.to(device="cuda", dtype=torch.float32)


def weight_mismatch(ref, new):
    """Why new's parameters differ from ref's (names, shapes, dtypes, values), or None."""
    ref_params, new_params = dict(ref.named_parameters()), dict(new.named_parameters())
    if list(ref_params) != list(new_params):
        return f"parameters {list(new_params)} differ from the reference's {list(ref_params)}"
    for name, p in ref_params.items():
        q = new_params[name]
        if (q.shape, q.dtype) != (p.shape, p.dtype):
            return f"parameter {name}: {tuple(q.shape)} {q.dtype}, reference {tuple(p.shape)} {p.dtype}"
        if not torch.equal(p, q):
            return f"parameter {name}: values differ from the reference's (seeded init not reproduced)"
    return None


def trial_seeds(count):
    # The evaluator draws the per-trial seeds from the generator seeded with SEED.
    torch.manual_seed(SEED)
    return [torch.randint(0, 2**32 - 1, (1,)).item() for _ in range(count)]


def poison_allocator(like):
    """Free a NaN-filled block of the output's size, so the caching allocator most likely hands
    it to the submission's output: an output element it never writes then reads NaN."""
    poison = torch.full_like(like, math.nan)
    del poison


def output_mismatch(ref_out, out):
    if not isinstance(out, torch.Tensor):
        return f"output is a {type(out).__name__}, not a tensor"
    if out.shape != ref_out.shape:
        return f"output shape {tuple(out.shape)}, expected {tuple(ref_out.shape)}"
    if out.dtype != ref_out.dtype:
        return f"output dtype {out.dtype}, expected {ref_out.dtype}"
    return None


def as_double(x):
    return x.double() if isinstance(x, torch.Tensor) else x


def rel_l2(out, truth):
    """||out - truth|| / ||truth|| in float64; the absolute error ||out - truth||
    when the truth is all zeros (a configuration no tap reaches, without bias),
    as the Go reference does, rather than 0/0."""
    err = torch.linalg.vector_norm(out.double() - truth)
    scale = torch.linalg.vector_norm(truth)
    return (err / scale if scale > 0 else err).item()


def same_inputs(inputs, saved):
    return all(torch.equal(a, b) if isinstance(a, torch.Tensor) else a == b
               for a, b in zip(inputs, saved))


def share(value, path):
    """Leave value (tensors on the CPU) at path for a problem's later files: written
    whole, then renamed, so a reader never sees half a file; no room, no file."""
    part = f"{path}.{os.getpid()}"
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        torch.save(value, part)
        os.replace(part, path)
    except OSError:  # no room: the next file computes its own
        with contextlib.suppress(OSError):
            os.remove(part)


def shared(path):
    """What share() left at path, memory-mapped, then copied to the GPU once:
    unpickling straight into the GPU moved the bytes through Python at about 1 GB/s."""
    value = torch.load(path, mmap=True, map_location="cpu", weights_only=True)
    return value.to("cuda") if isinstance(value, torch.Tensor) else [to_device(x) for x in value]


def float64_truth(truth_model, inputs, cached=None):
    """The float64 reference's output for inputs; with cached (a file path), read from
    there if a file of the same problem wrote it, else computed and left there for the
    next."""
    if cached and os.path.exists(cached):
        return shared(cached)
    truth = truth_model(*[as_double(x) for x in inputs])
    if cached and isinstance(truth, torch.Tensor) and truth.numel() * 8 <= TRUTH_CACHE_BYTES:
        share(truth.cpu(), cached)
    return truth


def trial_inputs(get_inputs, cached=None):
    """A trial's inputs on the GPU, drawn after its seed was set; with cached (a file
    path), read from there if a file of the same problem drew them (the same seed draws
    the same values), else drawn and left there for the next: drawing a large input on
    the CPU costs seconds a trial."""
    if cached and os.path.exists(cached):
        return shared(cached)
    drawn = get_inputs()
    size = sum(x.numel() * x.element_size() for x in drawn if isinstance(x, torch.Tensor))
    if cached and size <= TRUTH_CACHE_BYTES:
        share(list(drawn), cached)
    return [to_device(x) for x in drawn]


def run_trial(ref, truth_model, new, inputs, cached_truth=None, truth_clock=None):
    """One correctness trial; a record of plain values for summarize(). truth_clock: a
    one-element list that the seconds spent on the truth are added to."""
    ref_out = ref(*inputs)  # the evaluator runs the reference first
    saved = [x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]
    # The truth before the submission runs: nothing it does can reach a shared truth.
    torch.cuda.synchronize()
    clock = time.monotonic()
    truth = float64_truth(truth_model, saved, cached_truth)
    torch.cuda.synchronize()
    if truth_clock is not None:
        truth_clock[0] += time.monotonic() - clock
    poison_allocator(ref_out)
    out = new(*inputs)
    torch.cuda.synchronize()  # an asynchronous kernel fault surfaces here, not later
    mismatch = output_mismatch(ref_out, out)
    if mismatch:
        return {"mismatch": mismatch}
    nan_count = int(out.isnan().sum())
    return {
        "mismatch": None,
        "nan_count": nan_count,
        "inputs_modified": not same_inputs(inputs, saved),
        "rel_l2": rel_l2(out, truth),
        "ref_rel_l2": rel_l2(ref_out, truth),
        "allclose_1e2": torch.allclose(ref_out, out, atol=1e-2, rtol=1e-2),
        "allclose_1e4": torch.allclose(ref_out, out, atol=1e-4, rtol=1e-4),
    }


def run_trials(ref, new, get_inputs, count, truth_cache=None, truth_clock=None):
    """The correctness trials; truth_cache: the folder of this problem's shared truths
    (the trials run in the same order in every file, so trial i's truth is the same)."""
    truth_model = copy.deepcopy(ref).double()  # same weights, float64 on the GPU: the truth
    trials = []
    with torch.no_grad():
        for index, seed in enumerate(trial_seeds(count)):
            set_seed(seed)
            cached = os.path.join(truth_cache, f"trial{index}-{seed}") if truth_cache else None
            inputs = trial_inputs(get_inputs, cached and cached + ".inputs.pt")
            trials.append(run_trial(ref, truth_model, new, inputs, cached and cached + ".pt", truth_clock))
            if trials[-1]["mismatch"]:
                break  # the evaluator stops at the first shape mismatch
    return trials


def timing_inputs(problem):
    set_seed(SEED)
    return [to_device(x) for x in problem.get_inputs()]


def time_model(model, inputs, timed):
    """The evaluator's cuda_event timing; milliseconds of each kept trial.

    Like the evaluator it runs outside no_grad, synchronizes after each warm-up, empties
    the allocator cache, then runs timed + 1 trials and discards the first."""
    flush = torch.empty(FLUSH_FLOATS, dtype=torch.float32, device="cuda")
    for _ in range(WARMUP):
        model(*inputs)
        torch.cuda.synchronize()
    torch.cuda.empty_cache()
    times = []
    for trial in range(timed + 1):
        torch.cuda.synchronize()
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        flush.zero_()  # evict the inputs and weights from L2: cold-cache timing
        start.record()
        # Holding the previous output during the call, as the evaluator's `_ = ...` does.
        out = model(*inputs)  # noqa: F841
        end.record()
        torch.cuda.synchronize()
        if trial > 0:
            times.append(start.elapsed_time(end))
    return times


def tf32_switch():
    """(object, attribute, strict value) that turns cuDNN convolution TF32 off in this torch."""
    conv = getattr(torch.backends.cudnn, "conv", None)
    if conv is not None and hasattr(conv, "fp32_precision"):  # torch >= 2.9
        return conv, "fp32_precision", "ieee"
    return torch.backends.cudnn, "allow_tf32", False


@contextlib.contextmanager
def strict_fp32():
    target, attribute, strict = tf32_switch()
    saved = getattr(target, attribute)
    setattr(target, attribute, strict)
    try:
        yield
    finally:
        setattr(target, attribute, saved)


def evaluate_submission(path, args):
    result = new_result(path)
    # One isolation boundary: anything raised is the submission's failure, recorded and reported.
    try:
        problem = load_module(os.path.join(os.path.dirname(path), "problem.py"))
        submission = load_module(path)
        inits = init_inputs(problem)
        wait_for_go(args)  # the imports are done: what follows uses the GPU
        # Where a file's wall time goes (the truths' share of the trials apart): what
        # a long run would cut first.
        seconds = result["seconds"] = {}
        clock = time.monotonic()
        ref = construct(problem.Model, inits)
        new = construct(submission.Model, inits)
        weight_issue = weight_mismatch(ref, new)
        seconds["construct"] = time.monotonic() - clock
        clock = time.monotonic()
        truth_clock = [0.0]
        result.update(summarize(run_trials(ref, new, problem.get_inputs, args.trials, args.truth_cache, truth_clock),
                                args.tol, weight_issue))
        seconds["trials"], seconds["truths"] = time.monotonic() - clock, truth_clock[0]
        if args.time:
            clock = time.monotonic()
            result["time_ms"] = timing_stats(time_model(new, timing_inputs(problem), args.timed))
            seconds["timing"] = time.monotonic() - clock
    except Exception as exc:
        result.update(disposition="failed", reason=tail(f"{type(exc).__name__}: {exc}"))
    return result


def item_main(args):
    write_json(args.result, evaluate_submission(os.path.abspath(args.item), args))
    return 0


def ref_timing_main(args):
    """Time one spec's reference with PyTorch defaults (TF32 convs) and with strict fp32."""
    problem = load_module(os.path.join(args.ref_timing, "problem.py"))
    inits = init_inputs(problem)
    wait_for_go(args)
    clock = time.monotonic()
    ref = construct(problem.Model, inits)
    inputs = timing_inputs(problem)
    default = timing_stats(time_model(ref, inputs, args.timed))
    with strict_fp32():
        strict = timing_stats(time_model(ref, inputs, args.timed))
    times = {"ref_default_ms": default, "ref_strict_ms": strict, "ref_compile_ms": None,
             "seconds": {"eager": time.monotonic() - clock}}
    if args.compile:
        # Inductor's default mode at PyTorch's default precision: it fuses the ops after
        # the conv and leaves the conv to cuDNN, the strongest thing a user picks instead.
        clock = time.monotonic()
        times["ref_compile_ms"] = timing_stats(time_model(torch.compile(ref), inputs, args.timed))
        times["seconds"]["compile"] = time.monotonic() - clock
    write_json(args.result, times)
    return 0


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.item:
        return item_main(args)
    if args.ref_timing:
        return ref_timing_main(args)
    if args.merge:
        return merge_main(args)
    return run_all(args)


if __name__ == "__main__":
    sys.exit(main())

"""Tests of evaluate.py's pure parts; they run without torch or a GPU:
python3 -m unittest discover -s verify/harness   (or: cd verify/harness && python3 -m unittest)"""

import contextlib
import importlib.util
import io
import json
import math
import os
import sys
import tempfile
import threading
import unittest
from unittest import mock

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import evaluate  # noqa: E402


def good_trial(rel=1e-7, ref_rel=3e-4, nan=0, modified=False, close2=True, close4=False):
    return {"mismatch": None, "nan_count": nan, "inputs_modified": modified, "rel_l2": rel,
            "ref_rel_l2": ref_rel, "allclose_1e2": close2, "allclose_1e4": close4}


def write(path, text=""):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


class ParseArgsTest(unittest.TestCase):
    def test_defaults(self):
        args = evaluate.parse_args(["out/58"])
        self.assertEqual(args.dirs, ["out/58"])
        self.assertFalse(args.time)
        self.assertEqual((args.trials, args.timed, args.tol), (5, 100, 1e-5))
        self.assertEqual(args.jobs, min(16, os.cpu_count() or 1))
        self.assertIsNone(args.json)
        self.assertIsNone(args.item)

    def test_options(self):
        args = evaluate.parse_args(["--time", "--trials", "3", "--jobs", "4", "--json", "r.json",
                                    "--tol", "1e-6", "--timed", "10", "a", "b"])
        self.assertEqual(args.dirs, ["a", "b"])
        self.assertTrue(args.time)
        self.assertEqual((args.trials, args.jobs, args.json, args.tol, args.timed),
                         (3, 4, "r.json", 1e-6, 10))

    def test_sweep_and_backends(self):
        args = evaluate.parse_args(["--sweep", "--backends", "triton", "d"])
        self.assertTrue(args.sweep)
        self.assertEqual(args.backends, ["triton"])
        self.assertEqual(evaluate.parse_args(["d"]).backends, list(evaluate.BACKENDS))

    def test_usage_errors(self):
        for argv in ([], ["--trials", "0", "a"], ["--jobs", "x", "a"], ["--item", "x/cuda.sm80.py"],
                     ["--sweep", "--time", "a"], ["--backends", "opencl", "a"], ["--targets", "sm70", "a"],
                     ["--compile", "a"], ["--time", "--compile", "--no-ref-time", "a"]):
            with self.subTest(argv=argv), mock.patch("sys.stderr"), self.assertRaises(SystemExit):
                evaluate.parse_args(argv)

    def test_child_command_round_trips(self):
        args = evaluate.parse_args(["--time", "--trials", "2", "--tol", "3e-6", "--timed", "7", "d"])
        command = evaluate.child_command("--item", "/s/58/cuda.sm80.py", "/tmp/r.json", args)
        self.assertEqual(command[:2], [sys.executable, evaluate.SCRIPT])
        child = evaluate.parse_args(command[2:])
        self.assertEqual(child.item, "/s/58/cuda.sm80.py")
        self.assertEqual(child.result, "/tmp/r.json")
        self.assertEqual((child.trials, child.tol, child.timed, child.time), (2, 3e-6, 7, True))
        untimed = evaluate.parse_args(evaluate.child_command(
            "--ref-timing", "/s/58", "r", evaluate.parse_args(["d"]))[2:])
        self.assertEqual(untimed.ref_timing, "/s/58")
        self.assertFalse(untimed.time)
        self.assertFalse(untimed.compile)
        compiled = evaluate.parse_args(evaluate.child_command(
            "--ref-timing", "/s/58", "r", evaluate.parse_args(["--time", "--compile", "d"]))[2:])
        self.assertTrue(compiled.compile and compiled.time)
        self.assertIsNone(child.truth_cache)
        shared = evaluate.parse_args(evaluate.child_command("--item", "/s/58/cuda.sm80.py", "r", args, "/t/0")[2:])
        self.assertEqual(shared.truth_cache, "/t/0")


class DiscoveryTest(unittest.TestCase):
    def setUp(self):
        self.root = tempfile.mkdtemp()
        write(os.path.join(self.root, "out", "58", "problem.py"))
        write(os.path.join(self.root, "out", "58", "triton.sm90.py"))
        write(os.path.join(self.root, "out", "58", "cuda.sm90.py"))
        write(os.path.join(self.root, "out", "58", "cuda.py"))  # no target: not a submission
        write(os.path.join(self.root, "out", "58", "cuda.sm80.py"))
        write(os.path.join(self.root, "out", "61", "problem.py"))
        write(os.path.join(self.root, "out", "61", "cuda.sm80.py"))
        write(os.path.join(self.root, "out", "61", "notes.py"))
        write(os.path.join(self.root, "out", "README.md"))
        os.makedirs(os.path.join(self.root, "out", "empty"))

    def path(self, *parts):
        return os.path.realpath(os.path.join(self.root, *parts))

    def test_parent_directory(self):
        specs = evaluate.discover_specs([os.path.join(self.root, "out")])
        self.assertEqual([s.name for s in specs], ["58", "61"])
        self.assertEqual(specs[0].submissions,
                         [self.path("out", "58", "cuda.sm80.py"), self.path("out", "58", "cuda.sm90.py"),
                          self.path("out", "58", "triton.sm90.py")])
        self.assertEqual(specs[1].submissions, [self.path("out", "61", "cuda.sm80.py")])

    def test_backend_filter(self):
        specs = evaluate.discover_specs([os.path.join(self.root, "out")], ["triton"])
        self.assertEqual([s.submissions for s in specs], [[self.path("out", "58", "triton.sm90.py")], []])

    def test_target_filter(self):
        specs = evaluate.discover_specs([os.path.join(self.root, "out")], evaluate.BACKENDS, ["sm90"])
        self.assertEqual([s.submissions for s in specs],
                         [[self.path("out", "58", "cuda.sm90.py"), self.path("out", "58", "triton.sm90.py")], []])

    def test_spec_directory_and_duplicates(self):
        spec = os.path.join(self.root, "out", "61")
        specs = evaluate.discover_specs([spec, spec + "/", os.path.join(self.root, "out")])
        self.assertEqual([s.name for s in specs], ["61", "58"])

    def test_no_spec(self):
        for bad in (os.path.join(self.root, "out", "empty"), os.path.join(self.root, "missing")):
            with self.subTest(bad=bad), self.assertRaises(ValueError):
                evaluate.discover_specs([bad])

    def test_label_and_result(self):
        path = self.path("out", "58", "triton.sm90.py")
        self.assertEqual(evaluate.label(path), "58/triton.sm90")
        result = evaluate.new_result(path, reason="boom")
        self.assertEqual(tuple(result), evaluate.RESULT_KEYS)
        self.assertEqual((result["spec"], result["backend"], result["target"], result["disposition"], result["reason"]),
                         ("58", "triton", "sm90", "failed", "boom"))
        self.assertIsNone(result["time_ms"])


class TruthFolderTest(unittest.TestCase):
    def test_falls_back_to_disk(self):
        # No /dev/shm, or one without room for a problem's largest truths and inputs:
        # the temporary folder's default (None), never a folder the shares overflow.
        with tempfile.TemporaryDirectory() as d:
            self.assertIsNone(evaluate.truth_folder(os.path.join(d, "absent")))
            free = evaluate.shutil.disk_usage(d).free
            want = d if free >= 10 * evaluate.TRUTH_CACHE_BYTES else None
            self.assertEqual(evaluate.truth_folder(d), want)


class TargetTest(unittest.TestCase):
    def test_not_this_gpu(self):
        # An sm90 CUDA file runs on 9.0 alone, an sm80 one on 8.0 and later (its PTX);
        # Triton files of both targets run anywhere.
        for name, cc, runs in [("cuda.sm80.py", (8, 0), True), ("cuda.sm80.py", (8, 6), True),
                               ("cuda.sm80.py", (9, 0), True), ("cuda.sm80.py", (7, 5), False),
                               ("cuda.sm90.py", (9, 0), True), ("cuda.sm90.py", (8, 0), False),
                               ("cuda.sm90.py", (10, 0), False), ("triton.sm90.py", (8, 0), True),
                               ("triton.sm80.py", (9, 0), True)]:
            with self.subTest(name=name, cc=cc):
                why = evaluate.not_this_gpu("/o/58/" + name, cc)
                self.assertEqual(why is None, runs, why)
                if why:
                    self.assertIn("not this GPU", why)
        self.assertIsNone(evaluate.not_this_gpu("/o/58/cuda.sm90.py", None))  # no GPU known: the file fails itself

    def test_ran_note(self):
        self.assertIsNone(evaluate.ran_note("/o/58/cuda.sm80.py", (8, 0)))
        self.assertIsNone(evaluate.ran_note("/o/58/cuda.sm90.py", (9, 0)))
        self.assertEqual(evaluate.ran_note("/o/58/cuda.sm80.py", (9, 0)), "compute_80 PTX, JIT-compiled for 9.0")
        self.assertIn("not the A100's code", evaluate.ran_note("/o/58/triton.sm80.py", (9, 0)))

    def test_run_passed(self):
        ok = evaluate.new_result("/o/58/cuda.sm80.py", "passed")
        skip = evaluate.new_result("/o/58/cuda.sm90.py", "skipped", "not this GPU")
        bad = evaluate.new_result("/o/58/triton.sm80.py", "failed", "boom")
        self.assertTrue(evaluate.run_passed([ok, skip]))
        self.assertFalse(evaluate.run_passed([ok, skip, bad]))
        self.assertFalse(evaluate.run_passed([skip]))  # nothing ran


class SummaryTest(unittest.TestCase):
    def test_passed(self):
        s = evaluate.summarize([good_trial(rel=1e-7), good_trial(rel=2e-7, ref_rel=4e-4)], 1e-5)
        self.assertEqual(s["disposition"], "passed")
        self.assertEqual(s["reason"], "")
        self.assertEqual((s["max_rel_l2"], s["ref_default_rel_l2"]), (2e-7, 4e-4))
        self.assertEqual((s["allclose_1e2"], s["allclose_1e4"]), (True, False))
        self.assertEqual((s["nan_outputs"], s["trials"]), (0, 2))

    def test_error_over_tolerance(self):
        s = evaluate.summarize([good_trial(), good_trial(rel=3e-4), good_trial(rel=5e-4)], 1e-5)
        self.assertEqual(s["disposition"], "incorrect")
        self.assertEqual(s["reason"], "trial 1: relative L2 error 3.000e-04 > 1e-05")
        self.assertEqual(s["max_rel_l2"], 5e-4)

    def test_nan_outputs(self):
        s = evaluate.summarize([good_trial(rel=math.nan, nan=12), good_trial(nan=3)], 1e-5)
        self.assertEqual(s["disposition"], "incorrect")
        self.assertIn("trial 0: 12 outputs are NaN", s["reason"])
        self.assertIn("trial 0: relative L2 error nan", s["reason"])
        self.assertTrue(math.isnan(s["max_rel_l2"]))
        self.assertEqual(s["nan_outputs"], 12)

    def test_modified_inputs_and_weights(self):
        s = evaluate.summarize([good_trial(), good_trial(modified=True)], 1e-5, "weights differ")
        self.assertEqual(s["disposition"], "incorrect")
        self.assertEqual(s["reason"], "weights differ; trial 1: the submission modified its inputs")

    def test_mismatch(self):
        s = evaluate.summarize([{"mismatch": "output shape (1,), expected (2,)"}], 1e-5)
        self.assertEqual(s["disposition"], "incorrect")
        self.assertEqual(s["reason"], "trial 0: output shape (1,), expected (2,)")
        self.assertIsNone(s["max_rel_l2"])
        self.assertIsNone(s["nan_outputs"])
        self.assertEqual((s["allclose_1e2"], s["allclose_1e4"], s["trials"]), (False, False, 1))

    def test_worst(self):
        self.assertIsNone(evaluate.worst([]))
        self.assertEqual(evaluate.worst([1.0, 3.0, 2.0]), 3.0)
        self.assertTrue(math.isnan(evaluate.worst([1.0, math.nan])))
        self.assertTrue(math.isnan(evaluate.worst([math.nan, 1.0])))

    def test_timing_stats_and_speedup(self):
        stats = evaluate.timing_stats([1.0, 2.0, 6.0])
        self.assertEqual(stats, {"mean": 3.0, "median": 2.0})
        self.assertEqual(evaluate.speedup({"mean": 6.0, "median": 1.0}, stats), 2.0)
        self.assertIsNone(evaluate.speedup(None, stats))
        self.assertIsNone(evaluate.speedup(stats, None))


class OutputTest(unittest.TestCase):
    def results(self):
        passed = evaluate.new_result("/o/58/cuda.sm80.py", disposition="passed")
        passed.update(max_rel_l2=1.5e-7, ref_default_rel_l2=3e-4, allclose_1e2=True,
                      allclose_1e4=False, nan_outputs=0, trials=5,
                      time_ms={"mean": 2.0, "median": 1.9},
                      ref_default_ms={"mean": 8.0, "median": 7.9},
                      ref_strict_ms={"mean": 16.0, "median": 15.0},
                      ref_compile_ms={"mean": 4.0, "median": 3.9})
        broken = evaluate.new_result("/o/58/triton.sm90.py", disposition="incorrect",
                                     reason="trial 0: relative L2 error nan > 1e-05\nmore")
        broken.update(max_rel_l2=math.nan, trials=5)
        return [passed, broken]

    def test_json_document(self):
        env = {"gpu": "NVIDIA H200", "torch": "2.11.0", "cuda": "13.0", "cudnn": "91900",
               "driver": None, "date": "2025-01-02T03:04:05Z"}
        doc = evaluate.json_document(env, self.results())
        self.assertEqual(list(doc), ["gpu", "torch", "cuda", "cudnn", "driver", "date", "results"])
        self.assertEqual([tuple(r) for r in doc["results"]], [evaluate.RESULT_KEYS] * 2)
        self.assertIsNone(doc["results"][1]["max_rel_l2"])  # NaN is not JSON
        self.assertEqual(doc["results"][0]["time_ms"], {"mean": 2.0, "median": 1.9})
        path = os.path.join(tempfile.mkdtemp(), "r.json")
        evaluate.write_json(path, doc, allow_nan=False)
        with open(path, encoding="utf-8") as f:
            self.assertEqual(json.load(f), doc)

    def test_finite(self):
        self.assertEqual(evaluate.finite({"a": [math.inf, 1.0, (math.nan,)], "b": "x", "c": 3}),
                         {"a": [None, 1.0, [None]], "b": "x", "c": 3})

    def test_table(self):
        text = evaluate.format_table(self.results())
        lines = text.splitlines()
        self.assertTrue(lines[0].startswith("spec"))
        self.assertTrue(set(lines[1]) <= {"-", " "})
        self.assertIn("1.50e-07", lines[2])
        self.assertIn("yes/no", lines[2])
        self.assertIn("2.000/1.900", lines[2])
        self.assertIn("4.000/3.900", lines[2])
        self.assertIn("4.00x/8.00x/2.00x", lines[2])
        self.assertIn("-/-/-", lines[3])
        self.assertIn("nan", lines[3])
        self.assertEqual(lines[-1], "58/triton.sm90: trial 0: relative L2 error nan > 1e-05")

    def test_item_line(self):
        passed, broken = self.results()
        self.assertEqual(evaluate.item_line(1, 2, passed),
                         "[1/2] 58/cuda.sm80: passed  max rel L2 1.50e-07  2.000/1.900 ms")
        self.assertTrue(evaluate.item_line(2, 2, broken).endswith("error nan > 1e-05"))

    def test_utc_now(self):
        self.assertRegex(evaluate.utc_now(), r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")

    def test_tail(self):
        self.assertEqual(evaluate.tail("  short \n"), "short")
        self.assertEqual(evaluate.tail("x" * 10 + "end", limit=3), "...end")


class DigestTest(unittest.TestCase):
    def test_code_after_the_docstring(self):
        with tempfile.TemporaryDirectory() as d:
            def digest(text):
                write(os.path.join(d, "s.py"), text)
                return evaluate.code_sha256(os.path.join(d, "s.py"))
            code = "\nimport torch\nX = 1\n"
            a = digest('# header\n"""Prose."""' + code)
            self.assertEqual(a, digest('# header\n"""Other prose,\nlonger."""' + code))
            self.assertNotEqual(a, digest('# header\n"""Prose."""' + code + "Y = 2\n"))
            import hashlib
            self.assertEqual(a, hashlib.sha256(code.encode()).hexdigest())
            self.assertIsNone(evaluate.code_sha256(os.path.join(d, "missing.py")))


class RecheckTest(unittest.TestCase):
    def test_failures_judged_alone(self):
        sweep = [evaluate.new_result("a/triton.sm90.py", "passed"),
                 evaluate.new_result("b/triton.sm90.py", "failed", "CUDA error: an illegal memory access\nmore"),
                 evaluate.new_result("c/triton.sm90.py", "incorrect", "trial 0: relative L2 error 1.4")]
        alone = {"b/triton.sm90.py": evaluate.new_result("b/triton.sm90.py", "passed"),
                 "c/triton.sm90.py": evaluate.new_result("c/triton.sm90.py", "incorrect", "trial 0: relative L2 error 1.4")}
        seen = []

        def evaluate_alone(path):
            seen.append(path)
            return dict(alone[path])
        with mock.patch.object(evaluate, "progress"):
            got = evaluate.recheck_alone(["a/triton.sm90.py", "b/triton.sm90.py", "c/triton.sm90.py"], sweep, None, evaluate_alone)
        self.assertEqual(seen, ["b/triton.sm90.py", "c/triton.sm90.py"])  # the passed file is not run again
        self.assertEqual([r["disposition"] for r in got], ["passed", "passed", "incorrect"])
        self.assertEqual(got[1]["reason"], "passed alone; in the sweep: CUDA error: an illegal memory access")


def passing_evaluate(path, args):
    """A sweep worker's evaluation that passes every file (module level: spawned workers import it)."""
    return evaluate.new_result(path, "passed")


class SweepTest(unittest.TestCase):
    def test_more_files_than_workers_hold(self):
        # Five rounds of files for two workers: a pool recycling its workers by
        # max_tasks_per_child stops after the first round on Python 3.11/3.12.
        paths = [f"d{i}/triton.sm90.py" for i in range(5 * 2 * evaluate.SWEEP_TASKS_PER_WORKER)]
        args = evaluate.parse_args(["--sweep", "--jobs", "2", "x"])
        got = []
        worker = threading.Thread(target=lambda: got.extend(evaluate.sweep_all(paths, args, passing_evaluate)),
                                  daemon=True)
        with mock.patch.object(evaluate, "progress"):
            worker.start()
            worker.join(120)
        self.assertFalse(worker.is_alive(), "the sweep stopped before judging every file")
        self.assertEqual([r["spec"] for r in got], [os.path.dirname(p) for p in paths])
        self.assertTrue(all(r["disposition"] == "passed" for r in got))


class MergeTest(unittest.TestCase):
    ENV = {"gpu": "G", "torch": "t", "cuda": "c", "cudnn": "d", "driver": "v"}

    def doc(self, date, *keys, **env):
        return dict(self.ENV, **env, date=date,
                    results=[{"spec": k[0], "backend": k[1], "target": k[2] if len(k) > 2 else "sm90"} for k in keys])

    def test_sorted_union_earliest_date(self):
        m = evaluate.merge_documents([self.doc("2030-01-02", ("b", "triton"), ("a", "triton")),
                                      self.doc("2030-01-01", ("a", "cuda"), ("a", "cuda", "sm80"))])
        self.assertEqual([(r["spec"], r["backend"], r["target"]) for r in m["results"]],
                         [("a", "cuda", "sm80"), ("a", "cuda", "sm90"), ("a", "triton", "sm90"), ("b", "triton", "sm90")])
        self.assertEqual(m["date"], "2030-01-01")
        self.assertEqual(m["gpu"], "G")

    def test_refusals(self):
        with self.assertRaisesRegex(ValueError, "differ in gpu"):
            evaluate.merge_documents([self.doc("x", ("a", "cuda")), self.doc("x", ("a", "triton"), gpu="H")])
        with self.assertRaisesRegex(ValueError, "a/cuda.sm90 is in more than one run"):
            evaluate.merge_documents([self.doc("x", ("a", "cuda")), self.doc("x", ("a", "cuda"))])

    def test_newer_replaces(self):
        old = self.doc("2030-01-01", ("a", "cuda"), ("b", "cuda"))
        new = self.doc("2030-02-01", ("a", "cuda"))
        new["results"][0]["sha256"] = "new"
        m = evaluate.merge_documents([old, new], newer=True)
        self.assertEqual([(r["spec"], r.get("sha256")) for r in m["results"]], [("a", "new"), ("b", None)])
        self.assertEqual(m["date"], "2030-01-01 (1 files from 2030-02-01)")
        # A later run's new files count as its own too.
        added = self.doc("2030-03-01", ("a", "cuda"), ("c", "cuda"))
        m = evaluate.merge_documents([old, added], newer=True)
        self.assertEqual(m["date"], "2030-01-01 (2 files from 2030-03-01)")
        with self.assertRaisesRegex(ValueError, "more than one run"):
            evaluate.merge_documents([old, new])

    def test_passed_before_same_gpu_only(self):
        doc = self.doc("x", ("a", "cuda"), ("b", "triton"))
        doc["results"][0].update(disposition="passed", sha256="s1")
        doc["results"][1].update(disposition="incorrect", sha256="s2")
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "old.json")
            write(path, json.dumps(doc))
            self.assertEqual(evaluate.passed_before(path, "G"), {("a/cuda.sm90", "s1")})
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                self.assertEqual(evaluate.passed_before(path, "H"), set())
            self.assertIn("this GPU is H: every file runs", out.getvalue())

    def test_main_writes_json(self):
        with tempfile.TemporaryDirectory() as d:
            ins = []
            for i, key in enumerate([("a", "cuda"), ("a", "triton")]):
                ins.append(os.path.join(d, f"{i}.json"))
                write(ins[-1], json.dumps(self.doc("x", key)))
            out = os.path.join(d, "e2e.json")
            self.assertEqual(evaluate.main(["--merge", "--json", out] + ins), 0)
            with open(out, encoding="utf-8") as f:
                self.assertEqual(len(json.load(f)["results"]), 2)
            # No --json: a usage error, its message on stderr (captured, so
            # a passing run prints no usage text).
            err = io.StringIO()
            with contextlib.redirect_stderr(err), self.assertRaises(SystemExit) as exit:
                evaluate.parse_args(["--merge"] + ins)
            self.assertEqual(exit.exception.code, 2)
            self.assertIn("--merge writes its document to --json", err.getvalue())


class IsolationTest(unittest.TestCase):
    """The process plumbing, with stand-in child commands instead of GPU evaluations."""

    def args(self, *extra):
        return evaluate.parse_args(["--timeout", "30", *extra, "d"])

    def fake_child(self, code):
        def command(mode, target, result_path, args, truth_cache=None):
            return [sys.executable, "-c", code, result_path]
        return mock.patch.object(evaluate, "child_command", command)

    def test_child_result_is_read(self):
        code = "import json, sys; json.dump({'disposition': 'passed'}, open(sys.argv[1], 'w'))"
        with self.fake_child(code):
            result, _ = evaluate.run_child("--item", "/o/58/cuda.sm80.py", self.args())
        self.assertEqual(result, {"disposition": "passed"})

    def test_dead_child_is_a_failure(self):
        with self.fake_child("import sys; print('illegal memory access'); sys.exit(3)"):
            result = evaluate.evaluate_file("/o/58/cuda.sm80.py", None, self.args())
        self.assertEqual(result["disposition"], "failed")
        self.assertIn("exit status 3", result["reason"])
        self.assertIn("illegal memory access", result["reason"])

    def test_timeout_is_a_failure(self):
        with self.fake_child("import time; print('hung', flush=True); time.sleep(30)"):
            args = self.args()
            args.timeout = 1
            result = evaluate.evaluate_file("/o/58/cuda.sm80.py", None, args)
        self.assertEqual(result["disposition"], "failed")
        self.assertIn("timed out after 1 s", result["reason"])

    def test_build_failure_skips_evaluation(self):
        with self.fake_child("raise SystemExit('must not run')"):
            result = evaluate.evaluate_file("/o/58/cuda.sm80.py", "nvcc error", self.args())
        self.assertEqual((result["disposition"], result["reason"]),
                         ("failed", "build failed: nvcc error"))

    def test_build_all(self):
        root = tempfile.mkdtemp()
        good, bad = os.path.join(root, "58", "cuda.sm80.py"), os.path.join(root, "61", "cuda.sm80.py")
        write(good, "print('building')\nVALUE = 1\n")
        write(bad, "raise RuntimeError('Error building extension conv_58')\n")
        with mock.patch("sys.stdout"):
            errors = evaluate.build_all([good, bad], jobs=2)
        self.assertIsNone(errors[good])
        self.assertTrue(errors[bad].startswith("RuntimeError: Error building extension conv_58\n"))
        self.assertIn("Traceback", errors[bad])
        self.assertEqual(evaluate.build_all([], jobs=2), {})

    def test_evaluation_waits_only_for_its_own_build(self):
        # The second build finishes only once the first file's error has been read: were
        # error() to wait for every build, the second would time out instead.
        root = tempfile.mkdtemp()
        mark = os.path.join(root, "first-read")
        first, second = os.path.join(root, "58", "cuda.sm80.py"), os.path.join(root, "61", "cuda.sm80.py")
        write(first, "VALUE = 1\n")
        write(second, "import os, time\nfor _ in range(600):\n    if os.path.exists(%r): break\n"
                      "    time.sleep(0.05)\nelse:\n    raise RuntimeError('timed out')\n" % mark)
        with mock.patch("sys.stdout"), evaluate.Builds([first, second], jobs=2) as builds:
            self.assertIsNone(builds.error(first))
            write(mark, "")
            self.assertIsNone(builds.error(second))

    def test_next_child_prepares_while_one_runs(self):
        # Each stand-in child logs when it starts, when it is let go and when it ends.
        # The second file's child must start before the first ends (its preparation
        # overlaps) but get the GPU only after the first has ended.
        root = tempfile.mkdtemp()
        log = os.path.join(root, "log")
        code = ("import json, sys, time\n"
                "name, result = sys.argv[1], sys.argv[2]\n"
                "def mark(what):\n"
                "    open(%r, 'a').write(f'{what} {name} {time.monotonic()}\\n')\n"
                "mark('start')\n"
                "if '--wait-go' in sys.argv and sys.stdin.readline() != 'go\\n':\n"
                "    sys.exit(0)\n"
                "mark('go')\n"
                "time.sleep(0.5)\n"
                "json.dump({'spec': name, 'backend': 'cuda', 'target': 'sm80', 'disposition': 'passed',\n"
                "           'max_rel_l2': 1e-7, 'time_ms': None, 'reason': ''}, open(result, 'w'))\n"
                "mark('end')\n") % log

        def command(mode, target, result_path, args, truth_cache=None):
            return [sys.executable, "-c", code, os.path.basename(os.path.dirname(target)), result_path]

        paths = [os.path.join(root, name, "cuda.sm80.py") for name in ("58", "61", "68")]
        specs = [evaluate.Spec(os.path.basename(os.path.dirname(p)), os.path.dirname(p), [p]) for p in paths]
        with mock.patch.object(evaluate, "child_command", command), mock.patch("sys.stdout"):
            results = evaluate.evaluate_all(specs, {p: None for p in paths}, self.args())
        self.assertEqual([r["spec"] for r in results], ["58", "61", "68"])
        events = {}
        for line in open(log).read().split("\n")[:-1]:
            what, name, at = line.split()
            events[what, name] = float(at)
        for first, second in (("58", "61"), ("61", "68")):
            self.assertLess(events["start", second], events["end", first])
            self.assertGreater(events["go", second], events["end", first])

    def test_truths_shared_within_a_problem_only(self):
        # Each stand-in child leaves a mark in its truth folder and reports what it found
        # there and beside it: a problem's second file finds the first's mark, the next
        # problem finds an empty folder of its own, the previous one's gone.
        root = tempfile.mkdtemp()
        code = ("import json, os, sys\n"
                "name, result, cache = sys.argv[1:4]\n"
                "sys.stdin.readline()\n"  # the parent's go: the previous file is done
                "os.makedirs(cache, exist_ok=True)\n"
                "found = sorted(os.listdir(cache))\n"
                "beside = sorted(os.listdir(os.path.dirname(cache)))\n"
                "open(os.path.join(cache, name), 'w').close()\n"
                "json.dump({'spec': name, 'backend': 'cuda', 'target': 'sm80', 'disposition': 'passed',\n"
                "           'max_rel_l2': 1e-7, 'time_ms': None, 'reason': repr((found, beside, cache))},\n"
                "          open(result, 'w'))\n")

        def command(mode, target, result_path, args, truth_cache=None):
            return [sys.executable, "-c", code, os.path.basename(target), result_path, truth_cache]

        a = [os.path.join(root, "58", name) for name in ("cuda.sm80.py", "cuda.sm90.py")]
        b = [os.path.join(root, "61", "cuda.sm80.py")]
        specs = [evaluate.Spec("58", os.path.dirname(a[0]), a), evaluate.Spec("61", os.path.dirname(b[0]), b)]
        with mock.patch.object(evaluate, "child_command", command), mock.patch("sys.stdout"):
            results = evaluate.evaluate_all(specs, {p: None for p in a + b}, self.args())
        seen = [eval(r["reason"]) for r in results]
        self.assertEqual(seen[0][0], [])
        self.assertEqual(seen[1][0], ["cuda.sm80.py"])
        self.assertEqual(seen[1][2], seen[0][2])
        self.assertEqual(seen[2][0], [])
        self.assertEqual(seen[2][1], [os.path.basename(seen[2][2])])  # the first problem's folder is gone
        self.assertNotEqual(seen[2][2], seen[0][2])
        self.assertFalse(os.path.exists(os.path.dirname(seen[0][2])))  # all gone after the run


if __name__ == "__main__":
    unittest.main()


@unittest.skipUnless(importlib.util.find_spec("torch"), "needs torch (the GPU host has it)")
class RelL2Test(unittest.TestCase):
    def test_relative_and_zero_truth(self):
        import torch
        truth = torch.tensor([3.0, 4.0], dtype=torch.float64)
        self.assertAlmostEqual(evaluate.rel_l2(torch.tensor([3.0, 4.5]), truth), 0.1)
        zero = torch.zeros(2, dtype=torch.float64)
        self.assertEqual(evaluate.rel_l2(torch.zeros(2), zero), 0.0)  # not 0/0
        self.assertEqual(evaluate.rel_l2(torch.tensor([0.0, 2.0]), zero), 2.0)


@unittest.skipUnless(importlib.util.find_spec("torch"), "needs torch and a GPU (the GPU host has them)")
class SharedTruthTest(unittest.TestCase):
    def test_computed_once_then_read(self):
        import torch
        if not torch.cuda.is_available():
            self.skipTest("no GPU")
        calls = []

        def model(x):
            calls.append(x.dtype)
            return x * 2

        path = os.path.join(tempfile.mkdtemp(), "58", "trial0-1.pt")
        x = torch.arange(4.0, device="cuda")
        first = evaluate.float64_truth(model, [x], path)
        again = evaluate.float64_truth(model, [x], path)
        self.assertEqual(calls, [torch.float64])  # the second came from the file
        self.assertTrue(torch.equal(first, again))
        self.assertEqual((again.dtype, again.device.type), (torch.float64, "cuda"))
        evaluate.float64_truth(model, [x])
        self.assertEqual(len(calls), 2)  # no cache: computed

    def test_inputs_drawn_once_then_read(self):
        import torch
        if not torch.cuda.is_available():
            self.skipTest("no GPU")
        draws = []

        def get_inputs():
            draws.append(1)
            return [torch.randn(3, 4, dtype=torch.float64), 7]

        path = os.path.join(tempfile.mkdtemp(), "58", "trial0-1.inputs.pt")
        torch.manual_seed(1)
        first = evaluate.trial_inputs(get_inputs, path)
        torch.manual_seed(2)  # a later file reads the first one's draw, not its own
        again = evaluate.trial_inputs(get_inputs, path)
        self.assertEqual(len(draws), 1)
        self.assertTrue(torch.equal(first[0], again[0]))
        self.assertEqual((again[0].dtype, again[0].device.type, again[1]), (torch.float32, "cuda", 7))
        evaluate.trial_inputs(get_inputs)
        self.assertEqual(len(draws), 2)  # no cache: drawn

"""Tests of bigcheck.py's pure helpers, in plain Python (no torch, no GPU)."""
import itertools
import os
import random
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bigcheck  # noqa: E402


def scatter(x, w, b, conv, in_shape, out_shape):
    """The transposed convolution by its scatter definition: every input
    element adds input * weight to the output each tap reaches."""
    N, Cin = in_shape[:2]
    out = {}
    for idx in itertools.product(*(range(s) for s in out_shape)):
        out[idx] = b[idx[1]] if b is not None else 0.0
    K = conv["kernel"]
    for n, ci, i0, i1, i2 in itertools.product(*(range(s) for s in in_shape)):
        g = ci // conv["cing"]
        for co in range(conv["coutg"]):
            for k in itertools.product(range(K[0]), range(K[1]), range(K[2])):
                o = [i * conv["stride"][a] - conv["padding"][a] + k[a] * conv["dilation"][a] for a, i in enumerate((i0, i1, i2))]
                if all(0 <= o[a] < out_shape[2 + a] for a in range(3)):
                    out[(n, g * conv["coutg"] + co, *o)] += x((n, ci, i0, i1, i2)) * w((ci, co, *k))
    return out


class Helpers(unittest.TestCase):
    def test_out_dims(self):
        self.assertEqual(bigcheck.out_dims((32768, 32768, 1), (1, 1, 1), (1, 1, 4), (0, 0, 0), (0, 0, 0), (1, 1, 1)), (32768, 32768, 1))
        self.assertEqual(bigcheck.out_dims((1, 32768, 32768), (1, 1, 1), (1, 1, 4), (0, 0, 0), (0, 0, 0), (1, 1, 1)), (1, 32768, 131069))
        self.assertEqual(bigcheck.out_dims((1, 50000, 50000), (1, 1, 1), (1, 1, 1), (0, 0, 24000), (0, 0, 0), (1, 1, 1)), (1, 50000, 2000))
        self.assertEqual(bigcheck.out_dims((4, 6, 8), (3, 3, 3), (3, 3, 3), (1, 1, 1), (0, 0, 0), (3, 3, 3)), (14, 20, 26))

    def test_decode_encode(self):
        shape = (2, 3, 4, 5, 6)
        for flat in range(2 * 3 * 4 * 5 * 6):
            self.assertEqual(bigcheck.encode(bigcheck.decode(flat, shape), shape), flat)
        self.assertEqual(bigcheck.decode(2 * 3 * 4 * 5 * 6 - 1, shape), (1, 2, 3, 4, 5))

    def test_samples_cover_edges_and_phases(self):
        shape, stride = (1, 2, 5, 9, 131), (1, 2, 4)
        total = 2 * 5 * 9 * 131
        got = bigcheck.sample_indices(shape, stride, 3000, 1, edge=10, per_phase=4)
        self.assertEqual(got, sorted(set(got)))
        self.assertTrue(set(range(10)) <= set(got) and set(range(total - 10, total)) <= set(got))
        self.assertGreaterEqual(len(got), 3000)
        phases = {tuple(o % s for o, s in zip(bigcheck.decode(f, shape)[2:], stride)) for f in got}
        self.assertEqual(phases, set(itertools.product(range(1), range(2), range(4))))
        # Never more than the output holds.
        self.assertEqual(len(bigcheck.sample_indices((1, 1, 1, 2, 3), (1, 1, 1), 100, 1)), 6)

    def test_direct_sum_is_the_definition(self):
        rng = random.Random(3)
        for _ in range(6):
            groups = rng.choice([1, 2])
            cing, coutg = rng.randint(1, 2), rng.randint(1, 2)
            conv = {"cing": cing, "coutg": coutg, "kernel": tuple(rng.randint(1, 3) for _ in range(3)),
                    "stride": tuple(rng.randint(1, 3) for _ in range(3)), "padding": tuple(rng.randint(0, 1) for _ in range(3)),
                    "dilation": tuple(rng.randint(1, 2) for _ in range(3))}
            ins = tuple(rng.randint(1, 3) for _ in range(3))
            conv["in"] = ins
            in_shape = (rng.randint(1, 2), groups * cing) + ins
            dims = bigcheck.out_dims(ins, conv["kernel"], conv["stride"], conv["padding"], (0, 0, 0), conv["dilation"])
            if min(dims) <= 0:
                continue
            out_shape = (in_shape[0], groups * coutg) + dims
            xs = {i: rng.uniform(-1, 1) for i in itertools.product(*(range(s) for s in in_shape))}
            ws = {i: rng.uniform(-1, 1) for i in itertools.product(range(groups * cing), range(coutg), *(range(k) for k in conv["kernel"]))}
            b = [rng.uniform(-1, 1) for _ in range(groups * coutg)]
            want = scatter(xs.__getitem__, ws.__getitem__, b, conv, in_shape, out_shape)
            for idx, v in want.items():
                self.assertAlmostEqual(bigcheck.direct_sum_point(xs.__getitem__, ws.__getitem__, b, conv, idx), v, places=12)


if __name__ == "__main__":
    unittest.main()


class Discovery(unittest.TestCase):
    def test_submissions(self):
        import tempfile
        root = tempfile.mkdtemp()
        for name in ("a/problem.py", "a/cuda.sm80.py", "a/cuda.sm90.py", "a/triton.sm90.py", "a/cuda.py", "b/cuda.sm80.py"):
            os.makedirs(os.path.join(root, os.path.dirname(name)), exist_ok=True)
            open(os.path.join(root, name), "w").close()
        got = [os.path.relpath(p, root) for p in bigcheck.submissions(root)]
        # b has no problem.py; a's cuda.py names no target.
        self.assertEqual(got, ["a/cuda.sm80.py", "a/cuda.sm90.py", "a/triton.sm90.py"])


"""Level 2's generated reference problems against KernelBench's files.

For every out/l2_* folder, the original (gen/importer/testdata/kernelbench/
level2/<number>_*.py) and the generated problem.py are built under the same
seed the evaluator uses; every parameter and buffer must be identical, in
order and by name, and so must get_init_inputs() and get_inputs() (seeded
alike). With LEVEL2_FORWARD=1 both models also run forward on the first
sample of the inputs (on the GPU where there is one) and must agree to 1e-5
(relative L2): that takes minutes on a CPU.

Needs torch; skipped without it (run_tests.py reports the skip).
"""

import glob
import importlib.util
import os
import unittest

try:
    import torch
except ImportError:  # the CI image without torch
    torch = None

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ORIGINALS = os.path.join(ROOT, "gen", "importer", "testdata", "kernelbench", "level2")


def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def pairs():
    """(name, original path, problem.py path) of every level-2 output."""
    out = []
    for folder in sorted(glob.glob(os.path.join(ROOT, "out", "l2_*"))):
        name = os.path.basename(folder)
        number = name.split("_")[1]
        originals = glob.glob(os.path.join(ORIGINALS, number + "_*.py"))
        out.append((name, originals, os.path.join(folder, "problem.py")))
    return out


def build(module):
    torch.manual_seed(42)
    model = module.Model(*module.get_init_inputs())
    torch.manual_seed(42)
    inputs = module.get_inputs()
    return model, inputs


@unittest.skipIf(torch is None, "needs torch (the GPU host, or Debian's python3-torch)")
class Level2Problems(unittest.TestCase):
    def test_nineteen(self):
        self.assertEqual(len(pairs()), 19)

    def test_same_models(self):
        for name, originals, problem in pairs():
            with self.subTest(name):
                self.assertEqual(len(originals), 1, originals)
                ref = load(originals[0], name + "_original")
                gen = load(problem, name + "_generated")
                self.assertEqual(list(ref.get_init_inputs()), list(gen.get_init_inputs()))
                ref_model, ref_inputs = build(ref)
                gen_model, gen_inputs = build(gen)
                want = list(ref_model.state_dict().items())
                got = list(gen_model.state_dict().items())
                self.assertEqual([k for k, _ in got], [k for k, _ in want])
                for (k, a), (_, b) in zip(got, want):
                    self.assertEqual(a.shape, b.shape, k)
                    self.assertEqual(a.dtype, b.dtype, k)
                    self.assertTrue(torch.equal(a, b), k)
                self.assertEqual(len(gen_inputs), len(ref_inputs))
                for a, b in zip(gen_inputs, ref_inputs):
                    self.assertTrue(torch.equal(a, b))
                if os.environ.get("LEVEL2_FORWARD") == "1":
                    device = "cuda" if torch.cuda.is_available() else "cpu"
                    ref_model.to(device), gen_model.to(device)
                    xs = [t[:1].to(device) for t in ref_inputs]
                    with torch.no_grad():
                        a = gen_model(*xs).double()
                        b = ref_model(*xs).double()
                    self.assertEqual(a.shape, b.shape)
                    err = (a - b).norm() / b.norm().clamp_min(1e-30)
                    self.assertLessEqual(err.item(), 1e-5, name)


if __name__ == "__main__":
    unittest.main()

"""Where an emitted submission's forward spends its GPU time, kernel by
kernel (torch.profiler), for the folders named on the command line (each
with problem.py and a submission file). Not the evaluator's timing (no L2
flush between runs): a split of the forward, to see which kernel moved.

  python3 docs/perf/probes/profile.py out/l1_61_square_input_square_kernel
  BACKEND=triton TARGET=sm80 RUNS=20 python3 docs/perf/probes/profile.py out/l1_6*

It runs <BACKEND>.<TARGET>.py (default cuda.sm90.py, the H200's own file).

Prints, per folder, each kernel's mean time per forward in ms, largest first.
"""
import importlib.util
import os
import sys

import torch
from torch.profiler import ProfilerActivity, profile

BACKEND = os.environ.get("BACKEND", "cuda")
TARGET = os.environ.get("TARGET", "sm90")
RUNS = int(os.environ.get("RUNS", "10"))


def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


for folder in sys.argv[1:]:
    tag = os.path.basename(os.path.normpath(folder))
    problem = load(os.path.join(folder, "problem.py"), "problem_" + tag)
    submission = load(os.path.join(folder, f"{BACKEND}.{TARGET}.py"), "submission_" + tag)
    torch.manual_seed(42)
    model = submission.Model(*problem.get_init_inputs()).cuda()
    inputs = [t.cuda() for t in problem.get_inputs()]
    for _ in range(3):  # builds, caches and clocks settle first
        model(*inputs)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(RUNS):
            model(*inputs)
        torch.cuda.synchronize()
    per_kernel = {}
    for event in prof.events():
        if event.device_type == torch.autograd.DeviceType.CUDA:
            per_kernel[event.name] = per_kernel.get(event.name, 0.0) + event.device_time_total / 1000 / RUNS
    total = sum(per_kernel.values())
    print(f"{tag} ({BACKEND}): {total:.3f} ms per forward")
    for name, ms in sorted(per_kernel.items(), key=lambda kv: -kv[1]):
        print(f"  {ms:8.3f}  {name}")

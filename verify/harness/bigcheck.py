#!/usr/bin/env python3
"""Checks the big configurations (tensors of 2^31+ elements) on a GPU.

For every submission that `make big` rendered into build/big (<backend>.<target>.py
beside each problem.py; a file whose target this GPU cannot run, an sm90 CUDA file
off compute capability 9.0, is skipped and said so): builds Model with the reference's
seeded initialisation, NaN-poisons the memory the output will take (a
tensor of the output's size is filled with NaN and freed, so that the
caching allocator hands its block to the forward's torch.empty; the
pointer is compared), runs forward, checks that no output stayed NaN and
compares about 10^6 sampled outputs (the first and last ones, some of
every stride phase, the rest drawn) with a float64 direct sum of the
transposed-convolution definition on the GPU. Writes a JSON summary.

Usage: python3 verify/harness/bigcheck.py [--json build/gpu/big.json] [build/big]
Needs python3 with torch (and triton for the Triton files) and a GPU; no Go.
"""
import argparse
import concurrent.futures
import hashlib
import importlib.util
import json
import os
import random
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import evaluate  # noqa: E402  (the submission names and target rules, one copy)


# ---------------------------------------------------------------- pure helpers (tested on the CPU)

def out_dims(inp, kernel, stride, padding, output_padding, dilation):
    """PyTorch's ConvTranspose3d output size per spatial dimension."""
    return tuple((i - 1) * s - 2 * p + d * (k - 1) + op + 1
                 for i, k, s, p, op, d in zip(inp, kernel, stride, padding, output_padding, dilation))


def decode(flat, shape):
    """The multi-index of a flat offset into a contiguous tensor of shape."""
    idx = []
    for n in reversed(shape):
        idx.append(flat % n)
        flat //= n
    return tuple(reversed(idx))


def encode(idx, shape):
    flat = 0
    for i, n in zip(idx, shape):
        flat = flat * n + i
    return flat


def sample_indices(shape, stride, n, seed, edge=1000, per_phase=64):
    """About n flat output indices of a (N, C, D, H, W) output: the first and
    last `edge`, `per_phase` of every stride phase (o mod stride), the rest
    drawn uniformly; sorted and without repeats."""
    total = 1
    for s in shape:
        total *= s
    rng = random.Random(seed)
    picked = set(range(min(edge, total)))
    picked.update(range(max(0, total - edge), total))
    batch, channels, dims = shape[0], shape[1], shape[2:]
    for rd in range(min(stride[0], dims[0])):
        for rh in range(min(stride[1], dims[1])):
            for rw in range(min(stride[2], dims[2])):
                r = (rd, rh, rw)
                counts = [(dims[a] - r[a] + stride[a] - 1) // stride[a] for a in range(3)]
                for _ in range(per_phase):
                    o = [r[a] + stride[a] * rng.randrange(counts[a]) for a in range(3)]
                    picked.add(encode((rng.randrange(batch), rng.randrange(channels), *o), shape))
    while len(picked) < min(n, total):
        picked.add(rng.randrange(total))
    return sorted(picked)


def taps_of(o, inp, kernel, stride, padding, dilation):
    """The (kernel index, input index) pairs of one dimension that reach
    output o: o = i*stride - padding + k*dilation."""
    pairs = []
    for k in range(kernel):
        v = o + padding - k * dilation
        if v >= 0 and v % stride == 0 and v // stride < inp:
            pairs.append((k, v // stride))
    return pairs


def direct_sum_point(x, w, b, conv, idx):
    """One output of the definition, in Python floats: x and w are callables
    of a multi-index (x: n, ci, id, ih, iw; w: ci, co_g, kd, kh, kw); b is a
    list or None; conv a dict of the parameters."""
    n, c, od, oh, ow = idx
    g = c // conv["coutg"]
    co = c % conv["coutg"]
    total = b[c] if b is not None else 0.0
    per = [taps_of(o, conv["in"][a], conv["kernel"][a], conv["stride"][a], conv["padding"][a], conv["dilation"][a])
           for a, o in enumerate((od, oh, ow))]
    for kd, idd in per[0]:
        for kh, ih in per[1]:
            for kw, iw in per[2]:
                for ci in range(conv["cing"]):
                    ch = g * conv["cing"] + ci
                    total += x((n, ch, idd, ih, iw)) * w((ch, co, kd, kh, kw))
    return total


def conv_of(module):
    """The parameters of the reference module's nn.ConvTranspose3d as a dict."""
    m = module
    return {
        "in_channels": m.in_channels, "out_channels": m.out_channels, "groups": m.groups,
        "cing": m.in_channels // m.groups, "coutg": m.out_channels // m.groups,
        "kernel": tuple(m.kernel_size), "stride": tuple(m.stride), "padding": tuple(m.padding),
        "output_padding": tuple(m.output_padding), "dilation": tuple(m.dilation),
    }


# ---------------------------------------------------------------- GPU part

def load_module(path):
    digest = hashlib.sha1(os.path.abspath(path).encode()).hexdigest()[:12]
    name = "bigcheck_" + os.path.basename(path)[:-3] + "_" + digest
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # triton looks a function's module up by name
    spec.loader.exec_module(module)
    return module


def prebuild(paths, jobs):
    """Imports every CUDA file in parallel processes, so that load_inline's
    builds (tens of seconds each) overlap; the checks then load them from
    torch's extension cache."""
    def one(path):
        r = subprocess.run([sys.executable, "-c", "import runpy, sys; runpy.run_path(sys.argv[1])", path],
                           capture_output=True, text=True)
        return path, r.returncode, r.stderr[-2000:]
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        return {p: (rc, err) for p, rc, err in pool.map(one, paths)}


def gpu_direct_sum(torch, x, w, bias, conv, flat, shape):
    """The sampled outputs' float64 direct sums and the sums of their terms'
    magnitudes (the error scale), on the GPU."""
    N, C, D, H, W = shape
    f = flat
    ow = f % W; f = f // W
    oh = f % H; f = f // H
    od = f % D; f = f // D
    c = f % C; n = f // C
    g, co = c // conv["coutg"], c % conv["coutg"]
    ref = torch.zeros(flat.shape, dtype=torch.float64, device=flat.device)
    mag = torch.zeros_like(ref)
    if bias is not None:
        ref += bias.double()[c]
        mag += bias.double()[c].abs()
    ins = x.shape[2:]
    xf, wf = x.reshape(-1), w.reshape(-1)
    K = conv["kernel"]
    for kd in range(K[0]):
        for kh in range(K[1]):
            for kw in range(K[2]):
                ok = torch.ones(flat.shape, dtype=torch.bool, device=flat.device)
                at = []
                for a, (o, k) in enumerate(zip((od, oh, ow), (kd, kh, kw))):
                    v = o + conv["padding"][a] - k * conv["dilation"][a]
                    ok &= (v >= 0) & (v % conv["stride"][a] == 0) & (v // conv["stride"][a] < ins[a])
                    at.append(torch.where(ok, v // conv["stride"][a], torch.zeros_like(v)))
                for ci in range(conv["cing"]):
                    ch = g * conv["cing"] + ci
                    xi = (((n * x.shape[1] + ch) * ins[0] + at[0]) * ins[1] + at[1]) * ins[2] + at[2]
                    wi = (((ch * conv["coutg"] + co) * K[0] + kd) * K[1] + kh) * K[2] + kw
                    term = torch.where(ok, xf[xi].double() * wf[wi].double(), torch.zeros_like(ref))
                    ref += term
                    mag += term.abs()
    return ref, mag


def submissions(root):
    """Every submission file under root's problem folders, <backend>.<target>.py."""
    out = []
    for d in sorted(os.listdir(root)):
        folder = os.path.join(root, d)
        if os.path.isfile(os.path.join(folder, "problem.py")):
            out += [os.path.join(folder, n) for n in evaluate.submission_names() if os.path.isfile(os.path.join(folder, n))]
    return out


def check_one(torch, problem, path, samples, seed):
    t0 = time.time()
    r = {"spec": os.path.basename(os.path.dirname(path)), "backend": evaluate.backend_of(path),
         "target": evaluate.target_of(path)}
    mod = load_module(path)
    torch.manual_seed(seed)
    init = problem.get_init_inputs()
    model = mod.Model(*init).cuda()
    conv = conv_of(getattr(model, [k for k, v in model.named_children()][0]))
    with torch.device("cuda"):
        torch.manual_seed(seed)
        (x,) = problem.get_inputs()
    x = x.cuda().contiguous()
    dims = out_dims(x.shape[2:], conv["kernel"], conv["stride"], conv["padding"], conv["output_padding"], conv["dilation"])
    shape = (x.shape[0], conv["out_channels"]) + dims
    numel = 1
    for s in shape:
        numel *= s
    r["output_elements"] = numel
    with torch.no_grad():
        torch.cuda.synchronize()
        # Blocks of the output's size, NaN-filled and freed: the forward's
        # own buffers of that size or less (a re-laid input) may take some,
        # so up to three, as memory allows, and y must land in one of them.
        free, _ = torch.cuda.mem_get_info()
        poison = [torch.empty(numel, device="cuda") for _ in range(max(1, min(3, free // (4 * numel) - 2)))]
        ptrs = set()
        for p in poison:
            p.fill_(float("nan"))
            ptrs.add(p.data_ptr())
        del poison, p
        y = model(x)
        torch.cuda.synchronize()
    r["poisoned"] = y.data_ptr() in ptrs
    r["shape_ok"] = tuple(y.shape) == shape
    r["nan_free"] = not bool(torch.isnan(y).any().item())
    conv_mod = getattr(model, [k for k, v in model.named_children()][0])
    flat = torch.tensor(sample_indices(shape, conv["stride"], samples, seed), dtype=torch.int64, device="cuda")
    ref, mag = gpu_direct_sum(torch, x, conv_mod.weight.detach(), None if conv_mod.bias is None else conv_mod.bias.detach(),
                              conv, flat, shape)
    got = y.reshape(-1)[flat].double()
    err = ((got - ref).abs() / (mag + 1e-30)).nan_to_num(nan=float("inf"))
    bad = (got - ref).abs() > 1e-5 * mag + 1e-6
    r["samples"] = int(flat.numel())
    r["max_err"] = float(err.max().item())
    r["bad"] = int(bad.sum().item())
    if r["bad"]:
        i = int(bad.nonzero()[0].item())
        r["first_bad"] = {"index": int(flat[i].item()), "got": float(got[i].item()), "want": float(ref[i].item())}
    r["ok"] = r["poisoned"] and r["shape_ok"] and r["nan_free"] and r["bad"] == 0
    r["seconds"] = round(time.time() - t0, 2)
    del y, x, model, flat, ref, mag, got
    torch.cuda.empty_cache()
    return r


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("root", nargs="?", default="build/big")
    ap.add_argument("--json", default="build/gpu/big.json")
    ap.add_argument("--samples", type=int, default=1_000_000)
    ap.add_argument("--seed", type=int, default=25)
    ap.add_argument("--jobs", type=int, default=8, help="parallel load_inline builds")
    args = ap.parse_args(argv)
    import torch

    cc = tuple(torch.cuda.get_device_capability())
    subs = []
    for path in submissions(args.root):
        why = evaluate.not_this_gpu(path, cc)
        if why:
            print(f"skipped {path}: {why}", flush=True)
        else:
            subs.append(path)
    built = prebuild([p for p in subs if evaluate.backend_of(p) == "cuda"], args.jobs)
    results = []
    for path in subs:
        if path in built and built[path][0] != 0:
            results.append({"spec": os.path.basename(os.path.dirname(path)), "backend": "cuda",
                            "target": evaluate.target_of(path), "ok": False, "error": "build failed: " + built[path][1]})
            continue
        try:
            problem = load_module(os.path.join(os.path.dirname(path), "problem.py"))
            results.append(check_one(torch, problem, path, args.samples, args.seed))
        except Exception as e:  # a failed launch raises: record it and go on
            results.append({"spec": os.path.basename(os.path.dirname(path)), "backend": evaluate.backend_of(path),
                            "target": evaluate.target_of(path), "ok": False, "error": f"{type(e).__name__}: {e}"[:2000]})
            torch.cuda.empty_cache()
        print(json.dumps(results[-1]), flush=True)
    os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
    run = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
           "date": time.strftime("%Y-%m-%d", time.gmtime()), "commit": os.environ.get("COMMIT", "")}
    with open(args.json, "w") as f:
        json.dump({**run, "results": results, "all_ok": all(r["ok"] for r in results)}, f, indent=1)
    return 0 if all(r["ok"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())

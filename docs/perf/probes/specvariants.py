"""Probe, not a product: copies of a spec under other names, each with a
kernel section (or a problem) of its own, to time candidates or check
configurations end to end on a GPU beside the spec's own files.

  python3 docs/perf/probes/specvariants.py build/var
  bin/convtgen generate -out build/var/out build/var/specs/*.yaml
  python3 docs/perf/probes/specvariants.py --prune build/var

writes build/var/specs/<variant>.yaml for every entry of VARIANTS (the
base spec's name, kernel section and, where given, problem fields and
init inputs replaced); --prune then deletes the rendered files a variant
does not time (its `keep` list of backend.target), so that the harness
judges only those.
"""
import os
import random
import re
import sys

# Timing candidates: (variant, base spec, kernel section, files kept).
TUNE = [
    # mma.sync reads the weights from shared memory once a warp (wgmma once a
    # warpgroup): at one slab of 16 rows a warp the loads keep pace with the
    # products. Two Winograd slabs a warp halve them (249 registers, no
    # spills on sm_80, CUDA 11.8).
    ("v61_s2", "61_relu_groupnorm", "cuda: {wgmma: {min_blocks: 1, slabs: 2, span: 16, stages: 2, park_sums: true, winograd: true}}", ["cuda.sm80", "cuda.sm90"]),
    ("v61_s2_st3", "61_relu_groupnorm", "cuda: {wgmma: {min_blocks: 1, slabs: 2, span: 16, stages: 3, park_sums: true, winograd: true}}", ["cuda.sm80"]),
    ("v61_s2_sp8", "61_relu_groupnorm", "cuda: {wgmma: {min_blocks: 1, slabs: 2, span: 8, stages: 2, park_sums: true, winograd: true}}", ["cuda.sm80"]),
    ("v61_s2_early", "61_relu_groupnorm", "cuda: {wgmma: {min_blocks: 1, slabs: 2, span: 16, stages: 2, park_sums: true, winograd: true, early_inputs: true}}", ["cuda.sm80"]),
    ("v61_s2_bulk", "61_relu_groupnorm", "cuda: {wgmma: {min_blocks: 1, slabs: 2, span: 16, stages: 2, park_sums: true, winograd: true, bulk_weights: true}}", ["cuda.sm90"]),
    ("vl1_61_s2", "61_square_input_square_kernel", "cuda: {wgmma: {min_blocks: 1, slabs: 2, span: 16, stages: 2, park_sums: true, winograd: true}}", ["cuda.sm80"]),
    ("vl1_77_s2", "77_padded_dilated_strided", "cuda: {wgmma: {min_blocks: 1, slabs: 2, span: 16, stages: 2, park_sums: true, winograd: true, early_inputs: true}}", ["cuda.sm80"]),
    ("vl1_77_s2b", "77_padded_dilated_strided", "cuda: {wgmma: {min_blocks: 1, slabs: 2, span: 16, stages: 2, park_sums: true, winograd: true}}", ["cuda.sm80"]),
]


def fold_configs(n, seed):
    """n random configurations of #13's forward (a depth mean first, so the
    plan folds it): strides, paddings, output paddings, dilations, groups and
    asymmetric kernels and inputs, some with depth taps that reach no output."""
    rng = random.Random(seed)
    out = []
    while len(out) < n:
        g = rng.choice([1, 1, 2, 4])
        cin, cout = g * rng.randint(1, 6), g * rng.randint(1, 12)
        k = [rng.randint(1, 4) for _ in range(3)]
        s = [rng.randint(1, 4) for _ in range(3)]
        dil = [rng.randint(1, 3) for _ in range(3)]
        p = [rng.randint(0, dil[i] * (k[i] - 1)) for i in range(3)]
        op = [rng.randint(0, max(s[i], dil[i]) - 1) for i in range(3)]
        inp = [rng.randint(1, 9), rng.randint(3, 20), rng.randint(3, 20)]
        o = [(inp[i] - 1) * s[i] - 2 * p[i] + dil[i] * (k[i] - 1) + op[i] + 1 for i in range(3)]
        if min(o) < 1:
            continue
        b = rng.randint(1, 3)
        out.append(dict(batch=b, cin=cin, cout=cout, k=k, s=s, p=p, op=op, dil=dil, g=g, inp=inp))
    return out


def fold_spec(base, name, c):
    """#13's spec text with configuration c: the problem and the reference's
    ConvTranspose3d call (the extra arguments as literals)."""
    t = lambda v: "[" + ", ".join(map(str, v)) + "]"
    tup = lambda v: "(" + ", ".join(map(str, v)) + ")"
    problem = (f"problem:\n  batch: {c['batch']}\n  in_channels: {c['cin']}\n  out_channels: {c['cout']}\n"
               f"  kernel: {t(c['k'])}\n  input: {t(c['inp'])}\n  stride: {t(c['s'])}\n  padding: {t(c['p'])}\n"
               f"  output_padding: {t(c['op'])}\n  dilation: {t(c['dil'])}\n  groups: {c['g']}\n  bias: true\n")
    text = re.sub(r"(?ms)^problem:\n.*?(?=^reference:)", problem, base)
    text = text.replace("    - padding=padding\n",
                        f"    - padding=padding\n    - output_padding={tup(c['op'])}\n    - groups={c['g']}\n    - dilation={tup(c['dil'])}\n")
    text = re.sub(r"(?m)^  init_inputs: .*$",
                  f"  init_inputs: [{c['cin']}, {c['cout']}, {t(c['k'])}, {t(c['s'])}, {t(c['p'])}, 2.0]", text)
    text = text.replace("    - {name: kernel_size, type: int}", "    - {name: kernel_size, type: shape}")
    text = text.replace("    - {name: stride, type: int}", "    - {name: stride, type: shape}")
    text = text.replace("    - {name: padding, type: int}", "    - {name: padding, type: shape}")
    return re.sub(r"(?m)^name: .*$", f"name: {name}", text)


def with_kernel(base, name, kernel):
    text = re.sub(r"(?ms)^kernel:.*\Z", "", base).rstrip("\n") + "\n"
    text = re.sub(r"(?m)^name: .*$", f"name: {name}", text)
    return text + "kernel:\n  " + kernel + "\n"


def main():
    if sys.argv[1] == "--prune":
        root = sys.argv[2]
        keep = {v: k for v, _, _, k in TUNE}
        for d in sorted(os.listdir(os.path.join(root, "out"))):
            if d not in keep:
                continue  # fold checks keep every file
            for f in os.listdir(os.path.join(root, "out", d)):
                if f != "problem.py" and f[:-3] not in keep[d]:
                    os.remove(os.path.join(root, "out", d, f))
        return
    root = sys.argv[1]
    os.makedirs(os.path.join(root, "specs"), exist_ok=True)
    files = {f.split(".")[0]: os.path.join(d, f) for d in ("specs/level1", "specs/level2") for f in os.listdir(d)}
    for name, base, kernel, _ in TUNE:
        text = open(files[base]).read()
        open(os.path.join(root, "specs", name + ".yaml"), "w").write(with_kernel(text, name, kernel))
    base = open(files["13_mean_add_softmax_tanh_scaling"]).read()
    # Each family in turn (the plan's own choice is mostly direct at these
    # sizes); a family without tiles gets the plan's tiles.
    families = [None, "cuda: {wgmma: {}}", "cuda: {mma: {}}", "cuda: {ffma: {}}"]
    for i, c in enumerate(fold_configs(int(os.environ.get("FOLDS", "8")), 13)):
        name = f"fold{i:02d}"
        text = fold_spec(base, name, c)
        if families[i % len(families)]:
            text = with_kernel(text, name, families[i % len(families)])
        open(os.path.join(root, "specs", name + ".yaml"), "w").write(text)


if __name__ == "__main__":
    main()

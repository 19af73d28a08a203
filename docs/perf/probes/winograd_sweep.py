"""Probe, not a product: random configurations for the Winograd tile with
two slabs (the kernel verifier's own draws reach it a few times in a
thousand), as spec files for `bin/verify -specs` on a GPU host:

  python3 docs/perf/probes/winograd_sweep.py build/wino 40 7
  bin/verify -root . -specs "$(ls build/wino/*.yaml | paste -sd,)" -json $OUT/wino.json

Each draw: kernel_w 3 at stride_w = dilation_w (what Winograd's F(2,3)
along W needs), every other parameter random (asymmetric kernel, stride,
padding, output padding, dilation, groups, bias, input), and the tile's
span and stages random.
"""
import os
import random
import sys


def draw(rng):
    while True:
        g = rng.choice([1, 1, 2, 3])
        cin, cout = g * rng.randint(1, 24), g * rng.randint(1, 40)
        k = [rng.randint(1, 4), rng.randint(1, 4), 3]
        s = [rng.randint(1, 3) for _ in range(3)]
        dil = [rng.randint(1, 2), rng.randint(1, 2), s[2]]
        p = [rng.randint(0, dil[i] * (k[i] - 1)) for i in range(3)]
        op = [rng.randint(0, max(s[i], dil[i]) - 1) for i in range(3)]
        inp = [rng.randint(1, 6), rng.randint(2, 12), rng.randint(2, 40)]
        o = [(inp[i] - 1) * s[i] - 2 * p[i] + dil[i] * (k[i] - 1) + op[i] + 1 for i in range(3)]
        if min(o) >= 1 and all(op[i] < max(s[i], dil[i]) for i in range(3)):
            return dict(batch=rng.randint(1, 3), cin=cin, cout=cout, k=k, s=s, p=p, op=op, dil=dil, g=g,
                        inp=inp, bias=rng.random() < 0.5, span=rng.randint(1, 16), stages=rng.randint(2, 3))


def spec(name, c):
    t = lambda v: "[" + ", ".join(map(str, v)) + "]"
    tup = lambda v: "(" + ", ".join(map(str, v)) + ")"
    return f"""version: 2
name: {name}
title: Winograd with two slabs, a random configuration
problem:
  batch: {c['batch']}
  in_channels: {c['cin']}
  out_channels: {c['cout']}
  kernel: {t(c['k'])}
  input: {t(c['inp'])}
  stride: {t(c['s'])}
  padding: {t(c['p'])}
  output_padding: {t(c['op'])}
  dilation: {t(c['dil'])}
  groups: {c['g']}
  bias: {str(c['bias']).lower()}
reference:
  params:
    - {{name: in_channels, type: int}}
    - {{name: out_channels, type: int}}
  conv:
    - in_channels
    - out_channels
    - {tup(c['k'])}
    - stride={tup(c['s'])}
    - padding={tup(c['p'])}
    - output_padding={tup(c['op'])}
    - dilation={tup(c['dil'])}
    - groups={c['g']}
    - bias={c['bias']}
  init_inputs: [{c['cin']}, {c['cout']}]
kernel:
  backends: [cuda]
  cuda: {{wgmma: {{winograd: true, slabs: 2, park_sums: true, min_blocks: 1, span: {c['span']}, stages: {c['stages']}}}}}
"""


def main():
    root, n, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    os.makedirs(root, exist_ok=True)
    rng = random.Random(seed)
    for i in range(n):
        name = f"wino_{seed}_{i:03d}"
        open(os.path.join(root, name + ".yaml"), "w").write(spec(name, draw(rng)))


if __name__ == "__main__":
    main()

"""Probe, not a generated submission: hand-edited copies of an emitted CUDA
submission, to bisect what sets its kernel's time one change at a time
before the change goes into a template.

  python3 verify/probes/variants.py out/l1_61_square_input_square_kernel /tmp/var base minb3
  python3 verify/probes/profile.py /tmp/var/*

writes one folder per named variant (its cuda.py edited, its extension
renamed, problem.py beside it). A variant whose edit finds nothing to
replace is an error: a stale edit must not pass for a measurement.
"""
import os
import re
import shutil
import sys


VARIANTS = {
    "base": lambda s: s,
    "nominb": lambda s: edit(s, [("__launch_bounds__(128, 1)", "__launch_bounds__(128)")]),
    "minb2": lambda s: edit(s, [("__launch_bounds__(128, 1)", "__launch_bounds__(128, 2)")]),
    "minb3": lambda s: edit(s, [("__launch_bounds__(128, 1)", "__launch_bounds__(128, 3)")]),
    "wide": lambda s: edit(s, [("typedef int idx_t;", "typedef long long idx_t;")]),
}


def edit(src, edits):
    for old, new in edits:
        if old not in src:
            raise SystemExit(f"variants: {old!r} not found")
        src = src.replace(old, new)
    return src


def main():
    if len(sys.argv) < 4:
        raise SystemExit(__doc__)
    folder, root, names = sys.argv[1], sys.argv[2], sys.argv[3:]
    with open(os.path.join(folder, "cuda.py")) as f:
        src = f.read()
    tag = os.path.basename(os.path.normpath(folder))
    for name in names:
        if name not in VARIANTS:
            raise SystemExit(f"variants: no variant {name!r} (have {', '.join(VARIANTS)})")
        out = os.path.join(root, f"{tag}.{name}")
        os.makedirs(out, exist_ok=True)
        text = VARIANTS[name](src)
        text = re.sub(r'name="([^"]+)"', lambda m: f'name="{m.group(1)}_{name}"', text, count=1)
        with open(os.path.join(out, "cuda.py"), "w") as f:
            f.write(text)
        shutil.copy(os.path.join(folder, "problem.py"), out)
        print(out)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Folding on lineage maps is folding on their statements (decision 127).

usage: map_fold_differential.py TV_OPT SEED COUNT

Each case is a stage whose lists hold random #tv.lineage_map attributes on a
2 x {2, 3} mesh: an affine block index in d0 (the axis folded first) with
nested +, -, *, mod, floordiv and ceildiv, a second map of the same tensor
on another plan tensor (its own block shape, index and `where`), and the
guarantee's map. It is folded along both axes in both orders two ways: on
the maps, then written out (--tv-fold-symmetry, --tv-expand-lineage-maps),
and written out first, then folded on the statements. The two modules must
be the same text, or both refused. Prints the count of differences and
whether enough cases folded for the comparison to mean something.
"""
import random
import subprocess
import sys

opt, seed, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = random.Random(seed)


def expr(depth):
    if depth == 0 or rng.random() < 0.3:
        return rng.choice(["d0", "d1", "d0", "d1", str(rng.randint(-3, 5))])
    op = rng.choice(["+", "-", "*", "mod", "floordiv", "ceildiv", "+"])
    lhs = expr(depth - 1)
    if op == "*":
        return f"({lhs}) * {rng.randint(-3, 4)}"
    if op in ("mod", "floordiv", "ceildiv"):
        return f"({lhs}) {op} {rng.randint(1, 5)}"
    return f"({lhs}) {op} ({expr(depth - 1)})"


def stage(sizes, block, shape, block2, shape2, where2, extent):
    ranks = ", ".join(str(r) for r in range(sizes[0] * sizes[1]))
    m1 = f"affine_map<(d0, d1) -> ({block}, 0)>"
    m2 = f"affine_map<(d0, d1) -> ({block2}, 0)>"
    return f'''tv.mesh @mesh axes ["dp", "tp"] sizes [{sizes[0]}, {sizes[1]}]
tv.stage @s assumes [#tv.lineage_map<"x" blocks {m1} shape [{shape}, 2] = "x" on @mesh where {{}}>, #tv.lineage_map<"x" blocks {m2} shape [{shape2}, 2] = "x2" on @mesh where {where2}>] guarantees [#tv.lineage_map<"y" blocks {m1} shape [{shape}, 2] = "y" on @mesh where {{}}>] {{
  tv.spec @spec {{
    %0 = tv.input "x" : tensor<{extent}x2xf32>
    %1 = tv.exp %0 : tensor<{extent}x2xf32>
    tv.output "y", %1 : tensor<{extent}x2xf32>
  }}
  tv.plan @plan mesh @mesh micro_batches 1 {{
    tv.rank_program [{ranks}] {{
      %0 = tv.input "x" : tensor<{shape}x2xf32>
      %1 = tv.exp %0 : tensor<{shape}x2xf32>
      tv.output "y", %1 : tensor<{shape}x2xf32>
    }}
  }}
}}
'''


def run(passes, src):
    p = subprocess.run([opt, *passes, "-mlir-print-debuginfo=false"],
                       input=src, capture_output=True, text=True)
    return p.returncode, p.stdout


differences = folded = 0
for _ in range(count):
    sizes = [2, rng.choice([2, 3])]
    kind = rng.random()
    if kind < 0.4:
        block = f"d0 * {rng.randint(1, 3)} + ({expr(2)})"
    elif kind < 0.7:
        block = (f"(d0 * {rng.choice([2, 4, 6])} + ({expr(2)})) "
                 f"{rng.choice(['mod', 'floordiv', 'ceildiv'])} "
                 f"{rng.choice([1, 2, 3, 4])}")
    else:
        block = expr(3)
    shape = rng.choice([1, 2])
    extent = rng.choice([2, 4, 6, 8, 12]) * shape
    shape2 = rng.choice([shape, 2 * shape]) if rng.random() < 0.5 else shape
    block2 = rng.choice([block, f"d0 * {rng.randint(1, 3)} + ({expr(1)})",
                         expr(2)])
    where2 = rng.choice(["{}", "{}", "{tp = 0}", "{tp = 1}", "{dp = 1}"])
    src = stage(sizes, block, shape, block2, shape2, where2, extent)
    for axes in ("dp,tp", "tp,dp"):
        fold = "--tv-fold-symmetry=axes=" + axes
        on_maps = run([fold, "--tv-expand-lineage-maps"], src)
        on_statements = run(["--tv-expand-lineage-maps", fold], src)
        if on_maps[0] and on_statements[0]:
            continue
        if "folded" in on_maps[1]:
            folded += 1
        if on_maps != on_statements:
            differences += 1
            print(f"DIFFERENT ({axes}):\n{src}")
print(f"differences: {differences}")
print("folded enough" if folded >= count // 4 else f"folded only {folded}")

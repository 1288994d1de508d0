"""Hand-edits a generated plan (issue 34's fourth case): the dX term of one
projection is dropped from the sum of the input gradients, in micro-batch
0 of every rank program that holds weight WEIGHT: the add that takes the
tv.linear_grad input gradient of the weight becomes a copy of its other
operand.
Usage: drop_weight_dx_term.py PLAN.mlir WEIGHT > OUT.mlir"""
import re
import sys

text = open(sys.argv[1]).read()
weight = sys.argv[2]
# SSA names are local to each rank program: edit each on its own.
parts = re.split(r'(?=tv\.rank_program )', text)
edited = 0
for i, part in enumerate(parts):
    m = re.search(r'(%%[0-9a-z_]+) = tv\.input "%s"' % re.escape(weight), part)
    if not part.startswith('tv.rank_program') or not m:
        continue
    w = m.group(1)
    g = re.search(r'(%%[0-9a-z_]+), %%[0-9a-z_]+ = tv\.linear_grad '
                  r'%%[0-9a-z_]+, %s, [^\n]*\{mb = 0 : i64\}' % re.escape(w), part)
    if not g:
        continue
    dx = g.group(1)
    add = re.compile(r'(%%[0-9a-z_]+) = tv\.add (%%[0-9a-z_]+), %s '
                     r'\{mb = 0 : i64\} : (tensor<[0-9x]+xf32>), '
                     r'tensor<[0-9x]+xf32> -> tensor<[0-9x]+xf32>' % re.escape(dx))
    parts[i], n = add.subn(lambda a: '%s = tv.copy %s {mb = 0 : i64} : %s'
                           % (a.group(1), a.group(2), a.group(3)), part, count=1)
    edited += n
if edited == 0:
    sys.exit("no add takes the input gradient of " + weight)
sys.stdout.write(''.join(parts))

"""Hand-edits a generated plan's vocabulary-parallel loss (issue 34's first
two cases), in micro-batch 0 of the first rank program that computes it:
  scale: the loss gradient's share 1/(dp*mb) = 0.25 becomes 0.5 (a
         forgotten dp);
  sub:   the cross-entropy backward's final subtraction (softmax*g minus
         the one-hot term, tagged d_logits.mb0) has its operands swapped.
Usage: vocab_loss_edits.py PLAN.mlir scale|sub > OUT.mlir"""
import re
import sys

text = open(sys.argv[1]).read()
which = sys.argv[2]
lines = text.split('\n')
done = False
for i, line in enumerate(lines):
    if done:
        break
    if which == 'scale':
        m = re.search(r'tv\.scale (%[0-9a-z_]+), 2\.500000e-01 \{mb = 0 : i64\} : tensor<f32>', line)
        if m:
            lines[i] = line.replace('2.500000e-01', '5.000000e-01', 1)
            done = True
    elif which == 'sub' and 'tv.tag "d_logits.mb0"' in line:
        prev = lines[i - 1]
        m = re.search(r'tv\.sub (%[0-9a-z_]+), (%[0-9a-z_]+)', prev)
        if m:
            lines[i - 1] = prev.replace(m.group(0), 'tv.sub %s, %s' % (m.group(2), m.group(1)), 1)
            done = True
if not done:
    sys.exit('no ' + which + ' to edit')
print('\n'.join(lines))

"""Hand-edits a generated plan (issue 34's third case): micro-batch 1's
backward reads micro-batch 0's activation. Every tv.linear_grad of
micro-batch 1 that reads the value tagged NAME.mb1 reads NAME.mb0 instead.
Usage: mb_reads_other_activation.py PLAN.mlir NAME > OUT.mlir"""
import re
import sys

text = open(sys.argv[1]).read()
name = sys.argv[2]
v0 = re.search(r'tv\.tag "%s\.mb0", (%%[0-9a-z_]+)' % re.escape(name), text).group(1)
v1 = re.search(r'tv\.tag "%s\.mb1", (%%[0-9a-z_]+)' % re.escape(name), text).group(1)
pattern = re.compile(r'(tv\.linear_grad )%s(, [^\n]*\{mb = 1 : i64\})' % re.escape(v1))
out, n = pattern.subn(lambda m: m.group(1) + v0 + m.group(2), text)
if n == 0:
    sys.exit("no linear_grad of micro-batch 1 reads " + v1)
sys.stdout.write(out)

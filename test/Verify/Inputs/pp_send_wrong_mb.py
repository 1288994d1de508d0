"""Hand-edits a generated plan (issue 34's fifth case): the pipeline sends
micro-batch 0's activation again in micro-batch 1's slot. In the first
rank program with forward pipeline sends, the send of micro-batch 1 sends
the value micro-batch 0's send sent.
Usage: pp_send_wrong_mb.py PLAN.mlir > OUT.mlir"""
import re
import sys

text = open(sys.argv[1]).read()
send = re.compile(r'tv\.send (%[0-9a-z_]+) \{mb = (\d) : i64, peer_axis = "pp", '
                  r'peer_offset = 1 : i64\}')
sends = list(send.finditer(text))
mb0 = next(m for m in sends if m.group(2) == "0")
mb1 = next(m for m in sends if m.group(2) == "1" and m.start() > mb0.start())
edited = mb1.group(0).replace(mb1.group(1), mb0.group(1), 1)
sys.stdout.write(text[:mb1.start()] + edited + text[mb1.end():])

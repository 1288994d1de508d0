#!/usr/bin/env python3
"""Writes a mutated copy of a verdict-plan-json/1 file (gzip in, JSON out).

usage: mutate.py IN.json.gz MUTATION OUT.json

Each mutation changes one node of one rank, as a real plan bug would:
  gather-order   rank 0's first all-gather whose pieces are out of rank
                 order concatenates two of its pieces swapped, on every
                 member of its group alike
  gather-order-one  the same on rank 0 alone
  route-scale    rank 3's first forward MoE gate scales by 2.0, not 2.5
  expert-range   rank 3's first forward expert matmul names experts 0..8
                 for the weights of experts 8..16
  expert-count   rank 3's first forward expert matmul names 4 experts for
                 the weights of 8 (refused at import)
  chunk-index    rank 1's first chunk keeps a piece its group does not have
  gate-bias      the first MoE gate has a score bias (not modeled: refused)
  gate-kwarg     the first MoE gate has a kwarg no semantics reads (refused)
"""
import gzip
import json
import sys

src, mutation, dst = sys.argv[1:4]
with gzip.open(src, "rt") as f:
    plan = json.load(f)
ranks = plan["Gp"]["ranks"]


def first(rank, opname, pred=lambda n: True):
    for n in ranks[rank]:
        if n["opname"] == opname and pred(n):
            return n
    sys.exit("no %s node on rank %s" % (opname, rank))


if mutation in ("gather-order", "gather-order-one"):
    node = first("0", "AllGatherPrim",
                 lambda n: [t[0] for t in n["in"]] != sorted(t[0] for t in n["in"]))
    group = node["group"]
    members = [n for r in ranks.values() for n in r
               if n.get("group") == group and n["opname"] == "AllGatherPrim"]
    for n in (members if mutation == "gather-order" else [node]):
        n["in"][0], n["in"][1] = n["in"][1], n["in"][0]
elif mutation == "route-scale":
    first("3", "FW_nns_moe_gate")["kwargs"]["route_scale"] = 2.0
elif mutation == "expert-range":
    kw = first("3", "FW_nns_moe_gmm")["kwargs"]
    kw["local_expert_start"], kw["local_expert_end"] = 0, 8
elif mutation == "expert-count":
    kw = first("3", "FW_nns_moe_gmm")["kwargs"]
    kw["local_expert_start"], kw["local_expert_end"] = 8, 12
elif mutation == "chunk-index":
    first("1", "ChunkPrim")["kwargs"]["__collective_idx"] = 99
elif mutation == "gate-bias":
    first("2", "FW_nns_moe_gate")["kwargs"]["bias"] = [0.0] * 16
elif mutation == "gate-kwarg":
    first("2", "FW_nns_moe_gate")["kwargs"]["norm_topk_prob"] = True
else:
    sys.exit("unknown mutation " + mutation)
with open(dst, "w") as f:
    json.dump(plan, f)

"""Writes one-change variants of keys_base.json into the directory argv[1]:
each adds a key the format does not have, or makes a checked key disagree
with what the importer reads (keys.test)."""
import copy
import json
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
base = json.load(open(os.path.join(here, "keys_base.json")))
out = sys.argv[1]
os.makedirs(out, exist_ok=True)


def variant(name, change):
    d = copy.deepcopy(base)
    change(d)
    with open(os.path.join(out, name + ".json"), "w") as f:
        json.dump(d, f)


variant("base", lambda d: None)
variant("top", lambda d: d.update(schedule="interleaved"))
variant("graph", lambda d: d["Gp"].update(zero_stage=3))
variant("world", lambda d: d["Gp"]["world"].update(num_ep=2))
variant("tensor", lambda d: d["Gp"]["tensors"]["1"].update(dtype="bf16"))
variant("node", lambda d: d["Gp"]["ranks"]["1"][0].update(recompute=True))
variant("p2p", lambda d: d["Gp"]["ranks"]["0"][0].update(
    p2p={"src": 0, "dst": 1, "role": "send", "tag": 3}))
variant("group", lambda d: d["Gp"]["collective_groups"].append(
    {"key": [], "tensors": [], "nodes": [], "stream": 1}))
variant("lineage", lambda d: d["lineages"][0].update(scale=0.5))
variant("slice", lambda d: d["lineages"][0]["slices"][0].update(
    valmap=[0, 2]))
variant("errors", lambda d: d["errors"].update(
    lineages="KeyError while grouping nodes"))
variant("wtype", lambda d: d["Gp"].update(wtype="s"))
variant("ndevs", lambda d: d["Gp"]["world"].update(runtime_ndevs=4))
variant("specworld", lambda d: d["Gs"]["world"].update(num_mb=2))
variant("coords", lambda d: d["Gp"]["rank_coords"].update(
    {"1": {"dp": 0, "tp": 1, "pp": 0}}))
variant("fullshape", lambda d: d["lineages"][1].update(full_shape=[8]))

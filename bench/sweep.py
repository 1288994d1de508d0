#!/usr/bin/env python3
"""Growth sweeps (issues 5 and 20): the whole run's time (generation and the
three-pass command) against one parameter at a time (everything else
fixed), as ratios within one run, plus an SVG plot. Targets: issue 20's.
Standard library only. Usage: bench/sweep.py [--quick] [--out DIR]"""
import json, os, subprocess, sys, tempfile, time, datetime

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "build", "bin")
quick = "--quick" in sys.argv
outdir = sys.argv[sys.argv.index("--out") + 1] if "--out" in sys.argv else os.path.join(ROOT, "bench")
os.makedirs(outdir, exist_ok=True)
base = json.load(open(os.path.join(ROOT, "examples", "models", "llama3-8b.json")))

def run(cfg, parallel, layers=4, seq=8, mbs=1):
    with tempfile.TemporaryDirectory() as d:
        mpath, plan, stats = (os.path.join(d, n) for n in ("m.json", "p.mlir", "s.json"))
        json.dump(cfg, open(mpath, "w"))
        # The whole run: generation, then the three-pass command.
        t0 = time.time()
        subprocess.run([os.path.join(BIN, "tv-translate"), "--import-model-config", mpath,
                        "--parallel", parallel, "--layers", str(layers), "--seq", str(seq),
                        "--micro-batch-size", str(mbs), "-o", plan], check=True)
        r = subprocess.run([os.path.join(BIN, "tv-opt"), plan, "--tv-stage-partition",
                            "--tv-shape-reduce",
                            "--tv-verify=stats-file=" + stats + " drop-stages=true",
                            "-o", os.devnull],
                           capture_output=True, text=True)
        wall = time.time() - t0
        s = json.load(open(stats)) if os.path.exists(stats) else {"result": "error"}
        return wall, s.get("result"), s.get("stages", 0)

def with_(**kw):
    c = dict(base); c.update(kw); return c

P = "dp=2 tp=2 pp=2 mb=2"
sweeps = {
    # name: (points, function point -> (cfg, parallel, layers, seq, mbs), target ratio)
    "hidden": ([1024, 4096, 16384], lambda v: (with_(hidden_size=v, num_attention_heads=32, num_key_value_heads=8, intermediate_size=4 * v), P, 4, 8, 1), 1.1),
    "sequence": ([128, 1024, 8192], lambda v: (base, P, 4, v, 1), 1.1),
    "heads": ([8, 32, 128], lambda v: (with_(num_attention_heads=v, num_key_value_heads=min(8, v)), P, 4, 8, 1), 1.1),
    "batch": ([1, 4, 8], lambda v: (base, P, 4, 8, v), 1.1),
    "dp": ([2, 8, 64] if not quick else [2, 8], lambda v: (base, "dp=%d" % v, 4, 8, 1), 1.2),
    "micro-batches": ([2, 8, 32] if not quick else [2, 8], lambda v: (base, "mb=%d" % v, 4, 8, 1), 1.3),
    "layers": ([4, 8, 32], lambda v: (base, P, v, 8, 1), 1.3),
    "tp": ([1, 2, 8], lambda v: (base, "tp=%d" % v, 4, 8, 1), 4.0),
}
results = {}
for name, (points, mk, target) in sweeps.items():
    rows = []
    for v in points:
        cfg, par, layers, seq, mbs = mk(v)
        wall, res, stages = run(cfg, par, layers, seq, mbs)
        rows.append((v, wall, res, stages))
        print("%-14s %6d  %7.2f s  %s  %d stages" % (name, v, wall, res, stages), flush=True)
    results[name] = (rows, target)

commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
lines = ["", "### bench/sweep.sh%s (%s, commit %s, %d cores)" % (" --quick" if quick else "", datetime.date.today(), commit, os.cpu_count()), "",
         "Base: llama3-8b sizes, 4 layers, seq 8, micro-batch size 1, dp2 tp2 pp2 mb2 unless the parameter is the swept one; "
         "whole run: wall of generation and `tv-opt --tv-stage-partition --tv-shape-reduce --tv-verify`. Plot: bench/sweep.svg.", "",
         "| parameter | points | wall s | ratio last/first | target | all proven |", "|---|---|---|---|---|---|"]
for name, (rows, target) in results.items():
    ratio = rows[-1][1] / max(rows[0][1], 1e-9)
    lines.append("| %s | %s | %s | %.2f | ≤ %.1f | %s |" % (
        name, " → ".join(str(r[0]) for r in rows), " / ".join("%.2f" % r[1] for r in rows),
        ratio, target, "yes" if all(r[2] == "proven" for r in rows) else "NO"))
open(os.path.join(ROOT, "bench", "RESULTS.md"), "a").write("\n".join(lines) + "\n")

# SVG: one small panel per parameter, time against the point index.
W, H, pw, ph = 960, 520, 220, 200
svg = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="11">' % (W, H),
       '<rect width="100%" height="100%" fill="white"/>']
for i, (name, (rows, target)) in enumerate(results.items()):
    ox, oy = 20 + (i % 4) * (pw + 20), 20 + (i // 4) * (ph + 50)
    tmax = max(r[1] for r in rows) * 1.2 or 1
    svg.append('<text x="%d" y="%d" font-weight="bold">%s (ratio %.2f, target %.1f)</text>' % (ox, oy + 12, name, rows[-1][1] / max(rows[0][1], 1e-9), target))
    svg.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>' % (ox + 30, oy + ph, ox + pw, oy + ph))
    svg.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>' % (ox + 30, oy + 20, ox + 30, oy + ph))
    svg.append('<text x="%d" y="%d">%.1fs</text>' % (ox, oy + 28, tmax))
    pts = []
    for j, (v, wall, res, _) in enumerate(rows):
        x = ox + 40 + j * (pw - 60) / max(len(rows) - 1, 1)
        y = oy + ph - (ph - 20) * wall / tmax
        pts.append("%.1f,%.1f" % (x, y))
        svg.append('<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>' % (x, y, "steelblue" if res == "proven" else "red"))
        svg.append('<text x="%.1f" y="%d" text-anchor="middle">%s</text>' % (x, oy + ph + 14, v))
    svg.append('<polyline points="%s" fill="none" stroke="steelblue"/>' % " ".join(pts))
svg.append("</svg>")
open(os.path.join(outdir, "sweep.svg"), "w").write("\n".join(svg))

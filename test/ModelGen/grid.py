#!/usr/bin/env python3
"""Clean generated plans over a grid of parallel configurations are proven.

usage: grid.py TV_TRANSLATE TV_OPT INPUTS_DIR WORK_DIR [maps]

With `maps`, each plan is instead partitioned and shape-reduced twice, with
and without --tv-stage-partition=lineage-maps, and the two reduced modules
must be the same text (decision 127).

For llama3 and deepseek-v3 every (dp, tp, pp) in {1, 2, 4}^3 is generated
and verified. The micro-batch count takes {1, 2, 4} in a Latin square over (tp, pp) and the extra
options through none, --sp, --zero 1, --zero 2, --zero 3 (and for deepseek
ep = dp, also with a per-rank mean loss),
with Adam instead of SGD on some of them, so that each option meets every
axis value. Qwen2 (QKV bias, tied
embeddings), Mistral (sliding window) and Qwen3 (q/k norms, head_dim other
than hidden / heads, tied embeddings) take a third of those points each,
every third in a different phase, so that together they cover the cube;
they cycle through the extra options, --loss-scaling per-rank and Adam
without ZeRO.
Depth is max(2, pp) layers. Six more plans take the interleaved schedule
(--vpp 2, four layers over two pipeline ranks), and four a padded
vocabulary (--make-vocab-size-divisible-by 3, or 12 for a whole shard of
padding), and twenty-one context parallelism (cp 2 or 4, --cp-comm a2a,
allgather or p2p, the ring also load-balanced; three of them DeepSeek), and
seven Megatron's distributed optimizer (--distributed-optimizer), and
thirteen steps as frameworks run them: overlapped communication (also the
ring's exchange), loss scales and gradient clipping.
Mixtral (all layers MoE, sliding window) takes another third of the cube
with the MoE options, and three plans with context parallelism, the
interleaved schedule and the distributed optimizer; Phi-3 four plans;
Gemma 2 eight.
Any outcome but "proven" fails the test and names the configuration.
"""
import concurrent.futures as cf
import itertools
import os
import subprocess
import sys

translate, opt, inputs, work = sys.argv[1:5]
# "maps": instead of verifying, partition and reduce each plan with and
# without --tv-stage-partition=lineage-maps and ask for the same output.
mode = sys.argv[5] if len(sys.argv) > 5 else "verify"
os.makedirs(work, exist_ok=True)

EXTRAS = {
    "llama": [[], ["--sp"], ["--zero", "1", "--optimizer", "adam"],
              ["--zero", "2"], ["--zero", "3"]],
    "deepseek": [[], ["--sp"], ["--zero", "1"], ["--zero", "2"], ["ep"],
                 ["ep", "--sp", "--zero", "2", "--optimizer", "adam"],
                 ["ep", "--zero", "3"], ["ep", "--loss-scaling", "per-rank"]],
}

# The newer architectures also take DeepSpeed / torchtitan loss scaling.
NEW_EXTRAS = EXTRAS["llama"] + [["--loss-scaling", "per-rank", "--sp"],
                                ["--optimizer", "adam", "--sp"]]

jobs = []
for model in ("llama", "deepseek"):
    for i, (dp, tp, pp) in enumerate(itertools.product((1, 2, 4), repeat=3)):
        # Latin square: every micro-batch count meets every pp and tp.
        mb = (1, 2, 4)[(i + i // 3) % 3]
        extra = list(EXTRAS[model][i % len(EXTRAS[model])])
        par = f"dp={dp} tp={tp} pp={pp} mb={mb}"
        if "ep" in extra:
            extra.remove("ep")
            par += f" ep={dp}"
        jobs.append((model, par, extra, max(2, pp)))
for phase, model in enumerate(("qwen2", "mistral", "qwen3")):
    for i, (dp, tp, pp) in enumerate(itertools.product((1, 2, 4), repeat=3)):
        if i % 3 != phase:
            continue
        mb = (1, 2, 4)[(i // 3) % 3]
        extra = list(NEW_EXTRAS[(i // 3) % len(NEW_EXTRAS)])
        jobs.append((model, f"dp={dp} tp={tp} pp={pp} mb={mb}", extra,
                     max(2, pp)))

# Mixtral (every layer a mixture of experts, GQA, a sliding window): a
# third of the cube, through the options of the MoE extras (ep = dp where
# "ep" is named), and with context parallelism, the interleaved schedule
# and the distributed optimizer.
MIXTRAL_EXTRAS = [["ep"], ["--sp"], ["ep", "--zero", "2", "--optimizer", "adam"],
                  ["ep", "--loss-scaling", "per-rank"], ["--zero", "3"],
                  ["ep", "--sp", "--zero", "1"]]
for i, (dp, tp, pp) in enumerate(itertools.product((1, 2, 4), repeat=3)):
    # A Latin square: every value of each axis meets every other axis's.
    if (i + i // 3 + i // 9) % 3:
        continue
    mb = (1, 2, 4)[(i // 3) % 3]
    extra = list(MIXTRAL_EXTRAS[(i // 3) % len(MIXTRAL_EXTRAS)])
    par = f"dp={dp} tp={tp} pp={pp} mb={mb}"
    if "ep" in extra:
        extra.remove("ep")
        par += f" ep={dp}"
    jobs.append(("mixtral", par, extra, max(2, pp)))
for par, extra, layers in (
        ("dp=2 cp=2 tp=1 pp=1 mb=2 ep=2", ["--cp-comm", "a2a"], 2),
        ("dp=2 tp=2 pp=2 mb=2 ep=2", ["--sp", "--vpp", "2"], 4),
        ("dp=4 tp=1 pp=2 mb=2 ep=2", ["--distributed-optimizer"], 2)):
    jobs.append(("mixtral", par, extra, layers))

# Phi-3 (Mistral's architecture, multi-head attention): four plans.
for par, extra in (
        ("dp=2 tp=2 pp=2 mb=2", ["--sp"]),
        ("dp=4 tp=1 pp=1 mb=2", ["--zero", "3"]),
        ("dp=1 tp=4 pp=2 mb=4", ["--optimizer", "adam"]),
        ("dp=2 cp=2 tp=2 pp=1 mb=1", ["--cp-comm", "a2a"])):
    jobs.append(("phi3", par, extra, 2))

# Gemma 2 (GeGLU, soft-capped scores and logits, sliding-window even
# layers, (1 + w) and post-block norms, head_dim other than hidden /
# heads, tied embeddings): eight plans.
for par, extra, layers in (
        ("dp=2 tp=2 pp=2 mb=2", ["--sp"], 2),
        ("dp=4 tp=1 pp=1 mb=2", ["--zero", "3"], 2),
        ("dp=1 tp=4 pp=2 mb=4", ["--optimizer", "adam"], 2),
        ("dp=2 tp=2 pp=2 mb=2", ["--vpp", "2"], 4),
        ("dp=2 tp=1 pp=2 mb=2", ["--distributed-optimizer"], 2),
        ("dp=1 tp=2 pp=1 mb=2",
         ["--gather-logits", "--make-vocab-size-divisible-by", "3"], 2),
        ("dp=2 tp=2 pp=1 mb=1", ["--loss-scaling", "per-rank", "--zero", "2"],
         2),
        ("dp=4 tp=4 pp=4 mb=4", ["--sp", "--zero", "1"], 4)):
    jobs.append(("gemma2", par, extra, layers))

# Interleaved 1F1B (Megatron's virtual pipeline, --vpp 2): two chunks of two
# layers on each of two pipeline ranks, for every architecture, with the
# options it combines with.
for model, par, extra in (
        ("llama", "dp=1 tp=1 pp=2 mb=2", []),
        ("llama", "dp=2 tp=2 pp=2 mb=4", ["--sp"]),
        ("qwen2", "dp=2 tp=1 pp=2 mb=2", ["--zero", "1"]),
        ("mistral", "dp=1 tp=2 pp=2 mb=4", []),
        ("qwen3", "dp=4 tp=1 pp=2 mb=2", ["--zero", "3"]),
        ("deepseek", "dp=2 tp=2 pp=2 mb=2 ep=2", ["--sp"])):
    jobs.append((model, par, extra + ["--vpp", "2"], 4))

# Megatron-LM's padded vocabulary (--make-vocab-size-divisible-by): a last
# shard partly padding, or (deepseek, tp 4) whole shards of padding.
for model, par, extra in (
        ("llama", "dp=2 tp=2 pp=2 mb=2", ["--sp"]),
        ("qwen3", "dp=2 tp=2 pp=2 mb=1", ["--zero", "3"]),
        ("mistral", "dp=1 tp=2 pp=1 mb=2", ["--gather-logits"]),
        ("deepseek", "dp=2 tp=4 pp=1 mb=1 ep=2",
         ["--make-vocab-size-divisible-by", "12"])):
    if "--make-vocab-size-divisible-by" not in extra:
        extra = extra + ["--make-vocab-size-divisible-by", "3"]
    jobs.append((model, par, extra, 2))

# Context parallelism (cp in {2, 4}; DeepSpeed-Ulysses all-to-all) with the
# options it combines with.
for model, par, extra, layers in (
        ("llama", "dp=1 cp=4 tp=1 pp=2 mb=2", [], 2),
        ("llama", "dp=2 cp=2 tp=2 pp=1 mb=2", ["--sp", "--zero", "2"], 2),
        ("qwen2", "dp=2 cp=2 tp=1 pp=2 mb=1",
         ["--optimizer", "adam", "--zero", "1"], 2),
        ("mistral", "dp=1 cp=2 tp=2 pp=2 mb=2", ["--vpp", "2"], 4),
        ("qwen3", "dp=2 cp=2 tp=2 pp=2 mb=2", ["--zero", "3"], 2)):
    jobs.append((model, par, extra + ["--cp-comm", "a2a"], layers))
# ... and with all-gathered keys and values (torchtitan), GQA with fewer
# key/value heads per tp rank than cp among them.
for model, par, extra, layers in (
        ("llama", "dp=2 cp=4 tp=1 pp=1 mb=1", ["--zero", "3"], 2),
        ("llama", "dp=1 cp=2 tp=2 pp=2 mb=2", ["--sp"], 2),
        ("qwen3", "dp=2 cp=2 tp=2 pp=1 mb=2",
         ["--zero", "2", "--optimizer", "adam"], 2),
        ("mistral", "dp=2 cp=2 tp=1 pp=2 mb=2", [], 2),
        ("qwen2", "dp=1 cp=4 tp=2 pp=2 mb=4", ["--vpp", "2"], 4)):
    jobs.append((model, par, extra + ["--cp-comm", "allgather"], layers))
# ... and ring attention (Megatron-LM's p2p, online softmax).
for model, par, extra, layers in (
        ("llama", "dp=1 cp=4 tp=1 pp=2 mb=2", [], 2),
        ("llama", "dp=2 cp=2 tp=2 pp=2 mb=2", ["--sp", "--zero", "2"], 2),
        ("qwen3", "dp=2 cp=2 tp=2 pp=1 mb=1",
         ["--optimizer", "adam", "--zero", "1"], 2),
        ("qwen2", "dp=1 cp=2 tp=2 pp=2 mb=4", ["--vpp", "2"], 4),
        ("llama", "dp=2 cp=4 tp=1 pp=1 mb=1", ["--zero", "3"], 2)):
    jobs.append((model, par, extra + ["--cp-comm", "p2p"], layers))
# ... and the ring in the load-balanced order (2 x cp chunks of the
# sequence of 4).
for model, par, extra, layers in (
        ("llama", "dp=1 cp=2 tp=1 pp=2 mb=2", [], 2),
        ("qwen3", "dp=2 cp=2 tp=2 pp=1 mb=2", ["--optimizer", "adam"], 2),
        ("qwen2", "dp=2 cp=2 tp=1 pp=2 mb=2", ["--zero", "3"], 2)):
    jobs.append((model, par,
                 extra + ["--cp-comm", "p2p", "--cp-load-balance"], layers))
# ... and DeepSeek-V3 (MLA, MoE) with each exchange.
for par, extra in (
        ("dp=2 cp=2 tp=2 pp=1 mb=1 ep=2", ["--sp", "--zero", "2",
                                           "--cp-comm", "p2p"]),
        ("dp=4 cp=2 tp=1 pp=2 mb=2 ep=2", ["--zero", "1", "--cp-comm", "a2a"]),
        ("dp=2 cp=2 tp=1 pp=1 mb=2", ["--cp-comm", "allgather"])):
    jobs.append(("deepseek", par, extra, 2))

# Megatron-LM's distributed optimizer (flat per-bucket buffers, one owned
# range per data-parallel rank): every architecture, with buckets of 500
# elements on some, and with the options it combines with.
for model, par, extra, layers in (
        ("llama", "dp=2 tp=2 pp=2 mb=2", ["--sp"], 2),
        ("llama", "dp=4 tp=1 pp=1 mb=1", ["--ddp-bucket-size", "500"], 2),
        ("qwen2", "dp=2 tp=2 pp=2 mb=2", ["--optimizer", "adam"], 2),
        ("mistral", "dp=2 tp=1 pp=2 mb=4",
         ["--loss-scaling", "per-rank", "--ddp-bucket-size", "500"], 2),
        ("qwen3", "dp=2 cp=2 tp=2 pp=1 mb=1",
         ["--cp-comm", "p2p", "--optimizer", "adam"], 2),
        ("deepseek", "dp=2 tp=2 pp=1 mb=2", ["--sp"], 2),
        ("deepseek", "dp=4 tp=1 pp=2 mb=2 ep=2",
         ["--optimizer", "adam", "--ddp-bucket-size", "500"], 2)):
    jobs.append((model, par, extra + ["--distributed-optimizer"], layers))

# The step as frameworks run it (issue 36): Megatron's overlapped gradient
# reduce-scatter and parameter all-gather on the distributed optimizer,
# FSDP's prefetch, the ring's overlapped exchange, constant and dynamic loss
# scales, global-norm clipping (tied embeddings, experts, vpp, ring
# attention, sequence parallelism).
STEP = (
    ("llama", "dp=2 tp=2 pp=2 mb=2",
     ["--distributed-optimizer", "--overlap-grad-reduce",
      "--overlap-param-gather", "--loss-scale", "dynamic", "--clip-grad", "1.0",
      "--optimizer", "adam"], 2),
    ("llama", "dp=4 tp=1 pp=1 mb=1",
     ["--distributed-optimizer", "--overlap-grad-reduce",
      "--ddp-bucket-size", "500", "--loss-scale", "4096"], 2),
    ("qwen2", "dp=2 tp=2 pp=2 mb=2",
     ["--loss-scale", "dynamic", "--clip-grad", "0.5", "--zero", "1"], 2),
    ("mistral", "dp=2 tp=1 pp=2 mb=4",
     ["--distributed-optimizer", "--overlap-param-gather",
      "--loss-scaling", "per-rank", "--clip-grad", "1.0"], 2),
    ("qwen3", "dp=2 tp=2 pp=1 mb=2",
     ["--zero", "3", "--fsdp-prefetch", "--loss-scale", "128",
      "--clip-grad", "1.0"], 2),
    ("deepseek", "dp=4 tp=1 pp=2 mb=2 ep=2",
     ["--distributed-optimizer", "--overlap-grad-reduce",
      "--overlap-param-gather", "--loss-scale", "dynamic", "--clip-grad", "1.0",
      "--ddp-bucket-size", "500"], 2),
    ("deepseek", "dp=2 tp=2 pp=2 mb=2 ep=2",
     ["--sp", "--zero", "2", "--clip-grad", "1.0", "--optimizer", "adam"], 2),
    ("mixtral", "dp=2 tp=2 pp=1 mb=2 ep=2",
     ["--loss-scale", "dynamic", "--clip-grad", "2.0"], 2),
    ("llama", "dp=2 cp=2 tp=2 pp=1 mb=1",
     ["--cp-comm", "p2p", "--cp-overlap", "--distributed-optimizer",
      "--overlap-grad-reduce", "--loss-scale", "dynamic", "--clip-grad",
      "1.0"], 2),
    ("qwen3", "dp=1 cp=2 tp=1 pp=2 mb=2",
     ["--cp-comm", "p2p", "--cp-load-balance", "--cp-overlap",
      "--loss-scale", "512", "--clip-grad", "1.0", "--zero", "1"], 2),
    ("qwen2", "dp=1 tp=2 pp=2 mb=4",
     ["--vpp", "2", "--loss-scale", "1024", "--clip-grad", "1.0",
      "--optimizer", "adam"], 4),
    ("gemma2", "dp=2 tp=2 pp=2 mb=2",
     ["--distributed-optimizer", "--overlap-grad-reduce",
      "--overlap-param-gather", "--clip-grad", "1.0"], 2),
    ("phi3", "dp=2 tp=2 pp=1 mb=2",
     ["--loss-scale", "dynamic", "--clip-grad", "1.0", "--sp"], 2),
)
for model, par, extra, layers in STEP:
    jobs.append((model, par, extra, layers))


def run(job):
    model, par, extra, layers = job
    name = f"{model} {par} {' '.join(extra)}".strip()
    out = os.path.join(work, name.replace(" ", "_").replace("=", "") + ".mlir")
    gen = subprocess.run([translate, "--import-model-config",
                          os.path.join(inputs, f"grid-{model}.json"),
                          "--parallel", par, "--layers", str(layers), "--seq",
                          "4", *extra, "-o", out],
                         capture_output=True, text=True)
    if gen.returncode:
        return name, "generation failed: " + gen.stderr.strip()
    if mode == "maps":
        runs = [subprocess.run([opt, out, f"--tv-stage-partition=lineage-maps={m}",
                                "--tv-shape-reduce"], capture_output=True,
                               text=True) for m in ("false", "true")]
        os.remove(out)
        if runs[0].returncode:
            return name, "partition and reduction failed: " + runs[0].stderr
        if (runs[0].returncode, runs[0].stdout, runs[0].stderr) != (
                runs[1].returncode, runs[1].stdout, runs[1].stderr):
            return name, "the lineage maps give another reduced module"
        return name, None
    ver = subprocess.run([opt, out, "--tv-verify-pipeline", "-o", os.devnull],
                         capture_output=True, text=True)
    os.remove(out)
    # The verdict is the first "tv-verify:" line (a note may follow it).
    lines = (ver.stdout + ver.stderr).strip().splitlines()
    verdicts = [l for l in lines if l.startswith("tv-verify:")]
    last = verdicts[0] if verdicts else (lines[-1] if lines else "")
    if ver.returncode or not last.startswith("tv-verify: proven"):
        return name, last or f"exit {ver.returncode}"
    return name, None


failed = 0
with cf.ThreadPoolExecutor(max_workers=2) as pool:
    for name, err in pool.map(run, jobs):
        if err:
            failed += 1
            print(f"FAILED {name}: {err}")
        else:
            print(f"{'same' if mode == 'maps' else 'proven'} {name}")
print(f"grid: {len(jobs) - failed} of {len(jobs)} "
      f"{'the same with lineage maps' if mode == 'maps' else 'proven'}")
sys.exit(1 if failed else 0)

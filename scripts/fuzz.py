#!/usr/bin/env python3
"""In-tree mutation fuzzer for tv's input paths (issue 19).

Targets (each a command that reads one input file):
  json-plan     tv-translate --import-json-plan
  model-config  tv-translate --import-model-config (small parallel grid)
  nnscaler      tv-translate --import-nnscaler-json
  mlir          tv-opt --tv-verify-pipeline (MLIR text)
  shard-input   tv-opt --tv-validate-shard-partition (an annotated function,
                partitioned by MLIR's own passes in the run)
  shard-partitioned
                tv-translate --import-shard-partition IN --partitioned FILE
                (mlir-opt-22's output mutated; its first line names IN)

Seeds are real inputs (examples, the nnScaler plans, model presets, JSON
plans exported from the examples). Each iteration mutates a seed the way a
bad-input campaign does -- truncation, byte flips, deleted keys, wrong types,
huge / negative / NaN numbers, deep nesting, duplicated keys, bad ids and
ranks, deleted / duplicated / swapped lines -- runs the target under a time
and memory limit and classifies the run:

  crash      a signal, an LLVM fatal error, an abort, or an exit status that
             is not one of tv's (0 proven, 1 wrong, 2 unknown, 3 input error)
  hang       no answer within --timeout seconds
  unlocated  an error that names no file:line:col

Every input that crashes or hangs is written (gzipped) under
test/Fuzz/crashes/<target>/; --replay runs every such file and every seed
once and fails on any crash or hang, which is what the lit test does in CI.
Only the Python standard library is used (no PyPI).
"""
import argparse
import gzip
import json
import os
import random
import re
import resource
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TV_CODES = {0, 1, 2, 3}
LOCATED = re.compile(r"^[^\s:]+:\d+:\d+: (error|warning|note|remark): ")


def seeds(target, build):
    """(name, bytes) of the real inputs a target starts from."""
    out = []
    ex = os.path.join(ROOT, "examples")
    if target == "mlir":
        for f in sorted(os.listdir(ex)):
            if f.endswith(".mlir"):
                out.append((f, open(os.path.join(ex, f), "rb").read()))
    elif target == "model-config":
        for f in ("tiny-llama.json", "tiny-deepseek.json", "llama3-8b.json"):
            out.append((f, open(os.path.join(ex, "models", f), "rb").read()))
    elif target == "nnscaler":
        d = os.path.join(ROOT, "test", "Import", "NnScaler", "Inputs")
        for f in ("br14.json.gz", "demo.json.gz"):
            out.append((f, gzip.open(os.path.join(d, f)).read()))
    elif target in ("shard-input", "shard-partitioned"):
        up = os.path.join(ROOT, "test", "Upstream", "Inputs")
        ins = [os.path.join(ROOT, "test", "Upstream",
                            "shard_partition_in_tv.mlir"),
               os.path.join(up, "gather2d.mlir"),
               os.path.join(up, "halos.mlir"),
               os.path.join(up, "dynamic_sizes.mlir"),
               os.path.join(up, "uneven_offsets.mlir")]
        for sub in ("defects", "integers", "test_pass"):
            ins += [os.path.join(up, sub, f)
                    for f in sorted(os.listdir(os.path.join(up, sub)))]
        for path in ins:
            data = open(path, "rb").read()
            if target == "shard-input":
                out.append((os.path.basename(path), data))
                continue
            r = subprocess.run(
                ["mlir-opt-22", "--pass-pipeline=" + SHARD_PIPELINE, path],
                capture_output=True)
            if r.returncode == 0:
                out.append((os.path.basename(path),
                            b"// tv-fuzz-input: " +
                            os.path.relpath(path, ROOT).encode() + b"\n" +
                            r.stdout))
    elif target == "json-plan":
        for f in ("tp_mlp.mlir", "pp2.mlir", "dp_microbatch.mlir"):
            r = subprocess.run(
                [os.path.join(build, "bin", "tv-translate"),
                 "--export-json-plan", os.path.join(ex, f)],
                capture_output=True)
            if r.returncode == 0:
                out.append((f.replace(".mlir", ".json"), r.stdout))
    return out


SHARD_PIPELINE = ("builtin.module(func.func(sharding-propagation,"
                  "shard-partition,canonicalize,cse))")
MLIR_TARGETS = ("mlir", "shard-input", "shard-partitioned")


def command(target, build, path):
    bin_ = os.path.join(build, "bin")
    if target == "shard-input":
        return [os.path.join(bin_, "tv-opt"), path,
                "--tv-validate-shard-partition", "-o", os.devnull]
    if target == "shard-partitioned":
        # The annotated input the partitioned text came from (its first
        # line); a mutated first line falls back to the default pair's.
        first = open(path, "rb").readline().decode(errors="replace")
        m = re.match(r"// tv-fuzz-input: (\S+)", first)
        inp = os.path.join(ROOT, m.group(1)) if m else ""
        if not os.path.isfile(inp):
            inp = os.path.join(ROOT, "test", "Upstream",
                               "shard_partition_in_tv.mlir")
        return [os.path.join(bin_, "tv-translate"), "--import-shard-partition",
                inp, "--partitioned", path, "-o", os.devnull]
    if target == "json-plan":
        return [os.path.join(bin_, "tv-translate"), "--import-json-plan", path,
                "-o", os.devnull]
    if target == "model-config":
        return [os.path.join(bin_, "tv-translate"), "--import-model-config",
                path, "--parallel", "dp=2 tp=2 pp=2 mb=2", "--layers", "2",
                "-o", os.devnull]
    if target == "nnscaler":
        return [os.path.join(bin_, "tv-translate"), "--import-nnscaler-json",
                path, "-o", os.devnull]
    return [os.path.join(bin_, "tv-opt"), path,
            "--tv-verify-pipeline=stage-timeout-ms=2000 threads=1",
            "-o", os.devnull]


# --- mutations ---------------------------------------------------------------

WEIRD_NUMBERS = [0, -1, 1, 2, 3, 7, 2**31, 2**31 - 1, 2**53, 2**62,
                 2**63 - 1, -2**63, 10**15, 10**30, 1e308, -1e308, 0.5]
WEIRD_TEXT = ["NaN", "Infinity", "-Infinity", "1e999", "-0", "18446744073709551616"]


def json_paths(v, path=()):
    yield path, v
    if isinstance(v, dict):
        for k, x in v.items():
            yield from json_paths(x, path + (k,))
    elif isinstance(v, list):
        for i, x in enumerate(v):
            yield from json_paths(x, path + (i,))


def set_at(root, path, value):
    if not path:
        return value
    cur = root
    for p in path[:-1]:
        cur = cur[p]
    cur[path[-1]] = value
    return root


def mutate_json(data, rng):
    text = None
    try:
        v = json.loads(data)
    except Exception:
        return None
    paths = list(json_paths(v))
    # Prefer small nodes: most mutations aim at one field.
    path, node = rng.choice(paths)
    kind = rng.randrange(9)
    if kind == 0 and isinstance(node, dict) and node:
        del node[rng.choice(list(node))]
    elif kind == 1:
        v = set_at(v, path, rng.choice(
            [None, True, "x", [], {}, rng.choice(WEIRD_NUMBERS), [1, 2], {"a": 1}]))
    elif kind == 2 and isinstance(node, (int, float)) and not isinstance(node, bool):
        v = set_at(v, path, rng.choice(WEIRD_NUMBERS))
    elif kind == 3:
        depth = rng.choice([70, 300, 5000])
        v = set_at(v, path, "@@DEEP@@")
        text = json.dumps(v).replace('"@@DEEP@@"', "[" * depth + "1" + "]" * depth, 1)
    elif kind == 4 and isinstance(node, (int, float)) and not isinstance(node, bool):
        v = set_at(v, path, "@@NUM@@")
        text = json.dumps(v).replace('"@@NUM@@"', rng.choice(WEIRD_TEXT), 1)
    elif kind == 5 and isinstance(node, list) and node:
        i = rng.randrange(len(node))
        if rng.random() < 0.5:
            del node[i]
        else:
            node.insert(rng.randrange(len(node) + 1), node[i])
    elif kind == 6 and isinstance(node, dict) and node:
        # A duplicated key, at the text level.
        k = rng.choice(list(node))
        node["@@DUP@@"] = node[k]
        text = json.dumps(v).replace('"@@DUP@@"', json.dumps(k), 1)
    elif kind == 7 and isinstance(node, list) and len(node) >= 2:
        i, j = rng.randrange(len(node)), rng.randrange(len(node))
        node[i], node[j] = node[j], node[i]
    elif kind == 8 and isinstance(node, str):
        v = set_at(v, path, rng.choice(["", node + "x", "t0.v0.mb0", "r9999",
                                        node[::-1], "\u00e9\u0000"]))
    else:
        return None
    return (text if text is not None else json.dumps(v)).encode()


def mutate_lines(data, rng):
    lines = data.split(b"\n")
    if len(lines) < 2:
        return None
    kind = rng.randrange(5)
    i = rng.randrange(len(lines))
    if kind == 0:
        del lines[i]
    elif kind == 1:
        lines.insert(rng.randrange(len(lines)), lines[i])
    elif kind == 2:
        j = rng.randrange(len(lines))
        lines[i], lines[j] = lines[j], lines[i]
    elif kind == 3:
        nums = list(re.finditer(rb"-?\d+", lines[i]))
        if not nums:
            return None
        m = rng.choice(nums)
        n = str(rng.choice(WEIRD_NUMBERS[:-1])).encode()
        lines[i] = lines[i][:m.start()] + n + lines[i][m.end():]
    else:
        depth = rng.choice([100, 3000])
        lines.insert(i, b"tv.lineage " + b"[" * depth + b"]" * depth)
    return b"\n".join(lines)


def mutate_bytes(data, rng):
    data = bytearray(data)
    if not data:  # an earlier mutation truncated it all
        return bytes([rng.randrange(256)])
    kind = rng.randrange(4)
    if kind == 0:
        return bytes(data[:rng.randrange(len(data) + 1)])
    if kind == 1:
        for _ in range(rng.randrange(1, 8)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        return bytes(data)
    if kind == 2:
        i = rng.randrange(len(data) + 1)
        return bytes(data[:i]) + bytes(rng.randrange(256) for _ in range(rng.randrange(1, 16))) + bytes(data[i:])
    i = rng.randrange(len(data))
    j = min(len(data), i + rng.randrange(1, 256))
    return bytes(data[:j]) + bytes(data[i:j]) + bytes(data[j:])


def mutate(target, data, rng):
    for _ in range(10):
        r = rng.random()
        if target not in MLIR_TARGETS and r < 0.7:
            m = mutate_json(data, rng)
        elif target in MLIR_TARGETS and r < 0.6:
            m = mutate_lines(data, rng)
        else:
            m = mutate_bytes(data, rng)
        if m is not None and m != data:
            return m
    return mutate_bytes(data, rng)


# --- running -----------------------------------------------------------------

def limit_memory(mb):
    def set_limits():
        if mb > 0:  # 0: no cap (sanitized builds reserve terabytes of shadow)
            resource.setrlimit(resource.RLIMIT_AS, (mb << 20, mb << 20))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    return set_limits


def classify(target, build, data, timeout, memory_mb, tmpdir):
    path = os.path.join(tmpdir, "input" + (".mlir" if target in MLIR_TARGETS
                                           else ".json"))
    with open(path, "wb") as f:
        f.write(data)
    try:
        r = subprocess.run(command(target, build, path), capture_output=True,
                           timeout=timeout, preexec_fn=limit_memory(memory_mb))
    except subprocess.TimeoutExpired:
        return "hang", ""
    err = r.stderr.decode(errors="replace")
    if (r.returncode < 0 or r.returncode not in TV_CODES or
            "PLEASE submit a bug report" in err or "LLVM ERROR" in err or
            "terminate called" in err or "Assertion" in err or
            "Stack dump" in err):
        return "crash", err
    if r.returncode == 3:
        errors = [l for l in err.splitlines() if " error: " in l or l.startswith("error:")]
        if errors and not any(LOCATED.match(l) for l in errors):
            return "unlocated", err
    return "ok", err


def save(target, kind, data):
    d = os.path.join(ROOT, "test", "Fuzz", "crashes", target)
    os.makedirs(d, exist_ok=True)
    name = "%s-%d-%08x.gz" % (kind, len(data), hash(data) & 0xffffffff)
    with gzip.open(os.path.join(d, name), "wb") as f:
        f.write(data)
    return name


def fuzz(args):
    rng = random.Random(args.seed)
    pool = seeds(args.target, args.build)
    if not pool:
        sys.exit("fuzz: no seeds for " + args.target)
    counts = {"ok": 0, "crash": 0, "hang": 0, "unlocated": 0}
    unlocated = {}
    start = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        while time.time() - start < args.seconds:
            name, data = rng.choice(pool)
            m = data
            for _ in range(rng.choice([1, 1, 1, 2, 3])):
                m = mutate(args.target, m, rng)
            kind, err = classify(args.target, args.build, m, args.timeout,
                                 args.memory_mb, tmp)
            counts[kind] += 1
            if kind in ("crash", "hang"):
                saved = save(args.target, kind, m)
                print("%s from %s: %s\n%s" % (kind, name, saved, err[-2000:]),
                      flush=True)
            elif kind == "unlocated":
                line = next(l for l in err.splitlines() if "error" in l)
                key = re.sub(r"\d+", "N", line)[:160]
                unlocated.setdefault(key, 0)
                unlocated[key] += 1
    total = sum(counts.values())
    print("fuzz %s: %d executions in %.0f s; crashes %d, hangs %d, "
          "unlocated errors %d" % (args.target, total, time.time() - start,
                                   counts["crash"], counts["hang"],
                                   counts["unlocated"]))
    for k, n in sorted(unlocated.items(), key=lambda x: -x[1])[:20]:
        print("  unlocated x%d: %s" % (n, k))
    return 1 if counts["crash"] or counts["hang"] else 0


def replay(args):
    """Every saved crasher and every seed, once: no crash, no hang."""
    bad = 0
    n = 0
    targets = [args.target] if args.target else ["json-plan", "model-config",
                                                 "nnscaler", "mlir",
                                                 "shard-input",
                                                 "shard-partitioned"]
    with tempfile.TemporaryDirectory() as tmp:
        for target in targets:
            inputs = [(name, data) for name, data in seeds(target, args.build)]
            d = os.path.join(ROOT, "test", "Fuzz", "crashes", target)
            if os.path.isdir(d):
                for f in sorted(os.listdir(d)):
                    inputs.append((f, gzip.open(os.path.join(d, f)).read()))
            for name, data in inputs:
                kind, err = classify(target, args.build, data, args.timeout,
                                     args.memory_mb, tmp)
                n += 1
                if kind in ("crash", "hang"):
                    bad += 1
                    print("%s %s: %s\n%s" % (target, name, kind, err[-1500:]))
    print("replay: %d inputs, %d crashed or hung" % (n, bad))
    return 1 if bad else 0


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--target", choices=["json-plan", "model-config",
                                        "nnscaler", "mlir", "shard-input",
                                        "shard-partitioned"])
    p.add_argument("--seconds", type=float, default=60)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--timeout", type=float, default=30)
    p.add_argument("--memory-mb", type=int,
                   default=int(os.environ.get("TV_FUZZ_MEMORY_MB", "4096")),
                   help="address-space cap per run (0: none; default "
                        "$TV_FUZZ_MEMORY_MB or 4096)")
    p.add_argument("--replay", action="store_true")
    args = p.parse_args()
    if args.replay:
        sys.exit(replay(args))
    if not args.target:
        p.error("--target is needed unless --replay")
    sys.exit(fuzz(args))


if __name__ == "__main__":
    main()

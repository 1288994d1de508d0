#!/usr/bin/env python3
"""Standing differential test (issue 19): mutants of correct plans.

Every single-point mutant of the plan side of the examples (operand swaps,
changed constants, dropped or changed collectives, other peers, other slice
starts, another input read) is verified with --tv-verify-pipeline. A mutant
tv proves must then hold under the exact interpreter (--tv-interpret with
exact=true: arithmetic modulo a 61-bit prime, uninterpreted functions as
random functions) on several seeds, every element agreeing exactly or by
congruence: tv proved it, so it must be equivalent. A proven mutant that
the interpreter refutes is a soundness bug and fails the run. Mutants that
are not proven are the expected outcome for all but equivalent ones.

  mutants.py [--build DIR] [--limit N] [--seed S]

Prints one line per proven mutant and a summary:
  mutants: M run, P proven (all equivalent by the interpreter), K caught
Only the Python standard library is used.
"""
import argparse
import os
import random
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = ["tp_mlp.mlir", "tp_mlp_forward.mlir", "pp2.mlir",
            "dp_microbatch.mlir", "tp_allgather_output.mlir",
            "dp2_pp2_tp2.mlir"]
VALUE = re.compile(r"%[A-Za-z0-9_.]+")
APPROXIMATE = re.compile(r"(\d+) only within the tolerance\)")


def plan_lines(lines):
    """Indices of the op lines inside tv.plan."""
    inside, out = False, []
    for i, l in enumerate(lines):
        if l.startswith("tv.plan"):
            inside = True
            continue
        if inside and l.startswith("}"):
            inside = False
        if inside and ("=" in l or l.strip().startswith("tv.")):
            out.append(i)
    return out


def mutants_of(text):
    """(description, mutated text) for every single-point mutant."""
    lines = text.split("\n")
    out = []

    def emit(desc, i, new):
        m = list(lines)
        m[i] = new
        out.append((desc + " at line %d" % (i + 1), "\n".join(m)))

    inputs_by_type = {}
    for i in plan_lines(lines):
        m = re.search(r'tv.input "([^"]+)" : (\S+)', lines[i])
        if m:
            inputs_by_type.setdefault(m.group(2), set()).add(m.group(1))
    for i in plan_lines(lines):
        l = lines[i]
        if "tv.rank_program" in l:
            continue
        # Operand swap in a binary op.
        m = re.match(r"(\s*%\S+ = tv\.(?:add|sub|mul|div|matmul|linear|"
                     r"linear_grad|mul_grad)\S* )(%[\w.]+), (%[\w.]+)(.*)", l)
        if m and m.group(2) != m.group(3):
            emit("operands swapped", i,
                 m.group(1) + m.group(3) + ", " + m.group(2) + m.group(4))
        # A constant changed.
        for c in re.finditer(r"(scale|add_scalar|sub_scalar|div_scalar) (%[\w.]+), "
                             r"([-0-9.e+]+)", l):
            try:
                v = float(c.group(3))
            except ValueError:
                continue
            emit("constant changed", i,
                 l[:c.start(3)] + repr(v * 2 + 1) + l[c.end(3):])
            # Below the double interpreter's tolerance: only exact
            # arithmetic tells it from the original.
            emit("constant changed by 1e-12", i,
                 l[:c.start(3)] + repr(v * (1 + 1e-12)) + l[c.end(3):])
        # A collective dropped (replaced by a copy) or changed.
        m = re.match(r"(\s*%\S+ = )tv\.all_reduce (sum|avg|max) (%[\w.]+) "
                     r"\{[^}]*\} : (\S+) -> (\S+)(.*)", l)
        if m and m.group(4) == m.group(5):
            emit("all_reduce dropped", i,
                 "%stv.copy %s : %s%s" % (m.group(1), m.group(3), m.group(4),
                                          m.group(6)))
            other = "max" if m.group(2) != "max" else "sum"
            emit("all_reduce kind changed", i,
                 l.replace("all_reduce " + m.group(2), "all_reduce " + other, 1))
        # Another peer.
        m = re.search(r"peer = (\d+)", l)
        if m:
            emit("peer changed", i, l[:m.start(1)] + str(int(m.group(1)) + 1)
                 + l[m.end(1):])
        # Another slice start.
        m = re.search(r"tv\.slice \S+ start \[([0-9, ]+)\]", l)
        if m:
            starts = [int(x) for x in m.group(1).split(",")]
            for k, s in enumerate(starts):
                if s > 0:
                    ns = list(starts)
                    ns[k] = 0
                    emit("slice start changed", i, l[:m.start(1)] +
                         ", ".join(map(str, ns)) + l[m.end(1):])
        # Another input of the same type read.
        m = re.search(r'tv.input "([^"]+)" : (\S+)', l)
        if m:
            for other in sorted(inputs_by_type.get(m.group(2), ())):
                if other != m.group(1):
                    emit("input %s read as %s" % (m.group(1), other), i,
                         l.replace('"%s"' % m.group(1), '"%s"' % other, 1))
                    break
    return out


def run(cmd, timeout=120):
    try:
        r = subprocess.run(cmd, capture_output=True, timeout=timeout)
        return r.returncode, r.stderr.decode(errors="replace")
    except subprocess.TimeoutExpired:
        return None, "timeout"


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--limit", type=int, default=0,
                   help="run at most N mutants (a seeded sample; 0: all)")
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args()
    opt = os.path.join(args.build, "bin", "tv-opt")
    all_mutants = []
    for ex in EXAMPLES:
        text = open(os.path.join(ROOT, "examples", ex)).read()
        for desc, m in mutants_of(text):
            all_mutants.append((ex, desc, m))
    rng = random.Random(args.seed)
    if args.limit and len(all_mutants) > args.limit:
        all_mutants = rng.sample(all_mutants, args.limit)
    equivalent = caught = unsound = invalid = 0
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "mutant.mlir")
        for ex, desc, m in all_mutants:
            with open(path, "w") as f:
                f.write(m)
            rc, err = run([opt, path, "--tv-verify-pipeline=threads=1",
                           "-o", os.devnull])
            if rc == 0:
                held = True
                for seed in (1, 2, 3, 4, 5):
                    irc, ierr = run([opt, path,
                                     "--tv-interpret=seed=%d exact=true" % seed,
                                     "-o", os.devnull])
                    approx = APPROXIMATE.search(ierr)
                    if irc != 0:
                        held = False
                        print("UNSOUND %s (%s): proven, but the interpreter "
                              "refutes it with seed %d:\n%s" %
                              (ex, desc, seed, ierr[-1500:]))
                        break
                    if not approx or approx.group(1) != "0":
                        # The examples use no identity of exp or max: an
                        # equivalent mutant agrees exactly or by congruence.
                        held = False
                        print("UNSOUND %s (%s): proven, but with seed %d the "
                              "exact interpreter sees it agree only within "
                              "the tolerance:\n%s" %
                              (ex, desc, seed, ierr[-1500:]))
                        break
                if held:
                    equivalent += 1
                    print("proven and equivalent: %s (%s)" % (ex, desc))
                else:
                    unsound += 1
            elif rc in (1, 2):
                caught += 1
            elif rc == 3:
                invalid += 1  # ill-typed or inconsistent: refused as input
            else:
                unsound += 1
                print("CRASH %s (%s): status %s\n%s" % (ex, desc, rc, err[-1500:]))
    print("mutants: %d run, %d proven (equivalent by the interpreter), "
          "%d caught, %d refused as input, %d unsound or crashed" %
          (len(all_mutants), equivalent, caught, invalid, unsound))
    sys.exit(1 if unsound else 0)


if __name__ == "__main__":
    main()

#!/usr/bin/env bash
# Blame accuracy (issue 34): every bug class of --tv-inject-bug injected
# into a generated tiny Llama (dp2 tp2 pp2, 2 micro-batches), verified, and
# the op the counterexample blames ("first diverging op") set beside the op
# the injection edited (the op carrying `injected_bug`, by its location).
# GATHER_LOGITS= (empty) keeps the vocabulary-parallel loss instead of
# gathering the logits. Prints one row per class and a count; appends
# nothing (copy the table into bench/RESULTS.md with the date and the
# commit).
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="$root/build/bin"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$bin/tv-translate" --import-model-config "$root/examples/models/tiny-llama.json" \
  --parallel "dp=2 tp=2 pp=2 mb=2" --traced-norm ${GATHER_LOGITS---gather-logits} -o "$tmp/g.mlir"
classes=$("$bin/tv-opt" "$tmp/g.mlir" --tv-inject-bug="bug=?" -o /dev/null 2>&1 |
          sed -n 's/.*the classes are //p' | tr -d ',')
at=0; total=0
echo "| class | edited op (line) | blamed | at the edited op |"
echo "|---|---|---|---|"
for bug in $classes; do
  "$bin/tv-opt" "$tmp/g.mlir" --tv-inject-bug="bug=$bug" --mlir-print-debuginfo \
    --mlir-print-local-scope -o "$tmp/m.mlir" 2>/dev/null || continue
  line=$(grep -m1 'injected_bug' "$tmp/m.mlir")
  op=$(echo "$line" | grep -o 'tv\.[a-z_]*' | head -1)
  loc=$(echo "$line" | grep -o 'mlir":[0-9]*' | head -1 | sed 's/.*://')
  # Every edited op's line (a swap edits two).
  locs=" $(grep 'injected_bug' "$tmp/m.mlir" | grep -o 'mlir":[0-9]*' | sed 's/.*://' | tr '\n' ' ')"
  out=$("$bin/tv-opt" "$tmp/m.mlir" --tv-verify-pipeline -o /dev/null 2>&1)
  blame=$(echo "$out" | grep -m1 "first diverging op" |
          sed -n "s/.*first diverging op: \('tv\.[a-z_]*'\)[^:]* at [^:]*:\([0-9]*\).*/\1 \2/p")
  if [ -z "$blame" ] && echo "$out" | grep -q "first diverging op: that op"; then
    blame=$(echo "$out" | grep -m1 "computed by" |
            sed -n "s/.*computed by \('tv\.[a-z_]*'\).* at [^:]*:\([0-9]*\).*/\1 \2/p")
  fi
  if [ -z "$blame" ] && echo "$out" | grep -q "sent by"; then
    blame="sender: $(echo "$out" | grep -m1 "sent by" |
            sed -n "s/.*sent by \('tv\.[a-z_]*'\).* at [^:]*:\([0-9]*\).*/\1 \2/p")"
  fi
  # A structural error (a deadlock, a value from nowhere) is located by
  # the error itself.
  if [ -z "$blame" ] && ! echo "$out" | grep -q "counterexample"; then
    blame="error: $(echo "$out" | grep -m1 ": error: " |
            sed -n "s/^[^:]*:\([0-9]*\):[0-9]*: error: \([a-z ]*\).*/\2 \1/p")"
  fi
  # An edited op folded away (an exponent of one): the blame names the
  # spec op the plan lacks; it counts when that is the edited op's kind.
  lacks=$(echo "$out" | grep -m1 "first diverging op" |
          sed -n "s/.*reads the result of \('tv\.[a-z_]*'\).*the plan lacks the op.*/\1/p")
  total=$((total + 1))
  hit=no
  case "$locs" in *" ${blame##* } "*) [ -n "$blame" ] && { hit=yes; at=$((at + 1)); } ;; esac
  # A copy standing for a max all-reduce folds away: the blame names the
  # shard-local maximum that reaches no max all-reduce.
  if [ "$hit" = no ] && [ "$op" = tv.copy ] &&
     echo "$out" | grep -q "reaches no max all-reduce"; then
    hit="yes (the copy folds away: the max it follows is named)"; at=$((at + 1))
  fi
  if [ "$hit" = no ] && [ -n "$lacks" ] && [ "$lacks" = "'$op'" ]; then
    hit="yes (lacks $lacks: folded away)"; at=$((at + 1))
  fi
  echo "| $bug | '$op' ($loc) | ${blame:-none} | $hit |"
done
echo
echo "blamed at the edited op's line: $at of $total classes"

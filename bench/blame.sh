#!/usr/bin/env bash
# Blame accuracy (issue 34): every bug class of --tv-inject-bug injected
# into a generated plan it applies to (a tiny Llama dp2 tp2 pp2 with 2
# micro-batches for most; DeepSeek, ZeRO, context-parallel and distributed
# optimizer plans for the rest; LLAMA_ONLY=1 for the Llama's alone), verified, and
# the op the counterexample blames ("first diverging op") set beside the op
# the injection edited (the op carrying `injected_bug`, by its location).
# GATHER_LOGITS= (empty) keeps the vocabulary-parallel loss instead of
# gathering the logits. STRIP=1 removes the plans' intermediate lineages
# and infers them (--tv-infer-lineage=drop-intermediate) before verifying. Prints one row per class and a count; appends
# nothing (copy the table into bench/RESULTS.md with the date and the
# commit). TV_BIN= names the directory of tv-opt and tv-translate (default:
# build/bin); test/Verify/blame_every_class.test runs it so.
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="${TV_BIN:-$root/build/bin}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
models="$root/examples/models"
sed 's/"tie_word_embeddings": false/"tie_word_embeddings": true/' "$models/tiny-qwen2.json" > "$tmp/q.json"
sed 's/"vocab_size": 32/"vocab_size": 30/' "$models/tiny-llama.json" > "$tmp/v30.json"
sed 's/"hidden_size": 16/"hidden_size": 24/; s/"intermediate_size": 32/"intermediate_size": 40/; s/"vocab_size": 32/"vocab_size": 30/' "$models/tiny-llama.json" > "$tmp/odd.json"
at=0; total=0; seen=
echo "| class | plan | edited op (line) | blamed | at the edited op |"
echo "|---|---|---|---|---|"
# blame PLAN-LABEL CLASS...: each class injected into $tmp/g.mlir.
blame() {
  local label=$1; shift
  for bug in "$@"; do
    "$bin/tv-opt" "$tmp/g.mlir" --tv-inject-bug="bug=$bug" --mlir-print-debuginfo \
      --mlir-print-local-scope -o "$tmp/m.mlir" 2>/dev/null || continue
    line=$(grep -m1 'injected_bug' "$tmp/m.mlir")
    op=$(echo "$line" | grep -o 'tv\.[a-z_]*' | head -1)
    loc=$(echo "$line" | grep -o 'mlir":[0-9]*' | head -1 | sed 's/.*://')
    # Every edited op's line (a swap edits two).
    locs=" $(grep 'injected_bug' "$tmp/m.mlir" | grep -o 'mlir":[0-9]*' | sed 's/.*://' | tr '\n' ' ')"
    out=$("$bin/tv-opt" "$tmp/m.mlir" ${STRIP:+--tv-infer-lineage=drop-intermediate} --tv-verify-pipeline -o /dev/null 2>&1)
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
    total=$((total + 1))
    case " $seen " in *" $bug "*) ;; *) seen="$seen $bug" ;; esac
    hit=no
    case "$locs" in *" ${blame##* } "*) [ -n "$blame" ] && { hit=yes; at=$((at + 1)); } ;; esac
    echo "| $bug | $label | '$op' ($loc) | ${blame:-none} | $hit |"
  done
}
gen() { "$bin/tv-translate" --import-model-config "$@" -o "$tmp/g.mlir" 2>/dev/null; }
gen "$models/tiny-llama.json" --parallel "dp=2 tp=2 pp=2 mb=2" --traced-norm ${GATHER_LOGITS---gather-logits}
classes=$("$bin/tv-opt" "$tmp/g.mlir" --tv-inject-bug="bug=?" -o /dev/null 2>&1 |
          sed -n 's/.*the classes are //p' | tr -d ',')
llama="missing-allreduce dropped-allreduce allreduce-as-allgather allgather-as-allreduce
  missing-bw-reduce wrong-pp-peer rank-add-const multi-rank-add-const rank-pow-exponent
  bw-wrong-input bw-swapped-outputs rank-scale multi-rank-scale early-grad-reduce
  grad-scale-mb double-grad-average pp-recv-swapped vocab-ce-missing-allreduce"
blame "llama dp2 tp2 pp2 mb2" $llama
if [ -z "${LLAMA_ONLY-}" ]; then
  # The vocabulary-parallel loss's class, when the Llama above gathered
  # the logits.
  if [ -n "${GATHER_LOGITS---gather-logits}" ]; then
    gen "$models/tiny-llama.json" --parallel "dp=2 tp=2 pp=2 mb=2" --traced-norm
    blame "llama dp2 tp2 pp2 mb2, vocabulary-parallel loss" vocab-ce-missing-allreduce
  fi
  gen "$models/tiny-deepseek.json" --parallel "dp=4 tp=2 pp=2 mb=2 ep=2" --sp --zero 2
  blame "deepseek dp4 tp2 pp2 ep2, sp, zero2" sp-missing-norm-grad-reduce ep-double-reduce zero-wrong-shard
  gen "$tmp/q.json" --parallel "dp=2 tp=2 pp=2 mb=2" --sp --optimizer adam --distributed-optimizer --ddp-bucket-size 500
  blame "qwen2 tied, adam, distributed optimizer" tied-embedding-unsynced adam-moments-swapped
  gen "$models/tiny-llama.json" --parallel "dp=2 tp=2 pp=2 mb=2" --zero 3
  blame "llama zero3" sharded-grad-wrong-factor sharded-grad-wrong-group
  gen "$models/tiny-deepseek.json" --parallel "dp=2 tp=2 pp=2 mb=2" --sp
  blame "deepseek sp" sp-missing-weight-grad-reduce sp-moe-output-not-reduced
  gen "$models/tiny-deepseek.json" --parallel "dp=4 ep=2 mb=2" --loss-scaling per-rank
  blame "deepseek ep2, per-rank loss scaling" expert-grad-wrong-divide
  gen "$tmp/v30.json" --parallel "dp=2 tp=2 pp=2 mb=2" --make-vocab-size-divisible-by 4
  blame "llama padded vocab" padded-logits-in-loss
  gen "$models/tiny-llama.json" --parallel "dp=2 cp=2" --cp-comm a2a
  blame "llama cp2 a2a" cp-seed-unscaled ulysses-a2a-wrong-dim
  gen "$models/tiny-llama.json" --parallel "dp=2 cp=2" --cp-comm allgather
  blame "llama cp2 allgather" cp-mask-misaligned
  gen "$models/tiny-llama.json" --parallel "dp=2 cp=2" --cp-comm p2p
  blame "llama cp2 ring" ring-stale-kv ring-missing-rescale
  gen "$models/tiny-llama.json" --parallel "dp=2 cp=2" --cp-comm p2p --cp-load-balance
  blame "llama cp2 ring, load-balanced" cp-chunks-misordered
  gen "$tmp/odd.json" --layers 1 --parallel "dp=2" --distributed-optimizer
  blame "llama 1 layer, distributed optimizer" flat-param-view-offset flat-shard-misowned
  gen "$models/tiny-llama.json" --parallel "dp=2 tp=2 pp=2 mb=2" --optimizer adam --distributed-optimizer \
    --overlap-grad-reduce --overlap-param-gather --loss-scale dynamic --clip-grad 1.0
  blame "llama distributed optimizer, overlapped, dynamic loss scale, clipped" \
    loss-scale-not-undone loss-scale-unsynced clip-norm-wrong-group clip-norm-duplicates
  gen "$models/tiny-llama.json" --parallel "dp=2 tp=2 pp=2 mb=2" --zero 1 --loss-scale 1024 --clip-grad 1.0
  blame "llama zero1, loss scale 1024, clipped" loss-scale-not-undone loss-scale-unsynced
  # The races on generated overlapped plans: Megatron's buckets and
  # FSDP's prefetch (a race is located by its error).
  gen "$models/tiny-llama.json" --parallel "dp=2 tp=2 pp=2 mb=2" --distributed-optimizer \
    --overlap-grad-reduce --overlap-param-gather --ddp-bucket-size 400
  blame "llama distributed optimizer, overlapped buckets" grad-read-before-wait \
    param-used-before-gather orphaned-handle bucket-written-in-flight
  gen "$models/tiny-llama.json" --parallel "dp=2 tp=2 mb=2" --zero 3 --fsdp-prefetch
  blame "llama zero3, FSDP prefetch" param-used-before-gather
  # Overlapped communication on a hand-written plan too; a race is
  # located by its error.
  cp "$root/test/Transforms/Inputs/overlap_dp.mlir" "$tmp/g.mlir"
  blame "overlapped dp2 (test/Transforms/Inputs/overlap_dp.mlir)" grad-read-before-wait \
    param-used-before-gather orphaned-handle bucket-written-in-flight
fi
echo
echo "classes: $(echo $classes | wc -w); run: $(echo $seen | wc -w) ($total injections)"
echo
echo "blamed at the edited op's line: $at of $total injections"

// RUN: tv-opt %s --tv-inject-bug="bug=no-such-bug" --split-input-file --verify-diagnostics

// expected-error @+1 {{unknown bug class 'no-such-bug'; the classes are missing-allreduce, dropped-allreduce, allreduce-as-allgather, allgather-as-allreduce, missing-bw-reduce, wrong-pp-peer, pp-recv-swapped, rank-add-const, multi-rank-add-const, rank-pow-exponent, rank-scale, multi-rank-scale, bw-wrong-input, bw-swapped-outputs, early-grad-reduce, grad-scale-mb, double-grad-average, tied-embedding-unsynced, sp-missing-norm-grad-reduce, sp-missing-weight-grad-reduce, sp-moe-output-not-reduced, ep-double-reduce, expert-grad-wrong-divide, vocab-ce-missing-allreduce, padded-logits-in-loss, zero-wrong-shard, sharded-grad-wrong-factor, sharded-grad-wrong-group, adam-moments-swapped, flat-param-view-offset, flat-shard-misowned, cp-seed-unscaled, ulysses-a2a-wrong-dim, cp-mask-misaligned, ring-stale-kv, ring-missing-rescale, cp-chunks-misordered}}
module {
  tv.mesh @m axes ["tp"] sizes [1]
  tv.spec @s {
  }
  tv.plan @p mesh @m micro_batches 1 {
    tv.rank_program [0] {
    }
  }
}

// RUN: tv-opt %s --tv-inject-bug="bug=no-such-bug" --split-input-file --verify-diagnostics

// expected-error @+1 {{unknown bug class 'no-such-bug'; the classes are missing-allreduce, dropped-allreduce, allreduce-as-allgather, allgather-as-allreduce, missing-bw-reduce, wrong-pp-peer, rank-add-const, multi-rank-add-const, rank-pow-exponent, bw-wrong-input, bw-swapped-outputs, rank-scale, multi-rank-scale, early-grad-reduce, grad-scale-mb, sp-missing-norm-grad-reduce, ep-double-reduce, zero-wrong-shard}}
module {
  tv.mesh @m axes ["tp"] sizes [1]
  tv.spec @s {
  }
  tv.plan @p mesh @m micro_batches 1 {
    tv.rank_program [0] {
    }
  }
}

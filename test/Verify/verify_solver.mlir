// RUN: tv-opt %s --tv-stage-partition --tv-shape-reduce --tv-verify -o /dev/null 2>&1 | FileCheck %s
// RUN: tv-opt %s --tv-stage-partition --tv-shape-reduce --tv-verify="smtlib-dir=%t.smt" -o /dev/null
// RUN: FileCheck %s --check-prefix=SMT < %t.smt/stage0_out.smt2

// Vocab-parallel embedding (Megatron): each rank looks up its vocabulary
// range, out-of-range ids give 0, an all-reduce sums. The normal forms differ
// (a lookup per shard versus one lookup); written over indicators of the id's
// value (exactly one holds for an id in the vocabulary, assumption A6) they
// are equal, so no solver is needed. The query is still written for Z3,
// which proves it as well.
tv.mesh @mesh axes ["tp"] sizes [2]
tv.spec @spec {
  %ids = tv.input "ids" : tensor<4xi64>
  %table = tv.input "table" : tensor<8x4xf32>
  %out = tv.embedding %ids, %table : tensor<4xi64>, tensor<8x4xf32> -> tensor<4x4xf32>
  tv.output "out", %out : tensor<4x4xf32>
}
tv.plan @plan mesh @mesh micro_batches 1 {
  tv.rank_program [0, 1] {
    %ids = tv.input "ids" : tensor<4xi64>
    %table = tv.input "table" : tensor<4x4xf32>
    %part = tv.embedding %ids, %table {vocab_axis = "tp"} : tensor<4xi64>, tensor<4x4xf32> -> tensor<4x4xf32>
    %out = tv.all_reduce sum %part {axes = ["tp"]} : tensor<4x4xf32> -> tensor<4x4xf32>
    tv.output "out", %out : tensor<4x4xf32>
  }
}
tv.lineage #tv.lineage<"ids"[0:4] = ["ids":0] | ["ids":1]>
tv.lineage #tv.lineage<"table"[0:4, 0:4] = ["table":0]>
tv.lineage #tv.lineage<"table"[4:8, 0:4] = ["table":1]>
tv.lineage #tv.lineage<"out"[0:4, 0:4] = ["out":0] | ["out":1]>

// CHECK: tv-verify: proven (1 stages: 1 by normalization, 0 by solver;
// SMT: ; tv stage @stage0_out
// SMT: (declare-fun v0 () Int)
// SMT: (assert
// SMT: (check-sat)

// RUN: not tv-opt %s --tv-stage-partition --tv-shape-reduce --tv-verify -o /dev/null 2>&1 | FileCheck %s

// Row-parallel linear without its all-reduce: each rank keeps a partial sum.
tv.mesh @mesh axes ["tp"] sizes [2]
tv.spec @spec {
  %a = tv.input "a" : tensor<4x16xf32>
  %w2 = tv.input "w2" : tensor<8x16xf32>
  %y = tv.linear %a, %w2 : (tensor<4x16xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  tv.output "y", %y : tensor<4x8xf32>
}
tv.plan @plan mesh @mesh micro_batches 1 {
  tv.rank_program [0, 1] {
    %a = tv.input "a" : tensor<4x8xf32>
    %w2 = tv.input "w2" : tensor<8x8xf32>
    %p = tv.linear %a, %w2 {mb = 0 : i64} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    %y = tv.copy %p : tensor<4x8xf32>
    tv.output "y", %y : tensor<4x8xf32>
  }
}
tv.lineage #tv.lineage<"a"[0:4, 0:8] = ["a":0]>
tv.lineage #tv.lineage<"a"[0:4, 8:16] = ["a":1]>
tv.lineage #tv.lineage<"w2"[0:8, 0:8] = ["w2":0]>
tv.lineage #tv.lineage<"w2"[0:8, 8:16] = ["w2":1]>
tv.lineage #tv.lineage<"y"[0:4, 0:8] = ["y":0] | ["y":1]>

// The error sits at the plan op, names the stage, the violated lineage, the
// op with rank and micro-batch, and concrete values with the mismatch marked.
// CHECK: verify_counterexample.mlir:16:10: error: stage @stage0_y: counterexample: lineage 'y'[0:2, 0:2] = 'y'@0 does not hold
// CHECK: note: computed by 'tv.copy' on rank 0 at {{.*}}verify_counterexample.mlir:16
// CHECK: note:   spec 'y'[0, 0] = {{.*}}; plan 'y'@0 = {{.*}}   <-- mismatch
// CHECK: note: inputs: a[0, 0]=
// CHECK: tv-verify: counterexample in 1 stage(s)
// CHECK-NOT: proven

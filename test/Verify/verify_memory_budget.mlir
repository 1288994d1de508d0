// A stage whose symbolic terms outgrow the per-stage memory budget is
// unknown (never proven, never a crash); with the default budget the same
// plan is proven.
// RUN: not tv-opt %s --tv-stage-partition --tv-verify="stage-memory-mb=0" -o /dev/null 2>&1 | FileCheck %s
// RUN: not tv-opt %s --tv-verify-pipeline="stage-memory-mb=0" -o /dev/null 2>&1 | FileCheck %s
// RUN: tv-opt %s --tv-verify-pipeline -o /dev/null 2>&1 | FileCheck %s --check-prefix=PROVEN
// CHECK: error: stage @stage0_y: unknown: its symbolic terms exceed the stage's memory budget of 0 MB
// CHECK: tv-verify: unknown in 1 stage(s)
// PROVEN: tv-verify: proven (1 stages

tv.mesh @mesh axes ["tp"] sizes [2]
tv.spec @spec {
  %x = tv.input "x" : tensor<2x4xf32>
  %w = tv.input "w" : tensor<4x4xf32>
  %y = tv.linear %x, %w : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  tv.output "y", %y : tensor<2x4xf32>
}
tv.plan @plan mesh @mesh micro_batches 1 {
  tv.rank_program [0, 1] {
    %x = tv.input "x" : tensor<2x2xf32>
    %w = tv.input "w" : tensor<4x2xf32>
    %p = tv.linear %x, %w : (tensor<2x2xf32>, tensor<4x2xf32>) -> tensor<2x4xf32>
    %y = tv.all_reduce sum %p {axes = ["tp"]} : tensor<2x4xf32> -> tensor<2x4xf32>
    tv.output "y", %y : tensor<2x4xf32>
  }
}
tv.lineage_map "x" blocks affine_map<(d0) -> (0, d0)> shape [2, 2] = "x" on @mesh where {}
tv.lineage_map "w" blocks affine_map<(d0) -> (0, d0)> shape [4, 2] = "w" on @mesh where {}
tv.lineage #tv.lineage<"y"[0:2, 0:4] = ["y":0] | ["y":1]>

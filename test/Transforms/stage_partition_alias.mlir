// A value with two lineage-carrying names (a tag and an output) on both
// sides: the later lineage is proven from the earlier one, never a cycle.
// RUN: tv-opt %s --tv-verify-pipeline -o /dev/null 2>&1 | FileCheck %s
// RUN: tv-opt %s --tv-stage-partition | FileCheck %s --check-prefix=STAGES
// CHECK: tv-verify: proven (2 stages:
// STAGES: tv.stage @stage0_y
// STAGES: tv.stage @stage1_yt assumes [{{.*}}#tv.lineage<"y"
tv.mesh @mesh axes ["tp"] sizes [2]
tv.spec @spec {
  %x = tv.input "x" : tensor<4x8xf32>
  %w1 = tv.input "w1" : tensor<16x8xf32>
  %w2 = tv.input "w2" : tensor<8x16xf32>
  %h = tv.linear %x, %w1 : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  %a = tv.gelu %h : tensor<4x16xf32>
  %y = tv.linear %a, %w2 : (tensor<4x16xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  tv.tag "yt", %y : tensor<4x8xf32>
  tv.output "y", %y : tensor<4x8xf32>
}
tv.plan @plan mesh @mesh micro_batches 1 {
  tv.rank_program [0, 1] {
    %x = tv.input "x" : tensor<4x8xf32>
    %w1 = tv.input "w1" : tensor<8x8xf32>
    %w2 = tv.input "w2" : tensor<8x8xf32>
    %h = tv.linear %x, %w1 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    %a = tv.gelu %h : tensor<4x8xf32>
    %p = tv.linear %a, %w2 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    %y = tv.all_reduce sum %p {axes = ["tp"]} : tensor<4x8xf32> -> tensor<4x8xf32>
    tv.tag "yt", %y : tensor<4x8xf32>
    tv.output "y", %y : tensor<4x8xf32>
  }
}
tv.lineage #tv.lineage<"x"[0:4, 0:8] = ["x":0] | ["x":1]>
tv.lineage #tv.lineage<"w1"[0:8, 0:8] = ["w1":0]>
tv.lineage #tv.lineage<"w1"[8:16, 0:8] = ["w1":1]>
tv.lineage #tv.lineage<"w2"[0:8, 0:8] = ["w2":0]>
tv.lineage #tv.lineage<"w2"[0:8, 8:16] = ["w2":1]>
tv.lineage #tv.lineage<"y"[0:4, 0:8] = ["y":0] | ["y":1]>
tv.lineage #tv.lineage<"yt"[0:4, 0:8] = ["yt":0] | ["yt":1]>

// RUN: tv-opt %s --tv-stage-partition | FileCheck %s
// The output is valid input again (and partitioning twice is refused).
// RUN: tv-opt %s --tv-stage-partition | tv-opt | FileCheck %s

tv.mesh @mesh axes ["tp"] sizes [2]
tv.spec @spec {
  %x = tv.input "x" : tensor<4x8xf32>
  %w1 = tv.input "w1" : tensor<16x8xf32>
  %w2 = tv.input "w2" : tensor<8x16xf32>
  %h = tv.linear %x, %w1 : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  %a = tv.gelu %h : tensor<4x16xf32>
  tv.tag "a", %a : tensor<4x16xf32>
  %y = tv.linear %a, %w2 : (tensor<4x16xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  tv.output "y", %y : tensor<4x8xf32>
}
tv.plan @plan mesh @mesh micro_batches 1 {
  tv.rank_program [0, 1] {
    %x = tv.input "x" : tensor<4x8xf32>
    %w1 = tv.input "w1" : tensor<8x8xf32>
    %w2 = tv.input "w2" : tensor<8x8xf32>
    %h = tv.linear %x, %w1 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    %a = tv.gelu %h : tensor<4x8xf32>
    tv.tag "a", %a : tensor<4x8xf32>
    %p = tv.linear %a, %w2 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    %y = tv.all_reduce sum %p {axes = ["tp"]} : tensor<4x8xf32> -> tensor<4x8xf32>
    tv.output "y", %y : tensor<4x8xf32>
  }
}
tv.lineage #tv.lineage<"x"[0:4, 0:8] = ["x":0] | ["x":1]>
tv.lineage #tv.lineage<"w1"[0:8, 0:8] = ["w1":0]>
tv.lineage #tv.lineage<"w1"[8:16, 0:8] = ["w1":1]>
tv.lineage #tv.lineage<"w2"[0:8, 0:8] = ["w2":0]>
tv.lineage #tv.lineage<"w2"[0:8, 8:16] = ["w2":1]>
tv.lineage #tv.lineage<"a"[0:4, 0:8] = ["a":0]>
tv.lineage #tv.lineage<"a"[0:4, 8:16] = ["a":1]>
tv.lineage #tv.lineage<"y"[0:4, 0:8] = ["y":0] | ["y":1]>

// The whole-program view is replaced by two stages, in dependency order.
// CHECK-NOT: tv.lineage
// CHECK-LABEL: tv.stage @stage0_a
// CHECK-SAME: assumes [#tv.lineage<"x"[0:4, 0:8] = ["x":0] | ["x":1]>, #tv.lineage<"w1"[0:8, 0:8] = ["w1":0]>, #tv.lineage<"w1"[8:16, 0:8] = ["w1":1]>]
// CHECK-SAME: guarantees [#tv.lineage<"a"[0:4, 0:8] = ["a":0]>, #tv.lineage<"a"[0:4, 8:16] = ["a":1]>]
// CHECK: tv.spec @spec
// CHECK-DAG: %[[W1:.*]] = tv.input "w1" : tensor<16x8xf32>
// CHECK-DAG: %[[X:.*]] = tv.input "x" : tensor<4x8xf32>
// CHECK: %[[H:.*]] = tv.linear %[[X]], %[[W1]]
// CHECK: %[[A:.*]] = tv.gelu %[[H]]
// CHECK: tv.output "a", %[[A]]
// CHECK-NOT: tv.linear
// CHECK: tv.plan @plan mesh @mesh micro_batches 1
// CHECK: tv.rank_program [0, 1]
// CHECK-NOT: tv.all_reduce
// CHECK: tv.output "a"
// CHECK-LABEL: tv.stage @stage1_y
// CHECK-SAME: assumes [#tv.lineage<"w2"[0:8, 0:8] = ["w2":0]>, #tv.lineage<"w2"[0:8, 8:16] = ["w2":1]>, #tv.lineage<"a"[0:4, 0:8] = ["a":0]>, #tv.lineage<"a"[0:4, 8:16] = ["a":1]>]
// CHECK: tv.input "a" : tensor<4x16xf32>
// CHECK-NOT: tv.gelu
// CHECK: tv.rank_program [0, 1]
// CHECK: tv.input "a" : tensor<4x8xf32>
// CHECK: tv.all_reduce sum
// CHECK: tv.output "y"

// Round trip of tv.stage.
//
// Known bug: tv.spec and tv.plan carry the Symbol trait but tv.stage is not a
// SymbolTable, so every stage holding its spec and plan fails with
// "'tv.spec' op symbol's parent must have the SymbolTable trait". Remove the
// XFAIL line once a well-formed stage verifies.
//
// RUN: tv-opt %s | tv-opt | FileCheck %s

tv.mesh @m axes ["tp"] sizes [2]

// CHECK-LABEL: tv.stage @st0 assumes [#tv.lineage<"x"[0:4, 0:8] = ["x":0] | ["x":1]>] guarantees [#tv.lineage<"y"[0:4, 0:4] = ["y":0 + "y":1]>] {
// CHECK-NEXT:    tv.spec @s {
// CHECK-NEXT:      %[[X:.*]] = tv.input "x" : tensor<4x8xf32>
// CHECK-NEXT:      %[[Y:.*]] = tv.matmul %[[X]], %[[X]] {transpose_rhs} : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x4xf32>
// CHECK-NEXT:      tv.output "y", %[[Y]] : tensor<4x4xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    tv.plan @p mesh @m micro_batches 1 {
// CHECK-NEXT:      tv.rank_program [0, 1] {
// CHECK-NEXT:        %[[PX:.*]] = tv.input "x" : tensor<4x8xf32>
// CHECK-NEXT:        %[[C:.*]] = tv.chunk %[[PX]] dim 1 {axes = ["tp"]} : tensor<4x8xf32> -> tensor<4x4xf32>
// CHECK-NEXT:        %[[PY:.*]] = tv.matmul %[[C]], %[[C]] {transpose_rhs} : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
// CHECK-NEXT:        tv.output "y", %[[PY]] : tensor<4x4xf32>
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-NEXT:  }
tv.stage @st0 assumes [#tv.lineage<"x"[0:4, 0:8] = ["x":0] | ["x":1]>]
              guarantees [#tv.lineage<"y"[0:4, 0:4] = ["y":0 + "y":1]>] {
  tv.spec @s {
    %x = tv.input "x" : tensor<4x8xf32>
    %y = tv.matmul %x, %x {transpose_rhs} : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x4xf32>
    tv.output "y", %y : tensor<4x4xf32>
  }
  tv.plan @p mesh @m micro_batches 1 {
    tv.rank_program [0, 1] {
      %x = tv.input "x" : tensor<4x8xf32>
      %c = tv.chunk %x dim 1 {axes = ["tp"]} : tensor<4x8xf32> -> tensor<4x4xf32>
      %y = tv.matmul %c, %c {transpose_rhs} : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
      tv.output "y", %y : tensor<4x4xf32>
    }
  }
}

// A stage that assumes nothing, with discardable attributes; the plan comes
// first.
// CHECK-LABEL: tv.stage @st1 assumes [] guarantees [#tv.lineage<"loss"[] = ["loss":0] | ["loss":1]>] attributes {index = 1 : i64} {
// CHECK-NEXT:    tv.plan @p mesh @m micro_batches 2 {
// CHECK:         tv.spec @s {
tv.stage @st1 assumes [] guarantees [#tv.lineage<"loss"[] = ["loss":0] | ["loss":1]>] attributes {index = 1} {
  tv.plan @p mesh @m micro_batches 2 {
    tv.rank_program [0, 1] {
      %l = tv.input "logits_sum" : tensor<f32>
      tv.output "loss", %l : tensor<f32>
    }
  }
  tv.spec @s {
    %l = tv.input "logits_sum" : tensor<f32>
    tv.output "loss", %l : tensor<f32>
  }
}

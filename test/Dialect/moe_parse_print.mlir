// RUN: tv-opt %s | tv-opt | FileCheck %s
// RUN: tv-opt %s --mlir-print-op-generic | tv-opt | FileCheck %s

// Round trip of the mixture-of-experts ops: topk_gate, dispatch, combine.

// CHECK-LABEL: tv.spec @moe {
// CHECK:         %[[X:.*]] = tv.input "x" : tensor<4x8xf32>
// CHECK:         %[[L:.*]] = tv.input "logits" : tensor<4x3xf32>
// CHECK:         %[[G1:.*]] = tv.topk_gate %[[L]] k 1 : tensor<4x3xf32>
// CHECK:         %[[G2:.*]] = tv.topk_gate %[[L]] k 2 : tensor<4x3xf32>
// CHECK:         %[[G3:.*]] = tv.topk_gate %[[L]] k 3 {mb = 0 : i64} : tensor<4x3xf32>
// CHECK:         %[[D:.*]] = tv.dispatch %[[X]], %[[G2]] : tensor<4x8xf32>, tensor<4x3xf32> -> tensor<3x4x8xf32>
// CHECK:         %[[E:.*]] = tv.silu %[[D]] : tensor<3x4x8xf32>
// CHECK:         tv.combine %[[E]], %[[G2]] : tensor<3x4x8xf32>, tensor<4x3xf32> -> tensor<4x8xf32>
// CHECK:         tv.dispatch %[[X]], %[[G1]] {mb = 0 : i64} : tensor<4x8xf32>, tensor<4x3xf32> -> tensor<3x4x8xf32>
// CHECK:         tv.combine %[[D]], %[[G3]] {mb = 0 : i64} : tensor<3x4x8xf32>, tensor<4x3xf32> -> tensor<4x8xf32>
tv.spec @moe {
  %x = tv.input "x" : tensor<4x8xf32>
  %l = tv.input "logits" : tensor<4x3xf32>
  %g1 = tv.topk_gate %l k 1 : tensor<4x3xf32>
  %g2 = tv.topk_gate %l k 2 : tensor<4x3xf32>
  %g3 = tv.topk_gate %l k 3 {mb = 0} : tensor<4x3xf32>
  %d = tv.dispatch %x, %g2 : tensor<4x8xf32>, tensor<4x3xf32> -> tensor<3x4x8xf32>
  %e = tv.silu %d : tensor<3x4x8xf32>
  %y = tv.combine %e, %g2 : tensor<3x4x8xf32>, tensor<4x3xf32> -> tensor<4x8xf32>
  %d1 = tv.dispatch %x, %g1 {mb = 0} : tensor<4x8xf32>, tensor<4x3xf32> -> tensor<3x4x8xf32>
  %y3 = tv.combine %d, %g3 {mb = 0} : tensor<3x4x8xf32>, tensor<4x3xf32> -> tensor<4x8xf32>
}

// Expert parallelism: dispatch, all_to_all to the expert owners and back,
// combine.
tv.mesh @m axes ["ep"] sizes [2]
// CHECK-LABEL: tv.plan @expert_parallel mesh @m micro_batches 1 {
// CHECK:         tv.rank_program [0, 1] {
// CHECK:           %[[X:.*]] = tv.input "x" : tensor<2x8xf32>
// CHECK:           %[[L:.*]] = tv.input "logits" : tensor<2x4xf32>
// CHECK:           %[[G:.*]] = tv.topk_gate %[[L]] k 2 : tensor<2x4xf32>
// CHECK:           %[[D:.*]] = tv.dispatch %[[X]], %[[G]] : tensor<2x8xf32>, tensor<2x4xf32> -> tensor<4x2x8xf32>
// CHECK:           %[[A:.*]] = tv.all_to_all %[[D]] split 0 concat 1 {axes = ["ep"]} : tensor<4x2x8xf32> -> tensor<2x4x8xf32>
// CHECK:           %[[B:.*]] = tv.all_to_all %[[A]] split 1 concat 0 {axes = ["ep"]} : tensor<2x4x8xf32> -> tensor<4x2x8xf32>
// CHECK:           tv.combine %[[B]], %[[G]] : tensor<4x2x8xf32>, tensor<2x4xf32> -> tensor<2x8xf32>
tv.plan @expert_parallel mesh @m micro_batches 1 {
  tv.rank_program [0, 1] {
    %x = tv.input "x" : tensor<2x8xf32>
    %l = tv.input "logits" : tensor<2x4xf32>
    %g = tv.topk_gate %l k 2 : tensor<2x4xf32>
    %d = tv.dispatch %x, %g : tensor<2x8xf32>, tensor<2x4xf32> -> tensor<4x2x8xf32>
    %a = tv.all_to_all %d split 0 concat 1 {axes = ["ep"]} : tensor<4x2x8xf32> -> tensor<2x4x8xf32>
    %b = tv.all_to_all %a split 1 concat 0 {axes = ["ep"]} : tensor<2x4x8xf32> -> tensor<4x2x8xf32>
    %y = tv.combine %b, %g : tensor<4x2x8xf32>, tensor<2x4xf32> -> tensor<2x8xf32>
  }
}

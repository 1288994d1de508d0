// RUN: tv-opt %s | tv-opt | FileCheck %s
// RUN: tv-opt %s --mlir-print-op-generic | tv-opt | FileCheck %s

// Round trip of the backward (VJP) ops.

// CHECK-LABEL: tv.spec @unary_grads {
// CHECK:         %[[X:.*]] = tv.input "x" : tensor<2x4xf32>
// CHECK:         %[[DY:.*]] = tv.input "dy" : tensor<2x4xf32>
// CHECK:         tv.exp_grad %[[X]], %[[DY]] : tensor<2x4xf32>
// CHECK:         tv.log_grad %[[X]], %[[DY]] : tensor<2x4xf32>
// CHECK:         tv.sqrt_grad %[[X]], %[[DY]] : tensor<2x4xf32>
// CHECK:         tv.rsqrt_grad %[[X]], %[[DY]] : tensor<2x4xf32>
// CHECK:         tv.sigmoid_grad %[[X]], %[[DY]] : tensor<2x4xf32>
// CHECK:         tv.silu_grad %[[X]], %[[DY]] : tensor<2x4xf32>
// CHECK:         tv.gelu_grad %[[X]], %[[DY]] : tensor<2x4xf32>
// CHECK:         tv.relu_grad %[[X]], %[[DY]] : tensor<2x4xf32>
// CHECK:         tv.tanh_grad %[[X]], %[[DY]] {mb = 0 : i64} : tensor<2x4xf32>
// CHECK:         tv.pow_grad %[[X]], %[[DY]] exponent 2.000000e+00 : tensor<2x4xf32>
// CHECK:         tv.pow_grad %[[X]], %[[DY]] exponent -5.000000e-01 {mb = 0 : i64} : tensor<2x4xf32>
// CHECK:         %{{.*}}, %{{.*}} = tv.mul_grad %[[X]], %[[X]], %[[DY]] : tensor<2x4xf32>
tv.spec @unary_grads {
  %x = tv.input "x" : tensor<2x4xf32>
  %dy = tv.input "dy" : tensor<2x4xf32>
  %0 = tv.exp_grad %x, %dy : tensor<2x4xf32>
  %1 = tv.log_grad %x, %dy : tensor<2x4xf32>
  %2 = tv.sqrt_grad %x, %dy : tensor<2x4xf32>
  %3 = tv.rsqrt_grad %x, %dy : tensor<2x4xf32>
  %4 = tv.sigmoid_grad %x, %dy : tensor<2x4xf32>
  %5 = tv.silu_grad %x, %dy : tensor<2x4xf32>
  %6 = tv.gelu_grad %x, %dy : tensor<2x4xf32>
  %7 = tv.relu_grad %x, %dy : tensor<2x4xf32>
  %8 = tv.tanh_grad %x, %dy {mb = 0} : tensor<2x4xf32>
  %9 = tv.pow_grad %x, %dy exponent 2.0 : tensor<2x4xf32>
  %10 = tv.pow_grad %x, %dy exponent -0.5 {mb = 0} : tensor<2x4xf32>
  %11:2 = tv.mul_grad %x, %x, %dy : tensor<2x4xf32>
}

// CHECK-LABEL: tv.spec @softmax_grad {
// CHECK:         %[[Y:.*]] = tv.input "y" : tensor<2x4xf32>
// CHECK:         %[[DY:.*]] = tv.input "dy" : tensor<2x4xf32>
// CHECK:         tv.softmax_grad %[[Y]], %[[DY]] dim 1 : tensor<2x4xf32>
// CHECK:         tv.softmax_grad %[[Y]], %[[DY]] dim 0 {mb = 0 : i64} : tensor<2x4xf32>
tv.spec @softmax_grad {
  %y = tv.input "y" : tensor<2x4xf32>
  %dy = tv.input "dy" : tensor<2x4xf32>
  %0 = tv.softmax_grad %y, %dy dim 1 : tensor<2x4xf32>
  %1 = tv.softmax_grad %y, %dy dim 0 {mb = 0} : tensor<2x4xf32>
}

// CHECK-LABEL: tv.spec @norm_grads {
// CHECK:         %[[X:.*]] = tv.input "x" : tensor<2x4x8xf32>
// CHECK:         %[[G:.*]] = tv.input "gamma" : tensor<8xf32>
// CHECK:         %[[DY:.*]] = tv.input "dy" : tensor<2x4x8xf32>
// CHECK:         %[[DX:[^,]+]], %[[DG:[^,]+]], %[[DB:[^ ]+]] = tv.layernorm_grad %[[X]], %[[G]], %[[DY]] eps 1.000000e-05 : tensor<2x4x8xf32>, tensor<8xf32>
// CHECK:         %[[DX2:[^,]+]], %[[DW:[^ ]+]] = tv.rmsnorm_grad %[[X]], %[[G]], %[[DY]] eps 1.000000e-05 {mb = 0 : i64} : tensor<2x4x8xf32>, tensor<8xf32>
// CHECK:         tv.output "dx", %[[DX]] : tensor<2x4x8xf32>
// CHECK:         tv.output "dgamma", %[[DG]] : tensor<8xf32>
// CHECK:         tv.output "dbeta", %[[DB]] : tensor<8xf32>
// CHECK:         tv.output "dx2", %[[DX2]] : tensor<2x4x8xf32>
// CHECK:         tv.output "dw", %[[DW]] : tensor<8xf32>
tv.spec @norm_grads {
  %x = tv.input "x" : tensor<2x4x8xf32>
  %g = tv.input "gamma" : tensor<8xf32>
  %dy = tv.input "dy" : tensor<2x4x8xf32>
  %0:3 = tv.layernorm_grad %x, %g, %dy eps 1.0e-5 : tensor<2x4x8xf32>, tensor<8xf32>
  %1:2 = tv.rmsnorm_grad %x, %g, %dy eps 1.0e-5 {mb = 0} : tensor<2x4x8xf32>, tensor<8xf32>
  tv.output "dx", %0#0 : tensor<2x4x8xf32>
  tv.output "dgamma", %0#1 : tensor<8xf32>
  tv.output "dbeta", %0#2 : tensor<8xf32>
  tv.output "dx2", %1#0 : tensor<2x4x8xf32>
  tv.output "dw", %1#1 : tensor<8xf32>
}

// CHECK-LABEL: tv.spec @rotary_grad {
// CHECK:         %[[DY:.*]] = tv.input "dy" : tensor<2x4x8xf32>
// CHECK:         %[[C:.*]] = tv.input "cos" : tensor<4x4xf32>
// CHECK:         %[[S:.*]] = tv.input "sin" : tensor<4x4xf32>
// CHECK:         tv.rotary_grad %[[DY]], %[[C]], %[[S]] : tensor<2x4x8xf32>, tensor<4x4xf32>, tensor<4x4xf32> -> tensor<2x4x8xf32>
tv.spec @rotary_grad {
  %dy = tv.input "dy" : tensor<2x4x8xf32>
  %c = tv.input "cos" : tensor<4x4xf32>
  %s = tv.input "sin" : tensor<4x4xf32>
  %0 = tv.rotary_grad %dy, %c, %s : tensor<2x4x8xf32>, tensor<4x4xf32>, tensor<4x4xf32> -> tensor<2x4x8xf32>
}

// CHECK-LABEL: tv.spec @embedding_grad {
// CHECK:         %[[IDS:.*]] = tv.input "ids" : tensor<2x4xi64>
// CHECK:         %[[DY:.*]] = tv.input "dy" : tensor<2x4x8xf32>
// CHECK:         tv.embedding_grad %[[IDS]], %[[DY]] : tensor<2x4xi64>, tensor<2x4x8xf32> -> tensor<16x8xf32>
tv.spec @embedding_grad {
  %ids = tv.input "ids" : tensor<2x4xi64>
  %dy = tv.input "dy" : tensor<2x4x8xf32>
  %0 = tv.embedding_grad %ids, %dy : tensor<2x4xi64>, tensor<2x4x8xf32> -> tensor<16x8xf32>
}

tv.mesh @m axes ["tp"] sizes [2]
// CHECK-LABEL: tv.plan @vocab_parallel_grad mesh @m micro_batches 1 {
// CHECK:         %[[IDS:.*]] = tv.input "ids" : tensor<4xi32>
// CHECK:         %[[DY:.*]] = tv.input "dy" : tensor<4x8xf32>
// CHECK:         tv.embedding_grad %[[IDS]], %[[DY]] {vocab_axis = "tp"} : tensor<4xi32>, tensor<4x8xf32> -> tensor<8x8xf32>
tv.plan @vocab_parallel_grad mesh @m micro_batches 1 {
  tv.rank_program [0, 1] {
    %ids = tv.input "ids" : tensor<4xi32>
    %dy = tv.input "dy" : tensor<4x8xf32>
    %0 = tv.embedding_grad %ids, %dy {vocab_axis = "tp"} : tensor<4xi32>, tensor<4x8xf32> -> tensor<8x8xf32>
  }
}

// CHECK-LABEL: tv.spec @mask_and_loss_grads {
// CHECK:         %[[M:.*]] = tv.causal_mask : tensor<4x4xi1>
// CHECK:         %[[DS:.*]] = tv.input "dscores" : tensor<2x4x4xf32>
// CHECK:         %[[L:.*]] = tv.input "logits" : tensor<4x16xf32>
// CHECK:         %[[Y:.*]] = tv.input "labels" : tensor<4xi64>
// CHECK:         %[[DL:.*]] = tv.input "dloss" : tensor<f32>
// CHECK:         tv.apply_mask_grad %[[DS]], %[[M]] : tensor<2x4x4xf32>, tensor<4x4xi1> -> tensor<2x4x4xf32>
// CHECK:         tv.cross_entropy_grad %[[L]], %[[Y]], %[[DL]] : tensor<4x16xf32>, tensor<4xi64>, tensor<f32> -> tensor<4x16xf32>
tv.spec @mask_and_loss_grads {
  %m = tv.causal_mask : tensor<4x4xi1>
  %ds = tv.input "dscores" : tensor<2x4x4xf32>
  %l = tv.input "logits" : tensor<4x16xf32>
  %y = tv.input "labels" : tensor<4xi64>
  %dl = tv.input "dloss" : tensor<f32>
  %0 = tv.apply_mask_grad %ds, %m : tensor<2x4x4xf32>, tensor<4x4xi1> -> tensor<2x4x4xf32>
  %1 = tv.cross_entropy_grad %l, %y, %dl : tensor<4x16xf32>, tensor<4xi64>, tensor<f32> -> tensor<4x16xf32>
}

// CHECK-LABEL: tv.spec @max_and_slice_grads {
// CHECK:         %[[X:.*]] = tv.input "x" : tensor<2x4x8xf32>
// CHECK:         %[[D1:.*]] = tv.input "d1" : tensor<2x8xf32>
// CHECK:         %[[D2:.*]] = tv.input "d2" : tensor<2x1x1xf32>
// CHECK:         %[[D3:.*]] = tv.input "d3" : tensor<2x4xf32>
// CHECK:         tv.max_grad %[[X]], %[[D1]] dims [1] : tensor<2x4x8xf32>, tensor<2x8xf32> -> tensor<2x4x8xf32>
// CHECK:         tv.max_grad %[[X]], %[[D2]] dims [2, 1] {keepdim} : tensor<2x4x8xf32>, tensor<2x1x1xf32> -> tensor<2x4x8xf32>
// CHECK:         tv.slice_grad %[[D3]] start [0, 4] : tensor<2x4xf32> -> tensor<2x8xf32>
// CHECK:         tv.slice_grad %[[D1]] start [1, 0] {mb = 0 : i64} : tensor<2x8xf32> -> tensor<3x8xf32>
tv.spec @max_and_slice_grads {
  %x = tv.input "x" : tensor<2x4x8xf32>
  %d1 = tv.input "d1" : tensor<2x8xf32>
  %d2 = tv.input "d2" : tensor<2x1x1xf32>
  %d3 = tv.input "d3" : tensor<2x4xf32>
  %0 = tv.max_grad %x, %d1 dims [1] : tensor<2x4x8xf32>, tensor<2x8xf32> -> tensor<2x4x8xf32>
  %1 = tv.max_grad %x, %d2 dims [2, 1] {keepdim} : tensor<2x4x8xf32>, tensor<2x1x1xf32> -> tensor<2x4x8xf32>
  %2 = tv.slice_grad %d3 start [0, 4] : tensor<2x4xf32> -> tensor<2x8xf32>
  %3 = tv.slice_grad %d1 start [1, 0] {mb = 0} : tensor<2x8xf32> -> tensor<3x8xf32>
}

// CHECK-LABEL: tv.spec @linear_grad {
// CHECK:         %[[X:.*]] = tv.input "x" : tensor<2x4x8xf32>
// CHECK:         %[[W:.*]] = tv.input "w" : tensor<16x8xf32>
// CHECK:         %[[DY:.*]] = tv.input "dy" : tensor<2x4x16xf32>
// CHECK:         %[[V:.*]] = tv.input "v" : tensor<8xf32>
// CHECK:         %[[DV:.*]] = tv.input "dv" : tensor<16xf32>
// CHECK:         %[[DX:[^,]+]], %[[DW:[^ ]+]] = tv.linear_grad %[[X]], %[[W]], %[[DY]] : tensor<2x4x8xf32>, tensor<16x8xf32>, tensor<2x4x16xf32>
// CHECK:         tv.linear_grad %[[V]], %[[W]], %[[DV]] {mb = 0 : i64} : tensor<8xf32>, tensor<16x8xf32>, tensor<16xf32>
// CHECK:         tv.output "dx", %[[DX]] : tensor<2x4x8xf32>
// CHECK:         tv.output "dw", %[[DW]] : tensor<16x8xf32>
tv.spec @linear_grad {
  %x = tv.input "x" : tensor<2x4x8xf32>
  %w = tv.input "w" : tensor<16x8xf32>
  %dy = tv.input "dy" : tensor<2x4x16xf32>
  %v = tv.input "v" : tensor<8xf32>
  %dv = tv.input "dv" : tensor<16xf32>
  %0:2 = tv.linear_grad %x, %w, %dy : tensor<2x4x8xf32>, tensor<16x8xf32>, tensor<2x4x16xf32>
  %1:2 = tv.linear_grad %v, %w, %dv {mb = 0} : tensor<8xf32>, tensor<16x8xf32>, tensor<16xf32>
  tv.output "dx", %0#0 : tensor<2x4x8xf32>
  tv.output "dw", %0#1 : tensor<16x8xf32>
}

// CHECK-LABEL: tv.spec @moe_grads {
// CHECK:         %[[L:.*]] = tv.input "logits" : tensor<4x3xf32>
// CHECK:         %[[DG:.*]] = tv.input "dgates" : tensor<4x3xf32>
// CHECK:         %[[E:.*]] = tv.input "experts" : tensor<3x4x8xf32>
// CHECK:         %[[DY:.*]] = tv.input "dy" : tensor<4x8xf32>
// CHECK:         tv.topk_gate_grad %[[L]], %[[DG]] k 2 : tensor<4x3xf32>
// CHECK:         tv.dispatch_grad %[[E]], %[[L]] : tensor<3x4x8xf32>, tensor<4x3xf32> -> tensor<4x8xf32>
// CHECK:         %[[DE:[^,]+]], %[[DGATES:[^ ]+]] = tv.combine_grad %[[E]], %[[L]], %[[DY]] : tensor<3x4x8xf32>, tensor<4x3xf32>, tensor<4x8xf32>
// CHECK:         tv.output "de", %[[DE]] : tensor<3x4x8xf32>
// CHECK:         tv.output "dg", %[[DGATES]] : tensor<4x3xf32>
tv.spec @moe_grads {
  %l = tv.input "logits" : tensor<4x3xf32>
  %dg = tv.input "dgates" : tensor<4x3xf32>
  %e = tv.input "experts" : tensor<3x4x8xf32>
  %dy = tv.input "dy" : tensor<4x8xf32>
  %0 = tv.topk_gate_grad %l, %dg k 2 : tensor<4x3xf32>
  %1 = tv.dispatch_grad %e, %l : tensor<3x4x8xf32>, tensor<4x3xf32> -> tensor<4x8xf32>
  %2:2 = tv.combine_grad %e, %l, %dy : tensor<3x4x8xf32>, tensor<4x3xf32>, tensor<4x8xf32>
  tv.output "de", %2#0 : tensor<3x4x8xf32>
  tv.output "dg", %2#1 : tensor<4x3xf32>
}

// CHECK-LABEL: tv.spec @logsumexp {
// CHECK:         %[[X:.*]] = tv.input "x" : tensor<2x4x8xf32>
// CHECK:         %[[DY:.*]] = tv.input "dy" : tensor<2x8xf32>
// CHECK:         tv.logsumexp %[[X]] dims [1] : tensor<2x4x8xf32> -> tensor<2x8xf32>
// CHECK:         tv.logsumexp %[[X]] dims [2] {keepdim} : tensor<2x4x8xf32> -> tensor<2x4x1xf32>
// CHECK:         tv.logsumexp_grad %[[X]], %[[DY]] dims [1] : tensor<2x4x8xf32>, tensor<2x8xf32> -> tensor<2x4x8xf32>
tv.spec @logsumexp {
  %x = tv.input "x" : tensor<2x4x8xf32>
  %dy = tv.input "dy" : tensor<2x8xf32>
  %0 = tv.logsumexp %x dims [1] : tensor<2x4x8xf32> -> tensor<2x8xf32>
  %1 = tv.logsumexp %x dims [2] {keepdim} : tensor<2x4x8xf32> -> tensor<2x4x1xf32>
  %2 = tv.logsumexp_grad %x, %dy dims [1] : tensor<2x4x8xf32>, tensor<2x8xf32> -> tensor<2x4x8xf32>
}

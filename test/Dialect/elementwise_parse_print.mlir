// RUN: tv-opt %s | tv-opt | FileCheck %s
// RUN: tv-opt %s --mlir-print-op-generic | tv-opt | FileCheck %s

// Round trip of the elementwise ops: add, sub, mul, div (with numpy
// broadcasting), the *_scalar ops, scale, pow, the unary ops and copy.

// CHECK-LABEL: tv.spec @binary_same_shape {
// CHECK:         %[[A:.*]] = tv.input "a" : tensor<4x8xf32>
// CHECK:         %[[B:.*]] = tv.input "b" : tensor<4x8xf32>
// CHECK:         tv.add %[[A]], %[[B]] : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
// CHECK:         tv.sub %[[A]], %[[B]] : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
// CHECK:         tv.mul %[[A]], %[[B]] : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
// CHECK:         tv.div %[[A]], %[[B]] {mb = 0 : i64} : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
tv.spec @binary_same_shape {
  %a = tv.input "a" : tensor<4x8xf32>
  %b = tv.input "b" : tensor<4x8xf32>
  %0 = tv.add %a, %b : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %1 = tv.sub %a, %b : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %2 = tv.mul %a, %b : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %3 = tv.div %a, %b {mb = 0} : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
}

// Broadcasting: missing leading dimensions, size-1 dimensions on either side,
// rank-0 operands.
// CHECK-LABEL: tv.spec @binary_broadcast {
// CHECK:         %[[X:.*]] = tv.input "x" : tensor<2x4x8xf32>
// CHECK:         %[[ROW:.*]] = tv.input "row" : tensor<8xf32>
// CHECK:         %[[COL:.*]] = tv.input "col" : tensor<4x1xf32>
// CHECK:         %[[ONE:.*]] = tv.input "one" : tensor<1x1x8xf32>
// CHECK:         %[[S:.*]] = tv.input "s" : tensor<f32>
// CHECK:         tv.add %[[X]], %[[ROW]] : tensor<2x4x8xf32>, tensor<8xf32> -> tensor<2x4x8xf32>
// CHECK:         tv.sub %[[ROW]], %[[X]] : tensor<8xf32>, tensor<2x4x8xf32> -> tensor<2x4x8xf32>
// CHECK:         tv.mul %[[COL]], %[[ROW]] : tensor<4x1xf32>, tensor<8xf32> -> tensor<4x8xf32>
// CHECK:         tv.div %[[X]], %[[COL]] : tensor<2x4x8xf32>, tensor<4x1xf32> -> tensor<2x4x8xf32>
// CHECK:         tv.mul %[[S]], %[[X]] : tensor<f32>, tensor<2x4x8xf32> -> tensor<2x4x8xf32>
// CHECK:         tv.div %[[S]], %[[S]] : tensor<f32>, tensor<f32> -> tensor<f32>
// CHECK:         tv.add %[[ONE]], %[[COL]] : tensor<1x1x8xf32>, tensor<4x1xf32> -> tensor<1x4x8xf32>
tv.spec @binary_broadcast {
  %x = tv.input "x" : tensor<2x4x8xf32>
  %row = tv.input "row" : tensor<8xf32>
  %col = tv.input "col" : tensor<4x1xf32>
  %one = tv.input "one" : tensor<1x1x8xf32>
  %s = tv.input "s" : tensor<f32>
  %0 = tv.add %x, %row : tensor<2x4x8xf32>, tensor<8xf32> -> tensor<2x4x8xf32>
  %1 = tv.sub %row, %x : tensor<8xf32>, tensor<2x4x8xf32> -> tensor<2x4x8xf32>
  %2 = tv.mul %col, %row : tensor<4x1xf32>, tensor<8xf32> -> tensor<4x8xf32>
  %3 = tv.div %x, %col : tensor<2x4x8xf32>, tensor<4x1xf32> -> tensor<2x4x8xf32>
  %4 = tv.mul %s, %x : tensor<f32>, tensor<2x4x8xf32> -> tensor<2x4x8xf32>
  %5 = tv.div %s, %s : tensor<f32>, tensor<f32> -> tensor<f32>
  %6 = tv.add %one, %col : tensor<1x1x8xf32>, tensor<4x1xf32> -> tensor<1x4x8xf32>
}

// CHECK-LABEL: tv.spec @scalar_ops {
// CHECK:         %[[X:.*]] = tv.input "x" : tensor<4x8xf32>
// CHECK:         tv.add_scalar %[[X]], 1.000000e+00 : tensor<4x8xf32>
// CHECK:         tv.sub_scalar %[[X]], 2.500000e-01 : tensor<4x8xf32>
// CHECK:         tv.rsub_scalar %[[X]], 1.000000e+00 : tensor<4x8xf32>
// CHECK:         tv.div_scalar %[[X]], 8.000000e+00 : tensor<4x8xf32>
// CHECK:         tv.div_scalar %[[X]], -5.000000e-01 {mb = 1 : i64} : tensor<4x8xf32>
// CHECK:         tv.scale %[[X]], -3.000000e+00 : tensor<4x8xf32>
// CHECK:         tv.scale %[[X]], 0.000000e+00 : tensor<4x8xf32>
// CHECK:         tv.pow %[[X]], 2.000000e+00 : tensor<4x8xf32>
// CHECK:         tv.pow %[[X]], -5.000000e-01 : tensor<4x8xf32>
tv.spec @scalar_ops {
  %x = tv.input "x" : tensor<4x8xf32>
  %0 = tv.add_scalar %x, 1.0 : tensor<4x8xf32>
  %1 = tv.sub_scalar %x, 0.25 : tensor<4x8xf32>
  %2 = tv.rsub_scalar %x, 1.0 : tensor<4x8xf32>
  %3 = tv.div_scalar %x, 8.0 : tensor<4x8xf32>
  %4 = tv.div_scalar %x, -0.5 {mb = 1} : tensor<4x8xf32>
  %5 = tv.scale %x, -3.0 : tensor<4x8xf32>
  %6 = tv.scale %x, 0.0 : tensor<4x8xf32>
  %7 = tv.pow %x, 2.0 : tensor<4x8xf32>
  %8 = tv.pow %x, -0.5 : tensor<4x8xf32>
}

// Scalars on other float types and on rank-0 tensors.
// CHECK-LABEL: tv.spec @scalar_types {
// CHECK:         %[[H:.*]] = tv.input "h" : tensor<4xf16>
// CHECK:         %[[B:.*]] = tv.input "b" : tensor<bf16>
// CHECK:         tv.scale %[[H]], 5.000000e-01 : tensor<4xf16>
// CHECK:         tv.add_scalar %[[B]], 1.000000e-05 : tensor<bf16>
tv.spec @scalar_types {
  %h = tv.input "h" : tensor<4xf16>
  %b = tv.input "b" : tensor<bf16>
  %0 = tv.scale %h, 0.5 : tensor<4xf16>
  %1 = tv.add_scalar %b, 1.0e-5 : tensor<bf16>
}

// CHECK-LABEL: tv.spec @unary_ops {
// CHECK:         %[[X:.*]] = tv.input "x" : tensor<2x3xf32>
// CHECK:         tv.neg %[[X]] : tensor<2x3xf32>
// CHECK:         tv.exp %[[X]] : tensor<2x3xf32>
// CHECK:         tv.log %[[X]] : tensor<2x3xf32>
// CHECK:         tv.sqrt %[[X]] : tensor<2x3xf32>
// CHECK:         tv.rsqrt %[[X]] : tensor<2x3xf32>
// CHECK:         tv.sigmoid %[[X]] : tensor<2x3xf32>
// CHECK:         tv.silu %[[X]] : tensor<2x3xf32>
// CHECK:         tv.gelu %[[X]] : tensor<2x3xf32>
// CHECK:         tv.relu %[[X]] : tensor<2x3xf32>
// CHECK:         tv.tanh %[[X]] {mb = 0 : i64} : tensor<2x3xf32>
// CHECK:         tv.abs %[[X]] : tensor<2x3xf32>
// CHECK:         tv.iota dim 1 offset 4 : tensor<2x3xf32>
// CHECK:         tv.zeros : tensor<2x3xf32>
tv.spec @unary_ops {
  %x = tv.input "x" : tensor<2x3xf32>
  %0 = tv.neg %x : tensor<2x3xf32>
  %1 = tv.exp %x : tensor<2x3xf32>
  %2 = tv.log %x : tensor<2x3xf32>
  %3 = tv.sqrt %x : tensor<2x3xf32>
  %4 = tv.rsqrt %x : tensor<2x3xf32>
  %5 = tv.sigmoid %x : tensor<2x3xf32>
  %6 = tv.silu %x : tensor<2x3xf32>
  %7 = tv.gelu %x : tensor<2x3xf32>
  %8 = tv.relu %x : tensor<2x3xf32>
  %9 = tv.tanh %x {mb = 0} : tensor<2x3xf32>
  %10 = tv.abs %x : tensor<2x3xf32>
  %11 = tv.iota dim 1 offset 4 : tensor<2x3xf32>
  %12 = tv.zeros : tensor<2x3xf32>
}

// Unary ops on rank-0 and half-precision tensors.
// CHECK-LABEL: tv.spec @unary_types {
// CHECK:         %[[S:.*]] = tv.input "s" : tensor<f32>
// CHECK:         %[[H:.*]] = tv.input "h" : tensor<8xf16>
// CHECK:         tv.exp %[[S]] : tensor<f32>
// CHECK:         tv.gelu %[[H]] : tensor<8xf16>
tv.spec @unary_types {
  %s = tv.input "s" : tensor<f32>
  %h = tv.input "h" : tensor<8xf16>
  %0 = tv.exp %s : tensor<f32>
  %1 = tv.gelu %h : tensor<8xf16>
}

// copy accepts float, integer and i1 tensors.
// CHECK-LABEL: tv.spec @copy {
// CHECK:         %[[X:.*]] = tv.input "x" : tensor<4x8xf32>
// CHECK:         %[[IDS:.*]] = tv.input "ids" : tensor<4xi64>
// CHECK:         %[[M:.*]] = tv.input "m" : tensor<4x4xi1>
// CHECK:         tv.copy %[[X]] : tensor<4x8xf32>
// CHECK:         tv.copy %[[IDS]] : tensor<4xi64>
// CHECK:         tv.copy %[[M]] {mb = 0 : i64} : tensor<4x4xi1>
tv.spec @copy {
  %x = tv.input "x" : tensor<4x8xf32>
  %ids = tv.input "ids" : tensor<4xi64>
  %m = tv.input "m" : tensor<4x4xi1>
  %0 = tv.copy %x : tensor<4x8xf32>
  %1 = tv.copy %ids : tensor<4xi64>
  %2 = tv.copy %m {mb = 0} : tensor<4x4xi1>
}

// Elementwise ops also run inside rank programs.
tv.mesh @m axes ["tp"] sizes [2]
// CHECK-LABEL: tv.plan @p mesh @m micro_batches 1 {
// CHECK:         tv.rank_program [0, 1] {
// CHECK:           %[[X:.*]] = tv.input "x" : tensor<4xf32>
// CHECK:           %[[Y:.*]] = tv.silu %[[X]] : tensor<4xf32>
// CHECK:           tv.add %[[X]], %[[Y]] : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
tv.plan @p mesh @m micro_batches 1 {
  tv.rank_program [0, 1] {
    %x = tv.input "x" : tensor<4xf32>
    %y = tv.silu %x : tensor<4xf32>
    %z = tv.add %x, %y : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  }
}

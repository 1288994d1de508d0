// RUN: tv-opt %s | tv-opt | FileCheck %s
// RUN: tv-opt %s --mlir-print-op-generic | tv-opt | FileCheck %s

// Round trip of the contractions and reductions: matmul, linear, sum, mean,
// max.

// CHECK-LABEL: tv.spec @matmul_2d {
// CHECK:         %[[A:.*]] = tv.input "a" : tensor<4x8xf32>
// CHECK:         %[[B:.*]] = tv.input "b" : tensor<8x16xf32>
// CHECK:         %[[AT:.*]] = tv.input "at" : tensor<8x4xf32>
// CHECK:         %[[BT:.*]] = tv.input "bt" : tensor<16x8xf32>
// CHECK:         tv.matmul %[[A]], %[[B]] : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x16xf32>
// CHECK:         tv.matmul %[[AT]], %[[B]] {transpose_lhs} : tensor<8x4xf32>, tensor<8x16xf32> -> tensor<4x16xf32>
// CHECK:         tv.matmul %[[A]], %[[BT]] {transpose_rhs} : tensor<4x8xf32>, tensor<16x8xf32> -> tensor<4x16xf32>
// CHECK:         tv.matmul %[[AT]], %[[BT]] {transpose_lhs, transpose_rhs} : tensor<8x4xf32>, tensor<16x8xf32> -> tensor<4x16xf32>
// CHECK:         tv.matmul %[[A]], %[[B]] {mb = 0 : i64} : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x16xf32>
tv.spec @matmul_2d {
  %a = tv.input "a" : tensor<4x8xf32>
  %b = tv.input "b" : tensor<8x16xf32>
  %at = tv.input "at" : tensor<8x4xf32>
  %bt = tv.input "bt" : tensor<16x8xf32>
  %0 = tv.matmul %a, %b : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x16xf32>
  %1 = tv.matmul %at, %b {transpose_lhs} : tensor<8x4xf32>, tensor<8x16xf32> -> tensor<4x16xf32>
  %2 = tv.matmul %a, %bt {transpose_rhs} : tensor<4x8xf32>, tensor<16x8xf32> -> tensor<4x16xf32>
  %3 = tv.matmul %at, %bt {transpose_rhs, transpose_lhs} : tensor<8x4xf32>, tensor<16x8xf32> -> tensor<4x16xf32>
  %4 = tv.matmul %a, %b {mb = 0} : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x16xf32>
}

// Batched: rhs of the same rank (same batch dims) or rank 2 (shared).
// CHECK-LABEL: tv.spec @matmul_batched {
// CHECK:         %[[Q:.*]] = tv.input "q" : tensor<2x3x4x8xf32>
// CHECK:         %[[K:.*]] = tv.input "k" : tensor<2x3x6x8xf32>
// CHECK:         %[[W:.*]] = tv.input "w" : tensor<8x5xf32>
// CHECK:         %[[X:.*]] = tv.input "x" : tensor<2x4x8xf32>
// CHECK:         tv.matmul %[[Q]], %[[K]] {transpose_rhs} : tensor<2x3x4x8xf32>, tensor<2x3x6x8xf32> -> tensor<2x3x4x6xf32>
// CHECK:         tv.matmul %[[Q]], %[[W]] : tensor<2x3x4x8xf32>, tensor<8x5xf32> -> tensor<2x3x4x5xf32>
// CHECK:         tv.matmul %[[X]], %[[X]] {transpose_lhs} : tensor<2x4x8xf32>, tensor<2x4x8xf32> -> tensor<2x8x8xf32>
tv.spec @matmul_batched {
  %q = tv.input "q" : tensor<2x3x4x8xf32>
  %k = tv.input "k" : tensor<2x3x6x8xf32>
  %w = tv.input "w" : tensor<8x5xf32>
  %x = tv.input "x" : tensor<2x4x8xf32>
  %0 = tv.matmul %q, %k {transpose_rhs} : tensor<2x3x4x8xf32>, tensor<2x3x6x8xf32> -> tensor<2x3x4x6xf32>
  %1 = tv.matmul %q, %w : tensor<2x3x4x8xf32>, tensor<8x5xf32> -> tensor<2x3x4x5xf32>
  %2 = tv.matmul %x, %x {transpose_lhs} : tensor<2x4x8xf32>, tensor<2x4x8xf32> -> tensor<2x8x8xf32>
}

// CHECK-LABEL: tv.spec @linear {
// CHECK:         %[[X:.*]] = tv.input "x" : tensor<2x4x8xf32>
// CHECK:         %[[V:.*]] = tv.input "v" : tensor<8xf32>
// CHECK:         %[[W:.*]] = tv.input "w" : tensor<16x8xf32>
// CHECK:         %[[B:.*]] = tv.input "b" : tensor<16xf32>
// CHECK:         tv.linear %[[X]], %[[W]] : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
// CHECK:         tv.linear %[[X]], %[[W]], %[[B]] : (tensor<2x4x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<2x4x16xf32>
// CHECK:         tv.linear %[[V]], %[[W]] : (tensor<8xf32>, tensor<16x8xf32>) -> tensor<16xf32>
// CHECK:         tv.linear %[[V]], %[[W]], %[[B]] {mb = 0 : i64} : (tensor<8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<16xf32>
tv.spec @linear {
  %x = tv.input "x" : tensor<2x4x8xf32>
  %v = tv.input "v" : tensor<8xf32>
  %w = tv.input "w" : tensor<16x8xf32>
  %b = tv.input "b" : tensor<16xf32>
  %0 = tv.linear %x, %w : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
  %1 = tv.linear %x, %w, %b : (tensor<2x4x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<2x4x16xf32>
  %2 = tv.linear %v, %w : (tensor<8xf32>, tensor<16x8xf32>) -> tensor<16xf32>
  %3 = tv.linear %v, %w, %b {mb = 0} : (tensor<8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<16xf32>
}

// CHECK-LABEL: tv.spec @reductions {
// CHECK:         %[[X:.*]] = tv.input "x" : tensor<2x4x8xf32>
// CHECK:         tv.sum %[[X]] dims [2] : tensor<2x4x8xf32> -> tensor<2x4xf32>
// CHECK:         tv.sum %[[X]] dims [0, 2] {keepdim} : tensor<2x4x8xf32> -> tensor<1x4x1xf32>
// CHECK:         tv.sum %[[X]] dims [2, 0, 1] : tensor<2x4x8xf32> -> tensor<f32>
// CHECK:         tv.mean %[[X]] dims [1] : tensor<2x4x8xf32> -> tensor<2x8xf32>
// CHECK:         tv.mean %[[X]] dims [1] {keepdim} : tensor<2x4x8xf32> -> tensor<2x1x8xf32>
// CHECK:         tv.mean %[[X]] dims [0, 1, 2] {keepdim} : tensor<2x4x8xf32> -> tensor<1x1x1xf32>
// CHECK:         tv.max %[[X]] dims [0] : tensor<2x4x8xf32> -> tensor<4x8xf32>
// CHECK:         tv.max %[[X]] dims [2] {keepdim, mb = 0 : i64} : tensor<2x4x8xf32> -> tensor<2x4x1xf32>
tv.spec @reductions {
  %x = tv.input "x" : tensor<2x4x8xf32>
  %0 = tv.sum %x dims [2] : tensor<2x4x8xf32> -> tensor<2x4xf32>
  %1 = tv.sum %x dims [0, 2] {keepdim} : tensor<2x4x8xf32> -> tensor<1x4x1xf32>
  %2 = tv.sum %x dims [2, 0, 1] : tensor<2x4x8xf32> -> tensor<f32>
  %3 = tv.mean %x dims [1] : tensor<2x4x8xf32> -> tensor<2x8xf32>
  %4 = tv.mean %x dims [1] {keepdim} : tensor<2x4x8xf32> -> tensor<2x1x8xf32>
  %5 = tv.mean %x dims [0, 1, 2] {keepdim} : tensor<2x4x8xf32> -> tensor<1x1x1xf32>
  %6 = tv.max %x dims [0] : tensor<2x4x8xf32> -> tensor<4x8xf32>
  %7 = tv.max %x dims [2] {keepdim, mb = 0} : tensor<2x4x8xf32> -> tensor<2x4x1xf32>
}

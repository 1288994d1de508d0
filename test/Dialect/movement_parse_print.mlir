// RUN: tv-opt %s | tv-opt | FileCheck %s
// RUN: tv-opt %s --mlir-print-op-generic | tv-opt | FileCheck %s

// Round trip of the data-movement ops: reshape, transpose, slice, concat,
// broadcast.

// CHECK-LABEL: tv.spec @reshape {
// CHECK:         %[[X:.*]] = tv.input "x" : tensor<4x8xf32>
// CHECK:         %[[IDS:.*]] = tv.input "ids" : tensor<2x4xi64>
// CHECK:         %[[S:.*]] = tv.input "s" : tensor<f32>
// CHECK:         tv.reshape %[[X]] : tensor<4x8xf32> -> tensor<32xf32>
// CHECK:         tv.reshape %[[X]] : tensor<4x8xf32> -> tensor<2x2x8xf32>
// CHECK:         tv.reshape %[[IDS]] {mb = 0 : i64} : tensor<2x4xi64> -> tensor<8xi64>
// CHECK:         tv.reshape %[[S]] : tensor<f32> -> tensor<1x1xf32>
// CHECK:         tv.reshape %[[X]] : tensor<4x8xf32> -> tensor<4x8xf32>
tv.spec @reshape {
  %x = tv.input "x" : tensor<4x8xf32>
  %ids = tv.input "ids" : tensor<2x4xi64>
  %s = tv.input "s" : tensor<f32>
  %0 = tv.reshape %x : tensor<4x8xf32> -> tensor<32xf32>
  %1 = tv.reshape %x : tensor<4x8xf32> -> tensor<2x2x8xf32>
  %2 = tv.reshape %ids {mb = 0} : tensor<2x4xi64> -> tensor<8xi64>
  %3 = tv.reshape %s : tensor<f32> -> tensor<1x1xf32>
  %4 = tv.reshape %x : tensor<4x8xf32> -> tensor<4x8xf32>
}

// CHECK-LABEL: tv.spec @transpose {
// CHECK:         %[[X:.*]] = tv.input "x" : tensor<2x4x8xf32>
// CHECK:         %[[M:.*]] = tv.input "m" : tensor<2x4xi1>
// CHECK:         tv.transpose %[[X]] perm [0, 2, 1] : tensor<2x4x8xf32> -> tensor<2x8x4xf32>
// CHECK:         tv.transpose %[[X]] perm [2, 0, 1] : tensor<2x4x8xf32> -> tensor<8x2x4xf32>
// CHECK:         tv.transpose %[[X]] perm [0, 1, 2] : tensor<2x4x8xf32> -> tensor<2x4x8xf32>
// CHECK:         tv.transpose %[[M]] perm [1, 0] {mb = 0 : i64} : tensor<2x4xi1> -> tensor<4x2xi1>
tv.spec @transpose {
  %x = tv.input "x" : tensor<2x4x8xf32>
  %m = tv.input "m" : tensor<2x4xi1>
  %0 = tv.transpose %x perm [0, 2, 1] : tensor<2x4x8xf32> -> tensor<2x8x4xf32>
  %1 = tv.transpose %x perm [2, 0, 1] : tensor<2x4x8xf32> -> tensor<8x2x4xf32>
  %2 = tv.transpose %x perm [0, 1, 2] : tensor<2x4x8xf32> -> tensor<2x4x8xf32>
  %3 = tv.transpose %m perm [1, 0] {mb = 0} : tensor<2x4xi1> -> tensor<4x2xi1>
}

// CHECK-LABEL: tv.spec @slice {
// CHECK:         %[[X:.*]] = tv.input "x" : tensor<4x8xf32>
// CHECK:         %[[IDS:.*]] = tv.input "ids" : tensor<8xi64>
// CHECK:         %[[S:.*]] = tv.input "s" : tensor<f32>
// CHECK:         tv.slice %[[X]] start [0, 2] : tensor<4x8xf32> -> tensor<4x4xf32>
// CHECK:         tv.slice %[[X]] start [3, 7] : tensor<4x8xf32> -> tensor<1x1xf32>
// CHECK:         tv.slice %[[X]] start [0, 0] : tensor<4x8xf32> -> tensor<4x8xf32>
// CHECK:         tv.slice %[[IDS]] start [4] {mb = 0 : i64} : tensor<8xi64> -> tensor<4xi64>
// CHECK:         tv.slice %[[S]] start [] : tensor<f32> -> tensor<f32>
tv.spec @slice {
  %x = tv.input "x" : tensor<4x8xf32>
  %ids = tv.input "ids" : tensor<8xi64>
  %s = tv.input "s" : tensor<f32>
  %0 = tv.slice %x start [0, 2] : tensor<4x8xf32> -> tensor<4x4xf32>
  %1 = tv.slice %x start [3, 7] : tensor<4x8xf32> -> tensor<1x1xf32>
  %2 = tv.slice %x start [0, 0] : tensor<4x8xf32> -> tensor<4x8xf32>
  %3 = tv.slice %ids start [4] {mb = 0} : tensor<8xi64> -> tensor<4xi64>
  %4 = tv.slice %s start [] : tensor<f32> -> tensor<f32>
}

// CHECK-LABEL: tv.spec @concat {
// CHECK:         %[[A:.*]] = tv.input "a" : tensor<2x8xf32>
// CHECK:         %[[B:.*]] = tv.input "b" : tensor<4x8xf32>
// CHECK:         %[[C:.*]] = tv.input "c" : tensor<2x1xf32>
// CHECK:         %[[IDS:.*]] = tv.input "ids" : tensor<3xi64>
// CHECK:         tv.concat %[[A]], %[[B]] dim 0 : (tensor<2x8xf32>, tensor<4x8xf32>) -> tensor<6x8xf32>
// CHECK:         tv.concat %[[A]], %[[C]], %[[A]] dim 1 : (tensor<2x8xf32>, tensor<2x1xf32>, tensor<2x8xf32>) -> tensor<2x17xf32>
// CHECK:         tv.concat %[[A]] dim 1 : (tensor<2x8xf32>) -> tensor<2x8xf32>
// CHECK:         tv.concat %[[IDS]], %[[IDS]] dim 0 {mb = 0 : i64} : (tensor<3xi64>, tensor<3xi64>) -> tensor<6xi64>
tv.spec @concat {
  %a = tv.input "a" : tensor<2x8xf32>
  %b = tv.input "b" : tensor<4x8xf32>
  %c = tv.input "c" : tensor<2x1xf32>
  %ids = tv.input "ids" : tensor<3xi64>
  %0 = tv.concat %a, %b dim 0 : (tensor<2x8xf32>, tensor<4x8xf32>) -> tensor<6x8xf32>
  %1 = tv.concat %a, %c, %a dim 1 : (tensor<2x8xf32>, tensor<2x1xf32>, tensor<2x8xf32>) -> tensor<2x17xf32>
  %2 = tv.concat %a dim 1 : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %3 = tv.concat %ids, %ids dim 0 {mb = 0} : (tensor<3xi64>, tensor<3xi64>) -> tensor<6xi64>
}

// CHECK-LABEL: tv.spec @broadcast {
// CHECK:         %[[ROW:.*]] = tv.input "row" : tensor<8xf32>
// CHECK:         %[[COL:.*]] = tv.input "col" : tensor<4x1xf32>
// CHECK:         %[[S:.*]] = tv.input "s" : tensor<f32>
// CHECK:         %[[M:.*]] = tv.input "m" : tensor<1x4xi1>
// CHECK:         tv.broadcast %[[ROW]] : tensor<8xf32> -> tensor<4x8xf32>
// CHECK:         tv.broadcast %[[COL]] : tensor<4x1xf32> -> tensor<2x4x8xf32>
// CHECK:         tv.broadcast %[[S]] : tensor<f32> -> tensor<2x3xf32>
// CHECK:         tv.broadcast %[[ROW]] : tensor<8xf32> -> tensor<8xf32>
// CHECK:         tv.broadcast %[[M]] {mb = 0 : i64} : tensor<1x4xi1> -> tensor<4x4xi1>
tv.spec @broadcast {
  %row = tv.input "row" : tensor<8xf32>
  %col = tv.input "col" : tensor<4x1xf32>
  %s = tv.input "s" : tensor<f32>
  %m = tv.input "m" : tensor<1x4xi1>
  %0 = tv.broadcast %row : tensor<8xf32> -> tensor<4x8xf32>
  %1 = tv.broadcast %col : tensor<4x1xf32> -> tensor<2x4x8xf32>
  %2 = tv.broadcast %s : tensor<f32> -> tensor<2x3xf32>
  %3 = tv.broadcast %row : tensor<8xf32> -> tensor<8xf32>
  %4 = tv.broadcast %m {mb = 0} : tensor<1x4xi1> -> tensor<4x4xi1>
}

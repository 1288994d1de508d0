// RUN: tv-opt %s | tv-opt | FileCheck %s
// RUN: tv-opt %s --mlir-print-op-generic | tv-opt | FileCheck %s

// Round trip of the optimizer ops: sgd, adam.

// CHECK-LABEL: tv.spec @sgd {
// CHECK:         %[[W:.*]] = tv.input "w" : tensor<4x8xf32>
// CHECK:         %[[G:.*]] = tv.input "g" : tensor<4x8xf32>
// CHECK:         %[[B:.*]] = tv.input "b" : tensor<8xf16>
// CHECK:         %[[W1:.*]] = tv.sgd %[[W]], %[[G]] lr 1.000000e-03 : tensor<4x8xf32>
// CHECK:         tv.sgd %[[W1]], %[[G]] lr 5.000000e-01 {mb = 0 : i64} : tensor<4x8xf32>
// CHECK:         tv.sgd %[[B]], %[[B]] lr 1.000000e+00 : tensor<8xf16>
tv.spec @sgd {
  %w = tv.input "w" : tensor<4x8xf32>
  %g = tv.input "g" : tensor<4x8xf32>
  %b = tv.input "b" : tensor<8xf16>
  %0 = tv.sgd %w, %g lr 1.0e-3 : tensor<4x8xf32>
  %1 = tv.sgd %0, %g lr 0.5 {mb = 0} : tensor<4x8xf32>
  %2 = tv.sgd %b, %b lr 1.0 : tensor<8xf16>
}

// CHECK-LABEL: tv.spec @adam {
// CHECK:         %[[W:.*]] = tv.input "w" : tensor<4x8xf32>
// CHECK:         %[[G:.*]] = tv.input "g" : tensor<4x8xf32>
// CHECK:         %[[M:.*]] = tv.input "m" : tensor<4x8xf32>
// CHECK:         %[[V:.*]] = tv.input "v" : tensor<4x8xf32>
// CHECK:         %[[NW:[^,]+]], %[[NM:[^,]+]], %[[NV:[^ ]+]] = tv.adam %[[W]], %[[G]], %[[M]], %[[V]] {beta1 = 9.000000e-01 : f64, beta2 = 0.99899999999999999 : f64, eps = 1.000000e-08 : f64, lr = 1.000000e-03 : f64, step = 1 : i64} : tensor<4x8xf32>
// CHECK:         tv.adam %[[NW]], %[[G]], %[[NM]], %[[NV]] {beta1 = 0.000000e+00 : f64, beta2 = 5.000000e-01 : f64, eps = 0.000000e+00 : f64, lr = 1.000000e+00 : f64, mb = 1 : i64, step = 2 : i64} : tensor<4x8xf32>
// CHECK:         tv.output "w_new", %[[NW]] : tensor<4x8xf32>
tv.spec @adam {
  %w = tv.input "w" : tensor<4x8xf32>
  %g = tv.input "g" : tensor<4x8xf32>
  %m = tv.input "m" : tensor<4x8xf32>
  %v = tv.input "v" : tensor<4x8xf32>
  %0:3 = tv.adam %w, %g, %m, %v {lr = 1.0e-3, beta1 = 0.9, beta2 = 0.999, eps = 1.0e-8, step = 1} : tensor<4x8xf32>
  %1:3 = tv.adam %0#0, %g, %0#1, %0#2 {lr = 1.0, beta1 = 0.0, beta2 = 0.5, eps = 0.0, step = 2, mb = 1} : tensor<4x8xf32>
  tv.output "w_new", %0#0 : tensor<4x8xf32>
}

// Rank-0 parameters.
// CHECK-LABEL: tv.spec @adam_scalar {
// CHECK:         %[[S:.*]] = tv.input "s" : tensor<f32>
// CHECK:         tv.adam %[[S]], %[[S]], %[[S]], %[[S]] {{.*}} : tensor<f32>
tv.spec @adam_scalar {
  %s = tv.input "s" : tensor<f32>
  %0:3 = tv.adam %s, %s, %s, %s {lr = 1.0e-3, beta1 = 0.9, beta2 = 0.999, eps = 1.0e-8, step = 10} : tensor<f32>
}

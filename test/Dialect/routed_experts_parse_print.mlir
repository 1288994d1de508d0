// RUN: tv-opt %s | tv-opt | FileCheck %s
// RUN: tv-opt %s --mlir-print-op-generic | tv-opt | FileCheck %s

// Round trip of the routed-expert ops of nnScaler's MoE (DeepSeek-V3's
// router and the grouped SwiGLU expert matmul) and their backward ops.

// CHECK-LABEL: tv.spec @routed {
// CHECK:         %[[W:.*]], %[[I:.*]] = tv.moe_gate %[[X:.*]], %[[R:.*]] sigmoid k 2 groups 4 keep 2 scale 2.500000e+00 : tensor<3x4xf32>, tensor<8x4xf32> -> tensor<3x2xf32>, tensor<3x2xi64>
// CHECK:         tv.moe_gate %[[X]], %[[R]] softmax k 1 groups 1 keep 1 scale 1.000000e+00 {mb = 0 : i64} : tensor<3x4xf32>, tensor<8x4xf32> -> tensor<3x1xf32>, tensor<3x1xi64>
// CHECK:         %[[Y:.*]] = tv.moe_gmm %[[X]], %[[I]], %[[W]], %{{.*}}, %{{.*}}, %{{.*}} experts from 4 : tensor<3x4xf32>, tensor<3x2xi64>, tensor<3x2xf32>, tensor<4x2x4xf32>, tensor<4x2x4xf32>, tensor<4x4x2xf32> -> tensor<3x4xf32>
// CHECK:         tv.moe_gmm_grad %[[Y]], %[[X]], %[[I]], %[[W]], %{{.*}}, %{{.*}}, %{{.*}} experts from 4 : tensor<3x4xf32>, tensor<3x2xi64>, tensor<3x2xf32>, tensor<4x2x4xf32>, tensor<4x2x4xf32>, tensor<4x4x2xf32>
// CHECK:         tv.moe_gate_grad %[[X]], %[[R]], %{{.*}} sigmoid k 2 groups 4 keep 2 scale 2.500000e+00 : tensor<3x4xf32>, tensor<8x4xf32>, tensor<3x2xf32>
tv.spec @routed {
  %x = tv.input "x" : tensor<3x4xf32>
  %r = tv.input "r" : tensor<8x4xf32>
  %w1 = tv.input "w1" : tensor<4x2x4xf32>
  %w3 = tv.input "w3" : tensor<4x2x4xf32>
  %w2 = tv.input "w2" : tensor<4x4x2xf32>
  %w, %i = tv.moe_gate %x, %r sigmoid k 2 groups 4 keep 2 scale 2.5 : tensor<3x4xf32>, tensor<8x4xf32> -> tensor<3x2xf32>, tensor<3x2xi64>
  %w1s, %i1s = tv.moe_gate %x, %r softmax k 1 groups 1 keep 1 scale 1.0 {mb = 0} : tensor<3x4xf32>, tensor<8x4xf32> -> tensor<3x1xf32>, tensor<3x1xi64>
  %y = tv.moe_gmm %x, %i, %w, %w1, %w3, %w2 experts from 4 : tensor<3x4xf32>, tensor<3x2xi64>, tensor<3x2xf32>, tensor<4x2x4xf32>, tensor<4x2x4xf32>, tensor<4x4x2xf32> -> tensor<3x4xf32>
  %dx, %dw, %d1, %d3, %d2 = tv.moe_gmm_grad %y, %x, %i, %w, %w1, %w3, %w2 experts from 4 : tensor<3x4xf32>, tensor<3x2xi64>, tensor<3x2xf32>, tensor<4x2x4xf32>, tensor<4x2x4xf32>, tensor<4x4x2xf32>
  %gx, %gr = tv.moe_gate_grad %x, %r, %dw sigmoid k 2 groups 4 keep 2 scale 2.5 : tensor<3x4xf32>, tensor<8x4xf32>, tensor<3x2xf32>
}

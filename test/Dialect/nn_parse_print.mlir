// RUN: tv-opt %s | tv-opt | FileCheck %s
// RUN: tv-opt %s --mlir-print-op-generic | tv-opt | FileCheck %s

// Round trip of the neural-network ops: softmax, layernorm, rmsnorm, rotary,
// embedding, causal_mask, apply_mask, cross_entropy.

// CHECK-LABEL: tv.spec @softmax {
// CHECK:         %[[X:.*]] = tv.input "x" : tensor<2x4x8xf32>
// CHECK:         %[[V:.*]] = tv.input "v" : tensor<8xf32>
// CHECK:         tv.softmax %[[X]] dim 2 : tensor<2x4x8xf32>
// CHECK:         tv.softmax %[[X]] dim 0 {mb = 0 : i64} : tensor<2x4x8xf32>
// CHECK:         tv.softmax %[[V]] dim 0 : tensor<8xf32>
tv.spec @softmax {
  %x = tv.input "x" : tensor<2x4x8xf32>
  %v = tv.input "v" : tensor<8xf32>
  %0 = tv.softmax %x dim 2 : tensor<2x4x8xf32>
  %1 = tv.softmax %x dim 0 {mb = 0} : tensor<2x4x8xf32>
  %2 = tv.softmax %v dim 0 : tensor<8xf32>
}

// CHECK-LABEL: tv.spec @norms {
// CHECK:         %[[X:.*]] = tv.input "x" : tensor<2x4x8xf32>
// CHECK:         %[[V:.*]] = tv.input "v" : tensor<8xf32>
// CHECK:         %[[G:.*]] = tv.input "gamma" : tensor<8xf32>
// CHECK:         %[[B:.*]] = tv.input "beta" : tensor<8xf32>
// CHECK:         tv.layernorm %[[X]], %[[G]], %[[B]] eps 1.000000e-05 : tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<2x4x8xf32>
// CHECK:         tv.layernorm %[[V]], %[[G]], %[[B]] eps 0.000000e+00 {mb = 0 : i64} : tensor<8xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<8xf32>
// CHECK:         tv.rmsnorm %[[X]], %[[G]] eps 9.9999999999999995E-7 : tensor<2x4x8xf32>, tensor<8xf32> -> tensor<2x4x8xf32>
// CHECK:         tv.rmsnorm %[[V]], %[[G]] eps 1.000000e-05 {mb = 1 : i64} : tensor<8xf32>, tensor<8xf32> -> tensor<8xf32>
tv.spec @norms {
  %x = tv.input "x" : tensor<2x4x8xf32>
  %v = tv.input "v" : tensor<8xf32>
  %g = tv.input "gamma" : tensor<8xf32>
  %b = tv.input "beta" : tensor<8xf32>
  %0 = tv.layernorm %x, %g, %b eps 1.0e-5 : tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<2x4x8xf32>
  %1 = tv.layernorm %v, %g, %b eps 0.0 {mb = 0} : tensor<8xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<8xf32>
  %2 = tv.rmsnorm %x, %g eps 1.0e-6 : tensor<2x4x8xf32>, tensor<8xf32> -> tensor<2x4x8xf32>
  %3 = tv.rmsnorm %v, %g eps 1.0e-5 {mb = 1} : tensor<8xf32>, tensor<8xf32> -> tensor<8xf32>
}

// CHECK-LABEL: tv.spec @rotary {
// CHECK:         %[[X:.*]] = tv.input "x" : tensor<2x3x4x8xf32>
// CHECK:         %[[Y:.*]] = tv.input "y" : tensor<4x2xf32>
// CHECK:         %[[C:.*]] = tv.input "cos" : tensor<4x4xf32>
// CHECK:         %[[S:.*]] = tv.input "sin" : tensor<4x4xf32>
// CHECK:         %[[C1:.*]] = tv.input "cos1" : tensor<4x1xf32>
// CHECK:         tv.rotary %[[X]], %[[C]], %[[S]] : tensor<2x3x4x8xf32>, tensor<4x4xf32>, tensor<4x4xf32> -> tensor<2x3x4x8xf32>
// CHECK:         tv.rotary %[[Y]], %[[C1]], %[[C1]] {mb = 0 : i64} : tensor<4x2xf32>, tensor<4x1xf32>, tensor<4x1xf32> -> tensor<4x2xf32>
tv.spec @rotary {
  %x = tv.input "x" : tensor<2x3x4x8xf32>
  %y = tv.input "y" : tensor<4x2xf32>
  %c = tv.input "cos" : tensor<4x4xf32>
  %s = tv.input "sin" : tensor<4x4xf32>
  %c1 = tv.input "cos1" : tensor<4x1xf32>
  %0 = tv.rotary %x, %c, %s : tensor<2x3x4x8xf32>, tensor<4x4xf32>, tensor<4x4xf32> -> tensor<2x3x4x8xf32>
  %1 = tv.rotary %y, %c1, %c1 {mb = 0} : tensor<4x2xf32>, tensor<4x1xf32>, tensor<4x1xf32> -> tensor<4x2xf32>
}

// CHECK-LABEL: tv.spec @embedding {
// CHECK:         %[[IDS:.*]] = tv.input "ids" : tensor<2x4xi64>
// CHECK:         %[[IDS32:.*]] = tv.input "ids32" : tensor<4xi32>
// CHECK:         %[[ID0:.*]] = tv.input "id0" : tensor<i64>
// CHECK:         %[[T:.*]] = tv.input "table" : tensor<16x8xf32>
// CHECK:         tv.embedding %[[IDS]], %[[T]] : tensor<2x4xi64>, tensor<16x8xf32> -> tensor<2x4x8xf32>
// CHECK:         tv.embedding %[[IDS32]], %[[T]] : tensor<4xi32>, tensor<16x8xf32> -> tensor<4x8xf32>
// CHECK:         tv.embedding %[[ID0]], %[[T]] : tensor<i64>, tensor<16x8xf32> -> tensor<8xf32>
tv.spec @embedding {
  %ids = tv.input "ids" : tensor<2x4xi64>
  %ids32 = tv.input "ids32" : tensor<4xi32>
  %id0 = tv.input "id0" : tensor<i64>
  %t = tv.input "table" : tensor<16x8xf32>
  %0 = tv.embedding %ids, %t : tensor<2x4xi64>, tensor<16x8xf32> -> tensor<2x4x8xf32>
  %1 = tv.embedding %ids32, %t : tensor<4xi32>, tensor<16x8xf32> -> tensor<4x8xf32>
  %2 = tv.embedding %id0, %t : tensor<i64>, tensor<16x8xf32> -> tensor<8xf32>
}

// The vocab-parallel form names a mesh axis.
tv.mesh @m axes ["tp"] sizes [2]
// CHECK-LABEL: tv.plan @vocab_parallel mesh @m micro_batches 1 {
// CHECK:         tv.rank_program [0, 1] {
// CHECK:           %[[IDS:.*]] = tv.input "ids" : tensor<2x4xi64>
// CHECK:           %[[T:.*]] = tv.input "table" : tensor<8x8xf32>
// CHECK:           tv.embedding %[[IDS]], %[[T]] {vocab_axis = "tp"} : tensor<2x4xi64>, tensor<8x8xf32> -> tensor<2x4x8xf32>
tv.plan @vocab_parallel mesh @m micro_batches 1 {
  tv.rank_program [0, 1] {
    %ids = tv.input "ids" : tensor<2x4xi64>
    %t = tv.input "table" : tensor<8x8xf32>
    %0 = tv.embedding %ids, %t {vocab_axis = "tp"} : tensor<2x4xi64>, tensor<8x8xf32> -> tensor<2x4x8xf32>
  }
}

// CHECK-LABEL: tv.spec @masks {
// CHECK:         %[[M:.*]] = tv.causal_mask : tensor<4x4xi1>
// CHECK:         %[[M2:.*]] = tv.causal_mask {mb = 0 : i64} : tensor<2x4xi1>
// CHECK:         tv.causal_mask {window = 2 : i64} : tensor<4x4xi1>
// CHECK:         %[[X:.*]] = tv.input "scores" : tensor<2x3x4x4xf32>
// CHECK:         %[[Y:.*]] = tv.input "scores2" : tensor<2x4xf32>
// CHECK:         tv.apply_mask %[[X]], %[[M]] : tensor<2x3x4x4xf32>, tensor<4x4xi1> -> tensor<2x3x4x4xf32>
// CHECK:         tv.apply_mask %[[Y]], %[[M2]] {mb = 0 : i64} : tensor<2x4xf32>, tensor<2x4xi1> -> tensor<2x4xf32>
tv.spec @masks {
  %m = tv.causal_mask : tensor<4x4xi1>
  %m2 = tv.causal_mask {mb = 0} : tensor<2x4xi1>
  %mw = tv.causal_mask {window = 2} : tensor<4x4xi1>
  %x = tv.input "scores" : tensor<2x3x4x4xf32>
  %y = tv.input "scores2" : tensor<2x4xf32>
  %0 = tv.apply_mask %x, %m : tensor<2x3x4x4xf32>, tensor<4x4xi1> -> tensor<2x3x4x4xf32>
  %1 = tv.apply_mask %y, %m2 {mb = 0} : tensor<2x4xf32>, tensor<2x4xi1> -> tensor<2x4xf32>
}

// CHECK-LABEL: tv.spec @cross_entropy {
// CHECK:         %[[L:.*]] = tv.input "logits" : tensor<4x16xf32>
// CHECK:         %[[Y:.*]] = tv.input "labels" : tensor<4xi64>
// CHECK:         %[[Y32:.*]] = tv.input "labels32" : tensor<4xi32>
// CHECK:         tv.cross_entropy %[[L]], %[[Y]] : tensor<4x16xf32>, tensor<4xi64> -> tensor<f32>
// CHECK:         tv.cross_entropy %[[L]], %[[Y32]] {mb = 0 : i64} : tensor<4x16xf32>, tensor<4xi32> -> tensor<f32>
tv.spec @cross_entropy {
  %l = tv.input "logits" : tensor<4x16xf32>
  %y = tv.input "labels" : tensor<4xi64>
  %y32 = tv.input "labels32" : tensor<4xi32>
  %0 = tv.cross_entropy %l, %y : tensor<4x16xf32>, tensor<4xi64> -> tensor<f32>
  %1 = tv.cross_entropy %l, %y32 {mb = 0} : tensor<4x16xf32>, tensor<4xi32> -> tensor<f32>
}

// CHECK-LABEL: tv.spec @target_logit {
// CHECK:         %[[L:.*]] = tv.input "logits" : tensor<4x8xf32>
// CHECK:         %[[Y:.*]] = tv.input "labels" : tensor<4xi64>
// CHECK:         %[[G:.*]] = tv.input "g" : tensor<4xf32>
// CHECK:         tv.target_logit %[[L]], %[[Y]] : tensor<4x8xf32>, tensor<4xi64> -> tensor<4xf32>
// CHECK:         tv.target_logit %[[L]], %[[Y]] {vocab_offset = 8 : i64} : tensor<4x8xf32>, tensor<4xi64> -> tensor<4xf32>
// CHECK:         tv.target_logit_grad %[[Y]], %[[G]] : tensor<4xi64>, tensor<4xf32> -> tensor<4x8xf32>
tv.spec @target_logit {
  %l = tv.input "logits" : tensor<4x8xf32>
  %y = tv.input "labels" : tensor<4xi64>
  %g = tv.input "g" : tensor<4xf32>
  %0 = tv.target_logit %l, %y : tensor<4x8xf32>, tensor<4xi64> -> tensor<4xf32>
  %1 = tv.target_logit %l, %y {vocab_offset = 8} : tensor<4x8xf32>, tensor<4xi64> -> tensor<4xf32>
  %2 = tv.target_logit_grad %y, %g : tensor<4xi64>, tensor<4xf32> -> tensor<4x8xf32>
}

// CHECK-LABEL: tv.spec @vocab_mask {
// CHECK:         %[[M:.*]] = tv.vocab_mask {vocab_size = 29 : i64} : tensor<4x32xi1>
// CHECK:         tv.vocab_mask {vocab_offset = 16 : i64, vocab_size = 29 : i64} : tensor<4x16xi1>
// CHECK:         tv.apply_mask %{{.*}}, %[[M]] : tensor<4x32xf32>, tensor<4x32xi1> -> tensor<4x32xf32>
tv.spec @vocab_mask {
  %l = tv.input "l" : tensor<4x32xf32>
  %0 = tv.vocab_mask {vocab_size = 29} : tensor<4x32xi1>
  %1 = tv.vocab_mask {vocab_size = 29, vocab_offset = 16} : tensor<4x16xi1>
  %2 = tv.apply_mask %l, %0 : tensor<4x32xf32>, tensor<4x32xi1> -> tensor<4x32xf32>
}

// CHECK-LABEL: tv.spec @chunk_mask {
// CHECK:         tv.causal_mask {chunk_size = 2 : i64, key_chunks = array<i64: 1, 2>, query_chunks = array<i64: 0, 3>} : tensor<4x4xi1>
tv.spec @chunk_mask {
  %0 = tv.causal_mask {query_chunks = array<i64: 0, 3>, key_chunks = array<i64: 1, 2>, chunk_size = 2} : tensor<4x4xi1>
}

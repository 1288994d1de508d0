// RUN: tv-opt %s --split-input-file --verify-diagnostics

// Invalid neural-network ops: softmax, layernorm, rmsnorm, rotary, embedding,
// causal_mask, apply_mask, cross_entropy.

// softmax
tv.spec @s {
  %x = tv.input "x" : tensor<2x4x8xf32>
  // expected-error @+1 {{'tv.softmax' op dim 3 is out of range for rank 3}}
  %0 = tv.softmax %x dim 3 : tensor<2x4x8xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<2x4x8xf32>
  // expected-error @+1 {{'tv.softmax' op dim -1 is out of range for rank 3}}
  %0 = tv.softmax %x dim -1 : tensor<2x4x8xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<f32>
  // expected-error @+1 {{'tv.softmax' op dim 0 is out of range for rank 0}}
  %0 = tv.softmax %x dim 0 : tensor<f32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<2x4x8xf32>
  // expected-error @+1 {{'tv.softmax' op requires the same type for all operands and results}}
  %0 = "tv.softmax"(%x) <{dim = 0 : i64}> : (tensor<2x4x8xf32>) -> tensor<4x8xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<4xi64>
  // expected-error @+1 {{'tv.softmax' op operand #0 must be ranked tensor of floating-point values}}
  %0 = tv.softmax %x dim 0 : tensor<4xi64>
}

// -----

// layernorm
tv.spec @s {
  %x = tv.input "x" : tensor<f32>
  %g = tv.input "g" : tensor<1xf32>
  // expected-error @+1 {{'tv.layernorm' op input must have rank at least 1}}
  %0 = tv.layernorm %x, %g, %g eps 1.0e-5 : tensor<f32>, tensor<1xf32>, tensor<1xf32> -> tensor<f32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<2x4x8xf32>
  %g = tv.input "g" : tensor<4xf32>
  %b = tv.input "b" : tensor<8xf32>
  // expected-error @+1 {{'tv.layernorm' op gamma has shape [4], expected [8]}}
  %0 = tv.layernorm %x, %g, %b eps 1.0e-5 : tensor<2x4x8xf32>, tensor<4xf32>, tensor<8xf32> -> tensor<2x4x8xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<2x4x8xf32>
  %g = tv.input "g" : tensor<8xf32>
  %b = tv.input "b" : tensor<1x8xf32>
  // expected-error @+1 {{'tv.layernorm' op beta has shape [1, 8], expected [8]}}
  %0 = tv.layernorm %x, %g, %b eps 1.0e-5 : tensor<2x4x8xf32>, tensor<8xf32>, tensor<1x8xf32> -> tensor<2x4x8xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<2x4x8xf32>
  %g = tv.input "g" : tensor<8xf32>
  // expected-error @+1 {{'tv.layernorm' op result has shape [4, 8], expected [2, 4, 8]}}
  %0 = tv.layernorm %x, %g, %g eps 1.0e-5 : tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<4x8xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<2x4x8xf32>
  %g = tv.input "g" : tensor<8xi64>
  // expected-error @+1 {{'tv.layernorm' op operand #1 must be ranked tensor of floating-point values}}
  %0 = tv.layernorm %x, %g, %g eps 1.0e-5 : tensor<2x4x8xf32>, tensor<8xi64>, tensor<8xi64> -> tensor<2x4x8xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<2x4x8xf32>
  %g = tv.input "g" : tensor<8xf32>
  // expected-error @+1 {{'tv.layernorm' op attribute 'eps' failed to satisfy constraint: 64-bit float attribute}}
  %0 = "tv.layernorm"(%x, %g, %g) <{eps = 1.0e-5 : f32}> : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
}

// -----

// rmsnorm
tv.spec @s {
  %x = tv.input "x" : tensor<f32>
  %w = tv.input "w" : tensor<1xf32>
  // expected-error @+1 {{'tv.rmsnorm' op input must have rank at least 1}}
  %0 = tv.rmsnorm %x, %w eps 1.0e-5 : tensor<f32>, tensor<1xf32> -> tensor<f32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<2x4x8xf32>
  %w = tv.input "w" : tensor<4xf32>
  // expected-error @+1 {{'tv.rmsnorm' op weight has shape [4], expected [8]}}
  %0 = tv.rmsnorm %x, %w eps 1.0e-5 : tensor<2x4x8xf32>, tensor<4xf32> -> tensor<2x4x8xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<2x4x8xf32>
  %w = tv.input "w" : tensor<8xf32>
  // expected-error @+1 {{'tv.rmsnorm' op result has shape [2, 4, 4], expected [2, 4, 8]}}
  %0 = tv.rmsnorm %x, %w eps 1.0e-5 : tensor<2x4x8xf32>, tensor<8xf32> -> tensor<2x4x4xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<2x4x8xi64>
  %w = tv.input "w" : tensor<8xf32>
  // expected-error @+1 {{'tv.rmsnorm' op operand #0 must be ranked tensor of floating-point values}}
  %0 = tv.rmsnorm %x, %w eps 1.0e-5 : tensor<2x4x8xi64>, tensor<8xf32> -> tensor<2x4x8xf32>
}

// -----

// rotary
tv.spec @s {
  %x = tv.input "x" : tensor<8xf32>
  %c = tv.input "c" : tensor<4x4xf32>
  // expected-error @+1 {{'tv.rotary' op input must have rank at least 2 ([..., s, d])}}
  %0 = tv.rotary %x, %c, %c : tensor<8xf32>, tensor<4x4xf32>, tensor<4x4xf32> -> tensor<8xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<4x7xf32>
  %c = tv.input "c" : tensor<4x3xf32>
  // expected-error @+1 {{'tv.rotary' op last dimension 7 must be even (rotated in pairs)}}
  %0 = tv.rotary %x, %c, %c : tensor<4x7xf32>, tensor<4x3xf32>, tensor<4x3xf32> -> tensor<4x7xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<2x4x8xf32>
  %c = tv.input "c" : tensor<4x8xf32>
  %s = tv.input "s" : tensor<4x4xf32>
  // expected-error @+1 {{'tv.rotary' op cos has shape [4, 8], expected [4, 4]}}
  %0 = tv.rotary %x, %c, %s : tensor<2x4x8xf32>, tensor<4x8xf32>, tensor<4x4xf32> -> tensor<2x4x8xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<2x4x8xf32>
  %c = tv.input "c" : tensor<4x4xf32>
  %s = tv.input "s" : tensor<2x4xf32>
  // expected-error @+1 {{'tv.rotary' op sin has shape [2, 4], expected [4, 4]}}
  %0 = tv.rotary %x, %c, %s : tensor<2x4x8xf32>, tensor<4x4xf32>, tensor<2x4xf32> -> tensor<2x4x8xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<2x4x8xf32>
  %c = tv.input "c" : tensor<4x4xf32>
  // expected-error @+1 {{'tv.rotary' op result has shape [4, 8], expected [2, 4, 8]}}
  %0 = tv.rotary %x, %c, %c : tensor<2x4x8xf32>, tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x8xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<2x4x8xf32>
  %c = tv.input "c" : tensor<4x4xi64>
  // expected-error @+1 {{'tv.rotary' op operand #1 must be ranked tensor of floating-point values}}
  %0 = tv.rotary %x, %c, %c : tensor<2x4x8xf32>, tensor<4x4xi64>, tensor<4x4xi64> -> tensor<2x4x8xf32>
}

// -----

// embedding
tv.spec @s {
  %ids = tv.input "ids" : tensor<2x4xi64>
  %t = tv.input "t" : tensor<16xf32>
  // expected-error @+1 {{'tv.embedding' op table must have rank 2 ([vocab, hidden])}}
  %0 = tv.embedding %ids, %t : tensor<2x4xi64>, tensor<16xf32> -> tensor<2x4xf32>
}

// -----

tv.spec @s {
  %ids = tv.input "ids" : tensor<2x4xi64>
  %t = tv.input "t" : tensor<2x16x8xf32>
  // expected-error @+1 {{'tv.embedding' op table must have rank 2 ([vocab, hidden])}}
  %0 = tv.embedding %ids, %t : tensor<2x4xi64>, tensor<2x16x8xf32> -> tensor<2x4x8xf32>
}

// -----

tv.spec @s {
  %ids = tv.input "ids" : tensor<2x4xi64>
  %t = tv.input "t" : tensor<16x8xf32>
  // expected-error @+1 {{'tv.embedding' op result has shape [2, 4, 16], expected [2, 4, 8]}}
  %0 = tv.embedding %ids, %t : tensor<2x4xi64>, tensor<16x8xf32> -> tensor<2x4x16xf32>
}

// -----

tv.spec @s {
  %ids = tv.input "ids" : tensor<2x4xi64>
  %t = tv.input "t" : tensor<16x8xf32>
  // expected-error @+1 {{'tv.embedding' op result has shape [8, 8], expected [2, 4, 8]}}
  %0 = tv.embedding %ids, %t : tensor<2x4xi64>, tensor<16x8xf32> -> tensor<8x8xf32>
}

// -----

tv.spec @s {
  %ids = tv.input "ids" : tensor<2x4xf32>
  %t = tv.input "t" : tensor<16x8xf32>
  // expected-error @+1 {{'tv.embedding' op operand #0 must be ranked tensor of signless integer values}}
  %0 = tv.embedding %ids, %t : tensor<2x4xf32>, tensor<16x8xf32> -> tensor<2x4x8xf32>
}

// -----

tv.spec @s {
  %ids = tv.input "ids" : tensor<2x4xi64>
  %t = tv.input "t" : tensor<16x8xi64>
  // expected-error @+1 {{'tv.embedding' op operand #1 must be ranked tensor of floating-point values}}
  %0 = tv.embedding %ids, %t : tensor<2x4xi64>, tensor<16x8xi64> -> tensor<2x4x8xf32>
}

// -----

tv.spec @s {
  %ids = tv.input "ids" : tensor<2x4xi64>
  %t = tv.input "t" : tensor<16x8xf32>
  // expected-error @+1 {{'tv.embedding' op attribute 'vocab_axis' failed to satisfy constraint: string attribute}}
  %0 = tv.embedding %ids, %t {vocab_axis = 1 : i64} : tensor<2x4xi64>, tensor<16x8xf32> -> tensor<2x4x8xf32>
}

// -----

// causal_mask
tv.spec @s {
  // expected-error @+1 {{'tv.causal_mask' op mask must have rank 2 ([s_q, s_k])}}
  %0 = tv.causal_mask : tensor<2x4x4xi1>
}

// -----

tv.spec @s {
  // expected-error @+1 {{'tv.causal_mask' op window must be at least 1, got 0}}
  %0 = tv.causal_mask {window = 0} : tensor<4x4xi1>
}

// -----

tv.spec @s {
  // expected-error @+1 {{'tv.causal_mask' op mask must have rank 2 ([s_q, s_k])}}
  %0 = tv.causal_mask : tensor<4xi1>
}

// -----

tv.spec @s {
  // expected-error @+1 {{'tv.causal_mask' op has more queries (8) than keys (4)}}
  %0 = tv.causal_mask : tensor<8x4xi1>
}

// -----

tv.spec @s {
  // expected-error @+1 {{'tv.causal_mask' op result #0 must be ranked tensor of 1-bit signless integer values}}
  %0 = tv.causal_mask : tensor<4x4xf32>
}

// -----

// apply_mask
tv.spec @s {
  %x = tv.input "x" : tensor<4xf32>
  %m = tv.input "m" : tensor<4x4xi1>
  // expected-error @+1 {{'tv.apply_mask' op input must have rank at least 2}}
  %0 = tv.apply_mask %x, %m : tensor<4xf32>, tensor<4x4xi1> -> tensor<4xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<2x4x8xf32>
  %m = tv.input "m" : tensor<4x4xi1>
  // expected-error @+1 {{'tv.apply_mask' op mask has shape [4, 4], expected [4, 8]}}
  %0 = tv.apply_mask %x, %m : tensor<2x4x8xf32>, tensor<4x4xi1> -> tensor<2x4x8xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<2x4x4xf32>
  %m = tv.input "m" : tensor<2x4x4xi1>
  // expected-error @+1 {{'tv.apply_mask' op mask has shape [2, 4, 4], expected [4, 4]}}
  %0 = tv.apply_mask %x, %m : tensor<2x4x4xf32>, tensor<2x4x4xi1> -> tensor<2x4x4xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<2x4x4xf32>
  %m = tv.input "m" : tensor<4x4xi1>
  // expected-error @+1 {{'tv.apply_mask' op result has shape [4, 4], expected [2, 4, 4]}}
  %0 = tv.apply_mask %x, %m : tensor<2x4x4xf32>, tensor<4x4xi1> -> tensor<4x4xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<2x4x4xf32>
  %m = tv.input "m" : tensor<4x4xf32>
  // expected-error @+1 {{'tv.apply_mask' op operand #1 must be ranked tensor of 1-bit signless integer values}}
  %0 = tv.apply_mask %x, %m : tensor<2x4x4xf32>, tensor<4x4xf32> -> tensor<2x4x4xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<2x4x4xi64>
  %m = tv.input "m" : tensor<4x4xi1>
  // expected-error @+1 {{'tv.apply_mask' op operand #0 must be ranked tensor of floating-point values}}
  %0 = tv.apply_mask %x, %m : tensor<2x4x4xi64>, tensor<4x4xi1> -> tensor<2x4x4xf32>
}

// -----

// cross_entropy
tv.spec @s {
  %l = tv.input "l" : tensor<2x4x16xf32>
  %y = tv.input "y" : tensor<4xi64>
  // expected-error @+1 {{'tv.cross_entropy' op logits must have rank 2 ([n, vocab])}}
  %0 = tv.cross_entropy %l, %y : tensor<2x4x16xf32>, tensor<4xi64> -> tensor<f32>
}

// -----

tv.spec @s {
  %l = tv.input "l" : tensor<16xf32>
  %y = tv.input "y" : tensor<4xi64>
  // expected-error @+1 {{'tv.cross_entropy' op logits must have rank 2 ([n, vocab])}}
  %0 = tv.cross_entropy %l, %y : tensor<16xf32>, tensor<4xi64> -> tensor<f32>
}

// -----

tv.spec @s {
  %l = tv.input "l" : tensor<4x16xf32>
  %y = tv.input "y" : tensor<8xi64>
  // expected-error @+1 {{'tv.cross_entropy' op labels has shape [8], expected [4]}}
  %0 = tv.cross_entropy %l, %y : tensor<4x16xf32>, tensor<8xi64> -> tensor<f32>
}

// -----

tv.spec @s {
  %l = tv.input "l" : tensor<4x16xf32>
  %y = tv.input "y" : tensor<4x1xi64>
  // expected-error @+1 {{'tv.cross_entropy' op labels has shape [4, 1], expected [4]}}
  %0 = tv.cross_entropy %l, %y : tensor<4x16xf32>, tensor<4x1xi64> -> tensor<f32>
}

// -----

tv.spec @s {
  %l = tv.input "l" : tensor<4x16xf32>
  %y = tv.input "y" : tensor<4xi64>
  // expected-error @+1 {{'tv.cross_entropy' op result has shape [1], expected []}}
  %0 = tv.cross_entropy %l, %y : tensor<4x16xf32>, tensor<4xi64> -> tensor<1xf32>
}

// -----

tv.spec @s {
  %l = tv.input "l" : tensor<4x16xf32>
  %y = tv.input "y" : tensor<4xf32>
  // expected-error @+1 {{'tv.cross_entropy' op operand #1 must be ranked tensor of signless integer values}}
  %0 = tv.cross_entropy %l, %y : tensor<4x16xf32>, tensor<4xf32> -> tensor<f32>
}

// -----

tv.spec @s {
  %l = tv.input "l" : tensor<4x16xf32>
  %y = tv.input "y" : tensor<4xi64>
  // expected-error @+1 {{'tv.cross_entropy' op result #0 must be ranked tensor of floating-point values}}
  %0 = tv.cross_entropy %l, %y : tensor<4x16xf32>, tensor<4xi64> -> tensor<i64>
}

// -----

// target_logit
tv.spec @s {
  %l = tv.input "l" : tensor<4x8x2xf32>
  %y = tv.input "y" : tensor<4xi64>
  // expected-error @+1 {{'tv.target_logit' op logits must have rank 2 ([n, vocab])}}
  %0 = tv.target_logit %l, %y : tensor<4x8x2xf32>, tensor<4xi64> -> tensor<4xf32>
}

// -----

tv.spec @s {
  %l = tv.input "l" : tensor<4x8xf32>
  %y = tv.input "y" : tensor<3xi64>
  // expected-error @+1 {{'tv.target_logit' op labels has shape [3], expected [4]}}
  %0 = tv.target_logit %l, %y : tensor<4x8xf32>, tensor<3xi64> -> tensor<4xf32>
}

// -----

tv.spec @s {
  %l = tv.input "l" : tensor<4x8xf32>
  %y = tv.input "y" : tensor<4xi64>
  // expected-error @+1 {{'tv.target_logit' op has a vocab_axis but runs on one device (not in a plan)}}
  %0 = tv.target_logit %l, %y {vocab_axis = "tp"} : tensor<4x8xf32>, tensor<4xi64> -> tensor<4xf32>
}

// -----

tv.spec @s {
  %y = tv.input "y" : tensor<4xi64>
  %g = tv.input "g" : tensor<2xf32>
  // expected-error @+1 {{'tv.target_logit_grad' op grad has shape [2], expected [4]}}
  %0 = tv.target_logit_grad %y, %g : tensor<4xi64>, tensor<2xf32> -> tensor<4x8xf32>
}

// -----

tv.spec @s {
  %y = tv.input "y" : tensor<4xi64>
  %g = tv.input "g" : tensor<4xf32>
  // expected-error @+1 {{'tv.target_logit_grad' op takes either vocab_axis or vocab_offset}}
  %0 = tv.target_logit_grad %y, %g {vocab_axis = "tp", vocab_offset = 0} : tensor<4xi64>, tensor<4xf32> -> tensor<4x8xf32>
}

// -----

// vocab_mask
tv.spec @s {
  // expected-error @+1 {{'tv.vocab_mask' op vocab_size must be positive}}
  %0 = tv.vocab_mask {vocab_size = 0 : i64} : tensor<4x8xi1>
}

// -----

tv.spec @s {
  // expected-error @+1 {{'tv.vocab_mask' op result must have rank 2 ([n, vocab])}}
  %0 = tv.vocab_mask {vocab_size = 6 : i64} : tensor<8xi1>
}

// -----

tv.spec @s {
  // expected-error @+1 {{'tv.vocab_mask' op has a vocab_axis but runs on one device (not in a plan)}}
  %0 = tv.vocab_mask {vocab_size = 6 : i64, vocab_axis = "tp"} : tensor<4x8xi1>
}

// -----

// causal_mask with query_axis
tv.spec @s {
  // expected-error @+1 {{'tv.causal_mask' op has a query_axis but runs on one device (not in a plan)}}
  %0 = tv.causal_mask {query_axis = "cp"} : tensor<4x8xi1>
}

// -----

tv.mesh @m axes ["cp"] sizes [2]
tv.plan @p mesh @m micro_batches 1 {
  tv.rank_program [0, 1] {
    // expected-error @+1 {{'tv.causal_mask' op query_axis 'tp' is not an axis of mesh @m}}
    %0 = tv.causal_mask {query_axis = "tp"} : tensor<4x8xi1>
  }
}

// -----

tv.mesh @m axes ["cp"] sizes [4]
tv.plan @p mesh @m micro_batches 1 {
  tv.rank_program [0, 1, 2, 3] {
    // expected-error @+1 {{'tv.causal_mask' op has 8 keys, expected the 4 query blocks of axis 'cp' (16)}}
    %0 = tv.causal_mask {query_axis = "cp"} : tensor<4x8xi1>
  }
}

// -----

tv.spec @s {
  // expected-error @+1 {{'tv.causal_mask' op takes query_chunks, key_chunks and chunk_size together}}
  %0 = tv.causal_mask {query_chunks = array<i64: 0, 3>} : tensor<4x4xi1>
}

// -----

tv.spec @s {
  // expected-error @+1 {{'tv.causal_mask' op chunks of 2 do not make its shape [4, 6]}}
  %0 = tv.causal_mask {query_chunks = array<i64: 0, 3>, key_chunks = array<i64: 1, 2>, chunk_size = 2} : tensor<4x6xi1>
}

// -----

tv.spec @s {
  // expected-error @+1 {{'tv.causal_mask' op chunk indices must not be negative}}
  %0 = tv.causal_mask {query_chunks = array<i64: 0, -1>, key_chunks = array<i64: 1, 2>, chunk_size = 2} : tensor<4x4xi1>
}

// RUN: tv-opt %s --split-input-file --verify-diagnostics

// Invalid backward (VJP) ops.

// unary grads: operand and result types must agree
tv.spec @s {
  %x = tv.input "x" : tensor<2x4xf32>
  %dy = tv.input "dy" : tensor<4x2xf32>
  // expected-error @+1 {{'tv.exp_grad' op requires the same type for all operands and results}}
  %0 = "tv.exp_grad"(%x, %dy) : (tensor<2x4xf32>, tensor<4x2xf32>) -> tensor<2x4xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<2x4xf32>
  %dy = tv.input "dy" : tensor<4x2xf32>
  // expected-error @+1 {{'tv.log_grad' op requires the same type for all operands and results}}
  %0 = "tv.log_grad"(%x, %dy) : (tensor<2x4xf32>, tensor<4x2xf32>) -> tensor<2x4xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<2x4xf32>
  %dy = tv.input "dy" : tensor<4x2xf32>
  // expected-error @+1 {{'tv.sqrt_grad' op requires the same type for all operands and results}}
  %0 = "tv.sqrt_grad"(%x, %dy) : (tensor<2x4xf32>, tensor<4x2xf32>) -> tensor<2x4xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<2x4xf32>
  %dy = tv.input "dy" : tensor<4x2xf32>
  // expected-error @+1 {{'tv.rsqrt_grad' op requires the same type for all operands and results}}
  %0 = "tv.rsqrt_grad"(%x, %dy) : (tensor<2x4xf32>, tensor<4x2xf32>) -> tensor<2x4xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<2x4xf32>
  %dy = tv.input "dy" : tensor<4x2xf32>
  // expected-error @+1 {{'tv.sigmoid_grad' op requires the same type for all operands and results}}
  %0 = "tv.sigmoid_grad"(%x, %dy) : (tensor<2x4xf32>, tensor<4x2xf32>) -> tensor<2x4xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<2x4xf32>
  %dy = tv.input "dy" : tensor<4x2xf32>
  // expected-error @+1 {{'tv.mul_grad' op requires the same type for all operands and results}}
  %0:2 = "tv.mul_grad"(%x, %x, %dy) : (tensor<2x4xf32>, tensor<2x4xf32>, tensor<4x2xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>)
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<2x4xf32>
  %dy = tv.input "dy" : tensor<4x2xf32>
  // expected-error @+1 {{'tv.silu_grad' op requires the same type for all operands and results}}
  %0 = "tv.silu_grad"(%x, %dy) : (tensor<2x4xf32>, tensor<4x2xf32>) -> tensor<2x4xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<2x4xf32>
  %dy = tv.input "dy" : tensor<4x2xf32>
  // expected-error @+1 {{'tv.gelu_grad' op requires the same type for all operands and results}}
  %0 = "tv.gelu_grad"(%x, %dy) : (tensor<2x4xf32>, tensor<4x2xf32>) -> tensor<2x4xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<2x4xf32>
  %dy = tv.input "dy" : tensor<4x2xf32>
  // expected-error @+1 {{'tv.relu_grad' op requires the same type for all operands and results}}
  %0 = "tv.relu_grad"(%x, %dy) : (tensor<2x4xf32>, tensor<4x2xf32>) -> tensor<2x4xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<2x4xf32>
  %dy = tv.input "dy" : tensor<4x2xf32>
  // expected-error @+1 {{'tv.tanh_grad' op requires the same type for all operands and results}}
  %0 = "tv.tanh_grad"(%x, %dy) : (tensor<2x4xf32>, tensor<4x2xf32>) -> tensor<2x4xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<2x4xi64>
  // expected-error @+1 {{'tv.exp_grad' op operand #0 must be ranked tensor of floating-point values}}
  %0 = tv.exp_grad %x, %x : tensor<2x4xi64>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<2x4xi64>
  // expected-error @+1 {{'tv.log_grad' op operand #0 must be ranked tensor of floating-point values}}
  %0 = tv.log_grad %x, %x : tensor<2x4xi64>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<2x4xi64>
  // expected-error @+1 {{'tv.sqrt_grad' op operand #0 must be ranked tensor of floating-point values}}
  %0 = tv.sqrt_grad %x, %x : tensor<2x4xi64>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<2x4xi64>
  // expected-error @+1 {{'tv.rsqrt_grad' op operand #0 must be ranked tensor of floating-point values}}
  %0 = tv.rsqrt_grad %x, %x : tensor<2x4xi64>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<2x4xi64>
  // expected-error @+1 {{'tv.sigmoid_grad' op operand #0 must be ranked tensor of floating-point values}}
  %0 = tv.sigmoid_grad %x, %x : tensor<2x4xi64>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<2x4xi64>
  // expected-error @+1 {{'tv.silu_grad' op operand #0 must be ranked tensor of floating-point values}}
  %0 = tv.silu_grad %x, %x : tensor<2x4xi64>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<2x4xi64>
  // expected-error @+1 {{'tv.gelu_grad' op operand #0 must be ranked tensor of floating-point values}}
  %0 = tv.gelu_grad %x, %x : tensor<2x4xi64>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<2x4xi64>
  // expected-error @+1 {{'tv.relu_grad' op operand #0 must be ranked tensor of floating-point values}}
  %0 = tv.relu_grad %x, %x : tensor<2x4xi64>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<2x4xi64>
  // expected-error @+1 {{'tv.tanh_grad' op operand #0 must be ranked tensor of floating-point values}}
  %0 = tv.tanh_grad %x, %x : tensor<2x4xi64>
}

// -----

// pow_grad
tv.spec @s {
  %x = tv.input "x" : tensor<2x4xf32>
  // expected-error @+1 {{'tv.pow_grad' op requires the same type for all operands and results}}
  %0 = "tv.pow_grad"(%x, %x) <{exponent = 2.0 : f64}> : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf16>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<2x4xi64>
  // expected-error @+1 {{'tv.pow_grad' op operand #0 must be ranked tensor of floating-point values}}
  %0 = tv.pow_grad %x, %x exponent 2.0 : tensor<2x4xi64>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<2x4xf32>
  // expected-error @+1 {{'tv.pow_grad' op attribute 'exponent' failed to satisfy constraint: 64-bit float attribute}}
  %0 = "tv.pow_grad"(%x, %x) <{exponent = 2.0 : f16}> : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
}

// -----

// softmax_grad
tv.spec @s {
  %y = tv.input "y" : tensor<2x4xf32>
  // expected-error @+1 {{'tv.softmax_grad' op dim 2 is out of range for rank 2}}
  %0 = tv.softmax_grad %y, %y dim 2 : tensor<2x4xf32>
}

// -----

tv.spec @s {
  %y = tv.input "y" : tensor<2x4xf32>
  // expected-error @+1 {{'tv.softmax_grad' op dim -1 is out of range for rank 2}}
  %0 = tv.softmax_grad %y, %y dim -1 : tensor<2x4xf32>
}

// -----

tv.spec @s {
  %y = tv.input "y" : tensor<2x4xf32>
  %dy = tv.input "dy" : tensor<8xf32>
  // expected-error @+1 {{'tv.softmax_grad' op requires the same type for all operands and results}}
  %0 = "tv.softmax_grad"(%y, %dy) <{dim = 0 : i64}> : (tensor<2x4xf32>, tensor<8xf32>) -> tensor<2x4xf32>
}

// -----

// layernorm_grad
tv.spec @s {
  %x = tv.input "x" : tensor<f32>
  %g = tv.input "g" : tensor<1xf32>
  // expected-error @+1 {{'tv.layernorm_grad' op input must have rank at least 1}}
  %0:3 = tv.layernorm_grad %x, %g, %x eps 1.0e-5 : tensor<f32>, tensor<1xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<2x4x8xf32>
  %g = tv.input "g" : tensor<4xf32>
  // expected-error @+1 {{'tv.layernorm_grad' op gamma has shape [4], expected [8]}}
  %0:3 = tv.layernorm_grad %x, %g, %x eps 1.0e-5 : tensor<2x4x8xf32>, tensor<4xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<2x4x8xf32>
  %g = tv.input "g" : tensor<8xf32>
  %dy = tv.input "dy" : tensor<4x8xf32>
  // expected-error @+1 {{'tv.layernorm_grad' op failed to verify that all of {input, grad, dinput} have same type}}
  %0:3 = "tv.layernorm_grad"(%x, %g, %dy) <{eps = 1.0e-5 : f64}> : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<4x8xf32>) -> (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>)
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<2x4x8xf32>
  %g = tv.input "g" : tensor<8xf32>
  // expected-error @+1 {{'tv.layernorm_grad' op failed to verify that all of {gamma, dgamma, dbeta} have same type}}
  %0:3 = "tv.layernorm_grad"(%x, %g, %x) <{eps = 1.0e-5 : f64}> : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<8xf32>, tensor<1x8xf32>)
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<2x4x8xi64>
  %g = tv.input "g" : tensor<8xf32>
  // expected-error @+1 {{'tv.layernorm_grad' op operand #0 must be ranked tensor of floating-point values}}
  %0:3 = tv.layernorm_grad %x, %g, %x eps 1.0e-5 : tensor<2x4x8xi64>, tensor<8xf32>
}

// -----

// rmsnorm_grad
tv.spec @s {
  %x = tv.input "x" : tensor<f32>
  %w = tv.input "w" : tensor<1xf32>
  // expected-error @+1 {{'tv.rmsnorm_grad' op input must have rank at least 1}}
  %0:2 = tv.rmsnorm_grad %x, %w, %x eps 1.0e-5 : tensor<f32>, tensor<1xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<2x4x8xf32>
  %w = tv.input "w" : tensor<2x8xf32>
  // expected-error @+1 {{'tv.rmsnorm_grad' op weight has shape [2, 8], expected [8]}}
  %0:2 = tv.rmsnorm_grad %x, %w, %x eps 1.0e-5 : tensor<2x4x8xf32>, tensor<2x8xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<2x4x8xf32>
  %w = tv.input "w" : tensor<8xf32>
  // expected-error @+1 {{'tv.rmsnorm_grad' op failed to verify that all of {input, grad, dinput} have same type}}
  %0:2 = "tv.rmsnorm_grad"(%x, %w, %x) <{eps = 1.0e-5 : f64}> : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<2x4x8xf32>) -> (tensor<2x4x8xf16>, tensor<8xf32>)
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<2x4x8xf32>
  %w = tv.input "w" : tensor<8xf32>
  // expected-error @+1 {{'tv.rmsnorm_grad' op failed to verify that all of {weight, dweight} have same type}}
  %0:2 = "tv.rmsnorm_grad"(%x, %w, %x) <{eps = 1.0e-5 : f64}> : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<4xf32>)
}

// -----

// rotary_grad (the rules of rotary, applied to grad)
tv.spec @s {
  %dy = tv.input "dy" : tensor<8xf32>
  %c = tv.input "c" : tensor<4x4xf32>
  // expected-error @+1 {{'tv.rotary_grad' op input must have rank at least 2 ([..., s, d])}}
  %0 = tv.rotary_grad %dy, %c, %c : tensor<8xf32>, tensor<4x4xf32>, tensor<4x4xf32> -> tensor<8xf32>
}

// -----

tv.spec @s {
  %dy = tv.input "dy" : tensor<4x5xf32>
  %c = tv.input "c" : tensor<4x2xf32>
  // expected-error @+1 {{'tv.rotary_grad' op last dimension 5 must be even (rotated in pairs)}}
  %0 = tv.rotary_grad %dy, %c, %c : tensor<4x5xf32>, tensor<4x2xf32>, tensor<4x2xf32> -> tensor<4x5xf32>
}

// -----

tv.spec @s {
  %dy = tv.input "dy" : tensor<2x4x8xf32>
  %c = tv.input "c" : tensor<8x4xf32>
  %s = tv.input "s" : tensor<4x4xf32>
  // expected-error @+1 {{'tv.rotary_grad' op cos has shape [8, 4], expected [4, 4]}}
  %0 = tv.rotary_grad %dy, %c, %s : tensor<2x4x8xf32>, tensor<8x4xf32>, tensor<4x4xf32> -> tensor<2x4x8xf32>
}

// -----

tv.spec @s {
  %dy = tv.input "dy" : tensor<2x4x8xf32>
  %c = tv.input "c" : tensor<4x4xf32>
  %s = tv.input "s" : tensor<4xf32>
  // expected-error @+1 {{'tv.rotary_grad' op sin has shape [4], expected [4, 4]}}
  %0 = tv.rotary_grad %dy, %c, %s : tensor<2x4x8xf32>, tensor<4x4xf32>, tensor<4xf32> -> tensor<2x4x8xf32>
}

// -----

tv.spec @s {
  %dy = tv.input "dy" : tensor<2x4x8xf32>
  %c = tv.input "c" : tensor<4x4xf32>
  // expected-error @+1 {{'tv.rotary_grad' op result has shape [2, 4, 4], expected [2, 4, 8]}}
  %0 = tv.rotary_grad %dy, %c, %c : tensor<2x4x8xf32>, tensor<4x4xf32>, tensor<4x4xf32> -> tensor<2x4x4xf32>
}

// -----

// embedding_grad
tv.spec @s {
  %ids = tv.input "ids" : tensor<2x4xi64>
  %dy = tv.input "dy" : tensor<2x4x8xf32>
  // expected-error @+1 {{'tv.embedding_grad' op result must have rank 2 ([vocab, hidden])}}
  %0 = tv.embedding_grad %ids, %dy : tensor<2x4xi64>, tensor<2x4x8xf32> -> tensor<16xf32>
}

// -----

tv.spec @s {
  %ids = tv.input "ids" : tensor<2x4xi64>
  %dy = tv.input "dy" : tensor<2x4x8xf32>
  // expected-error @+1 {{'tv.embedding_grad' op grad has shape [2, 4, 8], expected [2, 4, 16]}}
  %0 = tv.embedding_grad %ids, %dy : tensor<2x4xi64>, tensor<2x4x8xf32> -> tensor<16x16xf32>
}

// -----

tv.spec @s {
  %ids = tv.input "ids" : tensor<8xi64>
  %dy = tv.input "dy" : tensor<2x4x8xf32>
  // expected-error @+1 {{'tv.embedding_grad' op grad has shape [2, 4, 8], expected [8, 8]}}
  %0 = tv.embedding_grad %ids, %dy : tensor<8xi64>, tensor<2x4x8xf32> -> tensor<16x8xf32>
}

// -----

tv.spec @s {
  %ids = tv.input "ids" : tensor<2x4xf32>
  %dy = tv.input "dy" : tensor<2x4x8xf32>
  // expected-error @+1 {{'tv.embedding_grad' op operand #0 must be ranked tensor of signless integer values}}
  %0 = tv.embedding_grad %ids, %dy : tensor<2x4xf32>, tensor<2x4x8xf32> -> tensor<16x8xf32>
}

// -----

tv.spec @s {
  %ids = tv.input "ids" : tensor<2x4xi64>
  %dy = tv.input "dy" : tensor<2x4x8xf32>
  // expected-error @+1 {{'tv.embedding_grad' op attribute 'vocab_axis' failed to satisfy constraint: string attribute}}
  %0 = tv.embedding_grad %ids, %dy {vocab_axis = ["tp"]} : tensor<2x4xi64>, tensor<2x4x8xf32> -> tensor<16x8xf32>
}

// -----

// apply_mask_grad (the rules of apply_mask, applied to grad)
tv.spec @s {
  %dy = tv.input "dy" : tensor<4xf32>
  %m = tv.input "m" : tensor<4x4xi1>
  // expected-error @+1 {{'tv.apply_mask_grad' op input must have rank at least 2}}
  %0 = tv.apply_mask_grad %dy, %m : tensor<4xf32>, tensor<4x4xi1> -> tensor<4xf32>
}

// -----

tv.spec @s {
  %dy = tv.input "dy" : tensor<2x4x4xf32>
  %m = tv.input "m" : tensor<4x2xi1>
  // expected-error @+1 {{'tv.apply_mask_grad' op mask has shape [4, 2], expected [4, 4]}}
  %0 = tv.apply_mask_grad %dy, %m : tensor<2x4x4xf32>, tensor<4x2xi1> -> tensor<2x4x4xf32>
}

// -----

tv.spec @s {
  %dy = tv.input "dy" : tensor<2x4x4xf32>
  %m = tv.input "m" : tensor<4x4xi1>
  // expected-error @+1 {{'tv.apply_mask_grad' op result has shape [1, 4, 4], expected [2, 4, 4]}}
  %0 = tv.apply_mask_grad %dy, %m : tensor<2x4x4xf32>, tensor<4x4xi1> -> tensor<1x4x4xf32>
}

// -----

tv.spec @s {
  %dy = tv.input "dy" : tensor<2x4x4xf32>
  %m = tv.input "m" : tensor<4x4xi64>
  // expected-error @+1 {{'tv.apply_mask_grad' op operand #1 must be ranked tensor of 1-bit signless integer values}}
  %0 = tv.apply_mask_grad %dy, %m : tensor<2x4x4xf32>, tensor<4x4xi64> -> tensor<2x4x4xf32>
}

// -----

// cross_entropy_grad
tv.spec @s {
  %l = tv.input "l" : tensor<64xf32>
  %y = tv.input "y" : tensor<4xi64>
  %d = tv.input "d" : tensor<f32>
  // expected-error @+1 {{'tv.cross_entropy_grad' op logits must have rank 2 ([n, vocab])}}
  %0 = tv.cross_entropy_grad %l, %y, %d : tensor<64xf32>, tensor<4xi64>, tensor<f32> -> tensor<64xf32>
}

// -----

tv.spec @s {
  %l = tv.input "l" : tensor<4x16xf32>
  %y = tv.input "y" : tensor<16xi64>
  %d = tv.input "d" : tensor<f32>
  // expected-error @+1 {{'tv.cross_entropy_grad' op labels has shape [16], expected [4]}}
  %0 = tv.cross_entropy_grad %l, %y, %d : tensor<4x16xf32>, tensor<16xi64>, tensor<f32> -> tensor<4x16xf32>
}

// -----

tv.spec @s {
  %l = tv.input "l" : tensor<4x16xf32>
  %y = tv.input "y" : tensor<4xi64>
  %d = tv.input "d" : tensor<1xf32>
  // expected-error @+1 {{'tv.cross_entropy_grad' op grad has shape [1], expected []}}
  %0 = tv.cross_entropy_grad %l, %y, %d : tensor<4x16xf32>, tensor<4xi64>, tensor<1xf32> -> tensor<4x16xf32>
}

// -----

tv.spec @s {
  %l = tv.input "l" : tensor<4x16xf32>
  %y = tv.input "y" : tensor<4xi64>
  %d = tv.input "d" : tensor<f32>
  // expected-error @+1 {{'tv.cross_entropy_grad' op result has shape [4], expected [4, 16]}}
  %0 = tv.cross_entropy_grad %l, %y, %d : tensor<4x16xf32>, tensor<4xi64>, tensor<f32> -> tensor<4xf32>
}

// -----

tv.spec @s {
  %l = tv.input "l" : tensor<4x16xf32>
  %y = tv.input "y" : tensor<4xf32>
  %d = tv.input "d" : tensor<f32>
  // expected-error @+1 {{'tv.cross_entropy_grad' op operand #1 must be ranked tensor of signless integer values}}
  %0 = tv.cross_entropy_grad %l, %y, %d : tensor<4x16xf32>, tensor<4xf32>, tensor<f32> -> tensor<4x16xf32>
}

// -----

// max_grad
tv.spec @s {
  %x = tv.input "x" : tensor<2x4x8xf32>
  %d = tv.input "d" : tensor<2x4x8xf32>
  // expected-error @+1 {{'tv.max_grad' op must reduce at least one dimension}}
  %0 = tv.max_grad %x, %d dims [] : tensor<2x4x8xf32>, tensor<2x4x8xf32> -> tensor<2x4x8xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<2x4x8xf32>
  %d = tv.input "d" : tensor<2x8xf32>
  // expected-error @+1 {{'tv.max_grad' op dims entry 3 is out of range for rank 3}}
  %0 = tv.max_grad %x, %d dims [3] : tensor<2x4x8xf32>, tensor<2x8xf32> -> tensor<2x4x8xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<2x4x8xf32>
  %d = tv.input "d" : tensor<2x8xf32>
  // expected-error @+1 {{'tv.max_grad' op dims entry -2 is out of range for rank 3}}
  %0 = tv.max_grad %x, %d dims [-2] : tensor<2x4x8xf32>, tensor<2x8xf32> -> tensor<2x4x8xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<2x4x8xf32>
  %d = tv.input "d" : tensor<2x8xf32>
  // expected-error @+1 {{'tv.max_grad' op dims lists dimension 1 twice}}
  %0 = tv.max_grad %x, %d dims [1, 1] : tensor<2x4x8xf32>, tensor<2x8xf32> -> tensor<2x4x8xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<2x4x8xf32>
  %d = tv.input "d" : tensor<2x8xf32>
  // expected-error @+1 {{'tv.max_grad' op grad has shape [2, 8], expected [2, 4]}}
  %0 = tv.max_grad %x, %d dims [2] : tensor<2x4x8xf32>, tensor<2x8xf32> -> tensor<2x4x8xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<2x4x8xf32>
  %d = tv.input "d" : tensor<2x8xf32>
  // expected-error @+1 {{'tv.max_grad' op grad has shape [2, 8], expected [2, 1, 8]}}
  %0 = tv.max_grad %x, %d dims [1] {keepdim} : tensor<2x4x8xf32>, tensor<2x8xf32> -> tensor<2x4x8xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<2x4x8xf32>
  %d = tv.input "d" : tensor<2x8xf32>
  // expected-error @+1 {{'tv.max_grad' op result has shape [2, 8], expected [2, 4, 8]}}
  %0 = tv.max_grad %x, %d dims [1] : tensor<2x4x8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<2x4x8xf32>
  %d = tv.input "d" : tensor<2x8xi64>
  // expected-error @+1 {{'tv.max_grad' op operand #1 must be ranked tensor of floating-point values}}
  %0 = tv.max_grad %x, %d dims [1] : tensor<2x4x8xf32>, tensor<2x8xi64> -> tensor<2x4x8xf32>
}

// -----

// slice_grad
tv.spec @s {
  %d = tv.input "d" : tensor<2x8xf32>
  // expected-error @+1 {{'tv.slice_grad' op start, slice and tensor ranks differ (1, 2, 2)}}
  %0 = tv.slice_grad %d start [0] : tensor<2x8xf32> -> tensor<4x8xf32>
}

// -----

tv.spec @s {
  %d = tv.input "d" : tensor<2x8xf32>
  // expected-error @+1 {{'tv.slice_grad' op start, slice and tensor ranks differ (2, 2, 3)}}
  %0 = tv.slice_grad %d start [0, 0] : tensor<2x8xf32> -> tensor<2x2x8xf32>
}

// -----

tv.spec @s {
  %d = tv.input "d" : tensor<2x8xf32>
  // expected-error @+1 {{'tv.slice_grad' op box dimension 0 [3, 5) is outside [0, 4)}}
  %0 = tv.slice_grad %d start [3, 0] : tensor<2x8xf32> -> tensor<4x8xf32>
}

// -----

tv.spec @s {
  %d = tv.input "d" : tensor<2x8xf32>
  // expected-error @+1 {{'tv.slice_grad' op box dimension 1 [-1, 7) is outside [0, 8)}}
  %0 = tv.slice_grad %d start [0, -1] : tensor<2x8xf32> -> tensor<4x8xf32>
}

// -----

tv.spec @s {
  %d = tv.input "d" : tensor<2x8xf32>
  // expected-error @+1 {{'tv.slice_grad' op box dimension 1 [0, 8) is outside [0, 4)}}
  %0 = tv.slice_grad %d start [0, 0] : tensor<2x8xf32> -> tensor<4x4xf32>
}

// -----

tv.spec @s {
  %d = tv.input "d" : tensor<2x8xi64>
  // expected-error @+1 {{'tv.slice_grad' op operand #0 must be ranked tensor of floating-point values}}
  %0 = tv.slice_grad %d start [0, 0] : tensor<2x8xi64> -> tensor<4x8xi64>
}

// -----

// linear_grad
tv.spec @s {
  %x = tv.input "x" : tensor<f32>
  %w = tv.input "w" : tensor<1x1xf32>
  %dy = tv.input "dy" : tensor<1xf32>
  // expected-error @+1 {{'tv.linear_grad' op input must have rank >= 1 and weight rank 2}}
  %0:2 = tv.linear_grad %x, %w, %dy : tensor<f32>, tensor<1x1xf32>, tensor<1xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<2x4x8xf32>
  %w = tv.input "w" : tensor<8xf32>
  %dy = tv.input "dy" : tensor<2x4x16xf32>
  // expected-error @+1 {{'tv.linear_grad' op input must have rank >= 1 and weight rank 2}}
  %0:2 = tv.linear_grad %x, %w, %dy : tensor<2x4x8xf32>, tensor<8xf32>, tensor<2x4x16xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<2x4x8xf32>
  %w = tv.input "w" : tensor<8x16xf32>
  %dy = tv.input "dy" : tensor<2x4x16xf32>
  // expected-error @+1 {{'tv.linear_grad' op input features 8 differ from weight columns 16}}
  %0:2 = tv.linear_grad %x, %w, %dy : tensor<2x4x8xf32>, tensor<8x16xf32>, tensor<2x4x16xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<2x4x8xf32>
  %w = tv.input "w" : tensor<16x8xf32>
  %dy = tv.input "dy" : tensor<2x4x8xf32>
  // expected-error @+1 {{'tv.linear_grad' op grad has shape [2, 4, 8], expected [2, 4, 16]}}
  %0:2 = tv.linear_grad %x, %w, %dy : tensor<2x4x8xf32>, tensor<16x8xf32>, tensor<2x4x8xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<2x4x8xf32>
  %w = tv.input "w" : tensor<16x8xf32>
  %dy = tv.input "dy" : tensor<8x16xf32>
  // expected-error @+1 {{'tv.linear_grad' op grad has shape [8, 16], expected [2, 4, 16]}}
  %0:2 = tv.linear_grad %x, %w, %dy : tensor<2x4x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<2x4x8xf32>
  %w = tv.input "w" : tensor<16x8xf32>
  %dy = tv.input "dy" : tensor<2x4x16xf32>
  // expected-error @+1 {{'tv.linear_grad' op failed to verify that all of {input, dinput} have same type}}
  %0:2 = "tv.linear_grad"(%x, %w, %dy) : (tensor<2x4x8xf32>, tensor<16x8xf32>, tensor<2x4x16xf32>) -> (tensor<8x8xf32>, tensor<16x8xf32>)
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<2x4x8xf32>
  %w = tv.input "w" : tensor<16x8xf32>
  %dy = tv.input "dy" : tensor<2x4x16xf32>
  // expected-error @+1 {{'tv.linear_grad' op failed to verify that all of {weight, dweight} have same type}}
  %0:2 = "tv.linear_grad"(%x, %w, %dy) : (tensor<2x4x8xf32>, tensor<16x8xf32>, tensor<2x4x16xf32>) -> (tensor<2x4x8xf32>, tensor<8x16xf32>)
}

// -----

// topk_gate_grad (no custom verifier)
tv.spec @s {
  %l = tv.input "l" : tensor<4x3xf32>
  // expected-error @+1 {{'tv.topk_gate_grad' op requires the same type for all operands and results}}
  %0 = "tv.topk_gate_grad"(%l, %l) <{k = 1 : i64}> : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<3x4xf32>
}

// -----

tv.spec @s {
  %l = tv.input "l" : tensor<4x3xi64>
  // expected-error @+1 {{'tv.topk_gate_grad' op operand #0 must be ranked tensor of floating-point values}}
  %0 = tv.topk_gate_grad %l, %l k 1 : tensor<4x3xi64>
}

// -----

// dispatch_grad (the result holds the tokens, grad the experts)
tv.spec @s {
  %dy = tv.input "dy" : tensor<3x4x8xf32>
  %g = tv.input "g" : tensor<4x3xf32>
  // expected-error @+1 {{'tv.dispatch_grad' op tokens and gates must have rank 2}}
  %0 = tv.dispatch_grad %dy, %g : tensor<3x4x8xf32>, tensor<4x3xf32> -> tensor<4x8x1xf32>
}

// -----

tv.spec @s {
  %dy = tv.input "dy" : tensor<3x4x8xf32>
  %g = tv.input "g" : tensor<12xf32>
  // expected-error @+1 {{'tv.dispatch_grad' op tokens and gates must have rank 2}}
  %0 = tv.dispatch_grad %dy, %g : tensor<3x4x8xf32>, tensor<12xf32> -> tensor<4x8xf32>
}

// -----

tv.spec @s {
  %dy = tv.input "dy" : tensor<3x4x8xf32>
  %g = tv.input "g" : tensor<2x3xf32>
  // expected-error @+1 {{'tv.dispatch_grad' op gates cover 2 tokens, input has 4}}
  %0 = tv.dispatch_grad %dy, %g : tensor<3x4x8xf32>, tensor<2x3xf32> -> tensor<4x8xf32>
}

// -----

tv.spec @s {
  %dy = tv.input "dy" : tensor<3x4x4xf32>
  %g = tv.input "g" : tensor<4x3xf32>
  // expected-error @+1 {{'tv.dispatch_grad' op expert tensor has shape [3, 4, 4], expected [3, 4, 8]}}
  %0 = tv.dispatch_grad %dy, %g : tensor<3x4x4xf32>, tensor<4x3xf32> -> tensor<4x8xf32>
}

// -----

tv.spec @s {
  %dy = tv.input "dy" : tensor<3x4x8xi64>
  %g = tv.input "g" : tensor<4x3xf32>
  // expected-error @+1 {{'tv.dispatch_grad' op operand #0 must be ranked tensor of floating-point values}}
  %0 = tv.dispatch_grad %dy, %g : tensor<3x4x8xi64>, tensor<4x3xf32> -> tensor<4x8xf32>
}

// -----

// combine_grad (grad holds the tokens, input the experts)
tv.spec @s {
  %e = tv.input "e" : tensor<3x4x8xf32>
  %g = tv.input "g" : tensor<4x3xf32>
  %dy = tv.input "dy" : tensor<32xf32>
  // expected-error @+1 {{'tv.combine_grad' op tokens and gates must have rank 2}}
  %0:2 = tv.combine_grad %e, %g, %dy : tensor<3x4x8xf32>, tensor<4x3xf32>, tensor<32xf32>
}

// -----

tv.spec @s {
  %e = tv.input "e" : tensor<3x4x8xf32>
  %g = tv.input "g" : tensor<2x4x3xf32>
  %dy = tv.input "dy" : tensor<4x8xf32>
  // expected-error @+1 {{'tv.combine_grad' op tokens and gates must have rank 2}}
  %0:2 = tv.combine_grad %e, %g, %dy : tensor<3x4x8xf32>, tensor<2x4x3xf32>, tensor<4x8xf32>
}

// -----

tv.spec @s {
  %e = tv.input "e" : tensor<3x4x8xf32>
  %g = tv.input "g" : tensor<8x3xf32>
  %dy = tv.input "dy" : tensor<4x8xf32>
  // expected-error @+1 {{'tv.combine_grad' op gates cover 8 tokens, input has 4}}
  %0:2 = tv.combine_grad %e, %g, %dy : tensor<3x4x8xf32>, tensor<8x3xf32>, tensor<4x8xf32>
}

// -----

tv.spec @s {
  %e = tv.input "e" : tensor<2x4x8xf32>
  %g = tv.input "g" : tensor<4x3xf32>
  %dy = tv.input "dy" : tensor<4x8xf32>
  // expected-error @+1 {{'tv.combine_grad' op expert tensor has shape [2, 4, 8], expected [3, 4, 8]}}
  %0:2 = tv.combine_grad %e, %g, %dy : tensor<2x4x8xf32>, tensor<4x3xf32>, tensor<4x8xf32>
}

// -----

tv.spec @s {
  %e = tv.input "e" : tensor<3x4x8xf32>
  %g = tv.input "g" : tensor<4x3xf32>
  %dy = tv.input "dy" : tensor<4x8xf32>
  // expected-error @+1 {{'tv.combine_grad' op failed to verify that all of {input, dinput} have same type}}
  %0:2 = "tv.combine_grad"(%e, %g, %dy) : (tensor<3x4x8xf32>, tensor<4x3xf32>, tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x3xf32>)
}

// -----

tv.spec @s {
  %e = tv.input "e" : tensor<3x4x8xf32>
  %g = tv.input "g" : tensor<4x3xf32>
  %dy = tv.input "dy" : tensor<4x8xf32>
  // expected-error @+1 {{'tv.combine_grad' op failed to verify that all of {gates, dgates} have same type}}
  %0:2 = "tv.combine_grad"(%e, %g, %dy) : (tensor<3x4x8xf32>, tensor<4x3xf32>, tensor<4x8xf32>) -> (tensor<3x4x8xf32>, tensor<3x4xf32>)
}

// -----

// logsumexp
tv.spec @s {
  %x = tv.input "x" : tensor<2x4x8xf32>
  // expected-error @+1 {{'tv.logsumexp' op result has shape [2, 8], expected [2, 4]}}
  %0 = tv.logsumexp %x dims [2] : tensor<2x4x8xf32> -> tensor<2x8xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<2x4x8xf32>
  // expected-error @+1 {{'tv.logsumexp' op must reduce at least one dimension}}
  %0 = tv.logsumexp %x dims [] : tensor<2x4x8xf32> -> tensor<2x4x8xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<2x4x8xf32>
  %dy = tv.input "dy" : tensor<2x4xf32>
  // expected-error @+1 {{'tv.logsumexp_grad' op grad has shape [2, 4], expected [2, 8]}}
  %0 = tv.logsumexp_grad %x, %dy dims [1] : tensor<2x4x8xf32>, tensor<2x4xf32> -> tensor<2x4x8xf32>
}

// RUN: tv-opt %s --split-input-file --verify-diagnostics

// Invalid mixture-of-experts ops: topk_gate, dispatch, combine.

// topk_gate
tv.spec @s {
  %l = tv.input "l" : tensor<2x4x3xf32>
  // expected-error @+1 {{'tv.topk_gate' op logits must have rank 2 ([tokens, experts])}}
  %0 = tv.topk_gate %l k 1 : tensor<2x4x3xf32>
}

// -----

tv.spec @s {
  %l = tv.input "l" : tensor<3xf32>
  // expected-error @+1 {{'tv.topk_gate' op logits must have rank 2 ([tokens, experts])}}
  %0 = tv.topk_gate %l k 1 : tensor<3xf32>
}

// -----

tv.spec @s {
  %l = tv.input "l" : tensor<4x3xf32>
  // expected-error @+1 {{'tv.topk_gate' op k = 0 must be in [1, 3]}}
  %0 = tv.topk_gate %l k 0 : tensor<4x3xf32>
}

// -----

tv.spec @s {
  %l = tv.input "l" : tensor<4x3xf32>
  // expected-error @+1 {{'tv.topk_gate' op k = 4 must be in [1, 3]}}
  %0 = tv.topk_gate %l k 4 : tensor<4x3xf32>
}

// -----

tv.spec @s {
  %l = tv.input "l" : tensor<4x3xf32>
  // expected-error @+1 {{'tv.topk_gate' op requires the same type for all operands and results}}
  %0 = "tv.topk_gate"(%l) <{k = 1 : i64}> : (tensor<4x3xf32>) -> tensor<4x1xf32>
}

// -----

tv.spec @s {
  %l = tv.input "l" : tensor<4x3xi64>
  // expected-error @+1 {{'tv.topk_gate' op operand #0 must be ranked tensor of floating-point values}}
  %0 = tv.topk_gate %l k 1 : tensor<4x3xi64>
}

// -----

// dispatch
tv.spec @s {
  %x = tv.input "x" : tensor<2x4x8xf32>
  %g = tv.input "g" : tensor<4x3xf32>
  // expected-error @+1 {{'tv.dispatch' op tokens and gates must have rank 2}}
  %0 = tv.dispatch %x, %g : tensor<2x4x8xf32>, tensor<4x3xf32> -> tensor<3x4x8xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<4x8xf32>
  %g = tv.input "g" : tensor<12xf32>
  // expected-error @+1 {{'tv.dispatch' op tokens and gates must have rank 2}}
  %0 = tv.dispatch %x, %g : tensor<4x8xf32>, tensor<12xf32> -> tensor<3x4x8xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<4x8xf32>
  %g = tv.input "g" : tensor<2x3xf32>
  // expected-error @+1 {{'tv.dispatch' op gates cover 2 tokens, input has 4}}
  %0 = tv.dispatch %x, %g : tensor<4x8xf32>, tensor<2x3xf32> -> tensor<3x4x8xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<4x8xf32>
  %g = tv.input "g" : tensor<4x3xf32>
  // expected-error @+1 {{'tv.dispatch' op expert tensor has shape [4, 3, 8], expected [3, 4, 8]}}
  %0 = tv.dispatch %x, %g : tensor<4x8xf32>, tensor<4x3xf32> -> tensor<4x3x8xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<4x8xf32>
  %g = tv.input "g" : tensor<4x3xf32>
  // expected-error @+1 {{'tv.dispatch' op expert tensor has shape [3, 32], expected [3, 4, 8]}}
  %0 = tv.dispatch %x, %g : tensor<4x8xf32>, tensor<4x3xf32> -> tensor<3x32xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<4x8xf32>
  %g = tv.input "g" : tensor<4x3xi1>
  // expected-error @+1 {{'tv.dispatch' op operand #1 must be ranked tensor of floating-point values}}
  %0 = tv.dispatch %x, %g : tensor<4x8xf32>, tensor<4x3xi1> -> tensor<3x4x8xf32>
}

// -----

// combine (the result holds the tokens)
tv.spec @s {
  %e = tv.input "e" : tensor<3x4x8xf32>
  %g = tv.input "g" : tensor<4x3xf32>
  // expected-error @+1 {{'tv.combine' op tokens and gates must have rank 2}}
  %0 = tv.combine %e, %g : tensor<3x4x8xf32>, tensor<4x3xf32> -> tensor<4x8x1xf32>
}

// -----

tv.spec @s {
  %e = tv.input "e" : tensor<3x4x8xf32>
  %g = tv.input "g" : tensor<4x3x1xf32>
  // expected-error @+1 {{'tv.combine' op tokens and gates must have rank 2}}
  %0 = tv.combine %e, %g : tensor<3x4x8xf32>, tensor<4x3x1xf32> -> tensor<4x8xf32>
}

// -----

tv.spec @s {
  %e = tv.input "e" : tensor<3x4x8xf32>
  %g = tv.input "g" : tensor<5x3xf32>
  // expected-error @+1 {{'tv.combine' op gates cover 5 tokens, input has 4}}
  %0 = tv.combine %e, %g : tensor<3x4x8xf32>, tensor<5x3xf32> -> tensor<4x8xf32>
}

// -----

tv.spec @s {
  %e = tv.input "e" : tensor<2x4x8xf32>
  %g = tv.input "g" : tensor<4x3xf32>
  // expected-error @+1 {{'tv.combine' op expert tensor has shape [2, 4, 8], expected [3, 4, 8]}}
  %0 = tv.combine %e, %g : tensor<2x4x8xf32>, tensor<4x3xf32> -> tensor<4x8xf32>
}

// -----

tv.spec @s {
  %e = tv.input "e" : tensor<3x4x8xf32>
  %g = tv.input "g" : tensor<4x3xf32>
  // expected-error @+1 {{'tv.combine' op expert tensor has shape [3, 4, 8], expected [3, 4, 16]}}
  %0 = tv.combine %e, %g : tensor<3x4x8xf32>, tensor<4x3xf32> -> tensor<4x16xf32>
}

// -----

tv.spec @s {
  %e = tv.input "e" : tensor<3x4x8xi64>
  %g = tv.input "g" : tensor<4x3xf32>
  // expected-error @+1 {{'tv.combine' op operand #0 must be ranked tensor of floating-point values}}
  %0 = tv.combine %e, %g : tensor<3x4x8xi64>, tensor<4x3xf32> -> tensor<4x8xf32>
}

// RUN: tv-opt %s --split-input-file --verify-diagnostics

// Invalid routed-expert ops: moe_gate, moe_gmm and their backward ops.

tv.spec @s {
  %x = tv.input "x" : tensor<3x4xf32>
  %r = tv.input "r" : tensor<8x5xf32>
  // expected-error @+1 {{'tv.moe_gate' op router weight has hidden size 5, tokens have 4}}
  %w, %i = tv.moe_gate %x, %r sigmoid k 2 groups 4 keep 2 scale 2.5 : tensor<3x4xf32>, tensor<8x5xf32> -> tensor<3x2xf32>, tensor<3x2xi64>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<3x4xf32>
  %r = tv.input "r" : tensor<8x4xf32>
  // expected-error @+1 {{'tv.moe_gate' op n_groups 3 must divide the 8 experts}}
  %w, %i = tv.moe_gate %x, %r sigmoid k 2 groups 3 keep 2 scale 2.5 : tensor<3x4xf32>, tensor<8x4xf32> -> tensor<3x2xf32>, tensor<3x2xi64>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<3x4xf32>
  %r = tv.input "r" : tensor<8x4xf32>
  // expected-error @+1 {{'tv.moe_gate' op topk_groups 5 must be in [1, 4]}}
  %w, %i = tv.moe_gate %x, %r sigmoid k 2 groups 4 keep 5 scale 2.5 : tensor<3x4xf32>, tensor<8x4xf32> -> tensor<3x2xf32>, tensor<3x2xi64>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<3x4xf32>
  %r = tv.input "r" : tensor<8x4xf32>
  // expected-error @+1 {{'tv.moe_gate' op k = 5 must be in [1, 4] (the experts of the kept groups)}}
  %w, %i = tv.moe_gate %x, %r sigmoid k 5 groups 4 keep 2 scale 2.5 : tensor<3x4xf32>, tensor<8x4xf32> -> tensor<3x5xf32>, tensor<3x5xi64>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<3x4xf32>
  %r = tv.input "r" : tensor<8x4xf32>
  // expected-error @+1 {{'tv.moe_gate' op indices has shape [3, 3], expected [3, 2]}}
  %w, %i = tv.moe_gate %x, %r sigmoid k 2 groups 4 keep 2 scale 2.5 : tensor<3x4xf32>, tensor<8x4xf32> -> tensor<3x2xf32>, tensor<3x3xi64>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<3x4xf32>
  %r = tv.input "r" : tensor<8x4xf32>
  %g = tv.input "g" : tensor<3x3xf32>
  // expected-error @+1 {{'tv.moe_gate_grad' op grad has shape [3, 3], expected [3, 2]}}
  %dx, %dr = tv.moe_gate_grad %x, %r, %g sigmoid k 2 groups 4 keep 2 scale 2.5 : tensor<3x4xf32>, tensor<8x4xf32>, tensor<3x3xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<3x4xf32>
  %i = tv.input "i" : tensor<2x2xi64>
  %w = tv.input "w" : tensor<2x2xf32>
  %w1 = tv.input "w1" : tensor<4x2x4xf32>
  %w3 = tv.input "w3" : tensor<4x2x4xf32>
  %w2 = tv.input "w2" : tensor<4x4x2xf32>
  // expected-error @+1 {{'tv.moe_gmm' op indices cover 2 tokens, input has 3}}
  %y = tv.moe_gmm %x, %i, %w, %w1, %w3, %w2 experts from 0 : tensor<3x4xf32>, tensor<2x2xi64>, tensor<2x2xf32>, tensor<4x2x4xf32>, tensor<4x2x4xf32>, tensor<4x4x2xf32> -> tensor<3x4xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<3x4xf32>
  %i = tv.input "i" : tensor<3x2xi64>
  %w = tv.input "w" : tensor<3x2xf32>
  %w1 = tv.input "w1" : tensor<4x2x4xf32>
  %w3 = tv.input "w3" : tensor<4x2x4xf32>
  %w2 = tv.input "w2" : tensor<4x2x4xf32>
  // expected-error @+1 {{'tv.moe_gmm' op w2 has shape [4, 2, 4], expected [4, 4, 2]}}
  %y = tv.moe_gmm %x, %i, %w, %w1, %w3, %w2 experts from 0 : tensor<3x4xf32>, tensor<3x2xi64>, tensor<3x2xf32>, tensor<4x2x4xf32>, tensor<4x2x4xf32>, tensor<4x2x4xf32> -> tensor<3x4xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<3x4xf32>
  %i = tv.input "i" : tensor<3x2xi64>
  %w = tv.input "w" : tensor<3x2xf32>
  %w1 = tv.input "w1" : tensor<4x2x5xf32>
  %w3 = tv.input "w3" : tensor<4x2x5xf32>
  %w2 = tv.input "w2" : tensor<4x5x2xf32>
  // expected-error @+1 {{'tv.moe_gmm' op w1 must be [experts, ffn, 4], got [4, 2, 5]}}
  %y = tv.moe_gmm %x, %i, %w, %w1, %w3, %w2 experts from 0 : tensor<3x4xf32>, tensor<3x2xi64>, tensor<3x2xf32>, tensor<4x2x5xf32>, tensor<4x2x5xf32>, tensor<4x5x2xf32> -> tensor<3x4xf32>
}

// -----

tv.spec @s {
  %g = tv.input "g" : tensor<3x4xf32>
  %x = tv.input "x" : tensor<3x4xf32>
  %i = tv.input "i" : tensor<3x2xi64>
  %w = tv.input "w" : tensor<3x2xf32>
  %w1 = tv.input "w1" : tensor<4x2x4xf32>
  %w3 = tv.input "w3" : tensor<4x2x4xf32>
  %w2 = tv.input "w2" : tensor<4x4x2xf32>
  // expected-error @+1 {{'tv.moe_gmm_grad' op expert_start -1 is negative}}
  %a, %b, %c, %d, %e = tv.moe_gmm_grad %g, %x, %i, %w, %w1, %w3, %w2 experts from -1 : tensor<3x4xf32>, tensor<3x2xi64>, tensor<3x2xf32>, tensor<4x2x4xf32>, tensor<4x2x4xf32>, tensor<4x4x2xf32>
}

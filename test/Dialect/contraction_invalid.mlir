// RUN: tv-opt %s --split-input-file --verify-diagnostics

// Invalid contractions and reductions: matmul, linear, sum, mean, max.

// matmul
tv.spec @s {
  %a = tv.input "a" : tensor<8xf32>
  %b = tv.input "b" : tensor<8x4xf32>
  // expected-error @+1 {{'tv.matmul' op operands must have rank at least 2}}
  %0 = tv.matmul %a, %b : tensor<8xf32>, tensor<8x4xf32> -> tensor<4xf32>
}

// -----

tv.spec @s {
  %a = tv.input "a" : tensor<4x8xf32>
  %b = tv.input "b" : tensor<8xf32>
  // expected-error @+1 {{'tv.matmul' op operands must have rank at least 2}}
  %0 = tv.matmul %a, %b : tensor<4x8xf32>, tensor<8xf32> -> tensor<4xf32>
}

// -----

tv.spec @s {
  %a = tv.input "a" : tensor<2x3x4x8xf32>
  %b = tv.input "b" : tensor<3x8x4xf32>
  // expected-error @+1 {{'tv.matmul' op rhs must have rank 2 or the rank of lhs (4), got 3}}
  %0 = tv.matmul %a, %b : tensor<2x3x4x8xf32>, tensor<3x8x4xf32> -> tensor<2x3x4x4xf32>
}

// -----

tv.spec @s {
  %a = tv.input "a" : tensor<4x8xf32>
  %b = tv.input "b" : tensor<2x8x4xf32>
  // expected-error @+1 {{'tv.matmul' op rhs must have rank 2 or the rank of lhs (2), got 3}}
  %0 = tv.matmul %a, %b : tensor<4x8xf32>, tensor<2x8x4xf32> -> tensor<2x4x4xf32>
}

// -----

tv.spec @s {
  %a = tv.input "a" : tensor<4x8xf32>
  %b = tv.input "b" : tensor<4x16xf32>
  // expected-error @+1 {{'tv.matmul' op contracted dimensions differ: 8 vs 4}}
  %0 = tv.matmul %a, %b : tensor<4x8xf32>, tensor<4x16xf32> -> tensor<4x16xf32>
}

// -----

// transpose_lhs makes dimension 0 of lhs the contracted one.
tv.spec @s {
  %a = tv.input "a" : tensor<4x8xf32>
  %b = tv.input "b" : tensor<8x16xf32>
  // expected-error @+1 {{'tv.matmul' op contracted dimensions differ: 4 vs 8}}
  %0 = tv.matmul %a, %b {transpose_lhs} : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<8x16xf32>
}

// -----

// transpose_rhs makes dimension 1 of rhs the contracted one.
tv.spec @s {
  %a = tv.input "a" : tensor<4x8xf32>
  %b = tv.input "b" : tensor<8x16xf32>
  // expected-error @+1 {{'tv.matmul' op contracted dimensions differ: 8 vs 16}}
  %0 = tv.matmul %a, %b {transpose_rhs} : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x8xf32>
}

// -----

tv.spec @s {
  %a = tv.input "a" : tensor<2x4x8xf32>
  %b = tv.input "b" : tensor<3x8x4xf32>
  // expected-error @+1 {{'tv.matmul' op batch dimensions differ: [2] vs [3]}}
  %0 = tv.matmul %a, %b : tensor<2x4x8xf32>, tensor<3x8x4xf32> -> tensor<2x4x4xf32>
}

// -----

tv.spec @s {
  %a = tv.input "a" : tensor<4x8xf32>
  %b = tv.input "b" : tensor<8x16xf32>
  // expected-error @+1 {{'tv.matmul' op result has shape [4, 8], expected [4, 16]}}
  %0 = tv.matmul %a, %b : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x8xf32>
}

// -----

tv.spec @s {
  %a = tv.input "a" : tensor<2x4x8xf32>
  %b = tv.input "b" : tensor<8x16xf32>
  // expected-error @+1 {{'tv.matmul' op result has shape [4, 16], expected [2, 4, 16]}}
  %0 = tv.matmul %a, %b : tensor<2x4x8xf32>, tensor<8x16xf32> -> tensor<4x16xf32>
}

// -----

tv.spec @s {
  %a = tv.input "a" : tensor<8x4xf32>
  %b = tv.input "b" : tensor<16x8xf32>
  // expected-error @+1 {{'tv.matmul' op result has shape [8, 8], expected [4, 16]}}
  %0 = tv.matmul %a, %b {transpose_lhs, transpose_rhs} : tensor<8x4xf32>, tensor<16x8xf32> -> tensor<8x8xf32>
}

// -----

tv.spec @s {
  %a = tv.input "a" : tensor<4x8xi64>
  %b = tv.input "b" : tensor<8x4xf32>
  // expected-error @+1 {{'tv.matmul' op operands and result must share one element type when one is an integer}}
  %0 = tv.matmul %a, %b : tensor<4x8xi64>, tensor<8x4xf32> -> tensor<4x4xf32>
}

// -----

tv.spec @s {
  %a = tv.input "a" : tensor<4x8xf32>
  %b = tv.input "b" : tensor<8x4xi64>
  // expected-error @+1 {{'tv.matmul' op operands and result must share one element type when one is an integer}}
  %0 = tv.matmul %a, %b : tensor<4x8xf32>, tensor<8x4xi64> -> tensor<4x4xf32>
}

// -----

tv.spec @s {
  %a = tv.input "a" : tensor<4x8xf32>
  %b = tv.input "b" : tensor<8x4xf32>
  // expected-error @+1 {{'tv.matmul' op operands and result must share one element type when one is an integer}}
  %0 = tv.matmul %a, %b : tensor<4x8xf32>, tensor<8x4xf32> -> tensor<4x4xi64>
}

// -----

// linear
tv.spec @s {
  %x = tv.input "x" : tensor<f32>
  %w = tv.input "w" : tensor<4x1xf32>
  // expected-error @+1 {{'tv.linear' op input must have rank at least 1}}
  %0 = tv.linear %x, %w : (tensor<f32>, tensor<4x1xf32>) -> tensor<4xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<2x8xf32>
  %w = tv.input "w" : tensor<8xf32>
  // expected-error @+1 {{'tv.linear' op weight must have rank 2, got 1}}
  %0 = tv.linear %x, %w : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<2x8xf32>
  %w = tv.input "w" : tensor<1x16x8xf32>
  // expected-error @+1 {{'tv.linear' op weight must have rank 2, got 3}}
  %0 = tv.linear %x, %w : (tensor<2x8xf32>, tensor<1x16x8xf32>) -> tensor<2x16xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<2x8xf32>
  %w = tv.input "w" : tensor<8x4xf32>
  // expected-error @+1 {{'tv.linear' op input features 8 differ from weight columns 4}}
  %0 = tv.linear %x, %w : (tensor<2x8xf32>, tensor<8x4xf32>) -> tensor<2x8xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<2x8xf32>
  %w = tv.input "w" : tensor<16x8xf32>
  %b = tv.input "b" : tensor<8xf32>
  // expected-error @+1 {{'tv.linear' op bias has shape [8], expected [16]}}
  %0 = tv.linear %x, %w, %b : (tensor<2x8xf32>, tensor<16x8xf32>, tensor<8xf32>) -> tensor<2x16xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<2x8xf32>
  %w = tv.input "w" : tensor<16x8xf32>
  %b = tv.input "b" : tensor<1x16xf32>
  // expected-error @+1 {{'tv.linear' op bias has shape [1, 16], expected [16]}}
  %0 = tv.linear %x, %w, %b : (tensor<2x8xf32>, tensor<16x8xf32>, tensor<1x16xf32>) -> tensor<2x16xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<2x4x8xf32>
  %w = tv.input "w" : tensor<16x8xf32>
  // expected-error @+1 {{'tv.linear' op result has shape [2, 16], expected [2, 4, 16]}}
  %0 = tv.linear %x, %w : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x16xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<8xf32>
  %w = tv.input "w" : tensor<16x8xf32>
  %b = tv.input "b" : tensor<16xf32>
  // expected-error @+1 {{'tv.linear' op result has shape [1, 16], expected [16]}}
  %0 = tv.linear %x, %w, %b : (tensor<8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<1x16xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<2x8xi64>
  %w = tv.input "w" : tensor<16x8xf32>
  // expected-error @+1 {{'tv.linear' op operand #0 must be ranked tensor of floating-point values}}
  %0 = tv.linear %x, %w : (tensor<2x8xi64>, tensor<16x8xf32>) -> tensor<2x16xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<2x8xf32>
  %w = tv.input "w" : tensor<16x8xf32>
  %b = tv.input "b" : tensor<16xi64>
  // expected-error @+1 {{'tv.linear' op operand #2 must be ranked tensor of floating-point values}}
  %0 = tv.linear %x, %w, %b : (tensor<2x8xf32>, tensor<16x8xf32>, tensor<16xi64>) -> tensor<2x16xf32>
}

// -----

// sum
tv.spec @s {
  %x = tv.input "x" : tensor<2x4x8xf32>
  // expected-error @+1 {{'tv.sum' op must reduce at least one dimension}}
  %0 = tv.sum %x dims [] : tensor<2x4x8xf32> -> tensor<2x4x8xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<2x4x8xf32>
  // expected-error @+1 {{'tv.sum' op dims entry 3 is out of range for rank 3}}
  %0 = tv.sum %x dims [0, 3] : tensor<2x4x8xf32> -> tensor<4xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<2x4x8xf32>
  // expected-error @+1 {{'tv.sum' op dims entry -1 is out of range for rank 3}}
  %0 = tv.sum %x dims [-1] : tensor<2x4x8xf32> -> tensor<2x4xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<2x4x8xf32>
  // expected-error @+1 {{'tv.sum' op dims lists dimension 1 twice}}
  %0 = tv.sum %x dims [1, 2, 1] : tensor<2x4x8xf32> -> tensor<2xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<2x4x8xf32>
  // expected-error @+1 {{'tv.sum' op result has shape [2, 4], expected [2, 8]}}
  %0 = tv.sum %x dims [1] : tensor<2x4x8xf32> -> tensor<2x4xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<2x4x8xf32>
  // expected-error @+1 {{'tv.sum' op result has shape [2, 8], expected [2, 1, 8]}}
  %0 = tv.sum %x dims [1] {keepdim} : tensor<2x4x8xf32> -> tensor<2x8xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<2x4xi64>
  // expected-error @+1 {{'tv.sum' op operands and result must share one element type when one is an integer}}
  %0 = tv.sum %x dims [1] : tensor<2x4xi64> -> tensor<2xi32>
}

// -----

// mean
tv.spec @s {
  %x = tv.input "x" : tensor<2x4x8xf32>
  // expected-error @+1 {{'tv.mean' op must reduce at least one dimension}}
  %0 = tv.mean %x dims [] : tensor<2x4x8xf32> -> tensor<2x4x8xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<2x4x8xf32>
  // expected-error @+1 {{'tv.mean' op dims entry 3 is out of range for rank 3}}
  %0 = tv.mean %x dims [0, 3] : tensor<2x4x8xf32> -> tensor<4xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<2x4x8xf32>
  // expected-error @+1 {{'tv.mean' op dims entry -1 is out of range for rank 3}}
  %0 = tv.mean %x dims [-1] : tensor<2x4x8xf32> -> tensor<2x4xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<2x4x8xf32>
  // expected-error @+1 {{'tv.mean' op dims lists dimension 1 twice}}
  %0 = tv.mean %x dims [1, 2, 1] : tensor<2x4x8xf32> -> tensor<2xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<2x4x8xf32>
  // expected-error @+1 {{'tv.mean' op result has shape [2, 4], expected [2, 8]}}
  %0 = tv.mean %x dims [1] : tensor<2x4x8xf32> -> tensor<2x4xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<2x4x8xf32>
  // expected-error @+1 {{'tv.mean' op result has shape [2, 8], expected [2, 1, 8]}}
  %0 = tv.mean %x dims [1] {keepdim} : tensor<2x4x8xf32> -> tensor<2x8xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<2x4xi64>
  // expected-error @+1 {{'tv.mean' op operand #0 must be ranked tensor of floating-point values}}
  %0 = tv.mean %x dims [1] : tensor<2x4xi64> -> tensor<2xi64>
}

// -----

// max
tv.spec @s {
  %x = tv.input "x" : tensor<2x4x8xf32>
  // expected-error @+1 {{'tv.max' op must reduce at least one dimension}}
  %0 = tv.max %x dims [] : tensor<2x4x8xf32> -> tensor<2x4x8xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<2x4x8xf32>
  // expected-error @+1 {{'tv.max' op dims entry 3 is out of range for rank 3}}
  %0 = tv.max %x dims [0, 3] : tensor<2x4x8xf32> -> tensor<4xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<2x4x8xf32>
  // expected-error @+1 {{'tv.max' op dims entry -1 is out of range for rank 3}}
  %0 = tv.max %x dims [-1] : tensor<2x4x8xf32> -> tensor<2x4xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<2x4x8xf32>
  // expected-error @+1 {{'tv.max' op dims lists dimension 1 twice}}
  %0 = tv.max %x dims [1, 2, 1] : tensor<2x4x8xf32> -> tensor<2xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<2x4x8xf32>
  // expected-error @+1 {{'tv.max' op result has shape [2, 4], expected [2, 8]}}
  %0 = tv.max %x dims [1] : tensor<2x4x8xf32> -> tensor<2x4xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<2x4x8xf32>
  // expected-error @+1 {{'tv.max' op result has shape [2, 8], expected [2, 1, 8]}}
  %0 = tv.max %x dims [1] {keepdim} : tensor<2x4x8xf32> -> tensor<2x8xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<2x4xi64>
  // expected-error @+1 {{'tv.max' op operand #0 must be ranked tensor of floating-point values}}
  %0 = tv.max %x dims [1] : tensor<2x4xi64> -> tensor<2xi64>
}

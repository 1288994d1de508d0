// RUN: tv-opt %s --split-input-file --verify-diagnostics

// Invalid elementwise ops: add, sub, mul, div (broadcasting and result
// shape), the *_scalar ops, scale, pow, the unary ops and copy.

tv.spec @s {
  %a = tv.input "a" : tensor<2x3xf32>
  %b = tv.input "b" : tensor<4xf32>
  // expected-error @+1 {{'tv.add' op operands of shapes [2, 3] and [4] do not broadcast}}
  %0 = tv.add %a, %b : tensor<2x3xf32>, tensor<4xf32> -> tensor<2x3xf32>
}

// -----

tv.spec @s {
  %a = tv.input "a" : tensor<2x3xf32>
  %b = tv.input "b" : tensor<4xf32>
  // expected-error @+1 {{'tv.sub' op operands of shapes [2, 3] and [4] do not broadcast}}
  %0 = tv.sub %a, %b : tensor<2x3xf32>, tensor<4xf32> -> tensor<2x3xf32>
}

// -----

tv.spec @s {
  %a = tv.input "a" : tensor<2x3xf32>
  %b = tv.input "b" : tensor<4xf32>
  // expected-error @+1 {{'tv.mul' op operands of shapes [2, 3] and [4] do not broadcast}}
  %0 = tv.mul %a, %b : tensor<2x3xf32>, tensor<4xf32> -> tensor<2x3xf32>
}

// -----

tv.spec @s {
  %a = tv.input "a" : tensor<2x3xf32>
  %b = tv.input "b" : tensor<4xf32>
  // expected-error @+1 {{'tv.div' op operands of shapes [2, 3] and [4] do not broadcast}}
  %0 = tv.div %a, %b : tensor<2x3xf32>, tensor<4xf32> -> tensor<2x3xf32>
}

// -----

tv.spec @s {
  %a = tv.input "a" : tensor<4x1xf32>
  %b = tv.input "b" : tensor<3x8xf32>
  // expected-error @+1 {{'tv.add' op operands of shapes [4, 1] and [3, 8] do not broadcast}}
  %0 = tv.add %a, %b : tensor<4x1xf32>, tensor<3x8xf32> -> tensor<4x8xf32>
}

// -----

tv.spec @s {
  %a = tv.input "a" : tensor<4x1xf32>
  %b = tv.input "b" : tensor<8xf32>
  // expected-error @+1 {{'tv.add' op result has shape [4, 1], expected [4, 8]}}
  %0 = tv.add %a, %b : tensor<4x1xf32>, tensor<8xf32> -> tensor<4x1xf32>
}

// -----

tv.spec @s {
  %a = tv.input "a" : tensor<4x1xf32>
  %b = tv.input "b" : tensor<8xf32>
  // expected-error @+1 {{'tv.sub' op result has shape [8], expected [4, 8]}}
  %0 = tv.sub %a, %b : tensor<4x1xf32>, tensor<8xf32> -> tensor<8xf32>
}

// -----

tv.spec @s {
  %a = tv.input "a" : tensor<4x1xf32>
  %b = tv.input "b" : tensor<8xf32>
  // expected-error @+1 {{'tv.mul' op result has shape [1, 4, 8], expected [4, 8]}}
  %0 = tv.mul %a, %b : tensor<4x1xf32>, tensor<8xf32> -> tensor<1x4x8xf32>
}

// -----

tv.spec @s {
  %a = tv.input "a" : tensor<4x1xf32>
  %b = tv.input "b" : tensor<8xf32>
  // expected-error @+1 {{'tv.div' op result has shape [8, 4], expected [4, 8]}}
  %0 = tv.div %a, %b : tensor<4x1xf32>, tensor<8xf32> -> tensor<8x4xf32>
}

// -----

tv.spec @s {
  %a = tv.input "a" : tensor<f32>
  // expected-error @+1 {{'tv.mul' op result has shape [1], expected []}}
  %0 = tv.mul %a, %a : tensor<f32>, tensor<f32> -> tensor<1xf32>
}

// -----

tv.spec @s {
  %a = tv.input "a" : tensor<4xi64>
  %b = tv.input "b" : tensor<4xf32>
  // expected-error @+1 {{'tv.add' op operands and result must share one element type when one is an integer}}
  %0 = tv.add %a, %b : tensor<4xi64>, tensor<4xf32> -> tensor<4xf32>
}

// -----

tv.spec @s {
  %a = tv.input "a" : tensor<4xf32>
  %b = tv.input "b" : tensor<4xi1>
  // expected-error @+1 {{'tv.mul' op operands and result must share one element type when one is an integer}}
  %0 = tv.mul %a, %b : tensor<4xf32>, tensor<4xi1> -> tensor<4xf32>
}

// -----

tv.spec @s {
  %a = tv.input "a" : tensor<4xf32>
  // expected-error @+1 {{'tv.div' op result #0 must be ranked tensor of floating-point values}}
  %0 = tv.div %a, %a : tensor<4xf32>, tensor<4xf32> -> tensor<4xi64>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<4xf32>
  // expected-error @+1 {{'tv.div_scalar' op divides by zero}}
  %0 = tv.div_scalar %x, 0.0 : tensor<4xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<4xf32>
  // expected-error @+1 {{'tv.div_scalar' op divides by zero}}
  %0 = tv.div_scalar %x, -0.0 : tensor<4xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<4xi64>
  // expected-error @+1 {{'tv.add_scalar' op the scalar of an integer tensor must be an integer below 2^53, not 2.5}}
  %0 = tv.add_scalar %x, 2.5 : tensor<4xi64>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<4xi1>
  // expected-error @+1 {{'tv.sub_scalar' op takes integers of at least 2 bits, not masks}}
  %0 = tv.sub_scalar %x, 2.0 : tensor<4xi1>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<4xi64>
  // expected-error @+1 {{'tv.rsub_scalar' op the scalar of an integer tensor must be an integer below 2^53, not 10000000000000000.00}}
  %0 = tv.rsub_scalar %x, 1.0e16 : tensor<4xi64>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<4xi64>
  // expected-error @+1 {{'tv.div_scalar' op operand #0 must be ranked tensor of floating-point values}}
  %0 = tv.div_scalar %x, 2.0 : tensor<4xi64>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<4xi64>
  // expected-error @+1 {{'tv.scale' op the scalar of an integer tensor must be an integer below 2^53, not 0.5}}
  %0 = tv.scale %x, 0.5 : tensor<4xi64>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<4xi64>
  // expected-error @+1 {{'tv.pow' op operand #0 must be ranked tensor of floating-point values}}
  %0 = tv.pow %x, 2.0 : tensor<4xi64>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<4xf32>
  // expected-error @+1 {{'tv.add_scalar' op requires the same type for all operands and results}}
  %0 = "tv.add_scalar"(%x) <{scalar = 2.0 : f64}> : (tensor<4xf32>) -> tensor<8xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<4xf32>
  // expected-error @+1 {{'tv.sub_scalar' op requires the same type for all operands and results}}
  %0 = "tv.sub_scalar"(%x) <{scalar = 2.0 : f64}> : (tensor<4xf32>) -> tensor<8xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<4xf32>
  // expected-error @+1 {{'tv.rsub_scalar' op requires the same type for all operands and results}}
  %0 = "tv.rsub_scalar"(%x) <{scalar = 2.0 : f64}> : (tensor<4xf32>) -> tensor<8xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<4xf32>
  // expected-error @+1 {{'tv.div_scalar' op requires the same type for all operands and results}}
  %0 = "tv.div_scalar"(%x) <{scalar = 2.0 : f64}> : (tensor<4xf32>) -> tensor<8xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<4xf32>
  // expected-error @+1 {{'tv.scale' op requires the same type for all operands and results}}
  %0 = "tv.scale"(%x) <{scalar = 2.0 : f64}> : (tensor<4xf32>) -> tensor<8xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<4xf32>
  // expected-error @+1 {{'tv.pow' op requires the same type for all operands and results}}
  %0 = "tv.pow"(%x) <{scalar = 2.0 : f64}> : (tensor<4xf32>) -> tensor<8xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<4xf32>
  // expected-error @+1 {{'tv.scale' op requires the same type for all operands and results}}
  %0 = "tv.scale"(%x) <{scalar = 2.0 : f64}> : (tensor<4xf32>) -> tensor<4xf16>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<4xf32>
  // expected-error @+1 {{'tv.scale' op attribute 'scalar' failed to satisfy constraint: 64-bit float attribute}}
  %0 = "tv.scale"(%x) <{scalar = 2.0 : f32}> : (tensor<4xf32>) -> tensor<4xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<4xi1>
  // expected-error @+1 {{'tv.neg' op takes integers of at least 2 bits, not masks}}
  %0 = tv.neg %x : tensor<4xi1>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<4xi64>
  // expected-error @+1 {{'tv.exp' op operand #0 must be ranked tensor of floating-point values}}
  %0 = tv.exp %x : tensor<4xi64>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<4xi64>
  // expected-error @+1 {{'tv.log' op operand #0 must be ranked tensor of floating-point values}}
  %0 = tv.log %x : tensor<4xi64>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<4xi64>
  // expected-error @+1 {{'tv.sqrt' op operand #0 must be ranked tensor of floating-point values}}
  %0 = tv.sqrt %x : tensor<4xi64>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<4xi64>
  // expected-error @+1 {{'tv.rsqrt' op operand #0 must be ranked tensor of floating-point values}}
  %0 = tv.rsqrt %x : tensor<4xi64>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<4xi64>
  // expected-error @+1 {{'tv.sigmoid' op operand #0 must be ranked tensor of floating-point values}}
  %0 = tv.sigmoid %x : tensor<4xi64>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<4xi64>
  // expected-error @+1 {{'tv.silu' op operand #0 must be ranked tensor of floating-point values}}
  %0 = tv.silu %x : tensor<4xi64>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<4xi64>
  // expected-error @+1 {{'tv.gelu' op operand #0 must be ranked tensor of floating-point values}}
  %0 = tv.gelu %x : tensor<4xi64>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<4xi64>
  // expected-error @+1 {{'tv.relu' op operand #0 must be ranked tensor of floating-point values}}
  %0 = tv.relu %x : tensor<4xi64>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<4xi64>
  // expected-error @+1 {{'tv.tanh' op operand #0 must be ranked tensor of floating-point values}}
  %0 = tv.tanh %x : tensor<4xi64>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<4xf32>
  // expected-error @+1 {{'tv.neg' op requires the same type for all operands and results}}
  %0 = "tv.neg"(%x) : (tensor<4xf32>) -> tensor<2x2xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<4xf32>
  // expected-error @+1 {{'tv.exp' op requires the same type for all operands and results}}
  %0 = "tv.exp"(%x) : (tensor<4xf32>) -> tensor<2x2xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<4xf32>
  // expected-error @+1 {{'tv.log' op requires the same type for all operands and results}}
  %0 = "tv.log"(%x) : (tensor<4xf32>) -> tensor<2x2xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<4xf32>
  // expected-error @+1 {{'tv.sqrt' op requires the same type for all operands and results}}
  %0 = "tv.sqrt"(%x) : (tensor<4xf32>) -> tensor<2x2xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<4xf32>
  // expected-error @+1 {{'tv.rsqrt' op requires the same type for all operands and results}}
  %0 = "tv.rsqrt"(%x) : (tensor<4xf32>) -> tensor<2x2xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<4xf32>
  // expected-error @+1 {{'tv.sigmoid' op requires the same type for all operands and results}}
  %0 = "tv.sigmoid"(%x) : (tensor<4xf32>) -> tensor<2x2xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<4xf32>
  // expected-error @+1 {{'tv.silu' op requires the same type for all operands and results}}
  %0 = "tv.silu"(%x) : (tensor<4xf32>) -> tensor<2x2xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<4xf32>
  // expected-error @+1 {{'tv.gelu' op requires the same type for all operands and results}}
  %0 = "tv.gelu"(%x) : (tensor<4xf32>) -> tensor<2x2xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<4xf32>
  // expected-error @+1 {{'tv.relu' op requires the same type for all operands and results}}
  %0 = "tv.relu"(%x) : (tensor<4xf32>) -> tensor<2x2xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<4xf32>
  // expected-error @+1 {{'tv.tanh' op requires the same type for all operands and results}}
  %0 = "tv.tanh"(%x) : (tensor<4xf32>) -> tensor<2x2xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<4xf32>
  // expected-error @+1 {{'tv.copy' op requires the same type for all operands and results}}
  %0 = "tv.copy"(%x) : (tensor<4xf32>) -> tensor<4xi64>
}

// -----

tv.spec @s {
  %x = builtin.unrealized_conversion_cast to tensor<4xui8>
  // expected-error @+1 {{'tv.copy' op operand #0 must be ranked tensor of floating-point or signless integer values}}
  %0 = tv.copy %x : tensor<4xui8>
}

// -----

tv.spec @s {
  %x = builtin.unrealized_conversion_cast to tensor<4xcomplex<f32>>
  // expected-error @+1 {{'tv.copy' op operand #0 must be ranked tensor of floating-point or signless integer values}}
  %0 = tv.copy %x : tensor<4xcomplex<f32>>
}

// -----

tv.spec @s {
  // expected-error @+1 {{'tv.iota' op dim 2 is not a dimension of a rank-2 result}}
  %0 = tv.iota dim 2 offset 0 : tensor<2x3xf32>
}

// -----

tv.spec @s {
  // expected-error @+1 {{'tv.iota' op positions 16777215 to 16777218 are not exact in f32}}
  %0 = tv.iota dim 1 offset 16777215 : tensor<2x3xf32>
}

// -----

tv.spec @s {
  // expected-error @+1 {{'tv.iota' op dim -1 is not a dimension of a rank-2 result}}
  %0 = tv.iota dim -1 offset 0 : tensor<2x3xf32>
}

// -----

tv.spec @s {
  // expected-error @+1 {{'tv.iota' op offset -2 is negative}}
  %0 = tv.iota dim 0 offset -2 : tensor<2x3xf32>
}

// -----

tv.spec @s {
  // expected-error @+1 {{'tv.zeros' op result #0 must be ranked tensor of floating-point values, but got 'tensor<2x3xi32>'}}
  %0 = tv.zeros : tensor<2x3xi32>
}

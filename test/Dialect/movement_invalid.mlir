// RUN: tv-opt %s --split-input-file --verify-diagnostics

// Invalid data-movement ops: reshape, transpose, slice, concat, broadcast.

// reshape
tv.spec @s {
  %x = tv.input "x" : tensor<4x8xf32>
  // expected-error @+1 {{'tv.reshape' op changes the element count: [4, 8] to [4, 4]}}
  %0 = tv.reshape %x : tensor<4x8xf32> -> tensor<4x4xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<f32>
  // expected-error @+1 {{'tv.reshape' op changes the element count: [] to [2]}}
  %0 = tv.reshape %x : tensor<f32> -> tensor<2xf32>
}

// -----

tv.spec @s {
  %x = builtin.unrealized_conversion_cast to tensor<4xcomplex<f32>>
  // expected-error @+1 {{'tv.reshape' op operand #0 must be ranked tensor of floating-point or signless integer values}}
  %0 = tv.reshape %x : tensor<4xcomplex<f32>> -> tensor<2x2xcomplex<f32>>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<4x8xf32>
  // expected-error @+1 {{'tv.reshape' op result #0 must be ranked tensor of floating-point or signless integer values}}
  %0 = tv.reshape %x : tensor<4x8xf32> -> tensor<32xui32>
}

// -----

// transpose
tv.spec @s {
  %x = tv.input "x" : tensor<4x8xf32>
  // expected-error @+1 {{'tv.transpose' op perm has 1 entries for rank 2}}
  %0 = tv.transpose %x perm [0] : tensor<4x8xf32> -> tensor<4xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<4x8xf32>
  // expected-error @+1 {{'tv.transpose' op perm has 3 entries for rank 2}}
  %0 = tv.transpose %x perm [1, 0, 2] : tensor<4x8xf32> -> tensor<8x4xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<4x8xf32>
  // expected-error @+1 {{'tv.transpose' op perm entry 2 is out of range for rank 2}}
  %0 = tv.transpose %x perm [2, 0] : tensor<4x8xf32> -> tensor<8x4xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<4x8xf32>
  // expected-error @+1 {{'tv.transpose' op perm entry -1 is out of range for rank 2}}
  %0 = tv.transpose %x perm [0, -1] : tensor<4x8xf32> -> tensor<4x8xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<4x8xf32>
  // expected-error @+1 {{'tv.transpose' op perm lists dimension 1 twice}}
  %0 = tv.transpose %x perm [1, 1] : tensor<4x8xf32> -> tensor<8x8xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<4x8xf32>
  // expected-error @+1 {{'tv.transpose' op result has shape [4, 8], expected [8, 4]}}
  %0 = tv.transpose %x perm [1, 0] : tensor<4x8xf32> -> tensor<4x8xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<4x8xf32>
  // expected-error @+1 {{'tv.transpose' op result #0 must be ranked tensor of floating-point or signless integer values}}
  %0 = tv.transpose %x perm [1, 0] : tensor<4x8xf32> -> tensor<8x4xindex>
}

// -----

// slice
tv.spec @s {
  %x = tv.input "x" : tensor<4x8xf32>
  // expected-error @+1 {{'tv.slice' op start, slice and tensor ranks differ (1, 2, 2)}}
  %0 = tv.slice %x start [0] : tensor<4x8xf32> -> tensor<2x2xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<4x8xf32>
  // expected-error @+1 {{'tv.slice' op start, slice and tensor ranks differ (2, 1, 2)}}
  %0 = tv.slice %x start [0, 0] : tensor<4x8xf32> -> tensor<2xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<4x8xf32>
  // expected-error @+1 {{'tv.slice' op box dimension 1 [6, 10) is outside [0, 8)}}
  %0 = tv.slice %x start [0, 6] : tensor<4x8xf32> -> tensor<4x4xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<4x8xf32>
  // expected-error @+1 {{'tv.slice' op box dimension 0 [-1, 1) is outside [0, 4)}}
  %0 = tv.slice %x start [-1, 0] : tensor<4x8xf32> -> tensor<2x8xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<4x8xf32>
  // expected-error @+1 {{'tv.slice' op box dimension 0 [0, 5) is outside [0, 4)}}
  %0 = tv.slice %x start [0, 0] : tensor<4x8xf32> -> tensor<5x8xf32>
}

// -----

tv.spec @s {
  %x = builtin.unrealized_conversion_cast to tensor<4xui8>
  // expected-error @+1 {{'tv.slice' op operand #0 must be ranked tensor of floating-point or signless integer values}}
  %0 = tv.slice %x start [0] : tensor<4xui8> -> tensor<2xui8>
}

// -----

// concat
tv.spec @s {
  // expected-error @+1 {{'tv.concat' op needs at least one input}}
  %0 = tv.concat dim 0 : () -> tensor<4xf32>
}

// -----

tv.spec @s {
  %a = tv.input "a" : tensor<4x8xf32>
  // expected-error @+1 {{'tv.concat' op dim 2 is out of range for rank 2}}
  %0 = tv.concat %a, %a dim 2 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8x2xf32>
}

// -----

tv.spec @s {
  %a = tv.input "a" : tensor<4x8xf32>
  // expected-error @+1 {{'tv.concat' op dim -1 is out of range for rank 2}}
  %0 = tv.concat %a, %a dim -1 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x16xf32>
}

// -----

tv.spec @s {
  %a = tv.input "a" : tensor<4x8xf32>
  %b = tv.input "b" : tensor<8xf32>
  // expected-error @+1 {{'tv.concat' op inputs have different ranks}}
  %0 = tv.concat %a, %b dim 1 : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x16xf32>
}

// -----

tv.spec @s {
  %a = tv.input "a" : tensor<4x8xf32>
  %b = tv.input "b" : tensor<2x4xf32>
  // expected-error @+1 {{'tv.concat' op inputs differ in dimension 1: 4 vs 8}}
  %0 = tv.concat %a, %b dim 0 : (tensor<4x8xf32>, tensor<2x4xf32>) -> tensor<6x8xf32>
}

// -----

tv.spec @s {
  %a = tv.input "a" : tensor<4x8xf32>
  %b = tv.input "b" : tensor<2x8xf32>
  // expected-error @+1 {{'tv.concat' op result has shape [4, 8], expected [6, 8]}}
  %0 = tv.concat %a, %b dim 0 : (tensor<4x8xf32>, tensor<2x8xf32>) -> tensor<4x8xf32>
}

// -----

tv.spec @s {
  %a = tv.input "a" : tensor<4x8xf32>
  // expected-error @+1 {{'tv.concat' op result has shape [8, 8], expected [4, 16]}}
  %0 = tv.concat %a, %a dim 1 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
}

// -----

tv.spec @s {
  %a = tv.input "a" : tensor<4xf32>
  %b = builtin.unrealized_conversion_cast to tensor<4xui8>
  // expected-error @+1 {{'tv.concat' op operand #1 must be variadic of ranked tensor of floating-point or signless integer values}}
  %0 = tv.concat %a, %b dim 0 : (tensor<4xf32>, tensor<4xui8>) -> tensor<8xf32>
}

// -----

// broadcast
tv.spec @s {
  %x = tv.input "x" : tensor<3xf32>
  // expected-error @+1 {{'tv.broadcast' op cannot broadcast [3] to [4, 4]}}
  %0 = tv.broadcast %x : tensor<3xf32> -> tensor<4x4xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<2x4xf32>
  // expected-error @+1 {{'tv.broadcast' op cannot broadcast [2, 4] to [4]}}
  %0 = tv.broadcast %x : tensor<2x4xf32> -> tensor<4xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<4xf32>
  // expected-error @+1 {{'tv.broadcast' op cannot broadcast [4] to [1]}}
  %0 = tv.broadcast %x : tensor<4xf32> -> tensor<1xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<4x1xf32>
  // expected-error @+1 {{'tv.broadcast' op cannot broadcast [4, 1] to [1, 8]}}
  %0 = tv.broadcast %x : tensor<4x1xf32> -> tensor<1x8xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<4xf32>
  // expected-error @+1 {{'tv.broadcast' op result #0 must be ranked tensor of floating-point or signless integer values}}
  %0 = tv.broadcast %x : tensor<4xf32> -> tensor<2x4xui16>
}

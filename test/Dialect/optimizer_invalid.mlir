// RUN: tv-opt %s --split-input-file --verify-diagnostics

// Invalid optimizer ops: sgd, adam. Neither has a custom verifier; these are
// the ODS constraints (types, required attributes).

// sgd
tv.spec @s {
  %w = tv.input "w" : tensor<4x8xf32>
  %g = tv.input "g" : tensor<8x4xf32>
  // expected-error @+1 {{'tv.sgd' op requires the same type for all operands and results}}
  %0 = "tv.sgd"(%w, %g) <{lr = 1.0e-3 : f64}> : (tensor<4x8xf32>, tensor<8x4xf32>) -> tensor<4x8xf32>
}

// -----

tv.spec @s {
  %w = tv.input "w" : tensor<4x8xf32>
  // expected-error @+1 {{'tv.sgd' op requires the same type for all operands and results}}
  %0 = "tv.sgd"(%w, %w) <{lr = 1.0e-3 : f64}> : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf16>
}

// -----

tv.spec @s {
  %w = tv.input "w" : tensor<4xi64>
  // expected-error @+1 {{'tv.sgd' op operand #0 must be ranked tensor of floating-point values}}
  %0 = tv.sgd %w, %w lr 1.0e-3 : tensor<4xi64>
}

// -----

tv.spec @s {
  %w = tv.input "w" : tensor<4x8xf32>
  // expected-error @+1 {{'tv.sgd' op requires attribute 'lr'}}
  %0 = "tv.sgd"(%w, %w) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
}

// -----

tv.spec @s {
  %w = tv.input "w" : tensor<4x8xf32>
  // expected-error @+1 {{'tv.sgd' op attribute 'lr' failed to satisfy constraint: 64-bit float attribute}}
  %0 = "tv.sgd"(%w, %w) <{lr = 1.0e-3 : f32}> : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
}

// -----

// adam
tv.spec @s {
  %w = tv.input "w" : tensor<4x8xf32>
  %g = tv.input "g" : tensor<4x8xf32>
  %m = tv.input "m" : tensor<4x8xf32>
  %v = tv.input "v" : tensor<8x4xf32>
  // expected-error @+1 {{'tv.adam' op failed to verify that all of {weight, grad, m, v, new_weight, new_m, new_v} have same type}}
  %0:3 = "tv.adam"(%w, %g, %m, %v) <{lr = 1.0e-3 : f64, beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-8 : f64, step = 1 : i64}> : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<8x4xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>)
}

// -----

tv.spec @s {
  %w = tv.input "w" : tensor<4x8xf32>
  // expected-error @+1 {{'tv.adam' op failed to verify that all of {weight, grad, m, v, new_weight, new_m, new_v} have same type}}
  %0:3 = "tv.adam"(%w, %w, %w, %w) <{lr = 1.0e-3 : f64, beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-8 : f64, step = 1 : i64}> : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf16>, tensor<4x8xf32>)
}

// -----

tv.spec @s {
  %w = tv.input "w" : tensor<4xi64>
  // expected-error @+1 {{'tv.adam' op operand #0 must be ranked tensor of floating-point values}}
  %0:3 = tv.adam %w, %w, %w, %w {lr = 1.0e-3, beta1 = 0.9, beta2 = 0.999, eps = 1.0e-8, step = 1} : tensor<4xi64>
}

// -----

tv.spec @s {
  %w = tv.input "w" : tensor<4x8xf32>
  // expected-error @+1 {{'tv.adam' op requires attribute 'step'}}
  %0:3 = tv.adam %w, %w, %w, %w {lr = 1.0e-3, beta1 = 0.9, beta2 = 0.999, eps = 1.0e-8} : tensor<4x8xf32>
}

// -----

tv.spec @s {
  %w = tv.input "w" : tensor<4x8xf32>
  // expected-error @+1 {{'tv.adam' op requires attribute 'beta1'}}
  %0:3 = tv.adam %w, %w, %w, %w {lr = 1.0e-3, beta2 = 0.999, eps = 1.0e-8, step = 1} : tensor<4x8xf32>
}

// -----

tv.spec @s {
  %w = tv.input "w" : tensor<4x8xf32>
  // expected-error @+1 {{'tv.adam' op attribute 'step' failed to satisfy constraint: 64-bit signless integer attribute}}
  %0:3 = tv.adam %w, %w, %w, %w {lr = 1.0e-3, beta1 = 0.9, beta2 = 0.999, eps = 1.0e-8, step = 1.0} : tensor<4x8xf32>
}

// -----

tv.spec @s {
  %w = tv.input "w" : tensor<4x8xf32>
  // expected-error @+1 {{'tv.adam' op attribute 'eps' failed to satisfy constraint: 64-bit float attribute}}
  %0:3 = tv.adam %w, %w, %w, %w {lr = 1.0e-3, beta1 = 0.9, beta2 = 0.999, eps = 1, step = 1} : tensor<4x8xf32>
}

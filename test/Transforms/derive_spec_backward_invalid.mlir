// RUN: tv-opt %s --split-input-file --tv-derive-spec-backward --verify-diagnostics -o /dev/null
// What --tv-derive-spec-backward cannot check it refuses by name.

// expected-error @+1 {{the module has no tv.spec whose backward to check}}
module {
  tv.mesh @mesh axes ["r"] sizes [1]
}

// -----

// A gradient output named, but no cotangent input for any output.
// expected-error @+1 {{spec backward not checked: no spec input is the cotangent of a spec output}}
tv.spec @spec {
  %x = tv.input "x" : tensor<2xf32>
  %y = tv.exp %x : tensor<2xf32>
  tv.output "y", %y : tensor<2xf32>
}

// -----

// A cotangent, but no output named as the gradient of a forward input.
// expected-error @+1 {{spec backward not checked: no spec output is named as the gradient of a forward input}}
tv.spec @spec {
  %x = tv.input "x" : tensor<2xf32>
  %dy = tv.input "dy" : tensor<2xf32>
  %y = tv.exp %x : tensor<2xf32>
  tv.output "y", %y : tensor<2xf32>
  %g = tv.exp_grad %x, %dy : tensor<2xf32>
  tv.output "grad_of_x", %g : tensor<2xf32>
}

// -----

// The seeded output reads its own cotangent.
// expected-error @+1 {{spec backward not checked: a seeded output depends on a cotangent input}}
tv.spec @spec {
  %x = tv.input "x" : tensor<2xf32>
  %dy = tv.input "dy" : tensor<2xf32>
  %y = tv.mul %x, %dy : tensor<2xf32>, tensor<2xf32> -> tensor<2xf32>
  tv.output "y", %y : tensor<2xf32>
  tv.output "dx", %dy : tensor<2xf32>
}

// -----

// A gradient claimed for token ids.
tv.spec @spec {
  %ids = tv.input "ids" : tensor<2xi64>
  %t = tv.input "t" : tensor<4x2xf32>
  %dy = tv.input "dy" : tensor<2x2xf32>
  %y = tv.embedding %ids, %t : tensor<2xi64>, tensor<4x2xf32> -> tensor<2x2xf32>
  tv.output "y", %y : tensor<2x2xf32>
  %g = tv.embedding_grad %ids, %dy : tensor<2xi64>, tensor<2x2xf32> -> tensor<4x2xf32>
  tv.output "dt", %g : tensor<4x2xf32>
  // expected-error @+1 {{spec backward not checked: 'dids' is named as the gradient of 'ids', which holds no real numbers (ids or a mask)}}
  %c = tv.copy %dy : tensor<2x2xf32>
  tv.output "dids", %c : tensor<2x2xf32>
}

// -----

// A gradient claimed for the RoPE table, which no rule differentiates.
tv.spec @spec {
  %x = tv.input "x" : tensor<1x2x4xf32>
  %cos = tv.input "cos" : tensor<2x2xf32>
  %sin = tv.input "sin" : tensor<2x2xf32>
  %dy = tv.input "dy" : tensor<1x2x4xf32>
  %y = tv.rotary %x, %cos, %sin : tensor<1x2x4xf32>, tensor<2x2xf32>, tensor<2x2xf32> -> tensor<1x2x4xf32>
  tv.output "y", %y : tensor<1x2x4xf32>
  %g = tv.rotary_grad %dy, %cos, %sin : tensor<1x2x4xf32>, tensor<2x2xf32>, tensor<2x2xf32> -> tensor<1x2x4xf32>
  tv.output "dx", %g : tensor<1x2x4xf32>
  // expected-error @+1 {{spec backward not checked: 'dcos' is named as the gradient of 'cos', which tv does not differentiate (an operand no rule carries a gradient to)}}
  %c = tv.copy %cos : tensor<2x2xf32>
  tv.output "dcos", %c : tensor<2x2xf32>
}

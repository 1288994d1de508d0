func.func @f(%a: tensor<2xf32>, %b: tensor<f32>) -> tensor<f32> {
  %r = linalg.reduce ins(%a : tensor<2xf32>) outs(%b : tensor<f32>) dimensions = [x]
    (%in: f32, %init: f32) {
      %s = arith.addf %in, %init : f32
      linalg.yield %s : f32
    }
  return %r : tensor<f32>
}

shard.grid @g(shape = 2)
func.func @f(%a: tensor<2x4xi8>, %b: tensor<4x2xi8>, %c: tensor<2x2xi32>) -> tensor<2x2xi32> {
  %r = linalg.matmul ins(%a, %b : tensor<2x4xi8>, tensor<4x2xi8>) outs(%c : tensor<2x2xi32>) -> tensor<2x2xi32>
  return %r : tensor<2x2xi32>
}

// Column-parallel linear with a gathered output (Megatron's gather_output):
// each rank computes its column shard; an all-gather assembles the output.
tv.mesh @mesh axes ["tp"] sizes [2]
tv.spec @spec {
  %x = tv.input "x" : tensor<4x8xf32>
  %w = tv.input "w" : tensor<16x8xf32>
  %y = tv.linear %x, %w : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  tv.output "y", %y : tensor<4x16xf32>
}
tv.plan @plan mesh @mesh micro_batches 1 {
  tv.rank_program [0, 1] {
    %x = tv.input "x" : tensor<4x8xf32>
    %w = tv.input "w" : tensor<8x8xf32>
    %p = tv.linear %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    %y = tv.all_gather %p dim 1 {axes = ["tp"]} : tensor<4x8xf32> -> tensor<4x16xf32>
    tv.output "y", %y : tensor<4x16xf32>
  }
}
tv.lineage #tv.lineage<"x"[0:4, 0:8] = ["x":0] | ["x":1]>
tv.lineage #tv.lineage<"w"[0:8, 0:8] = ["w":0]>
tv.lineage #tv.lineage<"w"[8:16, 0:8] = ["w":1]>
tv.lineage #tv.lineage<"y"[0:4, 0:16] = ["y":0] | ["y":1]>

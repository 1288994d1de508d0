// Vocabulary-parallel embedding over 2 ranks, 64 rows: rank 1 holds rows
// 32..63 but looks them up as if they started at row 40.
tv.mesh @mesh axes ["tp"] sizes [2]
tv.spec @spec {
  %ids = tv.input "ids" : tensor<4xi64>
  %w = tv.input "w" : tensor<64x4xf32>
  %y = tv.embedding %ids, %w : tensor<4xi64>, tensor<64x4xf32> -> tensor<4x4xf32>
  tv.output "y", %y : tensor<4x4xf32>
}
tv.plan @plan mesh @mesh micro_batches 1 {
  tv.rank_program [0] {
    %ids = tv.input "ids" : tensor<4xi64>
    %w = tv.input "w" : tensor<32x4xf32>
    %p = tv.embedding %ids, %w {vocab_offset = 0} : tensor<4xi64>, tensor<32x4xf32> -> tensor<4x4xf32>
    %y = tv.all_reduce sum %p {axes = ["tp"]} : tensor<4x4xf32> -> tensor<4x4xf32>
    tv.output "y", %y : tensor<4x4xf32>
  }
  tv.rank_program [1] {
    %ids = tv.input "ids" : tensor<4xi64>
    %w = tv.input "w" : tensor<32x4xf32>
    %p = tv.embedding %ids, %w {vocab_offset = 40} : tensor<4xi64>, tensor<32x4xf32> -> tensor<4x4xf32>
    %y = tv.all_reduce sum %p {axes = ["tp"]} : tensor<4x4xf32> -> tensor<4x4xf32>
    tv.output "y", %y : tensor<4x4xf32>
  }
}
tv.lineage #tv.lineage<"ids"[0:4] = ["ids":0] | ["ids":1]>
tv.lineage #tv.lineage<"w"[0:32, 0:4] = ["w":0]>
tv.lineage #tv.lineage<"w"[32:64, 0:4] = ["w":1]>
tv.lineage #tv.lineage<"y"[0:4, 0:4] = ["y":0] | ["y":1]>

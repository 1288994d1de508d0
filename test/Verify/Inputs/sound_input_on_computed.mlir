// Each rank holds the full weight and slices its shard; rank 1 slices the
// wrong half ([0:4] instead of [4:8]). The initial lineage of spec input "w"
// names the computed shards, so the slice is never checked.
tv.mesh @mesh axes ["tp"] sizes [2]
tv.spec @spec {
  %x = tv.input "x" : tensor<2x8xf32>
  %w = tv.input "w" : tensor<8x8xf32>
  %h = tv.linear %x, %w : (tensor<2x8xf32>, tensor<8x8xf32>) -> tensor<2x8xf32>
  tv.output "h", %h : tensor<2x8xf32>
}
tv.plan @plan mesh @mesh micro_batches 1 {
  tv.rank_program [0] {
    %x = tv.input "x" : tensor<2x8xf32>
    %wf = tv.input "w_full" : tensor<8x8xf32>
    %w = tv.slice %wf start [0, 0] : tensor<8x8xf32> -> tensor<4x8xf32>
    tv.tag "w_shard", %w : tensor<4x8xf32>
    %h = tv.linear %x, %w : (tensor<2x8xf32>, tensor<4x8xf32>) -> tensor<2x4xf32>
    tv.output "h", %h : tensor<2x4xf32>
  }
  tv.rank_program [1] {
    %x = tv.input "x" : tensor<2x8xf32>
    %wf = tv.input "w_full" : tensor<8x8xf32>
    %w = tv.slice %wf start [0, 0] : tensor<8x8xf32> -> tensor<4x8xf32>
    tv.tag "w_shard", %w : tensor<4x8xf32>
    %h = tv.linear %x, %w : (tensor<2x8xf32>, tensor<4x8xf32>) -> tensor<2x4xf32>
    tv.output "h", %h : tensor<2x4xf32>
  }
}
tv.lineage #tv.lineage<"x"[0:2, 0:8] = ["x":0] | ["x":1]>
tv.lineage #tv.lineage<"w"[0:4, 0:8] = ["w_shard":0]>
tv.lineage #tv.lineage<"w"[4:8, 0:8] = ["w_shard":1]>
tv.lineage #tv.lineage<"h"[0:2, 0:4] = ["h":0]>
tv.lineage #tv.lineage<"h"[0:2, 4:8] = ["h":1]>

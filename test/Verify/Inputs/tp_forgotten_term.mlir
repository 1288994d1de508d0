// A residual block's input gradient on two tensor-parallel ranks: dx is the
// all-reduced partial gradient through the column-parallel linear plus the
// residual term dy. The plan forgets the residual term: every op it runs is
// right, the op it lacks is the spec's add.
tv.mesh @mesh axes ["tp"] sizes [2]
tv.spec @spec {
  %x = tv.input "x" : tensor<4x8xf32>
  %w = tv.input "w" : tensor<16x8xf32>
  %dh = tv.input "dh" : tensor<4x16xf32>
  %dy = tv.input "dy" : tensor<4x8xf32>
  %dxl, %dw = tv.linear_grad %x, %w, %dh : tensor<4x8xf32>, tensor<16x8xf32>, tensor<4x16xf32>
  %dx = tv.add %dxl, %dy : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  tv.output "dx", %dx : tensor<4x8xf32>
}
tv.plan @plan mesh @mesh micro_batches 1 {
  tv.rank_program [0, 1] {
    %x = tv.input "x" : tensor<4x8xf32>
    %w = tv.input "w" : tensor<8x8xf32>
    %dh = tv.input "dh" : tensor<4x8xf32>
    %dy = tv.input "dy" : tensor<4x8xf32>
    %dxl, %dw = tv.linear_grad %x, %w, %dh : tensor<4x8xf32>, tensor<8x8xf32>, tensor<4x8xf32>
    %dx = tv.all_reduce sum %dxl {axes = ["tp"]} : tensor<4x8xf32> -> tensor<4x8xf32>
    tv.output "dx", %dx : tensor<4x8xf32>
  }
}
tv.lineage #tv.lineage<"x"[0:4, 0:8] = ["x":0] | ["x":1]>
tv.lineage #tv.lineage<"dy"[0:4, 0:8] = ["dy":0] | ["dy":1]>
tv.lineage #tv.lineage<"w"[0:8, 0:8] = ["w":0]>
tv.lineage #tv.lineage<"w"[8:16, 0:8] = ["w":1]>
tv.lineage #tv.lineage<"dh"[0:4, 0:8] = ["dh":0]>
tv.lineage #tv.lineage<"dh"[0:4, 8:16] = ["dh":1]>
tv.lineage #tv.lineage<"dx"[0:4, 0:8] = ["dx":0] | ["dx":1]>

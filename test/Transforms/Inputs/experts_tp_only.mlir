// An expert gradient on a mesh with no data-parallel axis (tp only).
tv.mesh @m axes ["tp"] sizes [2]
tv.spec @s {
  %g = tv.input "l0.experts.w1.g" : tensor<2x4xf32>
  %o = tv.copy %g : tensor<2x4xf32>
  tv.output "l0.experts.w1.grad", %o : tensor<2x4xf32>
}
tv.plan @p mesh @m micro_batches 1 {
  tv.rank_program [0, 1] {
    %g = tv.input "l0.experts.w1.g" : tensor<1x4xf32>
    tv.output "l0.experts.w1.grad", %g : tensor<1x4xf32>
  }
}
tv.lineage #tv.lineage<"l0.experts.w1.g"[0:1, 0:4] = ["l0.experts.w1.g":0]>
tv.lineage #tv.lineage<"l0.experts.w1.g"[1:2, 0:4] = ["l0.experts.w1.g":1]>
tv.lineage #tv.lineage<"l0.experts.w1.grad"[0:1, 0:4] = ["l0.experts.w1.grad":0]>
tv.lineage #tv.lineage<"l0.experts.w1.grad"[1:2, 0:4] = ["l0.experts.w1.grad":1]>

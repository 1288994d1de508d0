// rsqrt of an input: the plan computes 1/x instead. Drawn from [-2, 2], the
// input made rsqrt NaN on half the seeds, and a NaN shows nothing.
tv.mesh @mesh axes ["r"] sizes [1]
tv.spec @spec {
  %x = tv.input "x" : tensor<1xf32>
  %y = tv.rsqrt %x : tensor<1xf32>
  tv.output "y", %y : tensor<1xf32>
}
tv.plan @plan mesh @mesh micro_batches 1 {
  tv.rank_program [0] {
    %x = tv.input "x" : tensor<1xf32>
    %s = tv.sqrt %x : tensor<1xf32>
    %y = tv.rsqrt %s : tensor<1xf32>
    tv.output "y", %y : tensor<1xf32>
  }
}
tv.lineage #tv.lineage<"x"[0:1] = ["x":0]>
tv.lineage #tv.lineage<"y"[0:1] = ["y":0]>

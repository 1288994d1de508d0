// Attention mask given as an input (padding mask). Symbolically an input mask
// element is a variable, never the constant 1, so apply_mask yields -inf
// everywhere on both sides and any scores are "equal". The plan negates the scores.
tv.mesh @mesh axes ["tp"] sizes [1]
tv.spec @spec {
  %s = tv.input "s" : tensor<2x2xf32>
  %m = tv.input "m" : tensor<2x2xi1>
  %a = tv.apply_mask %s, %m : tensor<2x2xf32>, tensor<2x2xi1> -> tensor<2x2xf32>
  %p = tv.softmax %a dim 1 : tensor<2x2xf32>
  tv.output "p", %p : tensor<2x2xf32>
}
tv.plan @plan mesh @mesh micro_batches 1 {
  tv.rank_program [0] {
    %s = tv.input "s" : tensor<2x2xf32>
    %m = tv.input "m" : tensor<2x2xi1>
    %n = tv.neg %s : tensor<2x2xf32>
    %a = tv.apply_mask %n, %m : tensor<2x2xf32>, tensor<2x2xi1> -> tensor<2x2xf32>
    %p = tv.softmax %a dim 1 : tensor<2x2xf32>
    tv.output "p", %p : tensor<2x2xf32>
  }
}
tv.lineage #tv.lineage<"s"[0:2, 0:2] = ["s":0]>
tv.lineage #tv.lineage<"m"[0:2, 0:2] = ["m":0]>
tv.lineage #tv.lineage<"p"[0:2, 0:2] = ["p":0]>

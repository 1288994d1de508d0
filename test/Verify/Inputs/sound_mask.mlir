// Spec: masked = apply_mask(s, causal). Plan forgets the mask on rank 0 (a
// copy instead). The lineage cut right after the mask puts apply_mask alone
// in a stage, which shape reduction shrinks to 1x1 (mask all true).
tv.mesh @mesh axes ["tp"] sizes [1]
tv.spec @spec {
  %s = tv.input "s" : tensor<4x4xf32>
  %m = tv.causal_mask : tensor<4x4xi1>
  %a = tv.apply_mask %s, %m : tensor<4x4xf32>, tensor<4x4xi1> -> tensor<4x4xf32>
  tv.tag "a", %a : tensor<4x4xf32>
  %e = tv.exp %a : tensor<4x4xf32>
  tv.output "y", %e : tensor<4x4xf32>
}
tv.plan @plan mesh @mesh micro_batches 1 {
  tv.rank_program [0] {
    %s = tv.input "s" : tensor<4x4xf32>
    %a = tv.neg %s : tensor<4x4xf32>
    %a2 = tv.neg %a : tensor<4x4xf32>
    tv.tag "a", %a2 : tensor<4x4xf32>
    %e = tv.exp %a2 : tensor<4x4xf32>
    tv.output "y", %e : tensor<4x4xf32>
  }
}
tv.lineage #tv.lineage<"s"[0:4, 0:4] = ["s":0]>
tv.lineage #tv.lineage<"a"[0:4, 0:4] = ["a":0]>
tv.lineage #tv.lineage<"y"[0:4, 0:4] = ["y":0]>

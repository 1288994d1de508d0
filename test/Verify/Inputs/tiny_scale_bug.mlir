// A scale off by one part in 10^13, before and after a gelu. Doubles at
// the default tolerance cannot see it; the exact interpreter can.
tv.mesh @mesh axes ["r"] sizes [1]
tv.spec @spec {
  %x = tv.input "x" : tensor<4xf32>
  %h = tv.scale %x, 0.5 : tensor<4xf32>
  %g = tv.gelu %h : tensor<4xf32>
  %y = tv.scale %g, 0.25 : tensor<4xf32>
  tv.output "h", %h : tensor<4xf32>
  tv.output "y", %y : tensor<4xf32>
}
tv.plan @plan mesh @mesh micro_batches 1 {
  tv.rank_program [0] {
    %x = tv.input "x" : tensor<4xf32>
    %h = tv.scale %x, 0.5 : tensor<4xf32>
    %g = tv.gelu %h : tensor<4xf32>
    %y = tv.scale %g, 0.25 : tensor<4xf32>
    tv.output "h", %h : tensor<4xf32>
    tv.output "y", %y : tensor<4xf32>
  }
}
tv.lineage #tv.lineage<"x"[0:4] = ["x":0]>
tv.lineage #tv.lineage<"h"[0:4] = ["h":0]>
tv.lineage #tv.lineage<"y"[0:4] = ["y":0]>

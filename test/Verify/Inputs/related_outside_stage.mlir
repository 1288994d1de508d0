// y = 3 g in the spec; the plan computes y from h as 3 (h + 1), correct
// because g = 2x + 1 = h + 1 for every x. The relation passes through x,
// which is not in y's stage: the stage takes g and h as free values.
tv.mesh @mesh axes ["r"] sizes [1]
tv.spec @spec {
  %x = tv.input "x" : tensor<4xf32>
  %h = tv.add %x, %x : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  tv.tag "h", %h : tensor<4xf32>
  %x2 = tv.scale %x, 2.0 : tensor<4xf32>
  %g = tv.add_scalar %x2, 1.0 : tensor<4xf32>
  tv.tag "g", %g : tensor<4xf32>
  %y = tv.scale %g, 3.0 : tensor<4xf32>
  tv.output "y", %y : tensor<4xf32>
}
tv.plan @plan mesh @mesh micro_batches 1 {
  tv.rank_program [0] {
    %x = tv.input "x" : tensor<4xf32>
    %h = tv.add %x, %x : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    tv.tag "h", %h : tensor<4xf32>
    %x2 = tv.scale %x, 2.0 : tensor<4xf32>
    %g = tv.add_scalar %x2, 1.0 : tensor<4xf32>
    tv.tag "g", %g : tensor<4xf32>
    %t = tv.add_scalar %h, 1.0 : tensor<4xf32>
    %y = tv.scale %t, 3.0 : tensor<4xf32>
    tv.output "y", %y : tensor<4xf32>
  }
}
tv.lineage #tv.lineage<"x"[0:4] = ["x":0]>
tv.lineage #tv.lineage<"h"[0:4] = ["h":0]>
tv.lineage #tv.lineage<"g"[0:4] = ["g":0]>
tv.lineage #tv.lineage<"y"[0:4] = ["y":0]>

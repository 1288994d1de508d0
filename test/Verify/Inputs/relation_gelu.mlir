// The stage of 'y' assumes both 'h' and 'a' = gelu(h); the plan recomputes
// its 'a' from 'h' (activation recomputation), the spec reads 'a'.
tv.mesh @mesh axes ["dp"] sizes [1]
tv.spec @spec {
  %x = tv.input "x" : tensor<4x8xf32>
  %w = tv.input "w" : tensor<8x8xf32>
  %h = tv.linear %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  tv.tag "h", %h : tensor<4x8xf32>
  %a = tv.gelu %h : tensor<4x8xf32>
  tv.tag "a", %a : tensor<4x8xf32>
  %y = tv.mul %a, %h : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  tv.output "y", %y : tensor<4x8xf32>
}
tv.plan @plan mesh @mesh micro_batches 1 {
  tv.rank_program [0] {
    %x = tv.input "x" : tensor<4x8xf32>
    %w = tv.input "w" : tensor<8x8xf32>
    %h = tv.linear %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    tv.tag "h", %h : tensor<4x8xf32>
    %a = tv.gelu %h : tensor<4x8xf32>
    tv.tag "a", %a : tensor<4x8xf32>
    %r = tv.gelu %h : tensor<4x8xf32>
    %y = tv.mul %r, %h : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
    tv.output "y", %y : tensor<4x8xf32>
  }
}
tv.lineage #tv.lineage<"x"[0:4, 0:8] = ["x":0]>
tv.lineage #tv.lineage<"w"[0:8, 0:8] = ["w":0]>
tv.lineage #tv.lineage<"h"[0:4, 0:8] = ["h":0]>
tv.lineage #tv.lineage<"a"[0:4, 0:8] = ["a":0]>
tv.lineage #tv.lineage<"y"[0:4, 0:8] = ["y":0]>

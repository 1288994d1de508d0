// Data parallelism as DeepSpeed and torchtitan do it (dp = 2): each rank
// averages the loss over its own tokens and its backward starts from that
// mean, so its activation gradients are dp times the single-device ones
// (lineages "scaled 1/2"); the weight gradients are averaged over dp, which
// makes them the single-device ones again, and the reported loss is the
// average of the ranks' losses.
tv.mesh @mesh axes ["dp"] sizes [2]
tv.spec @spec {
  %x = tv.input "x" : tensor<4x4xf32>
  %w = tv.input "w" : tensor<4x4xf32>
  %dl = tv.input "dloss" : tensor<f32>
  %y = tv.linear %x, %w : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %a = tv.silu %y : tensor<4x4xf32>
  %loss = tv.mean %a dims [0, 1] : tensor<4x4xf32> -> tensor<f32>
  tv.output "loss", %loss : tensor<f32>
  %da = tv.mean_grad %dl dims [0, 1] : tensor<f32> -> tensor<4x4xf32>
  tv.tag "da", %da : tensor<4x4xf32>
  %dy = tv.silu_grad %y, %da : tensor<4x4xf32>
  tv.tag "dy", %dy : tensor<4x4xf32>
  %dx, %dw = tv.linear_grad %x, %w, %dy : tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>
  tv.output "dx", %dx : tensor<4x4xf32>
  tv.output "dw", %dw : tensor<4x4xf32>
}
tv.plan @plan mesh @mesh micro_batches 1 {
  tv.rank_program [0, 1] {
    %x = tv.input "x" : tensor<2x4xf32>
    %w = tv.input "w" : tensor<4x4xf32>
    %dl = tv.input "dloss" : tensor<f32>
    %y = tv.linear %x, %w : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
    %a = tv.silu %y : tensor<2x4xf32>
    %lr = tv.mean %a dims [0, 1] : tensor<2x4xf32> -> tensor<f32>
    %loss = tv.all_reduce avg %lr {axes = ["dp"]} : tensor<f32> -> tensor<f32>
    tv.output "loss", %loss : tensor<f32>
    %da = tv.mean_grad %dl dims [0, 1] : tensor<f32> -> tensor<2x4xf32>
    tv.tag "da", %da : tensor<2x4xf32>
    %dy = tv.silu_grad %y, %da : tensor<2x4xf32>
    tv.tag "dy", %dy : tensor<2x4xf32>
    %dx, %dwr = tv.linear_grad %x, %w, %dy : tensor<2x4xf32>, tensor<4x4xf32>, tensor<2x4xf32>
    tv.output "dx", %dx : tensor<2x4xf32>
    %dw = tv.all_reduce avg %dwr {axes = ["dp"]} : tensor<4x4xf32> -> tensor<4x4xf32>
    tv.output "dw", %dw : tensor<4x4xf32>
  }
}
tv.lineage #tv.lineage<"x"[0:2, 0:4] = ["x":0]>
tv.lineage #tv.lineage<"x"[2:4, 0:4] = ["x":1]>
tv.lineage #tv.lineage<"w"[0:4, 0:4] = ["w":0] | ["w":1]>
tv.lineage #tv.lineage<"dloss"[] = ["dloss":0] | ["dloss":1]>
tv.lineage #tv.lineage<"loss"[] = ["loss":0] | ["loss":1]>
tv.lineage #tv.lineage<"da"[0:2, 0:4] = ["da":0] scaled 1/2>
tv.lineage #tv.lineage<"da"[2:4, 0:4] = ["da":1] scaled 1/2>
tv.lineage #tv.lineage<"dy"[0:2, 0:4] = ["dy":0] scaled 1/2>
tv.lineage #tv.lineage<"dy"[2:4, 0:4] = ["dy":1] scaled 1/2>
tv.lineage #tv.lineage<"dx"[0:2, 0:4] = ["dx":0] scaled 1/2>
tv.lineage #tv.lineage<"dx"[2:4, 0:4] = ["dx":1] scaled 1/2>
tv.lineage #tv.lineage<"dw"[0:4, 0:4] = ["dw":0] | ["dw":1]>

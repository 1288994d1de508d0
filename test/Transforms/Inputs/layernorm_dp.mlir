// Data-parallel layer norm, forward and backward: rows split over dp, the
// parameter gradients all-reduced.
tv.mesh @mesh axes ["dp"] sizes [2]
tv.spec @spec {
  %x = tv.input "x" : tensor<4x8xf32>
  %g = tv.input "g" : tensor<8xf32>
  %b = tv.input "b" : tensor<8xf32>
  %dy = tv.input "dy" : tensor<4x8xf32>
  %y = tv.layernorm %x, %g, %b eps 1.0e-05 : tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  %dx, %dg, %db = tv.layernorm_grad %x, %g, %dy eps 1.0e-05 : tensor<4x8xf32>, tensor<8xf32>
  tv.output "y", %y : tensor<4x8xf32>
  tv.output "dx", %dx : tensor<4x8xf32>
  tv.output "dg", %dg : tensor<8xf32>
  tv.output "db", %db : tensor<8xf32>
}
tv.plan @plan mesh @mesh micro_batches 1 {
  tv.rank_program [0, 1] {
    %x = tv.input "x" : tensor<2x8xf32>
    %g = tv.input "g" : tensor<8xf32>
    %b = tv.input "b" : tensor<8xf32>
    %dy = tv.input "dy" : tensor<2x8xf32>
    %y = tv.layernorm %x, %g, %b eps 1.0e-05 : tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<2x8xf32>
    %dx, %dgp, %dbp = tv.layernorm_grad %x, %g, %dy eps 1.0e-05 : tensor<2x8xf32>, tensor<8xf32>
    %dg = tv.all_reduce sum %dgp {axes = ["dp"]} : tensor<8xf32> -> tensor<8xf32>
    %db = tv.all_reduce sum %dbp {axes = ["dp"]} : tensor<8xf32> -> tensor<8xf32>
    tv.output "y", %y : tensor<2x8xf32>
    tv.output "dx", %dx : tensor<2x8xf32>
    tv.output "dg", %dg : tensor<8xf32>
    tv.output "db", %db : tensor<8xf32>
  }
}
tv.lineage #tv.lineage<"x"[0:2, 0:8] = ["x":0]>
tv.lineage #tv.lineage<"x"[2:4, 0:8] = ["x":1]>
tv.lineage #tv.lineage<"dy"[0:2, 0:8] = ["dy":0]>
tv.lineage #tv.lineage<"dy"[2:4, 0:8] = ["dy":1]>
tv.lineage #tv.lineage<"g"[0:8] = ["g":0] | ["g":1]>
tv.lineage #tv.lineage<"b"[0:8] = ["b":0] | ["b":1]>
tv.lineage #tv.lineage<"y"[0:2, 0:8] = ["y":0]>
tv.lineage #tv.lineage<"y"[2:4, 0:8] = ["y":1]>
tv.lineage #tv.lineage<"dx"[0:2, 0:8] = ["dx":0]>
tv.lineage #tv.lineage<"dx"[2:4, 0:8] = ["dx":1]>
tv.lineage #tv.lineage<"dg"[0:8] = ["dg":0] | ["dg":1]>
tv.lineage #tv.lineage<"db"[0:8] = ["db":0] | ["db":1]>

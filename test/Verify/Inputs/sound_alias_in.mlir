// Plan uses w1 where w2 belongs; lineage maps both spec inputs onto plan "w1".
tv.mesh @mesh axes ["tp"] sizes [1]
tv.spec @spec {
  %x = tv.input "x" : tensor<4xf32>
  %w1 = tv.input "w1" : tensor<4xf32>
  %w2 = tv.input "w2" : tensor<4xf32>
  %a = tv.mul %x, %w1 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %y = tv.mul %a, %w2 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  tv.output "y", %y : tensor<4xf32>
}
tv.plan @plan mesh @mesh micro_batches 1 {
  tv.rank_program [0] {
    %x = tv.input "x" : tensor<4xf32>
    %w1 = tv.input "w1" : tensor<4xf32>
    %a = tv.mul %x, %w1 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    %y = tv.mul %a, %w1 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    tv.output "y", %y : tensor<4xf32>
  }
}
tv.lineage #tv.lineage<"x"[0:4] = ["x":0]>
tv.lineage #tv.lineage<"w1"[0:4] = ["w1":0]>
tv.lineage #tv.lineage<"w2"[0:4] = ["w1":0]>
tv.lineage #tv.lineage<"y"[0:4] = ["y":0]>

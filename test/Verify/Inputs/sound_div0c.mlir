// Spec: y = a / s. Plan: y = (a*s) / (s*s), s = b + c. Equal for every s != 0
// (division by zero is excluded by assumption A4).
tv.mesh @mesh axes ["tp"] sizes [1]
tv.spec @spec {
  %a = tv.input "a" : tensor<1xf32>
  %b = tv.input "b" : tensor<1xf32>
  %c = tv.input "c" : tensor<1xf32>
  %s = tv.add %b, %c : tensor<1xf32>, tensor<1xf32> -> tensor<1xf32>
  %y = tv.div %a, %s : tensor<1xf32>, tensor<1xf32> -> tensor<1xf32>
  tv.output "y", %y : tensor<1xf32>
}
tv.plan @plan mesh @mesh micro_batches 1 {
  tv.rank_program [0] {
    %a = tv.input "a" : tensor<1xf32>
    %b = tv.input "b" : tensor<1xf32>
    %c = tv.input "c" : tensor<1xf32>
    %s = tv.add %b, %c : tensor<1xf32>, tensor<1xf32> -> tensor<1xf32>
    %n = tv.mul %a, %s : tensor<1xf32>, tensor<1xf32> -> tensor<1xf32>
    %d = tv.mul %s, %s : tensor<1xf32>, tensor<1xf32> -> tensor<1xf32>
    %y = tv.div %n, %d : tensor<1xf32>, tensor<1xf32> -> tensor<1xf32>
    tv.output "y", %y : tensor<1xf32>
  }
}
tv.lineage #tv.lineage<"a"[0:1] = ["a":0]>
tv.lineage #tv.lineage<"b"[0:1] = ["b":0]>
tv.lineage #tv.lineage<"c"[0:1] = ["c":0]>
tv.lineage #tv.lineage<"y"[0:1] = ["y":0]>

// Head-parallel attention scores on two ranks (one head each): the plan
// scales the scores by 1/4 where the spec scales by 1/sqrt(4) = 1/2. The
// lineage that fails is the softmax's output; the op that is wrong is the
// scale before it.
tv.mesh @mesh axes ["tp"] sizes [2]
tv.spec @spec {
  %q = tv.input "q" : tensor<2x4x4xf32>
  %k = tv.input "k" : tensor<2x4x4xf32>
  %kt = tv.transpose %k perm [0, 2, 1] : tensor<2x4x4xf32> -> tensor<2x4x4xf32>
  %s = tv.matmul %q, %kt : tensor<2x4x4xf32>, tensor<2x4x4xf32> -> tensor<2x4x4xf32>
  %ss = tv.scale %s, 0.5 : tensor<2x4x4xf32>
  %p = tv.softmax %ss dim 2 : tensor<2x4x4xf32>
  tv.output "p", %p : tensor<2x4x4xf32>
}
tv.plan @plan mesh @mesh micro_batches 1 {
  tv.rank_program [0, 1] {
    %q = tv.input "q" : tensor<1x4x4xf32>
    %k = tv.input "k" : tensor<1x4x4xf32>
    %kt = tv.transpose %k perm [0, 2, 1] : tensor<1x4x4xf32> -> tensor<1x4x4xf32>
    %s = tv.matmul %q, %kt : tensor<1x4x4xf32>, tensor<1x4x4xf32> -> tensor<1x4x4xf32>
    %ss = tv.scale %s, 0.25 : tensor<1x4x4xf32>
    %p = tv.softmax %ss dim 2 : tensor<1x4x4xf32>
    tv.output "p", %p : tensor<1x4x4xf32>
  }
}
tv.lineage #tv.lineage<"q"[0:1, 0:4, 0:4] = ["q":0]>
tv.lineage #tv.lineage<"q"[1:2, 0:4, 0:4] = ["q":1]>
tv.lineage #tv.lineage<"k"[0:1, 0:4, 0:4] = ["k":0]>
tv.lineage #tv.lineage<"k"[1:2, 0:4, 0:4] = ["k":1]>
tv.lineage #tv.lineage<"p"[0:1, 0:4, 0:4] = ["p":0]>
tv.lineage #tv.lineage<"p"[1:2, 0:4, 0:4] = ["p":1]>

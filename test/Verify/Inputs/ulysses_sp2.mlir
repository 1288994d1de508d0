// DeepSpeed-Ulysses sequence parallelism (sp = 2), attention block: q, k, v
// arrive sharded along the sequence; an all-to-all turns them into head
// shards over the whole sequence, each rank attends its heads, and a second
// all-to-all returns the output to sequence shards.
tv.mesh @mesh axes ["sp"] sizes [2]
tv.spec @spec {
  %q = tv.input "q" : tensor<4x2x2xf32>
  %k = tv.input "k" : tensor<4x2x2xf32>
  %v = tv.input "v" : tensor<4x2x2xf32>
  %qt = tv.transpose %q perm [1, 0, 2] : tensor<4x2x2xf32> -> tensor<2x4x2xf32>
  %kt = tv.transpose %k perm [1, 0, 2] : tensor<4x2x2xf32> -> tensor<2x4x2xf32>
  %vt = tv.transpose %v perm [1, 0, 2] : tensor<4x2x2xf32> -> tensor<2x4x2xf32>
  %s = tv.matmul %qt, %kt {transpose_rhs} : tensor<2x4x2xf32>, tensor<2x4x2xf32> -> tensor<2x4x4xf32>
  %p = tv.softmax %s dim 2 : tensor<2x4x4xf32>
  %o = tv.matmul %p, %vt : tensor<2x4x4xf32>, tensor<2x4x2xf32> -> tensor<2x4x2xf32>
  %ot = tv.transpose %o perm [1, 0, 2] : tensor<2x4x2xf32> -> tensor<4x2x2xf32>
  tv.output "o", %ot : tensor<4x2x2xf32>
}
tv.plan @plan mesh @mesh micro_batches 1 {
  tv.rank_program [0, 1] {
    %q = tv.input "q" : tensor<2x2x2xf32>
    %k = tv.input "k" : tensor<2x2x2xf32>
    %v = tv.input "v" : tensor<2x2x2xf32>
    // sequence shards -> head shards over the whole sequence
    %qh = tv.all_to_all %q split 1 concat 0 {axes = ["sp"]} : tensor<2x2x2xf32> -> tensor<4x1x2xf32>
    %kh = tv.all_to_all %k split 1 concat 0 {axes = ["sp"]} : tensor<2x2x2xf32> -> tensor<4x1x2xf32>
    %vh = tv.all_to_all %v split 1 concat 0 {axes = ["sp"]} : tensor<2x2x2xf32> -> tensor<4x1x2xf32>
    %qt = tv.transpose %qh perm [1, 0, 2] : tensor<4x1x2xf32> -> tensor<1x4x2xf32>
    %kt = tv.transpose %kh perm [1, 0, 2] : tensor<4x1x2xf32> -> tensor<1x4x2xf32>
    %vt = tv.transpose %vh perm [1, 0, 2] : tensor<4x1x2xf32> -> tensor<1x4x2xf32>
    %s = tv.matmul %qt, %kt {transpose_rhs} : tensor<1x4x2xf32>, tensor<1x4x2xf32> -> tensor<1x4x4xf32>
    %p = tv.softmax %s dim 2 : tensor<1x4x4xf32>
    %o = tv.matmul %p, %vt : tensor<1x4x4xf32>, tensor<1x4x2xf32> -> tensor<1x4x2xf32>
    %ot = tv.transpose %o perm [1, 0, 2] : tensor<1x4x2xf32> -> tensor<4x1x2xf32>
    // head shards -> sequence shards
    %os = tv.all_to_all %ot split 0 concat 1 {axes = ["sp"]} : tensor<4x1x2xf32> -> tensor<2x2x2xf32>
    tv.output "o", %os : tensor<2x2x2xf32>
  }
}
tv.lineage #tv.lineage<"q"[0:2, 0:2, 0:2] = ["q":0]>
tv.lineage #tv.lineage<"q"[2:4, 0:2, 0:2] = ["q":1]>
tv.lineage #tv.lineage<"k"[0:2, 0:2, 0:2] = ["k":0]>
tv.lineage #tv.lineage<"k"[2:4, 0:2, 0:2] = ["k":1]>
tv.lineage #tv.lineage<"v"[0:2, 0:2, 0:2] = ["v":0]>
tv.lineage #tv.lineage<"v"[2:4, 0:2, 0:2] = ["v":1]>
tv.lineage #tv.lineage<"o"[0:2, 0:2, 0:2] = ["o":0]>
tv.lineage #tv.lineage<"o"[2:4, 0:2, 0:2] = ["o":1]>

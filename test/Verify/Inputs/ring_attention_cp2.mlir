// Ring attention (context parallel, cp = 2) forward, as Megatron's
// Transformer Engine and ring-flash-attention compute it: each rank holds a
// block of queries, keys and values; the key/value blocks travel around the
// ring; each step computes a block of scores, updates the running max,
// rescales the running sum and output by exp(m_old - m_new) (online
// softmax), and the last step divides by the sum. The spec is plain
// softmax attention.
tv.mesh @mesh axes ["cp"] sizes [2]
tv.spec @spec {
  %q = tv.input "q" : tensor<4x2xf32>
  %k = tv.input "k" : tensor<4x2xf32>
  %v = tv.input "v" : tensor<4x2xf32>
  %s = tv.matmul %q, %k {transpose_rhs} : tensor<4x2xf32>, tensor<4x2xf32> -> tensor<4x4xf32>
  %p = tv.softmax %s dim 1 : tensor<4x4xf32>
  %o = tv.matmul %p, %v : tensor<4x4xf32>, tensor<4x2xf32> -> tensor<4x2xf32>
  tv.output "o", %o : tensor<4x2xf32>
}
tv.plan @plan mesh @mesh micro_batches 1 {
  tv.rank_program [0] {
    %q = tv.input "q" : tensor<2x2xf32>
    %k = tv.input "k" : tensor<2x2xf32>
    %v = tv.input "v" : tensor<2x2xf32>
    tv.send %k {peer = 1} : tensor<2x2xf32>
    tv.send %v {peer = 1} : tensor<2x2xf32>
    %k2 = tv.recv {peer = 1} : tensor<2x2xf32>
    %v2 = tv.recv {peer = 1} : tensor<2x2xf32>
    // step 0: the local block; running max m1, sum l1, output o1.
    %s1 = tv.matmul %q, %k {transpose_rhs} : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x2xf32>
    %m1 = tv.max %s1 dims [1] {keepdim} : tensor<2x2xf32> -> tensor<2x1xf32>
    %m1b = tv.broadcast %m1 : tensor<2x1xf32> -> tensor<2x2xf32>
    %d1 = tv.sub %s1, %m1b : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x2xf32>
    %p1 = tv.exp %d1 : tensor<2x2xf32>
    %l1 = tv.sum %p1 dims [1] {keepdim} : tensor<2x2xf32> -> tensor<2x1xf32>
    %o1 = tv.matmul %p1, %v : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x2xf32>
    // step 1: the block received from the peer; new max, rescale.
    %s2 = tv.matmul %q, %k2 {transpose_rhs} : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x2xf32>
    %m2l = tv.max %s2 dims [1] {keepdim} : tensor<2x2xf32> -> tensor<2x1xf32>
    %mm = tv.concat %m1, %m2l dim 1 : (tensor<2x1xf32>, tensor<2x1xf32>) -> tensor<2x2xf32>
    %m = tv.max %mm dims [1] {keepdim} : tensor<2x2xf32> -> tensor<2x1xf32>
    %dm = tv.sub %m1, %m : tensor<2x1xf32>, tensor<2x1xf32> -> tensor<2x1xf32>
    %alpha = tv.exp %dm : tensor<2x1xf32>
    %mb = tv.broadcast %m : tensor<2x1xf32> -> tensor<2x2xf32>
    %d2 = tv.sub %s2, %mb : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x2xf32>
    %p2 = tv.exp %d2 : tensor<2x2xf32>
    %l2 = tv.sum %p2 dims [1] {keepdim} : tensor<2x2xf32> -> tensor<2x1xf32>
    %al1 = tv.mul %alpha, %l1 : tensor<2x1xf32>, tensor<2x1xf32> -> tensor<2x1xf32>
    %l = tv.add %al1, %l2 : tensor<2x1xf32>, tensor<2x1xf32> -> tensor<2x1xf32>
    %alphab = tv.broadcast %alpha : tensor<2x1xf32> -> tensor<2x2xf32>
    %ao1 = tv.mul %alphab, %o1 : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x2xf32>
    %pv2 = tv.matmul %p2, %v2 : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x2xf32>
    %oacc = tv.add %ao1, %pv2 : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x2xf32>
    %lb = tv.broadcast %l : tensor<2x1xf32> -> tensor<2x2xf32>
    %o = tv.div %oacc, %lb : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x2xf32>
    tv.output "o", %o : tensor<2x2xf32>
  }
  tv.rank_program [1] {
    %q = tv.input "q" : tensor<2x2xf32>
    %k = tv.input "k" : tensor<2x2xf32>
    %v = tv.input "v" : tensor<2x2xf32>
    %k2 = tv.recv {peer = 0} : tensor<2x2xf32>
    %v2 = tv.recv {peer = 0} : tensor<2x2xf32>
    tv.send %k {peer = 0} : tensor<2x2xf32>
    tv.send %v {peer = 0} : tensor<2x2xf32>
    // step 0: the local block; running max m1, sum l1, output o1.
    %s1 = tv.matmul %q, %k {transpose_rhs} : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x2xf32>
    %m1 = tv.max %s1 dims [1] {keepdim} : tensor<2x2xf32> -> tensor<2x1xf32>
    %m1b = tv.broadcast %m1 : tensor<2x1xf32> -> tensor<2x2xf32>
    %d1 = tv.sub %s1, %m1b : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x2xf32>
    %p1 = tv.exp %d1 : tensor<2x2xf32>
    %l1 = tv.sum %p1 dims [1] {keepdim} : tensor<2x2xf32> -> tensor<2x1xf32>
    %o1 = tv.matmul %p1, %v : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x2xf32>
    // step 1: the block received from the peer; new max, rescale.
    %s2 = tv.matmul %q, %k2 {transpose_rhs} : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x2xf32>
    %m2l = tv.max %s2 dims [1] {keepdim} : tensor<2x2xf32> -> tensor<2x1xf32>
    %mm = tv.concat %m1, %m2l dim 1 : (tensor<2x1xf32>, tensor<2x1xf32>) -> tensor<2x2xf32>
    %m = tv.max %mm dims [1] {keepdim} : tensor<2x2xf32> -> tensor<2x1xf32>
    %dm = tv.sub %m1, %m : tensor<2x1xf32>, tensor<2x1xf32> -> tensor<2x1xf32>
    %alpha = tv.exp %dm : tensor<2x1xf32>
    %mb = tv.broadcast %m : tensor<2x1xf32> -> tensor<2x2xf32>
    %d2 = tv.sub %s2, %mb : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x2xf32>
    %p2 = tv.exp %d2 : tensor<2x2xf32>
    %l2 = tv.sum %p2 dims [1] {keepdim} : tensor<2x2xf32> -> tensor<2x1xf32>
    %al1 = tv.mul %alpha, %l1 : tensor<2x1xf32>, tensor<2x1xf32> -> tensor<2x1xf32>
    %l = tv.add %al1, %l2 : tensor<2x1xf32>, tensor<2x1xf32> -> tensor<2x1xf32>
    %alphab = tv.broadcast %alpha : tensor<2x1xf32> -> tensor<2x2xf32>
    %ao1 = tv.mul %alphab, %o1 : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x2xf32>
    %pv2 = tv.matmul %p2, %v2 : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x2xf32>
    %oacc = tv.add %ao1, %pv2 : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x2xf32>
    %lb = tv.broadcast %l : tensor<2x1xf32> -> tensor<2x2xf32>
    %o = tv.div %oacc, %lb : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x2xf32>
    tv.output "o", %o : tensor<2x2xf32>
  }
}
tv.lineage #tv.lineage<"q"[0:2, 0:2] = ["q":0]>
tv.lineage #tv.lineage<"q"[2:4, 0:2] = ["q":1]>
tv.lineage #tv.lineage<"k"[0:2, 0:2] = ["k":0]>
tv.lineage #tv.lineage<"k"[2:4, 0:2] = ["k":1]>
tv.lineage #tv.lineage<"v"[0:2, 0:2] = ["v":0]>
tv.lineage #tv.lineage<"v"[2:4, 0:2] = ["v":1]>
tv.lineage #tv.lineage<"o"[0:2, 0:2] = ["o":0]>
tv.lineage #tv.lineage<"o"[2:4, 0:2] = ["o":1]>

// Ring attention (context parallel, cp = 2), forward and backward as
// ring-flash-attention and Transformer Engine compute them: the forward's
// online softmax saves O and the log-sum-exp; the backward recomputes each
// block's probabilities as exp(S - lse), uses D = rowsum(dO * O), and sends
// the remote blocks' dK and dV back to their owner. The spec is textbook
// attention with softmax_grad.
tv.mesh @mesh axes ["cp"] sizes [2]
tv.spec @spec {
  %q = tv.input "q" : tensor<4x2xf32>
  %k = tv.input "k" : tensor<4x2xf32>
  %v = tv.input "v" : tensor<4x2xf32>
  %do = tv.input "do" : tensor<4x2xf32>
  %s = tv.matmul %q, %k {transpose_rhs} : tensor<4x2xf32>, tensor<4x2xf32> -> tensor<4x4xf32>
  %p = tv.softmax %s dim 1 : tensor<4x4xf32>
  %o = tv.matmul %p, %v : tensor<4x4xf32>, tensor<4x2xf32> -> tensor<4x2xf32>
  tv.output "o", %o : tensor<4x2xf32>
  %lse = tv.logsumexp %s dims [1] : tensor<4x4xf32> -> tensor<4xf32>
  tv.output "lse", %lse : tensor<4xf32>
  %dp = tv.matmul %do, %v {transpose_rhs} : tensor<4x2xf32>, tensor<4x2xf32> -> tensor<4x4xf32>
  %ds = tv.softmax_grad %p, %dp dim 1 : tensor<4x4xf32>
  %dq = tv.matmul %ds, %k : tensor<4x4xf32>, tensor<4x2xf32> -> tensor<4x2xf32>
  %dk = tv.matmul %ds, %q {transpose_lhs} : tensor<4x4xf32>, tensor<4x2xf32> -> tensor<4x2xf32>
  %dv = tv.matmul %p, %do {transpose_lhs} : tensor<4x4xf32>, tensor<4x2xf32> -> tensor<4x2xf32>
  tv.output "dq", %dq : tensor<4x2xf32>
  tv.output "dk", %dk : tensor<4x2xf32>
  tv.output "dv", %dv : tensor<4x2xf32>
}
tv.plan @plan mesh @mesh micro_batches 1 {
  tv.rank_program [0] {
    %q = tv.input "q" : tensor<2x2xf32>
    %k = tv.input "k" : tensor<2x2xf32>
    %v = tv.input "v" : tensor<2x2xf32>
    %do = tv.input "do" : tensor<2x2xf32>
    tv.send %k {peer = 1} : tensor<2x2xf32>
    tv.send %v {peer = 1} : tensor<2x2xf32>
    %k2 = tv.recv {peer = 1} : tensor<2x2xf32>
    %v2 = tv.recv {peer = 1} : tensor<2x2xf32>
    // forward: online softmax over the local, then the received block
    %s1 = tv.matmul %q, %k {transpose_rhs} : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x2xf32>
    %m1 = tv.max %s1 dims [1] {keepdim} : tensor<2x2xf32> -> tensor<2x1xf32>
    %m1b = tv.broadcast %m1 : tensor<2x1xf32> -> tensor<2x2xf32>
    %d1 = tv.sub %s1, %m1b : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x2xf32>
    %p1 = tv.exp %d1 : tensor<2x2xf32>
    %l1 = tv.sum %p1 dims [1] {keepdim} : tensor<2x2xf32> -> tensor<2x1xf32>
    %o1 = tv.matmul %p1, %v : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x2xf32>
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
    // the log-sum-exp flash attention saves for the backward: m + log(l)
    %logl = tv.log %l : tensor<2x1xf32>
    %lse2 = tv.add %m, %logl : tensor<2x1xf32>, tensor<2x1xf32> -> tensor<2x1xf32>
    %lse = tv.reshape %lse2 : tensor<2x1xf32> -> tensor<2xf32>
    tv.output "lse", %lse : tensor<2xf32>
    // backward (FlashAttention-2): D = rowsum(dO * O); each block's P is
    // recomputed as exp(S - lse); dK and dV of the remote block travel back.
    %dod = tv.mul %do, %o : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x2xf32>
    %dr = tv.sum %dod dims [1] {keepdim} : tensor<2x2xf32> -> tensor<2x1xf32>
    %drb = tv.broadcast %dr : tensor<2x1xf32> -> tensor<2x2xf32>
    %lsec = tv.reshape %lse : tensor<2xf32> -> tensor<2x1xf32>
    %lseb = tv.broadcast %lsec : tensor<2x1xf32> -> tensor<2x2xf32>
    %e1 = tv.sub %s1, %lseb : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x2xf32>
    %bp1 = tv.exp %e1 : tensor<2x2xf32>
    %dv1 = tv.matmul %bp1, %do {transpose_lhs} : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x2xf32>
    %dp1 = tv.matmul %do, %v {transpose_rhs} : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x2xf32>
    %t1 = tv.sub %dp1, %drb : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x2xf32>
    %ds1 = tv.mul %bp1, %t1 : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x2xf32>
    %dq1 = tv.matmul %ds1, %k : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x2xf32>
    %dk1 = tv.matmul %ds1, %q {transpose_lhs} : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x2xf32>
    %e2 = tv.sub %s2, %lseb : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x2xf32>
    %bp2 = tv.exp %e2 : tensor<2x2xf32>
    %dv2 = tv.matmul %bp2, %do {transpose_lhs} : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x2xf32>
    %dp2 = tv.matmul %do, %v2 {transpose_rhs} : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x2xf32>
    %t2 = tv.sub %dp2, %drb : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x2xf32>
    %ds2 = tv.mul %bp2, %t2 : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x2xf32>
    %dq2 = tv.matmul %ds2, %k2 : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x2xf32>
    %dk2 = tv.matmul %ds2, %q {transpose_lhs} : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x2xf32>
    %dq = tv.add %dq1, %dq2 : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x2xf32>
    tv.output "dq", %dq : tensor<2x2xf32>
    tv.send %dk2 {peer = 1, tag = 1} : tensor<2x2xf32>
    tv.send %dv2 {peer = 1, tag = 1} : tensor<2x2xf32>
    %dkr = tv.recv {peer = 1, tag = 1} : tensor<2x2xf32>
    %dvr = tv.recv {peer = 1, tag = 1} : tensor<2x2xf32>
    %dk = tv.add %dk1, %dkr : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x2xf32>
    %dv = tv.add %dv1, %dvr : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x2xf32>
    tv.output "dk", %dk : tensor<2x2xf32>
    tv.output "dv", %dv : tensor<2x2xf32>
  }
  tv.rank_program [1] {
    %q = tv.input "q" : tensor<2x2xf32>
    %k = tv.input "k" : tensor<2x2xf32>
    %v = tv.input "v" : tensor<2x2xf32>
    %do = tv.input "do" : tensor<2x2xf32>
    %k2 = tv.recv {peer = 0} : tensor<2x2xf32>
    %v2 = tv.recv {peer = 0} : tensor<2x2xf32>
    tv.send %k {peer = 0} : tensor<2x2xf32>
    tv.send %v {peer = 0} : tensor<2x2xf32>
    // forward: online softmax over the local, then the received block
    %s1 = tv.matmul %q, %k {transpose_rhs} : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x2xf32>
    %m1 = tv.max %s1 dims [1] {keepdim} : tensor<2x2xf32> -> tensor<2x1xf32>
    %m1b = tv.broadcast %m1 : tensor<2x1xf32> -> tensor<2x2xf32>
    %d1 = tv.sub %s1, %m1b : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x2xf32>
    %p1 = tv.exp %d1 : tensor<2x2xf32>
    %l1 = tv.sum %p1 dims [1] {keepdim} : tensor<2x2xf32> -> tensor<2x1xf32>
    %o1 = tv.matmul %p1, %v : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x2xf32>
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
    // the log-sum-exp flash attention saves for the backward: m + log(l)
    %logl = tv.log %l : tensor<2x1xf32>
    %lse2 = tv.add %m, %logl : tensor<2x1xf32>, tensor<2x1xf32> -> tensor<2x1xf32>
    %lse = tv.reshape %lse2 : tensor<2x1xf32> -> tensor<2xf32>
    tv.output "lse", %lse : tensor<2xf32>
    // backward (FlashAttention-2): D = rowsum(dO * O); each block's P is
    // recomputed as exp(S - lse); dK and dV of the remote block travel back.
    %dod = tv.mul %do, %o : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x2xf32>
    %dr = tv.sum %dod dims [1] {keepdim} : tensor<2x2xf32> -> tensor<2x1xf32>
    %drb = tv.broadcast %dr : tensor<2x1xf32> -> tensor<2x2xf32>
    %lsec = tv.reshape %lse : tensor<2xf32> -> tensor<2x1xf32>
    %lseb = tv.broadcast %lsec : tensor<2x1xf32> -> tensor<2x2xf32>
    %e1 = tv.sub %s1, %lseb : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x2xf32>
    %bp1 = tv.exp %e1 : tensor<2x2xf32>
    %dv1 = tv.matmul %bp1, %do {transpose_lhs} : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x2xf32>
    %dp1 = tv.matmul %do, %v {transpose_rhs} : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x2xf32>
    %t1 = tv.sub %dp1, %drb : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x2xf32>
    %ds1 = tv.mul %bp1, %t1 : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x2xf32>
    %dq1 = tv.matmul %ds1, %k : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x2xf32>
    %dk1 = tv.matmul %ds1, %q {transpose_lhs} : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x2xf32>
    %e2 = tv.sub %s2, %lseb : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x2xf32>
    %bp2 = tv.exp %e2 : tensor<2x2xf32>
    %dv2 = tv.matmul %bp2, %do {transpose_lhs} : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x2xf32>
    %dp2 = tv.matmul %do, %v2 {transpose_rhs} : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x2xf32>
    %t2 = tv.sub %dp2, %drb : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x2xf32>
    %ds2 = tv.mul %bp2, %t2 : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x2xf32>
    %dq2 = tv.matmul %ds2, %k2 : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x2xf32>
    %dk2 = tv.matmul %ds2, %q {transpose_lhs} : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x2xf32>
    %dq = tv.add %dq1, %dq2 : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x2xf32>
    tv.output "dq", %dq : tensor<2x2xf32>
    %dkr = tv.recv {peer = 0, tag = 1} : tensor<2x2xf32>
    %dvr = tv.recv {peer = 0, tag = 1} : tensor<2x2xf32>
    tv.send %dk2 {peer = 0, tag = 1} : tensor<2x2xf32>
    tv.send %dv2 {peer = 0, tag = 1} : tensor<2x2xf32>
    %dk = tv.add %dk1, %dkr : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x2xf32>
    %dv = tv.add %dv1, %dvr : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x2xf32>
    tv.output "dk", %dk : tensor<2x2xf32>
    tv.output "dv", %dv : tensor<2x2xf32>
  }
}
tv.lineage #tv.lineage<"q"[0:2, 0:2] = ["q":0]>
tv.lineage #tv.lineage<"q"[2:4, 0:2] = ["q":1]>
tv.lineage #tv.lineage<"k"[0:2, 0:2] = ["k":0]>
tv.lineage #tv.lineage<"k"[2:4, 0:2] = ["k":1]>
tv.lineage #tv.lineage<"v"[0:2, 0:2] = ["v":0]>
tv.lineage #tv.lineage<"v"[2:4, 0:2] = ["v":1]>
tv.lineage #tv.lineage<"do"[0:2, 0:2] = ["do":0]>
tv.lineage #tv.lineage<"do"[2:4, 0:2] = ["do":1]>
tv.lineage #tv.lineage<"o"[0:2, 0:2] = ["o":0]>
tv.lineage #tv.lineage<"o"[2:4, 0:2] = ["o":1]>
tv.lineage #tv.lineage<"dq"[0:2, 0:2] = ["dq":0]>
tv.lineage #tv.lineage<"dq"[2:4, 0:2] = ["dq":1]>
tv.lineage #tv.lineage<"dk"[0:2, 0:2] = ["dk":0]>
tv.lineage #tv.lineage<"dk"[2:4, 0:2] = ["dk":1]>
tv.lineage #tv.lineage<"dv"[0:2, 0:2] = ["dv":0]>
tv.lineage #tv.lineage<"dv"[2:4, 0:2] = ["dv":1]>
tv.lineage #tv.lineage<"lse"[0:2] = ["lse":0]>
tv.lineage #tv.lineage<"lse"[2:4] = ["lse":1]>

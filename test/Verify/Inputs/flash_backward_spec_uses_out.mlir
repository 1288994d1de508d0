// The reverse of flash_backward_uses_out.mlir: the spec forms the
// FlashAttention-2 term D = rowsum(dO * O) from its own output, the plan the
// textbook softmax backward. Equal because O = P V.
tv.mesh @mesh axes ["dp"] sizes [1]
tv.spec @spec {
  %q = tv.input "q" : tensor<4x2xf32>
  %k = tv.input "k" : tensor<4x2xf32>
  %v = tv.input "v" : tensor<4x2xf32>
  %do = tv.input "do" : tensor<4x2xf32>
  %s = tv.matmul %q, %k {transpose_rhs} : tensor<4x2xf32>, tensor<4x2xf32> -> tensor<4x4xf32>
  %p = tv.softmax %s dim 1 : tensor<4x4xf32>
  %o = tv.matmul %p, %v : tensor<4x4xf32>, tensor<4x2xf32> -> tensor<4x2xf32>
  tv.output "o", %o : tensor<4x2xf32>
  %dp = tv.matmul %do, %v {transpose_rhs} : tensor<4x2xf32>, tensor<4x2xf32> -> tensor<4x4xf32>
  %od = tv.mul %do, %o : tensor<4x2xf32>, tensor<4x2xf32> -> tensor<4x2xf32>
  %d = tv.sum %od dims [1] {keepdim} : tensor<4x2xf32> -> tensor<4x1xf32>
  %db = tv.broadcast %d : tensor<4x1xf32> -> tensor<4x4xf32>
  %t = tv.sub %dp, %db : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
  %ds = tv.mul %p, %t : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
  %dq = tv.matmul %ds, %k : tensor<4x4xf32>, tensor<4x2xf32> -> tensor<4x2xf32>
  tv.output "dq", %dq : tensor<4x2xf32>
  }
tv.plan @plan mesh @mesh micro_batches 1 {
  tv.rank_program [0] {
    %q = tv.input "q" : tensor<4x2xf32>
    %k = tv.input "k" : tensor<4x2xf32>
    %v = tv.input "v" : tensor<4x2xf32>
    %do = tv.input "do" : tensor<4x2xf32>
    %s = tv.matmul %q, %k {transpose_rhs} : tensor<4x2xf32>, tensor<4x2xf32> -> tensor<4x4xf32>
    %p = tv.softmax %s dim 1 : tensor<4x4xf32>
    %o = tv.matmul %p, %v : tensor<4x4xf32>, tensor<4x2xf32> -> tensor<4x2xf32>
    tv.output "o", %o : tensor<4x2xf32>
    %dp = tv.matmul %do, %v {transpose_rhs} : tensor<4x2xf32>, tensor<4x2xf32> -> tensor<4x4xf32>
    %ds = tv.softmax_grad %p, %dp dim 1 : tensor<4x4xf32>
    %dq = tv.matmul %ds, %k : tensor<4x4xf32>, tensor<4x2xf32> -> tensor<4x2xf32>
    tv.output "dq", %dq : tensor<4x2xf32>
  }
}
tv.lineage #tv.lineage<"q"[0:4, 0:2] = ["q":0]>
tv.lineage #tv.lineage<"k"[0:4, 0:2] = ["k":0]>
tv.lineage #tv.lineage<"v"[0:4, 0:2] = ["v":0]>
tv.lineage #tv.lineage<"do"[0:4, 0:2] = ["do":0]>
tv.lineage #tv.lineage<"o"[0:4, 0:2] = ["o":0]>
tv.lineage #tv.lineage<"dq"[0:4, 0:2] = ["dq":0]>

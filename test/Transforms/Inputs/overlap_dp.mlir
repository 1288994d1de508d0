// Overlapped communication on two data-parallel ranks, two micro-batches:
// the weight is sharded over dp (ZeRO-3) and all-gathered asynchronously
// before its first use; the weight gradient is accumulated into a bucket
// whose all-reduce is launched asynchronously and waited before the
// gradient is used (Megatron-LM's --overlap-param-gather and
// --overlap-grad-reduce in miniature). Correct: proven.
tv.mesh @mesh axes ["dp"] sizes [2]
tv.spec @spec {
  %x = tv.input "x" : tensor<4x8xf32>
  %w = tv.input "w" : tensor<6x8xf32>
  %g = tv.input "g" : tensor<4x6xf32>
  %dx, %dw = tv.linear_grad %x, %w, %g : tensor<4x8xf32>, tensor<6x8xf32>, tensor<4x6xf32>
  tv.output "w.grad", %dw : tensor<6x8xf32>
}
tv.plan @plan mesh @mesh micro_batches 2 {
  tv.rank_program [0, 1] {
    %w = tv.input "w" : tensor<3x8xf32>
    %x0 = tv.input "x.mb0" : tensor<1x8xf32>
    %g0 = tv.input "g.mb0" : tensor<1x6xf32>
    %x1 = tv.input "x.mb1" : tensor<1x8xf32>
    %g1 = tv.input "g.mb1" : tensor<1x6xf32>
    %wr = tv.all_gather %w dim 0 {async, axes = ["dp"]} : tensor<3x8xf32> -> tensor<6x8xf32>
    %wf = tv.wait %wr : tensor<6x8xf32>
    %dx0, %dw0 = tv.linear_grad %x0, %wf, %g0 {mb = 0 : i64} : tensor<1x8xf32>, tensor<6x8xf32>, tensor<1x6xf32>
    tv.accumulate "bucket", %dw0 {mb = 0 : i64} : tensor<6x8xf32>
    %dx1, %dw1 = tv.linear_grad %x1, %wf, %g1 {mb = 1 : i64} : tensor<1x8xf32>, tensor<6x8xf32>, tensor<1x6xf32>
    tv.accumulate "bucket", %dw1 {mb = 1 : i64} : tensor<6x8xf32>
    %b = tv.buffer_read "bucket" : tensor<6x8xf32>
    %r = tv.all_reduce sum %b {async, axes = ["dp"]} : tensor<6x8xf32> -> tensor<6x8xf32>
    %y = tv.wait %r : tensor<6x8xf32>
    tv.output "w.grad", %y : tensor<6x8xf32>
  }
}
tv.lineage #tv.lineage<"w"[0:3, 0:8] = ["w":0]>
tv.lineage #tv.lineage<"w"[3:6, 0:8] = ["w":1]>
tv.lineage #tv.lineage<"x"[0:1, 0:8] = ["x.mb0":0]>
tv.lineage #tv.lineage<"x"[1:2, 0:8] = ["x.mb1":0]>
tv.lineage #tv.lineage<"x"[2:3, 0:8] = ["x.mb0":1]>
tv.lineage #tv.lineage<"x"[3:4, 0:8] = ["x.mb1":1]>
tv.lineage #tv.lineage<"g"[0:1, 0:6] = ["g.mb0":0]>
tv.lineage #tv.lineage<"g"[1:2, 0:6] = ["g.mb1":0]>
tv.lineage #tv.lineage<"g"[2:3, 0:6] = ["g.mb0":1]>
tv.lineage #tv.lineage<"g"[3:4, 0:6] = ["g.mb1":1]>
tv.lineage #tv.lineage<"w.grad"[0:6, 0:8] = ["w.grad":0] | ["w.grad":1]>

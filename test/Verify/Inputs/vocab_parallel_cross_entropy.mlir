// Megatron-LM's vocabulary-parallel cross-entropy (tensor_parallel/
// cross_entropy.py), tp = 2: the logits stay sharded over the vocabulary.
tv.mesh @mesh axes ["tp"] sizes [2]
tv.spec @spec {
  %x = tv.input "logits" : tensor<4x8xf32>
  %lab = tv.input "labels" : tensor<4xi64>
  %dl = tv.input "dloss" : tensor<f32>
  %loss = tv.cross_entropy %x, %lab : tensor<4x8xf32>, tensor<4xi64> -> tensor<f32>
  tv.output "loss", %loss : tensor<f32>
  %dx = tv.cross_entropy_grad %x, %lab, %dl : tensor<4x8xf32>, tensor<4xi64>, tensor<f32> -> tensor<4x8xf32>
  tv.output "d_logits", %dx : tensor<4x8xf32>
}
tv.plan @plan mesh @mesh micro_batches 1 {
  tv.rank_program [0, 1] {
    %x = tv.input "logits" : tensor<4x4xf32>
    %lab = tv.input "labels" : tensor<4xi64>
    %dl = tv.input "dloss" : tensor<f32>
    // logits_max: local max, all-reduce max; subtract it.
    %ml = tv.max %x dims [1] {keepdim} : tensor<4x4xf32> -> tensor<4x1xf32>
    %m = tv.all_reduce max %ml {axes = ["tp"]} : tensor<4x1xf32> -> tensor<4x1xf32>
    %mb = tv.broadcast %m : tensor<4x1xf32> -> tensor<4x4xf32>
    %xs = tv.sub %x, %mb : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
    // predicted_logits: the target's logit on the shard that holds it, 0 elsewhere; all-reduce sum.
    %tl = tv.target_logit %xs, %lab {vocab_axis = "tp"} : tensor<4x4xf32>, tensor<4xi64> -> tensor<4xf32>
    %t = tv.all_reduce sum %tl {axes = ["tp"]} : tensor<4xf32> -> tensor<4xf32>
    // sum_exp_logits: local sum of exp, all-reduce sum.
    %e = tv.exp %xs : tensor<4x4xf32>
    %sl = tv.sum %e dims [1] : tensor<4x4xf32> -> tensor<4xf32>
    %s = tv.all_reduce sum %sl {axes = ["tp"]} : tensor<4xf32> -> tensor<4xf32>
    // loss = log(sum_exp_logits) - predicted_logits, averaged over tokens.
    %ls = tv.log %s : tensor<4xf32>
    %li = tv.sub %ls, %t : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    %loss = tv.mean %li dims [0] : tensor<4xf32> -> tensor<f32>
    tv.output "loss", %loss : tensor<f32>
    // backward: (softmax - one_hot(target on this shard)) * dloss / n.
    %sb = tv.reshape %s : tensor<4xf32> -> tensor<4x1xf32>
    %sbb = tv.broadcast %sb : tensor<4x1xf32> -> tensor<4x4xf32>
    %p = tv.div %e, %sbb : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
    %gb = tv.mean_grad %dl dims [0] : tensor<f32> -> tensor<4xf32>
    %gr = tv.reshape %gb : tensor<4xf32> -> tensor<4x1xf32>
    %gbb = tv.broadcast %gr : tensor<4x1xf32> -> tensor<4x4xf32>
    %pg = tv.mul %p, %gbb : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
    %oh = tv.target_logit_grad %lab, %gb {vocab_axis = "tp"} : tensor<4xi64>, tensor<4xf32> -> tensor<4x4xf32>
    %dx = tv.sub %pg, %oh : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
    tv.output "d_logits", %dx : tensor<4x4xf32>
  }
}
tv.lineage #tv.lineage<"logits"[0:4, 0:4] = ["logits":0]>
tv.lineage #tv.lineage<"logits"[0:4, 4:8] = ["logits":1]>
tv.lineage #tv.lineage<"labels"[0:4] = ["labels":0] | ["labels":1]>
tv.lineage #tv.lineage<"dloss"[] = ["dloss":0] | ["dloss":1]>
tv.lineage #tv.lineage<"loss"[] = ["loss":0] | ["loss":1]>
tv.lineage #tv.lineage<"d_logits"[0:4, 0:4] = ["d_logits":0]>
tv.lineage #tv.lineage<"d_logits"[0:4, 4:8] = ["d_logits":1]>

//===- TVComputeOps.td - forward compute ops --------------*- tablegen -*-===//
#ifndef TV_COMPUTE_OPS_TD
#define TV_COMPUTE_OPS_TD

include "TrainVerify/Dialect/TVBase.td"
include "TrainVerify/Dialect/TVAttrs.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

class TV_BinaryOp<string mnemonic, string sem> : TV_ProgramOp<mnemonic, [Pure]> {
  let summary = "Elementwise " # mnemonic # " with numpy broadcasting";
  let description = "`result = lhs " # sem # " rhs`, after broadcasting both "
    # "operands to the result shape (trailing dimensions aligned; a dimension "
    # "of size 1 stretches).";
  let arguments = (ins TV_FloatTensor:$lhs, TV_FloatTensor:$rhs);
  let results = (outs TV_FloatTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)
  }];
  let hasVerifier = 1;
}
def TV_AddOp : TV_BinaryOp<"add", "+">;
def TV_SubOp : TV_BinaryOp<"sub", "-">;
def TV_MulOp : TV_BinaryOp<"mul", "*">;
def TV_DivOp : TV_BinaryOp<"div", "/">;

class TV_ScalarOp<string mnemonic, string sem>
    : TV_ProgramOp<mnemonic, [Pure, SameOperandsAndResultType]> {
  let summary = "Elementwise " # mnemonic # " with a constant";
  let description = "`result = " # sem # "` for every element `x`.";
  let arguments = (ins TV_FloatTensor:$input, F64Attr:$scalar);
  let results = (outs TV_FloatTensor:$result);
  let assemblyFormat = "$input `,` $scalar attr-dict `:` type($result)";
}
def TV_AddScalarOp : TV_ScalarOp<"add_scalar", "x + scalar"> {
  let hasFolder = 1;
}
def TV_SubScalarOp : TV_ScalarOp<"sub_scalar", "x - scalar"> {
  let hasFolder = 1;
}
def TV_RSubScalarOp : TV_ScalarOp<"rsub_scalar", "scalar - x">;
def TV_DivScalarOp : TV_ScalarOp<"div_scalar", "x / scalar"> {
  let hasVerifier = 1;
  let hasFolder = 1;
}
def TV_ScaleOp : TV_ScalarOp<"scale", "x * scalar"> {
  let hasFolder = 1;
}
def TV_PowOp : TV_ScalarOp<"pow", "x ** scalar"> {
  let hasFolder = 1;
}

class TV_UnaryOp<string mnemonic, string sem>
    : TV_ProgramOp<mnemonic, [Pure, SameOperandsAndResultType]> {
  let summary = "Elementwise " # mnemonic;
  let description = "`result = " # sem # "` for every element `x`.";
  let arguments = (ins TV_FloatTensor:$input);
  let results = (outs TV_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
}
def TV_NegOp : TV_UnaryOp<"neg", "-x">;
def TV_ExpOp : TV_UnaryOp<"exp", "exp(x)">;
def TV_LogOp : TV_UnaryOp<"log", "log(x)">;
def TV_SqrtOp : TV_UnaryOp<"sqrt", "sqrt(x)">;
def TV_RsqrtOp : TV_UnaryOp<"rsqrt", "1 / sqrt(x)">;
def TV_SigmoidOp : TV_UnaryOp<"sigmoid", "1 / (1 + exp(-x))">;
def TV_SiluOp : TV_UnaryOp<"silu", "x * sigmoid(x)">;
def TV_GeluOp : TV_UnaryOp<"gelu", "x * Phi(x) (exact, erf form)">;
def TV_ReluOp : TV_UnaryOp<"relu", "max(x, 0)">;
def TV_TanhOp : TV_UnaryOp<"tanh", "tanh(x)">;

def TV_CopyOp : TV_ProgramOp<"copy", [Pure, SameOperandsAndResultType]> {
  let summary = "Identity (copy, contiguous, dtype cast to the same math)";
  let arguments = (ins TV_AnyTensor:$input);
  let results = (outs TV_AnyTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Contractions and reductions
//===----------------------------------------------------------------------===//

def TV_MatmulOp : TV_ProgramOp<"matmul", [Pure]> {
  let summary = "Batched matrix product with optionally transposed operands";
  let description = [{
    `lhs` is `[batch..., m, k]` (`[batch..., k, m]` with `transpose_lhs`),
    `rhs` is `[batch..., k, n]` (`[batch..., n, k]` with `transpose_rhs`) or
    rank 2 (shared by every batch). The result is `[batch..., m, n]`.
  }];
  let arguments = (ins TV_FloatTensor:$lhs, TV_FloatTensor:$rhs,
                       UnitAttr:$transpose_lhs, UnitAttr:$transpose_rhs);
  let results = (outs TV_FloatTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)
  }];
  let hasVerifier = 1;
}

def TV_LinearOp : TV_ProgramOp<"linear", [Pure]> {
  let summary = "x W^T (+ b), as torch.nn.functional.linear";
  let description = [{
    `input` is `[..., k]`, `weight` is `[n, k]`, the optional `bias` is `[n]`;
    the result is `[..., n]`.
  }];
  let arguments = (ins TV_FloatTensor:$input, TV_FloatTensor:$weight,
                       Optional<TV_FloatTensor>:$bias);
  let results = (outs TV_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight (`,` $bias^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

class TV_ReductionOp<string mnemonic, string sem> : TV_ProgramOp<mnemonic, [Pure]> {
  let summary = mnemonic # " over dimensions";
  let description = "The " # sem # " over `dims`; with `keepdim` the reduced "
    # "dimensions stay with size 1, otherwise they are removed.";
  let arguments = (ins TV_FloatTensor:$input, DenseI64ArrayAttr:$dims,
                       UnitAttr:$keepdim);
  let results = (outs TV_FloatTensor:$result);
  let assemblyFormat = [{
    $input `dims` $dims attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}
def TV_SumOp : TV_ReductionOp<"sum", "sum">;
def TV_MeanOp : TV_ReductionOp<"mean", "arithmetic mean">;
def TV_MaxOp : TV_ReductionOp<"max", "maximum">;

//===----------------------------------------------------------------------===//
// Neural-network ops
//===----------------------------------------------------------------------===//

def TV_SoftmaxOp : TV_ProgramOp<"softmax", [Pure, SameOperandsAndResultType]> {
  let summary = "exp(x_i) / sum_j exp(x_j) along `dim`";
  let arguments = (ins TV_FloatTensor:$input, I64Attr:$dim);
  let results = (outs TV_FloatTensor:$result);
  let assemblyFormat = "$input `dim` $dim attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def TV_LayerNormOp : TV_ProgramOp<"layernorm", [Pure]> {
  let summary = "Layer normalization over the last dimension";
  let description = [{
    `(x - mean(x)) * rsqrt(var(x) + eps) * gamma + beta` over the last
    dimension (biased variance); `gamma` and `beta` are `[d]`.
  }];
  let arguments = (ins TV_FloatTensor:$input, TV_FloatTensor:$gamma,
                       TV_FloatTensor:$beta, F64Attr:$eps);
  let results = (outs TV_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $gamma `,` $beta `eps` $eps attr-dict `:` type($input) `,`
    type($gamma) `,` type($beta) `->` type($result)
  }];
  let hasVerifier = 1;
}

def TV_RMSNormOp : TV_ProgramOp<"rmsnorm", [Pure]> {
  let summary = "RMS normalization over the last dimension";
  let description = "`x * rsqrt(mean(x^2) + eps) * weight`, `weight` is `[d]`.";
  let arguments = (ins TV_FloatTensor:$input, TV_FloatTensor:$weight,
                       F64Attr:$eps);
  let results = (outs TV_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight `eps` $eps attr-dict `:` type($input) `,` type($weight)
    `->` type($result)
  }];
  let hasVerifier = 1;
}

def TV_RotaryOp : TV_ProgramOp<"rotary", [Pure]> {
  let summary = "Rotary position embedding (Llama3 reference, interleaved pairs)";
  let description = [{
    `input` is `[..., s, d]` with `d` even; `cos` and `sin` are `[s, d/2]`.
    For each pair `(x0, x1) = (x[..., 2i], x[..., 2i+1])`:
    `y[2i] = x0 cos - x1 sin`, `y[2i+1] = x0 sin + x1 cos`, which is the
    complex product of `torch.view_as_complex` in `apply_rotary_emb`.
  }];
  let arguments = (ins TV_FloatTensor:$input, TV_FloatTensor:$cos,
                       TV_FloatTensor:$sin);
  let results = (outs TV_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $cos `,` $sin attr-dict `:` type($input) `,` type($cos) `,`
    type($sin) `->` type($result)
  }];
  let hasVerifier = 1;
}

def TV_EmbeddingOp : TV_ProgramOp<"embedding", [Pure]> {
  let summary = "Embedding lookup, optionally vocab-parallel";
  let description = [{
    `result[i..., :] = table[ids[i...] - offset, :]` when the row is inside
    the table, zero otherwise. `offset` is `vocab_offset` when given (the
    first vocabulary row this shard holds), or, with `vocab_axis`, the rank's
    coordinate on that mesh axis times the table's row count (the
    vocab-parallel embedding of Megatron-LM), or 0.
  }];
  let arguments = (ins TV_IdTensor:$ids, TV_FloatTensor:$table,
                       OptionalAttr<StrAttr>:$vocab_axis,
                       OptionalAttr<I64Attr>:$vocab_offset);
  let results = (outs TV_FloatTensor:$result);
  let assemblyFormat = [{
    $ids `,` $table attr-dict `:` type($ids) `,` type($table) `->` type($result)
  }];
  let hasVerifier = 1;
}

def TV_CausalMaskOp : TV_ProgramOp<"causal_mask", [Pure]> {
  let summary = "Creates a causal mask";
  let description = [{
    A `[s_q, s_k]` i1 tensor, true where key position `j <= i + offset`
    (offset = s_k - s_q, so the last query sees every key).
  }];
  let results = (outs RankedTensorOf<[I1]>:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def TV_ApplyMaskOp : TV_ProgramOp<"apply_mask", [Pure]> {
  let summary = "Keeps scores where the mask is true, -inf elsewhere";
  let description = [{
    `result = mask ? input : -inf`; the mask `[s_q, s_k]` broadcasts over the
    leading dimensions of `input` `[..., s_q, s_k]`. `exp(-inf) = 0`.
  }];
  let arguments = (ins TV_FloatTensor:$input, RankedTensorOf<[I1]>:$mask);
  let results = (outs TV_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $mask attr-dict `:` type($input) `,` type($mask) `->` type($result)
  }];
  let hasVerifier = 1;
}

def TV_CrossEntropyOp : TV_ProgramOp<"cross_entropy", [Pure]> {
  let summary = "Mean cross-entropy of logits against integer labels";
  let description = [{
    `logits` `[n, v]`, `labels` `[n]`; the result is the rank-0
    `mean_i (log(sum_j exp(logits[i, j])) - logits[i, labels[i]])`.
  }];
  let arguments = (ins TV_FloatTensor:$logits, TV_IdTensor:$labels);
  let results = (outs TV_FloatTensor:$result);
  let assemblyFormat = [{
    $logits `,` $labels attr-dict `:` type($logits) `,` type($labels) `->`
    type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

def TV_ReshapeOp : TV_ProgramOp<"reshape", [Pure]> {
  let summary = "View with another shape (row-major, same element count)";
  let arguments = (ins TV_AnyTensor:$input);
  let results = (outs TV_AnyTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def TV_TransposeOp : TV_ProgramOp<"transpose", [Pure]> {
  let summary = "Permutes dimensions: result dim i is input dim perm[i]";
  let arguments = (ins TV_AnyTensor:$input, DenseI64ArrayAttr:$perm);
  let results = (outs TV_AnyTensor:$result);
  let assemblyFormat = [{
    $input `perm` $perm attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
  let hasFolder = 1;
}

def TV_SliceOp : TV_ProgramOp<"slice", [Pure]> {
  let summary = "Static box [start, start + result shape)";
  let arguments = (ins TV_AnyTensor:$input, DenseI64ArrayAttr:$start);
  let results = (outs TV_AnyTensor:$result);
  let assemblyFormat = [{
    $input `start` $start attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
  let hasFolder = 1;
}

def TV_ConcatOp : TV_ProgramOp<"concat", [Pure]> {
  let summary = "Concatenation along `dim`";
  let arguments = (ins Variadic<TV_AnyTensor>:$inputs, I64Attr:$dim);
  let results = (outs TV_AnyTensor:$result);
  let assemblyFormat = [{
    $inputs `dim` $dim attr-dict `:` functional-type($inputs, $result)
  }];
  let hasVerifier = 1;
}

def TV_BroadcastOp : TV_ProgramOp<"broadcast", [Pure]> {
  let summary = "Broadcasts to the result shape (numpy rules)";
  let arguments = (ins TV_AnyTensor:$input);
  let results = (outs TV_AnyTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Mixture of experts
//===----------------------------------------------------------------------===//

def TV_TopKGateOp : TV_ProgramOp<"topk_gate", [Pure, SameOperandsAndResultType]> {
  let summary = "Top-k gating: softmax weights of the k best experts, 0 elsewhere";
  let description = [{
    `logits` `[t, e]`. For each token the k largest logits are kept and given
    their softmax weight renormalized over the k (DeepSeek-V3 / Mixtral
    routing); the other experts get 0. The selection is modeled as an
    uninterpreted function of the whole row, so plans must route on the
    same logits as the spec.
  }];
  let arguments = (ins TV_FloatTensor:$input, I64Attr:$k);
  let results = (outs TV_FloatTensor:$result);
  let assemblyFormat = "$input `k` $k attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def TV_DispatchOp : TV_ProgramOp<"dispatch", [Pure]> {
  let summary = "Token dispatch to experts (dense capacity)";
  let description = [{
    `input` `[t, h]`, `gates` `[t, e]` -> `[e, t, h]` with
    `result[e, i, :] = (gates[i, e] != 0) ? input[i, :] : 0`. Capacity is the
    full token count, so no token is dropped.
  }];
  let arguments = (ins TV_FloatTensor:$input, TV_FloatTensor:$gates);
  let results = (outs TV_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $gates attr-dict `:` type($input) `,` type($gates) `->` type($result)
  }];
  let hasVerifier = 1;
}

def TV_CombineOp : TV_ProgramOp<"combine", [Pure]> {
  let summary = "Weighted combination of expert outputs";
  let description = [{
    `input` `[e, t, h]`, `gates` `[t, e]` -> `[t, h]` with
    `result[i, :] = sum_e gates[i, e] * input[e, i, :]`.
  }];
  let arguments = (ins TV_FloatTensor:$input, TV_FloatTensor:$gates);
  let results = (outs TV_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $gates attr-dict `:` type($input) `,` type($gates) `->` type($result)
  }];
  let hasVerifier = 1;
}

def TV_MoEGateOp : TV_ProgramOp<"moe_gate", [Pure]> {
  let summary = "DeepSeek-V3 router: group-limited top-k over expert scores";
  let description = [{
    `input` `[t, h]`, `weight` `[e, h]`. Scores `s = f(input · weightᵀ)`
    with `f` the sigmoid (per element) or the softmax (per token). The
    experts are split into `n_groups` groups of `e / n_groups`; the
    `topk_groups` groups with the largest maximum score are kept, and the
    `k` best experts of those (descending score, lowest index first on a
    tie) are selected: `indices` `[t, k]`. `weights[i, j] = route_scale *
    s[i, indices[i, j]]`, divided by the sum over j of the selected scores
    when `f` is the sigmoid. This is nnScaler's `gate_fw` (DeepSeek-V3's
    `Gate` without a score bias).

    The prover treats the selection as an uninterpreted function of the
    token's score row (congruence: equal rows select the same experts); the
    gather, the normalization and the scale are exact. The concrete
    interpreter runs the real selection.
  }];
  let arguments = (ins TV_FloatTensor:$input, TV_FloatTensor:$weight,
                       TV_ScoreFuncAttr:$score_func, I64Attr:$k,
                       I64Attr:$n_groups, I64Attr:$topk_groups,
                       F64Attr:$route_scale);
  let results = (outs TV_FloatTensor:$weights, TV_IdTensor:$indices);
  let assemblyFormat = [{
    $input `,` $weight $score_func `k` $k `groups` $n_groups `keep` $topk_groups
    `scale` $route_scale attr-dict `:` type($input) `,` type($weight) `->`
    type($weights) `,` type($indices)
  }];
  let hasVerifier = 1;
}

def TV_MoEGmmOp : TV_ProgramOp<"moe_gmm", [Pure]> {
  let summary = "Routed SwiGLU experts as one grouped matmul (local experts)";
  let description = [{
    `input` `[t, h]`, `indices` and `weights` `[t, k]` (from `tv.moe_gate`),
    expert weights `w1`, `w3` `[n, f, h]` and `w2` `[n, h, f]` of the local
    experts `expert_start .. expert_start + n` (global numbering):

    `result[i] = sum_j sum_l [indices[i, j] == expert_start + l] *
      weights[i, j] * (silu(input[i] · w1[l]ᵀ) ⊙ (input[i] · w3[l]ᵀ)) · w2[l]ᵀ`.

    A token routed to no local expert contributes 0: with experts split
    over ranks, the results are partial sums (nnScaler's
    `nnscaler_moe_gmm`, expert parallel).
  }];
  let arguments = (ins TV_FloatTensor:$input, TV_IdTensor:$indices,
                       TV_FloatTensor:$weights, TV_FloatTensor:$w1,
                       TV_FloatTensor:$w3, TV_FloatTensor:$w2,
                       I64Attr:$expert_start);
  let results = (outs TV_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $indices `,` $weights `,` $w1 `,` $w3 `,` $w2 `experts` `from`
    $expert_start attr-dict `:` type($input) `,` type($indices) `,`
    type($weights) `,` type($w1) `,` type($w3) `,` type($w2) `->` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Optimizer
//===----------------------------------------------------------------------===//

def TV_SGDOp : TV_ProgramOp<"sgd", [Pure, SameOperandsAndResultType]> {
  let summary = "SGD update: w - lr * g";
  let arguments = (ins TV_FloatTensor:$weight, TV_FloatTensor:$grad,
                       F64Attr:$lr);
  let results = (outs TV_FloatTensor:$result);
  let assemblyFormat = "$weight `,` $grad `lr` $lr attr-dict `:` type($result)";
}

def TV_AdamOp : TV_ProgramOp<"adam", [Pure, AllTypesMatch<["weight", "grad", "m",
    "v", "new_weight", "new_m", "new_v"]>]> {
  let summary = "Adam update with bias correction at step `step`";
  let description = [{
    `m' = b1 m + (1-b1) g`, `v' = b2 v + (1-b2) g^2`,
    `w' = w - lr (m' / (1-b1^step)) / (sqrt(v' / (1-b2^step)) + eps)`.
  }];
  let arguments = (ins TV_FloatTensor:$weight, TV_FloatTensor:$grad,
                       TV_FloatTensor:$m, TV_FloatTensor:$v, F64Attr:$lr,
                       F64Attr:$beta1, F64Attr:$beta2, F64Attr:$eps,
                       I64Attr:$step);
  let results = (outs TV_FloatTensor:$new_weight, TV_FloatTensor:$new_m,
                      TV_FloatTensor:$new_v);
  let assemblyFormat = [{
    $weight `,` $grad `,` $m `,` $v attr-dict `:` type($weight)
  }];
}

#endif // TV_COMPUTE_OPS_TD

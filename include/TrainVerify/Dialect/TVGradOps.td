//===- TVGradOps.td - backward (vector-Jacobian) ops ------*- tablegen -*-===//
#ifndef TV_GRAD_OPS_TD
#define TV_GRAD_OPS_TD

include "TrainVerify/Dialect/TVBase.td"
include "TrainVerify/Dialect/TVAttrs.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"

// Linear ops (add, mul, matmul, transpose, reshape, sum, mean, broadcast,
// concat, all collectives) have VJPs that are themselves ops of the dialect;
// the ops below are the VJPs that are not.

class TV_UnaryGradOp<string mnemonic, string sem>
    : TV_ProgramOp<mnemonic # "_grad", [Pure, SameOperandsAndResultType]> {
  let summary = "VJP of " # mnemonic;
  let description = "`dx = dy * " # sem # "` elementwise, where `x` is the "
    # "forward input.";
  let arguments = (ins TV_FloatTensor:$input, TV_FloatTensor:$grad);
  let results = (outs TV_FloatTensor:$result);
  let assemblyFormat = "$input `,` $grad attr-dict `:` type($result)";
}
def TV_ExpGradOp : TV_UnaryGradOp<"exp", "exp(x)">;
def TV_LogGradOp : TV_UnaryGradOp<"log", "1 / x">;
def TV_SqrtGradOp : TV_UnaryGradOp<"sqrt", "0.5 / sqrt(x)">;
def TV_RsqrtGradOp : TV_UnaryGradOp<"rsqrt", "-0.5 * rsqrt(x)^3">;
def TV_SigmoidGradOp : TV_UnaryGradOp<"sigmoid", "s (1 - s), s = sigmoid(x)">;
def TV_SiluGradOp : TV_UnaryGradOp<"silu", "s (1 + x (1 - s)), s = sigmoid(x)">;
def TV_GeluGradOp : TV_UnaryGradOp<"gelu", "gelu'(x)">;
def TV_ReluGradOp : TV_UnaryGradOp<"relu", "(x > 0 ? 1 : 0)">;
def TV_TanhGradOp : TV_UnaryGradOp<"tanh", "1 - tanh(x)^2">;

def TV_MulGradOp : TV_ProgramOp<"mul_grad", [Pure, SameOperandsAndResultType]> {
  let summary = "VJP of an elementwise product of same-shaped tensors";
  let description = [{
    With `y = lhs * rhs` (no broadcasting): `dlhs = grad * rhs`,
    `drhs = grad * lhs` — PyTorch's `MulBackward0`, the backward op with two
    outputs of one type (swapping them is bug class `bw-swapped-outputs`).
  }];
  let arguments = (ins TV_FloatTensor:$lhs, TV_FloatTensor:$rhs,
                       TV_FloatTensor:$grad);
  let results = (outs TV_FloatTensor:$dlhs, TV_FloatTensor:$drhs);
  let assemblyFormat = "$lhs `,` $rhs `,` $grad attr-dict `:` type($lhs)";
}

def TV_PowGradOp : TV_ProgramOp<"pow_grad", [Pure, SameOperandsAndResultType]> {
  let summary = "VJP of pow: dy * c * x^(c-1)";
  let arguments = (ins TV_FloatTensor:$input, TV_FloatTensor:$grad,
                       F64Attr:$exponent);
  let results = (outs TV_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $grad `exponent` $exponent attr-dict `:` type($result)
  }];
}

def TV_SoftmaxGradOp : TV_ProgramOp<"softmax_grad", [Pure, SameOperandsAndResultType]> {
  let summary = "VJP of softmax from its output y: y * (dy - sum(dy * y))";
  let arguments = (ins TV_FloatTensor:$output, TV_FloatTensor:$grad,
                       I64Attr:$dim);
  let results = (outs TV_FloatTensor:$result);
  let assemblyFormat = "$output `,` $grad `dim` $dim attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def TV_LayerNormGradOp : TV_ProgramOp<"layernorm_grad", [Pure,
    AllTypesMatch<["input", "grad", "dinput"]>,
    AllTypesMatch<["gamma", "dgamma", "dbeta"]>]> {
  let summary = "VJP of layernorm: (dx, dgamma, dbeta)";
  let description = [{
    `dgamma` and `dbeta` are summed over every leading dimension of `input`.
  }];
  let arguments = (ins TV_FloatTensor:$input, TV_FloatTensor:$gamma,
                       TV_FloatTensor:$grad, F64Attr:$eps);
  let results = (outs TV_FloatTensor:$dinput, TV_FloatTensor:$dgamma,
                      TV_FloatTensor:$dbeta);
  let assemblyFormat = [{
    $input `,` $gamma `,` $grad `eps` $eps attr-dict `:` type($input) `,`
    type($gamma)
  }];
  let hasVerifier = 1;
}

def TV_RMSNormGradOp : TV_ProgramOp<"rmsnorm_grad", [Pure,
    AllTypesMatch<["input", "grad", "dinput"]>,
    AllTypesMatch<["weight", "dweight"]>]> {
  let summary = "VJP of rmsnorm: (dx, dweight)";
  let arguments = (ins TV_FloatTensor:$input, TV_FloatTensor:$weight,
                       TV_FloatTensor:$grad, F64Attr:$eps);
  let results = (outs TV_FloatTensor:$dinput, TV_FloatTensor:$dweight);
  let assemblyFormat = [{
    $input `,` $weight `,` $grad `eps` $eps attr-dict `:` type($input) `,`
    type($weight)
  }];
  let hasVerifier = 1;
}

def TV_RotaryGradOp : TV_ProgramOp<"rotary_grad", [Pure]> {
  let summary = "VJP of rotary: rotation of dy by -theta";
  let description = [{
    `dx[2i] = dy0 cos + dy1 sin`, `dx[2i+1] = -dy0 sin + dy1 cos`.
  }];
  let arguments = (ins TV_FloatTensor:$grad, TV_FloatTensor:$cos,
                       TV_FloatTensor:$sin);
  let results = (outs TV_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `,` $cos `,` $sin attr-dict `:` type($grad) `,` type($cos) `,`
    type($sin) `->` type($result)
  }];
  let hasVerifier = 1;
}

def TV_EmbeddingGradOp : TV_ProgramOp<"embedding_grad", [Pure]> {
  let summary = "VJP of embedding: scatter-add of dy into the table rows";
  let description = [{
    `result[r, :] = sum over positions p with ids[p] - offset == r of dy[p, :]`
    with `offset` as in `tv.embedding`; the result type gives the table shape.
  }];
  let arguments = (ins TV_IdTensor:$ids, TV_FloatTensor:$grad,
                       OptionalAttr<StrAttr>:$vocab_axis,
                       OptionalAttr<I64Attr>:$vocab_offset);
  let results = (outs TV_FloatTensor:$result);
  let assemblyFormat = [{
    $ids `,` $grad attr-dict `:` type($ids) `,` type($grad) `->` type($result)
  }];
  let hasVerifier = 1;
}

def TV_ApplyMaskGradOp : TV_ProgramOp<"apply_mask_grad", [Pure]> {
  let summary = "VJP of apply_mask: dy where the mask is true, 0 elsewhere";
  let arguments = (ins TV_FloatTensor:$grad, RankedTensorOf<[I1]>:$mask);
  let results = (outs TV_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `,` $mask attr-dict `:` type($grad) `,` type($mask) `->` type($result)
  }];
  let hasVerifier = 1;
}

def TV_CrossEntropyGradOp : TV_ProgramOp<"cross_entropy_grad", [Pure]> {
  let summary = "VJP of cross_entropy: (softmax(logits) - onehot) * dloss / n";
  let arguments = (ins TV_FloatTensor:$logits, TV_IdTensor:$labels,
                       TV_FloatTensor:$grad);
  let results = (outs TV_FloatTensor:$result);
  let assemblyFormat = [{
    $logits `,` $labels `,` $grad attr-dict `:` type($logits) `,` type($labels)
    `,` type($grad) `->` type($result)
  }];
  let hasVerifier = 1;
}

def TV_MaxGradOp : TV_ProgramOp<"max_grad", [Pure]> {
  let summary = "VJP of max: dy shared equally among the maximal elements";
  let arguments = (ins TV_FloatTensor:$input, TV_FloatTensor:$grad,
                       DenseI64ArrayAttr:$dims, UnitAttr:$keepdim);
  let results = (outs TV_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $grad `dims` $dims attr-dict `:` type($input) `,` type($grad)
    `->` type($result)
  }];
  let hasVerifier = 1;
}

def TV_MeanGradOp : TV_ProgramOp<"mean_grad", [Pure]> {
  let summary = "VJP of mean: dy broadcast over `dims` of the result, divided by their size";
  let description = [{
    The result type is the forward input's; `grad` has the forward result's
    shape (`keepdim` as in `tv.mean`). The divisor is the number of reduced
    elements, read from the types, so it follows shape reduction.
  }];
  let arguments = (ins TV_FloatTensor:$grad, DenseI64ArrayAttr:$dims,
                       UnitAttr:$keepdim);
  let results = (outs TV_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `dims` $dims attr-dict `:` type($grad) `->` type($result)
  }];
  let hasVerifier = 1;
}

def TV_SliceGradOp : TV_ProgramOp<"slice_grad", [Pure]> {
  let summary = "VJP of slice: dy placed at `start` in zeros of the result shape";
  let arguments = (ins TV_FloatTensor:$grad, DenseI64ArrayAttr:$start);
  let results = (outs TV_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `start` $start attr-dict `:` type($grad) `->` type($result)
  }];
  let hasVerifier = 1;
}

def TV_LinearGradOp : TV_ProgramOp<"linear_grad", [Pure,
    AllTypesMatch<["input", "dinput"]>, AllTypesMatch<["weight", "dweight"]>]> {
  let summary = "VJP of linear (no bias): dx = dy W, dW = sum over batch dy^T x";
  let arguments = (ins TV_FloatTensor:$input, TV_FloatTensor:$weight,
                       TV_FloatTensor:$grad);
  let results = (outs TV_FloatTensor:$dinput, TV_FloatTensor:$dweight);
  let assemblyFormat = [{
    $input `,` $weight `,` $grad attr-dict `:` type($input) `,` type($weight)
    `,` type($grad)
  }];
  let hasVerifier = 1;
}

def TV_TopKGateGradOp : TV_ProgramOp<"topk_gate_grad", [Pure, SameOperandsAndResultType]> {
  let summary = "VJP of topk_gate with respect to the logits";
  let description = [{
    With `g = topk_gate(x)` and selection mask fixed:
    `dx = g * (dg - sum(dg * g))` on the selected experts, 0 elsewhere.
  }];
  let arguments = (ins TV_FloatTensor:$input, TV_FloatTensor:$grad, I64Attr:$k);
  let results = (outs TV_FloatTensor:$result);
  let assemblyFormat = "$input `,` $grad `k` $k attr-dict `:` type($result)";
}

def TV_DispatchGradOp : TV_ProgramOp<"dispatch_grad", [Pure]> {
  let summary = "VJP of dispatch w.r.t. tokens: dx[i] = sum_e (g[i,e] != 0) dy[e,i]";
  let arguments = (ins TV_FloatTensor:$grad, TV_FloatTensor:$gates);
  let results = (outs TV_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `,` $gates attr-dict `:` type($grad) `,` type($gates) `->` type($result)
  }];
  let hasVerifier = 1;
}

def TV_CombineGradOp : TV_ProgramOp<"combine_grad", [Pure,
    AllTypesMatch<["input", "dinput"]>, AllTypesMatch<["gates", "dgates"]>]> {
  let summary = "VJP of combine: (d expert outputs, d gates)";
  let description = [{
    `dinput[e, i, :] = gates[i, e] * grad[i, :]`,
    `dgates[i, e] = sum_h input[e, i, h] * grad[i, h]`.
  }];
  let arguments = (ins TV_FloatTensor:$input, TV_FloatTensor:$gates,
                       TV_FloatTensor:$grad);
  let results = (outs TV_FloatTensor:$dinput, TV_FloatTensor:$dgates);
  let assemblyFormat = [{
    $input `,` $gates `,` $grad attr-dict `:` type($input) `,` type($gates)
    `,` type($grad)
  }];
  let hasVerifier = 1;
}

def TV_MoEGateGradOp : TV_ProgramOp<"moe_gate_grad", [Pure,
    AllTypesMatch<["input", "dinput"]>, AllTypesMatch<["weight", "dweight"]>]> {
  let summary = "VJP of moe_gate with respect to the tokens and the router";
  let description = [{
    With the selection fixed (it is piecewise constant), `grad` `[t, k]` is
    the cotangent of the gate's `weights`. The selected scores `g_j` get
    `dg_j = route_scale * (grad_j / S - sum_m grad_m g_m / S^2)` with
    `S = sum_m g_m` (sigmoid) or `dg_j = route_scale * grad_j` (softmax);
    they scatter back to their experts, through the score function's
    derivative to the logits `z`, and `dinput = dz · weight`,
    `dweight = dzᵀ · input`.
  }];
  let arguments = (ins TV_FloatTensor:$input, TV_FloatTensor:$weight,
                       TV_FloatTensor:$grad, TV_ScoreFuncAttr:$score_func,
                       I64Attr:$k, I64Attr:$n_groups, I64Attr:$topk_groups,
                       F64Attr:$route_scale);
  let results = (outs TV_FloatTensor:$dinput, TV_FloatTensor:$dweight);
  let assemblyFormat = [{
    $input `,` $weight `,` $grad $score_func `k` $k `groups` $n_groups `keep`
    $topk_groups `scale` $route_scale attr-dict `:` type($input) `,`
    type($weight) `,` type($grad)
  }];
  let hasVerifier = 1;
}

def TV_MoEGmmGradOp : TV_ProgramOp<"moe_gmm_grad", [Pure,
    AllTypesMatch<["grad", "input", "dinput"]>,
    AllTypesMatch<["weights", "dweights"]>,
    AllTypesMatch<["w1", "dw1"]>, AllTypesMatch<["w3", "dw3"]>,
    AllTypesMatch<["w2", "dw2"]>]> {
  let summary = "VJP of moe_gmm: tokens, routing weights and expert weights";
  let description = [{
    `grad` `[t, h]` is the cotangent of `moe_gmm`'s result. For token i,
    slot j and local expert l with `m = [indices[i, j] == expert_start + l]`,
    `a = x_i · w1[l]ᵀ`, `b = x_i · w3[l]ᵀ`, `u = silu(a) ⊙ b`, `o = u · w2[l]ᵀ`:
    `dweights[i, j] += m (grad_i · o)`; with `do = m weights[i, j] grad_i`,
    `du = do · w2[l]`, `dw2[l] += doᵀ u`, `da = du ⊙ b ⊙ silu'(a)`,
    `db = du ⊙ silu(a)`, `dw1[l] += daᵀ x_i`, `dw3[l] += dbᵀ x_i`,
    `dinput_i += da · w1[l] + db · w3[l]`. The indices get no gradient.
  }];
  let arguments = (ins TV_FloatTensor:$grad, TV_FloatTensor:$input,
                       TV_IdTensor:$indices, TV_FloatTensor:$weights,
                       TV_FloatTensor:$w1, TV_FloatTensor:$w3,
                       TV_FloatTensor:$w2, I64Attr:$expert_start);
  let results = (outs TV_FloatTensor:$dinput, TV_FloatTensor:$dweights,
                      TV_FloatTensor:$dw1, TV_FloatTensor:$dw3,
                      TV_FloatTensor:$dw2);
  let assemblyFormat = [{
    $grad `,` $input `,` $indices `,` $weights `,` $w1 `,` $w3 `,` $w2
    `experts` `from` $expert_start attr-dict `:` type($grad) `,`
    type($indices) `,` type($weights) `,` type($w1) `,` type($w3) `,`
    type($w2)
  }];
  let hasVerifier = 1;
}

#endif // TV_GRAD_OPS_TD

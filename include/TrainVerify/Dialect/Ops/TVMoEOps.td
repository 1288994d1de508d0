//===- TVMoEOps.td -----------------------------------------*- tablegen -*-===//
#ifndef TV_MOE_OPS_TD
#define TV_MOE_OPS_TD

include "TrainVerify/Dialect/TVComputeBase.td"

def TV_TopKGateOp : TV_ComputeOp<"topk_gate", [
      DeclareOpInterfaceMethods<TV_StructuredOpInterface>,
      DeclareOpInterfaceMethods<TV_ShapeRuleOpInterface>,
      Pure, SameOperandsAndResultType]> {
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

def TV_DispatchOp : TV_ComputeOp<"dispatch", [
      DeclareOpInterfaceMethods<TV_ShapeRuleOpInterface>,
      DeclareOpInterfaceMethods<TV_SymmetryRuleOpInterface>,
      Pure]> {
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

def TV_CombineOp : TV_ComputeOp<"combine", [
      DeclareOpInterfaceMethods<TV_ShapeRuleOpInterface>,
      DeclareOpInterfaceMethods<TV_SymmetryRuleOpInterface>,
      Pure]> {
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

def TV_MoEGateOp : TV_ComputeOp<"moe_gate", [
      DeclareOpInterfaceMethods<TV_ShapeRuleOpInterface>,
      DeclareOpInterfaceMethods<TV_SymmetryRuleOpInterface>,
      Pure]> {
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

def TV_MoEGmmOp : TV_ComputeOp<"moe_gmm", [
      DeclareOpInterfaceMethods<TV_ShapeRuleOpInterface>,
      DeclareOpInterfaceMethods<TV_SymmetryRuleOpInterface>,
      Pure]> {
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

def TV_TopKGateGradOp : TV_ComputeOp<"topk_gate_grad", [
      DeclareOpInterfaceMethods<TV_StructuredOpInterface>,
      DeclareOpInterfaceMethods<TV_ShapeRuleOpInterface>,
      DeclareOpInterfaceMethods<TV_GradOpInterface>,
      Pure, SameOperandsAndResultType]> {
  let summary = "VJP of topk_gate with respect to the logits";
  let description = [{
    With `g = topk_gate(x)` and selection mask fixed:
    `dx = g * (dg - sum(dg * g))` on the selected experts, 0 elsewhere.
  }];
  let arguments = (ins TV_FloatTensor:$input, TV_FloatTensor:$grad, I64Attr:$k);
  let results = (outs TV_FloatTensor:$result);
  let assemblyFormat = "$input `,` $grad `k` $k attr-dict `:` type($result)";
}

def TV_DispatchGradOp : TV_ComputeOp<"dispatch_grad", [
      DeclareOpInterfaceMethods<TV_ShapeRuleOpInterface>,
      DeclareOpInterfaceMethods<TV_SymmetryRuleOpInterface>,
      DeclareOpInterfaceMethods<TV_GradOpInterface>,
      Pure]> {
  let summary = "VJP of dispatch w.r.t. tokens: dx[i] = sum_e (g[i,e] != 0) dy[e,i]";
  let arguments = (ins TV_FloatTensor:$grad, TV_FloatTensor:$gates);
  let results = (outs TV_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `,` $gates attr-dict `:` type($grad) `,` type($gates) `->` type($result)
  }];
  let hasVerifier = 1;
}

def TV_CombineGradOp : TV_ComputeOp<"combine_grad", [
      DeclareOpInterfaceMethods<TV_ShapeRuleOpInterface>,
      DeclareOpInterfaceMethods<TV_SymmetryRuleOpInterface>,
      DeclareOpInterfaceMethods<TV_GradOpInterface>,
      Pure,
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

def TV_MoEGateGradOp : TV_ComputeOp<"moe_gate_grad", [
      DeclareOpInterfaceMethods<TV_ShapeRuleOpInterface>,
      DeclareOpInterfaceMethods<TV_SymmetryRuleOpInterface>,
      DeclareOpInterfaceMethods<TV_GradOpInterface>,
      Pure,
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

def TV_MoEGmmGradOp : TV_ComputeOp<"moe_gmm_grad", [
      DeclareOpInterfaceMethods<TV_ShapeRuleOpInterface>,
      DeclareOpInterfaceMethods<TV_SymmetryRuleOpInterface>,
      DeclareOpInterfaceMethods<TV_GradOpInterface>,
      Pure,
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

#endif // TV_MOE_OPS_TD

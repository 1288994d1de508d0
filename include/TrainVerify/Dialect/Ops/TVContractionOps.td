//===- TVContractionOps.td ---------------------------------*- tablegen -*-===//
#ifndef TV_CONTRACTION_OPS_TD
#define TV_CONTRACTION_OPS_TD

include "TrainVerify/Dialect/TVComputeBase.td"

def TV_MatmulOp : TV_ComputeOp<"matmul", [
      DeclareOpInterfaceMethods<TV_StructuredOpInterface>,
      Pure]> {
  let summary = "Batched matrix product with optionally transposed operands";
  let description = [{
    `lhs` is `[batch..., m, k]` (`[batch..., k, m]` with `transpose_lhs`),
    `rhs` is `[batch..., k, n]` (`[batch..., n, k]` with `transpose_rhs`) or
    rank 2 (shared by every batch). The result is `[batch..., m, n]`.
  }];
  let arguments = (ins TV_AnyTensor:$lhs, TV_AnyTensor:$rhs,
                       UnitAttr:$transpose_lhs, UnitAttr:$transpose_rhs);
  let results = (outs TV_AnyTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)
  }];
  let hasVerifier = 1;
}

def TV_LinearOp : TV_ComputeOp<"linear", [
      DeclareOpInterfaceMethods<TV_StructuredOpInterface>,
      Pure]> {
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

def TV_LinearGradOp : TV_ComputeOp<"linear_grad", [
      DeclareOpInterfaceMethods<TV_StructuredOpInterface>,
      DeclareOpInterfaceMethods<TV_GradOpInterface>,
      Pure,
      AllTypesMatch<["input",
      "dinput"]>, AllTypesMatch<["weight", "dweight"]>]> {
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

#endif // TV_CONTRACTION_OPS_TD

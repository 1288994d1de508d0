//===- TVNormOps.td ----------------------------------------*- tablegen -*-===//
#ifndef TV_NORM_OPS_TD
#define TV_NORM_OPS_TD

include "TrainVerify/Dialect/TVComputeBase.td"

def TV_SoftmaxOp : TV_ComputeOp<"softmax", [
      DeclareOpInterfaceMethods<TV_StructuredOpInterface>,
      Pure, SameOperandsAndResultType]> {
  let summary = "exp(x_i) / sum_j exp(x_j) along `dim`";
  let arguments = (ins TV_FloatTensor:$input, I64Attr:$dim);
  let results = (outs TV_FloatTensor:$result);
  let assemblyFormat = "$input `dim` $dim attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def TV_LayerNormOp : TV_ComputeOp<"layernorm", [
      DeclareOpInterfaceMethods<TV_StructuredOpInterface>,
      Pure]> {
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

def TV_RMSNormOp : TV_ComputeOp<"rmsnorm", [
      DeclareOpInterfaceMethods<TV_StructuredOpInterface>,
      Pure]> {
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

def TV_SoftmaxGradOp : TV_ComputeOp<"softmax_grad", [
      DeclareOpInterfaceMethods<TV_StructuredOpInterface>,
      DeclareOpInterfaceMethods<TV_GradOpInterface>,
      Pure, SameOperandsAndResultType]> {
  let summary = "VJP of softmax from its output y: y * (dy - sum(dy * y))";
  let arguments = (ins TV_FloatTensor:$output, TV_FloatTensor:$grad,
                       I64Attr:$dim);
  let results = (outs TV_FloatTensor:$result);
  let assemblyFormat = "$output `,` $grad `dim` $dim attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def TV_LayerNormGradOp : TV_ComputeOp<"layernorm_grad", [
      DeclareOpInterfaceMethods<TV_StructuredOpInterface>,
      DeclareOpInterfaceMethods<TV_GradOpInterface>,
      Pure,
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

def TV_RMSNormGradOp : TV_ComputeOp<"rmsnorm_grad", [
      DeclareOpInterfaceMethods<TV_StructuredOpInterface>,
      DeclareOpInterfaceMethods<TV_GradOpInterface>,
      Pure,
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

#endif // TV_NORM_OPS_TD

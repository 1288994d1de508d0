//===- TVOptimizerOps.td - optimizer steps -----------------*- tablegen -*-===//
#ifndef TV_OPTIMIZER_OPS_TD
#define TV_OPTIMIZER_OPS_TD

include "TrainVerify/Dialect/TVComputeBase.td"

def TV_SGDOp : TV_ComputeOp<"sgd", [
      DeclareOpInterfaceMethods<TV_StructuredOpInterface>,
      Pure, SameOperandsAndResultType]> {
  let summary = "SGD update: w - lr * g";
  let arguments = (ins TV_FloatTensor:$weight, TV_FloatTensor:$grad,
                       F64Attr:$lr);
  let results = (outs TV_FloatTensor:$result);
  let assemblyFormat = "$weight `,` $grad `lr` $lr attr-dict `:` type($result)";
}

def TV_AdamOp : TV_ComputeOp<"adam", [
      DeclareOpInterfaceMethods<TV_StructuredOpInterface>,
      Pure, AllTypesMatch<["weight", "grad", "m",
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

#endif // TV_OPTIMIZER_OPS_TD

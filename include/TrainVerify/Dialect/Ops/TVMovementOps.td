//===- TVMovementOps.td ------------------------------------*- tablegen -*-===//
#ifndef TV_MOVEMENT_OPS_TD
#define TV_MOVEMENT_OPS_TD

include "TrainVerify/Dialect/TVComputeBase.td"

def TV_ReshapeOp : TV_ComputeOp<"reshape", [
      DeclareOpInterfaceMethods<TV_ShapeRuleOpInterface>,
      DeclareOpInterfaceMethods<TV_SymmetryRuleOpInterface>,
      Pure]> {
  let summary = "View with another shape (row-major, same element count)";
  let arguments = (ins TV_AnyTensor:$input);
  let results = (outs TV_AnyTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def TV_TransposeOp : TV_ComputeOp<"transpose", [
      DeclareOpInterfaceMethods<TV_ShapeRuleOpInterface>,
      DeclareOpInterfaceMethods<TV_SymmetryRuleOpInterface>,
      Pure]> {
  let summary = "Permutes dimensions: result dim i is input dim perm[i]";
  let arguments = (ins TV_AnyTensor:$input, DenseI64ArrayAttr:$perm);
  let results = (outs TV_AnyTensor:$result);
  let assemblyFormat = [{
    $input `perm` $perm attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
  let hasFolder = 1;
}

def TV_SliceOp : TV_ComputeOp<"slice", [
      DeclareOpInterfaceMethods<TV_ShapeRuleOpInterface>,
      DeclareOpInterfaceMethods<TV_SymmetryRuleOpInterface>,
      Pure]> {
  let summary = "Static box [start, start + result shape)";
  let arguments = (ins TV_AnyTensor:$input, DenseI64ArrayAttr:$start);
  let results = (outs TV_AnyTensor:$result);
  let assemblyFormat = [{
    $input `start` $start attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
  let hasFolder = 1;
}

def TV_ConcatOp : TV_ComputeOp<"concat", [
      DeclareOpInterfaceMethods<TV_ShapeRuleOpInterface>,
      DeclareOpInterfaceMethods<TV_SymmetryRuleOpInterface>,
      Pure]> {
  let summary = "Concatenation along `dim`";
  let arguments = (ins Variadic<TV_AnyTensor>:$inputs, I64Attr:$dim);
  let results = (outs TV_AnyTensor:$result);
  let assemblyFormat = [{
    $inputs `dim` $dim attr-dict `:` functional-type($inputs, $result)
  }];
  let hasVerifier = 1;
}

def TV_SliceGradOp : TV_ComputeOp<"slice_grad", [
      DeclareOpInterfaceMethods<TV_ShapeRuleOpInterface>,
      DeclareOpInterfaceMethods<TV_SymmetryRuleOpInterface>,
      DeclareOpInterfaceMethods<TV_GradOpInterface>,
      Pure]> {
  let summary = "VJP of slice: dy placed at `start` in zeros of the result shape";
  let arguments = (ins TV_FloatTensor:$grad, DenseI64ArrayAttr:$start);
  let results = (outs TV_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `start` $start attr-dict `:` type($grad) `->` type($result)
  }];
  let hasVerifier = 1;
}

#endif // TV_MOVEMENT_OPS_TD

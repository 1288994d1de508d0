//===- TVReductionOps.td -----------------------------------*- tablegen -*-===//
#ifndef TV_REDUCTION_OPS_TD
#define TV_REDUCTION_OPS_TD

include "TrainVerify/Dialect/TVComputeBase.td"

class TV_ReductionOp<string mnemonic, string sem, Type tensor = TV_FloatTensor>
    : TV_ComputeOp<mnemonic, [
      DeclareOpInterfaceMethods<TV_StructuredOpInterface>,
      Pure]> {
  let summary = mnemonic # " over dimensions";
  let description = "The " # sem # " over `dims`; with `keepdim` the reduced "
    # "dimensions stay with size 1, otherwise they are removed.";
  let arguments = (ins tensor:$input, DenseI64ArrayAttr:$dims,
                       UnitAttr:$keepdim);
  let results = (outs tensor:$result);
  let assemblyFormat = [{
    $input `dims` $dims attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

def TV_SumOp : TV_ReductionOp<"sum", "sum", TV_AnyTensor>;

def TV_IntReduceOp : TV_ComputeOp<"int_reduce", [
      DeclareOpInterfaceMethods<TV_StructuredOpInterface>,
      Pure]> {
  let summary = "Bitwise or order reduction of integers over dimensions";
  let description = [{
    The reduction by `fn` (one of `tv.int_binary`'s associative
    operations: `andi`, `ori`, `xori`, `maxsi`, `minsi`, `maxui`, `minui`)
    over `dims`, on n-bit integers; with `keepdim` the reduced dimensions
    stay with size 1.

    ```mlir
    %r = tv.int_reduce andi %x dims [1] : tensor<3x8xi32> -> tensor<3xi32>
    ```
  }];
  let arguments = (ins TV_IntFnAttr:$fn, TV_IdTensor:$input,
                       DenseI64ArrayAttr:$dims, UnitAttr:$keepdim);
  let results = (outs TV_IdTensor:$result);
  let assemblyFormat = [{
    custom<IntFnKeyword>($fn) $input `dims` $dims attr-dict `:` type($input)
    `->` type($result)
  }];
  let hasVerifier = 1;
}
def TV_MeanOp : TV_ReductionOp<"mean", "arithmetic mean">;
def TV_MaxOp : TV_ReductionOp<"max", "maximum">;
def TV_LogSumExpOp : TV_ReductionOp<"logsumexp",
    "log of the sum of the exponentials (`log(sum(exp(x)))`, PyTorch's "
    "`torch.logsumexp`; flash attention keeps it per row for the backward)">;

def TV_MaxGradOp : TV_ComputeOp<"max_grad", [
      DeclareOpInterfaceMethods<TV_StructuredOpInterface>,
      DeclareOpInterfaceMethods<TV_GradOpInterface>,
      Pure]> {
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

def TV_LogSumExpGradOp : TV_ComputeOp<"logsumexp_grad", [
      DeclareOpInterfaceMethods<TV_StructuredOpInterface>,
      DeclareOpInterfaceMethods<TV_GradOpInterface>,
      Pure]> {
  let summary = "VJP of logsumexp: dy times the softmax over `dims`";
  let description = [{
    `dx = dy * exp(x - logsumexp(x))` with `dy` broadcast over the reduced
    dimensions; `grad` has the forward result's shape (`keepdim` as in
    `tv.logsumexp`).
  }];
  let arguments = (ins TV_FloatTensor:$input, TV_FloatTensor:$grad,
                       DenseI64ArrayAttr:$dims, UnitAttr:$keepdim);
  let results = (outs TV_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $grad `dims` $dims attr-dict `:` type($input) `,` type($grad)
    `->` type($result)
  }];
  let hasVerifier = 1;
}

def TV_MeanGradOp : TV_ComputeOp<"mean_grad", [
      DeclareOpInterfaceMethods<TV_StructuredOpInterface>,
      DeclareOpInterfaceMethods<TV_GradOpInterface>,
      Pure]> {
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

#endif // TV_REDUCTION_OPS_TD

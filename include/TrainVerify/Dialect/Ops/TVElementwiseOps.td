//===- TVElementwiseOps.td ---------------------------------*- tablegen -*-===//
#ifndef TV_ELEMENTWISE_OPS_TD
#define TV_ELEMENTWISE_OPS_TD

include "TrainVerify/Dialect/TVComputeBase.td"

class TV_BinaryOp<string mnemonic, string sem, Type tensor = TV_FloatTensor>
    : TV_ComputeOp<mnemonic, [
      DeclareOpInterfaceMethods<TV_StructuredOpInterface>,
      Pure]> {
  let summary = "Elementwise " # mnemonic # " with numpy broadcasting";
  let description = "`result = lhs " # sem # " rhs`, after broadcasting both "
    # "operands to the result shape (trailing dimensions aligned; a dimension "
    # "of size 1 stretches).";
  let arguments = (ins tensor:$lhs, tensor:$rhs);
  let results = (outs tensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)
  }];
  let hasVerifier = 1;
}

// Ring operations take integers too: an n-bit integer tensor holds values
// modulo 2^n (docs/integers.md).
def TV_AddOp : TV_BinaryOp<"add", "+", TV_AnyTensor>;
def TV_SubOp : TV_BinaryOp<"sub", "-", TV_AnyTensor>;
def TV_MulOp : TV_BinaryOp<"mul", "*", TV_AnyTensor>;
def TV_DivOp : TV_BinaryOp<"div", "/">;

def TV_IntBinaryOp : TV_ComputeOp<"int_binary", [
      DeclareOpInterfaceMethods<TV_StructuredOpInterface>,
      Pure]> {
  let summary = "Elementwise bitwise, order or shift operation on integers";
  let description = [{
    `result = fn(lhs, rhs)` on n-bit two's complement integers, after
    broadcasting both operands to the result shape, with `arith`'s names
    and meanings: `andi`, `ori`, `xori`; `maxsi`, `minsi` (signed),
    `maxui`, `minui` (unsigned); `shli`, `shrsi` (arithmetic), `shrui`
    (logical) shift `lhs` by `rhs`. A shift by an amount outside `[0, n)`
    is poison in `arith`; tv reads it as SMT-LIB does (0, or the sign for
    `shrsi`). Operands and result share one integer element type.

    ```mlir
    %m = tv.int_binary maxui %a, %b : tensor<4xi32>, tensor<4xi32> -> tensor<4xi32>
    ```
  }];
  let arguments = (ins TV_IntFnAttr:$fn, TV_IdTensor:$lhs, TV_IdTensor:$rhs);
  let results = (outs TV_IdTensor:$result);
  let assemblyFormat = [{
    custom<IntFnKeyword>($fn) $lhs `,` $rhs attr-dict `:` type($lhs) `,`
    type($rhs) `->` type($result)
  }];
  let hasVerifier = 1;
}

class TV_ScalarOp<string mnemonic, string sem, Type tensor = TV_FloatTensor>
    : TV_ComputeOp<mnemonic, [
      DeclareOpInterfaceMethods<TV_StructuredOpInterface>,
      Pure,
      SameOperandsAndResultType]> {
  let summary = "Elementwise " # mnemonic # " with a constant";
  let description = "`result = " # sem # "` for every element `x`.";
  let arguments = (ins tensor:$input, F64Attr:$scalar);
  let results = (outs tensor:$result);
  let assemblyFormat = "$input `,` $scalar attr-dict `:` type($result)";
}

def TV_AddScalarOp : TV_ScalarOp<"add_scalar", "x + scalar", TV_AnyTensor> {
  let hasFolder = 1;
  let hasVerifier = 1;
}

def TV_SubScalarOp : TV_ScalarOp<"sub_scalar", "x - scalar", TV_AnyTensor> {
  let hasFolder = 1;
  let hasVerifier = 1;
}

def TV_RSubScalarOp : TV_ScalarOp<"rsub_scalar", "scalar - x", TV_AnyTensor> {
  let hasVerifier = 1;
}

def TV_DivScalarOp : TV_ScalarOp<"div_scalar", "x / scalar"> {
  let hasVerifier = 1;
  let hasFolder = 1;
}

def TV_ScaleOp : TV_ScalarOp<"scale", "x * scalar", TV_AnyTensor> {
  let hasFolder = 1;
  let hasVerifier = 1;
}

def TV_PowOp : TV_ScalarOp<"pow", "x ** scalar"> {
  let hasFolder = 1;
}

class TV_UnaryOp<string mnemonic, string sem, Type tensor = TV_FloatTensor>
    : TV_ComputeOp<mnemonic, [
      DeclareOpInterfaceMethods<TV_StructuredOpInterface>,
      Pure,
      SameOperandsAndResultType]> {
  let summary = "Elementwise " # mnemonic;
  let description = "`result = " # sem # "` for every element `x`.";
  let arguments = (ins tensor:$input);
  let results = (outs tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
}

def TV_NegOp : TV_UnaryOp<"neg", "-x", TV_AnyTensor> {
  let hasVerifier = 1;
}
def TV_ExpOp : TV_UnaryOp<"exp", "exp(x)">;
def TV_LogOp : TV_UnaryOp<"log", "log(x)">;
def TV_SqrtOp : TV_UnaryOp<"sqrt", "sqrt(x)">;
def TV_RsqrtOp : TV_UnaryOp<"rsqrt", "1 / sqrt(x)">;
def TV_SigmoidOp : TV_UnaryOp<"sigmoid", "1 / (1 + exp(-x))">;
def TV_SiluOp : TV_UnaryOp<"silu", "x * sigmoid(x)">;
def TV_GeluOp : TV_UnaryOp<"gelu", "x * Phi(x) (exact, erf form)">;
def TV_ReluOp : TV_UnaryOp<"relu", "max(x, 0)">;
def TV_TanhOp : TV_UnaryOp<"tanh", "tanh(x)">;
def TV_AbsOp : TV_UnaryOp<"abs", "|x|", TV_AnyTensor> {
  let hasVerifier = 1;
}

def TV_CopyOp : TV_ComputeOp<"copy", [
      DeclareOpInterfaceMethods<TV_StructuredOpInterface>,
      Pure, SameOperandsAndResultType]> {
  let summary = "Identity (copy, contiguous, dtype cast to the same math)";
  let arguments = (ins TV_AnyTensor:$input);
  let results = (outs TV_AnyTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
  let hasFolder = 1;
}

def TV_BroadcastOp : TV_ComputeOp<"broadcast", [
      DeclareOpInterfaceMethods<TV_StructuredOpInterface>,
      Pure]> {
  let summary = "Broadcasts to the result shape (numpy rules)";
  let arguments = (ins TV_AnyTensor:$input);
  let results = (outs TV_AnyTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def TV_IotaOp : TV_ComputeOp<"iota", [
      DeclareOpInterfaceMethods<TV_StructuredOpInterface>,
      Pure]> {
  let summary = "Positions along one dimension";
  let description = [{
    `result[i_0, ..., i_n] = i_dim + offset`: each element's index along
    `dim`, counted from `offset` (the global position of a block that starts
    at `offset`, as MLIR's `linalg.index` gives inside a partitioned
    program plus the offset the partitioner must add). The dimension is
    pinned: shape reduction keeps its size, so that positions and offsets
    stay those of the program.
  }];
  let arguments = (ins I64Attr:$dim, I64Attr:$offset);
  let results = (outs TV_AnyTensor:$result);
  let assemblyFormat = "`dim` $dim `offset` $offset attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def TV_ZerosOp : TV_ComputeOp<"zeros", [
      DeclareOpInterfaceMethods<TV_StructuredOpInterface>,
      Pure]> {
  let summary = "A tensor of zeros";
  let description = [{
    Every element is zero. A rank's share of a collective it has nothing to
    add to: when a flat parameter buffer's all-gather is read per parameter
    (decision 119), a rank that owns no part of a parameter adds zeros.
  }];
  let results = (outs TV_FloatTensor:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
}

class TV_UnaryGradOp<string mnemonic, string sem>
    : TV_ComputeOp<mnemonic # "_grad", [
      DeclareOpInterfaceMethods<TV_StructuredOpInterface>,
      DeclareOpInterfaceMethods<TV_GradOpInterface>,
      Pure,
      SameOperandsAndResultType]> {
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

def TV_MulGradOp : TV_ComputeOp<"mul_grad", [
      DeclareOpInterfaceMethods<TV_StructuredOpInterface>,
      DeclareOpInterfaceMethods<TV_GradOpInterface>,
      Pure, SameOperandsAndResultType]> {
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

def TV_PowGradOp : TV_ComputeOp<"pow_grad", [
      DeclareOpInterfaceMethods<TV_StructuredOpInterface>,
      DeclareOpInterfaceMethods<TV_GradOpInterface>,
      Pure, SameOperandsAndResultType]> {
  let summary = "VJP of pow: dy * c * x^(c-1)";
  let arguments = (ins TV_FloatTensor:$input, TV_FloatTensor:$grad,
                       F64Attr:$exponent);
  let results = (outs TV_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $grad `exponent` $exponent attr-dict `:` type($result)
  }];
}

#endif // TV_ELEMENTWISE_OPS_TD

//===- TVComputeBase.td - the base of tv's compute ops ----*- tablegen -*-===//
#ifndef TV_COMPUTE_BASE_TD
#define TV_COMPUTE_BASE_TD

include "TrainVerify/Dialect/TVBase.td"
include "TrainVerify/Dialect/TVAttrs.td"
include "TrainVerify/Interfaces/TVOpInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"

// An op of spec and rank programs with a meaning: everything about it lives
// in its family's file, `Ops/TV<Family>Ops.td` for its syntax and
// `lib/Dialect/Ops/<Family>.cpp` for its verifier, its evaluation and its
// structure or rules. A backward op sits beside its forward op. Linear ops
// (add, mul, matmul, transpose, reshape, sum, mean, broadcast, concat, the
// collectives) have VJPs that are themselves ops of the dialect; the `_grad`
// ops are the VJPs that are not.
class TV_ComputeOp<string mnemonic, list<Trait> traits = []>
    : TV_ProgramOp<mnemonic, !listconcat(traits, [
        DeclareOpInterfaceMethods<TV_EvaluableOpInterface>])>;

#endif // TV_COMPUTE_BASE_TD

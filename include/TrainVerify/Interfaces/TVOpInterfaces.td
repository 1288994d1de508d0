//===- TVOpInterfaces.td - what tv knows about an op ------*- tablegen -*-===//
//
// Everything the verifier needs from an op is asked through these
// interfaces: its meaning (evaluation over a domain), its structure (loops
// and indexing maps, from which shape reduction and symmetry folding derive
// their rules), rules for ops that are not structured, and which operand of
// a backward op is the cotangent. tv's ops implement them in their family
// file (lib/Dialect/Ops); other dialects' ops get them as external models.
//
//===----------------------------------------------------------------------===//
#ifndef TV_OP_INTERFACES_TD
#define TV_OP_INTERFACES_TD

include "mlir/IR/OpBase.td"

def TV_EvaluableOpInterface : OpInterface<"EvaluableOpInterface"> {
  let cppNamespace = "::mlir::tv";
  let description = [{
    The op's meaning, written once as a template over a value domain and
    instantiated twice: over symbolic terms (what the prover uses) and over
    doubles (what replays a counterexample). `e.in` holds the operands'
    values in operand order and the op appends one value per result to
    `e.out`. Returns an error message for input it has no meaning for.
  }];
  let methods = [
    InterfaceMethod<"Evaluates the op over symbolic terms.",
      "::mlir::tv::EvalStatus", "evaluateSymbolic",
      (ins "::mlir::tv::Evaluator<::mlir::tv::SymDomain> &":$e)>,
    InterfaceMethod<"Evaluates the op over doubles.",
      "::mlir::tv::EvalStatus", "evaluateConcrete",
      (ins "::mlir::tv::Evaluator<::mlir::tv::ConcreteDomain> &":$e)>,
    InterfaceMethod<[{Evaluates the op over exact rationals (doubles where
      the op is transcendental).}],
      "::mlir::tv::EvalStatus", "evaluateExact",
      (ins "::mlir::tv::Evaluator<::mlir::tv::ExactDomain> &":$e)>,
  ];
}

def TV_CollectiveOpInterface : OpInterface<"CollectiveOpInterface"> {
  let cppNamespace = "::mlir::tv";
  let description = [{
    An op evaluated once per group instance rather than once per rank:
    `e.in[i]` is the operand of the group member with group index `i`, and
    the op appends one value per member to `e.out`.
  }];
  let methods = [
    InterfaceMethod<[{The group of `rank` (sorted), or an empty list if it
      cannot be formed.}],
      "::llvm::SmallVector<int64_t>", "getGroup", (ins "int64_t":$rank)>,
    InterfaceMethod<[{The group size the verifier checks shapes against (0 if
      unknown).}], "int64_t", "getGroupSize", (ins)>,
    InterfaceMethod<"Evaluates one group instance over symbolic terms.",
      "::mlir::tv::EvalStatus", "evaluateGroupSymbolic",
      (ins "::mlir::tv::Evaluator<::mlir::tv::SymDomain> &":$e)>,
    InterfaceMethod<"Evaluates one group instance over doubles.",
      "::mlir::tv::EvalStatus", "evaluateGroupConcrete",
      (ins "::mlir::tv::Evaluator<::mlir::tv::ConcreteDomain> &":$e)>,
    InterfaceMethod<"Evaluates one group instance over exact rationals.",
      "::mlir::tv::EvalStatus", "evaluateGroupExact",
      (ins "::mlir::tv::Evaluator<::mlir::tv::ExactDomain> &":$e)>,
  ];
}

def TV_StructuredOpInterface : OpInterface<"StructuredOpInterface"> {
  let cppNamespace = "::mlir::tv";
  let description = [{
    A result computed as a loop nest: one kind per loop (parallel, a
    contraction or accumulation summing its iterations, a normalization that
    needs the loop's whole extent, or pinned at its size) and a projected
    permutation per operand and for the result from loops to dimensions (a
    constant 0 for a broadcast dimension of size 1), and which operands the
    result reads. The shape-reduction equalities and size floors
    and the symmetry facts of such an op follow from this alone
    (`deriveShapeConstraints`, `deriveFoldFact`).
  }];
  let methods = [
    InterfaceMethod<"The loop nest computing result `result`.",
      "::mlir::tv::OpStructure", "getStructure", (ins "unsigned":$result)>,
  ];
}

def TV_ShapeRuleOpInterface : OpInterface<"ShapeRuleOpInterface"> {
  let cppNamespace = "::mlir::tv";
  let description = [{
    Shape-reduction constraints of an op that is not structured (reshape,
    slice, rotary, embedding, ...): the equalities, linear and product
    relations between its dimensions that its meaning needs kept when the
    stage is shrunk. An op with neither this nor a structure keeps every
    dimension at its size unless all its tensors have one shape.
  }];
  let methods = [
    InterfaceMethod<"Adds the op's constraints to `c`.",
      "void", "addShapeConstraints", (ins "::mlir::tv::ShapeConstraints &":$c)>,
  ];
}

def TV_SymmetryRuleOpInterface : OpInterface<"SymmetryRuleOpInterface"> {
  let cppNamespace = "::mlir::tv";
  let description = [{
    How an op that is not structured carries a factored mesh axis: given the
    facts of its operands (replicated, factored along a dimension, or a sum
    over the axis' blocks), the fact of result `result`, or `bad` with the
    reason in `why`. Called only when some operand is factored and none is a
    sum. An op with neither this nor a structure is never folded.
  }];
  let methods = [
    InterfaceMethod<"The fact of result `result`.",
      "::mlir::tv::FoldFact", "getFoldFact",
      (ins "::llvm::ArrayRef<::mlir::tv::FoldFact>":$operands,
           "unsigned":$result, "int64_t":$axisSize, "std::string &":$why)>,
  ];
}

def TV_GradOpInterface : OpInterface<"GradOpInterface"> {
  let cppNamespace = "::mlir::tv";
  let description = [{
    A backward (vector-Jacobian product) op: which operand is the incoming
    gradient (the cotangent); the others are the forward op's primal values.
  }];
  let methods = [
    InterfaceMethod<"The operand index of the cotangent.",
      "unsigned", "getCotangentIndex", (ins)>,
  ];
}

#endif // TV_OP_INTERFACES_TD

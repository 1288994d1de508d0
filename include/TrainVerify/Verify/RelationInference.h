//===- RelationInference.h - relations between plan and spec values -*- C++ -*-===//
//
// Runs spec and plan in the exact interpreter on random program inputs and
// finds, for plan values, how they relate to spec values: a block of a spec
// tensor, a sum over a mesh axis' group of such blocks (a partial sum), each
// up to a constant factor; replicas are groups of one. A relation found this
// way is a hypothesis: --tv-infer-lineage makes it a stage cut, and the cut
// stays only if its stage proves it (docs/decisions.md 97).
//
//===----------------------------------------------------------------------===//
#ifndef TRAINVERIFY_VERIFY_RELATIONINFERENCE_H
#define TRAINVERIFY_VERIFY_RELATIONINFERENCE_H

#include "TrainVerify/Dialect/TVOps.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallVector.h"
#include <string>
#include <utility>
#include <vector>

namespace mlir::tv {

/// `box of spec = scaleNum/scaleDen * (sum of each group)`, every group a
/// replica of the others.
struct InferredRelation {
  Value spec;
  SmallVector<int64_t> lower, upper;
  int64_t scaleNum = 1, scaleDen = 1;
  SmallVector<SmallVector<std::pair<int64_t, Value>, 2>> groups;
};

struct InferenceOptions {
  uint64_t seed = 1;
  /// Spec values not to relate (inputs and values with given lineages are
  /// never targets).
  llvm::function_ref<bool(Value)> skipSpec;
  /// Plan values not to relate (those already carrying a given lineage).
  llvm::function_ref<bool(int64_t, Value)> skipPlan;
  /// A program with more elements (over all ranks) runs shape-reduced.
  uint64_t reduceAbove = uint64_t(1) << 20;
  /// The shape reduction's solver budget.
  unsigned timeoutMs = 10000;
};

/// The relations of the plan's values to the spec's computed values, for
/// every spec value whose boxes tile it (a cut must cover its tensor), in
/// spec order. `lineages` are the given ones: those of the spec's inputs
/// draw the plan's inputs, the others shape the reduction of a large
/// program. Failure, with `why`, when the program
/// cannot run in the exact interpreter.
FailureOr<std::vector<InferredRelation>>
inferRelations(SpecOp spec, PlanOp plan, ArrayRef<LineageAttr> lineages,
               const InferenceOptions &options, std::string &why);

} // namespace mlir::tv

#endif

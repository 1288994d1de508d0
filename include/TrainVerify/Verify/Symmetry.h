//===- Symmetry.h - folding a stage along a symmetric mesh axis -*- C++ -*-===//
//
// A stage whose ranks along a mesh axis run the same program on translated
// slices of the spec (data-parallel replicas, tensor-parallel shards of a
// column-parallel linear, ...) is proven once, at coordinate 0 of the axis,
// instead of once per coordinate. The fold is taken only when a dataflow
// analysis of both programs and a check of the lineages show that the proof
// at coordinate 0 implies the claim at every coordinate; docs/symmetry.md
// gives the argument.
//
//===----------------------------------------------------------------------===//
#ifndef TRAINVERIFY_VERIFY_SYMMETRY_H
#define TRAINVERIFY_VERIFY_SYMMETRY_H

#include "TrainVerify/Dialect/TVOps.h"

#include <string>

namespace mlir::tv {

/// Folds `stage` along mesh axis `axis` when that is sound: keeps the ranks at
/// coordinate 0 of the axis, their lineages, and the spec restricted to the
/// block of coordinate 0; marks the plan `folded`. Returns true if the stage
/// was folded; otherwise leaves it untouched and says why in `whyNot`.
bool foldStageAlongAxis(StageOp stage, llvm::StringRef axis,
                        std::string *whyNot = nullptr);

/// Folds `stage` to micro-batch 0 when that is sound: its programs' lanes
/// (the ops of each micro-batch) are micro-batch 0's with renamed inputs,
/// their lineages are micro-batch 0's translated, and the lanes meet only in
/// sums over every micro-batch. Keeps micro-batch 0 and what no micro-batch
/// owns, a sum over the micro-batches becomes its micro-batch-0 term, and the
/// plan is marked `folded_micro_batches`. Otherwise leaves the stage
/// untouched and says why in `whyNot`.
bool foldStageMicroBatches(StageOp stage, std::string *whyNot = nullptr);

/// What folding one stage did.
struct StageFold {
  /// Coordinates (ranks times micro-batches) the stage's proof now covers
  /// beyond its own: 1 if nothing was folded.
  int64_t coordinates = 1;
  bool microBatches = false;
};

/// Folds `stage` along each of `axes` (every mesh axis when empty), then to
/// micro-batch 0 if `microBatches`, each as far as it is sound (what
/// --tv-fold-symmetry does per stage; folding a folded stage again changes
/// nothing). `explain`, if given, hears why a fold was not taken. Fails
/// only on an axis that is not the mesh's, with a diagnostic.
FailureOr<StageFold>
foldStage(StageOp stage, llvm::ArrayRef<std::string> axes, bool microBatches,
          llvm::function_ref<void(const llvm::Twine &)> explain = {});

/// Merges the rank programs of a stage's plan whose bodies are identical
/// (ranks that run the same slice of code: a rank split out by a change in
/// another stage runs the same code here). Returns the number of programs
/// removed.
unsigned mergeIdenticalRankPrograms(StageOp stage);

} // namespace mlir::tv

#endif

//===- StageKey.h - stages equal up to renaming -----------------*- C++ -*-===//
#ifndef TRAINVERIFY_ANALYSIS_STAGEKEY_H
#define TRAINVERIFY_ANALYSIS_STAGEKEY_H

#include "TrainVerify/Dialect/TVOps.h"

#include <string>

namespace mlir::tv {

/// A text that is equal for two stages iff they are identical up to a
/// consistent renaming of tensor names and a translation of their ranks
/// along mesh axes (the same layer on another pipeline stage); stages with
/// equal keys have the same verdict. A translation along an axis is used
/// only where it cannot change what the stage computes: no op of the stage
/// names the axis (collective groups, vocabulary shards), and every
/// point-to-point peer along it is a rank of the stage.
/// With `dataflow`, equal also for stages whose single rank program (run by
/// every rank, no point-to-point pair) lists the same ops in another order:
/// the same verdict, but not the same op sequence (shape reduction, which
/// copies a solution op by op, uses the key without it).
std::string canonicalStageKey(StageOp stage, bool dataflow = false);

/// The rank each rank of `stage` is renamed to in its canonical key.
int64_t canonicalRank(StageOp stage, int64_t rank);

} // namespace mlir::tv

#endif

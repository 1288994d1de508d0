//===- ShapeProgram.h - the shape-reduction integer program -----*- C++ -*-===//
#ifndef TRAINVERIFY_VERIFY_SHAPEPROGRAM_H
#define TRAINVERIFY_VERIFY_SHAPEPROGRAM_H

#include "TrainVerify/Analysis/PlanSchedule.h"
#include "TrainVerify/Dialect/TVOps.h"

namespace mlir::tv {

/// Builds and solves the shape program of one stage (Z3 optimize) and
/// rewrites the stage to the smallest sizes that keep its structure.
/// Emits a diagnostic naming the ops whose constraints conflict when the
/// program is infeasible.
/// `schedule` is the stage's schedule analysis if the caller has it.
LogicalResult reduceStageShapes(StageOp stage, unsigned timeoutMs,
                                const StageSchedule *schedule = nullptr);

} // namespace mlir::tv

#endif

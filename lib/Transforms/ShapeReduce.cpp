//===- ShapeReduce.cpp - --tv-shape-reduce --------------------------------===//
//
// Per stage: one integer variable per tensor dimension (equal dimensions
// merged by union-find), linear constraints from every op and every lineage
// (products for reshapes), lower bounds that keep the stage's structure, and
// Z3's optimizer minimizing the total size. The stage's types, slice
// offsets and lineage boxes are rewritten to the solution.
//
//===----------------------------------------------------------------------===//
#include "TrainVerify/Transforms/Passes.h"
#include "TrainVerify/Transforms/Utils.h"
#include "TrainVerify/Verify/ShapeProgram.h"

namespace mlir::tv {
#define GEN_PASS_DEF_TVSHAPEREDUCE
#include "TrainVerify/Transforms/Passes.h.inc"
} // namespace mlir::tv

using namespace mlir;
using namespace mlir::tv;

namespace {
struct ShapeReducePass : public tv::impl::TVShapeReduceBase<ShapeReducePass> {
  using TVShapeReduceBase::TVShapeReduceBase;
  void runOnOperation() override {
    PhaseTimer timer(getOperation(), "shape_reduce");
    SmallVector<StageOp> stages(getOperation().getOps<StageOp>());
    if (stages.empty()) {
      getOperation().emitError()
          << "no tv.stage to reduce; run --tv-stage-partition first";
      return signalPassFailure();
    }
    bool ok = true;
    for (StageOp stage : stages)
      ok &= succeeded(reduceStageShapes(stage, timeoutMs));
    if (!ok)
      signalPassFailure();
  }
};
} // namespace

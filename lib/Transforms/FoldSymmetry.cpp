//===- FoldSymmetry.cpp - --tv-fold-symmetry ------------------------------===//
//
// Per stage and mesh axis: fold the stage to coordinate 0 of the axis when a
// check of its ranks, lineages and programs shows that the proof there covers
// every coordinate (lib/Verify/Symmetry.cpp, docs/symmetry.md).
//
//===----------------------------------------------------------------------===//
#include "TrainVerify/Transforms/Passes.h"
#include "TrainVerify/Transforms/RunStatus.h"
#include "TrainVerify/Transforms/Utils.h"
#include "TrainVerify/Verify/Symmetry.h"

namespace mlir::tv {
#define GEN_PASS_DEF_TVFOLDSYMMETRY
#include "TrainVerify/Transforms/Passes.h.inc"
} // namespace mlir::tv

using namespace mlir;
using namespace mlir::tv;

namespace {
struct FoldSymmetryPass
    : public tv::impl::TVFoldSymmetryBase<FoldSymmetryPass> {
  using TVFoldSymmetryBase::TVFoldSymmetryBase;
  // One stage at a time: tv.stage is isolated from above, so the pass
  // manager runs the stages in parallel.
  void runOnOperation() override {
    StageOp stage = getOperation();
    PhaseTimer timer(stage, "fold");
    stepPhase("fold", [&] {
      return (size_t)llvm::range_size(
          stage->getParentOp()->getRegion(0).getOps<StageOp>());
    });
    SmallVector<std::string> order(axes.begin(), axes.end());
    FailureOr<StageFold> f =
        foldStage(stage, order, microBatches, [&](const Twine &why) {
          if (explain)
            stage.emitRemark() << why;
        });
    if (failed(f))
      return signalPassFailure();
    if (f->microBatches)
      ++numLaneFolded;
    if (f->coordinates > 1) {
      ++numFolded;
      numCoordinates += f->coordinates - 1;
    }
  }
};
} // namespace

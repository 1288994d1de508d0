//===- FoldSymmetry.cpp - --tv-fold-symmetry ------------------------------===//
//
// Per stage and mesh axis: fold the stage to coordinate 0 of the axis when a
// check of its ranks, lineages and programs shows that the proof there covers
// every coordinate (lib/Verify/Symmetry.cpp, docs/symmetry.md).
//
//===----------------------------------------------------------------------===//
#include "TrainVerify/Transforms/Passes.h"
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
  void runOnOperation() override {
    ModuleOp module = getOperation();
    PhaseTimer timer(module, "fold");
    SmallVector<StageOp> stages(module.getOps<StageOp>());
    if (stages.empty()) {
      module.emitError()
          << "no tv.stage to fold; run --tv-stage-partition first";
      return signalPassFailure();
    }
    bool ok = true;
    for (StageOp stage : stages) {
      PlanOp plan = stage.getPlan();
      MeshOp mesh = plan ? plan.getMeshOp() : MeshOp();
      if (!mesh)
        continue; // the stage verifier reports it
      SmallVector<std::string> order(axes.begin(), axes.end());
      if (order.empty())
        for (Attribute a : mesh.getAxes())
          order.push_back(cast<StringAttr>(a).getValue().str());
      mergeIdenticalRankPrograms(stage);
      int64_t coordinates = 1;
      for (const std::string &axis : order) {
        int64_t idx = mesh.getAxisIndex(axis);
        if (idx < 0) {
          stage.emitError() << "cannot fold along '" << axis
                            << "': not an axis of mesh @"
                            << mesh.getSymName();
          ok = false;
          break;
        }
        std::string why;
        if (foldStageAlongAxis(stage, axis, &why))
          coordinates *= mesh.getSizes()[idx];
        else if (explain && mesh.getSizes()[idx] > 1)
          stage.emitRemark() << "not folded along '" << axis << "': " << why;
      }
      if (ok && microBatches && plan.getMicroBatches() > 1) {
        std::string why;
        if (foldStageMicroBatches(stage, &why)) {
          ++numLaneFolded;
          coordinates *= plan.getMicroBatches();
        } else if (explain) {
          stage.emitRemark() << "micro-batches not folded: " << why;
        }
      }
      if (coordinates > 1) {
        ++numFolded;
        numCoordinates += coordinates - 1;
      }
    }
    if (!ok)
      signalPassFailure();
  }
};
} // namespace

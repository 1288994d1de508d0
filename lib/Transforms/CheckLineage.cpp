//===- CheckLineage.cpp - --tv-check-lineage ------------------------------===//
#include "TrainVerify/Dialect/Lineage.h"
#include "TrainVerify/Transforms/Passes.h"

namespace mlir::tv {
#define GEN_PASS_DEF_TVCHECKLINEAGE
#include "TrainVerify/Transforms/Passes.h.inc"
} // namespace mlir::tv

using namespace mlir;
using namespace mlir::tv;

namespace {
struct CheckLineagePass
    : public tv::impl::TVCheckLineageBase<CheckLineagePass> {
  void runOnOperation() override {
    // A phased plan is read joined (decision 124): the output is the
    // joined plan.
    bool joined = false;
    getOperation().walk([&](PlanOp plan) { joined |= plan.joinPhases(); });
    if (failed(checkLineages(getOperation())))
      signalPassFailure();
    if (!joined)
      markAllAnalysesPreserved();
  }
};
} // namespace

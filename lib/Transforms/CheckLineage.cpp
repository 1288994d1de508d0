//===- CheckLineage.cpp - --tv-check-lineage, --tv-expand-lineage-maps ---===//
#include "TrainVerify/Dialect/Lineage.h"
#include "TrainVerify/Transforms/Passes.h"

namespace mlir::tv {
#define GEN_PASS_DEF_TVCHECKLINEAGE
#define GEN_PASS_DEF_TVEXPANDLINEAGEMAPS
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

struct ExpandLineageMapsPass
    : public tv::impl::TVExpandLineageMapsBase<ExpandLineageMapsPass> {
  void runOnOperation() override {
    if (failed(expandLineageMaps(getOperation())))
      signalPassFailure();
  }
};
} // namespace

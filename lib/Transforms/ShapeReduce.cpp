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
#include "TrainVerify/Dialect/Lineage.h"
#include "TrainVerify/Transforms/RunStatus.h"
#include "TrainVerify/Transforms/Utils.h"
#include "TrainVerify/Verify/ShapeProgram.h"
#include "TrainVerify/Verify/StageVerifier.h"
#include "TrainVerify/Verify/Symmetry.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Threading.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringMap.h"

namespace mlir::tv {
#define GEN_PASS_DEF_TVSHAPEREDUCE
#include "TrainVerify/Transforms/Passes.h.inc"
} // namespace mlir::tv

using namespace mlir;
using namespace mlir::tv;

namespace {
/// Gives `dst` the reduced shapes of `src`, a stage with the same canonical
/// key (so the same ops in the same order, up to tensor names).
void copyShapes(StageOp src, StageOp dst) {
  SmallVector<Operation *> a, b;
  src.getBody().walk<WalkOrder::PreOrder>([&](Operation *op) { a.push_back(op); });
  dst.getBody().walk<WalkOrder::PreOrder>([&](Operation *op) { b.push_back(op); });
  for (auto [x, y] : llvm::zip(a, b)) {
    for (auto [rx, ry] : llvm::zip(x->getResults(), y->getResults()))
      ry.setType(rx.getType());
    for (StringRef attr : {"start", "vocab_offset", "vocab_size", "chunk_size"})
      if (Attribute v = x->getAttr(attr))
        y->setAttr(attr, v);
  }
  auto boxes = [&](ArrayAttr from, ArrayAttr to) {
    SmallVector<Attribute> out;
    for (auto [f, t] : llvm::zip(from, to)) {
      auto lf = cast<LineageAttr>(f), lt = cast<LineageAttr>(t);
      out.push_back(lt.withBox(lf.getLower(), lf.getUpper()));
    }
    return ArrayAttr::get(dst.getContext(), out);
  };
  dst.setAssumesAttr(boxes(src.getAssumes(), dst.getAssumes()));
  dst.setGuaranteesAttr(boxes(src.getGuarantees(), dst.getGuarantees()));
}

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
    // Stages identical up to renaming (repeated layers, micro-batches) have
    // the same shape program: solve it once and copy the solution.
    bool ok = true;
    // Folding is per stage and a stage is isolated from above: the stages
    // fold in parallel (diagnostics in stage order).
    // A stage's lineage maps are folded as maps; the statements left are
    // then written out (decision 127), in the same parallel step.
    std::vector<char> foldFailed(stages.size(), 0);
    {
      MLIRContext *ctx = &getContext();
      ParallelDiagnosticHandler handler(ctx);
      beginPhase("micro-batch fold", stages.size());
      parallelFor(ctx, 0, stages.size(), [&](size_t i) {
        handler.setOrderIDForThread(i);
        foldFailed[i] =
            (fold && failed(foldStage(stages[i], {}, /*microBatches=*/true))) ||
            failed(expandLineageMaps(stages[i]));
        handler.eraseOrderIDForThread();
        advancePhase();
      });
    }
    llvm::StringMap<StageOp> solved;
    beginPhase("shape reduction", stages.size());
    auto progress = llvm::make_scope_exit(endPhase);
    for (auto [i, stage] : llvm::enumerate(stages)) {
      auto step = llvm::make_scope_exit([] { advancePhase(); });
      if (foldFailed[i]) {
        ok = false;
        continue;
      }
      // The boxes before reduction, for the reports (kept if an earlier
      // reduction recorded them).
      if (!stage.getFullGuaranteesAttr())
        stage.setFullGuaranteesAttr(stage.getGuaranteesAttr());
      std::string key = canonicalStageKey(stage);
      auto it = solved.find(key);
      if (it != solved.end()) {
        copyShapes(it->second, stage);
        continue;
      }
      if (succeeded(reduceStageShapes(stage, timeoutMs,
                                      &getChildAnalysis<StageSchedule>(stage))))
        solved[key] = stage;
      else
        ok = false;
    }
    if (!ok)
      return signalPassFailure();
    // Types changed, ops did not: the schedules stay valid for --tv-verify.
    markAnalysesPreserved<StageSchedule>();
  }
};
} // namespace

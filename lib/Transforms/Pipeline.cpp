//===- Pipeline.cpp - --tv-verify-pipeline --------------------------------===//
#include "TrainVerify/Transforms/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"

using namespace mlir;
using namespace mlir::tv;

namespace {
struct VerifyPipelineOptions
    : public PassPipelineOptions<VerifyPipelineOptions> {
  Option<unsigned> threads{*this, "threads",
                           llvm::cl::desc("Worker threads (0: all cores)"),
                           llvm::cl::init(0)};
  Option<unsigned> stageTimeoutMs{
      *this, "stage-timeout-ms",
      llvm::cl::desc("Solver timeout per stage in milliseconds"),
      llvm::cl::init(60000)};
  Option<unsigned> stageMemoryMb{
      *this, "stage-memory-mb",
      llvm::cl::desc("Memory a stage's symbolic terms may take (MB)"),
      llvm::cl::init(4096)};
  Option<std::string> statsFile{
      *this, "stats-file", llvm::cl::desc("Write run statistics as JSON")};
  Option<std::string> smtlibDir{
      *this, "smtlib-dir",
      llvm::cl::desc("Write each stage's query as SMT-LIB 2 here")};
  Option<std::string> extractDir{
      *this, "extract-dir",
      llvm::cl::desc("Write each stage that is not proven here, as a "
                     "module that re-verifies alone and as a picture")};
  Option<std::string> onlyStage{
      *this, "only-stage",
      llvm::cl::desc("Verify only this stage, by index or name")};
  Option<bool> fold{
      *this, "fold",
      llvm::cl::desc("Fold stages along symmetric mesh axes "
                     "(--tv-fold-symmetry) before shape reduction"),
      llvm::cl::init(true)};
  Option<bool> keepStages{
      *this, "keep-stages",
      llvm::cl::desc("Keep the proven stages in the output module (by "
                     "default the output is the module without them)"),
      llvm::cl::init(false)};
};
} // namespace

void mlir::tv::buildVerifyPipeline(OpPassManager &pm,
                                   const TVVerifyOptions &options, bool fold) {
  pm.addPass(createTVSSACanonicalize());
  pm.addPass(createTVStagePartition());
  if (fold)
    pm.addNestedPass<StageOp>(createTVFoldSymmetry());
  TVShapeReduceOptions reduce;
  reduce.fold = fold;
  pm.addPass(createTVShapeReduce(reduce));
  pm.addPass(createTVVerify(options));
}

void mlir::tv::registerTVPipelines() {
  PassPipelineRegistration<VerifyPipelineOptions>(
      "tv-verify-pipeline",
      "SSA canonicalization, stage partition, shape reduction and "
      "verification in one go",
      [](OpPassManager &pm, const VerifyPipelineOptions &o) {
        TVVerifyOptions v;
        v.threads = o.threads;
        v.stageTimeoutMs = o.stageTimeoutMs;
        v.stageMemoryMb = o.stageMemoryMb;
        v.statsFile = o.statsFile;
        v.smtlibDir = o.smtlibDir;
        v.onlyStage = o.onlyStage;
        v.extractDir = o.extractDir;
        v.dropStages = !o.keepStages;
        buildVerifyPipeline(pm, v, o.fold);
      });
}

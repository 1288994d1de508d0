//===- Translations.cpp - registration of tv translations -----------------===//
#include "TrainVerify/Translate/Translations.h"
#include "TrainVerify/Dialect/InputLimits.h"
#include "TrainVerify/Dialect/TVOps.h"
#include "TrainVerify/Verify/StageVerifier.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Tools/ParseUtilities.h"
#include "mlir/Tools/mlir-translate/Translation.h"
#include "llvm/Support/SourceMgr.h"

using namespace mlir;

namespace mlir::tv {
LogicalResult exportPlanSummary(ModuleOp module, llvm::raw_ostream &os);
}

/// Each translation reads only its own options: the options of the
/// model-config and shard-partition imports, given to another
/// translation, would be ignored without a word, so they are refused.
static LogicalResult refuseOtherOptions(Location loc, StringRef translation) {
  if (translation != "import-model-config" &&
      failed(tv::refuseModelConfigOptions(loc, translation)))
    return failure();
  if (translation != "import-shard-partition" &&
      failed(tv::refuseShardImportOptions(loc, translation)))
    return failure();
  return success();
}

/// The solver query of every stage, as SMT-LIB 2: declarations, the
/// assumptions that could not be substituted, the negated guarantees. Each
/// stage's query stands alone (a `(reset)` before it), so an outside solver
/// run on the file answers once per stage, in stage order: unsat where the
/// stage holds, sat where it does not.
static LogicalResult exportSmtLib(ModuleOp module, llvm::raw_ostream &os) {
  SmallVector<tv::StageOp> stages(module.getOps<tv::StageOp>());
  if (stages.empty())
    return module.emitError()
           << "no tv.stage to export; run tv-opt --tv-stage-partition first";
  tv::StageOptions opts;
  opts.wantSmtLib = true;
  opts.queryOnly = true;
  for (tv::StageOp stage : stages) {
    tv::StageResult r = tv::verifyStage(stage, opts);
    if (r.smtlib.empty())
      return stage.emitError() << "cannot build the query: " << r.headline;
    os << r.smtlib;
  }
  return success();
}

llvm::ArrayRef<llvm::StringRef> mlir::tv::tvTranslationNames() {
  // Keep in step with the registrations below (test/Tools/help_version.test
  // checks that --help lists each).
  static const llvm::StringRef names[] = {
      "import-nnscaler-json", "import-json-plan",  "import-model-config",
      "export-json-plan",     "export-smtlib",     "export-plan-summary",
      "import-shard-partition"};
  return names;
}

/// An exporter's diagnostics point at the op's source line; the module's
/// generic form after them (mlir-translate's default) would only repeat the
/// input.
static void quietOpDiagnostics(Operation *op) {
  op->getContext()->printOpOnDiagnostic(false);
}

namespace {
/// MLIR's TranslateFromMLIRRegistration for a tv module, with the input's
/// nesting checked before MLIR's parser (which recurses once per level)
/// reads it.
struct TranslateFromTVRegistration : TranslateRegistration {
  TranslateFromTVRegistration(StringRef name, StringRef description,
                              const TranslateFromMLIRFunction &function)
      : TranslateRegistration(
            name, description,
            [function](const std::shared_ptr<llvm::SourceMgr> &sourceMgr,
                       llvm::raw_ostream &os,
                       MLIRContext *ctx) -> LogicalResult {
              DialectRegistry registry;
              registry.insert<tv::TVDialect>();
              ctx->appendDialectRegistry(registry);
              if (failed(tv::checkMlirNesting(*sourceMgr, ctx)))
                return failure();
              OwningOpRef<Operation *> op = parseSourceFileForTool(
                  sourceMgr, ParserConfig(ctx), /*insertImplicitModule=*/true);
              if (!op || failed(verify(*op)))
                return failure();
              return function(op.get(), os);
            }) {}
};
} // namespace

void mlir::tv::registerTVTranslations() {
  static TranslateToMLIRRegistration shard(
      "import-shard-partition",
      "MLIR's shard-partition: an annotated function and its partitioned "
      "output (--partitioned) to a tv module",
      [](llvm::SourceMgr &sourceMgr, MLIRContext *ctx) {
        if (failed(refuseOtherOptions(inputFileLoc(sourceMgr, ctx),
                                      "import-shard-partition")))
          return OwningOpRef<Operation *>();
        return importShardPartition(sourceMgr, ctx);
      },
      registerShardImportDialects);
  static TranslateFromTVRegistration summary(
      "export-plan-summary", "JSON summary of a tv module",
      [](Operation *op, llvm::raw_ostream &os) {
        quietOpDiagnostics(op);
        if (failed(refuseOtherOptions(op->getLoc(), "export-plan-summary")))
          return failure();
        return exportPlanSummary(cast<ModuleOp>(op), os);
      });
  static TranslateToMLIRRegistration nnscaler(
      "import-nnscaler-json",
      "nnScaler execution plan (verdict-plan-json/1) to a tv module",
      [](llvm::SourceMgr &sourceMgr, MLIRContext *ctx) {
        if (failed(refuseOtherOptions(inputFileLoc(sourceMgr, ctx),
                                            "import-nnscaler-json")))
          return OwningOpRef<Operation *>();
        return importNnScalerJson(sourceMgr, ctx);
      });
  static TranslateToMLIRRegistration jsonIn(
      "import-json-plan", "tv JSON plan interchange (docs/json-plan.md)",
      [](llvm::SourceMgr &sourceMgr, MLIRContext *ctx) {
        if (failed(refuseOtherOptions(inputFileLoc(sourceMgr, ctx),
                                            "import-json-plan")))
          return OwningOpRef<Operation *>();
        return importJsonPlan(sourceMgr, ctx);
      });
  static TranslateToMLIRRegistration modelConfig(
      "import-model-config",
      "Llama3 training step (spec, dp/tp/pp plan, lineages) from a model "
      "config.json; see --parallel, --layers, --seq, --micro-batch-size",
      [](llvm::SourceMgr &sourceMgr, MLIRContext *ctx) {
        if (failed(refuseOtherOptions(inputFileLoc(sourceMgr, ctx),
                                      "import-model-config")))
          return OwningOpRef<Operation *>();
        return importModelConfig(sourceMgr, ctx);
      });
  static TranslateFromTVRegistration jsonOut(
      "export-json-plan", "tv module to the JSON plan interchange",
      [](Operation *op, llvm::raw_ostream &os) {
        quietOpDiagnostics(op);
        if (failed(refuseOtherOptions(op->getLoc(), "export-json-plan")))
          return failure();
        return exportJsonPlan(cast<ModuleOp>(op), os);
      });
  static TranslateFromTVRegistration smtlib(
      "export-smtlib", "SMT-LIB 2 query of every stage of a partitioned module",
      [](Operation *op, llvm::raw_ostream &os) {
        quietOpDiagnostics(op);
        if (failed(refuseOtherOptions(op->getLoc(), "export-smtlib")))
          return failure();
        return exportSmtLib(cast<ModuleOp>(op), os);
      });
}

//===- Translations.cpp - registration of tv translations -----------------===//
#include "TrainVerify/Translate/Translations.h"
#include "TrainVerify/Dialect/TVOps.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Tools/mlir-translate/Translation.h"

using namespace mlir;

namespace mlir::tv {
LogicalResult exportPlanSummary(ModuleOp module, llvm::raw_ostream &os);
}

void mlir::tv::registerTVTranslations() {
  static TranslateFromMLIRRegistration summary(
      "export-plan-summary", "JSON summary of a tv module",
      [](Operation *op, llvm::raw_ostream &os) {
        return exportPlanSummary(cast<ModuleOp>(op), os);
      },
      [](DialectRegistry &registry) { registry.insert<tv::TVDialect>(); });
}

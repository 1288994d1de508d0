//===- tv-translate.cpp - importers and exporters of tv modules -----------===//
#include "TrainVerify/Dialect/TVOps.h"
#include "TrainVerify/Translate/Translations.h"
#include "TrainVerify/Transforms/Utils.h"

#include "mlir/Tools/mlir-translate/MlirTranslateMain.h"

int main(int argc, char **argv) {
  mlir::tv::registerTVTranslations();
  mlir::tv::setUpToolOptions("tv-translate");
  std::vector<char *> args = mlir::tv::withQuietOpDiagnostics(argc, argv);
  return mlir::tv::exitStatus(mlir::mlirTranslateMain(
      (int)args.size(), args.data(), "tv importers and exporters\n"));
}

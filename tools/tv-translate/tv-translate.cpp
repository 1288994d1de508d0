//===- tv-translate.cpp - importers and exporters of tv modules -----------===//
#include "TrainVerify/Dialect/TVOps.h"
#include "TrainVerify/Translate/Translations.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Tools/mlir-translate/MlirTranslateMain.h"

int main(int argc, char **argv) {
  mlir::tv::registerTVTranslations();
  return mlir::failed(
      mlir::mlirTranslateMain(argc, argv, "tv importers and exporters\n"));
}

//===- tv-translate.cpp - importers and exporters of tv modules -----------===//
#include "TrainVerify/Dialect/TVOps.h"
#include "TrainVerify/Translate/Translations.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringRef.h"
#include <vector>
#include "mlir/Tools/mlir-translate/MlirTranslateMain.h"

int main(int argc, char **argv) {
  mlir::tv::registerTVTranslations();
  // As in tv-opt: a diagnostic names its op; do not dump the module after it.
  std::vector<char *> args(argv, argv + argc);
  bool explicitFlag = false;
  for (int i = 1; i < argc; ++i)
    explicitFlag |= llvm::StringRef(argv[i]).contains("print-op-on-diagnostic");
  static char quiet[] = "--mlir-print-op-on-diagnostic=false";
  if (!explicitFlag)
    args.insert(args.begin() + 1, quiet);
  return mlir::failed(mlir::mlirTranslateMain(
      (int)args.size(), args.data(), "tv importers and exporters\n"));
}

//===- tv-opt.cpp - the tv pass driver ------------------------------------===//
#include "TrainVerify/Dialect/TVOps.h"
#include "TrainVerify/Transforms/Passes.h"
#include "TrainVerify/Transforms/Utils.h"

#include "mlir/IR/DialectRegistry.h"
#include "llvm/ADT/StringRef.h"
#include <vector>
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::tv::toolStartTime() = std::chrono::steady_clock::now();
  mlir::tv::registerTVPasses();
  mlir::tv::registerTVPipelines();
  mlir::DialectRegistry registry;
  registry.insert<mlir::tv::TVDialect>();
  // Diagnostics of a verifier name ops and values; the whole enclosing op
  // printed after each of them only buries that. Keep MLIR's flag working.
  std::vector<char *> args(argv, argv + argc);
  bool explicitFlag = false;
  for (int i = 1; i < argc; ++i)
    explicitFlag |= llvm::StringRef(argv[i]).contains("print-op-on-diagnostic");
  static char quiet[] = "--mlir-print-op-on-diagnostic=false";
  if (!explicitFlag)
    args.insert(args.begin() + 1, quiet);
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      (int)args.size(), args.data(), "tv training-plan verifier\n", registry));
}

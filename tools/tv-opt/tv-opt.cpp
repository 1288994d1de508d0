//===- tv-opt.cpp - the tv pass driver ------------------------------------===//
#include "TrainVerify/Dialect/LongLineDiagnostics.h"
#include "TrainVerify/Dialect/TVOps.h"
#include "TrainVerify/Transforms/Passes.h"
#include "TrainVerify/Transforms/Utils.h"
#include "TrainVerify/Upstream/Registration.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::tv::toolStartTime() = std::chrono::steady_clock::now();
  mlir::tv::registerTVPasses();
  mlir::tv::registerTVPipelines();
  mlir::tv::registerUpstreamPasses();
  mlir::DialectRegistry registry;
  registry.insert<mlir::tv::TVDialect>();
  // Plans imported from one-line JSON carry locations on megabyte lines
  // (not under --verify-diagnostics, whose handler must see every one).
  bool verifying = false;
  for (int i = 1; i < argc; ++i)
    verifying |= llvm::StringRef(argv[i]).ltrim('-').starts_with(
        "verify-diagnostics");
  if (!verifying)
    registry.addExtension(+[](mlir::MLIRContext *ctx, mlir::tv::TVDialect *) {
      mlir::tv::addLongLineDiagnostics(ctx);
    });
  // The IR of MLIR-based training compilers around MLIR's partitioner.
  mlir::tv::registerUpstreamDialects(registry);
  mlir::tv::setUpToolOptions("tv-opt");
  std::vector<char *> args = mlir::tv::withQuietOpDiagnostics(argc, argv);
  return mlir::tv::exitStatus(mlir::MlirOptMain(
      (int)args.size(), args.data(), "tv training-plan verifier\n", registry));
}

//===- TVPlugin.cpp - tv as a plugin of mlir-opt ---------------------------===//
//
// Loaded by an mlir-opt that links libMLIR.so (Debian's mlir-opt-22):
//   mlir-opt-22 --load-dialect-plugin=libTVPlugin.so \
//               --load-pass-plugin=libTVPlugin.so \
//               --pass-pipeline='builtin.module(tv-validate-shard-partition)'
// The dialect plugin adds the tv dialect, the pass plugin every tv pass and
// --tv-verify-pipeline. The library holds tv's own code only; MLIR and LLVM
// come from the host's shared libraries (docs/shard.md).
//
//===----------------------------------------------------------------------===//
#include "TrainVerify/Dialect/TVOps.h"
#include "TrainVerify/Transforms/Passes.h"
#include "TrainVerify/Transforms/RunStatus.h"

#include "mlir/Tools/Plugins/DialectPlugin.h"
#include "mlir/Tools/Plugins/PassPlugin.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/CommandLine.h"

/// mlir-opt prints the whole operation after each diagnostic attached to it
/// (--mlir-print-op-on-diagnostic, on by default): for tv's diagnostics at
/// the module, the whole plan. As in tv-opt, off unless the user chose
/// (decision 86).
static void quietOpDiagnostics(mlir::MLIRContext *ctx) {
  auto &options = llvm::cl::getRegisteredOptions();
  auto it = options.find("mlir-print-op-on-diagnostic");
  if (it == options.end() || it->second->getNumOccurrences() == 0)
    ctx->printOpOnDiagnostic(false);
}

extern "C" LLVM_ATTRIBUTE_WEAK mlir::DialectPluginLibraryInfo
mlirGetDialectPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "TVDialect", LLVM_VERSION_STRING,
          [](mlir::DialectRegistry *registry) {
            registry->insert<mlir::tv::TVDialect>();
            registry->addExtension(+[](mlir::MLIRContext *ctx,
                                       mlir::tv::TVDialect *) {
              quietOpDiagnostics(ctx);
              // mlir-opt's exit status does not tell a counterexample from
              // an input error: the verdict line does, from the errors seen.
              ctx->getDiagEngine().registerHandler([](mlir::Diagnostic &d) {
                if (d.getSeverity() == mlir::DiagnosticSeverity::Error)
                  mlir::tv::noteRunError();
                return mlir::failure(); // reported by the host as usual
              });
            });
          }};
}

extern "C" LLVM_ATTRIBUTE_WEAK mlir::PassPluginLibraryInfo
mlirGetPassPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "TVPasses", LLVM_VERSION_STRING, [] {
            mlir::tv::registerTVPasses();
            mlir::tv::registerTVPipelines();
            // The verdict line and the stats file's last record, when
            // mlir-opt exits.
            mlir::tv::finishRunAtExit();
          }};
}

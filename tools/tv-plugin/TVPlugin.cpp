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

#include "mlir/Tools/Plugins/DialectPlugin.h"
#include "mlir/Tools/Plugins/PassPlugin.h"
#include "llvm/Config/llvm-config.h"

extern "C" LLVM_ATTRIBUTE_WEAK mlir::DialectPluginLibraryInfo
mlirGetDialectPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "TVDialect", LLVM_VERSION_STRING,
          [](mlir::DialectRegistry *registry) {
            registry->insert<mlir::tv::TVDialect>();
          }};
}

extern "C" LLVM_ATTRIBUTE_WEAK mlir::PassPluginLibraryInfo
mlirGetPassPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "TVPasses", LLVM_VERSION_STRING, [] {
            mlir::tv::registerTVPasses();
            mlir::tv::registerTVPipelines();
          }};
}

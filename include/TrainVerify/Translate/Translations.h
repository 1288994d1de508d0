//===- Translations.h - tv importers and exporters --------------*- C++ -*-===//
#ifndef TRAINVERIFY_TRANSLATE_TRANSLATIONS_H
#define TRAINVERIFY_TRANSLATE_TRANSLATIONS_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/SourceMgr.h"

#include <map>
#include <string>

namespace mlir::tv {
/// Registers every tv import and export with mlir-translate's registry.
void registerTVTranslations();
/// The location of an importer's input file, for diagnostics about it as a
/// whole.
inline Location inputFileLoc(llvm::SourceMgr &sourceMgr, MLIRContext *ctx) {
  return FileLineColLoc::get(
      ctx,
      sourceMgr.getMemoryBuffer(sourceMgr.getMainFileID())
          ->getBufferIdentifier(),
      0, 0);
}

// The importers and exporters, each in a library of its own
// (docs/layout.md): lib/Import/{NnScaler,Json,Shard} and lib/ModelGen.
OwningOpRef<Operation *> importNnScalerJson(llvm::SourceMgr &sourceMgr,
                                           MLIRContext *ctx);
OwningOpRef<Operation *> importJsonPlan(llvm::SourceMgr &sourceMgr,
                                        MLIRContext *ctx);
LogicalResult exportJsonPlan(ModuleOp module, llvm::raw_ostream &os);
OwningOpRef<Operation *> importModelConfig(llvm::SourceMgr &sourceMgr,
                                          MLIRContext *ctx);
/// MLIR's shard-partition input and its --partitioned output to a tv
/// module (lib/Import/Shard).
OwningOpRef<Operation *> importShardPartition(llvm::SourceMgr &sourceMgr,
                                             MLIRContext *ctx);
/// The dialects a shard-partition input may hold.
void registerShardImportDialects(DialectRegistry &registry);
/// Static sizes for what the shard input leaves dynamic: the shape of a
/// grid of dynamic shape (by grid name), and the size of every dynamic
/// tensor dimension of the validated function (0: the default).
struct ShardSizes {
  std::map<std::string, llvm::SmallVector<int64_t>> gridShapes;
  int64_t dimSize = 0;
  /// Whether the annotated intermediates (every value the input's
  /// shard.shard annotates, after propagation) become lineages, matched to
  /// the partitioned op at the same location: stage cuts that keep stages
  /// small. A cut that does not hold fails its stage, so a caller that
  /// sets this re-validates without it on failure (decision 93).
  bool intermediateCuts = false;
  /// From `--shard-grid-shape NAME=AxB,...` and `--shard-dim-size N`.
  static FailureOr<ShardSizes> parse(llvm::StringRef gridShapes,
                                     int64_t dimSize, Location loc);
};

/// The tv module that validates `partitioned` (shard-partition's output) as
/// a plan for `input` (the annotated module): spec, per-process plan and
/// lineages (docs/shard-validation.md). `function` names the function when
/// the module holds several. Diagnoses what it does not model, at `loc` or
/// the op.
OwningOpRef<ModuleOp> buildShardValidation(ModuleOp input,
                                           ModuleOp partitioned,
                                           llvm::StringRef function,
                                           Location loc,
                                           const ShardSizes &sizes = {});
/// Set by an importer that found its input wrong rather than unreadable
/// (a partitioned program that does not match its annotations): the tool
/// then exits 1, a counterexample, not 3.
bool &translationFoundWrongProgram();
/// Fails (naming the option) if an option of --import-shard-partition is
/// given to `translation`.
LogicalResult refuseShardImportOptions(Location loc,
                                       llvm::StringRef translation);
/// The same for the options of --import-model-config (lib/ModelGen).
LogicalResult refuseModelConfigOptions(Location loc,
                                       llvm::StringRef translation);
/// The translations registerTVTranslations registers, by flag name.
llvm::ArrayRef<llvm::StringRef> tvTranslationNames();
} // namespace mlir::tv

#endif

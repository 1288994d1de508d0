//===- Lineage.h - slice arithmetic and lineage checks ----------*- C++ -*-===//
#ifndef TRAINVERIFY_DIALECT_LINEAGE_H
#define TRAINVERIFY_DIALECT_LINEAGE_H

#include "TrainVerify/Dialect/TVOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include <optional>
#include <vector>

namespace mlir::tv {

/// A box of half-open index ranges [lower, upper) per dimension.
struct Box {
  llvm::SmallVector<int64_t> lower, upper;

  unsigned rank() const { return lower.size(); }
  int64_t volume() const;
  bool empty() const { return volume() == 0; }
  bool contains(const Box &other) const;
  std::optional<Box> intersect(const Box &other) const;
  llvm::SmallVector<int64_t> shape() const;
  /// The whole of a tensor of the given shape.
  static Box full(llvm::ArrayRef<int64_t> shape);
  bool operator==(const Box &o) const {
    return lower == o.lower && upper == o.upper;
  }
};

/// Whether `parts` tile `whole` exactly: pairwise disjoint, inside it, and
/// with the same total volume. On failure `why` says which rule broke.
bool tilesExactly(const Box &whole, llvm::ArrayRef<Box> parts,
                  std::string *why = nullptr);

/// The tv.mesh, tv.spec and tv.plan directly in a module (null when absent;
/// the last one when there are several).
struct ProgramParts {
  MeshOp mesh;
  SpecOp spec;
  PlanOp plan;
};
ProgramParts getProgramParts(ModuleOp module);

/// One lineage statement of a module and the op that states it (a
/// `tv.lineage`, or the first `tv.lineage_map` naming its box).
struct LineageEntry {
  LineageAttr attr;
  Operation *op;
};

/// Every lineage statement of a module in order: `tv.lineage` ops as they
/// are written, and the statements `tv.lineage_map` ops stand for, those of
/// one (spec tensor, box) merged into one lineage whose groups are the
/// replicas (at the position of the first). Fails, with a diagnostic at the
/// op, when a map's mesh does not resolve or its block index cannot be
/// evaluated.
FailureOr<std::vector<LineageEntry>> collectLineages(ModuleOp module);

/// The statements a list of `#tv.lineage` and `#tv.lineage_map` attributes
/// stands for, in order: a `#tv.lineage` as it is, a map's boxes where the
/// map names them first, the statements of the maps of one spec tensor that
/// name one box merged into one lineage (as collectLineages merges the
/// module's maps). `meshOf` resolves a map's mesh; fails with a diagnostic
/// through `emitError` when a mesh does not resolve or a map does not fit
/// or evaluate on it.
FailureOr<llvm::SmallVector<LineageAttr>>
expandLineageList(ArrayAttr list,
                  llvm::function_ref<MeshOp(FlatSymbolRefAttr)> meshOf,
                  llvm::function_ref<InFlightDiagnostic()> emitError);

/// Whether `map` fits `mesh` (one block dimension per axis, `where` naming
/// its axes inside their sizes) and its blocks evaluate.
LogicalResult
verifyLineageMapOnMesh(LineageMapAttr map, MeshOp mesh,
                       llvm::function_ref<InFlightDiagnostic()> emitError);

/// The value of an affine expression without symbols at integer dimensions
/// (nullopt on a division by zero or by a negative number).
std::optional<int64_t> evaluateAffineAt(AffineExpr e,
                                        llvm::ArrayRef<int64_t> dims);

/// The range [lo, hi] of an affine expression without symbols over
/// dimensions in `ranges` (inclusive), by interval arithmetic: it holds
/// every value the expression takes there. Nullopt when a bound overflows
/// 64 bits or an operation has no interval rule.
std::optional<std::pair<int64_t, int64_t>>
affineRangeOver(AffineExpr e,
                llvm::ArrayRef<std::pair<int64_t, int64_t>> ranges);

/// Each mesh axis's coordinate range [lo, hi] on the slice `where` names
/// (an axis it names: that coordinate; the others: the whole axis). Fails
/// when `where` names an axis the mesh lacks or a coordinate outside it.
FailureOr<llvm::SmallVector<std::pair<int64_t, int64_t>>>
sliceRanges(MeshOp mesh, DictionaryAttr where);

/// Calls `fn(rank, coordinates)` for every rank of `mesh` whose coordinates
/// match `where` (axes it does not name free), in rank order. Fails when
/// `where` names an axis the mesh lacks or a coordinate outside it.
LogicalResult
forEachRankWhere(MeshOp mesh, DictionaryAttr where,
                 llvm::function_ref<void(int64_t, llvm::ArrayRef<int64_t>)> fn);

/// Rewrites a stage's `assumes` and `guarantees` that hold `#tv.lineage_map`
/// attributes into the `#tv.lineage` statements they stand for (the maps'
/// meshes looked up from the stage). Every pass that reads a stage's
/// lineages calls it first; a stage without maps is left untouched.
LogicalResult expandLineageMaps(StageOp stage);
/// The same for every stage under `root`.
LogicalResult expandLineageMaps(Operation *root);

/// Keeps alive the statements of collectLineageRuns and the arrays they
/// point into.
struct LineageStore {
  std::vector<std::vector<int64_t>> arrays;
  /// One list per lineage map, and one of the plain `tv.lineage` ops.
  std::vector<std::vector<LineageView>> views;
};

/// A lineage statement as a view, and the op that states it.
struct LineageStatement {
  LineageView view;
  Operation *op;
};

/// The statements one op states, in order: a `tv.lineage`'s one, or the
/// boxes a `tv.lineage_map` names first (a map's statements share its spec
/// tensor).
struct LineageRun {
  llvm::ArrayRef<LineageView> views;
  Operation *op;
};

/// collectLineages without an attribute per statement and without a copy
/// per statement: one run per lineage op, in module order, its views kept by
/// `store` (decision 128). Empty runs (a map whose boxes all come first in
/// earlier maps) are kept.
FailureOr<std::vector<LineageRun>> collectLineageRuns(ModuleOp module,
                                                      LineageStore &store);
/// The same statements, one by one.
FailureOr<std::vector<LineageStatement>>
collectLineageViews(ModuleOp module, LineageStore &store);

/// Checks every `tv.lineage` of a module against its `tv.spec` and `tv.plan`:
/// the spec tensor exists and holds the slice, every referenced plan tensor
/// exists on its rank with the slice's shape, slices of one tensor do not
/// overlap, and the slices of every spec output tile it. Emits diagnostics
/// at the lineage ops; fails if any rule breaks.
LogicalResult checkLineages(ModuleOp module);
/// The same, on lineages already collected by collectLineages.
LogicalResult checkLineages(ModuleOp module,
                            llvm::ArrayRef<LineageEntry> lineages);
/// The same, on runs collected by collectLineageRuns.
LogicalResult checkLineages(ModuleOp module, llvm::ArrayRef<LineageRun> runs);

} // namespace mlir::tv

#endif // TRAINVERIFY_DIALECT_LINEAGE_H

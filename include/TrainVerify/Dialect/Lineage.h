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

/// Checks every `tv.lineage` of a module against its `tv.spec` and `tv.plan`:
/// the spec tensor exists and holds the slice, every referenced plan tensor
/// exists on its rank with the slice's shape, slices of one tensor do not
/// overlap, and the slices of every spec output tile it. Emits diagnostics
/// at the lineage ops; fails if any rule breaks.
LogicalResult checkLineages(ModuleOp module);
/// The same, on lineages already collected by collectLineages.
LogicalResult checkLineages(ModuleOp module,
                            llvm::ArrayRef<LineageEntry> lineages);

} // namespace mlir::tv

#endif // TRAINVERIFY_DIALECT_LINEAGE_H

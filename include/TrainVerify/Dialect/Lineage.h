//===- Lineage.h - slice arithmetic and lineage checks ----------*- C++ -*-===//
#ifndef TRAINVERIFY_DIALECT_LINEAGE_H
#define TRAINVERIFY_DIALECT_LINEAGE_H

#include "TrainVerify/Dialect/TVOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include <optional>

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

/// Checks every `tv.lineage` of a module against its `tv.spec` and `tv.plan`:
/// the spec tensor exists and holds the slice, every referenced plan tensor
/// exists on its rank with the slice's shape, slices of one tensor do not
/// overlap, and the slices of every spec output tile it. Emits diagnostics
/// at the lineage ops; fails if any rule breaks.
LogicalResult checkLineages(ModuleOp module);

} // namespace mlir::tv

#endif // TRAINVERIFY_DIALECT_LINEAGE_H

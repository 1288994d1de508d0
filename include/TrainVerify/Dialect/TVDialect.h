//===- TVDialect.h - tv dialect ---------------------------------*- C++ -*-===//
#ifndef TRAINVERIFY_DIALECT_TVDIALECT_H
#define TRAINVERIFY_DIALECT_TVDIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "llvm/ADT/StringMap.h"
#include <chrono>
#include <mutex>

namespace mlir::tv {
/// Wall time per phase. Runs of a phase that overlap (a pass nested on
/// stages, run on several threads) count once, as the span they cover.
class PhaseClock {
public:
  using TimePoint = std::chrono::steady_clock::time_point;
  void record(llvm::StringRef phase, TimePoint start, TimePoint end);
  double seconds(llvm::StringRef phase) const;
  bool has(llvm::StringRef phase) const;

private:
  struct Span {
    TimePoint start, end;
    double earlier = 0; // seconds of spans that ended before `start`
  };
  mutable std::mutex mutex;
  llvm::StringMap<Span> spans;
};
} // namespace mlir::tv

#include "TrainVerify/Dialect/TVOpsDialect.h.inc"
#include "TrainVerify/Dialect/TVOpsEnums.h.inc"

namespace mlir::tv {
/// The discardable attributes of program ops (TV_ProgramAttrs in
/// TVBase.td): the micro-batch an op belongs to and the imported op it
/// comes from.
constexpr llvm::StringLiteral kMicroBatchAttrName = "mb";
/// On a collective or a receive: launched where it stands and in flight
/// until its tv.wait (docs/decisions.md #111).
constexpr llvm::StringLiteral kAsyncAttrName = "async";
constexpr llvm::StringLiteral kSourceAttrName = "src";
/// On a module whose lineages cover only its inputs and outputs (derived by
/// an importer): --tv-stage-partition infers the intermediates first
/// (--tv-infer-lineage) and drops the mark.
constexpr llvm::StringLiteral kInferIntermediatesAttrName =
    "tv.infer_intermediates";
std::optional<int64_t> getMicroBatch(Operation *op);
void setMicroBatch(Operation *op, int64_t microBatch);
void clearMicroBatch(Operation *op);
std::optional<llvm::StringRef> getSourceOp(Operation *op);
void setSourceOp(Operation *op, llvm::StringRef source);
/// An op folded away as an identity before verification (a copy, an
/// exponent of one) leaves its kind and location in the locations of the
/// ops that read its result (issue 34: a counterexample can then name it).
/// `foldInto` records `folded` in `reader`'s location; `foldedInto` lists
/// what was recorded (kind, location), and `fileLineOf` is the op's own
/// file location, without the folded ones ("" when it has none).
void foldInto(Operation *reader, Operation *folded);
/// Records in `reader` every op recorded in `from` (a rewrite that drops
/// `from` and reads its operand in `reader`).
void inheritFolds(Operation *reader, Operation *from);
llvm::SmallVector<std::pair<llvm::StringRef, Location>>
foldedInto(Operation *op);
std::string fileLineOf(Location loc);
/// Whether a discardable attribute of a program op is one of the above
/// (they do not change what the op computes).
bool isProgramAnnotation(llvm::StringRef attrName);
LogicalResult verifyProgramAttrs(Operation *op);

template <typename ConcreteType>
class ProgramAttrs : public OpTrait::TraitBase<ConcreteType, ProgramAttrs> {
public:
  static LogicalResult verifyTrait(Operation *op) {
    return verifyProgramAttrs(op);
  }
};

/// A plan tensor on one rank, as a lineage group names it (a view: the name
/// lives in the context).
struct PlanRefView {
  llvm::StringRef name;
  int64_t rank;
};
} // namespace mlir::tv

#define GET_ATTRDEF_CLASSES
#include "TrainVerify/Dialect/TVAttrs.h.inc"

namespace mlir::tv {
/// What a `#tv.lineage` holds, without the attribute: its fields point into
/// an attribute's storage (LineageView(attr)) or into arrays its maker
/// keeps alive (the statements `collectLineageViews` expands from lineage
/// maps, millions on large plans, never uniqued; decision 128). Reads as
/// the attribute does; `toAttr` builds the attribute.
struct LineageView {
  StringAttr spec;
  ArrayAttr groups; // explicit groups (null: none)
  StringAttr replicaName;
  // Pointers and sizes rather than ArrayRefs: 64 bytes a statement.
  const int64_t *lowerData = nullptr, *upperData = nullptr;
  const int64_t *ranksData = nullptr;
  const int64_t *scaleData = nullptr; // null or {p, q}
  uint32_t rank = 0, numRanks = 0;

  LineageView() = default;
  LineageView(LineageAttr a)
      : spec(a.getSpec()), groups(a.getGroups()),
        replicaName(a.getReplicaName()), lowerData(a.getLower().data()),
        upperData(a.getUpper().data()),
        ranksData(a.getReplicaRanks().data()),
        scaleData(a.getScale().size() == 2 ? a.getScale().data() : nullptr),
        rank(a.getLower().size()), numRanks(a.getReplicaRanks().size()) {}

  StringAttr getSpec() const { return spec; }
  llvm::ArrayRef<int64_t> getLower() const { return {lowerData, rank}; }
  llvm::ArrayRef<int64_t> getUpper() const { return {upperData, rank}; }
  unsigned getRank() const { return rank; }
  StringAttr getReplicaName() const { return replicaName; }
  llvm::ArrayRef<int64_t> getReplicaRanks() const {
    return {ranksData, numRanks};
  }
  llvm::ArrayRef<int64_t> getScale() const {
    return scaleData ? llvm::ArrayRef<int64_t>(scaleData, 2)
                     : llvm::ArrayRef<int64_t>();
  }
  size_t getNumExplicitGroups() const { return groups ? groups.size() : 0; }
  size_t getNumGroups() const { return getNumExplicitGroups() + numRanks; }
  std::pair<int64_t, int64_t> getScaleFraction() const {
    if (!scaleData)
      return {1, 1};
    return {scaleData[0], scaleData[1]};
  }
  /// Calls `fn(group index, references)` for every group, in order.
  void walkGroups(
      llvm::function_ref<void(size_t, llvm::ArrayRef<PlanRefView>)> fn) const;
  /// Calls `fn(group index, reference)` for every plan reference.
  void walkRefs(llvm::function_ref<void(size_t, PlanRefView)> fn) const;
  /// The attribute (uniqued in `ctx`).
  LineageAttr toAttr(MLIRContext *ctx) const;
};
} // namespace mlir::tv

#endif // TRAINVERIFY_DIALECT_TVDIALECT_H

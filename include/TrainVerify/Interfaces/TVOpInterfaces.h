//===- TVOpInterfaces.h - what tv knows about an op -------------*- C++ -*-===//
//
// The interfaces of TVOpInterfaces.td and the types their methods speak:
// evaluation over a domain, loop structure, shape constraints and symmetry
// facts. `addShapeConstraints` and `getFoldFact` below are the one place that
// picks an op's rule: its own, the one its structure implies, or the
// conservative default.
//
//===----------------------------------------------------------------------===//
#ifndef TRAINVERIFY_INTERFACES_TVOPINTERFACES_H
#define TRAINVERIFY_INTERFACES_TVOPINTERFACES_H

#include "mlir/IR/AffineMap.h"
#include "mlir/IR/OpDefinition.h"

#include <optional>
#include <string>

namespace mlir::tv {

struct SymDomain;
struct ConcreteDomain;
struct ExactDomain;
template <typename D> struct Evaluator;

/// No value on success, else why the op could not be evaluated.
using EvalStatus = std::optional<std::string>;

/// How a loop of a structured op combines its iterations.
enum class LoopKind : uint8_t {
  /// Each iteration writes its own result element.
  Parallel,
  /// Summed inside the op's arithmetic (a matmul's k): kept at ≥ 2 by shape
  /// reduction so that a partial sum differs from the whole.
  Contraction,
  /// Summed over the rows a parameter's gradient accumulates (tokens);
  /// additive like a contraction, with no size floor of its own (the
  /// lineages that split the rows keep them).
  Accumulation,
  /// Needs the loop's whole extent (softmax's row, a norm's hidden size, a
  /// mean's divisor): kept at ≥ 2, and never factored by a fold.
  Normalized,
  /// Kept at its size (an expert count that a routing decision reads).
  Pinned,
};

/// The loop nest that computes one result of a structured op.
struct OpStructure {
  llvm::SmallVector<LoopKind> loops;
  /// Per operand, loops to its dimensions (a constant 0 for a broadcast
  /// dimension of size 1).
  llvm::SmallVector<AffineMap> operands;
  /// Per operand, whether this result's value depends on it (empty: every
  /// operand). An operand that is not read still shares the loops' sizes.
  llvm::SmallVector<bool> reads;
  bool isRead(unsigned operand) const {
    return reads.empty() || reads[operand];
  }
  /// Loops to the result's dimensions (a constant 0 for a kept dimension of
  /// size 1).
  AffineMap result;
};

/// One dimension of a tensor value.
struct DimRef {
  Value value;
  unsigned dim;
};

/// What an op may ask of the shape-reduction program of its stage.
class ShapeConstraints {
public:
  virtual ~ShapeConstraints();
  /// The two dimensions keep one size.
  virtual void equal(Operation *why, DimRef a, DimRef b) = 0;
  /// sum(coeff * dim) over `lhs` equals the same over `rhs`.
  virtual void linear(Operation *why,
                      llvm::ArrayRef<std::pair<int64_t, DimRef>> lhs,
                      llvm::ArrayRef<std::pair<int64_t, DimRef>> rhs) = 0;
  /// The product of `lhs` equals the product of `rhs`.
  virtual void product(Operation *why, llvm::ArrayRef<DimRef> lhs,
                       llvm::ArrayRef<DimRef> rhs) = 0;
  /// The dimension keeps at least `n` (or its size, if smaller).
  virtual void atLeast(DimRef d, int64_t n) = 0;
  /// The dimension keeps its size.
  virtual void fixDim(DimRef d) = 0;
  /// Operand `op`'s attribute `start`, entry `dim`, a slice's start along
  /// `big` (the sliced dimension), keeps its ratio to that dimension and is
  /// rewritten with the reduced sizes.
  virtual void sliceStart(Operation *op, unsigned dim, int64_t start,
                          DimRef big) = 0;
  /// An explicit vocabulary offset keeps its ratio to the shard's row count.
  virtual void vocabOffset(Operation *op, int64_t offset, Value table) = 0;
  /// Operand `op`'s integer attribute `attr`, a position `value` in units of
  /// `dim`'s elements (a vocabulary boundary), keeps its ratio to that
  /// dimension and is rewritten with the reduced sizes.
  virtual void position(Operation *op, llvm::StringRef attr, int64_t value,
                        DimRef dim) = 0;

  /// Every dimension of `v` keeps its size.
  void fix(Value v);
  void equalShapes(Operation *why, Value a, Value b);
  /// `operand` broadcasts (numpy, trailing dimensions aligned) to `result`.
  void broadcast(Operation *why, Value operand, Value result);
};

/// What a value is relative to a mesh axis (or the micro-batches) that a
/// fold would collapse: the same at every coordinate (replicated), block c
/// of a factored dimension at coordinate c, or a sum whose term c is
/// computed at coordinate c.
struct FoldFact {
  enum Kind : uint8_t { Rep, Par, Red, Bad } kind = Rep;
  int dim = -1;
  static FoldFact rep() { return {Rep, -1}; }
  static FoldFact par(int d) { return {Par, d}; }
  static FoldFact red() { return {Red, -1}; }
  static FoldFact bad() { return {Bad, -1}; }
  bool isPar(int d) const { return kind == Par && dim == d; }
  bool operator==(const FoldFact &o) const {
    return kind == o.kind && dim == o.dim;
  }
};

/// Adds `op`'s shape-reduction constraints: its own rule, else the one its
/// structure implies, else one shape for all its tensors if they share one,
/// else every dimension kept.
void addShapeConstraints(Operation *op, ShapeConstraints &c);

/// The fold fact of `op`'s result `result` from its operands' facts (some
/// factored, none a sum): its own rule, else its structure's, else bad.
FoldFact getFoldFact(Operation *op, llvm::ArrayRef<FoldFact> operands,
                     unsigned result, int64_t axisSize, std::string &why);

/// The rules a structure implies (exposed for tests and external models).
void deriveShapeConstraints(Operation *op, ShapeConstraints &c);
FoldFact deriveFoldFact(Operation *op, llvm::ArrayRef<FoldFact> operands,
                        unsigned result, std::string &why);

/// Maps for numpy broadcasting of `operand` to a result of `resultShape`
/// over loops that are the result's dimensions.
AffineMap broadcastMap(llvm::ArrayRef<int64_t> operandShape,
                       llvm::ArrayRef<int64_t> resultShape, MLIRContext *ctx);

} // namespace mlir::tv

#include "TrainVerify/Interfaces/TVOpInterfaces.h.inc"

#endif

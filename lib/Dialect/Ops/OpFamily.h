//===- OpFamily.h - what every op family file uses --------------*- C++ -*-===//
//
// Private to lib/Dialect/Ops: the helpers an op family's verifiers, meaning
// and rules are written with.
//
//===----------------------------------------------------------------------===//
#ifndef TRAINVERIFY_LIB_DIALECT_OPS_OPFAMILY_H
#define TRAINVERIFY_LIB_DIALECT_OPS_OPFAMILY_H

#include "TrainVerify/Dialect/ShapeUtils.h"
#include "TrainVerify/Dialect/TVOps.h"
#include "TrainVerify/Semantics/Evaluator.h"

#include "mlir/IR/AffineMap.h"
#include "llvm/ADT/DenseSet.h"

namespace mlir::tv::ops {

using Shape = SmallVector<int64_t>;

/// Row-major index arithmetic (mlir/Dialect/Utils/IndexingUtils.h).
inline void unravel(int64_t flat, ArrayRef<int64_t> shape,
                    SmallVectorImpl<int64_t> &idx) {
  SmallVector<int64_t> v = delinearize(flat, computeStrides(shape));
  idx.assign(v.begin(), v.end());
}
inline int64_t ravel(ArrayRef<int64_t> idx, ArrayRef<int64_t> shape) {
  return linearize(idx, computeStrides(shape));
}

inline ArrayRef<int64_t> shapeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}
inline int64_t rankOf(Value v) { return shapeOf(v).size(); }

inline std::string str(ArrayRef<int64_t> shape) {
  std::string s = "[";
  for (auto [i, d] : llvm::enumerate(shape))
    s += (i ? ", " : "") + std::to_string(d);
  return s + "]";
}

/// All dims valid and distinct.
inline LogicalResult checkDims(Operation *op, ArrayRef<int64_t> dims,
                               int64_t rank, StringRef what = "dims") {
  llvm::DenseSet<int64_t> seen;
  for (int64_t d : dims) {
    if (d < 0 || d >= rank)
      return op->emitOpError()
             << what << " entry " << d << " is out of range for rank " << rank;
    if (!seen.insert(d).second)
      return op->emitOpError() << what << " lists dimension " << d << " twice";
  }
  return success();
}

inline LogicalResult expectShape(Operation *op, Value v,
                                 ArrayRef<int64_t> expected, StringRef what) {
  if (shapeOf(v) != expected)
    return op->emitOpError() << what << " has shape " << str(shapeOf(v))
                             << ", expected " << str(expected);
  return success();
}

/// A result that carries a tensor name of its own (tv.tag / tv.output) is not
/// redundant: folding it would merge two named tensors into one value and
/// hide the op that computes the second from diagnostics.
inline bool isNamed(Value v) {
  return llvm::any_of(v.getUsers(),
                      [](Operation *u) { return isa<TagOp, OutputOp>(u); });
}

/// Ops that take integers as well as floats: if any operand or result is an
/// integer, all share that type's element type and it has two bits or more
/// (masks are not ring elements).
inline LogicalResult verifyIntegerOperands(Operation *op) {
  Type intElt;
  SmallVector<Type> elts;
  for (Type t : llvm::concat<const Type>(op->getOperandTypes(),
                                         op->getResultTypes())) {
    Type e = cast<RankedTensorType>(t).getElementType();
    elts.push_back(e);
    if (isa<IntegerType>(e))
      intElt = e;
  }
  if (!intElt)
    return success();
  if (llvm::any_of(elts, [&](Type e) { return e != intElt; }))
    return op->emitOpError() << "operands and result must share one element "
                                "type when one is an integer";
  if (intElt.isInteger(1))
    return op->emitOpError() << "takes integers of at least 2 bits, not masks";
  return success();
}

inline unsigned intWidthOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getElementTypeBitWidth();
}

/// A symmetry rule's refusal, with its reason.
inline FoldFact notFoldable(std::string &why, StringRef reason) {
  why = reason.str();
  return FoldFact::bad();
}

/// An op whose rule it shares with others of its family.
#define TV_FOLD_FACT_BY(OP, FN)                                                \
  FoldFact OP::getFoldFact(ArrayRef<FoldFact> operands, unsigned result,       \
                           int64_t axisSize, std::string &why) {               \
    return FN(*this, operands, result, axisSize, why);                         \
  }
#define TV_SHAPE_RULE_BY(OP, FN)                                               \
  void OP::addShapeConstraints(ShapeConstraints &c) { FN(*this, c); }

/// Shape rules speak of dimensions.
inline DimRef key(Value v, unsigned d) { return {v, d}; }
inline DimRef last(Value v) { return key(v, rankOf(v) - 1); }

//===----------------------------------------------------------------------===//
// Building structures
//===----------------------------------------------------------------------===//

/// The identity map over `n` loops.
inline AffineMap loopsMap(unsigned n, MLIRContext *ctx) {
  return AffineMap::getMultiDimIdentityMap(n, ctx);
}
/// A map over `n` loops selecting `dims`.
inline AffineMap selectMap(unsigned n, ArrayRef<unsigned> dims,
                           MLIRContext *ctx) {
  SmallVector<AffineExpr> exprs;
  for (unsigned d : dims)
    exprs.push_back(getAffineDimExpr(d, ctx));
  return AffineMap::get(n, 0, exprs, ctx);
}
/// Every operand and the result index the same loops, all parallel.
OpStructure elementwiseStructure(Operation *op);
/// Reduces `dims` of a value indexed by the identity over its rank: the
/// reduced value's map (a constant 0 for a kept dimension).
AffineMap reducedMap(unsigned rank, ArrayRef<int64_t> dims, bool keepdim,
                     MLIRContext *ctx);

} // namespace mlir::tv::ops

#endif

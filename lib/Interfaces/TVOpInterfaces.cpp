//===- TVOpInterfaces.cpp - rules that follow from an op's structure ------===//
//
// One place decides which rule an op obeys: its own (ShapeRuleOpInterface,
// SymmetryRuleOpInterface), else the one its loop structure implies
// (StructuredOpInterface), else the conservative default. docs/symmetry.md
// and docs/shape-reduction.md argue the derived rules.
//
//===----------------------------------------------------------------------===//
#include "TrainVerify/Interfaces/TVOpInterfaces.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace mlir::tv;

#include "TrainVerify/Interfaces/TVOpInterfaces.cpp.inc"

ShapeConstraints::~ShapeConstraints() = default;

static ArrayRef<int64_t> shapeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}

void ShapeConstraints::fix(Value v) {
  for (unsigned d = 0; d < shapeOf(v).size(); ++d)
    fixDim({v, d});
}

void ShapeConstraints::equalShapes(Operation *why, Value a, Value b) {
  for (unsigned d = 0; d < shapeOf(a).size(); ++d)
    equal(why, {a, d}, {b, d});
}

void ShapeConstraints::broadcast(Operation *why, Value operand, Value result) {
  unsigned off = shapeOf(result).size() - shapeOf(operand).size();
  for (unsigned d = 0; d < shapeOf(operand).size(); ++d)
    if (shapeOf(operand)[d] != 1)
      equal(why, {operand, d}, {result, off + d});
}

AffineMap mlir::tv::broadcastMap(ArrayRef<int64_t> operandShape,
                                 ArrayRef<int64_t> resultShape,
                                 MLIRContext *ctx) {
  unsigned off = resultShape.size() - operandShape.size();
  SmallVector<AffineExpr> exprs;
  for (auto [d, size] : llvm::enumerate(operandShape))
    exprs.push_back(size == 1 && resultShape[off + d] != 1
                        ? getAffineConstantExpr(0, ctx)
                        : getAffineDimExpr(off + d, ctx));
  return AffineMap::get(resultShape.size(), 0, exprs, ctx);
}

//===----------------------------------------------------------------------===//
// Shape reduction
//===----------------------------------------------------------------------===//

void mlir::tv::deriveShapeConstraints(Operation *op, ShapeConstraints &c) {
  auto structured = cast<StructuredOpInterface>(op);
  for (unsigned r = 0; r < op->getNumResults(); ++r) {
    OpStructure s = structured.getStructure(r);
    // The first dimension seen on each loop stands for the loop.
    SmallVector<std::optional<DimRef>> loopDim(s.loops.size());
    auto visit = [&](Value v, AffineMap map) {
      for (auto [d, e] : llvm::enumerate(map.getResults())) {
        auto dim = dyn_cast<AffineDimExpr>(e);
        if (!dim)
          continue; // a broadcast dimension of size 1
        DimRef here{v, (unsigned)d};
        std::optional<DimRef> &rep = loopDim[dim.getPosition()];
        if (rep)
          c.equal(op, *rep, here);
        else
          rep = here;
      }
    };
    for (auto [v, map] : llvm::zip(op->getOperands(), s.operands))
      visit(v, map);
    visit(op->getResult(r), s.result);
    for (auto [kind, dim] : llvm::zip(s.loops, loopDim)) {
      if (!dim)
        continue;
      if (kind == LoopKind::Contraction || kind == LoopKind::Normalized)
        c.atLeast(*dim, 2);
      else if (kind == LoopKind::Pinned)
        c.fixDim(*dim);
    }
  }
}

void mlir::tv::addShapeConstraints(Operation *op, ShapeConstraints &c) {
  if (auto rule = dyn_cast<ShapeRuleOpInterface>(op))
    return rule.addShapeConstraints(c);
  if (isa<StructuredOpInterface>(op))
    return deriveShapeConstraints(op, c);
  // No rule: one shape for all its tensors if they share one, else every
  // dimension kept (always sound).
  Value first;
  bool same = true;
  for (Value v : llvm::concat<Value>(op->getOperands(), op->getResults())) {
    if (!isa<RankedTensorType>(v.getType()))
      continue;
    if (!first)
      first = v;
    else if (shapeOf(v) != shapeOf(first))
      same = false;
  }
  for (Value v : llvm::concat<Value>(op->getOperands(), op->getResults())) {
    if (!isa<RankedTensorType>(v.getType()))
      continue;
    if (same)
      c.equalShapes(op, first, v);
    else
      c.fix(v);
  }
}

//===----------------------------------------------------------------------===//
// Symmetry
//===----------------------------------------------------------------------===//

/// The loop that dimension `d` of a value indexed by `map` runs over, or -1
/// for a broadcast dimension.
static int loopOf(AffineMap map, int d) {
  auto dim = dyn_cast<AffineDimExpr>(map.getResult(d));
  return dim ? (int)dim.getPosition() : -1;
}

/// The dimension of a value indexed by `map` that runs over `loop`, or -1.
static int dimOf(AffineMap map, int loop) {
  for (auto [d, e] : llvm::enumerate(map.getResults()))
    if (auto dim = dyn_cast<AffineDimExpr>(e);
        dim && (int)dim.getPosition() == loop)
      return d;
  return -1;
}

FoldFact mlir::tv::deriveFoldFact(Operation *op, ArrayRef<FoldFact> operands,
                                  unsigned result, std::string &why) {
  OpStructure s = cast<StructuredOpInterface>(op).getStructure(result);
  auto bad = [&](const char *w) {
    why = w;
    return FoldFact::bad();
  };
  // The factored loop: the one every factored operand the result reads is
  // factored along.
  int loop = -1;
  for (auto [i, fact] : llvm::enumerate(operands)) {
    AffineMap map = s.operands[i];
    if (!s.isRead(i) || fact.kind != FoldFact::Par)
      continue;
    int l = loopOf(map, fact.dim);
    if (l < 0)
      return bad("factored along a broadcast dimension");
    if (loop >= 0 && loop != l)
      return bad("operands factored along different dimensions");
    loop = l;
  }
  if (loop < 0)
    return FoldFact::rep(); // reads only replicated values
  // Every operand that spans the loop must be factored along it: block c of
  // the result would otherwise read more than block c.
  bool allRead = true;
  for (auto [i, fact] : llvm::enumerate(operands)) {
    if (!s.isRead(i))
      continue;
    int d = dimOf(s.operands[i], loop);
    allRead &= d >= 0;
    if (d >= 0 && !fact.isPar(d))
      return bad("a replicated operand spans the factored dimension");
  }
  switch (s.loops[loop]) {
  case LoopKind::Parallel: {
    int d = dimOf(s.result, loop);
    return d >= 0 ? FoldFact::par(d) : bad("factored loop not in the result");
  }
  case LoopKind::Contraction:
  case LoopKind::Accumulation:
    // A sum of block terms, if no read operand stands outside the sum.
    return allRead ? FoldFact::red()
                   : bad("a term outside the sum over the factored dimension");
  case LoopKind::Normalized:
    return bad("normalizes along the factored dimension");
  case LoopKind::Pinned:
    return bad("factored along a pinned dimension");
  }
  llvm_unreachable("loop kind");
}

FoldFact mlir::tv::getFoldFact(Operation *op, ArrayRef<FoldFact> operands,
                               unsigned result, int64_t axisSize,
                               std::string &why) {
  if (auto rule = dyn_cast<SymmetryRuleOpInterface>(op))
    return rule.getFoldFact(operands, result, axisSize, why);
  if (isa<StructuredOpInterface>(op))
    return deriveFoldFact(op, operands, result, why);
  why = "no symmetry rule for the op (cross-entropy, causal mask, or an op "
        "whose value depends on the axis' extent)";
  return FoldFact::bad();
}

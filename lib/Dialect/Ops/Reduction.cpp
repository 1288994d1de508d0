//===- Reduction.cpp - sum, mean, max, logsumexp and their VJPs -----------===//
//
// Reductions over listed dimensions. A sum is additive over a factored
// dimension; a mean, max or logsumexp needs the whole extent (normalized
// loops).
//
//===----------------------------------------------------------------------===//
#include "OpFamily.h"

using namespace mlir;
using namespace mlir::tv;
using namespace mlir::tv::ops;

//===----------------------------------------------------------------------===//
// Verifiers and folders
//===----------------------------------------------------------------------===//

template <typename OpT> static LogicalResult verifyReduction(OpT op) {
  ArrayRef<int64_t> in = shapeOf(op.getInput());
  if (op.getDims().empty())
    return op.emitOpError() << "must reduce at least one dimension";
  if (failed(checkDims(op, op.getDims(), in.size())))
    return failure();
  return expectShape(op, op.getResult(),
                     reducedShape(in, op.getDims(), op.getKeepdim()), "result");
}

LogicalResult SumOp::verify() {
  if (failed(verifyIntegerOperands(*this)))
    return failure();
  return verifyReduction(*this);
}

LogicalResult MeanOp::verify() { return verifyReduction(*this); }

LogicalResult MaxOp::verify() { return verifyReduction(*this); }

LogicalResult LogSumExpOp::verify() { return verifyReduction(*this); }

LogicalResult IntReduceOp::verify() {
  if (!sym::isAcIntFn(intFnOf(getFn())))
    return emitOpError() << "'" << stringifyIntFn(getFn())
                         << "' is not associative: it does not reduce";
  Type elt = getInput().getType().getElementType();
  if (getResult().getType().getElementType() != elt)
    return emitOpError() << "result element type must equal the input's";
  if (elt.isInteger(1))
    return emitOpError() << "takes integers of at least 2 bits, not masks";
  return verifyReduction(*this);
}

/// The VJP of a reduction that reads its input: (x, dy) -> dx of x's shape.
template <typename OpT> static LogicalResult verifyReductionGrad(OpT op) {
  ArrayRef<int64_t> in = shapeOf(op.getInput());
  if (op.getDims().empty())
    return op.emitOpError() << "must reduce at least one dimension";
  if (failed(checkDims(op, op.getDims(), in.size())) ||
      failed(expectShape(op, op.getGrad(),
                         reducedShape(in, op.getDims(), op.getKeepdim()),
                         "grad")))
    return failure();
  return expectShape(op, op.getResult(), in, "result");
}

LogicalResult MaxGradOp::verify() { return verifyReductionGrad(*this); }

LogicalResult LogSumExpGradOp::verify() { return verifyReductionGrad(*this); }

LogicalResult MeanGradOp::verify() {
  ArrayRef<int64_t> out = shapeOf(getResult());
  if (getDims().empty())
    return emitOpError() << "must reduce at least one dimension";
  if (failed(checkDims(*this, getDims(), out.size())))
    return failure();
  return expectShape(*this, getGrad(),
                     reducedShape(out, getDims(), getKeepdim()), "grad");
}

//===----------------------------------------------------------------------===//
// Meaning
//===----------------------------------------------------------------------===//

template <typename D> static EvalStatus evaluate(SumOp o, Evaluator<D> &ev) {
  using T = Tensor<typename D::V>;
  D &d = ev.d;
  auto in = ev.in;
  auto &out = ev.out;
  T res = ev.make(ev.result());
  ev.forReduce(*in[0], o.getDims(), o.getKeepdim(), [&](int64_t r, int64_t i) {
    res.data[r] = d.add(res.data[r], in[0]->data[i]);
  });
  out.push_back(std::move(res));
  return std::nullopt;
}
TV_EVALUATE_BY_TEMPLATE(SumOp)

template <typename D> static EvalStatus evaluate(MeanOp o, Evaluator<D> &ev) {
  using V = typename D::V;
  using T = Tensor<typename D::V>;
  D &d = ev.d;
  auto in = ev.in;
  auto &out = ev.out;
  T res = ev.make(ev.result());
  ev.forReduce(*in[0], o.getDims(), o.getKeepdim(), [&](int64_t r, int64_t i) {
    res.data[r] = d.add(res.data[r], in[0]->data[i]);
  });
  int64_t n = numElements(in[0]->shape) / std::max<int64_t>(1, res.data.size());
  for (V &v : res.data)
    v = d.divInt(v, n);
  out.push_back(std::move(res));
  return std::nullopt;
}
TV_EVALUATE_BY_TEMPLATE(MeanOp)

template <typename D> static EvalStatus evaluate(MaxOp o, Evaluator<D> &ev) {
  using V = typename D::V;
  using T = Tensor<typename D::V>;
  D &d = ev.d;
  auto in = ev.in;
  auto &out = ev.out;
  Shape rs = ev.result();
  std::vector<SmallVector<V>> groups(numElements(rs));
  ev.forReduce(*in[0], o.getDims(), o.getKeepdim(), [&](int64_t r, int64_t i) {
    groups[r].push_back(in[0]->data[i]);
  });
  T res = ev.make(rs);
  for (size_t r = 0; r < groups.size(); ++r)
    res.data[r] = d.max(groups[r]);
  out.push_back(std::move(res));
  return std::nullopt;
}
TV_EVALUATE_BY_TEMPLATE(MaxOp)

template <typename D>
static EvalStatus evaluate(IntReduceOp o, Evaluator<D> &ev) {
  using V = typename D::V;
  auto in = ev.in;
  Shape rs = ev.result();
  std::vector<SmallVector<V>> groups(numElements(rs));
  ev.forReduce(*in[0], o.getDims(), o.getKeepdim(), [&](int64_t r, int64_t i) {
    groups[r].push_back(in[0]->data[i]);
  });
  Tensor<V> res = ev.make(rs);
  sym::Fn fn = intFnOf(o.getFn());
  unsigned width = intWidthOf(o.getResult());
  for (size_t r = 0; r < groups.size(); ++r)
    res.data[r] = ev.d.intOp(fn, width, groups[r]);
  ev.out.push_back(std::move(res));
  return std::nullopt;
}
TV_EVALUATE_BY_TEMPLATE(IntReduceOp)

template <typename D>
static EvalStatus evaluate(MaxGradOp o, Evaluator<D> &ev) {
  using V = typename D::V;
  using T = Tensor<typename D::V>;
  D &d = ev.d;
  auto in = ev.in;
  auto &out = ev.out;
  const T &x = *in[0], &g = *in[1];
  std::vector<SmallVector<int64_t>> groups(g.data.size());
  ev.forReduce(x, o.getDims(), o.getKeepdim(),
               [&](int64_t r, int64_t i) { groups[r].push_back(i); });
  T res = ev.make(x.shape);
  for (size_t r = 0; r < groups.size(); ++r) {
    SmallVector<V> row;
    for (int64_t i : groups[r])
      row.push_back(x.data[i]);
    for (auto [p, i] : llvm::enumerate(groups[r]))
      res.data[i] = d.mul(g.data[r], d.maxShare(p, row));
  }
  out.push_back(std::move(res));
  return std::nullopt;
}
TV_EVALUATE_BY_TEMPLATE(MaxGradOp)

/// Per reduced group of `x`: the flat indices of its elements.
template <typename D, typename OpT>
static std::vector<SmallVector<int64_t>> groupsOf(Evaluator<D> &ev, OpT o,
                                                  const Tensor<typename D::V> &x,
                                                  int64_t groups) {
  std::vector<SmallVector<int64_t>> out(groups);
  ev.forReduce(x, o.getDims(), o.getKeepdim(),
               [&](int64_t r, int64_t i) { out[r].push_back(i); });
  return out;
}

/// The elements of one reduced group.
template <typename V>
static SmallVector<V> gather(const Tensor<V> &x, ArrayRef<int64_t> group) {
  SmallVector<V> v;
  for (int64_t i : group)
    v.push_back(x.data[i]);
  return v;
}

template <typename D>
static EvalStatus evaluate(LogSumExpOp o, Evaluator<D> &ev) {
  const Tensor<typename D::V> &x = *ev.in[0];
  Tensor<typename D::V> res = ev.make(ev.result());
  for (auto [r, group] : llvm::enumerate(groupsOf(ev, o, x, res.data.size())))
    res.data[r] = ev.logSumExp(gather(x, group));
  ev.out.push_back(std::move(res));
  return std::nullopt;
}
TV_EVALUATE_BY_TEMPLATE(LogSumExpOp)

template <typename D>
static EvalStatus evaluate(LogSumExpGradOp o, Evaluator<D> &ev) {
  D &d = ev.d;
  const Tensor<typename D::V> &x = *ev.in[0], &g = *ev.in[1];
  Tensor<typename D::V> res = ev.make(x.shape);
  for (auto [r, group] : llvm::enumerate(groupsOf(ev, o, x, g.data.size()))) {
    auto sm = ev.softmax(gather(x, group));
    for (auto [j, i] : llvm::enumerate(group))
      res.data[i] = d.mul(g.data[r], sm[j]);
  }
  ev.out.push_back(std::move(res));
  return std::nullopt;
}
TV_EVALUATE_BY_TEMPLATE(LogSumExpGradOp)

template <typename D>
static EvalStatus evaluate(MeanGradOp o, Evaluator<D> &ev) {
  using T = Tensor<typename D::V>;
  D &d = ev.d;
  auto in = ev.in;
  auto &out = ev.out;
  Shape rs = ev.result();
  T res = ev.make(rs);
  const T &g = *in[0];
  int64_t n = numElements(rs) / std::max<int64_t>(1, g.data.size());
  ev.forReduce(res, o.getDims(), o.getKeepdim(), [&](int64_t r, int64_t i) {
    res.data[i] = d.divInt(g.data[r], n);
  });
  out.push_back(std::move(res));
  return std::nullopt;
}
TV_EVALUATE_BY_TEMPLATE(MeanGradOp)

//===----------------------------------------------------------------------===//
// Structure and rules
//===----------------------------------------------------------------------===//

AffineMap mlir::tv::ops::reducedMap(unsigned rank, ArrayRef<int64_t> dims,
                                    bool keepdim, MLIRContext *ctx) {
  SmallVector<AffineExpr> exprs;
  for (unsigned d = 0; d < rank; ++d) {
    if (!llvm::is_contained(dims, (int64_t)d))
      exprs.push_back(getAffineDimExpr(d, ctx));
    else if (keepdim)
      exprs.push_back(getAffineConstantExpr(0, ctx));
  }
  return AffineMap::get(rank, 0, exprs, ctx);
}

/// Loops over the input's dimensions; the reduced ones are `reducedKind`.
static OpStructure reduction(Operation *op, Value full, ArrayRef<int64_t> dims,
                             bool keepdim, LoopKind reducedKind) {
  MLIRContext *ctx = op->getContext();
  unsigned rank = rankOf(full);
  OpStructure s;
  for (unsigned d = 0; d < rank; ++d)
    s.loops.push_back(llvm::is_contained(dims, (int64_t)d)
                          ? reducedKind
                          : LoopKind::Parallel);
  AffineMap all = loopsMap(rank, ctx),
            part = reducedMap(rank, dims, keepdim, ctx);
  for (Value v : op->getOperands())
    s.operands.push_back(v == full ? all : part);
  s.result = op->getResult(0) == full ? all : part;
  return s;
}

// A sum is additive over its reduced loops; a mean divides by, and a max
// compares across, the whole extent.
OpStructure SumOp::getStructure(unsigned) {
  return reduction(*this, getInput(), getDims(), getKeepdim(),
                   LoopKind::Contraction);
}
OpStructure MeanOp::getStructure(unsigned) {
  return reduction(*this, getInput(), getDims(), getKeepdim(),
                   LoopKind::Normalized);
}
OpStructure MaxOp::getStructure(unsigned) {
  return reduction(*this, getInput(), getDims(), getKeepdim(),
                   LoopKind::Normalized);
}
// Like max: the reduced loops keep at least two elements.
OpStructure IntReduceOp::getStructure(unsigned) {
  return reduction(*this, getInput(), getDims(), getKeepdim(),
                   LoopKind::Normalized);
}
/// The VJP of a reduction that reads its input: (x, dy) -> dx, every
/// tensor over x's loops but dy, the reduced ones normalized.
static OpStructure readingReductionGrad(Operation *op, Value x,
                                        ArrayRef<int64_t> dims, bool keepdim) {
  OpStructure s = reduction(op, x, dims, keepdim, LoopKind::Normalized);
  s.result = loopsMap(s.loops.size(), op->getContext());
  return s;
}
OpStructure MaxGradOp::getStructure(unsigned) {
  return readingReductionGrad(*this, getInput(), getDims(), getKeepdim());
}
OpStructure LogSumExpOp::getStructure(unsigned) {
  return reduction(*this, getInput(), getDims(), getKeepdim(),
                   LoopKind::Normalized);
}
OpStructure LogSumExpGradOp::getStructure(unsigned) {
  return readingReductionGrad(*this, getInput(), getDims(), getKeepdim());
}
OpStructure MeanGradOp::getStructure(unsigned) {
  return reduction(*this, getResult(), getDims(), getKeepdim(),
                   LoopKind::Normalized);
}

//===----------------------------------------------------------------------===//
// Backward ops
//===----------------------------------------------------------------------===//

unsigned MaxGradOp::getCotangentIndex() { return 1; }
unsigned LogSumExpGradOp::getCotangentIndex() { return 1; }
unsigned MeanGradOp::getCotangentIndex() { return 0; }

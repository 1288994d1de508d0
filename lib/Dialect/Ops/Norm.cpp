//===- Norm.cpp - softmax, layernorm, rmsnorm and VJPs --------------------===//
//
// Ops that normalize along one dimension (softmax) or the last (the norms):
// that loop is normalized; parameter gradients accumulate over the rows.
//
//===----------------------------------------------------------------------===//
#include "OpFamily.h"

using namespace mlir;
using namespace mlir::tv;
using namespace mlir::tv::ops;

//===----------------------------------------------------------------------===//
// Verifiers and folders
//===----------------------------------------------------------------------===//

static LogicalResult verifyDim(Operation *op, int64_t dim, Value v) {
  int64_t rank = shapeOf(v).size();
  if (dim < 0 || dim >= rank)
    return op->emitOpError()
           << "dim " << dim << " is out of range for rank " << rank;
  return success();
}

static LogicalResult verifyNormParam(Operation *op, Value x, Value p,
                                     StringRef what) {
  ArrayRef<int64_t> xs = shapeOf(x);
  if (xs.empty())
    return op->emitOpError() << "input must have rank at least 1";
  return expectShape(op, p, {xs.back()}, what);
}

LogicalResult SoftmaxOp::verify() {
  return verifyDim(*this, getDim(), getInput());
}

LogicalResult SoftmaxGradOp::verify() {
  return verifyDim(*this, getDim(), getOutput());
}

LogicalResult LayerNormOp::verify() {
  if (failed(verifyNormParam(*this, getInput(), getGamma(), "gamma")) ||
      failed(verifyNormParam(*this, getInput(), getBeta(), "beta")))
    return failure();
  return expectShape(*this, getResult(), shapeOf(getInput()), "result");
}

LogicalResult RMSNormOp::verify() {
  if (failed(verifyNormParam(*this, getInput(), getWeight(), "weight")))
    return failure();
  return expectShape(*this, getResult(), shapeOf(getInput()), "result");
}

LogicalResult LayerNormGradOp::verify() {
  return verifyNormParam(*this, getInput(), getGamma(), "gamma");
}

LogicalResult RMSNormGradOp::verify() {
  return verifyNormParam(*this, getInput(), getWeight(), "weight");
}

//===----------------------------------------------------------------------===//
// Meaning
//===----------------------------------------------------------------------===//

template <typename D>
static EvalStatus evaluate(SoftmaxOp o, Evaluator<D> &ev) {
  using V = typename D::V;
  using T = Tensor<typename D::V>;
  auto in = ev.in;
  auto &out = ev.out;
  const T &x = *in[0];
  T res = ev.make(x.shape);
  ev.forLines(x.shape, o.getDim(), [&](ArrayRef<int64_t> line) {
    SmallVector<V> row;
    for (int64_t i : line)
      row.push_back(x.data[i]);
    SmallVector<V> sm = ev.softmax(row);
    for (auto [j, i] : llvm::enumerate(line))
      res.data[i] = sm[j];
  });
  out.push_back(std::move(res));
  return std::nullopt;
}
TV_EVALUATE_BY_TEMPLATE(SoftmaxOp)

template <typename D>
static EvalStatus evaluate(SoftmaxGradOp o, Evaluator<D> &ev) {
  using V = typename D::V;
  using T = Tensor<typename D::V>;
  D &d = ev.d;
  auto in = ev.in;
  auto &out = ev.out;
  const T &y = *in[0], &g = *in[1];
  T res = ev.make(y.shape);
  ev.forLines(y.shape, o.getDim(), [&](ArrayRef<int64_t> line) {
    V dot = d.zero();
    for (int64_t i : line)
      dot = d.add(dot, d.mul(g.data[i], y.data[i]));
    for (int64_t i : line)
      res.data[i] = d.mul(y.data[i], d.sub(g.data[i], dot));
  });
  out.push_back(std::move(res));
  return std::nullopt;
}
TV_EVALUATE_BY_TEMPLATE(SoftmaxGradOp)

template <typename D>
static EvalStatus evaluate(LayerNormOp o, Evaluator<D> &ev) {
  using V = typename D::V;
  using T = Tensor<typename D::V>;
  D &d = ev.d;
  auto in = ev.in;
  auto &out = ev.out;
  const T &x = *in[0], &gm = *in[1], &bt = *in[2];
  double eps = o.getEps().convertToDouble();
  T res = ev.make(x.shape);
  int64_t n = x.shape.back();
  ev.forLines(x.shape, x.shape.size() - 1, [&](ArrayRef<int64_t> line) {
    V mu = d.zero();
    for (int64_t i : line)
      mu = d.add(mu, x.data[i]);
    mu = d.divInt(mu, n);
    V var = d.zero();
    for (int64_t i : line) {
      V c = d.sub(x.data[i], mu);
      var = d.add(var, d.mul(c, c));
    }
    V r = d.rsqrt(d.add(d.divInt(var, n), d.cst(eps)));
    for (auto [j, i] : llvm::enumerate(line))
      res.data[i] =
          d.add(d.mul(d.mul(d.sub(x.data[i], mu), r), gm.data[j]), bt.data[j]);
  });
  out.push_back(std::move(res));
  return std::nullopt;
}
TV_EVALUATE_BY_TEMPLATE(LayerNormOp)

template <typename D>
static EvalStatus evaluate(LayerNormGradOp o, Evaluator<D> &ev) {
  using V = typename D::V;
  using T = Tensor<typename D::V>;
  D &d = ev.d;
  auto in = ev.in;
  auto &out = ev.out;
  const T &x = *in[0], &gm = *in[1], &dy = *in[2];
  double eps = o.getEps().convertToDouble();
  int64_t n = x.shape.back();
  T dx = ev.make(x.shape), dg = ev.make(gm.shape), db = ev.make(gm.shape);
  ev.forLines(x.shape, x.shape.size() - 1, [&](ArrayRef<int64_t> line) {
    V mu = d.zero();
    for (int64_t i : line)
      mu = d.add(mu, x.data[i]);
    mu = d.divInt(mu, n);
    V var = d.zero();
    for (int64_t i : line) {
      V c = d.sub(x.data[i], mu);
      var = d.add(var, d.mul(c, c));
    }
    V r = d.rsqrt(d.add(d.divInt(var, n), d.cst(eps)));
    SmallVector<V> xhat, dxhat;
    V m1 = d.zero(), m2 = d.zero();
    for (auto [j, i] : llvm::enumerate(line)) {
      xhat.push_back(d.mul(d.sub(x.data[i], mu), r));
      dxhat.push_back(d.mul(dy.data[i], gm.data[j]));
      m1 = d.add(m1, dxhat.back());
      m2 = d.add(m2, d.mul(dxhat.back(), xhat.back()));
      dg.data[j] = d.add(dg.data[j], d.mul(dy.data[i], xhat.back()));
      db.data[j] = d.add(db.data[j], dy.data[i]);
    }
    m1 = d.divInt(m1, n);
    m2 = d.divInt(m2, n);
    for (auto [j, i] : llvm::enumerate(line))
      dx.data[i] = d.mul(r, d.sub(d.sub(dxhat[j], m1), d.mul(xhat[j], m2)));
  });
  out.push_back(std::move(dx));
  out.push_back(std::move(dg));
  out.push_back(std::move(db));
  return std::nullopt;
}
TV_EVALUATE_BY_TEMPLATE(LayerNormGradOp)

template <typename D>
static EvalStatus evaluate(RMSNormOp o, Evaluator<D> &ev) {
  using V = typename D::V;
  using T = Tensor<typename D::V>;
  D &d = ev.d;
  auto in = ev.in;
  auto &out = ev.out;
  const T &x = *in[0], &w = *in[1];
  double eps = o.getEps().convertToDouble();
  int64_t n = x.shape.back();
  T res = ev.make(x.shape);
  ev.forLines(x.shape, x.shape.size() - 1, [&](ArrayRef<int64_t> line) {
    V ms = d.zero();
    for (int64_t i : line)
      ms = d.add(ms, d.mul(x.data[i], x.data[i]));
    V r = d.rsqrt(d.add(d.divInt(ms, n), d.cst(eps)));
    for (auto [j, i] : llvm::enumerate(line))
      res.data[i] = d.mul(d.mul(x.data[i], r), w.data[j]);
  });
  out.push_back(std::move(res));
  return std::nullopt;
}
TV_EVALUATE_BY_TEMPLATE(RMSNormOp)

template <typename D>
static EvalStatus evaluate(RMSNormGradOp o, Evaluator<D> &ev) {
  using V = typename D::V;
  using T = Tensor<typename D::V>;
  D &d = ev.d;
  auto in = ev.in;
  auto &out = ev.out;
  const T &x = *in[0], &w = *in[1], &dy = *in[2];
  double eps = o.getEps().convertToDouble();
  int64_t n = x.shape.back();
  T dx = ev.make(x.shape), dw = ev.make(w.shape);
  ev.forLines(x.shape, x.shape.size() - 1, [&](ArrayRef<int64_t> line) {
    V ms = d.zero();
    for (int64_t i : line)
      ms = d.add(ms, d.mul(x.data[i], x.data[i]));
    V r = d.rsqrt(d.add(d.divInt(ms, n), d.cst(eps)));
    V dot = d.zero();
    for (auto [j, i] : llvm::enumerate(line)) {
      dot = d.add(dot, d.mul(d.mul(dy.data[i], w.data[j]), x.data[i]));
      dw.data[j] = d.add(dw.data[j], d.mul(d.mul(dy.data[i], x.data[i]), r));
    }
    V r3 = d.divInt(d.mul(r, d.mul(r, r)), n);
    for (auto [j, i] : llvm::enumerate(line))
      dx.data[i] = d.sub(d.mul(r, d.mul(dy.data[i], w.data[j])),
                         d.mul(x.data[i], d.mul(r3, dot)));
  });
  out.push_back(std::move(dx));
  out.push_back(std::move(dw));
  return std::nullopt;
}
TV_EVALUATE_BY_TEMPLATE(RMSNormGradOp)

//===----------------------------------------------------------------------===//
// Structure and rules
//===----------------------------------------------------------------------===//

/// Every tensor indexed by the same loops; `dim` normalized.
static OpStructure normalizedAlong(Operation *op, int64_t dim) {
  OpStructure s = elementwiseStructure(op);
  s.loops[dim] = LoopKind::Normalized;
  return s;
}

OpStructure SoftmaxOp::getStructure(unsigned) {
  return normalizedAlong(*this, getDim());
}
OpStructure SoftmaxGradOp::getStructure(unsigned) {
  return normalizedAlong(*this, getDim());
}

/// A norm over the last dimension h of x: loops rows..., h. Operands of x's
/// rank read every loop, the per-feature parameters h only. A result of x's
/// rank normalizes h; a per-feature result (a parameter's gradient)
/// accumulates the rows and reads only `reads`.
static OpStructure normStructure(Operation *op, unsigned result,
                                 ArrayRef<unsigned> reads, bool normalized) {
  MLIRContext *ctx = op->getContext();
  unsigned rank = rankOf(op->getOperand(0)), h = rank - 1;
  bool perFeature = rankOf(op->getResult(result)) != rank;
  OpStructure s;
  s.loops.assign(rank,
                 perFeature ? LoopKind::Accumulation : LoopKind::Parallel);
  s.loops[h] = normalized ? LoopKind::Normalized : LoopKind::Parallel;
  for (auto [i, v] : llvm::enumerate(op->getOperands())) {
    s.operands.push_back(rankOf(v) == rank ? loopsMap(rank, ctx)
                                           : selectMap(rank, {h}, ctx));
    s.reads.push_back(!perFeature || llvm::is_contained(reads, (unsigned)i));
  }
  s.result = perFeature ? selectMap(rank, {h}, ctx) : loopsMap(rank, ctx);
  return s;
}

OpStructure LayerNormOp::getStructure(unsigned result) {
  return normStructure(*this, result, {}, true);
}
OpStructure RMSNormOp::getStructure(unsigned result) {
  return normStructure(*this, result, {}, true);
}
// (x, gamma, dy) -> dx, dgamma = sum dy xhat, dbeta = sum dy.
OpStructure LayerNormGradOp::getStructure(unsigned result) {
  if (result == 2)
    return normStructure(*this, result, {2}, false);
  return normStructure(*this, result, {0, 2}, true);
}
// (x, w, dy) -> dx, dw = sum dy x rsqrt(ms).
OpStructure RMSNormGradOp::getStructure(unsigned result) {
  return normStructure(*this, result, {0, 2}, true);
}

//===----------------------------------------------------------------------===//
// Backward ops
//===----------------------------------------------------------------------===//

unsigned SoftmaxGradOp::getCotangentIndex() { return 1; }
unsigned LayerNormGradOp::getCotangentIndex() { return 2; }
unsigned RMSNormGradOp::getCotangentIndex() { return 2; }

//===- Contraction.cpp - matmul, linear and linear_grad -------------------===//
//
// Contractions: a sum over a shared dimension (kept at >= 2 by shape
// reduction); linear_grad's weight gradient accumulates over the rows.
//
//===----------------------------------------------------------------------===//
#include "OpFamily.h"

using namespace mlir;
using namespace mlir::tv;
using namespace mlir::tv::ops;

//===----------------------------------------------------------------------===//
// Verifiers and folders
//===----------------------------------------------------------------------===//

LogicalResult MatmulOp::verify() {
  if (failed(verifyIntegerOperands(*this)))
    return failure();
  ArrayRef<int64_t> a = shapeOf(getLhs()), b = shapeOf(getRhs());
  if (a.size() < 2 || b.size() < 2)
    return emitOpError() << "operands must have rank at least 2";
  if (b.size() != 2 && b.size() != a.size())
    return emitOpError() << "rhs must have rank 2 or the rank of lhs ("
                         << a.size() << "), got " << b.size();
  int64_t m = getTransposeLhs() ? a[a.size() - 1] : a[a.size() - 2];
  int64_t ka = getTransposeLhs() ? a[a.size() - 2] : a[a.size() - 1];
  int64_t kb = getTransposeRhs() ? b[b.size() - 1] : b[b.size() - 2];
  int64_t n = getTransposeRhs() ? b[b.size() - 2] : b[b.size() - 1];
  if (ka != kb)
    return emitOpError() << "contracted dimensions differ: " << ka << " vs "
                         << kb;
  if (b.size() == a.size() && a.drop_back(2) != b.drop_back(2))
    return emitOpError() << "batch dimensions differ: " << str(a.drop_back(2))
                         << " vs " << str(b.drop_back(2));
  SmallVector<int64_t> expected(a.drop_back(2));
  expected.push_back(m);
  expected.push_back(n);
  return expectShape(*this, getResult(), expected, "result");
}

LogicalResult LinearOp::verify() {
  ArrayRef<int64_t> x = shapeOf(getInput()), w = shapeOf(getWeight());
  if (x.empty())
    return emitOpError() << "input must have rank at least 1";
  if (w.size() != 2)
    return emitOpError() << "weight must have rank 2, got " << w.size();
  if (x.back() != w[1])
    return emitOpError() << "input features " << x.back()
                         << " differ from weight columns " << w[1];
  if (getBias() && failed(expectShape(*this, getBias(), {w[0]}, "bias")))
    return failure();
  SmallVector<int64_t> expected(x.drop_back());
  expected.push_back(w[0]);
  return expectShape(*this, getResult(), expected, "result");
}

LogicalResult LinearGradOp::verify() {
  ArrayRef<int64_t> x = shapeOf(getInput()), w = shapeOf(getWeight());
  if (x.empty() || w.size() != 2)
    return emitOpError() << "input must have rank >= 1 and weight rank 2";
  if (x.back() != w[1])
    return emitOpError() << "input features " << x.back()
                         << " differ from weight columns " << w[1];
  SmallVector<int64_t> dy(x.drop_back());
  dy.push_back(w[0]);
  return expectShape(*this, getGrad(), dy, "grad");
}

//===----------------------------------------------------------------------===//
// Meaning
//===----------------------------------------------------------------------===//

template <typename D> static EvalStatus evaluate(MatmulOp o, Evaluator<D> &ev) {
  using V = typename D::V;
  using T = Tensor<typename D::V>;
  D &d = ev.d;
  auto in = ev.in;
  auto &out = ev.out;
  const T &a = *in[0], &b = *in[1];
  Shape rs = ev.result();
  int64_t r = a.shape.size();
  int64_t m = rs[r - 2], n = rs[r - 1];
  int64_t k = o.getTransposeLhs() ? a.shape[r - 2] : a.shape[r - 1];
  int64_t batch = numElements(ArrayRef<int64_t>(rs).drop_back(2));
  bool bBatched = b.shape.size() == a.shape.size();
  T res = ev.make(rs);
  for (int64_t bi = 0; bi < batch; ++bi) {
    int64_t aBase = bi * m * k, bBase = bBatched ? bi * k * n : 0;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        V s = d.zero();
        for (int64_t kk = 0; kk < k; ++kk) {
          int64_t ai = o.getTransposeLhs() ? kk * m + i : i * k + kk;
          int64_t bj = o.getTransposeRhs() ? j * k + kk : kk * n + j;
          s = d.add(s, d.mul(a.data[aBase + ai], b.data[bBase + bj]));
        }
        res.data[(bi * m + i) * n + j] = s;
      }
  }
  out.push_back(std::move(res));
  return std::nullopt;
}
TV_EVALUATE_BY_TEMPLATE(MatmulOp)

template <typename D> static EvalStatus evaluate(LinearOp o, Evaluator<D> &ev) {
  using V = typename D::V;
  using T = Tensor<typename D::V>;
  D &d = ev.d;
  auto in = ev.in;
  auto &out = ev.out;
  const T &x = *in[0], &w = *in[1];
  int64_t k = w.shape[1], n = w.shape[0];
  int64_t rows = x.data.size() / k;
  T res = ev.make(ev.result());
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < n; ++j) {
      V s = in.size() > 2 ? in[2]->data[j] : d.zero();
      for (int64_t kk = 0; kk < k; ++kk)
        s = d.add(s, d.mul(x.data[i * k + kk], w.data[j * k + kk]));
      res.data[i * n + j] = s;
    }
  out.push_back(std::move(res));
  return std::nullopt;
}
TV_EVALUATE_BY_TEMPLATE(LinearOp)

template <typename D>
static EvalStatus evaluate(LinearGradOp, Evaluator<D> &ev) {
  using V = typename D::V;
  using T = Tensor<typename D::V>;
  D &d = ev.d;
  auto in = ev.in;
  auto &out = ev.out;
  const T &x = *in[0], &w = *in[1], &dy = *in[2];
  int64_t k = w.shape[1], n = w.shape[0];
  int64_t rows = x.data.size() / k;
  T dx = ev.make(x.shape), dw = ev.make(w.shape);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t kk = 0; kk < k; ++kk) {
      V s = d.zero();
      for (int64_t j = 0; j < n; ++j)
        s = d.add(s, d.mul(dy.data[i * n + j], w.data[j * k + kk]));
      dx.data[i * k + kk] = s;
    }
  for (int64_t j = 0; j < n; ++j)
    for (int64_t kk = 0; kk < k; ++kk) {
      V s = d.zero();
      for (int64_t i = 0; i < rows; ++i)
        s = d.add(s, d.mul(dy.data[i * n + j], x.data[i * k + kk]));
      dw.data[j * k + kk] = s;
    }
  out.push_back(std::move(dx));
  out.push_back(std::move(dw));
  return std::nullopt;
}
TV_EVALUATE_BY_TEMPLATE(LinearGradOp)

//===----------------------------------------------------------------------===//
// Structure and rules
//===----------------------------------------------------------------------===//

// Loops of a matmul: the batch dimensions, m, n, then the contracted k.
OpStructure MatmulOp::getStructure(unsigned) {
  MLIRContext *ctx = getContext();
  unsigned na = rankOf(getLhs()), nb = rankOf(getRhs()), batch = na - 2;
  unsigned m = batch, n = batch + 1, k = batch + 2;
  OpStructure s;
  s.loops.assign(batch + 2, LoopKind::Parallel);
  s.loops.push_back(LoopKind::Contraction);
  SmallVector<unsigned> a, b, r;
  for (unsigned d = 0; d < batch; ++d) {
    a.push_back(d);
    r.push_back(d);
    if (nb == na)
      b.push_back(d);
  }
  a.append(getTransposeLhs() ? SmallVector<unsigned>{k, m}
                             : SmallVector<unsigned>{m, k});
  b.append(getTransposeRhs() ? SmallVector<unsigned>{n, k}
                             : SmallVector<unsigned>{k, n});
  r.append({m, n});
  s.operands = {selectMap(k + 1, a, ctx), selectMap(k + 1, b, ctx)};
  s.result = selectMap(k + 1, r, ctx);
  return s;
}

// Loops of linear: the rows of x, the output features n, then the
// contracted input features k (w is [n, k], the bias [n]).
OpStructure LinearOp::getStructure(unsigned) {
  MLIRContext *ctx = getContext();
  unsigned rows = rankOf(getInput()) - 1, n = rows, k = rows + 1;
  OpStructure s;
  s.loops.assign(rows + 1, LoopKind::Parallel);
  s.loops.push_back(LoopKind::Contraction);
  SmallVector<unsigned> x, r;
  for (unsigned d = 0; d < rows; ++d)
    x.push_back(d), r.push_back(d);
  x.push_back(k);
  r.push_back(n);
  s.operands = {selectMap(k + 1, x, ctx), selectMap(k + 1, {n, k}, ctx)};
  if (getBias())
    s.operands.push_back(selectMap(k + 1, {n}, ctx));
  s.result = selectMap(k + 1, r, ctx);
  return s;
}

// Loops of both results: the rows of x, n, k. dx = dy W sums n; dW = dy^T x
// accumulates the rows. dx does not read x, nor dW the weight.
OpStructure LinearGradOp::getStructure(unsigned result) {
  MLIRContext *ctx = getContext();
  unsigned rows = rankOf(getInput()) - 1, n = rows, k = rows + 1;
  OpStructure s;
  s.loops.assign(rows + 2, LoopKind::Parallel);
  SmallVector<unsigned> x, g, dx;
  for (unsigned d = 0; d < rows; ++d) {
    x.push_back(d), g.push_back(d), dx.push_back(d);
    if (result == 1)
      s.loops[d] = LoopKind::Accumulation;
  }
  x.push_back(k);
  g.push_back(n);
  dx.push_back(k);
  s.operands = {selectMap(k + 1, x, ctx), selectMap(k + 1, {n, k}, ctx),
                selectMap(k + 1, g, ctx)};
  if (result == 0) {
    s.loops[n] = LoopKind::Contraction;
    s.reads = {false, true, true};
    s.result = selectMap(k + 1, dx, ctx);
  } else {
    s.reads = {true, false, true};
    s.result = selectMap(k + 1, {n, k}, ctx);
  }
  return s;
}

//===----------------------------------------------------------------------===//
// Backward ops
//===----------------------------------------------------------------------===//

unsigned LinearGradOp::getCotangentIndex() { return 2; }

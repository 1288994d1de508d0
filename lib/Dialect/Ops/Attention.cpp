//===- Attention.cpp - rotary and attention masks -------------------------===//
//
// Rotary position embedding (interleaved pairs) and causal masking, forward
// and backward. Not projected permutations: their rules are their own.
//
//===----------------------------------------------------------------------===//
#include "OpFamily.h"

using namespace mlir;
using namespace mlir::tv;
using namespace mlir::tv::ops;

//===----------------------------------------------------------------------===//
// Verifiers and folders
//===----------------------------------------------------------------------===//

static LogicalResult verifyRotaryShapes(Operation *op, Value x, Value cos,
                                        Value sin, Value result) {
  ArrayRef<int64_t> xs = shapeOf(x);
  if (xs.size() < 2)
    return op->emitOpError() << "input must have rank at least 2 ([..., s, d])";
  if (xs.back() % 2)
    return op->emitOpError() << "last dimension " << xs.back()
                             << " must be even (rotated in pairs)";
  SmallVector<int64_t> table{xs[xs.size() - 2], xs.back() / 2};
  if (failed(expectShape(op, cos, table, "cos")) ||
      failed(expectShape(op, sin, table, "sin")))
    return failure();
  return expectShape(op, result, xs, "result");
}

static LogicalResult verifyMaskShapes(Operation *op, Value x, Value mask,
                                      Value result) {
  ArrayRef<int64_t> xs = shapeOf(x);
  if (xs.size() < 2)
    return op->emitOpError() << "input must have rank at least 2";
  if (failed(expectShape(op, mask, xs.take_back(2), "mask")))
    return failure();
  return expectShape(op, result, xs, "result");
}

LogicalResult RotaryOp::verify() {
  return verifyRotaryShapes(*this, getInput(), getCos(), getSin(), getResult());
}

LogicalResult RotaryGradOp::verify() {
  return verifyRotaryShapes(*this, getGrad(), getCos(), getSin(), getResult());
}

LogicalResult CausalMaskOp::verify() {
  ArrayRef<int64_t> s = shapeOf(getResult());
  if (s.size() != 2)
    return emitOpError() << "mask must have rank 2 ([s_q, s_k])";
  auto qc = getQueryChunks(), kc = getKeyChunks();
  std::optional<uint64_t> cs = getChunkSize();
  if (qc || kc || cs) {
    if (!qc || !kc || !cs)
      return emitOpError()
             << "takes query_chunks, key_chunks and chunk_size together";
    if (getWindow() || getQueryAxis())
      return emitOpError() << "takes chunks or window / query_axis, not both";
    if ((int64_t)*cs < 1 || s[0] != (int64_t)qc->size() * (int64_t)*cs ||
        s[1] != (int64_t)kc->size() * (int64_t)*cs)
      return emitOpError() << "chunks of " << (int64_t)*cs
                           << " do not make its shape " << str(s);
    for (int64_t c : llvm::concat<const int64_t>(*qc, *kc))
      if (c < 0)
        return emitOpError() << "chunk indices must not be negative";
    return success();
  }
  if (s[0] > s[1])
    return emitOpError() << "has more queries (" << s[0] << ") than keys ("
                         << s[1] << ")";
  if (std::optional<uint64_t> w = getWindow(); w && (int64_t)*w < 1)
    return emitOpError() << "window must be at least 1, got " << (int64_t)*w;
  if (std::optional<StringRef> axis = getQueryAxis()) {
    auto plan = (*this)->getParentOfType<PlanOp>();
    if (!plan)
      return emitOpError() << "has a query_axis but runs on one device (not "
                              "in a plan)";
    MeshOp mesh = plan.getMeshOp();
    if (!mesh)
      return success();
    int64_t i = mesh.getAxisIndex(*axis);
    if (i < 0)
      return emitOpError() << "query_axis '" << *axis
                           << "' is not an axis of mesh @" << mesh.getSymName();
    if (s[1] != s[0] * mesh.getSizes()[i])
      return emitOpError() << "has " << s[1] << " keys, expected the "
                           << mesh.getSizes()[i] << " query blocks of axis '"
                           << *axis << "' (" << s[0] * mesh.getSizes()[i]
                           << ")";
  }
  return success();
}

LogicalResult ApplyMaskOp::verify() {
  return verifyMaskShapes(*this, getInput(), getMask(), getResult());
}

LogicalResult ApplyMaskGradOp::verify() {
  return verifyMaskShapes(*this, getGrad(), getMask(), getResult());
}

//===----------------------------------------------------------------------===//
// Meaning
//===----------------------------------------------------------------------===//

template <typename D> static EvalStatus evaluate(RotaryOp, Evaluator<D> &ev) {
  using V = typename D::V;
  using T = Tensor<typename D::V>;
  D &d = ev.d;
  auto in = ev.in;
  auto &out = ev.out;
  const T &x = *in[0], &c = *in[1], &s = *in[2];
  int64_t dd = x.shape.back(), sq = x.shape[x.shape.size() - 2];
  T res = ev.make(x.shape);
  for (int64_t base = 0; base < (int64_t)x.data.size(); base += dd) {
    int64_t pos = (base / dd) % sq;
    for (int64_t i = 0; i < dd / 2; ++i) {
      V x0 = x.data[base + 2 * i], x1 = x.data[base + 2 * i + 1];
      V cv = c.data[pos * dd / 2 + i], sv = s.data[pos * dd / 2 + i];
      res.data[base + 2 * i] = d.sub(d.mul(x0, cv), d.mul(x1, sv));
      res.data[base + 2 * i + 1] = d.add(d.mul(x0, sv), d.mul(x1, cv));
    }
  }
  out.push_back(std::move(res));
  return std::nullopt;
}
TV_EVALUATE_BY_TEMPLATE(RotaryOp)

template <typename D>
static EvalStatus evaluate(RotaryGradOp, Evaluator<D> &ev) {
  using V = typename D::V;
  using T = Tensor<typename D::V>;
  D &d = ev.d;
  auto in = ev.in;
  auto &out = ev.out;
  const T &g = *in[0], &c = *in[1], &s = *in[2];
  int64_t dd = g.shape.back(), sq = g.shape[g.shape.size() - 2];
  T res = ev.make(g.shape);
  for (int64_t base = 0; base < (int64_t)g.data.size(); base += dd) {
    int64_t pos = (base / dd) % sq;
    for (int64_t i = 0; i < dd / 2; ++i) {
      V g0 = g.data[base + 2 * i], g1 = g.data[base + 2 * i + 1];
      V cv = c.data[pos * dd / 2 + i], sv = s.data[pos * dd / 2 + i];
      res.data[base + 2 * i] = d.add(d.mul(g0, cv), d.mul(g1, sv));
      res.data[base + 2 * i + 1] = d.sub(d.mul(g1, cv), d.mul(g0, sv));
    }
  }
  out.push_back(std::move(res));
  return std::nullopt;
}
TV_EVALUATE_BY_TEMPLATE(RotaryGradOp)

template <typename D>
static EvalStatus evaluate(CausalMaskOp o, Evaluator<D> &ev) {
  using T = Tensor<typename D::V>;
  D &d = ev.d;
  auto &out = ev.out;
  Shape rs = ev.result();
  T res = ev.make(rs);
  int64_t off = rs[1] - rs[0];
  if (std::optional<StringRef> axis = o.getQueryAxis()) {
    int64_t c = ev.coord(*axis);
    if (c < 0)
      return "query_axis '" + axis->str() + "' is not a mesh axis";
    off = c * rs[0];
  }
  if (auto qc = o.getQueryChunks()) {
    auto kc = *o.getKeyChunks();
    int64_t cs = (int64_t)*o.getChunkSize();
    for (int64_t i = 0; i < rs[0]; ++i)
      for (int64_t j = 0; j < rs[1]; ++j)
        res.data[i * rs[1] + j] =
            kc[j / cs] * cs + j % cs <= (*qc)[i / cs] * cs + i % cs
                ? d.one()
                : d.zero();
    out.push_back(std::move(res));
    return std::nullopt;
  }
  std::optional<uint64_t> w = o.getWindow();
  for (int64_t i = 0; i < rs[0]; ++i)
    for (int64_t j = 0; j < rs[1]; ++j)
      res.data[i * rs[1] + j] =
          j <= i + off && (!w || i + off - j < (int64_t)*w) ? d.one()
                                                            : d.zero();
  out.push_back(std::move(res));
  return std::nullopt;
}
TV_EVALUATE_BY_TEMPLATE(CausalMaskOp)

template <typename D>
static EvalStatus evaluate(ApplyMaskOp, Evaluator<D> &ev) {
  using V = typename D::V;
  using T = Tensor<typename D::V>;
  D &d = ev.d;
  auto in = ev.in;
  auto &out = ev.out;
  const T &x = *in[0], &m = *in[1];
  T res = ev.make(x.shape);
  int64_t ms = m.data.size();
  for (size_t i = 0; i < x.data.size(); ++i) {
    // mask ? x : -inf, exactly: a constant mask (tv.causal_mask)
    // decides directly, any other mask selects by its 0/1 value.
    V mv = m.data[i % ms];
    if (mv == d.one())
      res.data[i] = x.data[i];
    else if (mv == d.zero())
      res.data[i] = d.negInf();
    else
      res.data[i] = d.select(mv, 0, {d.negInf(), x.data[i]});
  }
  out.push_back(std::move(res));
  return std::nullopt;
}
TV_EVALUATE_BY_TEMPLATE(ApplyMaskOp)

template <typename D>
static EvalStatus evaluate(ApplyMaskGradOp, Evaluator<D> &ev) {
  using T = Tensor<typename D::V>;
  D &d = ev.d;
  auto in = ev.in;
  auto &out = ev.out;
  const T &g = *in[0], &m = *in[1];
  T res = ev.make(g.shape);
  int64_t ms = m.data.size();
  for (size_t i = 0; i < g.data.size(); ++i)
    res.data[i] = d.mul(m.data[i % ms], g.data[i]);
  out.push_back(std::move(res));
  return std::nullopt;
}
TV_EVALUATE_BY_TEMPLATE(ApplyMaskGradOp)

//===----------------------------------------------------------------------===//
// Structure and rules
//===----------------------------------------------------------------------===//

static void rotaryShapeRule(Operation *o, ShapeConstraints &c) {
  Value x = o->getOperand(0), cos = o->getOperand(1), sin = o->getOperand(2);
  c.equalShapes(o, x, o->getResult(0));
  c.equalShapes(o, cos, sin);
  c.equal(o, key(x, rankOf(x) - 2), key(cos, 0));
  c.linear(o, {{1, last(x)}}, {{2, key(cos, 1)}});
}

TV_SHAPE_RULE_BY(RotaryOp, rotaryShapeRule)
TV_SHAPE_RULE_BY(RotaryGradOp, rotaryShapeRule)

void CausalMaskOp::addShapeConstraints(ShapeConstraints &c) {
  CausalMaskOp o = *this;
  Value r = o->getResult(0);
  ArrayRef<int64_t> s = shapeOf(r);
  if (getWindow()) {
    c.fix(r); // the window is a size, not a ratio
  } else if (auto qc = getQueryChunks()) {
    // Every chunk keeps its share of both dimensions: the chunk size is a
    // position along the queries, and the keys keep their ratio to them.
    c.linear(o, {{(int64_t)qc->size(), key(r, 1)}},
             {{(int64_t)getKeyChunks()->size(), key(r, 0)}});
    c.position(o, "chunk_size", (int64_t)*getChunkSize(), key(r, 0));
  } else if (getQueryAxis() && s[0] > 0 && s[1] % s[0] == 0) {
    // The rank's block of queries against the whole sequence: the keys
    // stay the blocks' count times the queries.
    c.linear(o, {{1, key(r, 1)}}, {{s[1] / s[0], key(r, 0)}});
  } else if (s[0] == s[1]) {
    c.equal(o, key(r, 0), key(r, 1));
  } else {
    c.fix(r);
  }
}

static void applyMaskShapeRule(Operation *o, ShapeConstraints &c) {
  Value x = o->getOperand(0), m = o->getOperand(1);
  c.equalShapes(o, x, o->getResult(0));
  c.equal(o, key(m, 0), key(x, rankOf(x) - 2));
  c.equal(o, key(m, 1), last(x));
}

TV_SHAPE_RULE_BY(ApplyMaskOp, applyMaskShapeRule)
TV_SHAPE_RULE_BY(ApplyMaskGradOp, applyMaskShapeRule)

static FoldFact rotaryFoldFact(Operation *o, ArrayRef<FoldFact> operands,
                               unsigned result, int64_t axisSize,
                               std::string &why) {
  int nx = rankOf(o->getOperand(0));
  FoldFact fx = operands[0], fc = operands[1], fs = operands[2];
  if (fx.kind == FoldFact::Par && fx.dim < nx - 2 && fc.kind == FoldFact::Rep &&
      fs.kind == FoldFact::Rep)
    return FoldFact::par(fx.dim);
  if (fx.isPar(nx - 2) && fc.isPar(0) && fs.isPar(0))
    return FoldFact::par(nx - 2);
  return notFoldable(why, "rotary factored inconsistently");
}

TV_FOLD_FACT_BY(RotaryOp, rotaryFoldFact)
TV_FOLD_FACT_BY(RotaryGradOp, rotaryFoldFact)

static FoldFact applyMaskFoldFact(Operation *o, ArrayRef<FoldFact> operands,
                                  unsigned result, int64_t axisSize,
                                  std::string &why) {
  FoldFact fx = operands[0];
  if (fx.kind == FoldFact::Par && fx.dim < rankOf(o->getOperand(0)) - 2 &&
      operands[1].kind == FoldFact::Rep)
    return FoldFact::par(fx.dim);
  return notFoldable(why, "mask along the factored dimension");
}

TV_FOLD_FACT_BY(ApplyMaskOp, applyMaskFoldFact)
TV_FOLD_FACT_BY(ApplyMaskGradOp, applyMaskFoldFact)

//===----------------------------------------------------------------------===//
// Backward ops
//===----------------------------------------------------------------------===//

unsigned RotaryGradOp::getCotangentIndex() { return 0; }
unsigned ApplyMaskGradOp::getCotangentIndex() { return 0; }

//===- MoE.cpp - gates, dispatch/combine, routed experts ------------------===//
//
// Mixture of experts: top-k gating with dense dispatch and combine
// (GShard style) and DeepSeek-V3's router and grouped SwiGLU experts.
//
//===----------------------------------------------------------------------===//
#include "OpFamily.h"

using namespace mlir;
using namespace mlir::tv;
using namespace mlir::tv::ops;

//===----------------------------------------------------------------------===//
// Verifiers and folders
//===----------------------------------------------------------------------===//

static LogicalResult verifyExpertShapes(Operation *op, Value tokens,
                                        Value gates, Value experts) {
  ArrayRef<int64_t> x = shapeOf(tokens), g = shapeOf(gates);
  if (x.size() != 2 || g.size() != 2)
    return op->emitOpError() << "tokens and gates must have rank 2";
  if (g[0] != x[0])
    return op->emitOpError()
           << "gates cover " << g[0] << " tokens, input has " << x[0];
  return expectShape(op, experts, {g[1], x[0], x[1]}, "expert tensor");
}

/// Tokens `[t, h]` and router `[e, h]`; the selection parameters fit `e`.
static LogicalResult verifyRouter(Operation *op, Value input, Value weight,
                                  int64_t k, int64_t groups,
                                  int64_t topkGroups) {
  ArrayRef<int64_t> x = shapeOf(input), w = shapeOf(weight);
  if (x.size() != 2 || w.size() != 2)
    return op->emitOpError() << "tokens and router weight must have rank 2";
  if (w[1] != x[1])
    return op->emitOpError() << "router weight has hidden size " << w[1]
                             << ", tokens have " << x[1];
  int64_t e = w[0];
  if (groups < 1 || e % groups != 0)
    return op->emitOpError()
           << "n_groups " << groups << " must divide the " << e << " experts";
  if (topkGroups < 1 || topkGroups > groups)
    return op->emitOpError() << "topk_groups " << topkGroups
                             << " must be in [1, " << groups << "]";
  if (k < 1 || k > topkGroups * (e / groups))
    return op->emitOpError()
           << "k = " << k << " must be in [1, " << topkGroups * (e / groups)
           << "] (the experts of the kept groups)";
  return success();
}

/// Tokens `[t, h]`, routing `[t, k]`, local experts `w1`, `w3` `[n, f, h]`
/// and `w2` `[n, h, f]`.
static LogicalResult verifyExperts(Operation *op, Value input, Value indices,
                                   Value weights, Value w1, Value w3, Value w2,
                                   int64_t start) {
  ArrayRef<int64_t> x = shapeOf(input), i = shapeOf(indices);
  if (x.size() != 2 || i.size() != 2)
    return op->emitOpError() << "tokens and indices must have rank 2";
  if (i[0] != x[0])
    return op->emitOpError()
           << "indices cover " << i[0] << " tokens, input has " << x[0];
  if (failed(expectShape(op, weights, i, "routing weights")))
    return failure();
  ArrayRef<int64_t> a = shapeOf(w1);
  if (a.size() != 3 || a[2] != x[1])
    return op->emitOpError()
           << "w1 must be [experts, ffn, " << x[1] << "], got " << str(a);
  if (failed(expectShape(op, w3, a, "w3")) ||
      failed(expectShape(op, w2, {a[0], a[2], a[1]}, "w2")))
    return failure();
  if (start < 0)
    return op->emitOpError() << "expert_start " << start << " is negative";
  return success();
}

LogicalResult TopKGateOp::verify() {
  ArrayRef<int64_t> s = shapeOf(getInput());
  if (s.size() != 2)
    return emitOpError() << "logits must have rank 2 ([tokens, experts])";
  if ((int64_t)getK() < 1 || (int64_t)getK() > s[1])
    return emitOpError() << "k = " << getK() << " must be in [1, " << s[1]
                         << "]";
  return success();
}

LogicalResult DispatchOp::verify() {
  return verifyExpertShapes(*this, getInput(), getGates(), getResult());
}

LogicalResult CombineOp::verify() {
  return verifyExpertShapes(*this, getResult(), getGates(), getInput());
}

LogicalResult DispatchGradOp::verify() {
  return verifyExpertShapes(*this, getResult(), getGates(), getGrad());
}

LogicalResult CombineGradOp::verify() {
  return verifyExpertShapes(*this, getGrad(), getGates(), getInput());
}

LogicalResult MoEGateOp::verify() {
  if (failed(verifyRouter(*this, getInput(), getWeight(), getK(), getNGroups(),
                          getTopkGroups())))
    return failure();
  SmallVector<int64_t> out{shapeOf(getInput())[0], (int64_t)getK()};
  if (failed(expectShape(*this, getWeights(), out, "weights")) ||
      failed(expectShape(*this, getIndices(), out, "indices")))
    return failure();
  return success();
}

LogicalResult MoEGateGradOp::verify() {
  if (failed(verifyRouter(*this, getInput(), getWeight(), getK(), getNGroups(),
                          getTopkGroups())))
    return failure();
  return expectShape(*this, getGrad(),
                     {shapeOf(getInput())[0], (int64_t)getK()}, "grad");
}

LogicalResult MoEGmmOp::verify() {
  if (failed(verifyExperts(*this, getInput(), getIndices(), getWeights(),
                           getW1(), getW3(), getW2(), getExpertStart())))
    return failure();
  return expectShape(*this, getResult(), shapeOf(getInput()), "result");
}

LogicalResult MoEGmmGradOp::verify() {
  if (failed(verifyExperts(*this, getInput(), getIndices(), getWeights(),
                           getW1(), getW3(), getW2(), getExpertStart())))
    return failure();
  return expectShape(*this, getGrad(), shapeOf(getInput()), "grad");
}

//===----------------------------------------------------------------------===//
// Meaning
//===----------------------------------------------------------------------===//

/// Router of token i: its scores over the experts, the selected experts
/// and their scores.
/// A grouped expert matmul over symbolic routing builds terms per token
/// and expert: the stage's budget is checked as it goes, not only after the
/// op (the 8-rank MoE plan's expert gradients grew past 13 GB in one op).
static constexpr const char *kPastBudget =
    "symbolic execution exceeds the stage's memory or time budget";

template <typename D> struct Route {
  SmallVector<typename D::V> scores, index, picked;
};
template <typename D>
static Route<D> route(Evaluator<D> &ev, const Tensor<typename D::V> &x,
                      const Tensor<typename D::V> &w, int64_t i, ScoreFunc f,
                      int64_t k, int64_t groups, int64_t topkGroups) {
  using V = typename D::V;
  D &d = ev.d;
  int64_t h = x.shape[1], e = w.shape[0];
  Route<D> r;
  for (int64_t c = 0; c < e; ++c) {
    V z = d.zero();
    for (int64_t q = 0; q < h; ++q)
      z = d.add(z, d.mul(x.data[i * h + q], w.data[c * h + q]));
    r.scores.push_back(f == ScoreFunc::sigmoid ? d.sigmoid(z) : d.exp(z));
  }
  if (f == ScoreFunc::softmax) {
    V total = ev.sum(r.scores);
    for (V &s : r.scores)
      s = d.div(s, total);
  }
  for (int64_t j = 0; j < k; ++j) {
    r.index.push_back(d.moeRoute({k, j, groups, topkGroups}, r.scores));
    r.picked.push_back(d.select(r.index.back(), 0, r.scores));
  }
  return r;
}

/// 1 if the expert index `idx` is `expert`, else 0.
template <typename D>
static typename D::V expertIs(Evaluator<D> &ev, typename D::V idx,
                              int64_t expert) {
  return ev.d.select(idx, expert, {ev.d.one()});
}

/// One SwiGLU expert l on token i, up to its down projection.
template <typename D> struct Expert {
  SmallVector<typename D::V> a, b, sig, u;
};
template <typename D>
static Expert<D> expert(Evaluator<D> &ev, const Tensor<typename D::V> &x,
                        const Tensor<typename D::V> &w1,
                        const Tensor<typename D::V> &w3, int64_t i, int64_t l) {
  using V = typename D::V;
  D &d = ev.d;
  int64_t h = x.shape[1], f = w1.shape[1];
  Expert<D> ex;
  for (int64_t p = 0; p < f; ++p) {
    V a = d.zero(), b = d.zero();
    for (int64_t q = 0; q < h; ++q) {
      a = d.add(a, d.mul(x.data[i * h + q], w1.data[(l * f + p) * h + q]));
      b = d.add(b, d.mul(x.data[i * h + q], w3.data[(l * f + p) * h + q]));
    }
    V s = d.sigmoid(a);
    ex.a.push_back(a);
    ex.b.push_back(b);
    ex.sig.push_back(s);
    ex.u.push_back(d.mul(d.mul(a, s), b));
  }
  return ex;
}

template <typename D>
static EvalStatus evaluate(TopKGateOp o, Evaluator<D> &ev) {
  using V = typename D::V;
  using T = Tensor<typename D::V>;
  D &d = ev.d;
  auto in = ev.in;
  auto &out = ev.out;
  const T &x = *in[0];
  int64_t t = x.shape[0], e = x.shape[1];
  T res = ev.make(x.shape);
  for (int64_t i = 0; i < t; ++i) {
    ArrayRef<V> row(x.data.data() + i * e, e);
    for (int64_t j = 0; j < e; ++j)
      res.data[i * e + j] = d.topk(o.getK(), j, row);
  }
  out.push_back(std::move(res));
  return std::nullopt;
}
TV_EVALUATE_BY_TEMPLATE(TopKGateOp)

template <typename D>
static EvalStatus evaluate(TopKGateGradOp o, Evaluator<D> &ev) {
  using V = typename D::V;
  using T = Tensor<typename D::V>;
  D &d = ev.d;
  auto in = ev.in;
  auto &out = ev.out;
  const T &x = *in[0], &g = *in[1];
  int64_t t = x.shape[0], e = x.shape[1];
  T res = ev.make(x.shape);
  for (int64_t i = 0; i < t; ++i) {
    ArrayRef<V> row(x.data.data() + i * e, e);
    SmallVector<V> gate;
    V dot = d.zero();
    for (int64_t j = 0; j < e; ++j) {
      gate.push_back(d.topk(o.getK(), j, row));
      dot = d.add(dot, d.mul(g.data[i * e + j], gate.back()));
    }
    for (int64_t j = 0; j < e; ++j)
      res.data[i * e + j] = d.mul(gate[j], d.sub(g.data[i * e + j], dot));
  }
  out.push_back(std::move(res));
  return std::nullopt;
}
TV_EVALUATE_BY_TEMPLATE(TopKGateGradOp)

template <typename D> static EvalStatus evaluate(DispatchOp, Evaluator<D> &ev) {
  using V = typename D::V;
  using T = Tensor<typename D::V>;
  D &d = ev.d;
  auto in = ev.in;
  auto &out = ev.out;
  const T &x = *in[0], &g = *in[1];
  int64_t t = x.shape[0], h = x.shape[1], e = g.shape[1];
  T res = ev.make(ev.result());
  for (int64_t ei = 0; ei < e; ++ei)
    for (int64_t i = 0; i < t; ++i) {
      V nz = d.nonzero(g.data[i * e + ei]);
      for (int64_t j = 0; j < h; ++j)
        res.data[(ei * t + i) * h + j] = d.mul(nz, x.data[i * h + j]);
    }
  out.push_back(std::move(res));
  return std::nullopt;
}
TV_EVALUATE_BY_TEMPLATE(DispatchOp)

template <typename D>
static EvalStatus evaluate(DispatchGradOp, Evaluator<D> &ev) {
  using V = typename D::V;
  using T = Tensor<typename D::V>;
  D &d = ev.d;
  auto in = ev.in;
  auto &out = ev.out;
  const T &dy = *in[0], &g = *in[1];
  int64_t e = dy.shape[0], t = dy.shape[1], h = dy.shape[2];
  T res = ev.make(ev.result());
  for (int64_t i = 0; i < t; ++i)
    for (int64_t j = 0; j < h; ++j) {
      V s = d.zero();
      for (int64_t ei = 0; ei < e; ++ei)
        s = d.add(s, d.mul(d.nonzero(g.data[i * e + ei]),
                           dy.data[(ei * t + i) * h + j]));
      res.data[i * h + j] = s;
    }
  out.push_back(std::move(res));
  return std::nullopt;
}
TV_EVALUATE_BY_TEMPLATE(DispatchGradOp)

template <typename D> static EvalStatus evaluate(CombineOp, Evaluator<D> &ev) {
  using V = typename D::V;
  using T = Tensor<typename D::V>;
  D &d = ev.d;
  auto in = ev.in;
  auto &out = ev.out;
  const T &y = *in[0], &g = *in[1];
  int64_t e = y.shape[0], t = y.shape[1], h = y.shape[2];
  T res = ev.make(ev.result());
  for (int64_t i = 0; i < t; ++i)
    for (int64_t j = 0; j < h; ++j) {
      V s = d.zero();
      for (int64_t ei = 0; ei < e; ++ei)
        s = d.add(s, d.mul(g.data[i * e + ei], y.data[(ei * t + i) * h + j]));
      res.data[i * h + j] = s;
    }
  out.push_back(std::move(res));
  return std::nullopt;
}
TV_EVALUATE_BY_TEMPLATE(CombineOp)

template <typename D>
static EvalStatus evaluate(CombineGradOp, Evaluator<D> &ev) {
  using V = typename D::V;
  using T = Tensor<typename D::V>;
  D &d = ev.d;
  auto in = ev.in;
  auto &out = ev.out;
  const T &y = *in[0], &g = *in[1], &dout = *in[2];
  int64_t e = y.shape[0], t = y.shape[1], h = y.shape[2];
  T dy = ev.make(y.shape), dg = ev.make(g.shape);
  for (int64_t ei = 0; ei < e; ++ei)
    for (int64_t i = 0; i < t; ++i) {
      V s = d.zero();
      for (int64_t j = 0; j < h; ++j) {
        dy.data[(ei * t + i) * h + j] =
            d.mul(g.data[i * e + ei], dout.data[i * h + j]);
        s = d.add(s, d.mul(y.data[(ei * t + i) * h + j], dout.data[i * h + j]));
      }
      dg.data[i * e + ei] = s;
    }
  out.push_back(std::move(dy));
  out.push_back(std::move(dg));
  return std::nullopt;
}
TV_EVALUATE_BY_TEMPLATE(CombineGradOp)

template <typename D>
static EvalStatus evaluate(MoEGateOp o, Evaluator<D> &ev) {
  using V = typename D::V;
  using T = Tensor<typename D::V>;
  D &d = ev.d;
  auto in = ev.in;
  auto &out = ev.out;
  const T &x = *in[0], &w = *in[1];
  int64_t t = x.shape[0], k = o.getK();
  double scale = o.getRouteScale().convertToDouble();
  T wt = ev.make(ev.result(0)), idx = ev.make(ev.result(1));
  for (int64_t i = 0; i < t; ++i) {
    Route<D> r = route(ev, x, w, i, o.getScoreFunc(), k, o.getNGroups(),
                       o.getTopkGroups());
    V total = ev.sum(r.picked);
    for (int64_t j = 0; j < k; ++j) {
      idx.data[i * k + j] = r.index[j];
      V g = o.getScoreFunc() == ScoreFunc::sigmoid ? d.div(r.picked[j], total)
                                                   : r.picked[j];
      wt.data[i * k + j] = d.scale(g, scale);
    }
  }
  out.push_back(std::move(wt));
  out.push_back(std::move(idx));
  return std::nullopt;
}
TV_EVALUATE_BY_TEMPLATE(MoEGateOp)

template <typename D>
static EvalStatus evaluate(MoEGateGradOp o, Evaluator<D> &ev) {
  using V = typename D::V;
  using T = Tensor<typename D::V>;
  D &d = ev.d;
  auto in = ev.in;
  auto &out = ev.out;
  const T &x = *in[0], &w = *in[1], &g = *in[2];
  int64_t t = x.shape[0], h = x.shape[1], e = w.shape[0], k = o.getK();
  double scale = o.getRouteScale().convertToDouble();
  bool sigmoid = o.getScoreFunc() == ScoreFunc::sigmoid;
  T dx = ev.make(x.shape), dw = ev.make(w.shape);
  for (int64_t i = 0; i < t; ++i) {
    Route<D> r = route(ev, x, w, i, o.getScoreFunc(), k, o.getNGroups(),
                       o.getTopkGroups());
    // d weights / d picked scores.
    SmallVector<V> dg(k);
    V total = ev.sum(r.picked), dot = d.zero();
    for (int64_t j = 0; j < k; ++j)
      dot = d.add(dot, d.mul(g.data[i * k + j], r.picked[j]));
    for (int64_t j = 0; j < k; ++j)
      dg[j] = sigmoid ? d.scale(d.sub(d.div(g.data[i * k + j], total),
                                      d.div(dot, d.mul(total, total))),
                                scale)
                      : d.scale(g.data[i * k + j], scale);
    // Scatter to the experts, then through the score function.
    SmallVector<V> ds(e, d.zero()), dz(e);
    for (int64_t c = 0; c < e; ++c)
      for (int64_t j = 0; j < k; ++j)
        ds[c] = d.add(ds[c], d.mul(d.select(r.index[j], c, {d.one()}), dg[j]));
    V sdot = d.zero();
    for (int64_t c = 0; c < e; ++c)
      sdot = d.add(sdot, d.mul(ds[c], r.scores[c]));
    for (int64_t c = 0; c < e; ++c)
      dz[c] = sigmoid ? d.mul(ds[c],
                              d.mul(r.scores[c], d.sub(d.one(), r.scores[c])))
                      : d.mul(r.scores[c], d.sub(ds[c], sdot));
    for (int64_t c = 0; c < e; ++c)
      for (int64_t q = 0; q < h; ++q) {
        dx.data[i * h + q] =
            d.add(dx.data[i * h + q], d.mul(dz[c], w.data[c * h + q]));
        dw.data[c * h + q] =
            d.add(dw.data[c * h + q], d.mul(dz[c], x.data[i * h + q]));
      }
  }
  out.push_back(std::move(dx));
  out.push_back(std::move(dw));
  return std::nullopt;
}
TV_EVALUATE_BY_TEMPLATE(MoEGateGradOp)

template <typename D> static EvalStatus evaluate(MoEGmmOp o, Evaluator<D> &ev) {
  using V = typename D::V;
  using T = Tensor<typename D::V>;
  D &d = ev.d;
  auto in = ev.in;
  auto &out = ev.out;
  const T &x = *in[0], &idx = *in[1], &wt = *in[2], &w1 = *in[3], &w3 = *in[4],
          &w2 = *in[5];
  int64_t t = x.shape[0], h = x.shape[1], k = idx.shape[1];
  int64_t n = w1.shape[0], f = w1.shape[1];
  T res = ev.make(ev.result());
  for (int64_t i = 0; i < t; ++i)
    for (int64_t l = 0; l < n; ++l) {
      if (d.overBudget())
        return std::string(kPastBudget);
      V coef = d.zero();
      for (int64_t j = 0; j < k; ++j)
        coef = d.add(coef, d.mul(expertIs(ev, idx.data[i * k + j],
                                          o.getExpertStart() + l),
                                 wt.data[i * k + j]));
      Expert<D> ex = expert(ev, x, w1, w3, i, l);
      for (int64_t q = 0; q < h; ++q) {
        V oq = d.zero();
        for (int64_t p = 0; p < f; ++p)
          oq = d.add(oq, d.mul(ex.u[p], w2.data[(l * h + q) * f + p]));
        res.data[i * h + q] = d.add(res.data[i * h + q], d.mul(coef, oq));
      }
    }
  out.push_back(std::move(res));
  return std::nullopt;
}
TV_EVALUATE_BY_TEMPLATE(MoEGmmOp)

template <typename D>
static EvalStatus evaluate(MoEGmmGradOp o, Evaluator<D> &ev) {
  using V = typename D::V;
  using T = Tensor<typename D::V>;
  D &d = ev.d;
  auto in = ev.in;
  auto &out = ev.out;
  const T &dy = *in[0], &x = *in[1], &idx = *in[2], &wt = *in[3], &w1 = *in[4],
          &w3 = *in[5], &w2 = *in[6];
  int64_t t = x.shape[0], h = x.shape[1], k = idx.shape[1];
  int64_t n = w1.shape[0], f = w1.shape[1];
  T dx = ev.make(x.shape), dwt = ev.make(wt.shape), dw1 = ev.make(w1.shape),
    dw3 = ev.make(w3.shape), dw2 = ev.make(w2.shape);
  for (int64_t i = 0; i < t; ++i)
    for (int64_t l = 0; l < n; ++l) {
      if (d.overBudget())
        return std::string(kPastBudget);
      SmallVector<V> m(k);
      V coef = d.zero();
      for (int64_t j = 0; j < k; ++j) {
        m[j] = expertIs(ev, idx.data[i * k + j], o.getExpertStart() + l);
        coef = d.add(coef, d.mul(m[j], wt.data[i * k + j]));
      }
      Expert<D> ex = expert(ev, x, w1, w3, i, l);
      V dot = d.zero();
      SmallVector<V> dout(h);
      for (int64_t q = 0; q < h; ++q) {
        V oq = d.zero();
        for (int64_t p = 0; p < f; ++p)
          oq = d.add(oq, d.mul(ex.u[p], w2.data[(l * h + q) * f + p]));
        dot = d.add(dot, d.mul(dy.data[i * h + q], oq));
        dout[q] = d.mul(coef, dy.data[i * h + q]);
      }
      for (int64_t j = 0; j < k; ++j)
        dwt.data[i * k + j] = d.add(dwt.data[i * k + j], d.mul(m[j], dot));
      for (int64_t p = 0; p < f; ++p) {
        V du = d.zero();
        for (int64_t q = 0; q < h; ++q) {
          int64_t w2i = (l * h + q) * f + p;
          du = d.add(du, d.mul(dout[q], w2.data[w2i]));
          dw2.data[w2i] = d.add(dw2.data[w2i], d.mul(dout[q], ex.u[p]));
        }
        V sa = ex.sig[p];
        V dsilu = d.mul(sa, d.add(d.one(), d.mul(ex.a[p], d.sub(d.one(), sa))));
        V da = d.mul(du, d.mul(ex.b[p], dsilu));
        V db = d.mul(du, d.mul(ex.a[p], sa));
        for (int64_t q = 0; q < h; ++q) {
          int64_t wi = (l * f + p) * h + q;
          dw1.data[wi] = d.add(dw1.data[wi], d.mul(da, x.data[i * h + q]));
          dw3.data[wi] = d.add(dw3.data[wi], d.mul(db, x.data[i * h + q]));
          dx.data[i * h + q] =
              d.add(dx.data[i * h + q],
                    d.add(d.mul(da, w1.data[wi]), d.mul(db, w3.data[wi])));
        }
      }
    }
  out.push_back(std::move(dx));
  out.push_back(std::move(dwt));
  out.push_back(std::move(dw1));
  out.push_back(std::move(dw3));
  out.push_back(std::move(dw2));
  return std::nullopt;
}
TV_EVALUATE_BY_TEMPLATE(MoEGmmGradOp)

//===----------------------------------------------------------------------===//
// Structure and rules
//===----------------------------------------------------------------------===//

// A gate normalizes each token's row of expert scores.
OpStructure TopKGateOp::getStructure(unsigned) {
  OpStructure s = elementwiseStructure(*this);
  s.loops.back() = LoopKind::Normalized;
  return s;
}
OpStructure TopKGateGradOp::getStructure(unsigned) {
  OpStructure s = elementwiseStructure(*this);
  s.loops.back() = LoopKind::Normalized;
  return s;
}

static void topKGateShapeRule(Operation *o, ShapeConstraints &c) {
  for (Value v : o->getOperands())
    c.equalShapes(o, v, o->getResult(0));
  int64_t k = cast<IntegerAttr>(o->getAttr("k")).getInt();
  c.atLeast(key(o->getResult(0), 1), k + 1);
}

TV_SHAPE_RULE_BY(TopKGateOp, topKGateShapeRule)
TV_SHAPE_RULE_BY(TopKGateGradOp, topKGateShapeRule)

static void dispatchShapeRule(Operation *o, ShapeConstraints &c) {
  // tokens [t, h], gates [t, e], experts [e, t, h].
  Value tokens, gates, experts;
  if (isa<DispatchOp>(o)) {
    tokens = o->getOperand(0), gates = o->getOperand(1),
    experts = o->getResult(0);
  } else if (isa<CombineOp>(o)) {
    experts = o->getOperand(0), gates = o->getOperand(1),
    tokens = o->getResult(0);
  } else if (isa<DispatchGradOp>(o)) {
    experts = o->getOperand(0), gates = o->getOperand(1),
    tokens = o->getResult(0);
  } else {
    experts = o->getOperand(0), gates = o->getOperand(1),
    tokens = o->getOperand(2);
    c.equalShapes(o, experts, o->getResult(0));
    c.equalShapes(o, gates, o->getResult(1));
  }
  c.equal(o, key(tokens, 0), key(gates, 0));
  c.equal(o, key(experts, 0), key(gates, 1));
  c.equal(o, key(experts, 1), key(tokens, 0));
  c.equal(o, key(experts, 2), key(tokens, 1));
}

TV_SHAPE_RULE_BY(DispatchOp, dispatchShapeRule)
TV_SHAPE_RULE_BY(CombineOp, dispatchShapeRule)
TV_SHAPE_RULE_BY(DispatchGradOp, dispatchShapeRule)
TV_SHAPE_RULE_BY(CombineGradOp, dispatchShapeRule)

static void moeGateShapeRule(Operation *o, ShapeConstraints &c) {
  // The routing keeps its full expert count and k: group-limited
  // top-k over a smaller row would select differently (see
  // docs/soundness.md). Tokens and the hidden size reduce.
  Value x = o->getOperand(0), w = o->getOperand(1);
  c.equal(o, key(x, 1), key(w, 1));
  c.atLeast(key(x, 1), 2);
  c.fixDim(key(w, 0));
  Value routed = isa<MoEGateOp>(o) ? o->getResult(0) : o->getOperand(2);
  c.equal(o, key(x, 0), key(routed, 0));
  c.fixDim(key(routed, 1));
  if (isa<MoEGateOp>(o)) {
    c.equalShapes(o, o->getResult(0), o->getResult(1));
  } else {
    c.equalShapes(o, x, o->getResult(0));
    c.equalShapes(o, w, o->getResult(1));
  }
}

TV_SHAPE_RULE_BY(MoEGateOp, moeGateShapeRule)
TV_SHAPE_RULE_BY(MoEGateGradOp, moeGateShapeRule)

static void moeGmmShapeRule(Operation *o, ShapeConstraints &c) {
  // x [t, h], indices and weights [t, k], w1 and w3 [n, f, h],
  // w2 [n, h, f]. Local experts are numbered from a global start:
  // their count stays, as does k; h and f are contracted.
  unsigned base = isa<MoEGmmGradOp>(o) ? 1 : 0;
  Value x = o->getOperand(base), idx = o->getOperand(base + 1),
        wt = o->getOperand(base + 2), w1 = o->getOperand(base + 3),
        w3 = o->getOperand(base + 4), w2 = o->getOperand(base + 5);
  c.equal(o, key(x, 0), key(idx, 0));
  c.equalShapes(o, idx, wt);
  c.fixDim(key(idx, 1));
  c.fixDim(key(w1, 0));
  c.equalShapes(o, w1, w3);
  c.equal(o, key(w2, 0), key(w1, 0));
  c.equal(o, key(w2, 1), key(x, 1));
  c.equal(o, key(w2, 2), key(w1, 1));
  c.equal(o, key(w1, 2), key(x, 1));
  c.atLeast(key(x, 1), 2);
  c.atLeast(key(w1, 1), 2);
  if (base)
    c.equalShapes(o, o->getOperand(0), x);
  Value operands[] = {x, wt, w1, w3, w2};
  for (auto [r, v] : llvm::zip(o->getResults(), ArrayRef<Value>(operands)))
    c.equalShapes(o, v, r);
}

TV_SHAPE_RULE_BY(MoEGmmOp, moeGmmShapeRule)
TV_SHAPE_RULE_BY(MoEGmmGradOp, moeGmmShapeRule)

static FoldFact moeGateFoldFact(Operation *o, ArrayRef<FoldFact> operands,
                                unsigned result, int64_t axisSize,
                                std::string &why) {
  // Each token is routed on its own row: factored along the tokens
  // with a replicated router; the router's gradient sums the tokens.
  bool grad = isa<MoEGateGradOp>(o);
  if (operands[0].isPar(0) && operands[1].kind == FoldFact::Rep &&
      (!grad || operands[2].isPar(0)))
    return grad && result == 1 ? FoldFact::red() : FoldFact::par(0);
  return notFoldable(why, "router factored other than along the tokens");
}

TV_FOLD_FACT_BY(MoEGateOp, moeGateFoldFact)
TV_FOLD_FACT_BY(MoEGateGradOp, moeGateFoldFact)

static FoldFact moeGmmFoldFact(Operation *o, ArrayRef<FoldFact> operands,
                               unsigned result, int64_t axisSize,
                               std::string &why) {
  // Tokens [, cotangent], indices and routing weights factored along
  // the tokens, expert weights replicated; their gradients sum the
  // tokens.
  unsigned base = isa<MoEGmmGradOp>(o) ? 1 : 0;
  for (unsigned i = 0; i < base + 3; ++i)
    if (!operands[i].isPar(0))
      return notFoldable(why,
                         "expert matmul factored other than along the tokens");
  for (unsigned i = base + 3; i < base + 6; ++i)
    if (operands[i].kind != FoldFact::Rep)
      return notFoldable(why,
                         "expert weights factored in a token-parallel matmul");
  return base && result >= 2 ? FoldFact::red() : FoldFact::par(0);
}

TV_FOLD_FACT_BY(MoEGmmOp, moeGmmFoldFact)
TV_FOLD_FACT_BY(MoEGmmGradOp, moeGmmFoldFact)

FoldFact DispatchOp::getFoldFact(ArrayRef<FoldFact> operands, unsigned result,
                                 int64_t axisSize, std::string &why) {
  FoldFact ft = operands[0], fg = operands[1];
  if (ft.isPar(0) && fg.isPar(0))
    return FoldFact::par(1);
  if (ft.isPar(1) && fg.kind == FoldFact::Rep)
    return FoldFact::par(2);
  return notFoldable(why, "dispatch factored inconsistently");
}

static FoldFact combineFoldFact(Operation *o, ArrayRef<FoldFact> operands,
                                unsigned result, int64_t axisSize,
                                std::string &why) {
  FoldFact fe = operands[0], fg = operands[1];
  if (fe.isPar(1) && fg.isPar(0))
    return FoldFact::par(0);
  if (fe.isPar(2) && fg.kind == FoldFact::Rep)
    return FoldFact::par(1);
  return notFoldable(why, "combine factored inconsistently");
}

TV_FOLD_FACT_BY(CombineOp, combineFoldFact)
TV_FOLD_FACT_BY(DispatchGradOp, combineFoldFact)

FoldFact CombineGradOp::getFoldFact(ArrayRef<FoldFact> operands,
                                    unsigned result, int64_t axisSize,
                                    std::string &why) {
  if (operands[0].isPar(1) && operands[1].isPar(0) && operands[2].isPar(0))
    return result == 0 ? FoldFact::par(1) : FoldFact::par(0);
  return notFoldable(why, "combine_grad factored inconsistently");
}

//===----------------------------------------------------------------------===//
// Backward ops
//===----------------------------------------------------------------------===//

unsigned TopKGateGradOp::getCotangentIndex() { return 1; }
unsigned DispatchGradOp::getCotangentIndex() { return 0; }
unsigned CombineGradOp::getCotangentIndex() { return 2; }
unsigned MoEGateGradOp::getCotangentIndex() { return 2; }
unsigned MoEGmmGradOp::getCotangentIndex() { return 0; }

//===- Optimizer.cpp - sgd and adam steps ---------------------------------===//
//
// Optimizer steps, elementwise over a parameter and its gradient and state.
//
//===----------------------------------------------------------------------===//
#include "OpFamily.h"

using namespace mlir;
using namespace mlir::tv;
using namespace mlir::tv::ops;

//===----------------------------------------------------------------------===//
// Meaning
//===----------------------------------------------------------------------===//

template <typename D> static EvalStatus evaluate(SGDOp o, Evaluator<D> &ev) {
  using V = typename D::V;
  D &d = ev.d;
  auto in = ev.in;
  auto &out = ev.out;
  double lr = o.getLr().convertToDouble();
  out.push_back(ev.zip(*in[0], *in[1],
                       [&](V w, V g) { return d.sub(w, d.scale(g, lr)); }));
  return std::nullopt;
}
TV_EVALUATE_BY_TEMPLATE(SGDOp)

template <typename D> static EvalStatus evaluate(AdamOp o, Evaluator<D> &ev) {
  using V = typename D::V;
  using T = Tensor<typename D::V>;
  D &d = ev.d;
  auto in = ev.in;
  auto &out = ev.out;
  double lr = o.getLr().convertToDouble(), b1 = o.getBeta1().convertToDouble(),
         b2 = o.getBeta2().convertToDouble(),
         eps = o.getEps().convertToDouble();
  int64_t step = o.getStep();
  double c1 = 1 - std::pow(b1, step), c2 = 1 - std::pow(b2, step);
  const T &w = *in[0], &g = *in[1], &m = *in[2], &v = *in[3];
  T nw = ev.make(w.shape), nm = ev.make(w.shape), nv = ev.make(w.shape);
  for (size_t i = 0; i < w.data.size(); ++i) {
    nm.data[i] = d.add(d.scale(m.data[i], b1), d.scale(g.data[i], 1 - b1));
    nv.data[i] = d.add(d.scale(v.data[i], b2),
                       d.scale(d.mul(g.data[i], g.data[i]), 1 - b2));
    V mhat = d.scale(nm.data[i], 1 / c1);
    V vhat = d.scale(nv.data[i], 1 / c2);
    nw.data[i] = d.sub(
        w.data[i], d.scale(d.div(mhat, d.add(d.sqrt(vhat), d.cst(eps))), lr));
  }
  out.push_back(std::move(nw));
  out.push_back(std::move(nm));
  out.push_back(std::move(nv));
  return std::nullopt;
}
TV_EVALUATE_BY_TEMPLATE(AdamOp)

//===----------------------------------------------------------------------===//
// Structure and rules
//===----------------------------------------------------------------------===//

// An optimizer step is elementwise over the parameter, its gradient and
// state.
OpStructure SGDOp::getStructure(unsigned) {
  return elementwiseStructure(*this);
}
OpStructure AdamOp::getStructure(unsigned) {
  return elementwiseStructure(*this);
}

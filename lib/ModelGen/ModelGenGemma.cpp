//===- ModelGenGemma.cpp - Gemma 2's pieces of the generated layers -------===//
//
// Gemma 2 (model_type "gemma2", docs/decisions.md): its RMSNorm multiplies
// by (1 + weight), its GeGLU uses the tanh approximation of GELU
// (gelu_pytorch_tanh), and its attention scores and final logits are
// soft-capped, c * tanh(x / c). Each is written with tv's elementwise ops,
// forward and backward, as Hugging Face's Gemma2 computes them.
//
//===----------------------------------------------------------------------===//
#include "ModelGen.h"

#include <cmath>

using namespace mlir;
using namespace mlir::tv::modelgen;

/// Gemma's RMSNorm weight as the norm applies it: 1 + w (its gradient is
/// the gradient of w).
Val Gen::normWeight(Prog &P, const Val &w) {
  if (!m.gemma2)
    return w;
  return P.scalarOp<AddScalarOp>(w, 1.0, w.n + "_plus1");
}

/// The scale of the attention scores: query_pre_attn_scalar^-0.5 (Gemma
/// 2), head_dim^-0.5 otherwise.
double Gen::attnScale(int64_t dqk) const {
  return 1.0 / std::sqrt(m.qScalar > 0 ? m.qScalar : (double)dqk);
}

/// c * tanh(x / c).
Val Gen::softcap(Prog &P, const Val &x, double c, StringRef hint) {
  Val z = P.scale(x, 1.0 / c, (hint + "_div").str());
  return P.scale(P.unary<TanhOp>(z, (hint + "_tanh").str()), c, hint);
}

/// The gradient of x of c * tanh(x / c): g * (1 - tanh(x / c)^2).
Val Gen::softcapGrad(Prog &P, const Val &x, const Val &g, double c,
                     StringRef hint) {
  Val z = P.scale(x, 1.0 / c, (hint + "_div").str());
  return P.tanhGrad(z, g, hint);
}

static constexpr double kGeluC = 0.044715;
static double geluK() { return std::sqrt(2.0 / M_PI); }

/// gelu_pytorch_tanh: 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))).
Val Gen::geluTanh(Prog &P, const Val &x, StringRef hint) {
  std::string h = hint.str();
  Val x2 = P.mul(x, x, h + "_x2");
  Val x3 = P.mul(x2, x, h + "_x3");
  Val u = P.add(x, P.scale(x3, kGeluC, h + "_cx3"), h + "_inner");
  Val t = P.unary<TanhOp>(P.scale(u, geluK(), h + "_arg"), h + "_tanh");
  Val half = P.scale(x, 0.5, h + "_half");
  return P.mul(half, P.scalarOp<AddScalarOp>(t, 1.0, h + "_1pt"), h);
}

/// Its gradient: g * (0.5 (1 + t) + 0.5 x (1 - t^2) k (1 + 3 c x^2)),
/// t = tanh(k (x + c x^3)), k = sqrt(2 / pi).
Val Gen::geluTanhGrad(Prog &P, const Val &x, const Val &g, StringRef hint) {
  std::string h = hint.str();
  Val x2 = P.mul(x, x, h + "_x2");
  Val x3 = P.mul(x2, x, h + "_x3");
  Val u = P.add(x, P.scale(x3, kGeluC, h + "_cx3"), h + "_inner");
  Val z = P.scale(u, geluK(), h + "_arg");
  Val t = P.unary<TanhOp>(z, h + "_tanh");
  Val a = P.mul(g,
                P.scale(P.scalarOp<AddScalarOp>(t, 1.0, h + "_1pt"), 0.5,
                        h + "_outer"),
                h + "_da");
  Val gx = P.mul(g, P.scale(x, 0.5, h + "_half"), h + "_gx");
  Val b = P.tanhGrad(z, gx, h + "_dz");
  Val du = P.scalarOp<AddScalarOp>(P.scale(x2, 3.0 * kGeluC * geluK(),
                                            h + "_du3"),
                      geluK(), h + "_du");
  return P.add(a, P.mul(b, du, h + "_db"), h);
}

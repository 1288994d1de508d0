//===- ModelGenScaling.cpp - loss scaling and gradient clipping -----------===//
//
// Two parts of the optimizer step as frameworks run it (issue 36):
//
// * Mixed-precision loss scaling (decision 113). The backward starts from
//   the loss times a scale S (a constant, or a runtime scalar input the
//   same on every rank), so every gradient is S times the unscaled one;
//   the gradients are multiplied by 1/S before clipping and the step, as
//   Megatron-LM's optimizer unscales its main gradients. The spec is the
//   single-device mixed-precision step: it scales and unscales the same
//   way, so that the plan's scaled gradients have a spec value to equal.
//
// * Global-norm gradient clipping (decision 114), as Megatron-LM's
//   get_grad_norm_fp32 and clip_grad_by_total_norm_fp32: the squared norms
//   of the gradients each rank holds are summed over the model-parallel
//   group (and over the data-parallel group for sharded gradients), a
//   tensor-parallel duplicate counted once, the tied embedding's copy on the
//   last pipeline stage not at all, experts over their own group; then
//   every gradient is multiplied by min(1, C / (norm + 1e-6)).
//
//===----------------------------------------------------------------------===//
#include "ModelGen.h"

using namespace mlir;
using namespace mlir::tv::modelgen;

/// Megatron-LM's clip_grad_by_total_norm_fp32: C / (norm + 1e-6).
static constexpr double kClipEps = 1e-6;

Val Gen::lossScaleIn(Prog &P) {
  if (lossScaleV)
    return *lossScaleV;
  lossScaleV = P.input("loss_scale", {});
  if (inPlan)
    recs.push_back({"loss_scale", "loss_scale", {}, -1, -1, curStage, -1});
  return *lossScaleV;
}

Val Gen::scaleSeed(Prog &P, const Val &seed) {
  if (p.dynamicLossScale)
    return P.mul(seed, lossScaleIn(P), "dloss_scaled");
  if (p.lossScale > 0)
    return P.scale(seed, p.lossScale, "dloss_scaled");
  return seed;
}

Val Gen::unscale(Prog &P, const Val &g, const std::string &hint) {
  if (p.dynamicLossScale) {
    // Computed once per program, as Megatron's grad scaler keeps inv_scale.
    if (!invLossScaleV)
      invLossScaleV = P.scalarOp<PowOp>(lossScaleIn(P), -1.0, "inv_loss_scale");
    // A scalar operand broadcasts (as Megatron multiplies by inv_scale).
    return P.mul(g, *invLossScaleV, hint);
  }
  if (p.lossScale > 0)
    return P.scalarOp<DivScalarOp>(g, p.lossScale, hint);
  return g;
}

Val Gen::sumSquares(Prog &P, const Val &g, const std::string &hint) {
  Val sq = P.mul(g, g, hint + "_sq");
  int64_t n = 1;
  for (int64_t x : g.s)
    n *= x;
  if (g.s.size() != 1)
    sq = P.reshape(sq, {n}, hint + "_sq_flat");
  return P.sum(sq, 0, hint + "_sqsum");
}

Val Gen::clipFactor(Prog &P, const Val &sq) {
  Val norm = P.unary<SqrtOp>(sq, "grad_norm");
  P.output("grad_norm", norm);
  if (inPlan)
    recs.push_back({"grad_norm", "grad_norm", {}, -1, -1, curStage, -1});
  // min(1, c) written as 1 - relu(1 - c): the clipping factor is 1 while
  // the norm is at most C.
  Val inv = P.scalarOp<PowOp>(P.scalarOp<AddScalarOp>(norm, kClipEps,
                                                      "grad_norm_eps"),
                              -1.0, "inv_grad_norm");
  Val c = P.scale(inv, p.clipGrad, "clip_coeff");
  Val over = P.unary<ReluOp>(P.scalarOp<RSubScalarOp>(c, 1.0, "clip_excess"),
                             "clip_excess_pos");
  return P.scalarOp<RSubScalarOp>(over, 1.0, "clip_factor");
}

Val Gen::clip(Prog &P, const Val &g, const Val &factor,
              const std::string &hint) {
  return P.mul(g, factor, hint);
}

int64_t Gen::axisSize(const std::string &axis) const {
  if (axis == "dp")
    return p.dp;
  if (axis == "edp")
    return p.dp / p.ep;
  if (axis == "ep")
    return p.ep;
  if (axis == "cp")
    return p.cp;
  if (axis == "pp")
    return p.pp;
  if (axis == "tp")
    return p.tp;
  return 1;
}

/// The group a squared sum is all-reduced over: the model-parallel axes
/// (experts: with ep), and the data-parallel ones for sharded gradients.
std::vector<std::string> Gen::normGroup(bool expert, bool dpSharded) const {
  std::vector<std::string> axes;
  if (dpSharded)
    axes = expert ? expertDpAxes() : dpAxes();
  if (expert && p.ep > 1)
    axes.push_back("ep");
  axes.push_back("pp");
  axes.push_back("tp");
  std::vector<std::string> group;
  for (const std::string &a : axes)
    if (axisSize(a) > 1)
      group.push_back(a);
  return group;
}

Gen::NormParts Gen::normParts() const {
  // Every rank issues the same all-reduces in the same order, whatever it
  // holds: the groups follow from the configuration alone.
  NormParts np;
  bool sharded = p.distOpt || p.zero >= 2, replicated = !p.distOpt;
  for (bool expert : {false, true}) {
    if (expert && !m.nExperts)
      continue;
    for (bool dpSharded : {false, true}) {
      if (dpSharded ? !sharded : !replicated)
        continue;
      std::vector<std::string> g = normGroup(expert, dpSharded);
      bool seen = false;
      for (auto &part : np.parts)
        seen |= part.first == g;
      if (!seen)
        np.parts.push_back({g, std::nullopt});
    }
  }
  return np;
}

void Gen::addNormPart(Prog &P, NormParts &np, const Buf &b, const Val &g,
                      bool dpSharded, const std::string &hint) {
  // The tied embedding's copy on the last stage equals the first stage's
  // after the embedding group's all-reduce: Megatron counts it there only
  // (param_is_not_shared).
  if (tiedCopy(b) && curStage == p.pp - 1)
    return;
  addNormSum(P, np, b, sumSquares(P, g, hint), dpSharded, hint);
}

void Gen::addNormSum(Prog &P, NormParts &np, const Buf &b, Val s,
                     bool dpSharded, const std::string &hint) {
  std::vector<std::string> group = normGroup(b.epDim >= 0, dpSharded);
  // A tensor-parallel duplicate (replicated over tp): Megatron counts it on
  // tp rank 0 only (param_is_not_tensor_parallel_duplicate); each tp rank
  // counting 1/tp of it is the same sum, without a branch on the rank.
  if (b.tpDim < 0 && p.tp > 1)
    s = P.scale(s, 1.0 / (double)p.tp, hint + "_tp_duplicate");
  // Added as they come (a rank's own parameters; the spec's sum over every
  // parameter is a balanced tree).
  for (auto &[k, v] : np.parts)
    if (k == group) {
      v = v ? P.add(*v, s, "grad_sqsum_local") : s;
      return;
    }
  llvm_unreachable("a gradient outside the configuration's norm groups");
}

Val Gen::sumTree(Prog &P, std::vector<Val> xs, const std::string &hint) {
  while (xs.size() > 1) {
    std::vector<Val> next;
    for (size_t i = 0; i + 1 < xs.size(); i += 2)
      next.push_back(P.add(xs[i], xs[i + 1], hint));
    if (xs.size() % 2)
      next.push_back(xs.back());
    xs = std::move(next);
  }
  return xs[0];
}

Val Gen::planSquaredNorm(Prog &P, NormParts &np) {
  std::optional<Val> total;
  for (auto &[group, local] : np.parts) {
    // Nothing of this rank's counts in this group (no expert on this
    // stage, its owned ranges all padding): zero.
    Val l = local ? *local : P.zeros({}, "grad_sqsum_local");
    Val r = group.empty() ? l : P.allReduce(l, group, "grad_sqsum_group");
    total = total ? P.add(*total, r, "grad_sqsum") : r;
  }
  return *total;
}

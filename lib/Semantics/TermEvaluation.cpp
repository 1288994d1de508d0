//===- TermEvaluation.cpp - terms evaluated in double precision -----------===//
//
// The real meaning of the term language's functions (shared with the
// concrete interpreter) and the evaluator of terms under an assignment.
//
//===----------------------------------------------------------------------===//
#include "TrainVerify/Semantics/Term.h"

#include <algorithm>
#include <cmath>

using namespace mlir::tv::sym;

double mlir::tv::sym::evalFn(Fn f, llvm::ArrayRef<double> a,
                             llvm::ArrayRef<int64_t> aux) {
  if (isIntFn(f)) {
    llvm::SmallVector<int64_t, 4> xs;
    for (double x : a) {
      if (!std::isfinite(x) || std::fabs(x) >= 0x1p63)
        return NAN;
      xs.push_back((int64_t)std::llround(x));
    }
    return (double)evalIntFn(f, (unsigned)aux[0], xs);
  }
  switch (f) {
  case Fn::Exp: return std::exp(a[0]);
  case Fn::Log: return std::log(a[0]);
  case Fn::Sqrt: return std::sqrt(a[0]);
  case Fn::Sigmoid: return 1.0 / (1.0 + std::exp(-a[0]));
  case Fn::Gelu: return 0.5 * a[0] * (1.0 + std::erf(a[0] / std::sqrt(2.0)));
  case Fn::GeluGrad: {
    double cdf = 0.5 * (1.0 + std::erf(a[0] / std::sqrt(2.0)));
    double pdf = std::exp(-0.5 * a[0] * a[0]) / std::sqrt(2.0 * M_PI);
    return cdf + a[0] * pdf;
  }
  case Fn::Relu: return a[0] > 0 ? a[0] : 0.0;
  case Fn::Step: return a[0] > 0 ? 1.0 : 0.0;
  case Fn::Tanh: return std::tanh(a[0]);
  case Fn::Abs: return std::fabs(a[0]);
  case Fn::PowReal: return std::pow(a[0], a[1]);
  case Fn::NonZero: return a[0] != 0 ? 1.0 : 0.0;
  case Fn::TopKGate: {
    int64_t k = aux[0], e = aux[1];
    llvm::SmallVector<int64_t> order(a.size());
    for (size_t i = 0; i < a.size(); ++i)
      order[i] = i;
    std::stable_sort(order.begin(), order.end(),
                     [&](int64_t x, int64_t y) { return a[x] > a[y]; });
    bool selected = false;
    double mx = a[order[0]], denom = 0;
    for (int64_t i = 0; i < k; ++i) {
      denom += std::exp(a[order[i]] - mx);
      selected |= order[i] == e;
    }
    return selected ? std::exp(a[e] - mx) / denom : 0.0;
  }
  case Fn::MoeRoute: {
    // DeepSeek-V3's router without a score bias: keep the topk_groups
    // groups with the largest maximum, then the k largest scores of those
    // (torch.topk order: descending, here the lower index first on a tie).
    int64_t k = aux[0], j = aux[1], groups = aux[2], keep = aux[3];
    int64_t e = a.size(), per = groups > 0 ? e / groups : e;
    if (groups < 1 || per * groups != e || j < 0 || j >= k || k > e)
      return NAN;
    llvm::SmallVector<double> masked(a.begin(), a.end());
    if (groups > 1) {
      llvm::SmallVector<int64_t> order(groups);
      llvm::SmallVector<double> best(groups, -INFINITY);
      for (int64_t g = 0; g < groups; ++g) {
        order[g] = g;
        for (int64_t i = g * per; i < (g + 1) * per; ++i)
          best[g] = std::max(best[g], a[i]);
      }
      std::stable_sort(order.begin(), order.end(),
                       [&](int64_t x, int64_t y) { return best[x] > best[y]; });
      for (int64_t r = keep; r < groups; ++r)
        for (int64_t i = order[r] * per; i < (order[r] + 1) * per; ++i)
          masked[i] = -INFINITY;
    }
    llvm::SmallVector<int64_t> order(e);
    for (int64_t i = 0; i < e; ++i)
      order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) {
      return masked[x] > masked[y];
    });
    return (double)order[j];
  }
  case Fn::MaxShare: {
    double mx = -INFINITY;
    for (double v : a)
      mx = std::max(mx, v);
    int count = 0;
    for (double v : a)
      count += v == mx;
    return a[aux[0]] == mx ? 1.0 / count : 0.0;
  }
  default: // the integer operations, above
    break;
  }
  return NAN;
}

double TermEvaluator::eval(TermId t) {
  auto it = termCache.find(t);
  if (it != termCache.end())
    return it->second;
  double sum = 0;
  for (auto &[m, c] : ctx.poly(t)) {
    double prod = c.toDouble();
    for (auto &[a, e] : ctx.mono(m))
      prod *= std::pow(evalAtom(a), e);
    sum += prod;
  }
  termCache[t] = sum;
  return sum;
}

double TermEvaluator::evalAtom(AtomId id) {
  auto it = atomCache.find(id);
  if (it != atomCache.end())
    return it->second;
  const Atom &a = ctx.atom(id);
  double v = NAN;
  switch (a.kind) {
  case AtomKind::Var:
    v = values[a.aux[0]];
    break;
  case AtomKind::App: {
    llvm::SmallVector<double, 8> args;
    for (TermId t : a.args)
      args.push_back(eval(t));
    v = evalFn(a.fn, args, a.aux);
    break;
  }
  case AtomKind::Inv:
    v = 1.0 / eval(a.args[0]);
    break;
  case AtomKind::Max:
    v = -INFINITY;
    for (TermId t : a.args)
      v = std::max(v, eval(t));
    break;
  case AtomKind::Select: {
    double idx = eval(a.args[0]);
    int64_t i = (int64_t)std::llround(idx) - a.aux[0];
    v = i >= 0 && i + 1 < (int64_t)a.args.size() ? eval(a.args[i + 1]) : 0.0;
    break;
  }
  case AtomKind::NegInf:
    v = -INFINITY;
    break;
  case AtomKind::Undef:
    v = NAN;
    break;
  }
  atomCache[id] = v;
  return v;
}

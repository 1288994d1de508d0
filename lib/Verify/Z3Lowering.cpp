//===- Z3Lowering.cpp - terms to Z3 expressions ---------------------------===//
#include "TrainVerify/Verify/Z3Lowering.h"

using namespace mlir::tv;
using namespace mlir::tv::sym;

static z3::expr ratExpr(z3::context &ctx, const Rat &r) {
  std::string s = r.toString();
  return ctx.real_val(s.c_str());
}

z3::expr Z3Lowering::var(int64_t v) {
  auto it = vars.find(v);
  if (it != vars.end())
    return it->second;
  const VarInfo &info = terms.varInfo(v);
  std::string name = "v" + std::to_string(v);
  z3::expr e = info.isInt ? ctx.int_const(name.c_str())
                          : ctx.real_const(name.c_str());
  vars.emplace(v, e);
  return e;
}

z3::expr Z3Lowering::term(TermId t) {
  auto it = termCache.find(t);
  if (it != termCache.end())
    return it->second;
  z3::expr sum = ctx.real_val(0);
  bool first = true;
  for (auto &[m, c] : terms.poly(t)) {
    z3::expr prod = ratExpr(ctx, c);
    z3::expr num = ctx.real_val(1), den = ctx.real_val(1);
    bool hasNum = false, hasDen = false;
    for (auto &[a, e] : terms.mono(m)) {
      z3::expr base = atom(a);
      for (int32_t k = 0; k < std::abs(e); ++k) {
        if (e > 0) {
          num = hasNum ? num * base : base;
          hasNum = true;
        } else {
          den = hasDen ? den * base : base;
          hasDen = true;
        }
      }
    }
    if (hasNum)
      prod = c.isOne() ? num : prod * num;
    if (hasDen)
      prod = prod / den;
    sum = first ? prod : sum + prod;
    first = false;
  }
  termCache.emplace(t, sum);
  return sum;
}

z3::expr Z3Lowering::apply(const std::string &name,
                           llvm::ArrayRef<sym::TermId> operands) {
  auto fit = fns.find(name);
  if (fit == fns.end()) {
    z3::sort_vector domain(ctx);
    for (size_t i = 0; i < operands.size(); ++i)
      domain.push_back(ctx.real_sort());
    fit = fns.emplace(name, ctx.function(name.c_str(), domain, ctx.real_sort()))
              .first;
  }
  z3::expr_vector args(ctx);
  for (sym::TermId t : operands)
    args.push_back(term(t));
  return fit->second(args);
}

z3::expr Z3Lowering::atom(AtomId id) {
  auto it = atomCache.find(id);
  if (it != atomCache.end())
    return it->second;
  const Atom &a = terms.atom(id);
  z3::expr result = ctx.real_val(0);
  switch (a.kind) {
  case AtomKind::Var: {
    z3::expr v = var(a.aux[0]);
    result = v.is_int() ? z3::to_real(v) : v;
    break;
  }
  case AtomKind::App: {
    std::string name = fnName(a.fn).str();
    for (int64_t x : a.aux)
      name += "_" + std::to_string(x);
    result = apply(name + "_" + std::to_string(a.args.size()), a.args);
    break;
  }
  case AtomKind::Inv:
    result = ctx.real_val(1) / term(a.args[0]);
    break;
  case AtomKind::Max: {
    if (opaqueMax) {
      result = apply("max_" + std::to_string(a.args.size()), a.args);
      break;
    }
    result = term(a.args[0]);
    for (size_t i = 1; i < a.args.size(); ++i) {
      z3::expr x = term(a.args[i]);
      result = z3::ite(x > result, x, result);
    }
    break;
  }
  case AtomKind::Select: {
    z3::expr idx = term(a.args[0]);
    result = ctx.real_val(0);
    for (size_t i = a.args.size() - 1; i >= 1; --i) {
      int64_t pos = a.aux[0] + (int64_t)i - 1;
      result = z3::ite(idx == ctx.real_val(std::to_string(pos).c_str()),
                       term(a.args[i]), result);
    }
    break;
  }
  case AtomKind::NegInf:
    result = ctx.real_const("neg_inf");
    break;
  case AtomKind::Undef:
    result = ctx.real_const(("undef" + std::to_string(a.aux[0])).c_str());
    break;
  }
  atomCache.emplace(id, result);
  return result;
}

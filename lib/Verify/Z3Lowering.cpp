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
  if (auto b = bvVars.find(v); b != bvVars.end()) {
    z3::expr e = z3::bv2int(b->second, true);
    vars.emplace(v, e);
    return e;
  }
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

z3::expr Z3Lowering::bvOfReal(z3::expr real, unsigned width) {
  z3::expr i = real.is_int() ? real : z3::expr(ctx, Z3_mk_real2int(ctx, real));
  return z3::int2bv(width, i);
}

z3::expr Z3Lowering::bv(TermId t, unsigned width) {
  auto key = std::make_pair(t, width);
  if (auto it = bvTermCache.find(key); it != bvTermCache.end())
    return it->second;
  llvm::DynamicAPInt modulus(1);
  for (unsigned k = 0; k < width; ++k)
    modulus *= llvm::DynamicAPInt(2);
  std::optional<z3::expr> sum;
  bool direct = true;
  for (auto &[m, c] : terms.poly(t)) {
    // A fraction or an inverse has no bit-vector reading of its own.
    if (c.den != 1) {
      direct = false;
      break;
    }
    llvm::DynamicAPInt r = c.num % modulus;
    if (r < 0)
      r += modulus;
    z3::expr prod = ctx.bv_val(Rat(r, llvm::DynamicAPInt(1)).toString().c_str(),
                               width);
    bool unit = r == 1;
    for (auto &[a, e] : terms.mono(m)) {
      if (e < 0) {
        direct = false;
        break;
      }
      z3::expr base = bvAtom(a, width);
      for (int32_t k = 0; k < e; ++k) {
        prod = unit ? base : prod * base;
        unit = false;
      }
    }
    if (!direct)
      break;
    sum = sum ? *sum + prod : prod;
  }
  z3::expr result = !direct ? bvOfReal(term(t), width)
                            : sum ? *sum : ctx.bv_val(0, width);
  bvTermCache.emplace(key, result);
  return result;
}

z3::expr Z3Lowering::bvAtom(AtomId id, unsigned width) {
  auto key = std::make_pair(id, width);
  if (auto it = bvAtomCache.find(key); it != bvAtomCache.end())
    return it->second;
  const Atom &a = terms.atom(id);
  std::optional<z3::expr> result;
  if (a.kind == AtomKind::Var && !vars.count(a.aux[0])) {
    auto b = bvVars.find(a.aux[0]);
    if (b == bvVars.end()) {
      std::string name = "b" + std::to_string(a.aux[0]);
      b = bvVars.emplace(a.aux[0], ctx.bv_const(name.c_str(), width)).first;
    }
    if (b->second.get_sort().bv_size() == width)
      result = b->second;
  } else if (a.kind == AtomKind::App && isIntFn(a.fn) &&
             (unsigned)a.aux[0] == width) {
    std::vector<z3::expr> xs;
    for (TermId arg : a.args)
      xs.push_back(bv(arg, width));
    z3::expr r = xs[0];
    for (size_t i = 1; i < xs.size(); ++i) {
      const z3::expr &x = xs[i];
      switch (a.fn) {
      case Fn::IAnd: r = r & x; break;
      case Fn::IOr: r = r | x; break;
      case Fn::IXor: r = r ^ x; break;
      case Fn::IMaxS: r = z3::ite(x > r, x, r); break;
      case Fn::IMinS: r = z3::ite(x < r, x, r); break;
      case Fn::IMaxU: r = z3::ite(z3::ugt(x, r), x, r); break;
      case Fn::IMinU: r = z3::ite(z3::ult(x, r), x, r); break;
      case Fn::IShl: r = z3::shl(r, x); break;
      case Fn::IShrS: r = z3::ashr(r, x); break;
      case Fn::IShrU: r = z3::lshr(r, x); break;
      default: break;
      }
    }
    result = r;
  }
  if (!result)
    result = bvOfReal(atom(id), width);
  bvAtomCache.emplace(key, *result);
  return *result;
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
    if (isIntFn(a.fn)) {
      // Its signed value, as the integer reading of every integer term.
      result = z3::to_real(z3::bv2int(bvAtom(id, (unsigned)a.aux[0]), true));
      break;
    }
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

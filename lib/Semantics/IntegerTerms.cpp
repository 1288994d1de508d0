//===- IntegerTerms.cpp - n-bit integer operations in the term language ----===//
//
// The bitwise, order and shift operations on n-bit two's complement values
// (docs/integers.md): their meaning on 64-bit words, and their normal form
// as atoms (flattened, sorted, folded).
//
//===----------------------------------------------------------------------===//
#include "TrainVerify/Semantics/Term.h"

#include <algorithm>
#include <optional>

using namespace mlir::tv::sym;
using llvm::DynamicAPInt;

int64_t mlir::tv::sym::wrapSigned(int64_t v, unsigned width) {
  if (width >= 64)
    return v;
  uint64_t mask = (uint64_t(1) << width) - 1;
  uint64_t u = (uint64_t)v & mask;
  if (u >> (width - 1))
    u |= ~mask;
  return (int64_t)u;
}

int64_t mlir::tv::sym::evalIntFn(Fn f, unsigned width,
                                 llvm::ArrayRef<int64_t> args) {
  uint64_t mask = width >= 64 ? ~uint64_t(0) : (uint64_t(1) << width) - 1;
  auto u = [&](int64_t x) { return (uint64_t)x & mask; };
  auto s = [&](int64_t x) { return wrapSigned(x, width); };
  uint64_t r = 0;
  switch (f) {
  case Fn::IAnd:
    r = mask;
    for (int64_t x : args)
      r &= u(x);
    break;
  case Fn::IOr:
    for (int64_t x : args)
      r |= u(x);
    break;
  case Fn::IXor:
    for (int64_t x : args)
      r ^= u(x);
    break;
  case Fn::IMaxS:
  case Fn::IMinS: {
    int64_t m = s(args[0]);
    for (int64_t x : args)
      m = f == Fn::IMaxS ? std::max(m, s(x)) : std::min(m, s(x));
    r = (uint64_t)m;
    break;
  }
  case Fn::IMaxU:
  case Fn::IMinU: {
    uint64_t m = u(args[0]);
    for (int64_t x : args)
      m = f == Fn::IMaxU ? std::max(m, u(x)) : std::min(m, u(x));
    r = m;
    break;
  }
  case Fn::IShl:
  case Fn::IShrS:
  case Fn::IShrU: {
    // SMT-LIB's reading of an amount outside [0, width): shl and lshr give
    // 0, ashr the sign (docs/integers.md).
    uint64_t amount = u(args[1]);
    uint64_t x = u(args[0]);
    bool neg = s(args[0]) < 0;
    if (amount >= width)
      r = f == Fn::IShrS && neg ? mask : 0;
    else if (f == Fn::IShl)
      r = x << amount;
    else if (f == Fn::IShrU)
      r = x >> amount;
    else
      r = (uint64_t)(s(args[0]) >> amount);
    break;
  }
  default:
    return 0;
  }
  return wrapSigned((int64_t)r, width);
}

/// The extremes of `width`-bit values, as signed representatives.
static int64_t allOnes(unsigned width) { return -1; }
static int64_t minSigned(unsigned width) {
  return wrapSigned((int64_t)(uint64_t(1) << (width - 1)), width);
}
static int64_t maxSigned(unsigned width) { return ~minSigned(width); }

std::optional<int64_t> mlir::tv::sym::intIdentity(Fn f, unsigned width) {
  switch (f) {
  case Fn::IAnd: case Fn::IMinU: return allOnes(width);
  case Fn::IOr: case Fn::IXor: case Fn::IMaxU: return 0;
  case Fn::IMaxS: return minSigned(width);
  case Fn::IMinS: return maxSigned(width);
  default: return std::nullopt;
  }
}

std::optional<int64_t> mlir::tv::sym::intAbsorbing(Fn f, unsigned width) {
  switch (f) {
  case Fn::IAnd: case Fn::IMinU: return 0;
  case Fn::IOr: case Fn::IMaxU: return allOnes(width);
  case Fn::IMaxS: return maxSigned(width);
  case Fn::IMinS: return minSigned(width);
  default: return std::nullopt;
  }
}

TermId TermContext::intOp(Fn f, unsigned width, llvm::ArrayRef<TermId> args) {
  auto constOf = [&](TermId t) -> std::optional<int64_t> {
    Rat c;
    if (!isConstant(t, &c) || c.den != 1)
      return std::nullopt;
    // Integer constants are read modulo 2^width; beyond int64 they stay
    // symbolic (still correct, only not folded).
    if (c.num > DynamicAPInt(INT64_MAX) || c.num < DynamicAPInt(INT64_MIN))
      return std::nullopt;
    return (int64_t)c.num;
  };
  auto cst = [&](int64_t v) {
    return constant(Rat(DynamicAPInt(wrapSigned(v, width)), DynamicAPInt(1)));
  };
  int64_t w = width;
  if (!isAcIntFn(f)) {
    llvm::SmallVector<int64_t, 2> vals;
    for (TermId t : args)
      if (auto c = constOf(t))
        vals.push_back(*c);
    if (vals.size() == args.size())
      return cst(evalIntFn(f, width, vals));
    Atom at{AtomKind::App, f, {w}, llvm::SmallVector<TermId, 4>(args)};
    return atomTerm(internAtom(std::move(at)));
  }
  llvm::SmallVector<TermId, 8> flat;
  for (TermId t : args) {
    if (auto at = asAtom(t); at && atoms[*at].kind == AtomKind::App &&
                             atoms[*at].fn == f && atoms[*at].aux[0] == w) {
      auto &inner = atoms[*at].args;
      flat.append(inner.begin(), inner.end());
    } else {
      flat.push_back(t);
    }
  }
  // Constants combine into one.
  llvm::SmallVector<int64_t, 4> consts;
  llvm::SmallVector<TermId, 8> rest;
  for (TermId t : flat) {
    if (auto c = constOf(t))
      consts.push_back(*c);
    else
      rest.push_back(t);
  }
  llvm::sort(rest);
  if (f == Fn::IXor) {
    // x ^ x = 0: equal arguments cancel in pairs.
    llvm::SmallVector<TermId, 8> kept;
    for (TermId t : rest) {
      if (!kept.empty() && kept.back() == t)
        kept.pop_back();
      else
        kept.push_back(t);
    }
    rest = std::move(kept);
  } else {
    rest.erase(std::unique(rest.begin(), rest.end()), rest.end());
  }
  if (!consts.empty()) {
    int64_t c = evalIntFn(f, width, consts);
    std::optional<int64_t> identity = intIdentity(f, width),
                           absorbing = intAbsorbing(f, width);
    if (absorbing && c == *absorbing)
      return cst(c);
    if (!identity || c != *identity || rest.empty())
      rest.push_back(cst(c));
  }
  if (rest.empty())
    return cst(0); // an xor whose arguments all cancelled
  if (rest.size() == 1)
    return rest[0]; // f(x) = x modulo 2^width (docs/integers.md)
  llvm::sort(rest);
  Atom at{AtomKind::App, f, {w},
          llvm::SmallVector<TermId, 4>(rest.begin(), rest.end())};
  return atomTerm(internAtom(std::move(at)));
}


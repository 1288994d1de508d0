//===- Domains.h - value domains for executing tv programs ------*- C++ -*-===//
//
// The op semantics are written once (Semantics.h) over a domain: the symbolic
// domain builds normalized terms, the concrete domain computes doubles. The
// interpreter that replays counterexamples therefore runs the very same
// semantics as the prover.
//
//===----------------------------------------------------------------------===//
#ifndef TRAINVERIFY_VERIFY_DOMAINS_H
#define TRAINVERIFY_VERIFY_DOMAINS_H

#include "TrainVerify/Semantics/Term.h"
#include <chrono>
#include <cmath>

namespace mlir::tv {

template <typename V> struct Tensor {
  llvm::SmallVector<int64_t> shape;
  std::vector<V> data;
};

struct SymDomain {
  using V = sym::TermId;
  sym::TermContext &c;
  /// Bytes the terms may hold before execution stops (the stage is then
  /// unknown rather than the process out of memory).
  size_t budget = SIZE_MAX;
  /// When execution stops (the stage's time budget, shared with the
  /// solver): the stage is then unknown rather than unbounded.
  std::chrono::steady_clock::time_point deadline =
      std::chrono::steady_clock::time_point::max();
  bool pastDeadline() const {
    return std::chrono::steady_clock::now() > deadline;
  }
  bool overBudget() const {
    return c.exceeded || c.footprint() > budget || pastDeadline();
  }
  V zero() { return c.zero(); }
  V one() { return c.one(); }
  /// A non-finite constant is opaque: it equals nothing, not even itself.
  V cst(double x) { return std::isfinite(x) ? c.constant(x) : c.undef(); }
  V cstFrac(int64_t n, int64_t d) {
    return c.constant(sym::Rat(llvm::DynamicAPInt(n), llvm::DynamicAPInt(d)));
  }
  V add(V a, V b) { return c.add(a, b); }
  V sum(llvm::ArrayRef<V> xs) { return c.sum(xs); }
  V sub(V a, V b) { return c.sub(a, b); }
  V mul(V a, V b) { return c.mul(a, b); }
  V div(V a, V b) { return c.div(a, b); }
  V neg(V a) { return c.neg(a); }
  V scale(V a, double k) {
    return std::isfinite(k) ? c.scale(a, sym::Rat::fromConstant(k)) : c.undef();
  }
  V divInt(V a, int64_t n) {
    return c.scale(a, sym::Rat(llvm::DynamicAPInt(1), llvm::DynamicAPInt(n)));
  }
  V exp(V a) { return c.exp(a); }
  V log(V a) { return c.log(a); }
  V sqrt(V a) { return c.sqrt(a); }
  V rsqrt(V a) { return c.rsqrt(a); }
  V sigmoid(V a) { return c.app(sym::Fn::Sigmoid, {a}); }
  V gelu(V a) { return c.app(sym::Fn::Gelu, {a}); }
  V geluGrad(V a) { return c.app(sym::Fn::GeluGrad, {a}); }
  V relu(V a) { return c.app(sym::Fn::Relu, {a}); }
  V step(V a) { return c.app(sym::Fn::Step, {a}); }
  V tanh(V a) { return c.app(sym::Fn::Tanh, {a}); }
  V abs(V a) { return c.app(sym::Fn::Abs, {a}); }
  V nonzero(V a) { return c.app(sym::Fn::NonZero, {a}); }
  V powc(V a, double k) {
    if (!std::isfinite(k))
      return c.undef();
    if (k == std::floor(k) && std::fabs(k) <= 64)
      return c.powInt(a, (int64_t)k);
    return c.app(sym::Fn::PowReal, {a, c.constant(k)});
  }
  V max(llvm::ArrayRef<V> xs) { return c.max(xs); }
  /// An integer operation of `width` bits (sym::isIntFn).
  V intOp(sym::Fn f, unsigned width, llvm::ArrayRef<V> xs) {
    return c.intOp(f, width, xs);
  }
  /// Token ids read against a whole vocabulary of `size` lie in [0, size):
  /// recorded for the solver (docs/soundness.md, assumption A6).
  std::vector<std::pair<V, int64_t>> idBounds;
  void idInVocabulary(V id, int64_t size) {
    idBounds.push_back({id, size});
  }
  V select(V idx, int64_t off, llvm::ArrayRef<V> vals) {
    return c.select(idx, off, vals);
  }
  V topk(int64_t k, int64_t e, llvm::ArrayRef<V> row) {
    return c.app(sym::Fn::TopKGate, row, {k, e});
  }
  V maxShare(int64_t i, llvm::ArrayRef<V> row) {
    return c.app(sym::Fn::MaxShare, row, {i});
  }
  V moeRoute(llvm::ArrayRef<int64_t> params, llvm::ArrayRef<V> row) {
    return c.app(sym::Fn::MoeRoute, row, params);
  }
  V negInf() { return c.negInf(); }
  V undef() { return c.undef(); }
};

struct ConcreteDomain {
  bool overBudget() const { return false; }
  using V = double;
  V zero() { return 0; }
  V one() { return 1; }
  V cst(double x) { return x; }
  V cstFrac(int64_t n, int64_t d) { return (double)n / (double)d; }
  V add(V a, V b) { return a + b; }
  V sum(llvm::ArrayRef<V> xs) {
    V acc = 0;
    for (V x : xs)
      acc += x;
    return acc;
  }
  V sub(V a, V b) { return a - b; }
  V mul(V a, V b) { return a * b; }
  V div(V a, V b) { return a / b; }
  V neg(V a) { return -a; }
  V scale(V a, double k) { return a * k; }
  V divInt(V a, int64_t n) { return a / (double)n; }
  V exp(V a) { return std::exp(a); }
  V log(V a) { return std::log(a); }
  V sqrt(V a) { return std::sqrt(a); }
  V rsqrt(V a) { return 1.0 / std::sqrt(a); }
  V sigmoid(V a) { return sym::evalFn(sym::Fn::Sigmoid, {a}, {}); }
  V gelu(V a) { return sym::evalFn(sym::Fn::Gelu, {a}, {}); }
  V geluGrad(V a) { return sym::evalFn(sym::Fn::GeluGrad, {a}, {}); }
  V relu(V a) { return a > 0 ? a : 0.0; }
  V step(V a) { return a > 0 ? 1.0 : 0.0; }
  V tanh(V a) { return std::tanh(a); }
  V abs(V a) { return std::fabs(a); }
  V nonzero(V a) { return a != 0 ? 1.0 : 0.0; }
  V powc(V a, double k) {
    if (k == std::floor(k) && std::fabs(k) <= 64) {
      double r = 1;
      for (int64_t i = 0; i < (int64_t)std::fabs(k); ++i)
        r *= a;
      return k < 0 ? 1.0 / r : r;
    }
    return std::pow(a, k);
  }
  V max(llvm::ArrayRef<V> xs) {
    double m = -INFINITY;
    for (double x : xs)
      m = std::max(m, x);
    return m;
  }
  V intOp(sym::Fn f, unsigned width, llvm::ArrayRef<V> xs) {
    return sym::evalFn(f, xs, {(int64_t)width});
  }
  void idInVocabulary(V, int64_t) {} // drawn in range (tv-interpret)
  V select(V idx, int64_t off, llvm::ArrayRef<V> vals) {
    int64_t i = (int64_t)std::llround(idx) - off;
    return i >= 0 && i < (int64_t)vals.size() ? vals[i] : 0.0;
  }
  V topk(int64_t k, int64_t e, llvm::ArrayRef<V> row) {
    return sym::evalFn(sym::Fn::TopKGate, row, {k, e});
  }
  V maxShare(int64_t i, llvm::ArrayRef<V> row) {
    return sym::evalFn(sym::Fn::MaxShare, row, {i});
  }
  V moeRoute(llvm::ArrayRef<int64_t> params, llvm::ArrayRef<V> row) {
    return sym::evalFn(sym::Fn::MoeRoute, row, params);
  }
  V negInf() { return -INFINITY; }
  V undef() { return NAN; }
};

/// A value of the exact interpreter, in two readings at once:
/// - `m`, exact arithmetic modulo the prime p = 2^61 - 1, in which every
///   function the prover treats as uninterpreted (exp, log, roots, gelu,
///   ...) is a fixed random function (a hash of its argument). Two sides
///   equal here are equal for every choice of those functions; two that
///   differ as rational functions collide with probability at most their
///   degree over p (Schwartz-Zippel). `pure` says no such function was
///   applied: `m` is then the residue of the exact rational value.
/// - `d`, the double-precision real value. Piecewise ops (max, relu, step,
///   abs, selections) decide by it, in both readings.
struct ExactValue {
  static constexpr uint64_t P = (uint64_t(1) << 61) - 1;
  enum Kind : uint8_t { Finite, NegInf, Undef };
  Kind kind = Finite;
  bool pure = true;
  uint64_t m = 0;
  double d = 0;
  bool finite() const { return kind == Finite; }
  bool operator==(const ExactValue &o) const {
    return kind == o.kind && (kind != Finite || m == o.m);
  }
};

/// The domain of `--tv-interpret=exact` (docs/reliability.md, "Mutants").
struct ExactDomain {
  using V = ExactValue;
  static constexpr uint64_t P = ExactValue::P;
  bool overBudget() const { return false; }

  static uint64_t addm(uint64_t a, uint64_t b) {
    uint64_t s = a + b;
    return s >= P ? s - P : s;
  }
  static uint64_t mulm(uint64_t a, uint64_t b) {
    unsigned __int128 x = (unsigned __int128)a * b;
    uint64_t lo = (uint64_t)(x & P), hi = (uint64_t)(x >> 61);
    return addm(lo, hi);
  }
  static uint64_t powm(uint64_t a, uint64_t e) {
    uint64_t r = 1;
    for (; e; e >>= 1, a = mulm(a, a))
      if (e & 1)
        r = mulm(r, a);
    return r;
  }
  static uint64_t ofBig(const llvm::DynamicAPInt &n) {
    llvm::DynamicAPInt r = n % llvm::DynamicAPInt((int64_t)P);
    int64_t v = (int64_t)r;
    return v < 0 ? (uint64_t)(v + (int64_t)P) : (uint64_t)v;
  }
  /// The residue of a rational (Undef if p divides its denominator).
  static V ofRat(const sym::Rat &r, double d) {
    V v;
    v.d = d;
    uint64_t den = ofBig(r.den);
    if (den == 0) {
      v.kind = V::Undef;
      return v;
    }
    v.m = mulm(ofBig(r.num), powm(den, P - 2));
    return v;
  }
  static V make(uint64_t m, double d, bool pure) {
    V v;
    v.m = m, v.d = d, v.pure = pure;
    return v;
  }
  static V special(V::Kind k, double d, bool pure) {
    V v;
    v.kind = k, v.d = d, v.pure = pure;
    return v;
  }

  V zero() { return make(0, 0.0, true); }
  V one() { return make(1, 1.0, true); }
  V cst(double x) {
    if (std::isfinite(x))
      return ofRat(sym::Rat::fromConstant(x), x);
    return special(x < 0 && std::isinf(x) ? V::NegInf : V::Undef, x, true);
  }
  V cstFrac(int64_t n, int64_t d) {
    return ofRat(sym::Rat(llvm::DynamicAPInt(n), llvm::DynamicAPInt(d)),
                 (double)n / (double)d);
  }
  V sum(llvm::ArrayRef<V> xs) {
    V acc = xs[0];
    for (size_t i = 1; i < xs.size(); ++i)
      acc = add(acc, xs[i]);
    return acc;
  }
  V add(V a, V b) {
    double d = a.d + b.d;
    bool pure = a.pure && b.pure;
    if (a.finite() && b.finite())
      return make(addm(a.m, b.m), d, pure);
    if (a.kind == V::Undef || b.kind == V::Undef)
      return special(V::Undef, d, pure);
    return special(V::NegInf, d, pure);
  }
  V neg(V a) {
    if (a.finite())
      return make(a.m ? P - a.m : 0, -a.d, a.pure);
    return special(V::Undef, -a.d, a.pure); // +inf is not represented
  }
  V sub(V a, V b) { return add(std::move(a), neg(std::move(b))); }
  V mul(V a, V b) {
    double d = a.d * b.d;
    bool pure = a.pure && b.pure;
    if (a.finite() && b.finite())
      return make(mulm(a.m, b.m), d, pure);
    const V &f = a.finite() ? a : b;
    if (a.kind != V::Undef && b.kind != V::Undef && f.finite() && f.d > 0)
      return special(V::NegInf, d, pure);
    return special(V::Undef, d, pure);
  }
  V div(V a, V b) {
    double d = a.d / b.d;
    bool pure = a.pure && b.pure;
    if (a.finite() && b.finite() && b.m != 0)
      return make(mulm(a.m, powm(b.m, P - 2)), d, pure);
    if (a.kind == V::NegInf && b.finite() && b.d > 0)
      return special(V::NegInf, d, pure);
    return special(V::Undef, d, pure);
  }
  V scale(V a, double k) { return mul(std::move(a), cst(k)); }
  V divInt(V a, int64_t n) { return mul(std::move(a), cstFrac(1, n)); }

  /// A fixed random function, one per `tag`: splitmix64 of the argument.
  static uint64_t hash(uint64_t tag, uint64_t x) {
    uint64_t z = x + 0x9e3779b97f4a7c15ull * (tag + 1);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return (z ^ (z >> 31)) % P;
  }
  /// An uninterpreted function: the real function on `d`, a random one on
  /// `m`.
  template <typename F> V apply(uint64_t tag, const V &a, F f) {
    double real = f(a.d);
    if (!a.finite())
      return special(V::Undef, real, false);
    return make(hash(tag, a.m), real, false);
  }
  V exp(V a) {
    if (a.kind == V::NegInf)
      return make(0, 0.0, false);
    return apply(1, a, [](double x) { return std::exp(x); });
  }
  V log(V a) { return apply(2, a, [](double x) { return std::log(x); }); }
  V sqrt(V a) { return apply(3, a, [](double x) { return std::sqrt(x); }); }
  /// rsqrt(x) = sqrt(x)^-1, as the prover reads it.
  V rsqrt(V a) { return div(one(), sqrt(std::move(a))); }
  V fn(sym::Fn f, const V &a) {
    return apply(16 + (uint64_t)f, a,
                 [f](double x) { return sym::evalFn(f, {x}, {}); });
  }
  V sigmoid(V a) { return fn(sym::Fn::Sigmoid, a); }
  V gelu(V a) { return fn(sym::Fn::Gelu, a); }
  V geluGrad(V a) { return fn(sym::Fn::GeluGrad, a); }
  V tanh(V a) { return fn(sym::Fn::Tanh, a); }
  // Piecewise functions decide by the real reading.
  V relu(V a) { return a.d > 0 ? a : make(0, 0.0, a.pure); }
  V step(V a) { return a.d > 0 ? make(1, 1.0, a.pure) : make(0, 0.0, a.pure); }
  V nonzero(V a) {
    return a.d != 0 ? make(1, 1.0, a.pure) : make(0, 0.0, a.pure);
  }
  V abs(V a) { return a.d < 0 ? neg(std::move(a)) : a; }
  V powc(V a, double k) {
    if (k == std::floor(k) && std::fabs(k) <= 64) {
      V r = one();
      for (int64_t i = 0; i < (int64_t)std::fabs(k); ++i)
        r = mul(r, a);
      return k < 0 ? div(one(), r) : r;
    }
    return apply(4 + (ofRat(sym::Rat::fromConstant(k), k).m << 8), a,
                 [k](double x) { return std::pow(x, k); });
  }
  V max(llvm::ArrayRef<V> xs) {
    V m = special(V::NegInf, -INFINITY, true);
    bool pure = true;
    for (const V &x : xs) {
      pure &= x.pure;
      if (x.kind == V::Undef)
        return special(V::Undef, NAN, pure);
      if (x.finite() && (!m.finite() || x.d > m.d))
        m = x;
    }
    m.pure = pure;
    return m;
  }
  /// An integer operation, on the real reading (exact integers below
  /// 2^53); the residue is the result's.
  V intOp(sym::Fn f, unsigned width, llvm::ArrayRef<V> xs) {
    std::vector<double> real;
    bool pure = true;
    for (const V &x : xs) {
      if (!x.finite())
        return special(V::Undef, NAN, x.pure);
      pure &= x.pure && std::fabs(x.d) < 0x1p53;
      real.push_back(x.d);
    }
    double r = sym::evalFn(f, real, {(int64_t)width});
    if (std::isnan(r))
      return special(V::Undef, r, pure);
    int64_t i = (int64_t)r;
    uint64_t m = i < 0 ? (P - ((uint64_t)(-(i + 1)) % P + 1) % P) % P
                       : (uint64_t)i % P;
    return make(m, r, pure);
  }
  void idInVocabulary(const V &, int64_t) {} // drawn in range
  V select(V idx, int64_t off, llvm::ArrayRef<V> vals) {
    int64_t i = (int64_t)std::llround(idx.d) - off;
    V out = i >= 0 && i < (int64_t)vals.size() ? vals[i] : zero();
    out.pure &= idx.pure;
    return out;
  }
  /// A function of a whole row: the real one on `d`, a random one on `m`.
  template <typename F>
  V applyRow(uint64_t tag, llvm::ArrayRef<V> row, F f) {
    std::vector<double> real;
    uint64_t h = tag;
    bool defined = true;
    for (const V &x : row) {
      real.push_back(x.d);
      h = hash(h, x.m);
      defined &= x.finite();
    }
    double rv = f(real);
    if (!defined)
      return special(V::Undef, rv, false);
    return make(h, rv, false);
  }
  V topk(int64_t k, int64_t e, llvm::ArrayRef<V> row) {
    return applyRow(64 + k * 4096 + e, row, [&](llvm::ArrayRef<double> xs) {
      return sym::evalFn(sym::Fn::TopKGate, xs, {k, e});
    });
  }
  V maxShare(int64_t i, llvm::ArrayRef<V> row) {
    return applyRow(128 + i, row, [&](llvm::ArrayRef<double> xs) {
      return sym::evalFn(sym::Fn::MaxShare, xs, {i});
    });
  }
  V moeRoute(llvm::ArrayRef<int64_t> params, llvm::ArrayRef<V> row) {
    uint64_t tag = 256;
    for (int64_t p : params)
      tag = hash(tag, (uint64_t)p);
    return applyRow(tag, row, [&](llvm::ArrayRef<double> xs) {
      return sym::evalFn(sym::Fn::MoeRoute, xs, params);
    });
  }
  V negInf() { return special(V::NegInf, -INFINITY, true); }
  V undef() { return special(V::Undef, NAN, true); }
};

} // namespace mlir::tv

#endif

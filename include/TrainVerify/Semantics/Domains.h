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
  bool overBudget() const { return c.footprint() > budget || pastDeadline(); }
  V zero() { return c.zero(); }
  V one() { return c.one(); }
  /// A non-finite constant is opaque: it equals nothing, not even itself.
  V cst(double x) { return std::isfinite(x) ? c.constant(x) : c.undef(); }
  V cstFrac(int64_t n, int64_t d) {
    return c.constant(sym::Rat(llvm::DynamicAPInt(n), llvm::DynamicAPInt(d)));
  }
  V add(V a, V b) { return c.add(a, b); }
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

} // namespace mlir::tv

#endif

//===- Evaluator.h - what an op's evaluation is written with ----*- C++ -*-===//
//
// Every op's meaning is one template over a value domain (Domains.h): its
// family file writes `evaluate(XOp, Evaluator<D> &)` once, and the op's
// EvaluableOpInterface methods instantiate it for symbolic terms, for
// doubles and for exact rationals, so the prover and the replay interpreter share one definition.
// The Evaluator carries the operands, collects the results and offers the
// loops ops are written with (broadcasting, reduction, lines along a
// dimension).
//
//===----------------------------------------------------------------------===//
#ifndef TRAINVERIFY_SEMANTICS_EVALUATOR_H
#define TRAINVERIFY_SEMANTICS_EVALUATOR_H

#include "TrainVerify/Dialect/ShapeUtils.h"
#include "TrainVerify/Dialect/TVOps.h"
#include "TrainVerify/Semantics/Domains.h"

#include "mlir/Dialect/Utils/IndexingUtils.h"

namespace mlir::tv {

/// Where a local op runs: needed by rank-dependent ops (vocab-parallel
/// embedding, chunk).
struct RankEnv {
  int64_t rank = 0;
  mutable MeshOp mesh;
};

template <typename D> struct Evaluator {
  using V = typename D::V;
  using T = Tensor<V>;
  using Shape = llvm::SmallVector<int64_t>;

  D &d;
  const RankEnv &env;
  Operation *op;
  /// The operands' values (for a collective: each group member's operand).
  llvm::ArrayRef<const T *> in;
  /// One value per result (for a collective: per group member).
  llvm::SmallVectorImpl<T> &out;

  Shape result(unsigned i = 0) const {
    return Shape(cast<RankedTensorType>(op->getResult(i).getType()).getShape());
  }
  static double scalarOf(Operation *o) {
    return cast<FloatAttr>(o->getAttr("scalar")).getValueAsDouble();
  }

  T make(llvm::ArrayRef<int64_t> shape) {
    T t;
    t.shape.assign(shape.begin(), shape.end());
    t.data.assign(numElements(shape), d.zero());
    return t;
  }

  template <typename F> T map(const T &x, F f) {
    T r = make(x.shape);
    for (size_t i = 0; i < x.data.size(); ++i)
      r.data[i] = f(x.data[i]);
    return r;
  }
  template <typename F> T zip(const T &x, const T &y, F f) {
    T r = make(x.shape);
    for (size_t i = 0; i < x.data.size(); ++i)
      r.data[i] = f(x.data[i], y.data[i]);
    return r;
  }

  /// Flat index into `operand` (numpy-broadcast to `result`) for a result
  /// index.
  static int64_t broadcastIndex(llvm::ArrayRef<int64_t> idx,
                                llvm::ArrayRef<int64_t> result,
                                llvm::ArrayRef<int64_t> operand) {
    int64_t flat = 0;
    size_t off = result.size() - operand.size();
    for (size_t i = 0; i < operand.size(); ++i)
      flat = flat * operand[i] + (operand[i] == 1 ? 0 : idx[off + i]);
    return flat;
  }

  /// `f` applied to `a` and `b` broadcast to `out`.
  template <typename F> T binary(const T &a, const T &b, Shape out, F f) {
    T r = make(out);
    Shape strides = computeStrides(out);
    for (int64_t i = 0, e = r.data.size(); i < e; ++i) {
      Shape idx = delinearize(i, strides);
      r.data[i] = f(a.data[broadcastIndex(idx, out, a.shape)],
                    b.data[broadcastIndex(idx, out, b.shape)]);
    }
    return r;
  }

  /// Calls f(outFlat, inFlat) for each input element, mapping reduced dims.
  template <typename F>
  void forReduce(const T &x, llvm::ArrayRef<int64_t> dims, bool keepdim, F f) {
    Shape outStrides = computeStrides(reducedShape(x.shape, dims, true));
    Shape strides = computeStrides(x.shape);
    for (int64_t i = 0, e = x.data.size(); i < e; ++i) {
      Shape idx = delinearize(i, strides);
      for (int64_t dd : dims)
        idx[dd] = 0;
      f(linearize(idx, outStrides), i);
    }
  }

  /// Lines of a tensor along `dim`: calls f(vector of flat indices).
  template <typename F>
  void forLines(llvm::ArrayRef<int64_t> shape, int64_t dim, F f) {
    int64_t n = shape[dim];
    int64_t stride = stridesOf(shape)[dim];
    int64_t total = numElements(shape);
    llvm::SmallVector<int64_t> line(n);
    for (int64_t base = 0; base < total; ++base) {
      if ((base / stride) % n != 0)
        continue;
      for (int64_t j = 0; j < n; ++j)
        line[j] = base + j * stride;
      f(llvm::ArrayRef<int64_t>(line));
    }
  }

  V sum(llvm::ArrayRef<V> xs) {
    V s = d.zero();
    for (V x : xs)
      s = d.add(s, x);
    return s;
  }

  /// softmax(xs)_i = exp(x_i) / sum_j exp(x_j), and log sum_j exp(x_j).
  /// The meaning is the plain formula; real readings (the concrete
  /// interpreter's doubles, the exact interpreter's double reading) are
  /// computed relative to the largest element, the same quotient and the
  /// same logarithm less that element, which does not overflow where
  /// exp(x) alone would (a score past 709). The exact reading is the
  /// plain formula's.
  llvm::SmallVector<V> softmax(llvm::ArrayRef<V> xs) {
    llvm::SmallVector<V> e, r;
    for (const V &x : xs)
      e.push_back(d.exp(x));
    V s = sum(e);
    for (const V &ej : e)
      r.push_back(d.div(ej, s));
    if constexpr (!std::is_same_v<D, SymDomain>) {
      double m = maxReal(xs), t = 0;
      if (std::isfinite(m)) {
        for (const V &x : xs)
          t += std::exp(real(x) - m);
        for (auto [i, x] : llvm::enumerate(xs))
          setReal(r[i], std::exp(real(x) - m) / t);
      }
    }
    return r;
  }
  V logSumExp(llvm::ArrayRef<V> xs) {
    llvm::SmallVector<V> e;
    for (const V &x : xs)
      e.push_back(d.exp(x));
    V r = d.log(sum(e));
    if constexpr (!std::is_same_v<D, SymDomain>) {
      double m = maxReal(xs), t = 0;
      if (std::isfinite(m)) {
        for (const V &x : xs)
          t += std::exp(real(x) - m);
        setReal(r, m + std::log(t));
      }
    }
    return r;
  }
  static double real(const V &v) {
    if constexpr (std::is_same_v<D, ExactDomain>)
      return v.d;
    else if constexpr (std::is_same_v<D, SymDomain>)
      return 0;
    else
      return v;
  }
  static void setReal(V &v, double x) {
    if constexpr (std::is_same_v<D, ExactDomain>) {
      if (v.finite())
        v.d = x;
    } else if constexpr (!std::is_same_v<D, SymDomain>) {
      v = x;
    }
  }
  static double maxReal(llvm::ArrayRef<V> xs) {
    double m = -INFINITY;
    for (const V &x : xs)
      m = std::max(m, real(x));
    return m;
  }

  /// The executing rank's coordinate along mesh axis `axis` (-1: none).
  int64_t coord(llvm::StringRef axis) {
    int64_t idx = env.mesh ? env.mesh.getAxisIndex(axis) : -1;
    return idx < 0 ? -1 : env.mesh.getCoords(env.rank)[idx];
  }
};

/// Defines an op's EvaluableOpInterface methods by its family file's
/// `evaluate(OP, Evaluator<D> &)` template.
#define TV_EVALUATE_BY_TEMPLATE(OP)                                            \
  ::mlir::tv::EvalStatus OP::evaluateSymbolic(                                 \
      ::mlir::tv::Evaluator<::mlir::tv::SymDomain> &e) {                       \
    return evaluate(*this, e);                                                 \
  }                                                                            \
  ::mlir::tv::EvalStatus OP::evaluateConcrete(                                 \
      ::mlir::tv::Evaluator<::mlir::tv::ConcreteDomain> &e) {                  \
    return evaluate(*this, e);                                                 \
  }                                                                            \
  ::mlir::tv::EvalStatus OP::evaluateExact(                                    \
      ::mlir::tv::Evaluator<::mlir::tv::ExactDomain> &e) {                     \
    return evaluate(*this, e);                                                 \
  }

/// The same for a CollectiveOpInterface's group evaluation.
#define TV_EVALUATE_GROUP_BY_TEMPLATE(OP)                                      \
  ::mlir::tv::EvalStatus OP::evaluateGroupSymbolic(                            \
      ::mlir::tv::Evaluator<::mlir::tv::SymDomain> &e) {                       \
    return evaluateGroup(*this, e);                                            \
  }                                                                            \
  ::mlir::tv::EvalStatus OP::evaluateGroupConcrete(                            \
      ::mlir::tv::Evaluator<::mlir::tv::ConcreteDomain> &e) {                  \
    return evaluateGroup(*this, e);                                            \
  }                                                                            \
  ::mlir::tv::EvalStatus OP::evaluateGroupExact(                               \
      ::mlir::tv::Evaluator<::mlir::tv::ExactDomain> &e) {                     \
    return evaluateGroup(*this, e);                                            \
  }

} // namespace mlir::tv

#endif

//===- ShapeProgramImpl.h - the shape-reduction program, inside -*- C++ -*-===//
//
// The integer program of --tv-shape-reduce (ShapeProgram.cpp builds it
// from a stage's ops and lineages, ShapeSolve.cpp solves it and rewrites
// the stage at the sizes found).
//
//===----------------------------------------------------------------------===//
#ifndef TRAINVERIFY_LIB_VERIFY_SHAPEPROGRAMIMPL_H
#define TRAINVERIFY_LIB_VERIFY_SHAPEPROGRAMIMPL_H

#include "TrainVerify/Semantics/Semantics.h"
#include "TrainVerify/Verify/Executor.h"
#include "TrainVerify/Verify/ShapeProgram.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/EquivalenceClasses.h"
#include <functional>
#include <map>
#include <set>

namespace mlir::tv::shapes {

/// A dimension: (value or virtual tensor id, dim index).
using DimKey = std::pair<const void *, unsigned>;

constexpr int64_t kSearchCap = 16;

struct LinearTerm {
  int64_t coeff;
  DimKey dim;
};

class ShapeProgram : public ShapeConstraints {
public:
  ShapeProgram(StageOp stage, const StageSchedule *schedule)
      : stage(stage), schedule(schedule) {}
  LogicalResult build();
  LogicalResult solveAndRewrite(unsigned timeoutMs);

private:
  /// Exact optimum without the solver when every constraint relates two
  /// classes by a ratio (the common case): each connected component is a
  /// multiple t of fixed ratios, and the smallest feasible t is optimal.
  bool solveRatios(const std::function<unsigned(DimKey)> &classOf,
                   const std::vector<int64_t> &origOf,
                   const std::vector<int64_t> &lowOf,
                   const std::vector<bool> &fixedOf,
                   std::vector<int64_t> &solution);
  LogicalResult rewrite(const std::function<unsigned(DimKey)> &classOf,
                        const std::vector<int64_t> &solution);

private:
  // Registration.
  void addValue(Value v);
  DimKey key(Value v, unsigned d) { return {v.getAsOpaquePointer(), d}; }
  DimKey key(DimRef d) { return key(d.value, d.dim); }
  int64_t orig(DimKey k) { return original.lookup(k); }
  void equalKeys(Operation *why, DimKey a, DimKey b);
  /// sum(lhs) == sum(rhs) with integer coefficients.
  void linearKeys(Operation *why, std::vector<LinearTerm> lhs,
              std::vector<LinearTerm> rhs);
  void productKeys(Operation *why, std::vector<DimKey> lhs, std::vector<DimKey> rhs);
  void atLeastKey(DimKey k, int64_t n) {
    int64_t &lb = lower[k];
    lb = std::max(lb, std::min(n, orig(k)));
  }
  void fixDims(Value v) {
    for (unsigned d = 0; d < rank(v); ++d)
      fixed.insert(key(v, d));
  }
  static unsigned rank(Value v) {
    return cast<RankedTensorType>(v.getType()).getRank();
  }
  static ArrayRef<int64_t> shape(Value v) {
    return cast<RankedTensorType>(v.getType()).getShape();
  }
  LogicalResult addOp(Operation *op);
  LogicalResult addLineages();
  void fixUnalignedReshapes();
  /// Position-wise dimensions reduced by segments (ShapeSegments.cpp,
  /// decision 122): fills `segmentSize` for the classes it sizes.
  void reduceBySegments(const PlanSchedule &sched);
  /// Several tensors flattened into one buffer (a flat gradient bucket):
  /// every dimension keeps its size, without asking the solver.
  bool keepAll = false;

private:
public:
  // What ops ask for (ShapeConstraints).
  void equal(Operation *why, DimRef a, DimRef b) override {
    equalKeys(why, key(a), key(b));
  }
  void linear(Operation *why, ArrayRef<std::pair<int64_t, DimRef>> lhs,
              ArrayRef<std::pair<int64_t, DimRef>> rhs) override {
    auto terms = [&](ArrayRef<std::pair<int64_t, DimRef>> side) {
      std::vector<LinearTerm> out;
      for (auto &[c, d] : side)
        out.push_back({c, key(d)});
      return out;
    };
    linearKeys(why, terms(lhs), terms(rhs));
  }
  void product(Operation *why, ArrayRef<DimRef> lhs,
               ArrayRef<DimRef> rhs) override {
    auto keys = [&](ArrayRef<DimRef> side) {
      std::vector<DimKey> out;
      for (DimRef d : side)
        out.push_back(key(d));
      return out;
    };
    productKeys(why, keys(lhs), keys(rhs));
  }
  void atLeast(DimRef d, int64_t n) override { atLeastKey(key(d), n); }
  void fixDim(DimRef d) override { fixed.insert(key(d)); }
  void sliceStart(Operation *op, unsigned dim, int64_t start,
                  DimRef big) override;
  /// An explicit vocabulary offset keeps its ratio to the shard's row count.
  void vocabOffset(Operation *op, int64_t off, Value table) override {
    position(op, "vocab_offset", off, {table, 0});
  }
  /// A position along `dim` keeps its ratio to it: size(dim) * p' =
  /// p * size'(dim).
  void position(Operation *op, StringRef attr, int64_t value,
                DimRef dim) override {
    int64_t size = shape(dim.value)[dim.dim];
    virtuals.push_back(std::make_unique<int>(0));
    DimKey st{virtuals.back().get(), 0};
    original[st] = value;
    classes.insert(st);
    lower[st] = 0;
    linearKeys(op, {{size, st}}, {{value, key(dim)}});
    offsets.push_back({op, attr, st});
  }

  StageOp stage;
  const StageSchedule *schedule;
  /// The schedule built here when the caller gave none.
  std::optional<StageSchedule> ownSchedule;
  llvm::EquivalenceClasses<DimKey> classes;
  DenseMap<DimKey, int64_t> original;
  DenseMap<DimKey, int64_t> lower;
  llvm::DenseSet<DimKey> fixed;
  struct Constraint {
    Operation *why;
    std::vector<LinearTerm> lhs, rhs;
    bool isProduct = false;
    std::vector<DimKey> plhs, prhs;
  };
  std::vector<Constraint> constraints;
  std::vector<Operation *> equalities; // ops that imposed equalities
  // Slice starts to rescale: (op, dim) -> integer variable key.
  std::vector<std::tuple<Operation *, unsigned, DimKey, DimKey>> sliceStarts;
  // Lineage boxes: (is guarantee, index, dim) -> (full dim, lower var).
  struct BoxDim {
    bool guarantee;
    unsigned index, dim;
    DimKey full, lo, extent;
  };
  std::vector<BoxDim> boxes;
  struct Position {
    Operation *op;
    StringRef attr;
    DimKey key;
  };
  std::vector<Position> offsets; // vocabulary offsets and boundaries
  std::vector<std::unique_ptr<int>> virtuals; // owners of virtual dim keys
  /// Sizes (and positions) decided by segments, per class leader: the
  /// solver takes them as fixed and drops the constraints among them.
  DenseMap<DimKey, int64_t> segmentSize;
  DenseMap<DimKey, std::string> where;        // for diagnostics
};

} // namespace mlir::tv::shapes

#endif

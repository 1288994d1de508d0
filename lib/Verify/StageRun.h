//===- StageRun.h - one stage run, shared by the verifier -------*- C++ -*-===//
//
// What proving a stage (StageVerifier.cpp), solving its query in a child
// process (StageSolve.cpp) and replaying a counterexample concretely
// (StageReplay.cpp) share: the solver's outcome, the inputs bound from the
// stage's assumptions, and running its spec and plan side by side on one
// domain. Internal to lib/Verify.
//
//===----------------------------------------------------------------------===//
#ifndef TRAINVERIFY_VERIFY_STAGERUN_H
#define TRAINVERIFY_VERIFY_STAGERUN_H

#include "TrainVerify/Dialect/ShapeUtils.h"
#include "TrainVerify/Verify/Executor.h"
#include "TrainVerify/Verify/StageVerifier.h"

#include <deque>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>
#include <z3++.h>

namespace mlir::tv::stagecheck {

/// What the solver loop found.
struct SolverOutcome {
  z3::check_result verdict = z3::unknown;
  std::string reason; // why unknown
  std::string error;  // a Z3 exception
  std::vector<double> model;
};

/// Runs the solver loop in a child process and waits at most `ms`: Z3's
/// timeout and its interrupt are not honoured everywhere (a non-linear
/// query ran minutes past both inside Z3_solver_check), and a child that is
/// killed always ends the stage, as unknown. A crash of Z3 is unknown too.
/// The child may allocate `memoryBytes` beyond what it shares with the
/// parent (0: no bound).
SolverOutcome solveIsolated(unsigned ms, uint64_t memoryBytes,
                            llvm::function_ref<SolverOutcome()> solve);

inline std::string indexStr(ArrayRef<int64_t> idx) {
  std::string s = "[";
  for (auto [i, x] : llvm::enumerate(idx))
    s += (i ? ", " : "") + std::to_string(x);
  return s + "]";
}

inline std::string boxStr(LineageAttr l) {
  std::string s = "'" + l.getSpec().str() + "'[";
  for (unsigned i = 0; i < l.getRank(); ++i)
    s += (i ? ", " : "") + std::to_string(l.getLower()[i]) + ":" +
         std::to_string(l.getUpper()[i]);
  return s + "]";
}

inline void unravel(int64_t flat, ArrayRef<int64_t> shape,
                    SmallVectorImpl<int64_t> &idx) {
  idx.resize(shape.size());
  for (int64_t i = (int64_t)shape.size() - 1; i >= 0; --i) {
    idx[i] = flat % shape[i];
    flat /= shape[i];
  }
}

/// The row-major flat indices of lineage `l`'s box in a tensor of `full`
/// shape, in the box's own row-major order.
inline std::vector<int64_t> boxIndicesOf(ArrayRef<int64_t> full,
                                         LineageAttr l) {
  SmallVector<int64_t> shape = l.getSliceShape();
  SmallVector<int64_t> strides = stridesOf(full);
  std::vector<int64_t> out;
  SmallVector<int64_t> idx;
  for (int64_t i = 0, e = numElements(shape); i < e; ++i) {
    unravel(i, shape, idx);
    int64_t flat = 0;
    for (size_t k = 0; k < idx.size(); ++k)
      flat += (idx[k] + l.getLower()[k]) * strides[k];
    out.push_back(flat);
  }
  return out;
}

/// Elements of `t` inside the lineage's box, in row-major order of the box.
template <typename V>
std::vector<V> sliceOf(const Tensor<V> &t, LineageAttr l) {
  std::vector<V> out;
  for (int64_t flat : boxIndicesOf(t.shape, l))
    out.push_back(t.data[flat]);
  return out;
}

inline int kindOf(Type elt) {
  if (elt.isInteger(1))
    return 2;
  return isa<IntegerType>(elt) ? 1 : 0;
}

/// Inputs of a stage, bound from its assumptions, in one fixed order so that
/// symbolic and concrete runs create their fresh values identically.
template <typename D> struct Bindings {
  using V = typename D::V;
  using T = Tensor<V>;
  D &d;
  /// Makes a fresh input value; kind 0 real, 1 integer (ids), 2 bool (masks).
  std::function<V(const std::string &, int)> fresh;
  std::map<std::string, T> spec;
  std::map<std::pair<int64_t, std::string>, T> plan;
  /// Equalities that could not be substituted (a plan tensor assumed twice).
  std::vector<std::pair<V, V>> extra;

  T freshTensor(const std::string &name, RankedTensorType ty) {
    T t;
    t.shape.assign(ty.getShape().begin(), ty.getShape().end());
    int kind = kindOf(ty.getElementType());
    SmallVector<int64_t> idx;
    for (int64_t i = 0, e = ty.getNumElements(); i < e; ++i) {
      unravel(i, t.shape, idx);
      t.data.push_back(fresh(name + indexStr(idx), kind));
    }
    return t;
  }

  /// Spec tensors the stage's spec computes (a tag of a computed value):
  /// a partly assumed intermediate that the stage recomputes. Plan tensors
  /// assumed equal to them are bound after the spec has run
  /// (bindComputed), from the computed values.
  std::set<std::string> computed;

  /// Per spec input, which of its elements an assumption has read (its
  /// values stand in some plan tensor's binding); inputs another name
  /// aliases are never rewritten.
  std::map<std::string, std::vector<bool>> read;
  std::set<std::string> aliased;
  /// Spec inputs of reals (kind 0): only those are substituted, so that an
  /// id's or a mask's domain never moves onto another tensor's values.
  std::set<std::string> realInputs;
  /// The fresh inputs a substitution replaced: a run does not read them,
  /// and a counterexample does not list them.
  std::set<std::string> stale;

  LogicalResult bind(StageOp stage) {
    for (Operation &op : stage.getSpec().getBody().front()) {
      if (auto in = dyn_cast<InputOp>(op)) {
        auto ty = cast<RankedTensorType>(in.getType());
        spec[in.getName().str()] = freshTensor(in.getName().str(), ty);
        if (kindOf(ty.getElementType()) == 0)
          realInputs.insert(in.getName().str());
      }
      // A tag of an input is another name of the same spec tensor.
      if (auto tag = dyn_cast<TagOp>(op)) {
        if (auto in = tag.getValue().getDefiningOp<InputOp>()) {
          spec[tag.getName().str()] = spec[in.getName().str()];
          aliased.insert(tag.getName().str());
          aliased.insert(in.getName().str());
        } else {
          computed.insert(tag.getName().str());
        }
      }
    }
    // Plan tensor types, to size slices of spec tensors the spec side does
    // not read.
    for (auto prog : stage.getPlan().getBody().front().getOps<RankProgramOp>())
      for (auto in : prog.getBody().front().getOps<InputOp>())
        for (int64_t r : prog.getRanks())
          planTypes[{r, in.getName().str()}] =
              cast<RankedTensorType>(in.getType());
    for (Attribute a : stage.getAssumes()) {
      auto l = cast<LineageAttr>(a);
      if (computed.count(l.getSpec().str()))
        continue;
      if (failed(bindOne(stage, l, nullptr)))
        return failure();
    }
    return success();
  }

  /// The assumptions about spec tensors the stage's spec computes, once it
  /// has run.
  LogicalResult bindComputed(StageOp stage, const RunState<V> &specRun) {
    for (Attribute a : stage.getAssumes()) {
      auto l = cast<LineageAttr>(a);
      if (!computed.count(l.getSpec().str()))
        continue;
      const T *t = specRun.lookupNamed(-1, l.getSpec().getValue());
      if (!t)
        return stage.emitError() << "the stage's spec does not compute '"
                                 << l.getSpec().getValue() << "'";
      if (failed(bindOne(stage, l, t)))
        return failure();
    }
    return success();
  }

  std::map<std::pair<int64_t, std::string>, RankedTensorType> planTypes;

  /// Binds the plan tensors of one assumption: to the slice of `from` (or of
  /// the spec input), or to fresh values for a spec tensor the stage does
  /// not read.
  LogicalResult bindOne(StageOp stage, LineageAttr l, const T *from) {
    {
      std::vector<V> slice;
      auto it = spec.find(l.getSpec().str());
      const T *src = from ? from : (it != spec.end() ? &it->second : nullptr);
      // The element kind of the plan tensors (ids and masks are integers).
      int kind = 0;
      l.walkRefs([&](size_t, PlanRefView ref) {
        auto ty = planTypes.find({ref.rank, ref.name.str()});
        if (ty != planTypes.end())
          kind = kindOf(ty->second.getElementType());
      });
      if (src) {
        ArrayRef<int64_t> full = src->shape;
        bool inside = full.size() == l.getRank();
        for (unsigned k = 0; inside && k < l.getRank(); ++k)
          inside = l.getLower()[k] >= 0 && l.getUpper()[k] <= full[k];
        if (!inside)
          return stage.emitError()
                 << "assumed lineage of '" << l.getSpec().getValue()
                 << "' lies outside the stage's spec tensor";
        if (!from && substitute(l))
          return success();
        std::vector<int64_t> at = boxIndicesOf(src->shape, l);
        for (int64_t i : at)
          slice.push_back(src->data[i]);
        if (!from)
          markRead(l.getSpec().str(), at);
      } else {
        SmallVector<int64_t> shape = l.getSliceShape();
        SmallVector<int64_t> idx;
        for (int64_t i = 0, e = numElements(shape); i < e; ++i) {
          unravel(i, shape, idx);
          for (size_t k = 0; k < idx.size(); ++k)
            idx[k] += l.getLower()[k];
          slice.push_back(fresh(l.getSpec().str() + indexStr(idx), kind));
        }
      }
      SmallVector<int64_t> shape = l.getSliceShape();
      // slice = c * (group sum): every group sums to slice / c.
      if (l.isScaled()) {
        if (kind != 0)
          return stage.emitError()
                 << "lineage of '" << l.getSpec().getValue()
                 << "' scales token ids or a mask";
        auto [num, den] = l.getScaleFraction();
        V inverse = num < 0 ? d.cstFrac(-den, -num) : d.cstFrac(den, num);
        for (V &x : slice)
          x = d.mul(x, inverse);
      }
      for (auto &group : l.getGroupRefs()) {
        std::vector<std::vector<V>> parts(group.size());
        std::vector<V> rest = slice;
        for (size_t k = 0; k + 1 < group.size(); ++k) {
          T t = freshTensor(group[k].getName().str() + "@" +
                                std::to_string(group[k].getRank()),
                            RankedTensorType::get(
                                shape, Float32Type::get(stage.getContext())));
          parts[k] = t.data;
          for (size_t i = 0; i < rest.size(); ++i)
            rest[i] = d.sub(rest[i], t.data[i]);
        }
        parts.back() = rest;
        for (auto [k, ref] : llvm::enumerate(group)) {
          auto key = std::make_pair(ref.getRank(), ref.getName().str());
          auto existing = plan.find(key);
          if (existing != plan.end()) {
            if (existing->second.data.size() != parts[k].size())
              return stage.emitError()
                     << "plan tensor '" << ref.getName() << "' on rank "
                     << ref.getRank()
                     << " is assumed equal to slices of different sizes";
            for (size_t i = 0; i < parts[k].size(); ++i)
              extra.push_back({existing->second.data[i], parts[k][i]});
            continue;
          }
          T t;
          t.shape.assign(shape.begin(), shape.end());
          t.data = parts[k];
          plan[key] = std::move(t);
        }
      }
    }
    return success();
  }

  /// Flat elements `at` of spec input `name` stand in a binding now.
  void markRead(const std::string &name, ArrayRef<int64_t> at) {
    std::vector<bool> &r = read[name];
    r.resize(spec.at(name).data.size());
    for (int64_t i : at)
      r[i] = true;
  }

  /// A spec input's box assumed equal to one plan tensor that an earlier
  /// assumption bound (two spec tensors named for one plan tensor, a
  /// framework's aliases): when no assumption has read the box's elements
  /// yet, they are fresh variables that occur nowhere else, so the
  /// equality is eliminated by substitution (`forall x. x = t => phi(x)`
  /// is `phi(t)`, x not in t) and normalization can decide the stage.
  /// Otherwise the equality is kept for the solver (`extra`).
  bool substitute(LineageAttr l) {
    std::string name = l.getSpec().str();
    if (l.isScaled() || aliased.count(name) || !realInputs.count(name) ||
        l.getNumGroups() != 1 || l.getGroupRefs().front().size() != 1)
      return false;
    PlanRefAttr ref = l.getGroupRefs().front().front();
    std::pair<int64_t, std::string> key{ref.getRank(), ref.getName().str()};
    auto bound = plan.find(key);
    auto boundType = planTypes.find(key);
    if (bound == plan.end() || boundType == planTypes.end() ||
        kindOf(boundType->second.getElementType()) != 0)
      return false;
    T &t = spec.at(name);
    std::vector<int64_t> at = boxIndicesOf(t.shape, l);
    if (at.size() != bound->second.data.size())
      return false;
    std::vector<bool> &r = read[name];
    r.resize(t.data.size());
    for (int64_t i : at)
      if (r[i])
        return false;
    SmallVector<int64_t> idx;
    for (auto [k, i] : llvm::enumerate(at)) {
      t.data[i] = bound->second.data[k];
      unravel(i, t.shape, idx);
      stale.insert(name + indexStr(idx));
    }
    markRead(name, at);
    return true;
  }

  InputFn<V> specInputs() {
    return [this](int64_t, StringRef name, RankedTensorType) -> FailureOr<T> {
      auto it = spec.find(name.str());
      if (it == spec.end())
        return failure();
      return it->second;
    };
  }
  InputFn<V> planInputs(std::string &error) {
    return [this, &error](int64_t rank, StringRef name,
                          RankedTensorType ty) -> FailureOr<T> {
      auto it = plan.find({rank, name.str()});
      if (it == plan.end()) {
        error = "plan input '" + name.str() + "' on rank " +
                std::to_string(rank) + " is not covered by an assumed lineage";
        return failure();
      }
      if (ArrayRef<int64_t>(it->second.shape) != ty.getShape()) {
        error = "plan input '" + name.str() + "' on rank " +
                std::to_string(rank) + " does not have its lineage's shape";
        return failure();
      }
      return it->second;
    };
  }
};

/// One compared element: spec slice element vs the sum of one group.
struct Check {
  unsigned lineage, group;
  int64_t element;
  /// n for a spec tensor of n-bit integers (compared modulo 2^n), else 0.
  unsigned bits = 0;
};

/// The integer width of the spec tensor `name` of `stage` (0: not an
/// integer of two bits or more).
inline unsigned integerBitsOf(StageOp stage, StringRef name) {
  unsigned bits = 0;
  stage.getSpec().walk([&](Operation *op) {
    auto n = op->getAttrOfType<StringAttr>("name");
    if (!n || n.getValue() != name ||
        (op->getNumResults() == 0 && op->getNumOperands() == 0))
      return WalkResult::advance();
    Type t = op->getNumResults() ? op->getResult(0).getType()
                                 : op->getOperand(0).getType();
    if (auto rt = dyn_cast<RankedTensorType>(t))
      if (auto it = dyn_cast<IntegerType>(rt.getElementType());
          it && it.getWidth() > 1)
        bits = it.getWidth();
    return WalkResult::interrupt();
  });
  return bits;
}

/// Whether two concrete values agree as reals, within the replay's
/// relative tolerance.
bool closeReal(double a, double b);
/// Whether two concrete values agree as elements of a tensor of `bits`-bit
/// integers (modulo 2^bits) or, for bits = 0, as reals (`closeReal`).
bool closeAs(double a, double b, unsigned bits);
/// A value for a report: integers exactly, other values to six digits.
std::string fmt(double v);


template <typename V> struct Outcome {
  RunState<V> spec, plan;
  std::vector<std::pair<V, V>> pairs; // (spec, plan) per check
  std::vector<Check> checks;
  std::string error;
};

template <typename D>
LogicalResult runStage(D &d, StageOp stage, const PlanSchedule &schedule,
                       Bindings<D> &b, Outcome<typename D::V> &out) {
  using V = typename D::V;
  {
    // Stages run on several threads with one context: a handler takes only
    // the diagnostics of its own thread (the others pass to the handler of
    // the thread that emitted them), or a stage's error could land in
    // another stage's report.
    std::thread::id self = std::this_thread::get_id();
    ScopedDiagnosticHandler silence(stage.getContext(), [&, self](
                                                            Diagnostic &diag) {
      if (std::this_thread::get_id() != self)
        return failure();
      out.error = diag.str();
      return success();
    });
    if (failed(b.bind(stage)))
      return failure();
    if (failed(runSpec(d, stage.getSpec(), b.specInputs(), out.spec)))
      return failure();
    if (failed(b.bindComputed(stage, out.spec)))
      return failure();
    if (failed(runPlan(d, schedule, b.planInputs(out.error), out.plan)))
      return failure();
  }
  for (auto [li, a] : llvm::enumerate(stage.getGuarantees())) {
    auto l = cast<LineageAttr>(a);
    const Tensor<V> *s = out.spec.lookupNamed(-1, l.getSpec().getValue());
    if (!s) {
      out.error =
          "the stage's spec does not compute '" + l.getSpec().str() + "'";
      return failure();
    }
    std::vector<V> slice = sliceOf(*s, l);
    unsigned bits = integerBitsOf(stage, l.getSpec().getValue());
    for (auto [gi, group] : llvm::enumerate(l.getGroupRefs())) {
      std::vector<V> sum(slice.size(), d.zero());
      for (PlanRefAttr ref : group) {
        const Tensor<V> *p = out.plan.lookupNamed(ref.getRank(), ref.getName());
        if (!p || p->data.size() != slice.size()) {
          out.error = "the stage's plan does not compute '" +
                      ref.getName().str() + "' on rank " +
                      std::to_string(ref.getRank()) +
                      " with the lineage's shape";
          return failure();
        }
        for (size_t i = 0; i < sum.size(); ++i)
          sum[i] = d.add(sum[i], p->data[i]);
      }
      if (l.isScaled()) {
        auto [num, den] = l.getScaleFraction();
        V c = d.cstFrac(num, den);
        for (V &x : sum)
          x = d.mul(x, c);
      }
      for (size_t i = 0; i < slice.size(); ++i) {
        out.pairs.push_back({slice[i], sum[i]});
        out.checks.push_back({(unsigned)li, (unsigned)gi, (int64_t)i, bits});
      }
    }
  }
  return success();
}

/// Concrete replay: the counterexample as real numbers, or nothing if the
/// assignment does not show a mismatch.
/// With `smallIntegers`, random reals are drawn from {±1, ±2, ±3}: values a
/// reader can follow, for the replay that runs before the solver.
bool replay(StageOp stage, const PlanSchedule &schedule,
            const std::vector<double> &assignment, std::mt19937_64 *rng,
            StageResult &result, bool smallIntegers = false);

/// Runs `stage` in the exact interpreter (residues modulo 2^61-1) on
/// inputs drawn from `rng`; an empty string on success, else why nothing
/// was checked.
std::string runExact(StageOp stage, const PlanSchedule &schedule,
                     std::mt19937_64 &rng, Outcome<ExactValue> &out);

// StageBlame.cpp and StageRelations.cpp: where a counterexample's plan
// departs from the spec.
/// Whether `t` is one block of `s` (the same rank, dimensions dividing).
bool isBlockOf(const Tensor<double> &t, const Tensor<double> &s);
/// The offsets of the aligned block of `s` that `t` equals, if any.
std::optional<SmallVector<int64_t>>
blockOffsetsOf(const Tensor<double> &t, const Tensor<double> &s);
/// An op folded away as an identity before verification that a blame
/// names (decision 103): its kind and location, and the op it was folded
/// into (which reads what it read).
struct FoldedOp {
  std::string kind;
  Location loc;
  Operation *reader;
};
/// The op the counterexample blames on `rank` (docs/guide.md §4.2), with
/// why in `explanation`; null when every op relates. When the op to blame
/// was folded away, `folded` (if given) names it and the op returned is
/// its reader. `deadRead` (if given) tells whether the op combines elements
/// of a spec value that the spec cuts away (decision 107): a bug wherever
/// the stage fails, so a blame that holds for the whole stage.
Operation *firstDivergingOp(StageOp stage, int64_t rank,
                            const Outcome<double> &out, Value failing,
                            std::string &explanation,
                            std::optional<FoldedOp> *folded = nullptr,
                            bool *deadRead = nullptr);
/// When no op is blamed: what the failing plan value is instead (another
/// result of the spec's op, or a spec intermediate the plan stops at).
std::string missingSpecOps(StageOp stage, const Outcome<double> &out,
                           const Tensor<double> &plan, Value expected);

// StageRelations.cpp: what a plan value is in terms of spec values.
/// The blocks of a stage's spec values that plan values are (the blame's
/// relations, docs/guide.md §4.2).
class SpecBlocks {
public:
  /// The first spec value a plan value is a block of (-1: none), and where.
  struct Box {
    int spec = -1;
    SmallVector<int64_t> offsets;
    /// A flat buffer's run: where in its first spec value it starts (0: at
    /// the start; -1: no flat run).
    int64_t flatShift = -1;
    /// The value is this factor times the block (a per-rank mean's
    /// gradient under a scaled lineage).
    double factor = 1;
    /// Blocks side by side (no offsets).
    bool sideBySide = false;
  };
  explicit SpecBlocks(ArrayRef<const Tensor<double> *> specValues)
      : specValues(specValues) {}
  /// What `t` is exactly: a block of a spec value (with offsets), the same
  /// with its dimensions of one dropped, a flat buffer's runs, or, with
  /// `sideBySide`, blocks of one spec value side by side along a dimension
  /// in their order there (an all-to-all's gathered tokens, and what is
  /// computed from them; no offsets). Elsewhere (an all-gather's result)
  /// such a value is rows from the wrong ranks.
  Box exact(const Tensor<double> &t, bool sideBySide = false);
  /// The same, or one of `factors` times it (the factors the values `t` is
  /// computed from carry: a scaled lineage's). A factor no operand
  /// carries is a wrong factor, and no relation.
  Box of(const Tensor<double> &t, ArrayRef<double> factors = {},
         bool sideBySide = false);

private:
  bool flatRun(const Tensor<double> &t, Box &b);
  ArrayRef<const Tensor<double> *> specValues;
  /// Spec elements by value, for flat runs (built on first use).
  std::multimap<double, std::pair<int, size_t>> elementsByValue;
};

/// `t` without its dimensions of size one.
Tensor<double> squeezed(const Tensor<double> &t);
/// The values the fused spec ops of `stage` compute on their way (the
/// softmax cross-entropy gradient's row maxima, softmax, terms ...),
/// appended to `derived`.
void fusedInsides(StageOp stage, const Outcome<double> &out,
                  std::deque<Tensor<double>> &derived);
/// The blocks of spec values that the stage's assumed lineages name (a
/// tensor-parallel rank's block of a weight gradient): a flat buffer of a
/// plan holds them flattened one after another (decision 113).
void assumedBlocks(StageOp stage, const Outcome<double> &out,
                   std::deque<Tensor<double>> &derived);
/// The spec op of `op`'s kind that reads, where `op` reads a spec value S,
/// an op's result computed from S: the note naming the op the plan lacks
/// between them ("" if none); `folded` names the plan's op of that kind
/// when it was folded into `op` (decision 103); `copied` (if given) the
/// plan's copy of the op's operand, where the op was replaced by a copy.
std::string skippedSpecOp(StageOp stage, Operation *op,
                          llvm::function_ref<Value(Value)> specOf,
                          std::optional<FoldedOp> *folded,
                          Operation **copied = nullptr);

} // namespace mlir::tv::stagecheck

#endif

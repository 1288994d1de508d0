//===- ShapeProgram.cpp - the shape-reduction integer program -------------===//
#include "TrainVerify/Verify/ShapeProgram.h"
#include "TrainVerify/Verify/Executor.h"
#include "TrainVerify/Verify/Semantics.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/EquivalenceClasses.h"
#include "llvm/ADT/TypeSwitch.h"
#include <functional>
#include <map>
#include <numeric>
#include <z3++.h>

using namespace mlir;
using namespace mlir::tv;

namespace {

/// A dimension: (value or virtual tensor id, dim index).
using DimKey = std::pair<const void *, unsigned>;

constexpr int64_t kSearchCap = 16;

struct LinearTerm {
  int64_t coeff;
  DimKey dim;
};

class ShapeProgram {
public:
  explicit ShapeProgram(StageOp stage) : stage(stage) {}
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
  int64_t orig(DimKey k) { return original.lookup(k); }
  void equal(Operation *why, DimKey a, DimKey b);
  void equalShapes(Operation *why, Value a, Value b);
  /// sum(lhs) == sum(rhs) with integer coefficients.
  void linear(Operation *why, std::vector<LinearTerm> lhs,
              std::vector<LinearTerm> rhs);
  void product(Operation *why, std::vector<DimKey> lhs, std::vector<DimKey> rhs);
  void atLeast(DimKey k, int64_t n) {
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
  /// An explicit vocabulary offset keeps its ratio to the shard's row count.
  void vocabOffset(Operation *op, int64_t off, Value table) {
    int64_t rows = shape(table)[0];
    virtuals.push_back(std::make_unique<int>(0));
    DimKey st{virtuals.back().get(), 0};
    original[st] = off;
    classes.insert(st);
    lower[st] = 0;
    linear(op, {{rows, st}}, {{off, key(table, 0)}});
    offsets.push_back({op, st});
  }
  void addBroadcast(Operation *op, Value operand, Value result);
  void addReshape(Operation *op, Value in, Value out);
  LogicalResult addLineages();

  StageOp stage;
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
  std::vector<std::pair<Operation *, DimKey>> offsets; // vocab offsets
  std::vector<std::unique_ptr<int>> virtuals; // owners of virtual dim keys
  DenseMap<DimKey, std::string> where;        // for diagnostics
};

} // namespace

void ShapeProgram::addValue(Value v) {
  auto ty = dyn_cast<RankedTensorType>(v.getType());
  if (!ty)
    return;
  for (unsigned d = 0; d < ty.getRank(); ++d) {
    DimKey k = key(v, d);
    original[k] = ty.getDimSize(d);
    classes.insert(k);
    // Every dimension keeps two elements: ops that relate different indices
    // (transposes, reshapes, masks, slices, gathers) stay distinguishable; at
    // size 1 a permutation is the identity and a causal mask is all-true.
    lower[k] = std::min<int64_t>(2, ty.getDimSize(d));
    if (ty.getDimSize(d) == 1)
      fixed.insert(k); // broadcast dimensions stay 1
  }
}

void ShapeProgram::equal(Operation *why, DimKey a, DimKey b) {
  classes.unionSets(a, b);
}

void ShapeProgram::equalShapes(Operation *why, Value a, Value b) {
  if (shape(a) != shape(b))
    return;
  for (unsigned d = 0; d < rank(a); ++d)
    equal(why, key(a, d), key(b, d));
}

void ShapeProgram::linear(Operation *why, std::vector<LinearTerm> lhs,
                          std::vector<LinearTerm> rhs) {
  constraints.push_back({why, std::move(lhs), std::move(rhs), false, {}, {}});
}

void ShapeProgram::product(Operation *why, std::vector<DimKey> lhs,
                           std::vector<DimKey> rhs) {
  if (lhs.size() == 1 && rhs.size() == 1)
    return equal(why, lhs[0], rhs[0]);
  constraints.push_back({why, {}, {}, true, std::move(lhs), std::move(rhs)});
}

void ShapeProgram::addBroadcast(Operation *op, Value operand, Value result) {
  unsigned off = rank(result) - rank(operand);
  for (unsigned d = 0; d < rank(operand); ++d)
    if (shape(operand)[d] != 1)
      equal(op, key(operand, d), key(result, off + d));
}

void ShapeProgram::addReshape(Operation *op, Value in, Value out) {
  ArrayRef<int64_t> a = shape(in), b = shape(out);
  unsigned i = 0, j = 0;
  while (i < a.size() || j < b.size()) {
    std::vector<DimKey> l, r;
    int64_t pa = 1, pb = 1;
    // Skip unit dims (fixed at 1).
    if (i < a.size() && a[i] == 1) {
      ++i;
      continue;
    }
    if (j < b.size() && b[j] == 1) {
      ++j;
      continue;
    }
    if (i < a.size()) {
      l.push_back(key(in, i));
      pa = a[i++];
    }
    if (j < b.size()) {
      r.push_back(key(out, j));
      pb = b[j++];
    }
    while (pa != pb) {
      if (pa < pb && i < a.size()) {
        if (a[i] != 1)
          l.push_back(key(in, i));
        pa *= a[i++];
      } else if (pb < pa && j < b.size()) {
        if (b[j] != 1)
          r.push_back(key(out, j));
        pb *= b[j++];
      } else {
        break;
      }
    }
    if (pa != pb || l.empty() || r.empty()) {
      fixDims(in);
      fixDims(out);
      return;
    }
    product(op, l, r);
  }
}

LogicalResult ShapeProgram::addOp(Operation *op) {
  for (Value r : op->getResults())
    addValue(r);
  auto res = [&](unsigned i = 0) { return op->getResult(i); };
  auto in = [&](unsigned i) { return op->getOperand(i); };
  auto last = [&](Value v) { return key(v, rank(v) - 1); };
  bool handled = true;
  TypeSwitch<Operation *>(op)
      .Case<InputOp, TagOp, OutputOp, SendOp, RecvOp>([](Operation *) {})
      .Case<AddOp, SubOp, MulOp, DivOp>([&](Operation *o) {
        addBroadcast(o, in(0), res());
        addBroadcast(o, in(1), res());
      })
      .Case([&](BroadcastOp o) { addBroadcast(o, in(0), res()); })
      .Case([&](MatmulOp o) {
        Value a = in(0), b = in(1), r = res();
        unsigned n = rank(a);
        for (unsigned d = 0; d + 2 < n; ++d) {
          equal(o, key(a, d), key(r, d));
          if (rank(b) == n)
            equal(o, key(b, d), key(r, d));
        }
        unsigned bn = rank(b);
        DimKey am = key(a, o.getTransposeLhs() ? n - 1 : n - 2);
        DimKey ak = key(a, o.getTransposeLhs() ? n - 2 : n - 1);
        DimKey bk = key(b, o.getTransposeRhs() ? bn - 1 : bn - 2);
        DimKey bnn = key(b, o.getTransposeRhs() ? bn - 2 : bn - 1);
        equal(o, am, key(r, n - 2));
        equal(o, bnn, key(r, n - 1));
        equal(o, ak, bk);
        atLeast(ak, 2);
      })
      .Case([&](LinearOp o) {
        Value x = in(0), w = in(1), r = res();
        for (unsigned d = 0; d + 1 < rank(x); ++d)
          equal(o, key(x, d), key(r, d));
        equal(o, last(x), key(w, 1));
        equal(o, key(w, 0), last(r));
        if (o.getBias())
          equal(o, key(o.getBias(), 0), last(r));
        atLeast(last(x), 2);
      })
      .Case([&](LinearGradOp o) {
        Value x = in(0), w = in(1), g = in(2);
        for (unsigned d = 0; d + 1 < rank(x); ++d)
          equal(o, key(x, d), key(g, d));
        equal(o, last(x), key(w, 1));
        equal(o, key(w, 0), last(g));
        equalShapes(o, x, res(0));
        equalShapes(o, w, res(1));
        atLeast(last(x), 2);
        atLeast(key(w, 0), 2);
      })
      .Case<SumOp, MeanOp, MaxOp>([&](Operation *o) {
        auto dims = cast<DenseI64ArrayAttr>(o->getAttr("dims")).asArrayRef();
        bool keep = o->hasAttr("keepdim");
        Value x = in(0), r = res();
        unsigned j = 0;
        for (unsigned d = 0; d < rank(x); ++d) {
          bool reduced = llvm::is_contained(dims, (int64_t)d);
          if (reduced)
            atLeast(key(x, d), 2);
          if (!reduced)
            equal(o, key(x, d), key(r, j));
          if (!reduced || keep)
            ++j;
        }
      })
      .Case([&](MeanGradOp o) {
        Value r = res(), g = in(0);
        unsigned j = 0;
        for (unsigned d = 0; d < rank(r); ++d) {
          bool reduced = llvm::is_contained(o.getDims(), (int64_t)d);
          if (reduced)
            atLeast(key(r, d), 2);
          if (!reduced)
            equal(o, key(r, d), key(g, j));
          if (!reduced || o.getKeepdim())
            ++j;
        }
      })
      .Case([&](MaxGradOp o) {
        Value x = in(0), g = in(1);
        equalShapes(o, x, res());
        unsigned j = 0;
        for (unsigned d = 0; d < rank(x); ++d) {
          bool reduced = llvm::is_contained(o.getDims(), (int64_t)d);
          if (reduced)
            atLeast(key(x, d), 2);
          if (!reduced)
            equal(o, key(x, d), key(g, j));
          if (!reduced || o.getKeepdim())
            ++j;
        }
      })
      .Case<SoftmaxOp, SoftmaxGradOp>([&](Operation *o) {
        for (Value v : o->getOperands())
          equalShapes(o, v, res());
        int64_t dim = cast<IntegerAttr>(o->getAttr("dim")).getInt();
        atLeast(key(res(), dim), 2);
      })
      .Case<LayerNormOp, RMSNormOp, LayerNormGradOp, RMSNormGradOp>(
          [&](Operation *o) {
            Value x = in(0);
            for (Value v : o->getOperands())
              if (rank(v) == rank(x))
                equalShapes(o, x, v);
              else
                equal(o, key(v, 0), last(x));
            for (Value r : o->getResults())
              if (rank(r) == rank(x))
                equalShapes(o, x, r);
              else
                equal(o, key(r, 0), last(x));
            atLeast(last(x), 2);
          })
      .Case<RotaryOp, RotaryGradOp>([&](Operation *o) {
        Value x = in(0), c = in(1), s = in(2);
        equalShapes(o, x, res());
        equalShapes(o, c, s);
        equal(o, key(x, rank(x) - 2), key(c, 0));
        linear(o, {{1, last(x)}}, {{2, key(c, 1)}});
      })
      .Case([&](EmbeddingOp o) {
        Value ids = in(0), t = in(1), r = res();
        for (unsigned d = 0; d < rank(ids); ++d)
          equal(o, key(ids, d), key(r, d));
        equal(o, key(t, 1), last(r));
        if (auto off = o.getVocabOffset())
          vocabOffset(o, (int64_t)*off, t);
      })
      .Case([&](EmbeddingGradOp o) {
        Value ids = in(0), g = in(1), r = res();
        for (unsigned d = 0; d < rank(ids); ++d)
          equal(o, key(ids, d), key(g, d));
        equal(o, key(r, 1), last(g));
        if (auto off = o.getVocabOffset())
          vocabOffset(o, (int64_t)*off, r);
      })
      .Case([&](CausalMaskOp o) {
        if (shape(res())[0] == shape(res())[1])
          equal(o, key(res(), 0), key(res(), 1));
        else
          fixDims(res());
      })
      .Case<ApplyMaskOp, ApplyMaskGradOp>([&](Operation *o) {
        Value x = in(0), m = in(1);
        equalShapes(o, x, res());
        equal(o, key(m, 0), key(x, rank(x) - 2));
        equal(o, key(m, 1), last(x));
      })
      .Case<CrossEntropyOp, CrossEntropyGradOp>([&](Operation *o) {
        Value l = in(0), lab = in(1);
        equal(o, key(l, 0), key(lab, 0));
        atLeast(key(l, 1), 2);
        if (o->getNumResults() && rank(res()) == 2)
          equalShapes(o, l, res());
      })
      .Case([&](ReshapeOp o) { addReshape(o, in(0), res()); })
      .Case([&](TransposeOp o) {
        for (auto [i, p] : llvm::enumerate(o.getPerm()))
          equal(o, key(res(), i), key(in(0), p));
      })
      .Case<SliceOp, SliceGradOp>([&](Operation *o) {
        bool isGrad = isa<SliceGradOp>(o);
        Value big = isGrad ? res() : in(0), small = isGrad ? in(0) : res();
        auto start = cast<DenseI64ArrayAttr>(o->getAttr("start")).asArrayRef();
        for (unsigned d = 0; d < rank(big); ++d) {
          if (shape(big)[d] == shape(small)[d] && start[d] == 0) {
            equal(o, key(big, d), key(small, d));
            continue;
          }
          // Keep the ratios: N_big * n_small = N_small * n_big, and the
          // start scales to an integer.
          int64_t nb = shape(big)[d], ns = shape(small)[d];
          linear(o, {{nb, key(small, d)}}, {{ns, key(big, d)}});
          virtuals.push_back(std::make_unique<int>(0));
          DimKey st{virtuals.back().get(), 0};
          original[st] = start[d];
          classes.insert(st);
          lower[st] = 0;
          linear(o, {{nb, st}}, {{start[d], key(big, d)}});
          sliceStarts.push_back({o, d, st, key(big, d)});
        }
      })
      .Case([&](ConcatOp o) {
        int64_t dim = o.getDim();
        std::vector<LinearTerm> parts;
        for (Value v : o.getInputs()) {
          for (unsigned d = 0; d < rank(v); ++d)
            if ((int64_t)d != dim)
              equal(o, key(v, d), key(res(), d));
          parts.push_back({1, key(v, dim)});
        }
        linear(o, parts, {{1, key(res(), dim)}});
      })
      .Case<TopKGateOp, TopKGateGradOp>([&](Operation *o) {
        for (Value v : o->getOperands())
          equalShapes(o, v, res());
        int64_t k = cast<IntegerAttr>(o->getAttr("k")).getInt();
        atLeast(key(res(), 1), k + 1);
      })
      .Case<DispatchOp, CombineOp, DispatchGradOp, CombineGradOp>(
          [&](Operation *o) {
            // tokens [t, h], gates [t, e], experts [e, t, h].
            Value tokens, gates, experts;
            if (isa<DispatchOp>(o)) {
              tokens = in(0), gates = in(1), experts = res();
            } else if (isa<CombineOp>(o)) {
              experts = in(0), gates = in(1), tokens = res();
            } else if (isa<DispatchGradOp>(o)) {
              experts = in(0), gates = in(1), tokens = res();
            } else {
              experts = in(0), gates = in(1), tokens = in(2);
              equalShapes(o, experts, res(0));
              equalShapes(o, gates, res(1));
            }
            equal(o, key(tokens, 0), key(gates, 0));
            equal(o, key(experts, 0), key(gates, 1));
            equal(o, key(experts, 1), key(tokens, 0));
            equal(o, key(experts, 2), key(tokens, 1));
          })
      .Case<MoEGateOp, MoEGateGradOp>([&](Operation *o) {
        // The routing keeps its full expert count and k: group-limited
        // top-k over a smaller row would select differently (see
        // docs/soundness.md). Tokens and the hidden size reduce.
        Value x = in(0), w = in(1);
        equal(o, key(x, 1), key(w, 1));
        atLeast(key(x, 1), 2);
        fixed.insert(key(w, 0));
        Value routed = isa<MoEGateOp>(o) ? res(0) : in(2);
        equal(o, key(x, 0), key(routed, 0));
        fixed.insert(key(routed, 1));
        if (isa<MoEGateOp>(o)) {
          equalShapes(o, res(0), res(1));
        } else {
          equalShapes(o, x, res(0));
          equalShapes(o, w, res(1));
        }
      })
      .Case<MoEGmmOp, MoEGmmGradOp>([&](Operation *o) {
        // x [t, h], indices and weights [t, k], w1 and w3 [n, f, h],
        // w2 [n, h, f]. Local experts are numbered from a global start:
        // their count stays, as does k; h and f are contracted.
        unsigned base = isa<MoEGmmGradOp>(o) ? 1 : 0;
        Value x = in(base), idx = in(base + 1), wt = in(base + 2),
              w1 = in(base + 3), w3 = in(base + 4), w2 = in(base + 5);
        equal(o, key(x, 0), key(idx, 0));
        equalShapes(o, idx, wt);
        fixed.insert(key(idx, 1));
        fixed.insert(key(w1, 0));
        equalShapes(o, w1, w3);
        equal(o, key(w2, 0), key(w1, 0));
        equal(o, key(w2, 1), key(x, 1));
        equal(o, key(w2, 2), key(w1, 1));
        equal(o, key(w1, 2), key(x, 1));
        atLeast(key(x, 1), 2);
        atLeast(key(w1, 1), 2);
        if (base)
          equalShapes(o, in(0), x);
        Value operands[] = {x, wt, w1, w3, w2};
        for (auto [r, v] : llvm::zip(o->getResults(),
                                     ArrayRef<Value>(operands)))
          equalShapes(o, v, r);
      })
      .Case([&](AllGatherOp o) {
        int64_t n = shape(res())[o.getDim()] / shape(in(0))[o.getDim()];
        for (unsigned d = 0; d < rank(res()); ++d)
          if ((int64_t)d == o.getDim())
            linear(o, {{1, key(res(), d)}}, {{n, key(in(0), d)}});
          else
            equal(o, key(res(), d), key(in(0), d));
      })
      .Case<ReduceScatterOp, ChunkOp>([&](Operation *o) {
        int64_t dim = cast<IntegerAttr>(o->getAttr("dim")).getInt();
        int64_t n = shape(in(0))[dim] / shape(res())[dim];
        for (unsigned d = 0; d < rank(res()); ++d)
          if ((int64_t)d == dim)
            linear(o, {{1, key(in(0), d)}}, {{n, key(res(), d)}});
          else
            equal(o, key(res(), d), key(in(0), d));
      })
      .Case([&](AllToAllOp o) {
        int64_t s = o.getSplitDim(), c = o.getConcatDim();
        if (s == c) {
          equalShapes(o, in(0), res());
          return;
        }
        int64_t n = shape(in(0))[s] / shape(res())[s];
        for (unsigned d = 0; d < rank(res()); ++d)
          if ((int64_t)d == s)
            linear(o, {{1, key(in(0), d)}}, {{n, key(res(), d)}});
          else if ((int64_t)d == c)
            linear(o, {{1, key(res(), d)}}, {{n, key(in(0), d)}});
          else
            equal(o, key(res(), d), key(in(0), d));
      })
      .Default([&](Operation *o) {
        // Elementwise and same-shape ops: every tensor has one shape.
        Value first;
        bool same = true;
        for (Value v : llvm::concat<Value>(o->getOperands(), o->getResults())) {
          if (!isa<RankedTensorType>(v.getType()))
            continue;
          if (!first)
            first = v;
          else if (shape(v) != shape(first))
            same = false;
        }
        if (!same) {
          handled = false;
          return;
        }
        if (first)
          for (Value v : llvm::concat<Value>(o->getOperands(), o->getResults()))
            if (isa<RankedTensorType>(v.getType()))
              equalShapes(o, first, v);
      });
  if (!handled) {
    // No rule: keep every dimension it touches at its size (always sound).
    for (Value v : llvm::concat<Value>(op->getOperands(), op->getResults()))
      if (isa<RankedTensorType>(v.getType()))
        fixDims(v);
  }
  return success();
}

LogicalResult ShapeProgram::addLineages() {
  // Values named in the stage programs.
  llvm::StringMap<Value> specNamed;
  for (Operation &op : stage.getSpec().getBody().front()) {
    if (auto in = dyn_cast<InputOp>(op))
      specNamed[in.getName()] = in.getResult();
    else if (auto out = dyn_cast<OutputOp>(op))
      specNamed[out.getName()] = out.getValue();
    else if (auto tag = dyn_cast<TagOp>(op))
      specNamed[tag.getName()] = tag.getValue();
  }
  std::map<std::pair<int64_t, std::string>, Value> planNamed;
  for (auto prog : stage.getPlan().getBody().front().getOps<RankProgramOp>())
    for (Operation &op : prog.getBody().front()) {
      std::string name;
      Value v;
      if (auto in = dyn_cast<InputOp>(op))
        name = in.getName().str(), v = in.getResult();
      else if (auto out = dyn_cast<OutputOp>(op))
        name = out.getName().str(), v = out.getValue();
      else
        continue;
      for (int64_t r : prog.getRanks())
        planNamed[{r, name}] = v;
    }
  // Spec tensors the spec side does not hold get a virtual full shape.
  llvm::StringMap<SmallVector<DimKey>> fullDims;
  auto fullOf = [&](LineageAttr l) -> SmallVector<DimKey> & {
    auto &dims = fullDims[l.getSpec().getValue()];
    if (!dims.empty())
      return dims;
    if (Value v = specNamed.lookup(l.getSpec().getValue())) {
      for (unsigned d = 0; d < rank(v); ++d)
        dims.push_back(key(v, d));
      return dims;
    }
    int64_t r = l.getRank();
    for (int64_t d = 0; d < r; ++d) {
      virtuals.push_back(std::make_unique<int>(0));
      DimKey k{virtuals.back().get(), 0};
      int64_t extent = 0;
      for (ArrayAttr list : {stage.getAssumes(), stage.getGuarantees()})
        for (Attribute a : list) {
          auto o = cast<LineageAttr>(a);
          if (o.getSpec() == l.getSpec())
            extent = std::max(extent, o.getUpper()[d]);
        }
      original[k] = extent;
      classes.insert(k);
      lower[k] = 1;
      dims.push_back(k);
    }
    return dims;
  };
  auto visit = [&](ArrayAttr list, bool guarantee) -> LogicalResult {
    for (auto [i, a] : llvm::enumerate(list)) {
      auto l = cast<LineageAttr>(a);
      SmallVector<DimKey> &full = fullOf(l);
      if (full.size() != l.getRank())
        return stage.emitError() << "lineage of '" << l.getSpec().getValue()
                                 << "' has rank " << l.getRank()
                                 << " but the spec tensor has rank "
                                 << full.size();
      for (unsigned d = 0; d < l.getRank(); ++d) {
        int64_t n = orig(full[d]), lo = l.getLower()[d],
                ext = l.getUpper()[d] - lo;
        virtuals.push_back(std::make_unique<int>(0));
        DimKey lov{virtuals.back().get(), 0};
        virtuals.push_back(std::make_unique<int>(0));
        DimKey extv{virtuals.back().get(), 0};
        original[lov] = lo;
        original[extv] = ext;
        classes.insert(lov);
        classes.insert(extv);
        lower[lov] = 0;
        lower[extv] = 1;
        if (ext == n) {
          equal(nullptr, extv, full[d]);
        } else {
          linear(nullptr, {{n, extv}}, {{ext, full[d]}});
        }
        linear(nullptr, {{n, lov}}, {{lo, full[d]}});
        l.walkRefs([&](size_t, PlanRefView ref) {
          // Tensors of an assumed lineage that the stage does not read
          // (other replicas, other ranks) do not constrain it.
          auto it = planNamed.find({ref.rank, ref.name.str()});
          if (it != planNamed.end() && it->second)
            equal(nullptr, key(it->second, d), extv);
        });
        boxes.push_back({guarantee, (unsigned)i, d, full[d], lov, extv});
      }
    }
    return success();
  };
  if (failed(visit(stage.getAssumes(), false)) ||
      failed(visit(stage.getGuarantees(), true)))
    return failure();
  return success();
}

LogicalResult ShapeProgram::build() {
  SmallVector<Operation *> ops;
  stage.getBody().walk([&](Operation *op) {
    if (!isa<SpecOp, PlanOp, RankProgramOp>(op))
      ops.push_back(op);
  });
  for (Operation *op : ops)
    if (failed(addOp(op)))
      return failure();
  // Point-to-point: what is sent is what is received.
  std::optional<PlanSchedule> sched;
  {
    auto s = PlanSchedule::build(stage.getPlan());
    if (failed(s))
      return failure();
    sched = std::move(*s);
  }
  for (const PlanStep &step : sched->steps)
    if (step.kind == PlanStep::P2P)
      for (unsigned d = 0; d < rank(step.op->getResult(0)); ++d)
        equal(step.op, key(step.op->getResult(0), d),
              key(step.sendOp->getOperand(0), d));
  return addLineages();
}

LogicalResult ShapeProgram::solveAndRewrite(unsigned timeoutMs) {
  // One integer variable per class.
  DenseMap<DimKey, unsigned> classIndex;
  std::vector<DimKey> leaders;
  for (auto it = classes.begin(); it != classes.end(); ++it) {
    if (!(*it)->isLeader())
      continue;
    classIndex[(*it)->getData()] = leaders.size();
    leaders.push_back((*it)->getData());
  }
  std::function<unsigned(DimKey)> classOf = [&](DimKey k) {
    return classIndex[classes.getLeaderValue(k)];
  };
  std::vector<int64_t> origOf(leaders.size(), -1), lowOf(leaders.size(), 0);
  std::vector<bool> fixedOf(leaders.size(), false);
  for (auto &[k, n] : original) {
    unsigned c = classOf(k);
    if (origOf[c] >= 0 && origOf[c] != n)
      return stage.emitError()
             << "inconsistent shape program: dimensions of sizes " << origOf[c]
             << " and " << n << " must be equal";
    origOf[c] = n;
  }
  for (auto &[k, n] : lower)
    lowOf[classOf(k)] = std::max(lowOf[classOf(k)], n);
  for (DimKey k : fixed)
    fixedOf[classOf(k)] = true;

  std::vector<int64_t> solution(leaders.size());
  if (solveRatios(classOf, origOf, lowOf, fixedOf, solution))
    return rewrite(classOf, solution);
  try {
    z3::context ctx;
    std::vector<z3::expr> vars;
    for (size_t c = 0; c < leaders.size(); ++c)
      vars.push_back(ctx.int_const(("d" + std::to_string(c)).c_str()));
    auto sum = [&](const std::vector<LinearTerm> &ts) {
      z3::expr e = ctx.int_val(0);
      for (const LinearTerm &t : ts)
        e = e + ctx.int_val(t.coeff) * vars[classOf(t.dim)];
      return e;
    };
    auto prod = [&](const std::vector<DimKey> &ks) {
      z3::expr e = ctx.int_val(1);
      for (DimKey k : ks)
        e = e * vars[classOf(k)];
      return e;
    };
    // Feasibility first, with one tracking literal per op so that an
    // infeasible program names the ops whose constraints conflict.
    z3::solver solver(ctx);
    z3::optimize opt(ctx);
    z3::params p(ctx);
    p.set("timeout", timeoutMs);
    solver.set(p);
    opt.set(p);
    std::vector<z3::expr> bounds;
    for (size_t c = 0; c < leaders.size(); ++c) {
      z3::expr b = fixedOf[c] ? vars[c] == ctx.int_val(origOf[c])
                              : (vars[c] >= ctx.int_val(lowOf[c]) &&
                                 vars[c] <= ctx.int_val(origOf[c]));
      bounds.push_back(b);
      solver.add(b);
      opt.add(b);
    }
    z3::expr_vector tracks(ctx);
    std::vector<Operation *> trackOps;
    for (auto [i, c] : llvm::enumerate(constraints)) {
      z3::expr e = c.isProduct ? prod(c.plhs) == prod(c.prhs)
                               : sum(c.lhs) == sum(c.rhs);
      z3::expr t = ctx.bool_const(("c" + std::to_string(i)).c_str());
      solver.add(z3::implies(t, e));
      tracks.push_back(t);
      trackOps.push_back(c.why);
      opt.add(e);
    }
    z3::expr total = ctx.int_val(0);
    for (auto &v : vars)
      total = total + v;
    opt.minimize(total);
    // Optimal sizes are tiny; searching below a small cap first keeps the
    // optimizer's branch and bound short. Without a solution under the cap,
    // search the whole range.
    z3::expr_vector capped(ctx);
    for (size_t c = 0; c < leaders.size(); ++c)
      if (!fixedOf[c] && origOf[c] > kSearchCap)
        capped.push_back(vars[c] <= ctx.int_val(kSearchCap));
    opt.push();
    for (unsigned i = 0; i < capped.size(); ++i)
      opt.add(capped[i]);
    z3::check_result res = opt.check();
    if (res != z3::sat) {
      opt.pop();
      res = opt.check();
    }
    if (res == z3::unsat) {
      // Name the ops whose constraints conflict.
      if (solver.check(tracks) == z3::unsat) {
        InFlightDiagnostic d = stage.emitError()
                               << "inconsistent shape program: the constraints "
                                  "of these ops conflict:";
        z3::expr_vector core = solver.unsat_core();
        std::set<std::string> names;
        for (unsigned i = 0; i < core.size(); ++i) {
          unsigned idx = std::stoul(core[i].decl().name().str().substr(1));
          Operation *why = trackOps[idx];
          if (why)
            d.attachNote(why->getLoc()) << "'" << why->getName() << "'";
          else
            d.attachNote(stage.getLoc()) << "a lineage slice";
        }
        return d;
      }
    }
    if (res != z3::sat) {
      // No better solution found in time: keep the stage as it is.
      stage.emitWarning() << "shape reduction gave up ("
                          << "solver did not finish); the stage keeps its "
                             "sizes";
      return success();
    }
    z3::model m = opt.get_model();
    for (size_t c = 0; c < leaders.size(); ++c)
      solution[c] = m.eval(vars[c], true).get_numeral_int64();
  } catch (const z3::exception &e) {
    return stage.emitError() << "shape reduction solver error: " << e.msg();
  }

  return rewrite(classOf, solution);
}

LogicalResult ShapeProgram::rewrite(const std::function<unsigned(DimKey)> &classOf,
                                    const std::vector<int64_t> &solution) {
  // Rewrite types.
  auto sizeOf = [&](DimKey k) { return solution[classOf(k)]; };
  stage.getBody().walk([&](Operation *op) {
    for (Value r : op->getResults()) {
      auto ty = dyn_cast<RankedTensorType>(r.getType());
      if (!ty)
        continue;
      SmallVector<int64_t> shape;
      for (unsigned d = 0; d < ty.getRank(); ++d)
        shape.push_back(sizeOf(key(r, d)));
      r.setType(RankedTensorType::get(shape, ty.getElementType()));
    }
  });
  // Slice starts.
  for (auto &[op, d, st, big] : sliceStarts) {
    auto attr = cast<DenseI64ArrayAttr>(op->getAttr("start"));
    SmallVector<int64_t> start(attr.asArrayRef());
    start[d] = sizeOf(st);
    op->setAttr("start", DenseI64ArrayAttr::get(op->getContext(), start));
  }
  for (auto &[op, st] : offsets)
    op->setAttr("vocab_offset",
                IntegerAttr::get(IntegerType::get(op->getContext(), 64),
                                 sizeOf(st)));
  // Lineage boxes.
  auto rewrite = [&](ArrayAttr list, bool guarantee) {
    SmallVector<Attribute> out;
    for (auto [i, a] : llvm::enumerate(list)) {
      auto l = cast<LineageAttr>(a);
      SmallVector<int64_t> lo(l.getLower()), hi(l.getUpper());
      for (const BoxDim &b : boxes)
        if (b.guarantee == guarantee && b.index == i) {
          lo[b.dim] = sizeOf(b.lo);
          hi[b.dim] = lo[b.dim] + sizeOf(b.extent);
        }
      out.push_back(l.withBox(lo, hi));
    }
    return ArrayAttr::get(stage.getContext(), out);
  };
  stage.setAssumesAttr(rewrite(stage.getAssumes(), false));
  stage.setGuaranteesAttr(rewrite(stage.getGuarantees(), true));
  return success();
}

bool ShapeProgram::solveRatios(const std::function<unsigned(DimKey)> &classOf,
                               const std::vector<int64_t> &origOf,
                               const std::vector<int64_t> &lowOf,
                               const std::vector<bool> &fixedOf,
                               std::vector<int64_t> &solution) {
  size_t n = origOf.size();
  struct Edge {
    unsigned to;
    int64_t num, den; // x_to = x_from * num / den
  };
  std::vector<std::vector<Edge>> adj(n);
  std::vector<bool> zero(n, false);
  struct Prod {
    SmallVector<unsigned> lhs, rhs;
  };
  std::vector<Prod> prods;
  // Linear constraints over three or more classes (concatenations):
  // sum_i coeff_i * x_i = 0.
  using Sum = SmallVector<std::pair<unsigned, int64_t>>;
  std::vector<Sum> sums;
  for (const Constraint &c : constraints) {
    if (c.isProduct) {
      Prod pr;
      for (DimKey k : c.plhs)
        pr.lhs.push_back(classOf(k));
      for (DimKey k : c.prhs)
        pr.rhs.push_back(classOf(k));
      prods.push_back(pr);
      continue;
    }
    std::map<unsigned, int64_t> coef; // lhs positive, rhs negative
    for (const LinearTerm &t : c.lhs)
      coef[classOf(t.dim)] += t.coeff;
    for (const LinearTerm &t : c.rhs)
      coef[classOf(t.dim)] -= t.coeff;
    SmallVector<std::pair<unsigned, int64_t>> nz;
    for (auto &[k, v] : coef)
      if (v)
        nz.push_back({k, v});
    if (nz.empty())
      continue;
    if (nz.size() == 1) {
      zero[nz[0].first] = true; // a*x = 0
      continue;
    }
    if (nz.size() != 2) {
      sums.push_back(nz);
      continue;
    }
    auto [a, ca] = nz[0];
    auto [bb, cb] = nz[1];
    if ((-ca > 0) != (cb > 0))
      return false; // would need a negative size
    adj[a].push_back({bb, std::abs(ca), std::abs(cb)});
    adj[bb].push_back({a, std::abs(cb), std::abs(ca)});
  }

  // Components of the ratio graph: x_c = t * p_c / q_c.
  struct Comp {
    std::vector<unsigned> members;
    int64_t step = 1, tMin = 1, tOrig = 0;
    std::optional<int64_t> pinned, t;
    bool zero = false;
  };
  std::vector<int64_t> p(n, 0), q(n, 0);
  std::vector<int> comp(n, -1);
  std::vector<Comp> comps;
  for (size_t root = 0; root < n; ++root) {
    if (comp[root] >= 0)
      continue;
    Comp c;
    c.members.push_back(root);
    comp[root] = comps.size();
    p[root] = q[root] = 1;
    for (size_t i = 0; i < c.members.size(); ++i) {
      unsigned u = c.members[i];
      for (const Edge &e : adj[u]) {
        __int128 np = (__int128)p[u] * e.num, nq = (__int128)q[u] * e.den;
        if (np > INT64_MAX || nq > INT64_MAX)
          return false;
        int64_t g = std::gcd((int64_t)np, (int64_t)nq);
        int64_t rp = (int64_t)np / g, rq = (int64_t)nq / g;
        if (comp[e.to] < 0) {
          comp[e.to] = comps.size();
          p[e.to] = rp;
          q[e.to] = rq;
          c.members.push_back(e.to);
        } else if ((__int128)p[e.to] * rq != (__int128)rp * q[e.to]) {
          return false; // inconsistent cycle: let the solver explain it
        }
      }
    }
    c.tOrig = origOf[root];
    for (unsigned u : c.members) {
      c.zero |= zero[u];
      c.step = std::lcm(c.step, q[u] / std::gcd(p[u], q[u]));
      if (c.step > std::max<int64_t>(c.tOrig, 1))
        return false;
      if (p[u] > 0)
        c.tMin = std::max<int64_t>(c.tMin, (lowOf[u] * q[u] + p[u] - 1) / p[u]);
      if (fixedOf[u]) {
        if (p[u] == 0 || origOf[u] * q[u] % p[u])
          return false;
        int64_t t = origOf[u] * q[u] / p[u];
        if (c.pinned && *c.pinned != t)
          return false;
        c.pinned = t;
      }
    }
    comps.push_back(std::move(c));
  }

  // Components that a product determines (its single-class side) are solved
  // after their factors; every other component takes its smallest t.
  std::vector<bool> dependent(comps.size(), false);
  for (const Prod &pr : prods) {
    const SmallVector<unsigned> *one = nullptr, *many = nullptr;
    if (pr.lhs.size() == 1 && pr.rhs.size() > 1)
      one = &pr.lhs, many = &pr.rhs;
    else if (pr.rhs.size() == 1 && pr.lhs.size() > 1)
      one = &pr.rhs, many = &pr.lhs;
    else
      return false;
    int dc = comp[(*one)[0]];
    unsigned inSame = 0;
    for (unsigned f : *many)
      inSame += comp[f] == dc;
    // x = f * K with f in x's own component: both scale with t, so the
    // product pins the other factors K, not t; the final check verifies it.
    if (inSame > 1)
      return false;
    if (inSame == 0)
      dependent[dc] = true;
  }
  // A sum within one component holds for every t or for none; otherwise the
  // term whose component occurs once, with its sign opposite to all others
  // (the result of a concatenation), is determined by the others.
  struct SumDep {
    unsigned single;
    Sum terms;
  };
  std::vector<SumDep> sumDeps;
  for (const Sum &sm : sums) {
    std::map<int, unsigned> perComp;
    for (auto [u, cf] : sm)
      ++perComp[comp[u]];
    if (perComp.size() == 1) {
      // sum cf_u * p_u / q_u must vanish.
      __int128 num = 0, den = 1;
      for (auto [u, cf] : sm) {
        num = num * q[u] + (__int128)cf * p[u] * den;
        den *= q[u];
        if (den > ((__int128)1 << 100) || num > ((__int128)1 << 100) ||
            num < -((__int128)1 << 100))
          return false;
      }
      if (num != 0)
        return false;
      continue;
    }
    std::optional<unsigned> single;
    bool singleOpposite = false;
    for (auto [u, cf] : sm) {
      if (perComp[comp[u]] != 1)
        continue;
      bool opposite = true;
      for (auto [v, cv] : sm)
        if (v != u && (cv > 0) == (cf > 0))
          opposite = false;
      if (!single || (opposite && !singleOpposite)) {
        single = u;
        singleOpposite = opposite;
      }
    }
    if (!single)
      return false;
    dependent[comp[*single]] = true;
    sumDeps.push_back({*single, sm});
  }
  auto setT = [&](Comp &c, int64_t t) {
    if (c.zero)
      t = 0;
    c.t = t;
  };
  // Independent components take their smallest t, raised by `extra` steps
  // when a size they determine (through a product or a sum) would fall
  // below its lower bound; each attempt is checked in full at the end.
  std::vector<int64_t> extra(comps.size(), 0);
  // Outcome of one attempt: solved, impossible, or raise this component.
  constexpr int64_t kSolved = -1, kFail = -2;
  auto value = [&](unsigned u) -> std::optional<int64_t> {
    const Comp &c = comps[comp[u]];
    if (!c.t)
      return std::nullopt;
    return (int64_t)((__int128)p[u] * *c.t / q[u]);
  };
  // A free factor of a dependency to raise when the dependent is too small.
  auto raise = [&](ArrayRef<unsigned> factors) -> int64_t {
    for (unsigned f : factors) {
      int ci = comp[f];
      const Comp &c = comps[ci];
      if (dependent[ci] || c.pinned || c.zero)
        continue;
      int64_t next =
          ((c.tMin + c.step - 1) / c.step + extra[ci] + 1) * c.step;
      if (next <= c.tOrig)
        return ci;
    }
    return kFail;
  };
  // Gives the component of `single` the t at which its size is `x`; on
  // failure, the attempt's outcome (raise one of `factors`, or give up).
  auto settle = [&](unsigned single, __int128 x,
                    ArrayRef<unsigned> factors) -> std::optional<int64_t> {
    Comp &dc = comps[comp[single]];
    if ((x * q[single]) % p[single])
      return raise(factors);
    int64_t t = (int64_t)(x * q[single] / p[single]);
    if (t % dc.step || t < dc.tMin)
      return raise(factors);
    if (t > dc.tOrig || (dc.pinned && *dc.pinned != t))
      return kFail;
    setT(dc, t);
    return std::nullopt;
  };
  auto attempt = [&]() -> int64_t {
    for (Comp &c : comps)
      c.t.reset();
    for (size_t ci = 0; ci < comps.size(); ++ci) {
      Comp &c = comps[ci];
      if (dependent[ci])
        continue;
      if (c.pinned)
        setT(c, *c.pinned);
      else
        setT(c, std::min(c.tOrig, ((c.tMin + c.step - 1) / c.step + extra[ci]) *
                                      c.step));
    }
    bool progress = true;
    while (progress) {
      progress = false;
      for (const Prod &pr : prods) {
        bool lhsOne = pr.lhs.size() == 1;
        unsigned single = lhsOne ? pr.lhs[0] : pr.rhs[0];
        const SmallVector<unsigned> &many = lhsOne ? pr.rhs : pr.lhs;
        __int128 prodv = 1;
        bool ready = true;
        for (unsigned f : many) {
          auto v = value(f);
          if (!v) {
            ready = false;
            break;
          }
          prodv *= *v;
          if (prodv > INT64_MAX)
            return kFail;
        }
        Comp &dc = comps[comp[single]];
        if (!ready || dc.t)
          continue;
        // x_single = prodv = p/q * t
        if (p[single] == 0)
          return raise(many);
        if (std::optional<int64_t> r = settle(single, prodv, many))
          return *r;
        progress = true;
      }
      for (const SumDep &sd : sumDeps) {
        Comp &dc = comps[comp[sd.single]];
        if (dc.t)
          continue;
        __int128 rest = 0;
        int64_t cs = 0;
        bool ready = true;
        SmallVector<unsigned> others;
        for (auto [u, cf] : sd.terms) {
          if (u == sd.single) {
            cs = cf;
            continue;
          }
          others.push_back(u);
          auto v = value(u);
          if (!v) {
            ready = false;
            break;
          }
          rest += (__int128)cf * *v;
        }
        if (!ready)
          continue;
        // cs * x_single + rest = 0, x_single = p/q * t.
        if (rest % cs)
          return raise(others);
        __int128 x = -rest / cs;
        if (x < 0 || x > INT64_MAX || p[sd.single] == 0)
          return kFail;
        if (std::optional<int64_t> r = settle(sd.single, x, others))
          return *r;
        progress = true;
      }
    }
    for (size_t u = 0; u < n; ++u) {
      auto v = value(u);
      if (!v || (__int128)p[u] * *comps[comp[u]].t % q[u] || *v < lowOf[u] ||
          *v > origOf[u])
        return kFail;
      solution[u] = *v;
    }
    // Every constraint holds (products included).
    for (const Constraint &c : constraints) {
      if (c.isProduct) {
        __int128 l = 1, r = 1;
        for (DimKey k : c.plhs)
          l *= solution[classOf(k)];
        for (DimKey k : c.prhs)
          r *= solution[classOf(k)];
        if (l != r)
          return kFail;
        continue;
      }
      __int128 l = 0, r = 0;
      for (const LinearTerm &t : c.lhs)
        l += (__int128)t.coeff * solution[classOf(t.dim)];
      for (const LinearTerm &t : c.rhs)
        r += (__int128)t.coeff * solution[classOf(t.dim)];
      if (l != r)
        return kFail;
    }
    return kSolved;
  };
  for (int tries = 0; tries < 64; ++tries) {
    int64_t r = attempt();
    if (r == kSolved)
      return true;
    if (r == kFail)
      return false;
    ++extra[r];
  }
  return false;
}

LogicalResult mlir::tv::reduceStageShapes(StageOp stage, unsigned timeoutMs) {
  ShapeProgram program(stage);
  if (failed(program.build()))
    return failure();
  return program.solveAndRewrite(timeoutMs);
}

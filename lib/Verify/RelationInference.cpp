//===- RelationInference.cpp - relations found on exact values ------------===//
//
// Spec and plan run once in the exact interpreter (residues modulo the
// prime 2^61-1) on random program inputs. A plan value relates to a spec
// value when it equals an aligned block of it up to a constant factor, or
// when its sum over one mesh axis' group does (a partial sum). Values are
// matched through a hash of each tensor divided by its first nonzero
// element, then compared element by element; a factor is kept only when it
// is a small rational (a random residue is not one). Docs: decision 97.
//
//===----------------------------------------------------------------------===//
#include "TrainVerify/Verify/RelationInference.h"
#include "StageRun.h"
#include "TrainVerify/Analysis/PlanSchedule.h"
#include "TrainVerify/Dialect/InputLimits.h"
#include "TrainVerify/Verify/ShapeProgram.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/StringSet.h"
#include <unordered_map>

using namespace mlir;
using namespace mlir::tv;

namespace {
using EV = ExactValue;
constexpr uint64_t kP = EV::P;

uint64_t inverse(uint64_t a) { return ExactDomain::powm(a, kP - 2); }

uint64_t mix(uint64_t h, uint64_t x) {
  h ^= x + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  h *= 0xff51afd7ed558ccdULL;
  return h ^ (h >> 33);
}

/// A tensor up to a constant factor: its elements divided by the first
/// finite nonzero one (`lead`), hashed.
struct Normal {
  uint64_t hash;
  size_t lead;
};

template <typename At>
std::optional<Normal> normalize(size_t n, At at) {
  size_t lead = n;
  for (size_t i = 0; i < n && lead == n; ++i)
    if (at(i).finite() && at(i).m)
      lead = i;
  if (lead == n)
    return std::nullopt; // zero or undefined everywhere: relates to anything
  uint64_t inv = inverse(at(lead).m), h = mix(0, n);
  bool constant = true;
  for (size_t i = 0; i < n; ++i) {
    const EV &v = at(i);
    uint64_t x = v.finite() ? ExactDomain::mulm(v.m, inv) : kP + v.kind;
    constant &= x == 1;
    h = mix(h, x);
  }
  // A constant tensor (a fill, a mask of ones) equals every other one up to
  // a factor: no evidence of a relation.
  if (n > 1 && constant)
    return std::nullopt;
  return Normal{h, lead};
}

/// The small rational n/d (|n|, d <= 2^20) whose residue is `c`, if any.
std::optional<std::pair<int64_t, int64_t>> smallRational(uint64_t c) {
  __int128 r0 = kP, r1 = c, t0 = 0, t1 = 1;
  const __int128 bound = (__int128)1 << 30;
  while (r1 >= bound) {
    __int128 q = r0 / r1;
    __int128 r2 = r0 - q * r1, t2 = t0 - q * t1;
    r0 = r1, r1 = r2, t0 = t1, t1 = t2;
  }
  __int128 n = r1, d = t1;
  if (d < 0)
    n = -n, d = -d;
  const __int128 limit = (__int128)1 << 20;
  if (d == 0 || d > limit || n > limit || n < -limit || n == 0)
    return std::nullopt;
  uint64_t lhs = n >= 0 ? (uint64_t)n : kP - (uint64_t)(-n);
  if (ExactDomain::mulm(c, (uint64_t)d) != lhs)
    return std::nullopt;
  return std::make_pair((int64_t)n, (int64_t)d);
}

/// One aligned block of a spec value, indexed by its normal form.
struct BlockRef {
  unsigned spec;
  int64_t block;
};

/// A relation found for one group of plan values.
struct Found {
  unsigned spec;
  SmallVector<int64_t> blockShape, lower;
  int64_t num, den; // lineage factor: box = num/den * group sum
  SmallVector<std::pair<int64_t, Value>, 2> group;
};
} // namespace

FailureOr<std::vector<InferredRelation>>
mlir::tv::inferRelations(SpecOp spec, PlanOp plan,
                         ArrayRef<LineageAttr> lineages,
                         const InferenceOptions &options, std::string &why) {
  Location loc = spec.getLoc();
  MeshOp meshOp = plan.getMeshOp();
  if (!meshOp) {
    why = "the plan names no mesh";
    return failure();
  }
  // The whole program as one stage that assumes the inputs' lineages.
  OwningOpRef<ModuleOp> temp = ModuleOp::create(loc);
  OpBuilder b = OpBuilder::atBlockEnd(temp->getBody());
  auto mesh = cast<MeshOp>(b.clone(*meshOp));
  llvm::StringSet<> specInputs;
  for (auto in : spec.getBody().front().getOps<InputOp>())
    specInputs.insert(in.getName());
  SmallVector<Attribute> assumes, guarantees;
  for (LineageAttr l : lineages)
    (specInputs.contains(l.getSpec().getValue()) ? assumes : guarantees)
        .push_back(l);
  auto stage = StageOp::create(b, loc, "infer", b.getArrayAttr(assumes),
                               b.getArrayAttr(guarantees), ArrayAttr());
  stage.getBody().push_back(new Block());
  b.setInsertionPointToStart(&stage.getBody().front());
  IRMapping map;
  auto specCopy = cast<SpecOp>(b.clone(*spec, map));
  auto planCopy = cast<PlanOp>(b.clone(*plan, map));
  DenseMap<Value, Value> original;
  for (auto &[from, to] : map.getValueMap())
    original[to] = from;

  StageSchedule analysis(stage);
  const PlanSchedule *schedule = analysis.get();
  if (!schedule) {
    why = analysis.error();
    return failure();
  }
  // A large program runs at the sizes shape reduction gives the whole
  // program (its structure kept); boxes are mapped back to full sizes.
  // Elements over all ranks (each result once per rank that runs it).
  auto countElements = [&] {
    uint64_t total = 0;
    stage.walk([&](Operation *op) {
      uint64_t copies = 1;
      if (auto prog = op->getParentOfType<RankProgramOp>())
        copies = std::max<uint64_t>(1, prog.getRanks().size());
      for (Type t : op->getResultTypes())
        if (auto rt = dyn_cast<RankedTensorType>(t))
          total = satAdd(total, satMul(copies, satElements(rt.getShape())));
    });
    return total;
  };
  DenseMap<Value, RankedTensorType> fullType;
  stage.walk([&](Operation *op) {
    for (Value v : op->getResults())
      if (auto t = dyn_cast<RankedTensorType>(v.getType()))
        fullType[v] = t;
  });
  uint64_t elements = countElements();
  bool reduced = false;
  if (elements > options.reduceAbove) {
    ScopedDiagnosticHandler quiet(spec.getContext(), [&](Diagnostic &d) {
      if (d.getSeverity() == DiagnosticSeverity::Error && why.empty())
        why = "shape reduction of the whole program failed: " + d.str();
      return success();
    });
    if (failed(reduceStageShapes(stage, options.timeoutMs, &analysis))) {
      if (why.empty())
        why = "shape reduction of the whole program failed";
      return failure();
    }
    reduced = true;
    elements = countElements();
  }
  if (exceedsMemoryBudget(satMul(elements, sizeof(EV)))) {
    why = "the program's " + std::to_string(elements) +
          " elements do not fit the memory budget as exact values" +
          (reduced ? " even after shape reduction" : "");
    return failure();
  }
  std::mt19937_64 rng(options.seed);
  stagecheck::Outcome<EV> out;
  why = stagecheck::runExact(stage, *schedule, rng, out);
  if (!why.empty())
    return failure();

  auto isInteger = [](Value v) {
    auto rt = dyn_cast<RankedTensorType>(v.getType());
    return rt && isa<IntegerType>(rt.getElementType());
  };
  // Spec values that may be cut, in spec order.
  // A value computed from no input (a mask, an iota) is the same in every
  // run: a cut there says nothing, and its plan copies may be made from
  // values computed later (a mask shaped like an activation).
  SmallVector<Value> specValues;
  SmallVector<const Tensor<EV> *> specTensors;
  DenseSet<Value> fromInputs;
  for (Operation &op : specCopy.getBody().front()) {
    bool reads = isa<InputOp>(op) || llvm::any_of(op.getOperands(), [&](Value v) {
                   return fromInputs.contains(v);
                 });
    if (reads)
      fromInputs.insert(op.getResults().begin(), op.getResults().end());
    if (isa<InputOp>(op) || !reads)
      continue;
    // Routing (an op that computes indices, and its weights with them) is
    // cut like any value: at reduced sizes (a few tokens) a stage that
    // takes the indices as free values case-splits on a few tokens'
    // experts, where recomputing the group-limited top-k over symbolic
    // scores is the costly part. Integer values relate only as they are
    // (no factor, no partial sum).
    for (Value v : op.getResults()) {
      const Tensor<EV> *t = out.spec.lookup(-1, v);
      if (!t || t->data.empty() ||
          (options.skipSpec && options.skipSpec(original.lookup(v))))
        continue;
      specValues.push_back(v);
      specTensors.push_back(t);
    }
  }
  // Plan values, and where each op sits in its program (to find the same
  // value on a rank that runs another program).
  struct PlanValue {
    int64_t rank;
    Value value;
    const Tensor<EV> *t;
  };
  std::vector<PlanValue> planValues;
  std::set<SmallVector<int64_t>> planShapes;
  for (auto &[key, t] : out.plan.values) {
    Value v = Value::getFromOpaquePointer(key.second);
    Operation *def = v.getDefiningOp();
    if (!def || isa<InputOp>(def) || t.data.empty() ||
        (options.skipPlan && options.skipPlan(key.first, original.lookup(v))))
      continue;
    planValues.push_back({key.first, v, &t});
    planShapes.insert(t.shape);
  }
  DenseMap<int64_t, RankProgramOp> programOf;
  DenseMap<Operation *, std::vector<Operation *>> opsOf;
  DenseMap<Operation *, size_t> positionOf;
  for (auto prog : planCopy.getBody().front().getOps<RankProgramOp>()) {
    for (int64_t r : prog.getRanks())
      programOf[r] = prog;
    auto &ops = opsOf[prog];
    for (Operation &op : prog.getBody().front()) {
      positionOf[&op] = ops.size();
      ops.push_back(&op);
    }
  }

  // The blocks of every spec value, for every plan shape that divides it.
  uint64_t work = 0;
  constexpr uint64_t kWorkLimit = uint64_t(1) << 28;
  std::map<SmallVector<int64_t>, unsigned> shapeIds;
  for (auto &s : planShapes)
    shapeIds.emplace(s, shapeIds.size());
  std::unordered_map<uint64_t, SmallVector<BlockRef, 1>> index;
  for (auto [si, st] : llvm::enumerate(specTensors)) {
    for (auto &[shape, id] : shapeIds) {
      if (shape.size() != st->shape.size())
        continue;
      SmallVector<int64_t> blocks;
      for (auto [a, c] : llvm::zip(shape, st->shape))
        blocks.push_back(a > 0 && c % a == 0 ? c / a : 0);
      int64_t nb = numElements(blocks);
      if (nb <= 0)
        continue;
      work += st->data.size();
      if (work > kWorkLimit) {
        why = "the program is too large to relate value by value (over 2^28 "
              "element comparisons)";
        return failure();
      }
      SmallVector<int64_t> strides = stridesOf(st->shape), at, idx;
      size_t n = numElements(shape);
      for (int64_t bi = 0; bi < nb; ++bi) {
        stagecheck::unravel(bi, blocks, at);
        auto elem = [&](size_t i) -> const EV & {
          stagecheck::unravel(i, shape, idx);
          int64_t flat = 0;
          for (size_t k = 0; k < idx.size(); ++k)
            flat += (at[k] * shape[k] + idx[k]) * strides[k];
          return st->data[flat];
        };
        if (auto nm = normalize(n, elem))
          index[mix(nm->hash, id)].push_back({(unsigned)si, bi});
      }
    }
  }

  // The block of a spec value a tensor equals up to a small factor.
  auto match = [&](const std::vector<EV> &data, ArrayRef<int64_t> shape,
                   Found &f) -> bool {
    auto nm = normalize(data.size(), [&](size_t i) -> const EV & {
      return data[i];
    });
    if (!nm)
      return false;
    auto idIt = shapeIds.find(SmallVector<int64_t>(shape));
    if (idIt == shapeIds.end())
      return false;
    auto it = index.find(mix(nm->hash, idIt->second));
    if (it == index.end())
      return false;
    SmallVector<int64_t> at, idx;
    bool scaled = false; // a scaled match is in `f`
    for (BlockRef ref : it->second) {
      const Tensor<EV> &st = *specTensors[ref.spec];
      SmallVector<int64_t> blocks, strides = stridesOf(st.shape);
      for (auto [a, c] : llvm::zip(shape, st.shape))
        blocks.push_back(c / a);
      stagecheck::unravel(ref.block, blocks, at);
      auto elem = [&](size_t i) -> const EV & {
        stagecheck::unravel(i, shape, idx);
        int64_t flat = 0;
        for (size_t k = 0; k < idx.size(); ++k)
          flat += (at[k] * shape[k] + idx[k]) * strides[k];
        return st.data[flat];
      };
      const EV &sl = elem(nm->lead);
      if (!sl.finite() || !sl.m)
        continue;
      uint64_t c = ExactDomain::mulm(data[nm->lead].m, inverse(sl.m));
      bool same = true;
      for (size_t i = 0; i < data.size() && same; ++i) {
        const EV &p = data[i], &s = elem(i);
        same = p.kind == s.kind &&
               (!p.finite() || p.m == ExactDomain::mulm(c, s.m));
      }
      if (!same)
        continue;
      auto q = smallRational(c); // plan = q * spec block
      if (!q || (scaled && q->first != q->second))
        continue;
      if (q->first != q->second && isInteger(specValues[ref.spec]))
        continue;
      // A factor of one is preferred to an earlier spec value's factor (a
      // scaled copy of a tensor that is itself in the spec).
      scaled = q->first != q->second;
      f.spec = ref.spec;
      f.blockShape.assign(shape.begin(), shape.end());
      f.lower.clear();
      for (size_t k = 0; k < at.size(); ++k)
        f.lower.push_back(at[k] * shape[k]);
      // box = (d/n) * plan, the denominator positive.
      f.num = q->first < 0 ? -q->second : q->second;
      f.den = q->first < 0 ? -q->first : q->first;
      if (!scaled)
        return true;
    }
    return scaled;
  };

  std::vector<Found> found;
  std::set<std::pair<int64_t, void *>> matched;
  for (const PlanValue &pv : planValues) {
    Found f;
    if (!match(pv.t->data, pv.t->shape, f))
      continue;
    f.group.push_back({pv.rank, original.lookup(pv.value)});
    matched.insert({pv.rank, pv.value.getAsOpaquePointer()});
    found.push_back(std::move(f));
  }
  // Partial sums: a value with no block, summed over one mesh axis' group
  // (led by its first rank), the same value on each rank of the group.
  auto counterpart = [&](Value v, int64_t rank) -> Value {
    if (out.plan.lookup(rank, v))
      return v;
    Operation *def = v.getDefiningOp();
    RankProgramOp prog = programOf.lookup(rank);
    if (!prog)
      return Value();
    auto &ops = opsOf[prog];
    size_t pos = positionOf.lookup(def);
    if (pos >= ops.size() || ops[pos]->getName() != def->getName() ||
        ops[pos]->getResultTypes() != def->getResultTypes())
      return Value();
    Value w = ops[pos]->getResult(cast<OpResult>(v).getResultNumber());
    return out.plan.lookup(rank, w) ? w : Value();
  };
  ExactDomain ed;
  for (const PlanValue &pv : planValues) {
    if (matched.count({pv.rank, pv.value.getAsOpaquePointer()}) ||
        isInteger(pv.value))
      continue;
    for (auto [a, axis] : llvm::enumerate(mesh.getAxes())) {
      if (mesh.getSizes()[a] < 2)
        continue;
      StringRef name = cast<StringAttr>(axis).getValue();
      SmallVector<int64_t> group = mesh.getAxisGroup(pv.rank, {name});
      if (group.front() != pv.rank)
        continue;
      SmallVector<std::pair<int64_t, Value>, 2> members;
      std::vector<EV> sum = pv.t->data;
      bool ok = true;
      for (int64_t r : ArrayRef<int64_t>(group).drop_front()) {
        Value w = counterpart(pv.value, r);
        const Tensor<EV> *t = w ? out.plan.lookup(r, w) : nullptr;
        if (!t || t->shape != pv.t->shape ||
            matched.count({r, w.getAsOpaquePointer()})) {
          ok = false;
          break;
        }
        for (size_t i = 0; i < sum.size(); ++i)
          sum[i] = ed.add(sum[i], t->data[i]);
        members.push_back({r, original.lookup(w)});
      }
      Found f;
      if (!ok || !match(sum, pv.t->shape, f))
        continue;
      f.group.push_back({pv.rank, original.lookup(pv.value)});
      f.group.append(members.begin(), members.end());
      found.push_back(std::move(f));
      break;
    }
  }

  // Per spec value, the family of blocks (one block shape) that tiles it,
  // the largest blocks first; per block, its groups with the first group's
  // factor.
  std::vector<InferredRelation> result;
  std::map<unsigned, std::map<SmallVector<int64_t>, std::vector<Found *>>>
      bySpec;
  for (Found &f : found)
    bySpec[f.spec][f.blockShape].push_back(&f);
  for (auto &[si, families] : bySpec) {
    const Tensor<EV> &st = *specTensors[si];
    const std::vector<Found *> *best = nullptr;
    int64_t bestVolume = 0;
    for (auto &[shape, list] : families) {
      std::set<SmallVector<int64_t>> boxes;
      for (Found *f : list)
        boxes.insert(f->lower);
      int64_t blocks = 1;
      for (auto [a, c] : llvm::zip(shape, st.shape))
        blocks *= c / a;
      if ((int64_t)boxes.size() == blocks && numElements(shape) > bestVolume)
        best = &list, bestVolume = numElements(shape);
    }
    if (!best)
      continue;
    // Full sizes: the same blocks of the full tensor, each plan value of
    // the block's full shape.
    ArrayRef<int64_t> full = fullType.lookup(specValues[si]).getShape();
    SmallVector<int64_t> fullBlock;
    bool fits = true;
    for (auto [k, n] : llvm::enumerate((*best)[0]->blockShape)) {
      int64_t blocks = st.shape[k] / n;
      fits &= full[k] % blocks == 0;
      fullBlock.push_back(blocks ? full[k] / blocks : 0);
    }
    for (Found *f : *best)
      for (auto &[rank, v] : f->group)
        fits &= cast<RankedTensorType>(v.getType()).getShape() ==
                ArrayRef<int64_t>(fullBlock);
    // Two values of one rank equal to one block: at reduced sizes distinct
    // tensors can coincide (a sum over a dimension of one), so neither is
    // evidence. (A partial sum and its reduction on one rank are not.) A
    // copy is the same tensor, not another: it relates through its source
    // and is left out (a multiref's copies would otherwise hide every
    // activation they copy).
    auto root = [](Value v) {
      while (auto c = v.getDefiningOp<CopyOp>())
        v = c.getOperand();
      return v;
    };
    std::set<std::tuple<SmallVector<int64_t>, int64_t, void *>> seen;
    std::map<std::tuple<SmallVector<int64_t>, int64_t, int64_t, int64_t>,
             std::pair<Value, Found *>>
        blockRank;
    DenseSet<Found *> copies;
    // Sources before their copies.
    std::vector<Found *> sourcesFirst(best->begin(), best->end());
    llvm::stable_sort(sourcesFirst, [&](Found *a, Found *b) {
      auto isCopy = [](Found *f) {
        return f->group.size() == 1 &&
               isa_and_nonnull<CopyOp>(f->group[0].second.getDefiningOp());
      };
      return !isCopy(a) && isCopy(b);
    });
    for (Found *f : sourcesFirst)
      if (f->group.size() == 1)
        for (auto &[rank, v] : f->group) {
          if (!seen.insert({f->lower, rank, root(v).getAsOpaquePointer()})
                   .second) {
            copies.insert(f);
            continue;
          }
          auto [it, fresh] = blockRank.try_emplace(
              {f->lower, rank, f->num, f->den}, std::make_pair(v, f));
          if (fresh)
            continue;
          // A partial sum equal to its own all-reduce at reduced sizes (the
          // group's other members gave zeros: a degenerate routing sent
          // every token to this rank's experts): the all-reduce is the
          // value, the partial a coincidence.
          auto reduces = [](Value r, Value x) {
            auto ar = r.getDefiningOp<AllReduceOp>();
            return ar && ar->getOperand(0) == x;
          };
          if (reduces(v, it->second.first)) {
            copies.insert(it->second.second);
            it->second = {v, f};
          } else if (reduces(it->second.first, v)) {
            copies.insert(f);
          } else {
            fits = false;
          }
        }
    if (!fits)
      continue;
    // Per block, groups without a factor first: the lineage keeps the
    // first group's factor.
    std::vector<Found *> ordered;
    for (Found *f : *best)
      if (!copies.contains(f))
        ordered.push_back(f);
    llvm::stable_sort(ordered, [](Found *a, Found *b) {
      return (a->num == a->den) > (b->num == b->den);
    });
    std::map<SmallVector<int64_t>, InferredRelation> boxes;
    for (Found *f : ordered) {
      auto [it, inserted] = boxes.try_emplace(f->lower);
      InferredRelation &rel = it->second;
      if (inserted) {
        rel.spec = original.lookup(specValues[si]);
        for (auto [k, lo] : llvm::enumerate(f->lower)) {
          rel.lower.push_back(lo / f->blockShape[k] * fullBlock[k]);
          rel.upper.push_back(rel.lower.back() + fullBlock[k]);
        }
        rel.scaleNum = f->num;
        rel.scaleDen = f->den;
      } else if (rel.scaleNum != f->num || rel.scaleDen != f->den) {
        continue;
      }
      rel.groups.push_back(f->group);
    }
    for (auto &[lower, rel] : boxes)
      result.push_back(std::move(rel));
  }
  return result;
}

//===- StageBlame.cpp - which plan op a counterexample blames -------------===//
//
// A counterexample's verdict is its lineage; the blame says where to look:
// the first op of the failing rank's program whose value stops relating to
// the spec (docs/guide.md §4.2, decision 96).
//
//===----------------------------------------------------------------------===//
#include "Folder.h"
#include "StageRun.h"
#include "TrainVerify/Semantics/Semantics.h"

#include <cmath>
#include <deque>
#include <map>

using namespace mlir;
using namespace mlir::tv;

namespace mlir::tv::stagecheck {

/// The first op of `rank`'s program whose value departs from the spec. A
/// value relates to the spec when it is a block of a spec value, or a
/// partial sum (summed over a mesh axis' group it is one), or a term of a
/// sum that relates. The op blamed is the first, in program order, that
/// either reads only related operands and gives a value that does not
/// relate, or is the last op of a partial sum that reaches a use not
/// linear in it (or the failing lineage, `failing`, when that names one
/// plan tensor) without an all-reduce: the reduction is missing after it.
/// A localization for the report (the lineage failure is the verdict):
/// null if every op agrees or the stage is too large to search.
Operation *firstDivergingOp(StageOp stage, int64_t rank,
                            const Outcome<double> &out, Value failing,
                            std::string &explanation,
                            std::optional<FoldedOp> *folded,
                            bool *deadRead) {
  SmallVector<const Tensor<double> *> specValues;
  SmallVector<Value> specValueOf;
  for (auto &[key, t] : out.spec.values) {
    specValues.push_back(&t);
    specValueOf.push_back(Value::getFromOpaquePointer(key.second));
  }
  std::deque<Tensor<double>> derived;
  fusedInsides(stage, out, derived);
  assumedBlocks(stage, out, derived);
  for (const Tensor<double> &t : derived) {
    specValues.push_back(&t);
    specValueOf.push_back(Value());
  }
  RankProgramOp prog;
  for (auto p : stage.getPlan().getBody().front().getOps<RankProgramOp>())
    if (llvm::is_contained(p.getRanks(), rank))
      prog = p;
  if (!prog || specValues.size() > 4096)
    return nullptr;
  MeshOp mesh = SymbolTable::lookupNearestSymbolFrom<MeshOp>(
      stage, stage.getPlan().getMeshAttr());
  using Box = SpecBlocks::Box;
  SpecBlocks blocks(specValues);
  DenseMap<Value, Box> boxOf;
  auto boxFor = [&](const Tensor<double> &t, ArrayRef<double> factors = {},
                    bool sideBySide = false) {
    return blocks.of(t, factors, sideBySide);
  };
  auto matchOf = [&](const Tensor<double> &t,
                     ArrayRef<double> factors = {}) -> int {
    return boxFor(t, factors).spec;
  };
  // For each dimension d of operand `v`'s block that a loop of `st`
  // indexes (operand i's map): the loop, the spec value's extent along d
  // and the block's offset there. False when `v` is no block with offsets.
  auto blockLoops =
      [&](Value v, const AffineMap &map,
          llvm::function_ref<void(unsigned, int64_t, int64_t, size_t)> fn) {
        auto it = boxOf.find(v);
        if (it == boxOf.end() || it->second.spec < 0)
          return false;
        const Tensor<double> &spec = *specValues[it->second.spec];
        if (it->second.offsets.size() != spec.shape.size())
          return false;
        for (auto [d, e] : llvm::enumerate(map.getResults()))
          if (auto dim = dyn_cast<AffineDimExpr>(e); dim && d < spec.shape.size())
            fn(dim.getPosition(), spec.shape[d], it->second.offsets[d], d);
        return true;
      };
  // A contraction over part of its extent (one micro-batch's rows of a
  // weight gradient): its operands are blocks that cover a summed loop only
  // in part, and along every loop their blocks start at the same place.
  // Its result is then a term of the spec's sum, which relates; operands
  // from different rows (a micro-batch reading another's activation) do
  // not.
  auto consistentPartialContraction = [&](Operation *op, unsigned result) {
    auto so = dyn_cast<StructuredOpInterface>(op);
    if (!so || op->getNumOperands() < 2)
      return false;
    OpStructure st = so.getStructure(result);
    if (st.operands.size() != op->getNumOperands())
      return false;
    bool partial = false;
    SmallVector<std::optional<std::pair<int64_t, int64_t>>> at(
        st.loops.size()); // per loop: (spec size, offset)
    bool apart = false;
    for (auto [i, v] : llvm::enumerate(op->getOperands())) {
      const Tensor<double> *t = out.plan.lookup(rank, v);
      if (!t)
        return false;
      bool read = st.isRead(i);
      auto visit = [&](unsigned l, int64_t full, int64_t off, size_t d) {
        if (!read)
          return;
        if ((st.loops[l] == LoopKind::Contraction ||
             st.loops[l] == LoopKind::Accumulation) &&
            t->shape[d] < full)
          partial = true;
        if (at[l] && at[l]->first == full && at[l]->second != off)
          apart = true;
        if (!at[l])
          at[l] = std::make_pair(full, off);
      };
      if (!blockLoops(v, st.operands[i], visit))
        return false;
    }
    return partial && !apart;
  };
  auto matches = [&](const Tensor<double> &t, ArrayRef<double> factors = {}) {
    return matchOf(t, factors) >= 0;
  };
  // The factors of scaled assumed lineages: the plan's value is q/p times
  // the spec's where the lineage says `scaled p/q`.
  SmallVector<double> stageFactors;
  for (Attribute a : stage.getAssumes())
    if (auto l = dyn_cast<LineageAttr>(a); l && l.isScaled()) {
      auto [n, d] = l.getScaleFraction();
      double f = (double)d / (double)n;
      if (!llvm::is_contained(stageFactors, f))
        stageFactors.push_back(f);
    }
  // The factors each value may carry: those of the scaled lineages of the
  // inputs it is computed from, whether or not the values between relate
  // (a micro-batch's term of a gradient, before its sum).
  DenseMap<Value, SmallVector<double, 1>> carried;

  SmallVector<Operation *> ops;
  prog.getBody().walk([&](Operation *op) {
    if (op->getNumResults() != 0 && !isa<RankProgramOp>(op))
      ops.push_back(op);
  });
  // The same value on another rank: in a shared program the same SSA
  // value; else the op at the same place of that rank's program, if it is
  // the same op (an edited rank runs a program of its own).
  DenseMap<Operation *, std::pair<Operation *, size_t>> placeOf;
  DenseMap<int64_t, SmallVector<Operation *>> opsOfRank;
  auto counterpart = [&](Value v, int64_t other) -> const Tensor<double> * {
    if (const Tensor<double> *t = out.plan.lookup(other, v))
      return t;
    Operation *def = v.getDefiningOp();
    if (!def)
      return nullptr;
    if (placeOf.empty())
      for (auto p : stage.getPlan().getBody().front().getOps<RankProgramOp>()) {
        size_t i = 0;
        for (Operation &o : p.getBody().front())
          placeOf[&o] = {p, i++};
      }
    auto it = opsOfRank.find(other);
    if (it == opsOfRank.end()) {
      SmallVector<Operation *> list;
      for (auto p : stage.getPlan().getBody().front().getOps<RankProgramOp>())
        if (llvm::is_contained(p.getRanks(), other))
          for (Operation &o : p.getBody().front())
            list.push_back(&o);
      it = opsOfRank.try_emplace(other, std::move(list)).first;
    }
    size_t at = placeOf.lookup(def).second;
    if (at >= it->second.size())
      return nullptr;
    Operation *o = it->second[at];
    if (o->getName() != def->getName() ||
        o->getResultTypes() != def->getResultTypes())
      return nullptr;
    return out.plan.lookup(other,
                           o->getResult(cast<OpResult>(v).getResultNumber()));
  };
  // `t` (the value `r` on this rank) combined elementwise with the same
  // value on the other ranks of `group` (found by place in an edited
  // rank's program when `byPlace`); `differs` when some rank's value is
  // not this one's. Nothing when a rank lacks it.
  auto acrossGroup = [&](Value r, const Tensor<double> &t,
                         ArrayRef<int64_t> group, bool byPlace, bool &differs,
                         llvm::function_ref<double(double, double)> combine)
      -> std::optional<Tensor<double>> {
    Tensor<double> acc = t;
    for (int64_t other : group) {
      if (other == rank)
        continue;
      const Tensor<double> *o =
          byPlace ? counterpart(r, other) : out.plan.lookup(other, r);
      if (!o || o->data.size() != acc.data.size())
        return std::nullopt;
      for (size_t i = 0; i < acc.data.size(); ++i) {
        differs |= !closeReal(o->data[i], t.data[i]);
        acc.data[i] = combine(acc.data[i], o->data[i]);
      }
    }
    return acc;
  };
  // Agreement of each value: a block of a spec value, or its sum over the
  // group of a mesh axis (a partial sum).
  // A mask the plan computes from nothing, of a kind the spec has not (a
  // padded vocabulary's mask where the spec slices): no spec value to be a
  // block of, so it is judged by its readers.
  DenseSet<OperationName> specKinds;
  stage.getSpec().walk([&](Operation *o) { specKinds.insert(o->getName()); });
  auto planOnlyMask = [&](Operation *op) {
    auto type = op->getNumOperands() == 0 && op->getNumResults() == 1
                    ? dyn_cast<RankedTensorType>(op->getResult(0).getType())
                    : RankedTensorType();
    return type && type.getElementType().isInteger(1) &&
           !specKinds.contains(op->getName());
  };
  DenseMap<Value, bool> agrees;
  DenseMap<Value, std::string> partialOf, partialMaxOf;
  unsigned budget = 4096;
  for (Operation *op : ops) {
    for (Value r : op->getResults()) {
      const Tensor<double> *t = out.plan.lookup(rank, r);
      if (!t || budget == 0) {
        agrees[r] = true;
        continue;
      }
      --budget;
      SmallVector<double, 1> factors;
      if (isa<InputOp>(op))
        factors.append(stageFactors.begin(), stageFactors.end());
      for (Value v : op->getOperands())
        for (double f : carried.lookup(v))
          if (!llvm::is_contained(factors, f))
            factors.push_back(f);
      if (!factors.empty())
        carried[r] = factors;
      // Blocks side by side: an all-to-all's result, and what is computed
      // from one.
      bool sideBySide = isa<AllToAllOp>(op) ||
                        llvm::any_of(op->getOperands(), [&](Value v) {
                          auto it = boxOf.find(v);
                          return it != boxOf.end() && it->second.sideBySide;
                        });
      Box box = boxFor(*t, factors, sideBySide);
      boxOf[r] = box;
      int m = box.spec;
      bool ok = isa<InputOp>(op) || m >= 0 || planOnlyMask(op);
      // Result k of an op that is result j != k of the same op in the
      // spec: the outputs are swapped.
      if (ok && m >= 0 && op->getNumResults() > 1) {
        bool same = false, other = false;
        for (auto [i, s] : llvm::enumerate(specValues)) {
          auto sr = dyn_cast_if_present<OpResult>(specValueOf[i]);
          if (!sr || sr.getOwner()->getName() != op->getName() ||
              !isBlockOf(*t, *s))
            continue;
          if (sr.getResultNumber() == cast<OpResult>(r).getResultNumber())
            same = true;
          else
            other = true;
        }
        if (other && !same)
          ok = false;
      }
      if (!ok && mesh) {
        for (Attribute axis : mesh.getAxes()) {
          StringRef name = cast<StringAttr>(axis).getValue();
          SmallVector<int64_t> group = mesh.getAxisGroup(rank, {name});
          if (group.size() < 2)
            continue;
          bool differs = false;
          std::optional<Tensor<double>> folded = acrossGroup(
              r, *t, group, /*byPlace=*/false, differs,
              [](double a, double b) { return a + b; });
          bool all = folded.has_value();
          Tensor<double> sum = all ? *folded : *t;
          // Equal on every member, the sum is only a multiple of the value,
          // not a partial sum. A per-rank mean averaged over the group (a
          // loss averaged per data-parallel rank) is one too.
          Tensor<double> mean = sum;
          for (double &x : mean.data)
            x /= (double)group.size();
          if (all && differs) {
            Box whole = boxFor(sum, factors);
            if (whole.spec < 0)
              whole = boxFor(mean, factors);
            if (whole.spec >= 0) {
              ok = true;
              partialOf[r] = name.str();
              break;
            }
          }
        }
      }
      // A shard-local maximum: a max reduction whose maximum over a mesh
      // axis' group is a block of a spec value while the ranks' values
      // differ; a copy or reshape of one is one.
      if (isa<CopyOp, ReshapeOp>(op) && partialMaxOf.count(op->getOperand(0)))
        partialMaxOf[r] = partialMaxOf[op->getOperand(0)];
      else if (isa<MaxOp>(op) && mesh && t->data.size() <= 4096 &&
               agrees.lookup(op->getOperand(0)) &&
               !partialOf.count(op->getOperand(0)) &&
               // Complete where it is (a head-sharded attention's row
               // maximum is a block of the spec's): not a local one.
               !(box.spec >= 0 && specValueOf[box.spec]))
        // Innermost axis first: the vocabulary-parallel (tensor) axis is the
        // fastest-varying one in every framework's rank order, and a folded
        // outer axis can show equal members.
        for (Attribute axis : llvm::reverse(mesh.getAxes())) {
          StringRef name = cast<StringAttr>(axis).getValue();
          SmallVector<int64_t> group = mesh.getAxisGroup(rank, {name});
          if (group.size() < 2)
            continue;
          bool differs = false;
          std::optional<Tensor<double>> mx = acrossGroup(
              r, *t, group, /*byPlace=*/true, differs,
              [](double a, double b) { return std::max(a, b); });
          if (mx && differs && matches(*mx)) {
            partialMaxOf[r] = name.str();
            break;
          }
        }
      if (!ok && consistentPartialContraction(
                     op, cast<OpResult>(r).getResultNumber()))
        ok = true;
      agrees[r] = ok;
    }
  }
  // An all-reduce over the wrong group of mesh axes: its operand, summed
  // over another group, is a block of a spec value while its result is
  // none (a gradient norm summed over too few axes). The operand agrees as
  // a partial sum over that group, and the all-reduce is blamed.
  DenseMap<Operation *, std::string> wrongGroup;
  // The operand of the same end-of-step reduction on another rank, whose
  // program may differ (another pipeline stage): the all-reduce at the same
  // place from the end among its program's all-reduces of that type.
  DenseMap<int64_t, SmallVector<AllReduceOp>> reductionsOf;
  auto reductions = [&](int64_t r) -> ArrayRef<AllReduceOp> {
    auto it = reductionsOf.find(r);
    if (it != reductionsOf.end())
      return it->second;
    SmallVector<AllReduceOp> list;
    for (auto p : stage.getPlan().getBody().front().getOps<RankProgramOp>())
      if (llvm::is_contained(p.getRanks(), r))
        p.walk([&](AllReduceOp a) { list.push_back(a); });
    return reductionsOf.try_emplace(r, std::move(list)).first->second;
  };
  auto sameReduction = [&](AllReduceOp ar, int64_t other)
      -> const Tensor<double> * {
    auto fromEnd = [&](ArrayRef<AllReduceOp> list, AllReduceOp a) {
      int64_t k = 0;
      for (AllReduceOp x : llvm::reverse(list)) {
        if (x == a)
          return k;
        k += x.getType() == ar.getType();
      }
      return int64_t(-1);
    };
    int64_t k = fromEnd(reductions(rank), ar);
    if (k < 0)
      return nullptr;
    for (AllReduceOp x : llvm::reverse(reductions(other)))
      if (x.getType() == ar.getType() && k-- == 0)
        return out.plan.lookup(other, x.getInput());
    return nullptr;
  };
  if (mesh && mesh.getAxes().size() <= 6)
    for (Operation *op : ops) {
      auto ar = dyn_cast<AllReduceOp>(op);
      if (!ar || !isLinearReduceKind(ar.getKind()) ||
          agrees.lookup(ar.getResult()) || agrees.lookup(ar.getInput()))
        continue;
      const Tensor<double> *t = out.plan.lookup(rank, ar.getInput());
      if (!t || t->data.size() > 4096)
        continue;
      ArrayRef<Attribute> axes = mesh.getAxes().getValue();
      for (unsigned set = 1; set < (1u << axes.size()); ++set) {
        SmallVector<StringRef> names;
        std::string joined;
        for (auto [i, a] : llvm::enumerate(axes))
          if (set & (1u << i)) {
            names.push_back(cast<StringAttr>(a).getValue());
            joined += (joined.empty() ? "" : ",") + names.back().str();
          }
        SmallVector<int64_t> group = mesh.getAxisGroup(rank, names);
        if (group.size() < 2)
          continue;
        bool differs = false;
        std::optional<Tensor<double>> sum = *t;
        for (int64_t other : group) {
          const Tensor<double> *o =
              other == rank ? t : sameReduction(ar, other);
          if (!o || o->data.size() != t->data.size()) {
            sum.reset();
            break;
          }
          if (other == rank)
            continue;
          for (size_t i = 0; i < t->data.size(); ++i) {
            differs |= !closeReal(o->data[i], t->data[i]);
            sum->data[i] += o->data[i];
          }
        }
        if (!sum || !differs || boxFor(*sum, carried.lookup(ar.getInput()))
                                        .spec < 0)
          continue;
        agrees[ar.getInput()] = true;
        partialOf[ar.getInput()] = joined;
        wrongGroup[op] = joined;
        break;
      }
    }
  // A term of a sum that agrees (micro-batch accumulation, a partial before
  // its reduction) agrees too: propagate back through adds and sums.
  for (Operation *op : llvm::reverse(ops))
    for (Value r : op->getResults()) {
      if (agrees.lookup(r) || r.use_empty())
        continue;
      bool term = llvm::all_of(r.getUsers(), [&](Operation *u) {
        return isa<TagOp>(u) ||
               (isa<AddOp, AllReduceOp, ReduceScatterOp>(u) &&
                llvm::all_of(u->getResults(),
                             [&](Value v) { return agrees.lookup(v); }));
      });
      if (term)
        agrees[r] = true;
    }
  // A value whose every reader gives values that relate is right for all
  // the stage can tell (a factor on the way: the loss gradient's share
  // 1/(dp·mb) before the per-token mean relates): a bug there would show
  // in a reader. Readers first, so a chain of such values is kept.
  for (Operation *op : llvm::reverse(ops))
    for (Value r : op->getResults()) {
      if (agrees.lookup(r) || r.use_empty())
        continue;
      bool seen = false, all = true;
      for (Operation *u : r.getUsers()) {
        if (isa<TagOp, OutputOp>(u))
          continue;
        for (Value v : u->getResults()) {
          if (!out.plan.lookup(rank, v))
            continue;
          seen = true;
          all &= agrees.lookup(v);
        }
      }
      if (seen && all)
        agrees[r] = true;
    }
  // Uses under which a partial sum stays one (or is reduced): a sum or
  // difference only of partial sums over the same axis.
  auto keepsPartial = [&](Operation *u) {
    if (auto ar = dyn_cast<AllReduceOp>(u))
      return isLinearReduceKind(ar.getKind());
    if (isa<ReduceScatterOp, ReduceOp, TagOp, OutputOp>(u))
      return true;
    if (!symmetry::Folder::linearOfRed(u))
      return false;
    std::optional<std::string> axis;
    for (Value v : u->getOperands()) {
      auto it = partialOf.find(v);
      if (it == partialOf.end() || (axis && *axis != it->second))
        return false;
      axis = it->second;
    }
    return true;
  };
  auto show = [&](Value v) {
    const Tensor<double> *t = out.plan.lookup(rank, v);
    std::string s = "[";
    for (size_t i = 0; t && i < t->data.size() && i < 6; ++i)
      s += (i ? ", " : "") + fmt(t->data[i]);
    if (t && t->data.size() > 6)
      s += ", ...";
    return s + "]";
  };
  // The first op, in program order, of `v`'s forward cone that a copy
  // was folded into (decision 103) while a partial of `of` over `axis`
  // flows through it: the copy stands where the missing collective
  // belongs, and it is blamed (through `folded`) with the op as its reader.
  auto foldedCopyAfter = [&](Value v, const DenseMap<Value, std::string> &of,
                             StringRef axis, StringRef what,
                             StringRef reduced, StringRef collective,
                             Operation *&blamed) {
    if (!folded || !v.getDefiningOp())
      return false;
    // Its op, its readers, theirs, and so on; for the failing value
    // (nothing after it), the ops it was computed through, nearest first.
    DenseSet<Operation *> cone{v.getDefiningOp()};
    SmallVector<Value> work{v};
    while (!work.empty())
      for (Operation *u : work.pop_back_val().getUsers())
        if (cone.insert(u).second)
          llvm::append_range(work, u->getResults());
    SmallVector<Operation *> order(ops);
    if (v == failing) {
      work.push_back(v);
      while (!work.empty())
        if (Operation *d = work.pop_back_val().getDefiningOp())
          if (cone.insert(d).second)
            llvm::append_range(work, d->getOperands());
      std::reverse(order.begin(), order.end());
    }
    auto partialHere = [&](Value x) {
      auto it = of.find(x);
      return it != of.end() && it->second == axis;
    };
    for (Operation *u : order) {
      if (!cone.count(u) || (!llvm::any_of(u->getOperands(), partialHere) &&
                             !llvm::any_of(u->getResults(), partialHere)))
        continue;
      for (auto [kind, loc] : foldedInto(u))
        if (kind == "tv.copy") {
          *folded = FoldedOp{kind.str(), loc, u};
          Operation *def = v.getDefiningOp();
          std::string at = fileLineOf(def->getLoc());
          explanation = "it passes on " + what.str() + " over mesh axis '" +
                        axis.str() + "' that '" +
                        def->getName().getStringRef().str() + "'" +
                        (at.empty() ? "" : " at " + at) + " computed, " +
                        show(v) + ", and nothing after it reduces it (" +
                        reduced.str() + " over the axis it is a block of a "
                        "spec value): " + collective.str() + " over '" +
                        axis.str() + "' belongs where the copy stands";
          blamed = u;
          return true;
        }
    }
    return false;
  };
  auto stranded = [&](Value v, StringRef where) {
    explanation = "result " + show(v) + " (a partial sum over mesh axis '" +
                  partialOf[v] +
                  "' that reaches no all-reduce: summed over the axis it is "
                  "a block of a spec value; " +
                  where.str() + ")";
    Operation *blamed = v.getDefiningOp();
    foldedCopyAfter(v, partialOf, partialOf[v], "a partial sum", "summed",
                    "an all-reduce", blamed);
    return blamed;
  };
  // What the spec reads of each spec value: when slices (and tags) are
  // its only readers, the box around the slices (a padded vocabulary's
  // logits up to the real vocabulary, decision 71); nothing when it is
  // read whole.
  using Bounds = std::pair<SmallVector<int64_t>, SmallVector<int64_t>>;
  DenseMap<Value, std::optional<Bounds>> liveOf;
  auto liveBox = [&](Value sv) -> std::optional<Bounds> {
    auto [it, fresh] = liveOf.try_emplace(sv);
    if (!fresh)
      return it->second;
    auto type = dyn_cast<RankedTensorType>(sv.getType());
    if (!type)
      return std::nullopt;
    size_t n = type.getRank();
    Bounds b{SmallVector<int64_t>(n, INT64_MAX), SmallVector<int64_t>(n, 0)};
    bool sliced = false;
    for (Operation *u : sv.getUsers()) {
      if (isa<TagOp, OutputOp>(u))
        continue;
      auto slice = dyn_cast<SliceOp>(u);
      if (!slice)
        return std::nullopt;
      ArrayRef<int64_t> start = slice.getStart();
      ArrayRef<int64_t> ext = slice.getType().getShape();
      for (size_t d = 0; d < n && d < start.size(); ++d) {
        b.first[d] = std::min(b.first[d], start[d]);
        b.second[d] = std::max(b.second[d], start[d] + ext[d]);
      }
      sliced = true;
    }
    if (!sliced ||
        (llvm::equal(b.second, type.getShape()) &&
         llvm::all_of(b.first, [](int64_t x) { return x == 0; })))
      return std::nullopt;
    return it->second = b;
  };
  // Whether `op` combines operand i's elements along its dimension d with
  // one another (a reduction's loop, a softmax's row, the loss over the
  // vocabulary), rather than element by element.
  auto combinesAlong = [](Operation *op, unsigned i, unsigned d) {
    if (isa<CrossEntropyOp, CrossEntropyGradOp>(op))
      return i == 0 && d == 1;
    auto so = dyn_cast<StructuredOpInterface>(op);
    if (!so)
      return false;
    for (unsigned k = 0; k < op->getNumResults(); ++k) {
      OpStructure st = so.getStructure(k);
      if (i >= st.operands.size() || !st.isRead(i) ||
          d >= st.operands[i].getNumResults())
        continue;
      if (auto dim = dyn_cast<AffineDimExpr>(st.operands[i].getResult(d)))
        if (st.loops[dim.getPosition()] != LoopKind::Parallel)
          return true;
    }
    return false;
  };
  for (Operation *op : ops) {
    // An op that combines elements of a spec value the spec cuts away
    // (padding) with the ones it keeps: they were to be masked or sliced
    // off first. When a copy was folded into it, the copy stands where
    // the mask belongs and is named.
    if (!isCollectiveOp(op))
      for (auto [i, v] : llvm::enumerate(op->getOperands())) {
        auto it = boxOf.find(v);
        const Tensor<double> *t = out.plan.lookup(rank, v);
        if (!t || it == boxOf.end() || it->second.spec < 0 ||
            !specValueOf[it->second.spec])
          continue;
        std::optional<Bounds> live = liveBox(specValueOf[it->second.spec]);
        const SmallVector<int64_t> &off = it->second.offsets;
        if (!live || off.size() != t->shape.size())
          continue;
        for (size_t d = 0; d < off.size() && d < live->first.size(); ++d) {
          if ((off[d] >= live->first[d] &&
               off[d] + t->shape[d] <= live->second[d]) ||
              !combinesAlong(op, i, d))
            continue;
          explanation =
              "operand " + show(v) + " holds elements " +
              std::to_string(off[d]) + ".." +
              std::to_string(off[d] + t->shape[d]) + " along dimension " +
              std::to_string(d) + " of a spec value the spec reads only at " +
              std::to_string(live->first[d]) + ".." +
              std::to_string(live->second[d]) +
              " (the rest is padding it slices off), and '" +
              op->getName().getStringRef().str() +
              "' combines them along that dimension: the padding had to be "
              "masked or sliced off first";
          if (deadRead)
            *deadRead = true;
          if (folded)
            for (auto [kind, loc] : foldedInto(op))
              if (kind == "tv.copy") {
                *folded = FoldedOp{kind.str(), loc, op};
                explanation += "; the copy stands where the mask belongs";
                break;
              }
          return op;
        }
      }
    // A partial sum read by an op not linear in it: the all-reduce is
    // missing after the op that made it. Not when the op's value relates
    // (partial sums over different groups added into one that is a
    // partial sum over their union, as a gradient norm's terms).
    if (!keepsPartial(op) &&
        !llvm::all_of(op->getResults(),
                      [&](Value r) { return agrees.lookup(r); }))
      for (Value v : op->getOperands())
        if (partialOf.count(v) && v.getDefiningOp() &&
            v.getDefiningOp()->getBlock() == op->getBlock()) {
          // Communication that moves a partial sum without reducing it is
          // the wrong collective (a gather where a reduction belongs).
          if (isCollectiveOp(op)) {
            explanation = "operand " + show(v) +
                          " (a partial sum over mesh axis '" + partialOf[v] +
                          "': summed over the axis it is a block of a spec "
                          "value) communicated without being reduced; result";
            for (Value r : op->getResults())
              explanation += " " + show(r);
            return op;
          }
          // A rank's chunk of a partial sum over the same axis: the local
          // part a reduce-scatter would keep, without the reduction.
          if (auto chunk = dyn_cast<ChunkOp>(op)) {
            explanation = "operand " + show(v) +
                          " (a partial sum over mesh axis '" + partialOf[v] +
                          "': summed over the axis it is a block of a spec "
                          "value) chunked without being reduced (a "
                          "reduce-scatter's local part without its sum); "
                          "result";
            for (Value r : op->getResults())
              explanation += " " + show(r);
            return op;
          }
          std::string where = "read by '" +
                              op->getName().getStringRef().str() + "'";
          if (std::string loc = fileLineOf(op->getLoc()); !loc.empty())
            where += " at " + loc;
          return stranded(v, where);
        }
    // A shard-local maximum read by anything but a max all-reduce or a
    // copy of it: the max all-reduce is missing after its chain.
    auto keepsMax = [](Operation *u) {
      if (auto ar = dyn_cast<AllReduceOp>(u))
        return ar.getKind() == ReduceKind::max;
      return isa<TagOp, OutputOp, CopyOp, ReshapeOp>(u);
    };
    if (!keepsMax(op))
      for (Value v : op->getOperands())
        if (partialMaxOf.count(v) && !partialOf.count(v) &&
            v.getDefiningOp() &&
            v.getDefiningOp()->getBlock() == op->getBlock()) {
          explanation = "result " + show(v) +
                        " (a shard-local maximum over mesh axis '" +
                        partialMaxOf[v] +
                        "' that reaches no max all-reduce: its maximum over "
                        "the axis is a block of a spec value; read by '" +
                        op->getName().getStringRef().str() + "')";
          Operation *blamed = v.getDefiningOp();
          foldedCopyAfter(v, partialMaxOf, partialMaxOf[v],
                          "a shard-local maximum", "its maximum",
                          "a max all-reduce", blamed);
          return blamed;
        }
    // A result nothing reads (a weight gradient outside the stage) shows
    // nothing.
    if (llvm::all_of(op->getResults(), [&](Value r) {
          return agrees.lookup(r) || r.use_empty();
        }))
      continue;
    if (!llvm::all_of(op->getOperands(), [&](Value v) {
          return !out.plan.lookup(rank, v) || agrees.lookup(v);
        }))
      continue;
    // A tensor viewed out of a flat buffer whose run starts inside a spec
    // value: the slice that cut the view out is at the wrong offset (a
    // parameter's view, an optimizer shard's bounds).
    if (auto reshape = dyn_cast<ReshapeOp>(op))
      if (auto slice = reshape.getInput().getDefiningOp<SliceOp>()) {
        auto it = boxOf.find(slice.getResult());
        if (it != boxOf.end() && it->second.flatShift > 0) {
          explanation = "result " + show(slice.getResult()) +
                        " (a run of a flat buffer that starts " +
                        std::to_string(it->second.flatShift) +
                        " element(s) into a spec value), read by '" +
                        op->getName().getStringRef().str() +
                        "' as a whole tensor " + show(op->getResult(0)) +
                        " (no block of any spec value): the slice is at the "
                        "wrong offset of the buffer";
          return slice;
        }
      }
    // Operands that are blocks from different places along one loop (a
    // mask's rows for another chunk than the scores'): the operand
    // computed from no input (a constant the plan chose) is at the wrong
    // place, and its op is blamed.
    auto so = dyn_cast<StructuredOpInterface>(op);
    if ((so || isa<ApplyMaskOp>(op)) && op->getNumResults() >= 1) {
      OpStructure st;
      if (so) {
        st = so.getStructure(0);
      } else {
        // The mask [s_q, s_k] broadcasts over the scores' leading loops.
        unsigned n = cast<RankedTensorType>(op->getResult(0).getType())
                         .getRank();
        st.loops.assign(n, LoopKind::Parallel);
        MLIRContext *ctx = op->getContext();
        st.operands.push_back(AffineMap::getMultiDimIdentityMap(n, ctx));
        st.operands.push_back(AffineMap::get(
            n, 0, {getAffineDimExpr(n - 2, ctx), getAffineDimExpr(n - 1, ctx)},
            ctx));
      }
      struct At {
        int64_t full, off;
        unsigned operand;
      };
      SmallVector<std::optional<At>> at(st.loops.size());
      std::optional<std::pair<unsigned, unsigned>> clash;
      for (auto [i, v] : llvm::enumerate(op->getOperands())) {
        if (i >= st.operands.size() || !st.isRead(i))
          continue;
        blockLoops(v, st.operands[i],
                   [&, i = (unsigned)i](unsigned l, int64_t full, int64_t off,
                                        size_t) {
                     At here{full, off, i};
                     if (!at[l])
                       at[l] = here;
                     else if (at[l]->full == here.full &&
                              at[l]->off != here.off)
                       clash = std::make_pair(at[l]->operand, i);
                   });
      }
      auto constant = [&](Value v) {
        SmallVector<Value> work{v};
        DenseSet<Value> seen;
        while (!work.empty()) {
          Value w = work.pop_back_val();
          Operation *d = w.getDefiningOp();
          if (!d || isa<InputOp, RecvOp>(d) || isCollectiveOp(d))
            return false;
          if (seen.insert(w).second)
            for (Value o : d->getOperands())
              work.push_back(o);
        }
        return true;
      };
      if (clash)
        for (unsigned i : {clash->first, clash->second}) {
          Value v = op->getOperand(i);
          if (!constant(v) || !v.getDefiningOp())
            continue;
          unsigned other = i == clash->first ? clash->second : clash->first;
          explanation = "operand " + show(v) +
                        " (computed from no input) is a block of a spec "
                        "value from another place than operand " +
                        show(op->getOperand(other)) + " along a loop of '" +
                        op->getName().getStringRef().str() +
                        "', which reads both: the right tensor from the wrong "
                        "place";
          return v.getDefiningOp();
        }
    }
    if (auto it = wrongGroup.find(op); it != wrongGroup.end()) {
      explanation = "operand " + show(op->getOperand(0)) +
                    " summed over mesh axes '" + it->second +
                    "' is a block of a spec value, but the all-reduce sums "
                    "it over another group: result " +
                    show(op->getResult(0)) + " (no block of any spec value)";
      return op;
    }
    explanation = "operands";
    for (Value v : op->getOperands())
      if (out.plan.lookup(rank, v))
        explanation += " " + show(v);
    explanation += " (inputs, or blocks of spec values); result";
    for (Value r : op->getResults())
      explanation += " " + show(r);
    explanation += " (no block of any spec value)";
    Operation *copied = nullptr;
    explanation += skippedSpecOp(stage, op, [&](Value v) -> Value {
      auto it = boxOf.find(v);
      return it == boxOf.end() || it->second.spec < 0
                 ? Value()
                 : specValueOf[it->second.spec];
    }, folded, &copied);
    if (folded && *folded)
      explanation = "its reader's " + explanation;
    // The copy, or the reader a copy was folded into.
    if (copied) {
      if (!(folded && *folded))
        explanation = "a copy where the spec computes an op; its reader's " +
                      explanation;
      return copied;
    }
    return op;
  }
  // The failing lineage names a partial sum as the whole value.
  if (failing && partialOf.count(failing))
    return stranded(failing, "the lineage names it as the whole value");
  return nullptr;
}

} // namespace mlir::tv::stagecheck

//===- SymmetryLanes.cpp - folding micro-batch lanes; the rewrite ---------===//
//
// The micro-batch half of folding a stage (Folder.h): the lanes of each rank
// program and their translated names and lineages, the plan analysis of
// sums over the micro-batches, and the rewrite of a folded stage (along an
// axis or to micro-batch 0).
//
//===----------------------------------------------------------------------===//
#include <thread>
#include "Folder.h"
#include "TrainVerify/Semantics/Semantics.h"
#include "TrainVerify/Verify/Executor.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"

#include <map>

using namespace mlir;
using namespace mlir::tv;
using namespace mlir::tv::symmetry;

//===----------------------------------------------------------------------===//
// Rewrite
//===----------------------------------------------------------------------===//

void Folder::rewrite() {
  MLIRContext *ctx = stage.getContext();
  // The spec keeps block 0 of every factored value.
  for (auto [v, fact] : facts) {
    if (fact.kind != Fact::Par)
      continue;
    auto ty = cast<RankedTensorType>(v.getType());
    SmallVector<int64_t> shape(ty.getShape());
    shape[fact.dim] /= n;
    v.setType(RankedTensorType::get(shape, ty.getElementType()));
  }
  // Lineages of coordinate 0 only (its boxes already lie in block 0).
  auto keep = [&](ArrayAttr list) {
    SmallVector<Attribute> out;
    for (Attribute a : list) {
      if (auto m = dyn_cast<LineageMapAttr>(a)) {
        // Coordinate 0's statements: the map on the ranks of coordinate 0
        // (checkLineages decided the map; its boxes there lie in block 0).
        NamedAttrList where(m.getWhere());
        where.set(axisName, IntegerAttr::get(IntegerType::get(ctx, 64), 0));
        out.push_back(LineageMapAttr::get(
            ctx, m.getSpec(), m.getBlocks(), m.getShape(), m.getScale(),
            m.getPlan(), m.getMesh(), where.getDictionary(ctx)));
        continue;
      }
      auto l = cast<LineageAttr>(a);
      // Boxes outside block 0 go (with micro-batches, groups on ranks or
      // names outside the stage have no coordinate: their box tells).
      int d = factored.lookup(l.getSpec().getValue());
      if (d >= 0 && (int)l.getRank() > d &&
          l.getLower()[d] >= blockSize.lookup(l.getSpec().getValue()))
        continue;
      auto keptRef = [&](const PlanRefView &r) { return refCoord(r) <= 0; };
      // Explicit groups stay explicit; a replicas list stays a list (a
      // replica is eight bytes, not two attributes to unique).
      SmallVector<Attribute> groups;
      const bool orbit = orbitSums.contains(l);
      for (Attribute g : l.getGroups()) {
        auto refs = cast<ArrayAttr>(g);
        if (orbit) {
          // A sum over the axis keeps its coordinate-0 terms.
          SmallVector<Attribute> terms;
          for (Attribute t : refs) {
            auto r = cast<PlanRefAttr>(t);
            if (coordOf(r.getRank()) == 0)
              terms.push_back(t);
          }
          groups.push_back(ArrayAttr::get(ctx, terms));
          continue;
        }
        if (refs.empty() || !llvm::all_of(refs, [&](Attribute a) {
              auto r = cast<PlanRefAttr>(a);
              return keptRef({r.getName(), r.getRank()});
            }))
          continue;
        groups.push_back(refs);
      }
      SmallVector<int64_t> replicas;
      StringAttr replicaName = l.getReplicaName();
      if (replicaName)
        for (int64_t r : l.getReplicaRanks())
          if (keptRef({replicaName.getValue(), r}))
            replicas.push_back(r);
      if (groups.empty() && replicas.empty())
        continue;
      out.push_back(LineageAttr::get(
          ctx, l.getSpec(), l.getLower(), l.getUpper(),
          ArrayAttr::get(ctx, groups),
          replicas.empty() ? StringAttr() : replicaName, replicas,
          l.getScale()));
    }
    return ArrayAttr::get(ctx, out);
  };
  stage.setAssumesAttr(keep(stage.getAssumes()));
  stage.setGuaranteesAttr(keep(stage.getGuarantees()));
  if (lanes)
    return rewriteLanes();
  // Ranks of coordinate 0 only.
  PlanOp plan = stage.getPlan();
  for (auto prog : llvm::make_early_inc_range(
           plan.getBody().front().getOps<RankProgramOp>())) {
    SmallVector<int64_t> ranks;
    for (int64_t r : prog.getRanks())
      if (coordOf(r) == 0)
        ranks.push_back(r);
    if (ranks.empty())
      prog.erase();
    else
      prog.setRanks(ranks);
  }
  SmallVector<Attribute> folded;
  if (ArrayAttr f = plan.getFoldedAttr())
    folded.append(f.begin(), f.end());
  folded.push_back(StringAttr::get(ctx, axisName));
  plan.setFoldedAttr(ArrayAttr::get(ctx, folded));
}

//===----------------------------------------------------------------------===//
// Micro-batch lanes
//===----------------------------------------------------------------------===//
//
// A stage's rank program holds every micro-batch's ops (`mb` = k: lane k) and
// ops no micro-batch owns (the gradient sums across micro-batches, what
// follows them, the inputs they share). Lanes play the part of coordinates:
//  (1) lane k's ops are lane 0's, in the same order, with the same op,
//      attributes and types; an operand is the corresponding lane-k value,
//      or a value no lane owns (the same one), or lane k's own input where
//      lane 0 reads its own input (the name pairs make the renaming);
//  (2) the lineages of lane k are lane 0's translated (checkLineages, with
//      a tensor's coordinate its lane);
//  (3) the spec analysis is the axis one with n = micro-batches;
//  (4) a lane value leaves its lane only through a tree of adds summing the
//      corresponding value of every lane exactly once (Red); Red values reach
//      the outputs through linear ops, and a spec output is Red exactly where
//      its plan tensors are.

int64_t Folder::refCoord(PlanRefView ref) const {
  if (!lanes)
    return coordOf(ref.rank);
  auto prog = programOf.find(ref.rank);
  if (prog == programOf.end())
    return -2; // a rank outside the stage: nothing here reads it
  auto it = laneOfName.find({prog->second, ref.name.str()});
  // A name the rank's program here does not hold: nothing here reads it.
  return it == laneOfName.end() ? -2 : it->second.first;
}

std::pair<StringRef, int64_t> Folder::refAt0(PlanRefView ref) const {
  if (!lanes)
    return {ref.name, rank0(ref.rank)};
  auto prog = programOf.find(ref.rank);
  if (prog != programOf.end()) {
    auto it = laneOfName.find({prog->second, ref.name.str()});
    if (it != laneOfName.end())
      return {it->second.second, ref.rank};
  }
  return {ref.name, ref.rank};
}

static int64_t laneAttr(Operation &op) {
  return getMicroBatch(&op).value_or(-1);
}

bool Folder::checkLanes(std::string &why) {
  for (auto prog : stage.getPlan().getBody().front().getOps<RankProgramOp>()) {
    for (int64_t r : prog.getRanks())
      programOf[r] = prog;
    Block &body = prog.getBody().front();
    std::vector<SmallVector<Operation *>> laneOps(n);
    for (Operation &op : body) {
      int64_t k = laneAttr(op);
      if (k >= n) {
        why = "an op of micro-batch " + std::to_string(k) + " of " +
              std::to_string(n);
        return false;
      }
      if (isa<InputOp, OutputOp>(op) || k < 0) {
        laneOfOp[&op] = {-1, 0};
        continue;
      }
      laneOfOp[&op] = {k, (unsigned)laneOps[k].size()};
      laneOps[k].push_back(&op);
    }
    // An input belongs to the lane of its users when they all are in one
    // lane; otherwise (weights) to none.
    DenseMap<Value, int64_t> inputLane;
    for (auto in : body.getOps<InputOp>()) {
      int64_t lane = -2;
      for (Operation *user : in.getResult().getUsers()) {
        int64_t k = laneOfOp.lookup(user).first;
        lane = lane == -2 ? k : (lane == k ? lane : -1);
      }
      inputLane[in.getResult()] = lane < 0 ? -1 : lane;
    }
    auto laneOfValue = [&](Value v) -> int64_t {
      if (auto it = inputLane.find(v); it != inputLane.end())
        return it->second;
      Operation *def = v.getDefiningOp();
      return def ? laneOfOp.lookup(def).first : -1;
    };
    for (int64_t k = 0; k < n; ++k)
      if (laneOps[k].size() != laneOps[0].size() ||
          (k > 0 && laneOps[k].empty() != laneOps[0].empty())) {
        why = "micro-batch " + std::to_string(k) + " runs " +
              std::to_string(laneOps[k].size()) + " ops, micro-batch 0 " +
              std::to_string(laneOps[0].size());
        return false;
      }
    // Names: an input of lane k is renamed to the lane-0 input it pairs
    // with; outputs likewise through the values they name.
    std::map<std::pair<int64_t, std::string>, std::string> toLane0;
    std::map<std::pair<int64_t, std::string>, std::string> fromLane0;
    auto pairNames = [&](int64_t k, StringRef nk, StringRef n0) {
      auto [a, newA] = toLane0.try_emplace({k, nk.str()}, n0.str());
      auto [b, newB] = fromLane0.try_emplace({k, n0.str()}, nk.str());
      return a->second == n0 && b->second == nk;
    };
    auto inputName = [](Value v) -> StringRef {
      auto in = v.getDefiningOp<InputOp>();
      return in ? in.getName() : StringRef();
    };
    for (int64_t k = 1; k < n; ++k)
      for (auto [i, op0] : llvm::enumerate(laneOps[0])) {
        Operation *opk = laneOps[k][i];
        std::string where = "op " + std::to_string(i) + " (" +
                            op0->getName().getStringRef().str() +
                            ") of micro-batch " + std::to_string(k);
        if (opk->getName() != op0->getName() ||
            opk->getNumOperands() != op0->getNumOperands() ||
            opk->getResultTypes() != op0->getResultTypes() ||
            opk->getPropertiesAsAttribute() != op0->getPropertiesAsAttribute() ||
            opk->getNumRegions() || op0->getNumRegions()) {
          why = where + " differs from micro-batch 0's";
          return false;
        }
        NamedAttrList a0(op0->getDiscardableAttrDictionary()),
            ak(opk->getDiscardableAttrDictionary());
        a0.erase(kMicroBatchAttrName);
        ak.erase(kMicroBatchAttrName);
        if (a0.getDictionary(stage.getContext()) !=
            ak.getDictionary(stage.getContext())) {
          why = where + " has attributes other than micro-batch 0's";
          return false;
        }
        for (auto [v0, vk] : llvm::zip(op0->getOperands(), opk->getOperands())) {
          int64_t l0 = laneOfValue(v0), lk = laneOfValue(vk);
          bool ok;
          if (l0 < 0) {
            ok = vk == v0; // shared by the lanes
          } else if (l0 != 0 || lk != k) {
            ok = false; // reads another micro-batch's value
          } else if (!inputName(v0).empty()) {
            ok = !inputName(vk).empty() &&
                 pairNames(k, inputName(vk), inputName(v0));
          } else {
            auto r0 = cast<OpResult>(v0), rk = dyn_cast<OpResult>(vk);
            ok = rk && r0.getResultNumber() == rk.getResultNumber() &&
                 laneOfOp.lookup(r0.getOwner()).second ==
                     laneOfOp.lookup(rk.getOwner()).second;
          }
          if (!ok) {
            why = where + " reads other data than micro-batch 0's";
            return false;
          }
        }
      }
    // Names of lane tensors: inputs, then outputs of lane values.
    for (auto in : body.getOps<InputOp>()) {
      int64_t k = inputLane.lookup(in.getResult());
      std::string n0 = in.getName().str();
      if (k > 0) {
        auto it = toLane0.find({k, n0});
        if (it == toLane0.end()) {
          why = "input '" + n0 + "' of micro-batch " + std::to_string(k) +
                " has no micro-batch-0 counterpart";
          return false;
        }
        n0 = it->second;
      }
      laneOfName[{prog, in.getName().str()}] = {k, n0};
    }
    // Outputs: the output of a lane-k value pairs with the output of the
    // corresponding lane-0 value (one name each: aliases are not folded).
    DenseMap<Value, SmallVector<StringRef, 1>> outputsOf;
    for (auto out : body.getOps<OutputOp>())
      outputsOf[out.getValue()].push_back(out.getName());
    for (auto out : body.getOps<OutputOp>()) {
      Value v = out.getValue();
      int64_t k = laneOfValue(v);
      std::string n0 = out.getName().str();
      if (k > 0 && inputName(v).empty()) {
        auto r = cast<OpResult>(v);
        Operation *op0 = laneOps[0][laneOfOp.lookup(r.getOwner()).second];
        Value v0 = op0->getResult(r.getResultNumber());
        auto names0 = outputsOf.lookup(v0);
        if (names0.size() != 1 || outputsOf.lookup(v).size() != 1) {
          why = "output '" + n0 + "' of micro-batch " + std::to_string(k) +
                " has no single micro-batch-0 counterpart";
          return false;
        }
        n0 = names0.front().str();
      } else if (k > 0) {
        auto it = toLane0.find({k, inputName(v).str()});
        if (it == toLane0.end() || outputsOf.lookup(v).size() != 1) {
          why = "output '" + n0 + "' of micro-batch " + std::to_string(k) +
                " has no micro-batch-0 counterpart";
          return false;
        }
        // The lane-0 input's output name.
        Value v0;
        for (auto in : body.getOps<InputOp>())
          if (in.getName() == it->second)
            v0 = in.getResult();
        auto names0 = outputsOf.lookup(v0);
        if (names0.size() != 1) {
          why = "output '" + n0 + "' of micro-batch " + std::to_string(k) +
                " has no single micro-batch-0 counterpart";
          return false;
        }
        n0 = names0.front().str();
      }
      laneOfName[{prog, out.getName().str()}] = {k, n0};
    }
    lane0Ops[prog] = laneOps[0];
    if (laneOps[0].empty()) {
      why = "no op of micro-batch 0";
      return false;
    }
  }
  // Communication pairs ops of one lane: the schedule matches sends with
  // receives, and collective members, by order, so two programs could each
  // hold isomorphic lanes yet wire micro-batch 1 of one rank to micro-batch 0
  // of another. Folding keeps lane 0 on both sides, which would hide that.
  std::optional<PlanSchedule> sched;
  {
    // Only this thread's diagnostics: stages fold in parallel.
    std::thread::id self = std::this_thread::get_id();
    ScopedDiagnosticHandler quiet(stage.getContext(), [self](Diagnostic &) {
      return success(std::this_thread::get_id() == self);
    });
    auto built = PlanSchedule::build(stage.getPlan(), /*localSteps=*/false);
    if (failed(built)) {
      why = "the plan's communication does not match up";
      return false;
    }
    sched = std::move(*built);
  }
  for (const PlanStep &step : sched->steps) {
    int64_t lane = -3;
    auto same = [&](Operation *op) {
      int64_t k = laneOfOp.lookup(op).first;
      if (lane == -3)
        lane = k;
      return lane == k;
    };
    bool ok = true;
    if (step.kind == PlanStep::P2P)
      ok = same(step.op) && same(step.sendOp);
    else if (step.kind == PlanStep::Collective)
      for (auto &[r, mop] : step.members)
        ok = ok && same(mop);
    if (!ok) {
      why = "a " + step.op->getName().getStringRef().str() +
            " connects different micro-batches";
      return false;
    }
  }
  return true;
}

bool Folder::analyzeLanePlan(std::string &why) {
  for (auto prog : stage.getPlan().getBody().front().getOps<RankProgramOp>()) {
    // A partial sum: the value of lane-0 op `slot` (result `res`) summed
    // over the lanes in `mask`.
    struct Partial {
      unsigned slot, res;
      uint64_t mask;
    };
    DenseMap<Value, Partial> partial;
    DenseMap<Value, bool> red;
    uint64_t all = n >= 64 ? ~0ull : ((1ull << n) - 1);
    if (n > 64) {
      why = "more than 64 micro-batches";
      return false;
    }
    for (Operation &op : prog.getBody().front()) {
      auto fail = [&](const std::string &w) {
        why = "plan " + op.getName().getStringRef().str() + ": " + w;
        return false;
      };
      int64_t lane = laneOfOp.lookup(&op).first;
      if (auto in = dyn_cast<InputOp>(op)) {
        planRed[{prog, in.getName().str()}] = false;
        continue;
      }
      if (isa<AccumulateOp, BufferReadOp>(op))
        return fail("in-place buffers");
      bool anyRed = llvm::any_of(op.getOperands(),
                                 [&](Value v) { return red.lookup(v); });
      bool allRed = llvm::all_of(op.getOperands(),
                                 [&](Value v) { return red.lookup(v); });
      // A lane value as a partial sum of one lane.
      auto asPartial = [&](Value v) -> std::optional<Partial> {
        if (auto it = partial.find(v); it != partial.end())
          return it->second;
        auto r = dyn_cast<OpResult>(v);
        if (!r)
          return std::nullopt;
        auto [k, pos] = laneOfOp.lookup(r.getOwner());
        if (k < 0)
          return std::nullopt;
        return Partial{pos, r.getResultNumber(), 1ull << k};
      };
      if (auto out = dyn_cast<OutputOp>(op)) {
        auto p = partial.find(out.getValue());
        if (p != partial.end() && p->second.mask != all)
          return fail("a sum over some micro-batches only reaches an output");
        planRed[{prog, out.getName().str()}] = red.lookup(out.getValue());
        continue;
      }
      if (lane >= 0) {
        if (anyRed)
          return fail("a sum over the micro-batches feeds a micro-batch's op");
        if (llvm::any_of(op.getOperands(),
                         [&](Value v) { return partial.count(v); }))
          return fail("a partial sum over micro-batches feeds a "
                      "micro-batch's op");
        continue;
      }
      // An op no micro-batch owns: lane values reach it only as the terms of
      // a sum over every micro-batch.
      bool touchesLanes = llvm::any_of(op.getOperands(), [&](Value v) {
        auto p = asPartial(v);
        return p && !red.lookup(v);
      });
      if (touchesLanes) {
        std::optional<Partial> a, b;
        if (isa<AddOp>(op)) {
          a = asPartial(op.getOperand(0));
          b = asPartial(op.getOperand(1));
        }
        if (!a || !b || a->slot != b->slot || a->res != b->res ||
            (a->mask & b->mask))
          return fail("a micro-batch's value leaves its micro-batch other "
                      "than through a sum over every micro-batch");
        Partial sum{a->slot, a->res, a->mask | b->mask};
        partial[op.getResult(0)] = sum;
        red[op.getResult(0)] = sum.mask == all;
        continue;
      }
      bool result = false;
      if (anyRed) {
        if (auto ar = dyn_cast<AllReduceOp>(op)) {
          if (!isLinearReduceKind(ar.getKind()))
            return fail("max of a sum over the micro-batches");
          result = true;
        } else if (isCollectiveOp(&op) || isa<ChunkOp>(op)) {
          auto kind = op.getAttrOfType<ReduceKindAttr>("kind");
          if (kind && !isLinearReduceKind(kind.getValue()))
            return fail("max of a sum over the micro-batches");
          result = true;
        } else if (isa<SendOp, RecvOp>(op)) {
          return fail("sends a sum over the micro-batches");
        } else {
          if (!(Folder::linearOfRed(&op) && allRed))
            return fail("a sum over the micro-batches feeds a non-linear use");
          result = true;
        }
      }
      for (Value r : op.getResults())
        red[r] = result;
    }
  }
  return checkRedMatch(why);
}

void Folder::rewriteLanes() {
  for (auto prog : llvm::make_early_inc_range(
           stage.getPlan().getBody().front().getOps<RankProgramOp>())) {
    Block &body = prog.getBody().front();
    SmallVector<Operation *> lane0 = lane0Ops.lookup(prog);
    // Sums over the micro-batches: a partial sum that holds lane 0's term
    // stands for it; the others die with the adds.
    DenseMap<Value, std::pair<unsigned, unsigned>> slotOf; // lane values
    SmallVector<Operation *> sums;
    for (Operation &op : body) {
      auto [k, pos] = laneOfOp.lookup(&op);
      if (k >= 0) {
        for (OpResult r : op.getResults())
          slotOf[r] = {pos, r.getResultNumber()};
        continue;
      }
      if (!isa<AddOp>(op))
        continue;
      auto a = slotOf.find(op.getOperand(0)), b = slotOf.find(op.getOperand(1));
      if (a == slotOf.end() || b == slotOf.end())
        continue;
      // Copied first: inserting may grow the map and move `a`'s entry.
      std::pair<unsigned, unsigned> slot = a->second;
      slotOf[op.getResult(0)] = slot;
      sums.push_back(&op);
    }
    for (Operation *sum : sums) {
      auto [pos, res] = slotOf.lookup(sum->getResult(0));
      Value term0 = lane0[pos]->getResult(res);
      // Uses outside the tree of sums read lane 0's term.
      sum->getResult(0).replaceUsesWithIf(term0, [&](OpOperand &use) {
        return !llvm::is_contained(sums, use.getOwner());
      });
    }
    // Drop the sums, the other lanes, their outputs and inputs.
    SmallVector<Operation *> dead;
    for (Operation &op : body) {
      int64_t k = laneOfOp.lookup(&op).first;
      if (k > 0 || llvm::is_contained(sums, &op))
        dead.push_back(&op);
      else if (auto out = dyn_cast<OutputOp>(op)) {
        auto it = laneOfName.find({prog, out.getName().str()});
        if (it != laneOfName.end() && it->second.first > 0)
          dead.push_back(&op);
      }
    }
    for (Operation *op : llvm::reverse(dead)) {
      op->dropAllUses();
      op->erase();
    }
    for (auto in : llvm::make_early_inc_range(body.getOps<InputOp>()))
      if (in.getResult().use_empty()) {
        auto it = laneOfName.find({prog, in.getName().str()});
        if (it != laneOfName.end() && it->second.first > 0)
          in.erase();
      }
  }
  stage.getPlan().setFoldedMicroBatches(true);
}

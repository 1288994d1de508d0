//===- Symmetry.cpp - folding a stage along a symmetric mesh axis ---------===//
//
// Let A be a mesh axis of size n. The stage is folded along A when
//  (1) ranks differing only in their A coordinate run the same rank program,
//      and every A-orbit of ranks is complete;
//  (2) the lineages of coordinate c are those of coordinate 0 translated: a
//      spec tensor is either factored along one dimension d into n equal
//      blocks (coordinate c holds boxes inside block c, at the same offsets
//      as coordinate 0 inside block 0) or not factored (identical boxes);
//  (3) in the spec, every value is Rep (no factored input reaches it), Par(d)
//      (block c of it is f(block c of the inputs), the same f for all c) or
//      Red (a plain sum over c of f(block c)), and Red values reach the
//      outputs through linear ops only;
//  (4) in the plan, the only communication along A is a sum all-reduce of a
//      per-rank value (Red), Red values reach the outputs through linear
//      ops only, and a spec output is Red exactly where its plan tensors are.
// Then the claim at coordinate c is the claim at coordinate 0 with the
// inputs of block c renamed (Par, Rep), and a Red claim sum_c f(X_c) ==
// sum_c P(X_c) for all X holds iff f == P (take all X_c equal), which is the
// claim at coordinate 0 of the folded stage. docs/symmetry.md has the details.
//
//===----------------------------------------------------------------------===//
#include "TrainVerify/Verify/Symmetry.h"
#include "TrainVerify/Verify/Executor.h"
#include "TrainVerify/Semantics/Semantics.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

#include <map>

using namespace mlir;
using namespace mlir::tv;

namespace {

using Fact = FoldFact;


ArrayRef<int64_t> shapeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}

class Folder {
public:
  Folder(StageOp stage, MeshOp mesh, int64_t axisIdx)
      : stage(stage), mesh(mesh), axisIdx(axisIdx) {
    n = mesh.getSizes()[axisIdx];
    stride = 1;
    for (int64_t i = axisIdx + 1; i < (int64_t)mesh.getSizes().size(); ++i)
      stride *= mesh.getSizes()[i];
    axisName = cast<StringAttr>(mesh.getAxes()[axisIdx]).getValue();
  }

  /// Folding the micro-batches of `stage` (the lanes of its programs).
  Folder(StageOp stage, int64_t microBatches)
      : stage(stage), axisIdx(-1), n(microBatches), stride(1),
        lanes(true) {
    axisName = "micro-batch";
  }

  bool analyze(std::string &why);
  void rewrite();

private:
  int64_t coordOf(int64_t r) const { return (r / stride) % n; }
  int64_t rank0(int64_t r) const { return r - coordOf(r) * stride; }
  /// The coordinate a lineage reference belongs to: its rank's along the
  /// axis, or its tensor's micro-batch (-1: no micro-batch owns it; -2: its
  /// rank is not in the stage).
  int64_t refCoord(PlanRefView ref) const;
  /// The reference moved to coordinate 0: (name, rank).
  std::pair<StringRef, int64_t> refAt0(PlanRefView ref) const;

  // Micro-batch lanes.
  bool checkLanes(std::string &why);
  bool analyzeLanePlan(std::string &why);
  void rewriteLanes();
  bool checkRedMatch(std::string &why);

  bool checkRanks(std::string &why);
  bool checkLineages(std::string &why);
  bool analyzeSpec(std::string &why);
  bool analyzePlan(std::string &why);

  Fact specRule(Operation *op, unsigned result, std::string &why);
  static bool linearOfRed(Operation *op);
  bool groupCrossesAxis(Operation *op);

  StageOp stage;
  MeshOp mesh;
  int64_t axisIdx, n, stride;
  StringRef axisName;
  bool lanes = false;
  /// Per (program, tensor name): its micro-batch (-1: none) and the name of
  /// the micro-batch-0 tensor it corresponds to.
  std::map<std::pair<Operation *, std::string>, std::pair<int64_t, std::string>>
      laneOfName;
  /// Per program: the micro-batch of each op (-1: none) and, for a lane op,
  /// its position in its lane.
  DenseMap<Operation *, std::pair<int64_t, unsigned>> laneOfOp;
  /// Per program: lane 0's ops in order.
  DenseMap<Operation *, SmallVector<Operation *>> lane0Ops;

  DenseMap<int64_t, RankProgramOp> programOf;
  /// Factored dimension of each spec tensor named by a lineage (-1: none),
  /// and the size of its blocks along it.
  llvm::StringMap<int> factored;
  llvm::StringMap<int64_t> blockSize;
  DenseMap<Value, Fact> facts;
  /// Spec tensors with a Red value.
  llvm::StringSet<> specRed;
  /// Plan values that are Red, per program: (program, name) -> Red?
  std::map<std::pair<Operation *, std::string>, bool> planRed;
};

//===----------------------------------------------------------------------===//
// Ranks and lineages
//===----------------------------------------------------------------------===//

bool Folder::checkRanks(std::string &why) {
  for (auto prog : stage.getPlan().getBody().front().getOps<RankProgramOp>())
    for (int64_t r : prog.getRanks())
      programOf[r] = prog;
  DenseMap<int64_t, int64_t> orbit;
  for (auto [r, prog] : programOf) {
    auto it = programOf.find(rank0(r));
    if (it == programOf.end() || it->second != prog) {
      why = "rank " + std::to_string(r) + " does not run the program of rank " +
            std::to_string(rank0(r));
      return false;
    }
    ++orbit[rank0(r)];
  }
  for (auto [r0, count] : orbit)
    if (count != n) {
      why = "only " + std::to_string(count) + " of the " + std::to_string(n) +
            " coordinates of rank " + std::to_string(r0) + " take part";
      return false;
    }
  return true;
}

bool Folder::checkLineages(std::string &why) {
  // Full extents of the spec tensors: the spec's type when it holds the
  // tensor, else the largest upper bound a lineage gives.
  llvm::StringMap<SmallVector<int64_t>> full;
  for (Operation &op : stage.getSpec().getBody().front()) {
    if (auto in = dyn_cast<InputOp>(op))
      full[in.getName()] = SmallVector<int64_t>(shapeOf(in.getResult()));
    else if (auto out = dyn_cast<OutputOp>(op))
      full[out.getName()] = SmallVector<int64_t>(shapeOf(out.getValue()));
    else if (auto tag = dyn_cast<TagOp>(op))
      full[tag.getName()] = SmallVector<int64_t>(shapeOf(tag.getValue()));
  }
  struct Sub {
    LineageAttr l;
    bool guarantee;
    int64_t coord;
    // The groups of that coordinate: the lineage's references at it.
    SmallVector<SmallVector<PlanRefView, 1>, 1> groups;
  };
  std::vector<Sub> subs;
  for (bool guarantee : {false, true}) {
    ArrayAttr list = guarantee ? stage.getGuarantees() : stage.getAssumes();
    for (Attribute a : list) {
      auto l = cast<LineageAttr>(a);
      DenseMap<int64_t, unsigned> subOf;
      bool mixed = false;
      l.walkGroups([&](size_t, ArrayRef<PlanRefView> g) {
        if (g.empty() || mixed)
          return;
        // References outside the stage (micro-batch folding only) have no
        // coordinate; the others must share one.
        int64_t c = -2;
        for (const PlanRefView &ref : g)
          if (int64_t rc = refCoord(ref); rc != -2 && c == -2)
            c = rc;
        if (c == -2)
          return;
        for (const PlanRefView &ref : g)
          if (int64_t rc = refCoord(ref); rc != -2 && rc != c)
            mixed = true;
        if (mixed)
          return;
        auto [it, inserted] = subOf.try_emplace(c, subs.size());
        if (inserted)
          subs.push_back({l, guarantee, c, {}});
        subs[it->second].groups.emplace_back(g.begin(), g.end());
      });
      if (mixed) {
        why = "a lineage group of '" + l.getSpec().getValue().str() +
              "' sums tensors of different '" + axisName.str() +
              "' coordinates";
        return false;
      }
    }
  }
  // Virtual extents for tensors the spec does not hold.
  llvm::StringSet<> held;
  for (Operation &op : stage.getSpec().getBody().front())
    if (auto in = dyn_cast<InputOp>(op))
      held.insert(in.getName());
    else if (auto out = dyn_cast<OutputOp>(op))
      held.insert(out.getName());
    else if (auto tag = dyn_cast<TagOp>(op))
      held.insert(tag.getName());
  for (const Sub &s : subs) {
    StringRef t = s.l.getSpec().getValue();
    if (held.contains(t))
      continue;
    auto &ext = full[t];
    if (ext.empty())
      ext.assign(s.l.getRank(), 0);
    if (ext.size() != s.l.getRank()) {
      why = "lineages of '" + t.str() + "' disagree on its rank";
      return false;
    }
    for (unsigned d = 0; d < s.l.getRank(); ++d)
      ext[d] = std::max(ext[d], s.l.getUpper()[d]);
  }
  // The factored dimension of each tensor: every box of coordinate c lies in
  // block c along it.
  llvm::StringMap<SmallVector<const Sub *>> subsOf;
  for (const Sub &s : subs)
    subsOf[s.l.getSpec().getValue()].push_back(&s);
  for (auto &entry : full) {
    StringRef t = entry.getKey();
    ArrayRef<int64_t> ext = entry.getValue();
    int found = -1;
    auto mine = subsOf.find(t);
    for (int d = 0; d < (int)ext.size() && found < 0; ++d) {
      if (ext[d] % n != 0 || mine == subsOf.end())
        continue;
      int64_t b = ext[d] / n;
      bool inside = true, any = false;
      for (const Sub *sp : mine->second) {
        const Sub &s = *sp;
        any = true;
        if (s.l.getRank() != ext.size()) {
          inside = false;
          break;
        }
        if (s.l.getLower()[d] < s.coord * b ||
            s.l.getUpper()[d] > (s.coord + 1) * b) {
          inside = false;
          break;
        }
      }
      if (inside && any)
        found = d;
    }
    factored[t] = found;
    if (found >= 0)
      blockSize[t] = ext[found] / n;
  }
  // Coordinate c's lineages, translated to block 0 and to the ranks of
  // coordinate 0, must be coordinate 0's.
  // Keys are integer vectors: (list, spec tensor id, shifted box, then each
  // group as its size and sorted (name id, rank at coordinate 0) pairs, the
  // groups sorted). Names are interned, so equal keys mean equal lineages.
  llvm::StringMap<int64_t> nameId;
  auto idOf = [&](StringRef name) {
    return nameId.try_emplace(name, nameId.size()).first->second;
  };
  using Key = SmallVector<int64_t, 24>;
  std::vector<std::vector<Key>> keys(n);
  for (auto &k : keys)
    k.reserve(subs.size() / n + 1);
  for (const Sub &s : subs) {
    if (s.coord < 0)
      continue; // owned by no micro-batch: compared as part of no lane
    StringRef t = s.l.getSpec().getValue();
    int d = factored.lookup(t);
    Key key{s.guarantee, idOf(t), (int64_t)s.l.getRank()};
    for (unsigned i = 0; i < s.l.getRank(); ++i) {
      int64_t shift = (int)i == d ? s.coord * (full[t][i] / n) : 0;
      key.push_back(s.l.getLower()[i] - shift);
      key.push_back(s.l.getUpper()[i] - shift);
    }
    SmallVector<Key, 1> gs;
    for (const auto &group : s.groups) {
      SmallVector<std::pair<int64_t, int64_t>, 4> refs;
      for (const PlanRefView &ref : group) {
        auto [name0, r0] = refAt0(ref);
        refs.push_back({idOf(name0), r0});
      }
      llvm::sort(refs);
      Key g{(int64_t)refs.size()};
      for (auto [a, b] : refs)
        g.push_back(a), g.push_back(b);
      gs.push_back(std::move(g));
    }
    llvm::sort(gs);
    key.push_back(gs.size());
    for (auto &g : gs)
      key.insert(key.end(), g.begin(), g.end());
    keys[s.coord].push_back(std::move(key));
  }
  for (auto &k : keys)
    llvm::sort(k);
  for (int64_t c = 1; c < n; ++c)
    if (keys[c] != keys[0]) {
      why = "the lineages of '" + axisName.str() + "' coordinate " +
            std::to_string(c) + " are not those of coordinate 0 translated";
      return false;
    }
  return true;
}

//===----------------------------------------------------------------------===//
// Spec dataflow
//===----------------------------------------------------------------------===//

bool Folder::linearOfRed(Operation *op) {
  return isa<AddOp, SubOp, ScaleOp, NegOp, CopyOp, ReshapeOp, TransposeOp>(op);
}

Fact Folder::specRule(Operation *op, unsigned result, std::string &why) {
  bool anyRed = false, anyPar = false;
  for (Value v : op->getOperands()) {
    Fact x = facts.lookup(v);
    anyRed |= x.kind == Fact::Red;
    anyPar |= x.kind == Fact::Par;
  }
  if (anyRed) {
    bool allRed = llvm::all_of(op->getOperands(), [&](Value v) {
      return facts.lookup(v).kind == Fact::Red;
    });
    if (linearOfRed(op) && allRed)
      return Fact::red();
    why = "a sum over the axis feeds a non-linear use";
    return Fact::bad();
  }
  if (!anyPar)
    return Fact::rep();
  SmallVector<Fact> operands;
  for (Value v : op->getOperands())
    operands.push_back(facts.lookup(v));
  return getFoldFact(op, operands, result, n, why);
}

bool Folder::analyzeSpec(std::string &why) {
  for (Operation &op : stage.getSpec().getBody().front()) {
    if (auto in = dyn_cast<InputOp>(op)) {
      auto it = factored.find(in.getName());
      int d = it == factored.end() ? -1 : it->second;
      facts[in.getResult()] = d >= 0 ? Fact::par(d) : Fact::rep();
      continue;
    }
    if (isa<OutputOp, TagOp>(op)) {
      StringRef name = cast<StringAttr>(op.getAttr("name")).getValue();
      Fact fv = facts.lookup(op.getOperand(0));
      auto it = factored.find(name);
      if (it == factored.end())
        continue; // no lineage in this stage
      bool ok = it->second >= 0 ? fv.isPar(it->second)
                                : fv.kind != Fact::Par;
      if (!ok) {
        why = "spec tensor '" + name.str() +
              "' is not factored the way its lineage is";
        return false;
      }
      if (fv.kind == Fact::Red)
        specRed.insert(name);
      continue;
    }
    for (unsigned i = 0; i < op.getNumResults(); ++i) {
      std::string w;
      Fact r = specRule(&op, i, w);
      if (r.kind == Fact::Bad) {
        why = op.getName().getStringRef().str() + ": " + w;
        return false;
      }
      if (r.kind == Fact::Par && shapeOf(op.getResult(i))[r.dim] % n != 0) {
        why = op.getName().getStringRef().str() +
              ": factored dimension not divisible by the axis";
        return false;
      }
      facts[op.getResult(i)] = r;
    }
  }
  return true;
}

//===----------------------------------------------------------------------===//
// Plan dataflow
//===----------------------------------------------------------------------===//

bool Folder::groupCrossesAxis(Operation *op) {
  if (auto axes = op->getAttrOfType<ArrayAttr>("axes"))
    return llvm::is_contained(axes, StringAttr::get(op->getContext(), axisName));
  if (auto groups = op->getAttrOfType<ArrayAttr>("rank_groups"))
    for (Attribute g : groups) {
      auto arr = dyn_cast<DenseI64ArrayAttr>(g);
      if (!arr || arr.empty())
        continue;
      for (int64_t r : arr.asArrayRef())
        if (coordOf(r) != coordOf(arr[0]))
          return true;
    }
  return false;
}

bool Folder::analyzePlan(std::string &why) {
  for (auto prog : stage.getPlan().getBody().front().getOps<RankProgramOp>()) {
    DenseMap<Value, bool> red;
    for (Operation &op : prog.getBody().front()) {
      auto fail = [&](const std::string &w) {
        why = "plan " + op.getName().getStringRef().str() + ": " + w;
        return false;
      };
      bool anyRed = llvm::any_of(op.getOperands(),
                                 [&](Value v) { return red.lookup(v); });
      bool allRed = llvm::all_of(op.getOperands(),
                                 [&](Value v) { return red.lookup(v); });
      if (auto in = dyn_cast<InputOp>(op)) {
        planRed[{prog, in.getName().str()}] = false;
        continue;
      }
      if (isa<OutputOp, TagOp>(op)) {
        StringRef name = cast<StringAttr>(op.getAttr("name")).getValue();
        planRed[{prog, name.str()}] = anyRed;
        continue;
      }
      if (isa<AccumulateOp, BufferReadOp>(op))
        return fail("in-place buffers");
      if (isa<SendOp, RecvOp>(op)) {
        for (int64_t r : prog.getRanks()) {
          int64_t peer = isa<SendOp>(op) ? cast<SendOp>(op).getPeerOf(r)
                                         : cast<RecvOp>(op).getPeerOf(r);
          if (peer < 0 || coordOf(peer) != coordOf(r))
            return fail("peer on another coordinate of the axis");
        }
        if (anyRed)
          return fail("sends a sum over the axis");
        continue;
      }
      bool result = false;
      if (auto ar = dyn_cast<AllReduceOp>(op)) {
        bool crosses = groupCrossesAxis(&op);
        bool sum = ar.getKind() == ReduceKind::sum;
        if (crosses) {
          // Explicit rank sets crossing the axis may pair coordinates
          // (a partial sum); the axis form is the whole axis.
          if (!ar->getAttr("axes"))
            return fail("all-reduce over explicit ranks across the axis");
          if (!sum || anyRed)
            return fail("all-reduce along the axis that is not a sum of "
                        "per-rank values");
          result = true;
        } else {
          if (anyRed && ar.getKind() == ReduceKind::max)
            return fail("max of a sum over the axis");
          result = anyRed;
        }
      } else if (isCollectiveOp(&op) || isa<ChunkOp>(op)) {
        if (groupCrossesAxis(&op))
          return fail("communication along the axis other than a sum "
                      "all-reduce");
        auto kind = op.getAttrOfType<ReduceKindAttr>("kind");
        if (anyRed && kind && kind.getValue() == ReduceKind::max)
          return fail("max of a sum over the axis");
        result = anyRed;
      } else if (anyRed) {
        if (!(Folder::linearOfRed(&op) && allRed))
          return fail("a sum over the axis feeds a non-linear use");
        result = true;
      }
      for (Value r : op.getResults())
        red[r] = result;
    }
  }
  return checkRedMatch(why);
}

bool Folder::checkRedMatch(std::string &why) {
  // A spec tensor is a sum over the axis exactly where its plan tensors are.
  for (Attribute a : stage.getGuarantees()) {
    auto l = cast<LineageAttr>(a);
    std::string err;
    bool want = specRed.contains(l.getSpec().getValue());
    l.walkRefs([&](size_t, PlanRefView ref) {
      auto it = programOf.find(ref.rank);
      if (!err.empty() || it == programOf.end())
        return;
      auto pr = planRed.find({it->second, ref.name.str()});
      bool have = pr != planRed.end() && pr->second;
      if (have != want)
        err = "'" + l.getSpec().getValue().str() + "' is " +
              (want ? "" : "not ") + "a sum over the axis in the spec but " +
              ref.name.str() + " on rank " + std::to_string(ref.rank) +
              " is " + (have ? "" : "not ") + "in the plan";
    });
    if (!err.empty()) {
      why = err;
      return false;
    }
  }
  return true;
}

bool Folder::analyze(std::string &why) {
  if (lanes)
    return checkLanes(why) && checkLineages(why) && analyzeSpec(why) &&
           analyzeLanePlan(why);
  return checkRanks(why) && checkLineages(why) && analyzeSpec(why) &&
         analyzePlan(why);
}

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
      auto l = cast<LineageAttr>(a);
      // Boxes outside block 0 go (with micro-batches, groups on ranks or
      // names outside the stage have no coordinate: their box tells).
      int d = factored.lookup(l.getSpec().getValue());
      if (d >= 0 && (int)l.getRank() > d &&
          l.getLower()[d] >= blockSize.lookup(l.getSpec().getValue()))
        continue;
      SmallVector<Attribute> groups;
      l.walkGroups([&](size_t, ArrayRef<PlanRefView> refs) {
        if (refs.empty() || !llvm::all_of(refs, [&](const PlanRefView &r) {
              return refCoord(r) <= 0;
            }))
          return;
        SmallVector<Attribute, 2> kept;
        for (const PlanRefView &r : refs)
          kept.push_back(PlanRefAttr::get(ctx, r.name, r.rank));
        groups.push_back(ArrayAttr::get(ctx, kept));
      });
      if (groups.empty())
        continue;
      out.push_back(LineageAttr::get(ctx, l.getSpec(), l.getLower(),
                                     l.getUpper(), ArrayAttr::get(ctx, groups)));
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
  auto mb = op.getAttrOfType<IntegerAttr>("mb");
  return mb ? mb.getInt() : -1;
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
        a0.erase("mb");
        ak.erase("mb");
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
    ScopedDiagnosticHandler quiet(stage.getContext(),
                                  [](Diagnostic &) { return success(); });
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
          if (ar.getKind() == ReduceKind::max)
            return fail("max of a sum over the micro-batches");
          result = true;
        } else if (isCollectiveOp(&op) || isa<ChunkOp>(op)) {
          auto kind = op.getAttrOfType<ReduceKindAttr>("kind");
          if (kind && kind.getValue() == ReduceKind::max)
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
} // namespace

bool mlir::tv::foldStageAlongAxis(StageOp stage, StringRef axis,
                                  std::string *whyNot) {
  std::string why;
  auto no = [&](std::string w) {
    if (whyNot)
      *whyNot = std::move(w);
    return false;
  };
  PlanOp plan = stage.getPlan();
  SpecOp spec = stage.getSpec();
  if (!plan || !spec)
    return no("stage has no spec or no plan");
  MeshOp mesh = plan.getMeshOp();
  if (!mesh)
    return no("plan refers to an unknown mesh");
  int64_t idx = mesh.getAxisIndex(axis);
  if (idx < 0)
    return no("'" + axis.str() + "' is not an axis of the mesh");
  if (ArrayAttr f = plan.getFoldedAttr())
    if (llvm::is_contained(f, StringAttr::get(stage.getContext(), axis)))
      return no("already folded along '" + axis.str() + "'");
  if (mesh.getSizes()[idx] < 2)
    return no("axis '" + axis.str() + "' has a single coordinate");
  Folder folder(stage, mesh, idx);
  if (!folder.analyze(why))
    return no(why);
  folder.rewrite();
  return true;
}

unsigned mlir::tv::mergeIdenticalRankPrograms(StageOp stage) {
  PlanOp plan = stage.getPlan();
  if (!plan)
    return 0;
  SmallVector<RankProgramOp> progs(
      plan.getBody().front().getOps<RankProgramOp>());
  if (progs.size() < 2)
    return 0;
  // The body's text (without the rank list) identifies the code.
  std::map<std::string, RankProgramOp> byBody;
  unsigned removed = 0;
  for (RankProgramOp prog : progs) {
    // Op names, attributes and result types (uniqued: compared by
    // identity) and each operand as (defining op's position, result number).
    std::string text;
    llvm::raw_string_ostream os(text);
    DenseMap<Operation *, unsigned> pos;
    for (Operation &op : prog.getBody().front()) {
      pos[&op] = pos.size();
      os << op.getName().getAsOpaquePointer() << " "
         << op.getRawDictionaryAttrs().getAsOpaquePointer() << " "
         << op.getPropertiesAsAttribute().getAsOpaquePointer() << " (";
      for (Value v : op.getOperands()) {
        Operation *def = v.getDefiningOp();
        auto it = def ? pos.find(def) : pos.end();
        if (it == pos.end())
          os << "ext" << v.getAsOpaquePointer() << ",";
        else
          os << it->second << "#" << cast<OpResult>(v).getResultNumber()
             << ",";
      }
      os << ")";
      for (Type t : op.getResultTypes())
        os << t.getAsOpaquePointer() << ",";
      os << (op.getNumRegions() ? " region" : "") << ";";
    }
    // Ops with regions are not expected in a rank program; compare them
    // by identity (never merged).
    if (text.find(" region") != std::string::npos)
      os << prog.getOperation();
    auto [it, inserted] = byBody.try_emplace(std::move(text), prog);
    if (inserted)
      continue;
    SmallVector<int64_t> ranks(it->second.getRanks());
    ranks.append(prog.getRanks().begin(), prog.getRanks().end());
    llvm::sort(ranks);
    it->second.setRanks(ranks);
    prog.erase();
    ++removed;
  }
  return removed;
}


bool mlir::tv::foldStageMicroBatches(StageOp stage, std::string *whyNot) {
  auto no = [&](std::string w) {
    if (whyNot)
      *whyNot = std::move(w);
    return false;
  };
  PlanOp plan = stage.getPlan();
  if (!plan || !stage.getSpec())
    return no("stage has no spec or no plan");
  if (plan.getFoldedMicroBatches())
    return no("micro-batches already folded");
  int64_t m = plan.getMicroBatches();
  if (m < 2)
    return no("a single micro-batch");
  Folder folder(stage, m);
  std::string why;
  if (!folder.analyze(why))
    return no(why);
  folder.rewrite();
  return true;
}

FailureOr<StageFold>
mlir::tv::foldStage(StageOp stage, ArrayRef<std::string> axes,
                    bool microBatches,
                    function_ref<void(const Twine &)> explain) {
  StageFold result;
  PlanOp plan = stage.getPlan();
  MeshOp mesh = plan ? plan.getMeshOp() : MeshOp();
  if (!mesh)
    return result; // the stage verifier reports it
  SmallVector<std::string> order(axes.begin(), axes.end());
  if (order.empty())
    for (Attribute a : mesh.getAxes())
      order.push_back(cast<StringAttr>(a).getValue().str());
  mergeIdenticalRankPrograms(stage);
  for (const std::string &axis : order) {
    int64_t idx = mesh.getAxisIndex(axis);
    if (idx < 0)
      return stage.emitError() << "cannot fold along '" << axis
                               << "': not an axis of mesh @"
                               << mesh.getSymName();
    std::string why;
    if (foldStageAlongAxis(stage, axis, &why))
      result.coordinates *= mesh.getSizes()[idx];
    else if (explain && mesh.getSizes()[idx] > 1)
      explain("not folded along '" + axis + "': " + why);
  }
  if (microBatches && plan.getMicroBatches() > 1) {
    std::string why;
    if (foldStageMicroBatches(stage, &why)) {
      result.microBatches = true;
      result.coordinates *= plan.getMicroBatches();
    } else if (explain) {
      explain("micro-batches not folded: " + why);
    }
  }
  return result;
}

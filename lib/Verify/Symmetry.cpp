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
#include "Folder.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

#include <map>

using namespace mlir;
using namespace mlir::tv;
using namespace mlir::tv::symmetry;

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

bool Folder::analyze(std::string &why) {
  if (lanes)
    return checkLanes(why) && checkLineages(why) && analyzeSpec(why) &&
           analyzeLanePlan(why);
  return checkRanks(why) && checkLineages(why) && analyzeSpec(why) &&
         analyzePlan(why);
}

//===----------------------------------------------------------------------===//
// Entry points
//===----------------------------------------------------------------------===//

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
  return plan ? plan.mergeIdenticalPrograms() : 0;
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

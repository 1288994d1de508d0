//===- SymmetryDataflow.cpp - fold facts of the spec and the plan ---------===//
//
// The dataflow half of folding a stage (Folder.h): which spec values are
// the same at every coordinate (Rep), blockwise (Par) or sums over the axis
// (Red), which plan values are sums over it, and the check that spec and
// plan agree on where the sums reach the lineages.
//
//===----------------------------------------------------------------------===//
#include "Folder.h"
#include "TrainVerify/Dialect/Lineage.h"
#include "TrainVerify/Semantics/Semantics.h"

using namespace mlir;
using namespace mlir::tv;
using namespace mlir::tv::symmetry;

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
          if (anyRed && !isLinearReduceKind(ar.getKind()))
            return fail("max of a sum over the axis");
          result = anyRed;
        }
      } else if (isCollectiveOp(&op) || isa<ChunkOp>(op)) {
        if (groupCrossesAxis(&op))
          return fail("communication along the axis other than a sum "
                      "all-reduce");
        auto kind = op.getAttrOfType<ReduceKindAttr>("kind");
        if (anyRed && kind && !isLinearReduceKind(kind.getValue()))
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
  // An assumption about a sum over the axis (a recomputed spec value the
  // stage assumes) ties every coordinate's inputs together: the claim at
  // coordinate c is then no renaming of coordinate 0's.
  for (Attribute a : stage.getAssumes()) {
    StringRef name = isa<LineageMapAttr>(a)
                         ? cast<LineageMapAttr>(a).getSpec().getValue()
                         : cast<LineageAttr>(a).getSpec().getValue();
    if (specRed.contains(name)) {
      why = "the stage assumes '" + name.str() +
            "', a sum over the axis in the spec";
      return false;
    }
  }
  // A spec tensor is a sum over the axis exactly where its plan tensors are.
  for (Attribute a : stage.getGuarantees()) {
    if (auto m = dyn_cast<LineageMapAttr>(a)) {
      // A map's statements are single references, none a sum over the axis
      // (checkLineages): each plan tensor is Red exactly where the spec's is.
      bool want = specRed.contains(m.getSpec().getValue());
      std::string plan = m.getPlan().getValue().str();
      // Ranks of one program answer alike: looked up once per run of them.
      Operation *lastProg = nullptr;
      bool have = false;
      (void)forEachRankWhere(
          mesh, m.getWhere(), [&](int64_t rank, ArrayRef<int64_t>) {
            auto it = programOf.find(rank);
            if (!why.empty() || it == programOf.end())
              return;
            if (it->second.getOperation() != lastProg) {
              lastProg = it->second.getOperation();
              auto pr = planRed.find({lastProg, plan});
              have = pr != planRed.end() && pr->second;
            }
            if (have != want)
              why = "'" + m.getSpec().getValue().str() + "' is " +
                    (want ? "" : "not ") +
                    "a sum over the axis in the spec but " + plan +
                    " on rank " + std::to_string(rank) + " is " +
                    (have ? "" : "not ") + "in the plan";
          });
      if (!why.empty())
        return false;
      continue;
    }
    auto l = cast<LineageAttr>(a);
    std::string err;
    bool want = specRed.contains(l.getSpec().getValue());
    // A lineage that sums its terms over the axis is the sum: the spec side
    // must be one, the terms per-rank (a term that is already a sum over
    // the axis would be counted n times, which folding would hide).
    bool orbit = orbitSums.contains(l);
    if (orbit && !want) {
      why = "'" + l.getSpec().getValue().str() +
            "' is a sum over the axis in its lineage but not in the spec";
      return false;
    }
    l.walkRefs([&](size_t, PlanRefView ref) {
      auto it = programOf.find(ref.rank);
      if (!err.empty() || it == programOf.end())
        return;
      auto pr = planRed.find({it->second, ref.name.str()});
      bool have = pr != planRed.end() && pr->second;
      if (orbit && have)
        err = "'" + l.getSpec().getValue().str() +
              "' sums over the axis in its lineage a term that is already a "
              "sum over it: " + ref.name.str() + " on rank " +
              std::to_string(ref.rank);
      else if (!orbit && have != want)
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

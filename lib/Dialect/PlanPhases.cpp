//===- PlanPhases.cpp - rank programs in phases, joined -------------------===//
//
// A rank may run several rank programs, one per phase, in phase order
// (decision 124, docs/plan-phases.md): a data-parallel group shares one
// forward and backward and differs only in its optimizer step. Every pass
// reads a plan joined: each set of ranks that runs the same programs gets
// one program, the phases' bodies one after the other, the names a later
// phase reads from an earlier one replaced by the SSA values they name.
//
//===----------------------------------------------------------------------===//
#include "TrainVerify/Dialect/TVOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/StringMap.h"
#include <map>

using namespace mlir;
using namespace mlir::tv;

bool PlanOp::hasPhases() {
  for (auto prog : getBody().front().getOps<RankProgramOp>())
    if (prog.getPhaseOrZero() != 0)
      return true;
  return false;
}

SmallVector<std::pair<SmallVector<Operation *>, SmallVector<int64_t>>>
PlanOp::phaseGroups() {
  // Each rank's programs in phase order (the verifier allows one per phase).
  std::map<int64_t, SmallVector<RankProgramOp>> byRank;
  for (auto prog : getBody().front().getOps<RankProgramOp>())
    for (int64_t r : prog.getRanks())
      byRank[r].push_back(prog);
  SmallVector<std::pair<SmallVector<Operation *>, SmallVector<int64_t>>>
      groups;
  std::map<SmallVector<Operation *>, size_t> index;
  for (auto &[rank, list] : byRank) {
    llvm::stable_sort(list, [](RankProgramOp a, RankProgramOp b) {
      return a.getPhaseOrZero() < b.getPhaseOrZero();
    });
    SmallVector<Operation *> key(list.begin(), list.end());
    auto [it, fresh] = index.try_emplace(key, groups.size());
    if (fresh)
      groups.push_back({key, {}});
    groups[it->second].second.push_back(rank);
  }
  return groups;
}

bool PlanOp::joinPhases() {
  if (!hasPhases())
    return false;
  Block &body = getBody().front();
  SmallVector<RankProgramOp> progs(body.getOps<RankProgramOp>());
  OpBuilder b(getContext());
  b.setInsertionPointToEnd(&body);
  for (auto &[key, ranks] : phaseGroups()) {
    auto joined = RankProgramOp::create(b, key.front()->getLoc(), ranks,
                                        IntegerAttr());
    Block *dst = &joined.getBody().emplaceBlock();
    OpBuilder in = OpBuilder::atBlockEnd(dst);
    // What the phases so far define, by name: the value and, for an output,
    // the cloned op (removed once a later phase reads it).
    llvm::StringMap<std::pair<Value, Operation *>> defined;
    IRMapping map;
    for (Operation *p : key) {
      llvm::StringMap<std::pair<Value, Operation *>> here;
      for (Operation &op : cast<RankProgramOp>(p).getBody().front()) {
        if (auto input = dyn_cast<InputOp>(op)) {
          auto earlier = defined.find(input.getName());
          if (earlier != defined.end()) {
            map.map(input.getResult(), earlier->second.first);
            if (Operation *link = earlier->second.second) {
              link->erase();
              earlier->second.second = nullptr;
            }
            continue;
          }
        }
        Operation *copy = in.clone(op, map);
        if (auto input = dyn_cast<InputOp>(copy))
          here[input.getName()] = {input.getResult(), nullptr};
        else if (auto tag = dyn_cast<TagOp>(copy))
          here[tag.getName()] = {tag.getValue(), nullptr};
        else if (auto out = dyn_cast<OutputOp>(copy))
          here[out.getName()] = {out.getValue(), copy};
      }
      for (auto &entry : here)
        defined.try_emplace(entry.getKey(), entry.getValue());
    }
  }
  for (RankProgramOp prog : progs)
    prog.erase();
  return true;
}

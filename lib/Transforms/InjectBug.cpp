//===- InjectBug.cpp - --tv-inject-bug ------------------------------------===//
//
// Deterministic mutations of a correct plan, one per class of real
// distributed-training bug, so that tests can check each class is caught.
// The classes live in a registry (Bugs/BugClass.h); this pass finds the
// chosen class's candidate and applies its mutation.
//
//===----------------------------------------------------------------------===//
#include "Bugs/BugClass.h"
#include "TrainVerify/Dialect/Lineage.h"
#include "TrainVerify/Transforms/Passes.h"
#include "TrainVerify/Transforms/Utils.h"

#include "mlir/IR/Builders.h"

namespace mlir::tv {
#define GEN_PASS_DEF_TVINJECTBUG
#include "TrainVerify/Transforms/Passes.h.inc"
} // namespace mlir::tv

using namespace mlir;
using namespace mlir::tv;
using namespace mlir::tv::bugs;

std::string mlir::tv::bugClassesMarkdown() { return bugs::bugClassesMarkdown(); }
std::string mlir::tv::bugClassesText() { return bugs::bugClassesText(); }

namespace {

/// Gives `rank` a program of its own (a copy of the shared one).
RankProgramOp splitOut(RankProgramOp prog, int64_t rank) {
  if (prog.getRanks().size() == 1)
    return prog;
  OpBuilder b(prog);
  b.setInsertionPointAfter(prog);
  SmallVector<int64_t> rest;
  for (int64_t r : prog.getRanks())
    if (r != rank)
      rest.push_back(r);
  auto copy = cast<RankProgramOp>(b.clone(*prog));
  copy.setRanks(ArrayRef<int64_t>{rank});
  prog.setRanks(rest);
  return copy;
}

/// Decoder layer of a name "lK.<...>", or -1.
int64_t layerOfName(StringRef name) {
  if (!name.consume_front("l"))
    return -1;
  auto [num, rest] = name.split('.');
  int64_t k;
  if (rest.empty() || num.getAsInteger(10, k))
    return -1;
  return k;
}

/// Decoder layer of every op of a program: the layer of the first tag or
/// output after it that names one (the value the op contributes to).
DenseMap<Operation *, int64_t> layersOf(RankProgramOp prog) {
  DenseMap<Operation *, int64_t> res;
  SmallVector<Operation *> pending;
  for (Operation &op : prog.getBody().front()) {
    pending.push_back(&op);
    StringRef name;
    if (auto t = dyn_cast<TagOp>(op))
      name = t.getName();
    else if (auto o = dyn_cast<OutputOp>(op))
      name = o.getName();
    int64_t k = name.empty() ? -1 : layerOfName(name);
    if (name.empty())
      continue;
    for (Operation *p : pending)
      res[p] = k;
    pending.clear();
  }
  return res;
}

struct InjectBugPass : public tv::impl::TVInjectBugBase<InjectBugPass> {
  using TVInjectBugBase::TVInjectBugBase;
  void runOnOperation() override;

  /// The k-th op of a program satisfying `pred`, or null.
  Operation *nth(RankProgramOp prog, const Candidates &pred, int k,
                 bool fromEnd = false) {
    SmallVector<Operation *> hits;
    DenseMap<Operation *, int64_t> layers;
    if (layer >= 0)
      layers = layersOf(prog);
    for (Operation &op : prog.getBody().front())
      if (pred(&op) &&
          (layer < 0 || (layers.count(&op) && layers.lookup(&op) == layer)))
        hits.push_back(&op);
    if (fromEnd)
      std::reverse(hits.begin(), hits.end());
    return k >= 0 && k < (int)hits.size() ? hits[k] : nullptr;
  }
};

} // namespace

void InjectBugPass::runOnOperation() {
  ModuleOp module = getOperation();
  const BugClass *cls = lookupBugClass(bug);
  // A phased plan is mutated joined (decision 124): a rank's op is in one
  // program.
  module.walk([](PlanOp plan) { plan.joinPhases(); });
  // Mutate the canonical form (explicit gradient versions, shared programs),
  // where every class has its natural candidates; the races of overlapped
  // communication, the program as written (its asynchronous ops).
  if ((!cls || !cls->temporal) && failed(ssaCanonicalize(module)))
    return signalPassFailure();
  // The mutation may leave the canonical form: canonicalize again later.
  module->removeAttr(kCanonicalAttrName);
  PlanOp plan = getProgramParts(module).plan;
  if (!plan) {
    module.emitError() << "tv-inject-bug needs a module with a tv.plan";
    return signalPassFailure();
  }
  if (!cls) {
    InFlightDiagnostic d = module.emitError()
                           << "unknown bug class '" << bug
                           << "'; the classes are ";
    llvm::interleaveComma(bugClasses(), d,
                          [&](const BugClass &c) { d << c.name; });
    return signalPassFailure();
  }
  BugSite site;
  site.module = module;
  site.plan = plan;
  site.mesh = plan.getMeshOp();
  site.name = cls->name;
  site.index = index;
  SmallVector<RankProgramOp> progs(plan.getBody().front().getOps<RankProgramOp>());
  llvm::sort(progs, [](RankProgramOp a, RankProgramOp b) {
    return a.getRanks().front() < b.getRanks().front();
  });
  Candidates pred = cls->candidates(site);
  // (A class that mutates every candidate takes no rank.)
  bool ranked = rank >= 0 && !cls->everyCandidate;
  auto none = [&] {
    module.emitError() << "no candidate op for bug '" << bug << "'"
                       << (ranked ? " on rank " + std::to_string(rank) : "")
                       << (layer >= 0 ? " in layer " + std::to_string(layer)
                                      : "")
                       << (cls->needs ? " (" + std::string(cls->needs) + ")"
                                      : "");
    signalPassFailure();
  };

  if (cls->everyCandidate) {
    SmallVector<std::pair<RankProgramOp, Operation *>> all;
    for (RankProgramOp p : progs)
      for (Operation &op : p.getBody().front())
        if (pred(&op))
          all.emplace_back(p, &op);
    if (all.empty())
      return none();
    for (auto [p, op] : all) {
      site.prog = p;
      site.target = op;
      site.rank = p.getRanks().front();
      if (failed(cls->mutate(site)))
        return signalPassFailure();
    }
    return;
  }

  // Find the program and op.
  for (RankProgramOp p : progs) {
    if (rank >= 0 && !llvm::is_contained(p.getRanks(), (int64_t)rank))
      continue;
    if (Operation *op = nth(p, pred, index, cls->fromEnd)) {
      site.prog = p;
      site.target = op;
      site.rank = rank >= 0 ? rank : p.getRanks().front();
      break;
    }
  }
  if (!site.target)
    return none();
  if (cls->singleRank && site.prog.getRanks().size() > 1) {
    // Re-find the op in the rank's own copy.
    unsigned pos = 0;
    for (Operation &op : site.prog.getBody().front()) {
      if (&op == site.target)
        break;
      ++pos;
    }
    site.prog = splitOut(site.prog, site.rank);
    site.target = &*std::next(site.prog.getBody().front().begin(), pos);
  }
  if (failed(cls->mutate(site)))
    signalPassFailure();
}

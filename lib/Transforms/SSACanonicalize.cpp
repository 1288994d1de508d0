//===- SSACanonicalize.cpp - --tv-ssa-canonicalize ------------------------===//
#include "TrainVerify/Transforms/Passes.h"
#include "TrainVerify/Transforms/Utils.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include <set>

namespace mlir::tv {
#define GEN_PASS_DEF_TVSSACANONICALIZE
#include "TrainVerify/Transforms/Passes.h.inc"
} // namespace mlir::tv

using namespace mlir;
using namespace mlir::tv;

/// Accumulation buffers become explicit versions: each tv.accumulate makes a
/// new value (the previous version plus the addend), each tv.buffer_read uses
/// the current version.
static LogicalResult versionBuffers(Block &block) {
  llvm::StringMap<Value> current;
  SmallVector<Operation *> dead;
  for (Operation &op : llvm::make_early_inc_range(block)) {
    if (auto acc = dyn_cast<AccumulateOp>(op)) {
      Value &cur = current[acc.getBuffer()];
      if (!cur) {
        cur = acc.getValue();
      } else {
        if (cur.getType() != acc.getValue().getType())
          return acc.emitError() << "accumulates " << acc.getValue().getType()
                                 << " into buffer '" << acc.getBuffer()
                                 << "' holding " << cur.getType();
        OpBuilder b(acc);
        cur = AddOp::create(b, acc.getLoc(), cur.getType(), cur,
                            acc.getValue());
      }
      dead.push_back(acc);
    } else if (auto read = dyn_cast<BufferReadOp>(op)) {
      Value cur = current.lookup(read.getBuffer());
      if (!cur)
        return read.emitError() << "reads buffer '" << read.getBuffer()
                                << "' before anything is accumulated into it";
      if (cur.getType() != read.getType())
        return read.emitError() << "reads buffer '" << read.getBuffer()
                                << "' as " << read.getType() << " but it holds "
                                << cur.getType();
      read.getResult().replaceAllUsesWith(cur);
      dead.push_back(read);
    }
  }
  for (Operation *op : dead)
    op->erase();
  return success();
}

/// Explicit rank sets that coincide with the grouping of some mesh axes are
/// rewritten to those axes; otherwise they are sorted.
static void canonicalizeGroup(Operation *op, MeshOp mesh) {
  auto groups = op->getAttrOfType<ArrayAttr>("rank_groups");
  if (!groups || !mesh)
    return;
  std::set<std::vector<int64_t>> sets;
  for (Attribute g : groups) {
    auto arr = cast<DenseI64ArrayAttr>(g);
    std::vector<int64_t> v(arr.asArrayRef().begin(), arr.asArrayRef().end());
    llvm::sort(v);
    sets.insert(v);
  }
  int64_t numAxes = mesh.getAxes().size();
  for (int64_t mask = 1; mask < (1 << numAxes); ++mask) {
    SmallVector<StringRef> axes;
    for (int64_t i = 0; i < numAxes; ++i)
      if (mask & (1 << i))
        axes.push_back(cast<StringAttr>(mesh.getAxes()[i]).getValue());
    bool all = true;
    std::set<std::vector<int64_t>> covered;
    for (const auto &set : sets) {
      SmallVector<int64_t> g = mesh.getAxisGroup(set.front(), axes);
      if (std::vector<int64_t>(g.begin(), g.end()) != set) {
        all = false;
        break;
      }
    }
    if (!all)
      continue;
    Builder b(op->getContext());
    op->removeAttr("rank_groups");
    op->setAttr("axes", b.getStrArrayAttr(axes));
    return;
  }
  Builder b(op->getContext());
  SmallVector<Attribute> sorted;
  for (const auto &set : sets)
    sorted.push_back(b.getDenseI64ArrayAttr(set));
  op->setAttr("rank_groups", b.getArrayAttr(sorted));
}

/// In a one-rank program, an explicit peer is rewritten as a shift along
/// the one mesh axis it differs on, or as a shift of the coordinates
/// (`peer_shift`) when it differs on several: the forms symmetric ranks
/// share.
static void canonicalizePeer(Operation *op, MeshOp mesh, int64_t rank) {
  auto peer = op->getAttrOfType<IntegerAttr>("peer");
  if (!peer || !mesh || peer.getInt() < 0 ||
      peer.getInt() >= mesh.getNumRanks())
    return;
  SmallVector<int64_t> a = mesh.getCoords(rank), b = mesh.getCoords(peer.getInt());
  int64_t axis = -1, moved = 0;
  SmallVector<int64_t> shift;
  for (size_t i = 0; i < a.size(); ++i) {
    shift.push_back(b[i] - a[i]);
    if (a[i] != b[i])
      axis = i, ++moved;
  }
  if (axis < 0)
    return;
  Builder bld(op->getContext());
  op->removeAttr("peer");
  if (moved > 1) {
    op->setAttr("peer_shift", bld.getDenseI64ArrayAttr(shift));
    return;
  }
  op->setAttr("peer_axis", mesh.getAxes()[axis]);
  op->setAttr("peer_offset", bld.getI64IntegerAttr(b[axis] - a[axis]));
}


LogicalResult mlir::tv::ssaCanonicalize(ModuleOp module) {
  // Done once per module: the pipeline's canonicalization is what partition
  // and bug injection then find (a pass that changes the programs drops the
  // mark).
  if (module->hasAttr(kCanonicalAttrName)) {
    module.walk([](PlanOp plan) { plan.joinPhases(); });
    return success();
  }
  // Rank programs in phases (decision 124) are canonicalized phase by phase
  // (a phase shared by a data-parallel group once; no buffer crosses a
  // phase), merged within their phase, then joined: everything after reads
  // one program per rank.
  SmallVector<Block *> blocks;
  module.walk([&](Operation *op) {
    if (isa<SpecOp, RankProgramOp>(op))
      blocks.push_back(&op->getRegion(0).front());
  });
  // Asynchronous ops first: a bucket written in flight is seen on the
  // named buffers, before they become versions.
  bool raced = false;
  for (Block *block : blocks)
    raced |= failed(lowerAsyncOps(*block));
  if (raced)
    return failure();
  for (Block *block : blocks)
    if (failed(versionBuffers(*block)))
      return failure();

  // Fold identities and redundant copies. Names stay attached to values
  // through tv.tag / tv.output, which are not foldable.
  // An identity folded away leaves its location with its readers, so a
  // counterexample can still name it (a copy standing where a collective
  // belongs, an exponent of one).
  for (Block *block : blocks)
    for (Operation &op : *block) {
      if (op.getNumResults() != 1 || op.use_empty())
        continue;
      SmallVector<OpFoldResult> folded;
      if (failed(op.fold(folded)) || folded.size() != 1)
        continue;
      auto v = dyn_cast<Value>(folded[0]);
      if (!v || v == op.getResult(0) || !llvm::is_contained(op.getOperands(), v))
        continue;
      for (Operation *reader : op.getResult(0).getUsers())
        foldInto(reader, &op);
    }
  GreedyRewriteConfig config;
  config.setRegionSimplificationLevel(GreedySimplifyRegionLevel::Disabled);
  for (Block *block : blocks) {
    SmallVector<Operation *> ops;
    for (Operation &op : *block)
      ops.push_back(&op);
    (void)applyOpPatternsGreedily(ops, FrozenRewritePatternSet(), config);
  }

  module.walk([&](Operation *op) {
    if (op->hasAttr("rank_groups"))
      if (auto plan = op->getParentOfType<PlanOp>())
        canonicalizeGroup(op, plan.getMeshOp());
  });
  auto canonicalizePeers = [](RankProgramOp prog) {
    if (prog.getRanks().size() != 1)
      return;
    for (Operation &op : prog.getBody().front())
      if (isa<SendOp, RecvOp>(op))
        canonicalizePeer(&op, prog->getParentOfType<PlanOp>().getMeshOp(),
                         prog.getRanks().front());
  };
  module.walk([&](PlanOp plan) {
    if (plan.hasPhases()) {
      plan.mergeIdenticalPrograms();
      plan.joinPhases();
      // A joined program runs one rank where its phases ran several: its
      // peers are canonicalized joined.
      for (auto prog : plan.getBody().front().getOps<RankProgramOp>())
        canonicalizePeers(prog);
      return;
    }
    for (auto prog : plan.getBody().front().getOps<RankProgramOp>())
      canonicalizePeers(prog);
    plan.mergeIdenticalPrograms();
  });

  // Rank programs in order of their first rank.
  module.walk([&](PlanOp plan) {
    SmallVector<RankProgramOp> progs(plan.getBody().front().getOps<RankProgramOp>());
    llvm::stable_sort(progs, [](RankProgramOp a, RankProgramOp b) {
      return a.getRanks().front() < b.getRanks().front();
    });
    for (RankProgramOp p : progs)
      p->moveBefore(&plan.getBody().front(), plan.getBody().front().end());
  });
  module->setAttr(kCanonicalAttrName, UnitAttr::get(module.getContext()));
  return success();
}

namespace {
struct SSACanonicalizePass
    : public tv::impl::TVSSACanonicalizeBase<SSACanonicalizePass> {
  void runOnOperation() override {
    PhaseTimer timer(getOperation(), "canonicalize");
    if (failed(ssaCanonicalize(getOperation())))
      signalPassFailure();
  }
};
} // namespace

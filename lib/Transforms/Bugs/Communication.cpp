//===- Communication.cpp - bugs in collectives and point-to-point ---------===//
#include "BugClass.h"

using namespace mlir;
using namespace mlir::tv;
using namespace mlir::tv::bugs;

/// The next tv.recv after `recv` in its block on the same channel (peer,
/// tag and type), or null.
static RecvOp nextSameChannel(RecvOp recv) {
  for (Operation *op = recv->getNextNode(); op; op = op->getNextNode())
    if (auto r = dyn_cast<RecvOp>(op))
      if (r.getPeerAttr() == recv.getPeerAttr() &&
          r.getPeerOffsetAttr() == recv.getPeerOffsetAttr() &&
          r.getPeerAxisAttr() == recv.getPeerAxisAttr() &&
          r.getTag() == recv.getTag() && r.getType() == recv.getType())
        return r;
  return {};
}

static Candidates sumAllReduces(const BugSite &) {
  return [](Operation *op) {
    auto ar = dyn_cast<AllReduceOp>(op);
    return ar && ar.getKind() == ReduceKind::sum;
  };
}

void mlir::tv::bugs::addCollectiveBugs(std::vector<BugClass> &out) {
  const char *family = "Collectives and point-to-point";
  out.push_back(
      {"missing-allreduce", family,
       "A sum all-reduce becomes a copy: each rank keeps its partial sum.",
       sumAllReduces, allReduceToCopy});
  out.push_back(
      {"dropped-allreduce", family,
       "A sum all-reduce's consumers read a stale tensor that nothing "
       "computes (broken dataflow, reported by the stage partition).",
       sumAllReduces, [](BugSite &s) {
         // The consumers read a stale version that nothing computes here.
         auto ar = cast<AllReduceOp>(s.target);
         Block &body = s.prog.getBody().front();
         OpBuilder ib(&body, body.begin());
         auto stale =
             InputOp::create(ib, ar.getLoc(), ar.getType(),
                             "stale.allreduce." + std::to_string(s.index));
         s.tag(stale);
         ar.getResult().replaceAllUsesWith(stale.getResult());
         ar->erase();
         return success();
       }});
  out.push_back(
      {"allreduce-as-allgather", family,
       "A sum all-reduce becomes an all-gather along dimension 0, its "
       "result sliced back to the expected shape.",
       [](const BugSite &) -> Candidates {
         return [](Operation *op) {
           auto ar = dyn_cast<AllReduceOp>(op);
           return ar && ar.getKind() == ReduceKind::sum &&
                  cast<RankedTensorType>(ar.getType()).getRank() > 0;
         };
       },
       [](BugSite &s) {
         auto ar = cast<AllReduceOp>(s.target);
         OpBuilder bld(ar);
         auto ty = cast<RankedTensorType>(ar.getType());
         int64_t n =
             s.mesh ? (int64_t)ar.getGroup(s.prog.getRanks().front()).size()
                    : 1;
         SmallVector<int64_t> shape(ty.getShape());
         shape[0] *= n;
         auto ag = AllGatherOp::create(
             bld, ar.getLoc(),
             RankedTensorType::get(shape, ty.getElementType()), ar.getInput(),
             0, DenseI64ArrayAttr(), ar.getAxesAttr(), ar.getRankGroupsAttr());
         auto sl = SliceOp::create(bld, ar.getLoc(), ty, ag,
                                   SmallVector<int64_t>(ty.getRank(), 0));
         s.tag(ag);
         ar.getResult().replaceAllUsesWith(sl.getResult());
         ar->erase();
         return success();
       }});
  out.push_back(
      {"allgather-as-allreduce", family,
       "An all-gather becomes a sum all-reduce of the rank's block placed "
       "at offset 0.",
       [](const BugSite &) -> Candidates {
         return [](Operation *op) { return isa<AllGatherOp>(op); };
       },
       [](BugSite &s) {
         auto ag = cast<AllGatherOp>(s.target);
         OpBuilder bld(ag);
         auto pad = SliceGradOp::create(
             bld, ag.getLoc(), ag.getType(), ag.getInput(),
             SmallVector<int64_t>(
                 cast<RankedTensorType>(ag.getType()).getRank(), 0));
         auto ar = AllReduceOp::create(bld, ag.getLoc(), ag.getType(), pad,
                                       ReduceKind::sum, ag.getAxesAttr(),
                                       ag.getRankGroupsAttr());
         s.tag(ar);
         ag.getResult().replaceAllUsesWith(ar.getResult());
         ag->erase();
         return success();
       }});
  BugClass bw{
      "missing-bw-reduce", family,
      "The last all-reduce of the micro-batch computation (a backward one, "
      "not an end-of-step gradient reduction) becomes a copy.",
      [](const BugSite &s) -> Candidates {
        // Plans that mark their micro-batch ops: only those are candidates.
        bool planHasMb = PlanOp(s.plan)
                             .walk([](Operation *op) {
                               return getMicroBatch(op).has_value()
                                          ? WalkResult::interrupt()
                                          : WalkResult::advance();
                             })
                             .wasInterrupted();
        return [=](Operation *op) {
          auto ar = dyn_cast<AllReduceOp>(op);
          return ar && ar.getKind() == ReduceKind::sum &&
                 !isGradReduction(ar.getResult()) &&
                 (getMicroBatch(ar).has_value() || !planHasMb) &&
                 !reachesOutput(ar.getResult(),
                                [](StringRef n) { return n == "loss"; });
        };
      },
      allReduceToCopy};
  bw.fromEnd = true;
  out.push_back(bw);
  BugClass peer{"wrong-pp-peer", family,
                "A receive names another rank than its sender (on one rank).",
                [](const BugSite &) -> Candidates {
                  return [](Operation *op) { return isa<RecvOp>(op); };
                },
                [](BugSite &s) -> LogicalResult {
                  auto recv = cast<RecvOp>(s.target);
                  int64_t right = recv.getPeerOf(s.rank);
                  int64_t n = s.mesh ? s.mesh.getNumRanks() : 1;
                  int64_t wrong = -1;
                  for (int64_t r = 0; r < n && wrong < 0; ++r)
                    if (r != right && r != s.rank)
                      wrong = r;
                  if (wrong < 0)
                    return recv.emitError()
                           << "wrong-pp-peer needs a third rank on the mesh";
                  recv->removeAttr("peer_axis");
                  recv->removeAttr("peer_offset");
                  recv->removeAttr("peer_shift");
                  recv->setAttr("peer",
                                OpBuilder(recv).getI64IntegerAttr(wrong));
                  s.tag(recv);
                  return success();
                }};
  peer.singleRank = true;
  out.push_back(peer);
  out.push_back(
      {"pp-recv-swapped", family,
       "Two received activations of one channel are consumed in each "
       "other's place: a message taken by the wrong micro-batch, or by the "
       "wrong virtual stage of an interleaved schedule.",
       [](const BugSite &) -> Candidates {
         return [](Operation *op) {
           auto recv = dyn_cast<RecvOp>(op);
           return recv && nextSameChannel(recv);
         };
       },
       [](BugSite &s) {
         auto recv = cast<RecvOp>(s.target);
         RecvOp other = nextSameChannel(recv);
         swapUses(recv.getResult(), other.getResult());
         s.tag(recv);
         s.tag(other);
         // A use of the later message now precedes it: move that recv up.
         other->moveAfter(recv);
         return success();
       }});
}

//===- Overlap.cpp - bugs of overlapped communication ---------------------===//
//
// Races of asynchronous collectives (decision 111), as Megatron-LM's
// --overlap-grad-reduce and --overlap-param-gather, FSDP's prefetch and
// DeepSpeed's overlap_comm have had them. These classes mutate the program
// as written (`temporal`): the canonical form has no asynchronous ops
// left.
//
//===----------------------------------------------------------------------===//
#include "BugClass.h"

using namespace mlir;
using namespace mlir::tv;
using namespace mlir::tv::bugs;

/// A tv.wait of an asynchronous op of kind `Launch`.
template <typename... Launch>
static bool waitOf(Operation *op) {
  auto w = dyn_cast<WaitOp>(op);
  return w && isa_and_present<Launch...>(w.getHandle().getDefiningOp());
}

/// The wait moved after the first op that reads its value, which reads
/// the in-flight result instead (the op is marked: the edit is its read).
static LogicalResult readBeforeWait(BugSite &s) {
  auto wait = cast<WaitOp>(s.target);
  Operation *first = nullptr;
  for (Operation *u : wait.getResult().getUsers())
    if (u->getBlock() == wait->getBlock() &&
        (!first || u->isBeforeInBlock(first)))
      first = u;
  if (!first)
    return wait.emitError() << s.name << ": nothing reads the waited value";
  first->replaceUsesOfWith(wait.getResult(), wait.getHandle());
  wait->moveAfter(first);
  s.tag(first);
  return success();
}

/// For an asynchronous collective: the last accumulation into a named
/// buffer that the values it sends are read from (through the packing of a
/// flat bucket), before that read; null if none.
static AccumulateOp lastAccumulateRead(Operation *launch) {
  if (!launch->hasAttr(kAsyncAttrName) || launch->getNumOperands() != 1)
    return AccumulateOp();
  Block *body = launch->getBlock();
  SmallVector<Value> work{launch->getOperand(0)};
  DenseSet<Operation *> seen;
  AccumulateOp last;
  while (!work.empty()) {
    Operation *d = work.pop_back_val().getDefiningOp();
    if (!d || d->getBlock() != body || !seen.insert(d).second)
      continue;
    if (auto read = dyn_cast<BufferReadOp>(d)) {
      for (Operation *p = read->getPrevNode(); p; p = p->getPrevNode())
        if (auto acc = dyn_cast<AccumulateOp>(p);
            acc && acc.getBuffer() == read.getBuffer()) {
          if (!last || last->isBeforeInBlock(acc))
            last = acc;
          break;
        }
      continue;
    }
    if (isa<ReshapeOp, SliceGradOp, AddOp, CopyOp>(d))
      for (Value v : d->getOperands())
        work.push_back(v);
  }
  return last;
}

void mlir::tv::bugs::addOverlapBugs(std::vector<BugClass> &out) {
  const char *family = "Overlapped communication";
  out.push_back(
      {"grad-read-before-wait", family,
       "A gradient's asynchronous all-reduce or reduce-scatter (Megatron's "
       "--overlap-grad-reduce) is read before its wait: the wait comes after "
       "the first op that uses the gradient.",
       [](const BugSite &) -> Candidates {
         return waitOf<AllReduceOp, ReduceScatterOp>;
       },
       readBeforeWait, false, false, false,
       "an asynchronous all-reduce or reduce-scatter with its tv.wait",
       /*temporal=*/true});
  out.push_back(
      {"param-used-before-gather", family,
       "A parameter's asynchronous all-gather (Megatron's "
       "--overlap-param-gather, FSDP's prefetch) is used before its wait: "
       "the layer runs on what the buffer held before.",
       [](const BugSite &) -> Candidates { return waitOf<AllGatherOp>; },
       readBeforeWait, false, false, false,
       "an asynchronous all-gather with its tv.wait", /*temporal=*/true});
  out.push_back(
      {"orphaned-handle", family,
       "An asynchronous collective or receive is never waited: its wait is "
       "dropped and its readers read the in-flight result.",
       [](const BugSite &) -> Candidates {
         return [](Operation *op) { return isa<WaitOp>(op); };
       },
       [](BugSite &s) -> LogicalResult {
         auto wait = cast<WaitOp>(s.target);
         Operation *launch = wait.getHandle().getDefiningOp();
         wait.getResult().replaceAllUsesWith(wait.getHandle());
         wait->erase();
         s.tag(launch);
         return success();
       },
       false, false, false, "an asynchronous op with its tv.wait",
       /*temporal=*/true});
  out.push_back(
      {"bucket-written-in-flight", family,
       "A gradient bucket's reduction is launched before the last gradient "
       "is accumulated into it: that accumulation lands while the "
       "reduction is in flight.",
       [](const BugSite &) -> Candidates {
         return [](Operation *op) { return (bool)lastAccumulateRead(op); };
       },
       [](BugSite &s) -> LogicalResult {
         AccumulateOp acc = lastAccumulateRead(s.target);
         if (!acc)
           return failure();
         acc->moveAfter(s.target);
         s.tag(acc);
         return success();
       },
       false, false, false,
       "an asynchronous collective of a named buffer accumulated into",
       /*temporal=*/true});
}

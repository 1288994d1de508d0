//===- ContextParallel.cpp - bugs of context parallelism ------------------===//
#include "BugClass.h"

using namespace mlir;
using namespace mlir::tv;
using namespace mlir::tv::bugs;

/// A point-to-point transfer of the context-parallel ring.
static bool onCpRing(Operation *op) {
  if (auto r = dyn_cast<RecvOp>(op))
    return r.getPeerAxis() && *r.getPeerAxis() == "cp";
  if (auto s = dyn_cast<SendOp>(op))
    return s.getPeerAxis() && *s.getPeerAxis() == "cp";
  return false;
}

/// The block a ring step held before `recv`'s: the input of the send at
/// the same position of the same exchange (the contiguous run of ring
/// transfers around `recv`).
static Value previousBlock(RecvOp recv) {
  Operation *first = recv, *last = recv;
  while (first->getPrevNode() && onCpRing(first->getPrevNode()))
    first = first->getPrevNode();
  while (last->getNextNode() && onCpRing(last->getNextNode()))
    last = last->getNextNode();
  SmallVector<RecvOp> recvs;
  SmallVector<SendOp> sends;
  for (Operation *op = first;; op = op->getNextNode()) {
    if (auto r = dyn_cast<RecvOp>(op))
      recvs.push_back(r);
    else
      sends.push_back(cast<SendOp>(op));
    if (op == last)
      break;
  }
  size_t pos = llvm::find(recvs, recv) - recvs.begin();
  return pos < sends.size() ? sends[pos].getInput() : Value();
}

/// The loss seed's scaling (a scale of an input).
static Candidates seedScales(const BugSite &) {
  return [](Operation *op) {
    auto sc = dyn_cast<ScaleOp>(op);
    return sc && sc.getInput().getDefiningOp<InputOp>();
  };
}

void mlir::tv::bugs::addContextParallelBugs(std::vector<BugClass> &out) {
  const char *family = "Context parallelism";
  out.push_back(
      {"cp-seed-unscaled", family,
       "The loss seed lacks its 1/cp, as if each rank's chunk were the "
       "whole sequence: gradients cp times the spec's.",
       seedScales, [](BugSite &s) -> LogicalResult {
         int64_t i = s.mesh ? s.mesh.getAxisIndex("cp") : -1;
         if (i < 0)
           return s.module.emitError()
                  << "bug '" << s.name << "' needs a mesh with a cp axis";
         auto sc = cast<ScaleOp>(s.target);
         sc.setScalarAttr(OpBuilder(sc).getF64FloatAttr(
             sc.getScalar().convertToDouble() * (double)s.mesh.getSizes()[i]));
         s.tag(sc);
         return success();
       }});
  out.push_back(
      {"ulysses-a2a-wrong-dim", family,
       "A DeepSpeed-Ulysses all-to-all (of q, k, v, or of the attention "
       "output, by `index`) concatenates along the last dimension instead "
       "of its own, the result viewed as the expected shape.",
       [](const BugSite &) -> Candidates {
         return [](Operation *op) {
           auto a2a = dyn_cast<AllToAllOp>(op);
           return a2a && onlyAxis(a2a.getAxes(), "cp") &&
                  a2a.getSplitDim() == 1 && a2a.getConcatDim() == 2 &&
                  cast<RankedTensorType>(a2a.getType()).getRank() == 4;
         };
       },
       [](BugSite &s) {
         auto a2a = cast<AllToAllOp>(s.target);
         OpBuilder bld(a2a);
         auto ty = cast<RankedTensorType>(a2a.getType());
         auto inTy = cast<RankedTensorType>(a2a.getInput().getType());
         SmallVector<int64_t> shape(inTy.getShape());
         int64_t n = inTy.getDimSize(1) / ty.getDimSize(1);
         shape[1] /= n;
         shape[3] *= n;
         auto bad = AllToAllOp::create(
             bld, a2a.getLoc(),
             RankedTensorType::get(shape, ty.getElementType()), a2a.getInput(),
             1, 3, a2a.getAxesAttr(), a2a.getRankGroupsAttr());
         for (NamedAttribute a : a2a->getDiscardableAttrs())
           bad->setAttr(a.getName(), a.getValue());
         auto view = ReshapeOp::create(bld, a2a.getLoc(), ty, bad.getResult());
         s.tag(bad);
         a2a.getResult().replaceAllUsesWith(view.getResult());
         a2a->erase();
         return success();
       }});
  out.push_back(
      {"cp-mask-misaligned", family,
       "All-gathered keys and values: the causal mask of a rank's block of "
       "queries is aligned to the bottom-right corner (flash-attention's "
       "convention for fewer queries than keys) instead of at the rank's "
       "block.",
       [](const BugSite &) -> Candidates {
         return [](Operation *op) {
           auto m = dyn_cast<CausalMaskOp>(op);
           return m && m.getQueryAxis();
         };
       },
       [](BugSite &s) {
         auto m = cast<CausalMaskOp>(s.target);
         m.removeQueryAxisAttr();
         s.tag(m);
         return success();
       }});
  out.push_back(
      {"ring-stale-kv", family,
       "Ring attention: a step computes with the key or value block (or "
       "gradient) it held before, the one it just passed on, instead of the "
       "one it received; the readers are marked.",
       [](const BugSite &) -> Candidates {
         return [](Operation *op) {
           auto r = dyn_cast<RecvOp>(op);
           return r && onCpRing(r) && previousBlock(r) &&
                  llvm::any_of(r->getUsers(),
                               [](Operation *u) { return !isa<SendOp>(u); });
         };
       },
       [](BugSite &s) {
         // The edit is in the readers: each now reads the stale block.
         auto r = cast<RecvOp>(s.target);
         Value stale = previousBlock(r);
         SmallVector<Operation *> readers;
         for (Operation *u : r->getUsers())
           if (!isa<SendOp>(u))
             readers.push_back(u);
         r.getResult().replaceUsesWithIf(stale, [](OpOperand &use) {
           return !isa<SendOp>(use.getOwner());
         });
         for (Operation *u : readers)
           if (!isa<TagOp, OutputOp>(u))
             s.tag(u);
         return success();
       }});
  out.push_back(
      {"ring-missing-rescale", family,
       "Ring attention's online softmax: the running sum is not rescaled by "
       "exp(m_old - m_new) when a block raises the running max.",
       [](const BugSite &) -> Candidates {
         return [](Operation *op) {
           auto mul = dyn_cast<MulOp>(op);
           if (!mul || mul.getLhs().getType() != mul.getRhs().getType())
             return false;
           auto e = mul.getLhs().getDefiningOp<ExpOp>();
           auto sub = e ? e.getInput().getDefiningOp<SubOp>() : SubOp();
           return sub && sub.getLhs().getDefiningOp<MaxOp>() &&
                  sub.getRhs().getDefiningOp<MaxOp>();
         };
       },
       [](BugSite &s) {
         // The readers of the rescaled sum now read it unrescaled: the
         // edit is theirs, and they are marked.
         auto mul = cast<MulOp>(s.target);
         SmallVector<Operation *> readers(mul->getUsers());
         mul.getResult().replaceAllUsesWith(mul.getRhs());
         mul->erase();
         for (Operation *u : readers)
           if (!isa<TagOp, OutputOp>(u))
             s.tag(u);
         return success();
       }});
  out.push_back(
      {"cp-chunks-misordered", family,
       "The load-balanced sequence order: a rank lays its two chunks (r and "
       "2cp - 1 - r) of one input (RoPE tables, tokens or labels, by "
       "`index`) out the other way around.",
       [](const BugSite &) -> Candidates {
         return [](Operation *op) {
           auto c = dyn_cast<ConcatOp>(op);
           return c && c->getNumOperands() == 2 &&
                  llvm::all_of(c->getOperands(), [](Value v) {
                    return (bool)v.getDefiningOp<InputOp>();
                  });
         };
       },
       [](BugSite &s) {
         Operation *t = s.target;
         Value x = t->getOperand(0), y = t->getOperand(1);
         t->setOperand(0, y);
         t->setOperand(1, x);
         s.tag(t);
         return success();
       }});
}

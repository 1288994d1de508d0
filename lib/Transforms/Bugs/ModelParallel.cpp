//===- ModelParallel.cpp - bugs of sequence, expert, vocabulary parallelism
//===//
#include "BugClass.h"

using namespace mlir;
using namespace mlir::tv;
using namespace mlir::tv::bugs;

/// The tp all-reduce of a sequence-parallel weight's gradient: a norm's,
/// or a linear weight's (an MoE router, MLA's down-projections).
static bool spWeightGradReduce(Operation *op, bool norms) {
  auto ar = dyn_cast<AllReduceOp>(op);
  if (!ar || !onlyAxis(ar.getAxes(), "tp"))
    return false;
  return reachesOutput(ar.getResult(), [norms](StringRef n) {
    if (norms)
      return n.ends_with("norm.grad");
    return n.ends_with(".gate.grad") || n.ends_with(".q_a_proj.grad") ||
           n.ends_with(".kv_a_proj_with_mqa.grad");
  });
}

void mlir::tv::bugs::addModelParallelBugs(std::vector<BugClass> &out) {
  const char *family = "Sequence, expert and vocabulary parallelism";
  out.push_back(
      {"sp-missing-norm-grad-reduce", family,
       "With sequence parallelism, the tp all-reduce of a norm weight's "
       "gradient becomes a copy.",
       [](const BugSite &) -> Candidates {
         return [](Operation *op) { return spWeightGradReduce(op, true); };
       },
       allReduceToCopy});
  out.push_back(
      {"sp-missing-weight-grad-reduce", family,
       "With sequence parallelism, the tp all-reduce of the gradient of a "
       "linear weight applied to the sequence chunk (an MoE router's or an "
       "MLA down-projection's) becomes a copy.",
       [](const BugSite &) -> Candidates {
         return [](Operation *op) { return spWeightGradReduce(op, false); };
       },
       allReduceToCopy});
  out.push_back(
      {"sp-moe-output-not-reduced", family,
       "With sequence parallelism, the tp reduce-scatter of the "
       "tensor-parallel experts' output (or of their input's gradient) "
       "becomes a chunk of the rank's partial sum.",
       [](const BugSite &) -> Candidates {
         return [](Operation *op) {
           auto rs = dyn_cast<ReduceScatterOp>(op);
           if (!rs || !onlyAxis(rs.getAxes(), "tp"))
             return false;
           // The experts' batch: [experts, tokens, hidden], scattered on
           // tokens.
           return cast<RankedTensorType>(rs.getType()).getRank() == 3 &&
                  rs.getDim() == 1 && !rs.getResult().use_empty() &&
                  llvm::any_of(rs.getResult().getUsers(), [](Operation *u) {
                    return isa<AllToAllOp, CombineOp, DispatchGradOp>(u);
                  });
         };
       },
       [](BugSite &s) {
         // Each rank keeps its own chunk of its partial sum.
         auto rs = cast<ReduceScatterOp>(s.target);
         OpBuilder bld(rs);
         auto chunk = ChunkOp::create(bld, rs.getLoc(), rs.getType(),
                                      rs.getInput(), rs.getDim(), IntegerAttr(),
                                      rs.getAxesAttr(), rs.getRankGroupsAttr());
         for (NamedAttribute a : rs->getDiscardableAttrs())
           chunk->setAttr(a.getName(), a.getValue());
         s.tag(chunk);
         rs.getResult().replaceAllUsesWith(chunk.getResult());
         rs->erase();
         return success();
       }});
  out.push_back(
      {"ep-double-reduce", family,
       "Expert gradients, already reduced over their expert-data-parallel "
       "group, are reduced again over the dense data-parallel group (every "
       "mesh axis but pp and tp).",
       [](const BugSite &) -> Candidates {
         return [](Operation *op) {
           auto o = dyn_cast<OutputOp>(op);
           return o && o.getName().contains(".experts.") &&
                  o.getName().ends_with(".grad");
         };
       },
       [](BugSite &s) -> LogicalResult {
         SmallVector<Attribute> axes;
         if (s.mesh)
           for (Attribute a : s.mesh.getAxes())
             if (cast<StringAttr>(a).getValue() != "pp" &&
                 cast<StringAttr>(a).getValue() != "tp")
               axes.push_back(a);
         if (axes.empty())
           return s.module.emitError() << "ep-double-reduce needs a mesh with "
                                          "a data-parallel axis";
         auto o = cast<OutputOp>(s.target);
         OpBuilder bld(o);
         auto ar = AllReduceOp::create(bld, o.getLoc(), o.getValue().getType(),
                                       o.getValue(), ReduceKind::sum,
                                       bld.getArrayAttr(axes), ArrayAttr());
         s.tag(ar);
         o->setOperand(0, ar.getResult());
         return success();
       }});
  out.push_back(
      {"expert-grad-wrong-divide", family,
       "With a per-rank mean loss, an expert's gradient is divided by its "
       "expert-data-parallel size (dp / ep) instead of dp: ep times too "
       "large.",
       [](const BugSite &) -> Candidates {
         return [](Operation *op) {
           auto sc = dyn_cast<ScaleOp>(op);
           Operation *red = sc ? sc.getInput().getDefiningOp() : nullptr;
           if (!red || !isa<AllReduceOp, ReduceScatterOp>(red))
             return false;
           // Under the distributed optimizer, the divide of the experts'
           // flat bucket (the only scaled bucket; 0 is an all-padding
           // shard).
           if (isa<ReduceScatterOp>(red) &&
               cast<RankedTensorType>(sc.getType()).getRank() == 1)
             return !sc.getScalar().isZero();
           return reachesOutput(sc.getResult(), [](StringRef n) {
             return n.contains(".experts.") && n.ends_with(".grad");
           });
         };
       },
       [](BugSite &s) -> LogicalResult {
         auto sc = cast<ScaleOp>(s.target);
         int64_t ep = 1;
         if (int64_t i = s.mesh ? s.mesh.getAxisIndex("ep") : -1; i >= 0)
           ep = s.mesh.getSizes()[i];
         if (ep < 2)
           return sc.emitError() << "expert-grad-wrong-divide needs an ep axis";
         sc.setScalarAttr(OpBuilder(sc).getF64FloatAttr(
             sc.getScalar().convertToDouble() * ep));
         s.tag(sc);
         return success();
       }});
  out.push_back(
      {"vocab-ce-missing-allreduce", family,
       "One tp all-reduce of the vocabulary-parallel cross-entropy becomes "
       "a copy: of the logits' max, of the predicted logits or of the sums "
       "of exps, by `index` in program order.",
       [](const BugSite &) -> Candidates {
         return [](Operation *op) {
           auto ar = dyn_cast<AllReduceOp>(op);
           if (!ar)
             return false;
           Operation *def = ar.getInput().getDefiningOp();
           if (!def)
             return false;
           if (isa<MaxOp, TargetLogitOp>(def))
             return true;
           auto sum = dyn_cast<SumOp>(def);
           return sum && sum->getOperand(0).getDefiningOp<ExpOp>();
         };
       },
       allReduceToCopy});
  out.push_back(
      {"padded-logits-in-loss", family,
       "A padded vocabulary's logit columns reach the softmax: the "
       "vocabulary mask is left out, or the all-gathered logits are not "
       "sliced to the real vocabulary before the loss (decision 71).",
       [](const BugSite &) -> Candidates {
         return [](Operation *op) {
           if (auto ce = dyn_cast<CrossEntropyOp>(op))
             return (bool)ce.getLogits().getDefiningOp<SliceOp>();
           auto am = dyn_cast<ApplyMaskOp>(op);
           return am && am.getMask().getDefiningOp<VocabMaskOp>();
         };
       },
       [](BugSite &s) {
         if (auto ce = dyn_cast<CrossEntropyOp>(s.target)) {
           ce->setOperand(0,
                          ce.getLogits().getDefiningOp<SliceOp>().getInput());
           s.tag(ce);
           return success();
         }
         replaceByCopy(s.target, cast<ApplyMaskOp>(s.target).getInput(),
                       s.name);
         return success();
       }});
}

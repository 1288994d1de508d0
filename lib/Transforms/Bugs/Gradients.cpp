//===- Gradients.cpp - bugs in gradient reduction and scaling -------------===//
#include "BugClass.h"

using namespace mlir;
using namespace mlir::tv;
using namespace mlir::tv::bugs;

void mlir::tv::bugs::addGradientBugs(std::vector<BugClass> &out) {
  const char *family = "Gradient reduction and scaling";
  out.push_back({"early-grad-reduce", family,
                 "The data-parallel gradient reduction runs before the last "
                 "micro-batch's gradient is added: all_reduce(a + b) becomes "
                 "all_reduce(a) + b.",
                 [](const BugSite &) -> Candidates {
                   // A gradient reduction of an accumulated (summed) gradient.
                   return [](Operation *op) {
                     auto ar = dyn_cast<AllReduceOp>(op);
                     if (!ar || !ar.getInput().getDefiningOp<AddOp>() ||
                         !isGradReduction(ar.getResult()))
                       return false;
                     // The data-parallel reduction, not sequence parallelism's
                     // tp one.
                     if (std::optional<ArrayAttr> axes = ar.getAxes())
                       for (Attribute a : *axes)
                         if (cast<StringAttr>(a).getValue() == "tp")
                           return false;
                     return true;
                   };
                 },
                 [](BugSite &s) {
                   auto ar = cast<AllReduceOp>(s.target);
                   OpBuilder bld(ar);
                   auto add = ar.getInput().getDefiningOp<AddOp>();
                   auto early = AllReduceOp::create(
                       bld, ar.getLoc(), add.getLhs().getType(), add.getLhs(),
                       ar.getKind(), ar.getAxesAttr(), ar.getRankGroupsAttr());
                   auto late = AddOp::create(bld, ar.getLoc(), ar.getType(),
                                             early, add.getRhs());
                   s.tag(early);
                   ar.getResult().replaceAllUsesWith(late.getResult());
                   ar->erase();
                   return success();
                 }});
  out.push_back(
      {"grad-scale-mb", family,
       "The loss seed's 1/(dp x micro-batches) scaling, or an accumulated "
       "gradient's, is doubled.",
       [](const BugSite &) -> Candidates {
         return [](Operation *op) {
           auto sc = dyn_cast<ScaleOp>(op);
           return sc && (sc.getInput().getDefiningOp<InputOp>() ||
                         isGradReduction(sc.getResult()));
         };
       },
       [](BugSite &s) {
         auto sc = cast<ScaleOp>(s.target);
         sc.setScalarAttr(OpBuilder(sc).getF64FloatAttr(
             sc.getScalar().convertToDouble() * 2.0));
         s.tag(sc);
         return success();
       }});
  out.push_back(
      {"double-grad-average", family,
       "A data-parallel gradient sum becomes an average although the "
       "backward already divided by dp: the gradient is divided twice.",
       [](const BugSite &) -> Candidates {
         return [](Operation *op) {
           auto ar = dyn_cast<AllReduceOp>(op);
           if (!ar || ar.getKind() != ReduceKind::sum ||
               !isGradReduction(ar.getResult()) || !ar.getAxes())
             return false;
           for (Attribute a : *ar.getAxes())
             if (cast<StringAttr>(a).getValue() == "dp" ||
                 cast<StringAttr>(a).getValue() == "edp")
               return true;
           return false;
         };
       },
       [](BugSite &s) {
         auto ar = cast<AllReduceOp>(s.target);
         ar.setKind(ReduceKind::avg);
         s.tag(ar);
         return success();
       }});
  BugClass tied{
      "tied-embedding-unsynced", family,
      "Tied embeddings under pipeline parallelism: the all-reduce of the "
      "embedding gradient over the embedding group (first and last stage) "
      "becomes a copy, on both stages.",
      [](const BugSite &) -> Candidates {
        return [](Operation *op) {
          auto ar = dyn_cast<AllReduceOp>(op);
          if (!ar)
            return false;
          // Written as rank groups; canonicalization names the group by the
          // pp axis when the pair is the whole axis (pp = 2).
          bool acrossStages = ar.getRankGroups().has_value();
          if (std::optional<ArrayAttr> axes = ar.getAxes())
            for (Attribute a : *axes)
              acrossStages |= cast<StringAttr>(a).getValue() == "pp";
          // Under the distributed optimizer it sums the embedding's bucket
          // shard, right after the data-parallel reduce-scatter.
          return acrossStages &&
                 (reachesOutput(
                      ar.getResult(),
                      [](StringRef n) { return n == "tok_embeddings.grad"; }) ||
                  isa_and_nonnull<ReduceScatterOp>(
                      ar.getInput().getDefiningOp()));
        };
      },
      [](BugSite &s) {
        replaceByCopy(s.target, cast<AllReduceOp>(s.target).getInput(), s.name);
        return success();
      }};
  // One collective on two stages' programs: a framework that never syncs
  // tied gradients leaves it out on both (left out on one only, the plan
  // deadlocks).
  tied.everyCandidate = true;
  tied.needs = "tied embeddings under pipeline parallelism";
  out.push_back(tied);
}

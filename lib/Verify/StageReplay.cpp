//===- StageReplay.cpp - replaying a stage on concrete inputs -------------===//
//
// A counterexample is reported only after the stage's spec and plan are run
// on real numbers (the solver's model or random inputs) and a lineage fails
// there; the report names the violated lineage, the op that computes the
// plan side and the values. --tv-interpret runs the same replay.
//
//===----------------------------------------------------------------------===//
#include "TrainVerify/Verify/StageVerifier.h"
#include "StageRun.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"
#include <cmath>
#include <random>

using namespace mlir;
using namespace mlir::tv;
using namespace mlir::tv::stagecheck;

namespace {

thread_local double tolerance = 1e-6;

bool close(double a, double b) {
  if (std::isnan(a) || std::isnan(b))
    return false;
  if (std::isinf(a) || std::isinf(b))
    return a == b;
  return std::fabs(a - b) <= tolerance * (1 + std::fabs(a) + std::fabs(b));
}

std::string fmt(double v) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << llvm::format("%.6g", v);
  return s;
}

/// Where a plan tensor named `name` on `rank` is computed in the stage.
Operation *definingOp(StageOp stage, int64_t rank, StringRef name) {
  for (auto prog : stage.getPlan().getBody().front().getOps<RankProgramOp>()) {
    if (!llvm::is_contained(prog.getRanks(), rank))
      continue;
    for (auto out : prog.getBody().front().getOps<OutputOp>())
      if (out.getName() == name)
        return out.getValue().getDefiningOp() ? out.getValue().getDefiningOp()
                                              : out.getOperation();
  }
  return nullptr;
}

std::string opDescription(Operation *op, int64_t rank) {
  std::string s = "'" + op->getName().getStringRef().str() + "' on rank " +
                  std::to_string(rank);
  if (std::optional<int64_t> mb = getMicroBatch(op))
    s += ", micro-batch " + std::to_string(*mb);
  if (std::optional<StringRef> src = getSourceOp(op))
    s += " (source node " + src->str() + ")";
  if (auto loc = dyn_cast<FileLineColLoc>(op->getLoc()))
    s += " at " + loc.getFilename().str() + ":" + std::to_string(loc.getLine());
  return s;
}

} // namespace

bool mlir::tv::stagecheck::replay(StageOp stage, const PlanSchedule &schedule,
                                  const std::vector<double> &assignment,
                                  std::mt19937_64 *rng, StageResult &result) {
  ConcreteDomain cd;
  size_t next = 0;
  std::vector<std::pair<std::string, double>> inputs;
  Bindings<ConcreteDomain> b{cd, [&](const std::string &name, int kind) {
                               double v;
                               if (next < assignment.size() || !rng) {
                                 v = next < assignment.size() ? assignment[next]
                                                              : 0.0;
                               } else if (kind == 2) {
                                 v = (double)((*rng)() % 2);
                               } else if (kind == 1) {
                                 v = (double)((*rng)() % 8);
                               } else {
                                 v = std::uniform_real_distribution<double>(
                                     -2.0, 2.0)(*rng);
                               }
                               if (kind)
                                 v = std::round(v);
                               ++next;
                               inputs.push_back({name, v});
                               return v;
                             },
                             {}, {}, {}};
  Outcome<double> out;
  if (failed(runStage(cd, stage, schedule, b, out))) {
    result.outcome = StageResult::Error;
    result.headline = "stage @" + stage.getSymName().str() +
                      ": concrete run failed: " + out.error;
    return false;
  }
  for (auto &[x, y] : b.extra)
    if (!close(x, y)) {
      // The assignment violates an assumption (a plan tensor assumed equal
      // to two spec slices): it shows nothing either way.
      if (rng && assignment.empty()) {
        result.outcome = StageResult::Error;
        result.headline = "stage @" + stage.getSymName().str() +
                          ": random inputs cannot satisfy the stage's "
                          "assumptions (a plan tensor is assumed equal to two "
                          "spec slices); nothing was checked";
      }
      return false;
    }
  // Find the first violated check.
  // A NaN shows nothing about the plan (a model that divides by zero,
  // excluded by assumption A4); -inf against a number is a real mismatch
  // (a missing mask).
  size_t bad = out.pairs.size();
  for (size_t i = 0; i < out.pairs.size(); ++i)
    if (!close(out.pairs[i].first, out.pairs[i].second) &&
        !std::isnan(out.pairs[i].first) && !std::isnan(out.pairs[i].second)) {
      bad = i;
      break;
    }
  if (bad == out.pairs.size())
    return false;
  const Check &c = out.checks[bad];
  auto l = cast<LineageAttr>(stage.getGuarantees()[c.lineage]);
  auto group = l.getGroupRefs()[c.group];
  Operation *def = definingOp(stage, group[0].getRank(), group[0].getName());
  result.outcome = StageResult::Counterexample;
  if (def)
    result.loc = def->getLoc();
  std::string planSide;
  for (auto [k, ref] : llvm::enumerate(group))
    planSide += (k ? " + " : "") + ("'" + ref.getName().str() + "'@" +
                                    std::to_string(ref.getRank()));
  result.headline = "stage @" + stage.getSymName().str() +
                    ": counterexample: lineage " + boxStr(l) + " = " +
                    planSide + " does not hold";
  if (def)
    result.details.push_back("computed by " +
                             opDescription(def, group[0].getRank()));
  // Values of the violated lineage: spec slice and each plan tensor.
  SmallVector<int64_t> shape = l.getSliceShape();
  const Tensor<double> *specT = out.spec.lookupNamed(-1, l.getSpec().getValue());
  std::vector<double> slice = sliceOf(*specT, l);
  unsigned shown = 0;
  SmallVector<int64_t> idx;
  for (size_t i = 0; i < out.pairs.size() && shown < 8; ++i) {
    const Check &ci = out.checks[i];
    if (ci.lineage != c.lineage || ci.group != c.group)
      continue;
    bool mismatch = !close(out.pairs[i].first, out.pairs[i].second);
    unravel(ci.element, shape, idx);
    for (size_t k = 0; k < idx.size(); ++k)
      idx[k] += l.getLower()[k];
    std::string line = "  spec '" + l.getSpec().str() + "'" + indexStr(idx) +
                       " = " + fmt(slice[ci.element]) + "; plan";
    for (PlanRefAttr ref : group) {
      const Tensor<double> *p =
          out.plan.lookupNamed(ref.getRank(), ref.getName());
      line += " '" + ref.getName().str() + "'@" + std::to_string(ref.getRank()) +
              " = " + fmt(p->data[ci.element]);
    }
    if (group.size() > 1)
      line += " (sum " + fmt(out.pairs[i].second) + ")";
    if (mismatch)
      line += "   <-- mismatch";
    result.details.push_back(line);
    ++shown;
  }
  std::string in = "inputs:";
  for (size_t i = 0; i < inputs.size() && i < 12; ++i)
    in += " " + inputs[i].first + "=" + fmt(inputs[i].second);
  if (inputs.size() > 12)
    in += " ...";
  result.details.push_back(in);
  if (ArrayAttr folded = stage.getPlan().getFoldedAttr()) {
    std::string axes;
    for (auto [k, a] : llvm::enumerate(folded))
      axes += (k ? ", '" : "'") + cast<StringAttr>(a).getValue().str() + "'";
    result.details.push_back(
        "the stage is folded along " + axes +
        " (--tv-fold-symmetry): the ranks along it run this program on "
        "translated data, so the failure shown at coordinate 0 occurs at "
        "every coordinate");
  }
  if (stage.getPlan().getFoldedMicroBatches())
    result.details.push_back(
        "the stage is folded to micro-batch 0 (--tv-fold-symmetry): every "
        "micro-batch runs these ops on its own rows, so the failure shown for "
        "micro-batch 0 occurs in every micro-batch");
  return true;
}

StageResult mlir::tv::interpretStage(StageOp stage, uint64_t seed,
                                     double tol) {
  StageResult result(stage.getLoc());
  StageSchedule analysis(stage);
  const PlanSchedule *schedule = analysis.get();
  if (!schedule) {
    result.loc = analysis.errorLoc();
    result.headline = analysis.error();
    return result;
  }
  tolerance = tol;
  std::mt19937_64 rng(seed);
  bool found = replay(stage, *schedule, {}, &rng, result);
  tolerance = 1e-6;
  if (!found) {
    if (result.outcome == StageResult::Error && !result.headline.empty())
      return result;
    result.outcome = StageResult::Proven;
  }
  return result;
}

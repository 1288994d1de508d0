//===- Interpret.cpp - --tv-interpret -------------------------------------===//
#include "TrainVerify/Dialect/InputLimits.h"
#include "TrainVerify/Dialect/Lineage.h"
#include "TrainVerify/Semantics/Domains.h"
#include "TrainVerify/Transforms/Passes.h"
#include "TrainVerify/Transforms/Utils.h"
#include "TrainVerify/Verify/StageVerifier.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/raw_ostream.h"

namespace mlir::tv {
#define GEN_PASS_DEF_TVINTERPRET
#include "TrainVerify/Transforms/Passes.h.inc"
} // namespace mlir::tv

using namespace mlir;
using namespace mlir::tv;

namespace {
struct InterpretPass : public tv::impl::TVInterpretBase<InterpretPass> {
  using TVInterpretBase::TVInterpretBase;
  void runOnOperation() override;
};
} // namespace

/// The elements of every tensor that running `root` (a stage, or a spec and
/// a plan) holds: each op result and block argument once per rank that runs
/// it (a tv.rank_program's ranks each run its ops), saturating.
static uint64_t tensorElements(Operation *root) {
  uint64_t total = 0;
  root->walk([&](Operation *op) {
    uint64_t copies = 1;
    if (auto prog = op->getParentOfType<RankProgramOp>())
      copies = std::max<uint64_t>(1, prog.getRanks().size());
    auto add = [&](Type t) {
      if (auto tt = dyn_cast<RankedTensorType>(t))
        total = satAdd(total, satMul(copies, satElements(tt.getShape())));
    };
    for (Type t : op->getResultTypes())
      add(t);
    for (Region &r : op->getRegions())
      for (Block &b : r)
        for (BlockArgument a : b.getArguments())
          add(a.getType());
  });
  return total;
}

/// Refuses up front, before anything is allocated, a run whose tensors do
/// not fit the memory budget (--max-memory-mb): `what` names the stage or
/// the whole program.
static LogicalResult checkInterpretMemory(Operation *root, Location loc,
                                          StringRef what, bool exact) {
  uint64_t elements = tensorElements(root);
  uint64_t perElement = exact ? sizeof(ExactValue) : sizeof(double);
  uint64_t need = satMul(elements, perElement);
  if (!exceedsMemoryBudget(need))
    return success();
  emitError(loc) << "tv-interpret: " << what << " needs about "
                 << bytesText(need) << " for its tensors (" << elements
                 << " elements x " << perElement << " bytes as "
                 << (exact ? "exact values" : "doubles")
                 << "), over the memory budget of " << memoryBudgetText()
                 << "; refusing before allocating. Interpret the "
                    "shape-reduced stages instead (--tv-stage-partition "
                    "--tv-shape-reduce --tv-interpret), or raise "
                    "--max-memory-mb";
  return failure();
}

void InterpretPass::runOnOperation() {
  ModuleOp module = getOperation();
  SmallVector<StageOp> stages(module.getOps<StageOp>());
  StageOp temp;
  if (stages.empty()) {
    // Whole programs: one pseudo-stage that assumes the lineages of the spec
    // inputs and checks every other lineage.
    auto [mesh, spec, plan] = getProgramParts(module);
    (void)mesh;
    if (!spec || !plan) {
      module.emitError() << "nothing to interpret: no tv.stage and no "
                            "tv.spec / tv.plan pair";
      return signalPassFailure();
    }
    FailureOr<std::vector<LineageEntry>> all = collectLineages(module);
    if (failed(all) || failed(checkLineages(module, *all)))
      return signalPassFailure();
    if (failed(checkInterpretMemory(module, module.getLoc(),
                                    "the whole program (spec and plan)",
                                    exact)))
      return signalPassFailure();
    OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
    temp = buildWholeProgramStage(b, spec, plan, *all, module.getLoc());
    stages.push_back(temp);
  } else {
    for (StageOp stage : stages)
      if (failed(checkInterpretMemory(stage, stage.getLoc(),
                                      ("stage @" + stage.getSymName()).str(),
                                      exact)))
        return signalPassFailure();
  }
  size_t failures = 0, checked = 0, counts[3] = {0, 0, 0}, nans = 0;
  for (StageOp stage : stages) {
    StageResult r = interpretStage(stage, seed, tolerance, exact);
    checked += stage.getGuarantees().size();
    counts[0] += r.exactElements;
    counts[1] += r.congruentElements;
    counts[2] += r.approximateElements;
    nans += r.nanElements;
    if (r.outcome == StageResult::Proven)
      continue;
    ++failures;
    InFlightDiagnostic d = emitError(r.loc) << "tv-interpret: " << r.headline;
    for (const std::string &line : r.details)
      d.attachNote(r.loc) << line;
  }
  if (temp)
    temp.erase();
  if (failures) {
    toolVerdict() = Verdict::Wrong;
    llvm::errs() << "tv-interpret: " << failures << " stage(s) fail on seed "
                 << seed << "\n";
    return signalPassFailure();
  }
  llvm::errs() << "tv-interpret: " << checked << " lineage(s) hold on seed "
               << seed;
  if (exact)
    llvm::errs() << " (elements: " << counts[0] << " exactly, " << counts[1]
                 << " by congruence, " << counts[2]
                 << " only within the tolerance)";
  // Not a check: say so rather than count it as one.
  if (nans)
    llvm::errs() << "; " << nans
                 << " element(s) not compared (NaN on a side: a division by "
                    "zero or an overflow on these inputs)";
  llvm::errs() << "\n";
  markAllAnalysesPreserved();
}

StageOp mlir::tv::buildWholeProgramStage(OpBuilder &b, SpecOp spec,
                                         PlanOp plan,
                                         ArrayRef<LineageEntry> lineages,
                                         Location loc) {
  llvm::StringSet<> inputs;
  for (auto in : spec.getBody().front().getOps<InputOp>())
    inputs.insert(in.getName());
  SmallVector<Attribute> assumes, guarantees;
  for (const LineageEntry &lin : lineages)
    (inputs.contains(lin.attr.getSpec().getValue()) ? assumes : guarantees)
        .push_back(lin.attr);
  auto stage = StageOp::create(b, loc, "whole_program",
                               b.getArrayAttr(assumes),
                               b.getArrayAttr(guarantees),
                               /*full_guarantees=*/ArrayAttr());
  Block *body = new Block();
  stage.getBody().push_back(body);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(body);
  b.clone(*spec);
  b.clone(*plan);
  return stage;
}


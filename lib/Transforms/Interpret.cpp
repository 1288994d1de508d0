//===- Interpret.cpp - --tv-interpret -------------------------------------===//
#include "TrainVerify/Dialect/InputLimits.h"
#include "TrainVerify/Dialect/Lineage.h"
#include "TrainVerify/Semantics/Domains.h"
#include "TrainVerify/Transforms/Passes.h"
#include "TrainVerify/Transforms/Utils.h"
#include "TrainVerify/Verify/StageVerifier.h"

#include "mlir/IR/Builders.h"
#include "mlir/Pass/PassManager.h"
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

/// Refuses up front, before anything is allocated, a run whose tensors do
/// not fit the memory budget (--max-memory-mb): `what` names the stage or
/// the whole program.
static LogicalResult checkInterpretMemory(Operation *root, Location loc,
                                          StringRef what, bool exact) {
  uint64_t elements = programElements(root);
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

namespace {
/// What interpreting a list of stages found.
struct Tally {
  size_t failures = 0, checked = 0, counts[3] = {0, 0, 0}, nans = 0;
};
} // namespace

/// Interprets every stage of `stages` on `seed`, reporting each failing one.
static Tally interpretStages(ArrayRef<StageOp> stages, uint64_t seed,
                             double tolerance, bool exact) {
  Tally t;
  for (StageOp stage : stages) {
    StageResult r = interpretStage(stage, seed, tolerance, exact);
    t.checked += stage.getGuarantees().size();
    t.counts[0] += r.exactElements;
    t.counts[1] += r.congruentElements;
    t.counts[2] += r.approximateElements;
    t.nans += r.nanElements;
    if (r.outcome == StageResult::Proven)
      continue;
    ++t.failures;
    InFlightDiagnostic d = emitError(r.loc) << "tv-interpret: " << r.headline;
    for (const std::string &line : r.details)
      d.attachNote(r.loc) << line;
  }
  return t;
}

/// A copy of the whole program `module` cut into stages as the verifier
/// cuts it (--tv-ssa-canonicalize --tv-stage-partition, no tv.source); null,
/// with the partitioner's first diagnostic in `why`, when it does not cut.
/// The verdict the partitioner may set is the caller's to keep or not.
static OwningOpRef<ModuleOp> partitionedCopy(ModuleOp module,
                                             std::string &why) {
  OwningOpRef<ModuleOp> copy(cast<ModuleOp>(module->clone()));
  PassManager pm(module.getContext(), ModuleOp::getOperationName());
  pm.addPass(createTVSSACanonicalize());
  TVStagePartitionOptions options;
  options.sourceElements = 0;
  pm.addPass(createTVStagePartition(options));
  ScopedDiagnosticHandler capture(module.getContext(), [&](Diagnostic &d) {
    if (why.empty() && d.getSeverity() == DiagnosticSeverity::Error)
      why = d.str();
    return success();
  });
  if (failed(pm.run(*copy)))
    return nullptr;
  return copy;
}

void InterpretPass::runOnOperation() {
  ModuleOp module = getOperation();
  // A phased plan runs its phases in order: joined (decision 124).
  module.walk([](PlanOp plan) { plan.joinPhases(); });
  if (failed(expandLineageMaps(module)))
    return signalPassFailure();
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
  Tally t = interpretStages(stages, seed, tolerance, exact);
  if (temp)
    temp.erase();
  // A whole program that holds is checked once more stage by stage
  // (decision 88): through the layers its tensors grow (a norm's input to a
  // mean square of 1e3), and a change such as a norm's eps falls under the
  // tolerance; each stage starts from fresh inputs of size O(1), so every
  // lineage-carrying tensor is compared where it is computed, at its own
  // scale.
  std::optional<Tally> staged;
  size_t stageCount = 0;
  if (temp && !t.failures) {
    std::string why;
    Verdict before = toolVerdict();
    OwningOpRef<ModuleOp> cut = partitionedCopy(module, why);
    toolVerdict() = before;
    if (!cut) {
      module.emitWarning()
          << "tv-interpret: the program does not partition into stages ("
          << why << "); only the whole program was checked";
    } else {
      SmallVector<StageOp> parts(cut->getOps<StageOp>());
      for (StageOp stage : parts)
        if (failed(checkInterpretMemory(
                stage, stage.getLoc(), ("stage @" + stage.getSymName()).str(),
                exact)))
          return signalPassFailure();
      stageCount = parts.size();
      staged = interpretStages(parts, seed, tolerance, exact);
    }
  }
  if (t.failures) {
    toolVerdict() = Verdict::Wrong;
    llvm::errs() << "tv-interpret: " << t.failures
                 << " stage(s) fail on seed " << seed << "\n";
    return signalPassFailure();
  }
  llvm::errs() << "tv-interpret: " << t.checked << " lineage(s) hold on seed "
               << seed;
  if (exact)
    llvm::errs() << " (elements: " << t.counts[0] << " exactly, "
                 << t.counts[1] << " by congruence, " << t.counts[2]
                 << " only within the tolerance)";
  // Not a check: say so rather than count it as one.
  if (t.nans)
    llvm::errs() << "; " << t.nans
                 << " element(s) not compared (NaN on a side: a division by "
                    "zero or an overflow on these inputs)";
  llvm::errs() << "\n";
  if (staged && staged->failures) {
    // Unknown, as the verifier says of a stage whose counterexample the
    // whole program does not show (decision 68): the difference is too
    // small to show through the layers, or the stage takes as free assumed
    // tensors that are related outside it.
    toolVerdict() = Verdict::Unknown;
    llvm::errs() << "tv-interpret: but stage by stage, " << staged->failures
                 << " of " << stageCount << " stage(s) fail on seed " << seed
                 << " from fresh inputs of their own: a difference too small "
                    "to show in the whole program, or assumed tensors "
                    "related outside the stage\n";
    return signalPassFailure();
  }
  if (staged)
    llvm::errs() << "tv-interpret: stage by stage, " << staged->checked
                 << " lineage(s) of " << stageCount
                 << " stage(s) hold on seed " << seed << "\n";
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


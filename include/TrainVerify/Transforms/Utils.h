//===- Utils.h - helpers shared by the tv passes ----------------*- C++ -*-===//
#ifndef TRAINVERIFY_TRANSFORMS_UTILS_H
#define TRAINVERIFY_TRANSFORMS_UTILS_H

#include "TrainVerify/Dialect/Lineage.h"
#include "TrainVerify/Dialect/TVOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

#include "llvm/ADT/StringRef.h"
#include <chrono>
#include <vector>

namespace mlir::tv {

/// Whether the module's spec has a backward to check: an input `dY` or
/// `d_Y` for one of its outputs `Y` (--tv-derive-spec-backward).
bool specHasCotangents(ModuleOp module);

/// Canonical SSA form (see --tv-ssa-canonicalize). Idempotent: marks the
/// module `tv.canonical` and does nothing on a marked module.
LogicalResult ssaCanonicalize(ModuleOp module);
/// Checks the asynchronous collectives and receives of one program for
/// races over its program order, then gives them their synchronous meaning
/// (the wait's result is the op's). On a race: errors naming the launch,
/// the racy op and the wait, the verdict Wrong, failure (decision 111).
LogicalResult lowerAsyncOps(Block &block);
constexpr llvm::StringLiteral kCanonicalAttrName = "tv.canonical";
/// States each flat buffer's reduce-scatter and all-gather (Megatron's
/// distributed optimizer) per parameter, where that is exactly the same
/// program (FlatBuffers.cpp, decision 119); partition runs it so that a
/// parameter's stage holds that parameter only.
void readFlatBuffersPerParameter(ModuleOp module);

/// The elements of every tensor that running `root` (a stage, or a spec and
/// a plan) holds: each op result and block argument once per rank that runs
/// it (a tv.rank_program's ranks each run its ops), saturating.
uint64_t programElements(Operation *root);

/// The module attribute listing the spec tensors whose lineages
/// --tv-infer-lineage inferred: hypotheses, cut only while proven.
constexpr llvm::StringLiteral kInferredAttrName = "tv.inferred";

/// The tools' arguments with `--mlir-print-op-on-diagnostic=false` added
/// unless the user chose: a verifier's diagnostic names its ops and values,
/// and printing the whole enclosing op after it only buries the message.
std::vector<char *> withQuietOpDiagnostics(int argc, char **argv);

/// The tools' arguments with `--mlir-print-debuginfo` added unless the user
/// chose (`--mlir-print-debuginfo=false` turns it off): a module a tv tool
/// writes carries its ops' locations, so that the next tool reading it
/// (through a pipe or an intermediate file) reports diagnostics in the
/// user's own file, not at `<stdin>:40` (docs/guide.md, "Locations").
std::vector<char *> withLocations(std::vector<char *> args);

/// Driver set-up shared by tv-opt and tv-translate: `--version` names tv,
/// and `--help` hides the options of the shared LLVM library (code
/// generators for every target) that no tv tool reads.
void setUpToolOptions(llvm::StringRef tool);

/// What a tool run established about the plan; the drivers turn it into
/// the exit status (docs/guide.md, "Exit status"): 0 proven, 1 the plan is
/// wrong (a counterexample, or a deadlock, mismatched collective or
/// unreachable lineage found while partitioning), 2 unknown, 3 anything
/// else (input, usage, an error inside a stage). Proven is set by a
/// --tv-verify that proved every stage of the plan.
enum class Verdict { None, Proven, Wrong, Unknown };
Verdict &toolVerdict();
/// Set while a caller runs a verification it may retry another way (the
/// shard validator's attempt with intermediate cuts): --tv-verify then does
/// not print its summary line for a run that did not prove the plan, and
/// the caller captures the diagnostics.
bool &verifyAttemptOnly();
/// The exit status of a driver whose main work returned `result`; prints
/// the verdict line and completes the stats file (see finishRun in
/// RunStatus.h).
int exitStatus(LogicalResult result);

/// When the tool started (set by the drivers; used to report parse time).
std::chrono::steady_clock::time_point &toolStartTime();

/// Records the wall time of a phase in its context's PhaseClock (the tv
/// dialect's), which --tv-verify's stats file reports. The first phase also
/// records the parse time (from toolStartTime()). Phases run in another
/// process read as 0.
class PhaseTimer {
public:
  PhaseTimer(Operation *op, llvm::StringRef phase);
  ~PhaseTimer();

private:
  Operation *op;
  std::string phase;
  std::chrono::steady_clock::time_point start;
};

/// Reads a phase time recorded by PhaseTimer in `op`'s context (0 if
/// absent).
double phaseSeconds(Operation *op, llvm::StringRef phase);

/// A stage over a whole program (its tv.spec and tv.plan cloned) built at
/// `b`'s insertion point: it assumes the lineages of the spec's inputs and
/// guarantees every other lineage. --tv-interpret runs it on a module that
/// is not partitioned; --tv-stage-partition keeps it in a tv.source.
StageOp buildWholeProgramStage(OpBuilder &b, SpecOp spec, PlanOp plan,
                               ArrayRef<LineageEntry> lineages, Location loc);

} // namespace mlir::tv

#endif

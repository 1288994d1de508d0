//===- RunStatus.h - progress, verdict line, stats of a run -----*- C++ -*-===//
//
// What a verification run tells its host beyond diagnostics: progress on a
// terminal, the one-line verdict on stderr, and the stats file, which is
// written when the run ends, however it ends (docs/shard.md, "What a
// compiler reads").
//
//===----------------------------------------------------------------------===//
#ifndef TRAINVERIFY_TRANSFORMS_RUNSTATUS_H
#define TRAINVERIFY_TRANSFORMS_RUNSTATUS_H

#include "mlir/Support/LLVM.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"
#include <optional>
#include <string>

namespace mlir::tv {

/// Progress of a phase of the run (partition, fold, shape reduction,
/// verification), counted in stages. Shown on stderr when it is a terminal
/// (one line rewritten in place, as ninja and lit do; nothing otherwise) and
/// kept for the stats file of an interrupted run. Thread-safe.
void beginPhase(llvm::StringRef phase, size_t total);
/// `steps` more stages of the current phase are done.
void advancePhase(size_t steps = 1);
/// For a pass run once per stage (nested on tv.stage, in parallel): begins
/// `phase` with `total()` stages unless it is the current phase, then
/// advances it by one.
void stepPhase(llvm::StringRef phase, llvm::function_ref<size_t()> total);
/// Clears the progress line.
void endPhase();

/// Opens the run's stats file at `path` before anything runs (so that an
/// unwritable path is refused before a long run) and writes a first record
/// (`"result": "running"`). From then on SIGINT and SIGTERM write the record
/// of an interrupted run to it before the process ends by the signal.
/// Returns the reason on failure.
std::optional<std::string> openRunStats(llvm::StringRef path);
/// Notes which of SIGINT and SIGTERM the process started with ignored
/// (nohup, a shell's background job, lit): those stay ignored. Called by
/// toolStartTime() the first time, before the drivers set up LLVM.
void noteInitialSignals();
/// Writes the final stats record `json` to the open stats file (the run's
/// last word: an interrupt after it changes nothing). Returns the reason on
/// failure.
std::optional<std::string> writeRunStats(llvm::StringRef json);

/// The word of the verdict line for a tool's exit status (0 proven, 1 wrong,
/// 2 unknown, 3 input-error).
llvm::StringRef verdictWord(int status);
/// Ends a run whose main work returned `result` and returns the tool's exit
/// status (0 proven or no error, 1 wrong, 2 unknown, 3 anything else; see
/// toolVerdict()): prints the verdict line `tv-verdict: <word>` on stderr
/// when the run reached a verdict or failed (nothing for a run that proved
/// nothing and failed nothing, such as a transformation pass alone), and
/// completes a stats file that --tv-verify did not finish (a run that
/// stopped before verification).
int finishRun(LogicalResult result);

/// For a host that does not report tv's result (mlir-opt with tv's plugin):
/// an error diagnostic was reported. finishRun runs when the process exits.
void noteRunError();
void finishRunAtExit();

} // namespace mlir::tv

#endif

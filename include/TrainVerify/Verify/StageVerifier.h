//===- StageVerifier.h - proving one stage ----------------------*- C++ -*-===//
#ifndef TRAINVERIFY_VERIFY_STAGEVERIFIER_H
#define TRAINVERIFY_VERIFY_STAGEVERIFIER_H

#include "TrainVerify/Analysis/PlanSchedule.h"
#include "TrainVerify/Analysis/StageKey.h"
#include "TrainVerify/Dialect/TVOps.h"

#include <map>
#include <set>
#include <string>
#include <vector>

namespace mlir::tv {

struct StageOptions {
  unsigned timeoutMs = 60000;
  /// Also produce the solver query as SMT-LIB 2 (even when normalization
  /// proves the stage, the query is what a solver would have been asked).
  bool wantSmtLib = false;
  /// Build the query and stop: nothing is replayed or solved
  /// (--export-smtlib). The outcome is then Unknown, `smtlib` the query.
  bool queryOnly = false;
  /// Random points tried when a solver model does not replay.
  unsigned replaySeeds = 8;
  /// Stages with more tensor elements than this are not executed
  /// symbolically (reported unknown): a stage shape reduction could not
  /// shrink. Below it, the term budget and the timeout bound the run; a
  /// bug on one rank of a 512-rank pipeline stage leaves 4.2 M elements
  /// unfolded (decision 80); upstream's 2-D halo test holds 16.3 M
  /// (decision 95).
  int64_t maxElements = 32'000'000;
  /// Bytes the stage's symbolic terms may hold; beyond, the stage is
  /// reported unknown instead of exhausting the machine.
  size_t maxTermBytes = size_t(4) << 30;
  /// Stages whose symbolic terms hold at least this many bytes, and whose
  /// guarantees normalization leaves unsettled, replay random points before
  /// the solver is asked (a real bug shows without a solver query larger
  /// than the stage, or one that runs long): by default every such stage.
  size_t replayFirstBytes = 0;
};

struct StageResult {
  enum Outcome { Proven, Counterexample, Unknown, Error } outcome = Error;
  bool byNormalization = false;
  /// Where to report (a plan op computing a violated guarantee).
  Location loc;
  /// One-line description, then detail lines (values, ops, inputs).
  std::string headline;
  std::vector<std::string> details;
  std::string smtlib;
  /// For a counterexample: the op computing the failing tensor, the first
  /// diverging op (if one is found), the rank whose program they are in, and
  /// the counterexample's values (first elements) of the spec's values and
  /// of that rank's, by value, for a picture of the stage.
  Operation *reported = nullptr, *diverging = nullptr;
  int64_t rank = -1;
  std::map<void *, std::string> specValues, planValues;
  /// For the exact interpreter: the lineage elements that agree exactly, by
  /// congruence, and only within the tolerance.
  size_t exactElements = 0, congruentElements = 0, approximateElements = 0;
  /// Replays: elements not compared because a side is NaN (a division by
  /// zero, assumption A4, or a real reading that overflowed).
  size_t nanElements = 0;
  explicit StageResult(Location loc) : loc(loc) {}
};

const char *toString(StageResult::Outcome o);

/// Writes the stage as a Graphviz graph: the spec's ops and the program of
/// `result.rank`, operands as edges labelled with the counterexample's
/// values, the reported op and the first diverging op marked.
void writeStageDot(StageOp stage, const StageResult &result,
                   llvm::raw_ostream &os);

/// Proves one stage: symbolic execution of both sides over the reals,
/// normalization first, Z3 for the rest, concrete replay of every
/// counterexample. Thread-safe for distinct stages (reads the IR only).
/// `schedule` is the stage's schedule analysis if the caller has it (built
/// here otherwise).
StageResult verifyStage(StageOp stage, const StageOptions &options,
                        const StageSchedule *schedule = nullptr);

/// Runs both sides of a stage concretely on random inputs drawn from `seed`
/// (plan inputs derived from the assumed lineages) and checks every
/// guarantee within relative tolerance `tol`. Proven here means only "holds
/// on this input": Counterexample carries the values.
/// With `exact`, inputs are exact rationals and every lineage element whose
/// two sides are exact (docs/reliability.md) is compared for equality.
StageResult interpretStage(StageOp stage, uint64_t seed, double tol,
                           bool exact = false);

/// The spec tensors whose guarantees fail when `stage` runs in the exact
/// interpreter on inputs drawn from `seed` (an element that disagrees
/// exactly, or as reals beyond the tolerance); failure, with `why`, when
/// the stage cannot run or its assumptions cannot be met. On a
/// whole-program stage (in a tv.source) this is what a real run on random
/// program inputs shows.
FailureOr<std::set<std::string>> failingGuarantees(StageOp stage,
                                                   uint64_t seed,
                                                   std::string &why);

} // namespace mlir::tv

#endif

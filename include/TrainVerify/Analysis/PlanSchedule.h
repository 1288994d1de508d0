//===- PlanSchedule.h - communication matched, a plan ordered ---*- C++ -*-===//
//
// The schedule of a plan: which ops of which ranks form one collective, which
// send meets which recv, and an order of all ops in which each runs after
// what it reads. Shape reduction and verification read it; as an analysis of
// a tv.stage (StageSchedule) it is built once per stage and kept while the
// stage's ops stay (shape reduction changes only types).
//
//===----------------------------------------------------------------------===//
#ifndef TRAINVERIFY_ANALYSIS_PLANSCHEDULE_H
#define TRAINVERIFY_ANALYSIS_PLANSCHEDULE_H

#include "TrainVerify/Dialect/TVOps.h"

#include "llvm/ADT/DenseMap.h"
#include <string>
#include <vector>

namespace mlir::tv {

/// One step of a plan's execution in a globally consistent order.
struct PlanStep {
  enum Kind { Local, Collective, P2P } kind;
  /// Local: the op. Collective: the op of the first member. P2P: the recv.
  Operation *op = nullptr;
  /// Local: the rank running it. P2P: the receiving rank.
  int64_t rank = -1;
  /// Collective: (rank, op) of every member in group-index order.
  llvm::SmallVector<std::pair<int64_t, Operation *>, 8> members;
  /// P2P: the sending rank and its send op.
  int64_t peer = -1;
  Operation *sendOp = nullptr;
};

/// Matches collectives (k-th on a group in every member) and point-to-point
/// pairs (k-th send a->b with a tag meets the k-th recv on b from a with that
/// tag), and orders all ops of all ranks so that each runs after what it
/// reads. Deadlocks, mismatched collectives and unmatched sends are
/// diagnosed at the offending ops.
struct PlanSchedule {
  MeshOp mesh;
  std::vector<PlanStep> steps;
  llvm::DenseMap<int64_t, RankProgramOp> programOf;
  /// With `localSteps` false, only collectives and point-to-point pairs are
  /// recorded (a local op's producer is its defining op): the whole-plan
  /// schedule of the partition then costs the communication, not
  /// ranks x ops.
  static FailureOr<PlanSchedule> build(PlanOp plan, bool localSteps = true);
};

/// The group index of `rank` in a chunk op's group, or -1.
int64_t chunkIndex(ChunkOp op, int64_t rank);

/// The schedule of a stage's plan as an analysis: built on first request,
/// kept until a pass changes the stage's ops without preserving it. `error`
/// says why there is none (a deadlock, a mismatched collective, ...).
class StageSchedule {
public:
  explicit StageSchedule(Operation *stage);
  const PlanSchedule *get() const { return schedule ? &*schedule : nullptr; }
  const std::string &error() const { return message; }
  /// Where `error` points.
  Location errorLoc() const { return loc; }

private:
  std::optional<PlanSchedule> schedule;
  std::string message;
  Location loc;
};

} // namespace mlir::tv

#endif

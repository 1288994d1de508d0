//===- Executor.h - running spec and plan programs over a domain -*- C++ -*-===//
#ifndef TRAINVERIFY_VERIFY_EXECUTOR_H
#define TRAINVERIFY_VERIFY_EXECUTOR_H

#include "TrainVerify/Dialect/TVOps.h"
#include "TrainVerify/Semantics/Domains.h"

#include "llvm/ADT/DenseMap.h"
#include <functional>
#include <map>

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

/// Values computed by a run, addressed by (rank, value); the spec uses
/// rank -1.
template <typename V> struct RunState {
  std::map<std::pair<int64_t, void *>, Tensor<V>> values;
  /// Named tensors (tv.input / tv.tag / tv.output) per rank.
  std::map<std::pair<int64_t, std::string>, Tensor<V>> named;
  const Tensor<V> *lookup(int64_t rank, Value v) const {
    auto it = values.find({rank, v.getAsOpaquePointer()});
    return it == values.end() ? nullptr : &it->second;
  }
  const Tensor<V> *lookupNamed(int64_t rank, llvm::StringRef name) const {
    auto it = named.find({rank, name.str()});
    return it == named.end() ? nullptr : &it->second;
  }
};

/// Supplies the value of a tv.input: (rank or -1, name, type) -> tensor.
template <typename V>
using InputFn = std::function<FailureOr<Tensor<V>>(int64_t, llvm::StringRef,
                                                   RankedTensorType)>;

template <typename D>
LogicalResult runSpec(D &d, SpecOp spec, const InputFn<typename D::V> &inputs,
                      RunState<typename D::V> &state);

template <typename D>
LogicalResult runPlan(D &d, const PlanSchedule &schedule,
                      const InputFn<typename D::V> &inputs,
                      RunState<typename D::V> &state);

} // namespace mlir::tv

#endif

//===- Executor.h - running spec and plan programs over a domain -*- C++ -*-===//
#ifndef TRAINVERIFY_VERIFY_EXECUTOR_H
#define TRAINVERIFY_VERIFY_EXECUTOR_H

#include "TrainVerify/Analysis/PlanSchedule.h"
#include "TrainVerify/Dialect/TVOps.h"
#include "TrainVerify/Semantics/Domains.h"

#include "llvm/ADT/DenseMap.h"
#include <functional>
#include <map>

namespace mlir::tv {

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

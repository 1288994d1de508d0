//===- Semantics.h - evaluating an op over a domain -------------*- C++ -*-===//
#ifndef TRAINVERIFY_SEMANTICS_SEMANTICS_H
#define TRAINVERIFY_SEMANTICS_SEMANTICS_H

#include "TrainVerify/Semantics/Evaluator.h"

#include <string>

namespace mlir::tv {

/// Whether the op is evaluated by `evalLocalOp` (compute, backward, local
/// data movement). Structure and communication ops are handled by executors.
bool isLocalComputeOp(Operation *op);
/// Whether the op is a collective evaluated by `evalCollective`.
bool isCollectiveOp(Operation *op);

/// Evaluates a local op. `inputs` follow the op's operands. Returns an error
/// message for an op it has no semantics for (never silently skips).
template <typename D>
std::optional<std::string>
evalLocalOp(D &d, Operation *op,
            llvm::ArrayRef<const Tensor<typename D::V> *> inputs,
            llvm::SmallVectorImpl<Tensor<typename D::V>> &results,
            const RankEnv &env);

/// Evaluates one collective instance: `inputs[i]` is the input of the group
/// member with group index i; fills `results` likewise.
template <typename D>
std::optional<std::string>
evalCollective(D &d, Operation *op,
               llvm::ArrayRef<const Tensor<typename D::V> *> inputs,
               std::vector<Tensor<typename D::V>> &results);

} // namespace mlir::tv

#endif

//===- Semantics.h - the meaning of every tv op over a domain ---*- C++ -*-===//
#ifndef TRAINVERIFY_VERIFY_SEMANTICS_H
#define TRAINVERIFY_VERIFY_SEMANTICS_H

#include "TrainVerify/Dialect/TVOps.h"
#include "TrainVerify/Verify/Domains.h"

#include <string>

namespace mlir::tv {

/// Where a local op runs: needed by rank-dependent ops (vocab-parallel
/// embedding, chunk).
struct RankEnv {
  int64_t rank = 0;
  mutable MeshOp mesh;
};

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

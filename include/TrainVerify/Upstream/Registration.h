//===- Registration.h - the upstream dialects tv reads ----------*- C++ -*-===//
//
// What an MLIR-based training compiler emits around MLIR's SPMD partitioner:
// func, linalg, arith, math, tensor, tosa, scf, affine and shard, with the
// sharding-interface models that sharding-propagation and shard-partition
// need, so that tv reads and partitions such IR with MLIR itself.
//
//===----------------------------------------------------------------------===//
#ifndef TRAINVERIFY_UPSTREAM_REGISTRATION_H
#define TRAINVERIFY_UPSTREAM_REGISTRATION_H

namespace mlir {
class DialectRegistry;
namespace tv {

/// Inserts the upstream dialects and their sharding-interface external
/// models into `registry`.
void registerUpstreamDialects(DialectRegistry &registry);

/// Registers upstream's shard passes (sharding-propagation, shard-partition,
/// ...) for the command line.
void registerUpstreamPasses();

} // namespace tv
} // namespace mlir

#endif

//===- Registration.cpp - the upstream dialects tv reads ------------------===//
#include "mlir/Dialect/DLTI/DLTI.h"
#include "TrainVerify/Upstream/Registration.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Transforms/ShardingInterfaceImpl.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/ShardingInterfaceImpl.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/Transforms/Passes.h"
#include "mlir/Dialect/Tensor/IR/ShardingInterfaceImpl.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tosa/IR/ShardingInterfaceImpl.h"
#include "mlir/Dialect/Tosa/IR/TosaOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Transforms/Passes.h"

void mlir::tv::registerUpstreamDialects(DialectRegistry &registry) {
  registry
      .insert<affine::AffineDialect, arith::ArithDialect, func::FuncDialect,
              linalg::LinalgDialect, math::MathDialect, scf::SCFDialect,
              shard::ShardDialect, tensor::TensorDialect, tosa::TosaDialect,
              // MPI attributes of distributed programs (dlti.map on the
              // module) are data layout, not computation.
              DLTIDialect>();
  arith::registerShardingInterfaceExternalModels(registry);
  linalg::registerShardingInterfaceExternalModels(registry);
  tensor::registerShardingInterfaceExternalModels(registry);
  tosa::registerShardingInterfaceExternalModels(registry);
}

void mlir::tv::registerUpstreamPasses() {
  shard::registerShardPasses();
  // What partitioning pipelines run after shard-partition.
  registerCanonicalizerPass();
  registerCSEPass();
}

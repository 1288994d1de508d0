// --tv-validate-shard-partition: a compiler's pipeline partitions with
// MLIR's own passes and tv proves the result, in one tv-opt run.
// RUN: tv-opt %S/shard_partition_in_tv.mlir --tv-validate-shard-partition -o /dev/null 2>&1 | FileCheck %s --check-prefix=PROVEN
// PROVEN: tv-verify: proven
// The Megatron MLP forward and backward of ../shared, partitioned here.
// RUN: tv-opt %tv_src/../shared/shard/pairs/12_tp_mlp_fwd_bwd/input.mlir --tv-validate-shard-partition -o /dev/null 2>&1 | FileCheck %s --check-prefix=PROVEN
// What is not modeled fails the pass, by name (the pipeline is the pair's
// own: no propagation).
// RUN: not tv-opt %tv_src/../shared/shard/pairs/14_uneven_offsets/input.mlir '--tv-validate-shard-partition=pipeline=builtin.module(func.func(shard-partition))' -o /dev/null 2>&1 | FileCheck %s --check-prefix=UNEVEN
// UNEVEN: input.mlir:7:8: error: shard-partition import: uneven shards (sharded_dims_offsets) are not modeled
// With propagation first, Debian's MLIR 22 crashes on this input (uneven
// shards); the partitioner runs in a child tv-opt, so tv reports it and
// exits 3 instead of crashing.
// RUN: tv-opt %tv_src/../shared/shard/pairs/14_uneven_offsets/input.mlir --tv-validate-shard-partition -o /dev/null > %t.crash 2>&1; echo "status $?" >> %t.crash
// RUN: FileCheck %s --check-prefix=CRASH < %t.crash
// CRASH: error: the partitioning pipeline '{{.*}}' crashed inside MLIR
// CRASH: status 3
// A module without annotations has nothing to validate.
// RUN: tv-opt %s --tv-validate-shard-partition --verify-diagnostics -o /dev/null

// expected-error @+1 {{no function annotated with shard.shard to validate}}
module {
  func.func @plain(%x: tensor<2xf32>) -> tensor<2xf32> {
    return %x : tensor<2xf32>
  }
}

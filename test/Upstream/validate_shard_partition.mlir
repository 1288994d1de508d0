// --tv-validate-shard-partition: a compiler's pipeline partitions with
// MLIR's own passes and tv proves the result, in one tv-opt run.
// RUN: tv-opt %S/shard_partition_in_tv.mlir --tv-validate-shard-partition -o /dev/null 2>&1 | FileCheck %s --check-prefix=PROVEN
// PROVEN: tv-verify: proven
// The pairs of ../shared: validate_shard_partition_pairs.test.
// A module without annotations has nothing to validate: a warning, and the
// compiler's pipeline goes on.
// RUN: tv-opt %s --tv-validate-shard-partition --verify-diagnostics -o /dev/null

// expected-warning @+1 {{no function annotated with shard.shard to validate}}
module {
  func.func @plain(%x: tensor<2xf32>) -> tensor<2xf32> {
    return %x : tensor<2xf32>
  }
}

// tv as a plugin of Debian's mlir-opt-22 (which links libMLIR.so): the
// dialect and every tv pass load into it, and validation of MLIR's own
// partitioner runs inside one --pass-pipeline.
// RUN: mlir-opt-22 --load-dialect-plugin=%tv_plugin --load-pass-plugin=%tv_plugin --pass-pipeline='builtin.module(tv-validate-shard-partition)' %s -o /dev/null 2>&1 | FileCheck %s --check-prefix=PROVEN
// PROVEN: tv-verify: proven (1 stages
// RUN: mlir-opt-22 --load-dialect-plugin=%tv_plugin --load-pass-plugin=%tv_plugin --pass-pipeline='builtin.module(tv-validate-shard-partition)' %tv_src/../shared/shard/pairs/12_tp_mlp_fwd_bwd/input.mlir -o /dev/null 2>&1 | FileCheck %s --check-prefix=PROVEN4
// PROVEN4: tv-verify: proven (4 stages
// What tv does not model is refused by name through the host's diagnostics.
// RUN: not mlir-opt-22 --load-dialect-plugin=%tv_plugin --load-pass-plugin=%tv_plugin --pass-pipeline='builtin.module(tv-validate-shard-partition{pipeline=builtin.module(func.func(shard-partition))})' %tv_src/../shared/shard/pairs/14_uneven_offsets/input.mlir -o /dev/null 2>&1 | FileCheck %s --check-prefix=UNEVEN
// UNEVEN: input.mlir:7:8: error: shard-partition import: uneven shards (sharded_dims_offsets) are not modeled
// tv's own passes run in the host too: the three-pass command proves a
// plan, and a plan with an injected bug gives a counterexample.
// RUN: mlir-opt-22 --load-dialect-plugin=%tv_plugin --load-pass-plugin=%tv_plugin --pass-pipeline='builtin.module(tv-stage-partition,tv-shape-reduce,tv-verify)' %examples/tp_mlp.mlir -o /dev/null 2>&1 | FileCheck %s --check-prefix=PLAN
// PLAN: tv-verify: proven (8 stages
// RUN: not mlir-opt-22 --load-dialect-plugin=%tv_plugin --load-pass-plugin=%tv_plugin --pass-pipeline='builtin.module(tv-inject-bug{bug=missing-allreduce rank=0},tv-verify-pipeline)' %examples/tp_mlp.mlir -o /dev/null 2>&1 | FileCheck %s --check-prefix=BUG
// BUG: error: stage @stage2_y: counterexample
// BUG: tv-verify: counterexample in 1 stage(s)

// A 2-way row-parallel matmul.
module {
  shard.grid @grid(shape = 2)
  func.func @mm(%a: tensor<4x8xf32>, %b: tensor<8x4xf32>) -> tensor<4x4xf32> {
    %sa = shard.sharding @grid split_axes = [[], [0]] : !shard.sharding
    %sb = shard.sharding @grid split_axes = [[0]] : !shard.sharding
    %sr = shard.sharding @grid split_axes = [[]] : !shard.sharding
    %a1 = shard.shard %a to %sa : tensor<4x8xf32>
    %b1 = shard.shard %b to %sb : tensor<8x4xf32>
    %z = tensor.empty() : tensor<4x4xf32>
    %c0 = arith.constant 0.0 : f32
    %zf = linalg.fill ins(%c0 : f32) outs(%z : tensor<4x4xf32>) -> tensor<4x4xf32>
    %m = linalg.matmul ins(%a1, %b1 : tensor<4x8xf32>, tensor<8x4xf32>) outs(%zf : tensor<4x4xf32>) -> tensor<4x4xf32>
    %r = shard.shard %m to %sr : tensor<4x4xf32>
    return %r : tensor<4x4xf32>
  }
}

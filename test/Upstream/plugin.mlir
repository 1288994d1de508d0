// tv as a plugin of Debian's mlir-opt-22 (which links libMLIR.so): the
// dialect and every tv pass load into it, and validation of MLIR's own
// partitioner runs inside one --pass-pipeline.
// RUN: mlir-opt-22 --load-dialect-plugin=%tv_plugin --load-pass-plugin=%tv_plugin --pass-pipeline='builtin.module(tv-validate-shard-partition)' %s -o /dev/null 2>&1 | FileCheck %s --check-prefix=PROVEN
// PROVEN: tv-verify: proven (2 stages
// What tv does not model is refused by name through the host's diagnostics.
// tv's own passes run in the host too: the three-pass command proves a
// plan, and a plan with an injected bug gives a counterexample.
// RUN: mlir-opt-22 --load-dialect-plugin=%tv_plugin --load-pass-plugin=%tv_plugin --pass-pipeline='builtin.module(tv-stage-partition,tv-shape-reduce,tv-verify)' %examples/tp_mlp.mlir -o /dev/null 2>&1 | FileCheck %s --check-prefix=PLAN
// PLAN: tv-verify: proven (8 stages
// PLAN: tv-verdict: proven
// RUN: not mlir-opt-22 --load-dialect-plugin=%tv_plugin --load-pass-plugin=%tv_plugin --pass-pipeline='builtin.module(tv-inject-bug{bug=missing-allreduce rank=0},tv-verify-pipeline)' %examples/tp_mlp.mlir -o /dev/null 2>&1 | FileCheck %s --check-prefix=BUG
// BUG: error: stage @stage2_y: counterexample
// BUG: tv-verify: counterexample in 1 stage(s)
// mlir-opt's exit status is 1 for every failure: the verdict line tells a
// wrong plan, an unknown and an input error apart (docs/shard.md), and the
// whole module is not printed after tv's diagnostics at the module
// (--mlir-print-op-on-diagnostic is off unless given).
// BUG: tv-verdict: wrong
// BUG-NOT: see current operation
// RUN: not mlir-opt-22 --load-dialect-plugin=%tv_plugin --load-pass-plugin=%tv_plugin --pass-pipeline='builtin.module(tv-stage-partition,tv-verify)' %S/../Verify/verify_unknown.mlir -o /dev/null 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// UNKNOWN: tv-verify: unknown in 1 stage(s)
// UNKNOWN-NEXT: tv-verdict: unknown
// RUN: not mlir-opt-22 --load-dialect-plugin=%tv_plugin --load-pass-plugin=%tv_plugin --pass-pipeline='builtin.module(tv-verify)' %examples/tp_mlp.mlir -o /dev/null 2>&1 | FileCheck %s --check-prefix=INPUT
// INPUT: error: no tv.stage to verify
// INPUT-NOT: see current operation
// INPUT: tv-verdict: input-error
// The user's choice stands.
// RUN: not mlir-opt-22 --mlir-print-op-on-diagnostic=true --load-dialect-plugin=%tv_plugin --load-pass-plugin=%tv_plugin --pass-pipeline='builtin.module(tv-verify)' %examples/tp_mlp.mlir -o /dev/null 2>&1 | FileCheck %s --check-prefix=DUMP
// DUMP: see current operation
// The stats file carries the same word.
// RUN: not mlir-opt-22 --load-dialect-plugin=%tv_plugin --load-pass-plugin=%tv_plugin --pass-pipeline='builtin.module(tv-inject-bug{bug=missing-allreduce rank=0},tv-verify-pipeline{stats-file=%t.bug.json})' %examples/tp_mlp.mlir -o /dev/null 2>&1
// RUN: FileCheck %s --check-prefix=STATS < %t.bug.json
// STATS: "result": "counterexample",
// STATS: "verdict": "wrong"
// An unwritable stats file is an input error, refused before any stage
// runs (the host's own exit status is its own; the verdict line says it).
// RUN: not mlir-opt-22 --load-dialect-plugin=%tv_plugin --load-pass-plugin=%tv_plugin --pass-pipeline='builtin.module(tv-verify-pipeline{stats-file=%t.no/such/dir/x.json})' %examples/tp_mlp.mlir -o /dev/null 2>&1 | FileCheck %s --check-prefix=NOSTATS
// NOSTATS: error: cannot write the stats-file: No such file or directory
// NOSTATS-NEXT: tv-verdict: input-error
// NOSTATS-NOT: tv-verify: proven

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

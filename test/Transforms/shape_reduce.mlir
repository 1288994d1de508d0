// RUN: tv-opt %S/../Verify/Inputs/tp_mlp_tagged.mlir --tv-stage-partition --tv-shape-reduce="fold=false" | FileCheck %s
// Reduced stages are valid input for the verifier on their own.
// RUN: tv-opt %S/../Verify/Inputs/tp_mlp_tagged.mlir --tv-stage-partition --tv-shape-reduce="fold=false" | tv-opt --tv-verify -o /dev/null 2>&1 | FileCheck %s --check-prefix=PROVEN
// By default the stages are folded by symmetry first (the tensor-parallel
// ranks of this MLP run one program on translated shards): the README's
// three-pass command proves one rank per stage, as the pipeline does.
// RUN: tv-opt %S/../Verify/Inputs/tp_mlp_tagged.mlir --tv-stage-partition --tv-shape-reduce | FileCheck %s --check-prefix=FOLDED
// RUN: tv-opt %S/../Verify/Inputs/tp_mlp_tagged.mlir --tv-stage-partition --tv-shape-reduce --tv-verify -o /dev/null 2>&1 | FileCheck %s --check-prefix=FOLDED-PROVEN
// FOLDED-LABEL: tv.stage @stage0_a assumes [#tv.lineage<"x"[0:2, 0:2] = ["x":0]>, #tv.lineage<"w1"[0:2, 0:2] = ["w1":0]>] guarantees [#tv.lineage<"a"[0:2, 0:2] = ["a":0]>]
// FOLDED:         tv.plan @plan mesh @mesh micro_batches 1 folded ["tp"]
// FOLDED-PROVEN: tv-verify: proven ({{[0-9]+}} stages: {{.*}}; {{[0-9]+}} folded by symmetry;

// Every dimension keeps two elements (so index-relating ops stay
// distinguishable); the sharded dimension (16 = 2 shards of 8) keeps its two
// shards at 2 each, and lineage boxes follow.
// CHECK-LABEL: tv.stage @stage0_a
// CHECK-SAME: assumes [#tv.lineage<"x"[0:2, 0:2] = ["x":0] | ["x":1]>, #tv.lineage<"w1"[0:2, 0:2] = ["w1":0]>, #tv.lineage<"w1"[2:4, 0:2] = ["w1":1]>]
// CHECK-SAME: guarantees [#tv.lineage<"a"[0:2, 0:2] = ["a":0]>, #tv.lineage<"a"[0:2, 2:4] = ["a":1]>]
// CHECK: tv.input "w1" : tensor<4x2xf32>
// CHECK: tv.input "x" : tensor<2x2xf32>
// CHECK: tv.linear {{.*}} : (tensor<2x2xf32>, tensor<4x2xf32>) -> tensor<2x4xf32>
// CHECK: tv.rank_program [0, 1]
// CHECK: tv.input "w1" : tensor<2x2xf32>
// CHECK-LABEL: tv.stage @stage1_y
// CHECK: tv.linear {{.*}} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x2xf32>
// CHECK: tv.rank_program [0, 1]
// CHECK: tv.linear {{.*}} : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
// CHECK: tv.all_reduce sum {{.*}} : tensor<2x2xf32> -> tensor<2x2xf32>

// PROVEN: tv-verify: proven (2 stages: 2 by normalization, 0 by solver;

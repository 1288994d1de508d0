// RUN: tv-opt %S/Inputs/tp_mlp_tagged.mlir --tv-stage-partition --tv-fold-symmetry --tv-shape-reduce --tv-verify -o /dev/null 2>&1 | FileCheck %s
// The pipeline flag and the single passes agree; threads do not change the verdict.
// RUN: tv-opt %S/Inputs/tp_mlp_tagged.mlir --tv-verify-pipeline="threads=1" -o /dev/null 2>&1 | FileCheck %s
// RUN: tv-opt %S/Inputs/tp_mlp_tagged.mlir --tv-verify-pipeline="threads=2" -o /dev/null 2>&1 | FileCheck %s
// fold=false proves every rank: nothing is folded, by the fold pass or by
// shape reduction.
// RUN: tv-opt %S/Inputs/tp_mlp_tagged.mlir --tv-verify-pipeline="fold=false" -o /dev/null 2>&1 | FileCheck %s --check-prefix=UNFOLDED
// UNFOLDED: tv-verify: proven (2 stages: 2 by normalization, 0 by solver; {{[0-9.]+}} s)
// Only one stage.
// RUN: tv-opt %S/Inputs/tp_mlp_tagged.mlir --tv-stage-partition --tv-verify="only-stage=1" -o /dev/null 2>&1 | FileCheck %s --check-prefix=ONE
// A stage can be named instead of numbered.
// RUN: tv-opt %S/Inputs/tp_mlp_tagged.mlir --tv-stage-partition --tv-verify="only-stage=@stage1_y" -o /dev/null 2>&1 | FileCheck %s --check-prefix=ONE

// CHECK: tv-verify: proven (2 stages: 2 by normalization, 0 by solver; 2 folded by symmetry; {{[0-9.]+}} s)
// ONE: tv-verify: proven (stage @stage1_y only; 1 other stage(s) not verified; 1 by normalization, 0 by solver;

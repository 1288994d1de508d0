// RUN: tv-opt %S/Inputs/tp_mlp_tagged.mlir --tv-interpret -o /dev/null 2>&1 | FileCheck %s
// RUN: tv-opt %S/Inputs/tp_mlp_tagged.mlir --tv-stage-partition --tv-shape-reduce="fold=false" --tv-interpret="seed=7" -o /dev/null 2>&1 | FileCheck %s --check-prefix=STAGES
// Folded stages keep the lineages of coordinate 0 only.
// RUN: tv-opt %S/Inputs/tp_mlp_tagged.mlir --tv-stage-partition --tv-shape-reduce --tv-interpret="seed=7" -o /dev/null 2>&1 | FileCheck %s --check-prefix=FOLDED
// RUN: not tv-opt %S/verify_counterexample.mlir --tv-interpret -o /dev/null 2>&1 | FileCheck %s --check-prefix=BAD

// CHECK: tv-interpret: 3 lineage(s) hold on seed 1
// STAGES: tv-interpret: 3 lineage(s) hold on seed 7
// FOLDED: tv-interpret: 2 lineage(s) hold on seed 7
// BAD: error: tv-interpret: stage @whole_program: counterexample: lineage 'y'[0:4, 0:8] = 'y'@0 does not hold
// BAD: <-- mismatch
// BAD: tv-interpret: 1 stage(s) fail on seed 1

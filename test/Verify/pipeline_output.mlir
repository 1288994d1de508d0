// The pipeline's result is the verdict: by default the proven stages are
// dropped from the output; keep-stages keeps them, and the pass alone keeps
// them unless drop-stages is set.
// RUN: tv-opt %S/Inputs/tp_mlp_tagged.mlir --tv-verify-pipeline 2>/dev/null | FileCheck %s --check-prefix=DROP
// RUN: tv-opt %S/Inputs/tp_mlp_tagged.mlir --tv-verify-pipeline="keep-stages" 2>/dev/null | FileCheck %s --check-prefix=KEEP
// RUN: tv-opt %S/Inputs/tp_mlp_tagged.mlir --tv-stage-partition --tv-shape-reduce --tv-verify 2>/dev/null | FileCheck %s --check-prefix=KEEP
// RUN: tv-opt %S/Inputs/tp_mlp_tagged.mlir --tv-stage-partition --tv-shape-reduce --tv-verify="drop-stages" 2>/dev/null | FileCheck %s --check-prefix=DROP

// DROP: module
// DROP-NOT: tv.stage
// KEEP: tv.stage @stage0
// KEEP: tv.stage @stage1

// RUN: tv-opt %S/Inputs/tp_mlp_tagged.mlir --tv-stage-partition --tv-shape-reduce | tv-translate --export-smtlib | FileCheck %s
// RUN: not tv-translate --export-smtlib %S/Inputs/tp_mlp_tagged.mlir 2>&1 | FileCheck %s --check-prefix=ERR

// CHECK: ; tv stage @stage0_a
// CHECK: (declare-fun gelu_1 (Real) Real)
// CHECK: (assert
// CHECK: (check-sat)
// CHECK: ; tv stage @stage1_y
// CHECK: (check-sat)
// ERR: error: no tv.stage to export; run tv-opt --tv-stage-partition first

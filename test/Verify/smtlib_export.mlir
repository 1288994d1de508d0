// RUN: tv-opt %S/Inputs/tp_mlp_tagged.mlir --tv-stage-partition --tv-shape-reduce | tv-translate --export-smtlib | FileCheck %s
// RUN: not tv-translate --export-smtlib %S/Inputs/tp_mlp_tagged.mlir 2>&1 | FileCheck %s --check-prefix=ERR

// CHECK: ; tv stage @stage0_a
// Each variable is named: which tensor element it stands for.
// CHECK-NEXT: ; v0 = {{[a-z_0-9.]+}}[{{[0-9]+}}, {{[0-9]+}}]
// Each stage's query stands alone and names itself in the solver's output.
// CHECK: (reset)
// CHECK-NEXT: (echo "stage @stage0_a")
// CHECK: (declare-fun gelu_1 (Real) Real)
// CHECK: (assert
// CHECK: (check-sat)
// CHECK: ; tv stage @stage1_y
// CHECK: (check-sat)
// ERR: error: no tv.stage to export; run tv-opt --tv-stage-partition first
// ERR-NOT: see current operation

// The export builds queries and never solves them: a plan with a wrong scale
// exports every stage (the failing one included) and exits 0.
// RUN: tv-opt %S/../Examples/Inputs/tp_mlp_wrong_scale.mlir --tv-ssa-canonicalize --tv-stage-partition --tv-shape-reduce | tv-translate --export-smtlib | FileCheck %s --check-prefix=BUGGY
// BUGGY: ; tv stage @stage0_h
// BUGGY: (check-sat)
// BUGGY: ; tv stage @stage4_dh
// BUGGY: (check-sat)

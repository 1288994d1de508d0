// RUN: tv-opt %S/Inputs/tp_mlp_tagged.mlir --tv-verify-pipeline="stats-file=%t.json" -o /dev/null
// RUN: FileCheck %s < %t.json

// CHECK-DAG: "result": "proven"
// CHECK-DAG: "stages": 2
// CHECK-DAG: "stages_proven": 2
// CHECK-DAG: "stages_failed": 0
// CHECK-DAG: "stages_unknown": 0
// CHECK-DAG: "stages_by_normalization": 2
// CHECK-DAG: "stages_by_solver": 0
// CHECK-DAG: "t_parse_s":
// CHECK-DAG: "t_canonicalize_s":
// CHECK-DAG: "t_partition_s":
// CHECK-DAG: "t_shape_reduce_s":
// CHECK-DAG: "t_verify_s":
// CHECK-DAG: "t_total_s":
// The distinct stages by verification time, longest first (at most five).
// CHECK-DAG: "slowest_stages": [
// CHECK-DAG: "stage": "stage0_
// CHECK-DAG: "stage": "stage1_
// CHECK-DAG: "seconds":

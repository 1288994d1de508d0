// The mutation itself, printed: a missing all-reduce becomes a tagged copy.
// RUN: tv-opt %S/../../examples/tp_mlp.mlir --tv-inject-bug="bug=missing-allreduce" | FileCheck %s
// CHECK: tv.rank_program [0, 1]
// CHECK: tv.copy {{.*}}injected_bug = "missing-allreduce"

// A single-rank bug splits the rank out of its shared program.
// RUN: tv-opt %S/../../examples/tp_mlp.mlir --tv-inject-bug="bug=rank-scale rank=1" | FileCheck %s --check-prefix=SPLIT
// SPLIT: tv.rank_program [0] {
// SPLIT-NOT: injected_bug
// SPLIT: tv.rank_program [1] {
// SPLIT: tv.scale {{.*}}, 5.000000e-01 {injected_bug = "rank-scale"}

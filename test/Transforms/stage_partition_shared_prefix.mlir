// Programs that begin with copies of the same ops (a phased plan joined,
// decision 124: every data-parallel coordinate's program starts with the
// shared forward and backward, its locations included): a stage that takes
// only ops of that prefix emits them once, for the ranks of both programs.
// Checked op by op: a program whose prefix differs keeps its own stage
// program, and a wrong op in it is still a counterexample; so does a
// program written apart (other locations: a counterexample names the rank's
// own lines).
// RUN: tv-opt %s --tv-stage-partition | FileCheck %s
// RUN: tv-opt %s --tv-stage-partition --tv-shape-reduce --tv-verify -o /dev/null 2>&1 | FileCheck %s --check-prefix=PROVEN
// RUN: sed -e 's/%d1 = tv.add %r1, %r1/%d1 = tv.mul %r1, %r1/' %s | tv-opt --tv-stage-partition | FileCheck %s --check-prefix=SPLIT
// RUN: sed -e 's/%d1 = tv.add %r1, %r1/%d1 = tv.mul %r1, %r1/' %s | not tv-opt --tv-stage-partition --tv-shape-reduce --tv-verify -o /dev/null 2>&1 | FileCheck %s --check-prefix=WRONG
// RUN: sed -e 's/ loc("prefix.mlir":[0-9]*:1) \/\/ rank 1$//' %s | tv-opt --tv-stage-partition | FileCheck %s --check-prefix=APART

// CHECK-LABEL: tv.stage @stage0_s
// CHECK: tv.plan @plan
// CHECK-NEXT: tv.rank_program [0, 1] {
// CHECK-NOT: tv.rank_program
// CHECK: tv.stage @stage1_w_new
// CHECK: tv.rank_program [0] {
// CHECK: tv.rank_program [1] {

// PROVEN: tv-verify: proven

// SPLIT-LABEL: tv.stage @stage0_s
// SPLIT: tv.rank_program [0] {
// SPLIT: tv.rank_program [1] {
// SPLIT: tv.mul

// WRONG: tv-verify: counterexample

// APART-LABEL: tv.stage @stage0_s
// APART: tv.rank_program [0] {
// APART: tv.rank_program [1] {
// APART: tv.stage @stage1_w_new

tv.mesh @mesh axes ["dp"] sizes [2]
tv.spec @spec {
  %g = tv.input "g" : tensor<4xf32>
  %w = tv.input "w" : tensor<4xf32>
  %s = tv.add %g, %g : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  tv.tag "s", %s : tensor<4xf32>
  %n = tv.sgd %w, %s lr 1.000000e-01 : tensor<4xf32>
  tv.output "w.new", %n : tensor<4xf32>
}
tv.plan @plan mesh @mesh micro_batches 1 {
  tv.rank_program [0] {
    %g0 = tv.input "g" : tensor<4xf32> loc("prefix.mlir":1:1)
    %r0 = tv.all_reduce sum %g0 {axes = ["dp"]} : tensor<4xf32> -> tensor<4xf32> loc("prefix.mlir":2:1)
    %d0 = tv.add %r0, %r0 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32> loc("prefix.mlir":3:1)
    tv.tag "s", %d0 : tensor<4xf32> loc("prefix.mlir":4:1)
    %w0 = tv.input "w0" : tensor<2xf32>
    %o0 = tv.slice %d0 start [0] : tensor<4xf32> -> tensor<2xf32>
    %n0 = tv.sgd %w0, %o0 lr 1.000000e-01 : tensor<2xf32>
    tv.output "w.new0", %n0 : tensor<2xf32>
  }
  tv.rank_program [1] {
    %g1 = tv.input "g" : tensor<4xf32> loc("prefix.mlir":1:1) // rank 1
    %r1 = tv.all_reduce sum %g1 {axes = ["dp"]} : tensor<4xf32> -> tensor<4xf32> loc("prefix.mlir":2:1) // rank 1
    %d1 = tv.add %r1, %r1 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32> loc("prefix.mlir":3:1) // rank 1
    tv.tag "s", %d1 : tensor<4xf32> loc("prefix.mlir":4:1) // rank 1
    %w1 = tv.input "w1" : tensor<2xf32>
    %o1 = tv.slice %d1 start [2] : tensor<4xf32> -> tensor<2xf32>
    %n1 = tv.sgd %w1, %o1 lr 1.000000e-01 : tensor<2xf32>
    tv.output "w.new1", %n1 : tensor<2xf32>
  }
}
tv.lineage #tv.lineage<"g"[0:4] = ["g":0 + "g":1]>
tv.lineage #tv.lineage<"w"[0:2] = ["w0":0]>
tv.lineage #tv.lineage<"w"[2:4] = ["w1":1]>
tv.lineage #tv.lineage<"s"[0:4] = ["s":0] | ["s":1]>
tv.lineage #tv.lineage<"w.new"[0:2] = ["w.new0":0]>
tv.lineage #tv.lineage<"w.new"[2:4] = ["w.new1":1]>

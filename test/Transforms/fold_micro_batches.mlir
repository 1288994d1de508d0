// RUN: tv-opt %s --tv-fold-symmetry | FileCheck %s
// Each refusal says why (remarks are checked as diagnostics).
// RUN: tv-opt %s --tv-fold-symmetry="explain=true" -verify-diagnostics -o /dev/null
// Folded or not, every stage gets the verdict it gets without folding.
// RUN: not tv-opt %s --tv-fold-symmetry --tv-shape-reduce --tv-verify -o /dev/null 2>&1 | FileCheck %s --check-prefixes=VERDICT,FOLDED
// RUN: not tv-opt %s --tv-fold-symmetry="micro-batches=false" --tv-shape-reduce --tv-verify -o /dev/null 2>&1 | FileCheck %s --check-prefix=VERDICT
// VERDICT-DAG: error: stage @accum_missing: counterexample
// VERDICT-DAG: error: stage @accum_twice: counterexample
// VERDICT-DAG: error: stage @lane_differs: counterexample: lineage 'y'[1:2, 0:2] = 'y_mb1'@0 does not hold
// VERDICT-DAG: error: stage @lane_reads_other: counterexample: lineage 'y'[1:2, 0:2] = 'y_mb1'@0 does not hold
// VERDICT-DAG: error: stage @all_lanes_wrong: counterexample
// FOLDED-DAG: note: the stage is folded to micro-batch 0
// VERDICT-DAG: error: stage @cross_wired: counterexample
// VERDICT: tv-verify: counterexample in 6 stage(s)

// Micro-batches fold like mesh coordinates: a micro-batch's ops (its lane)
// are micro-batch 0's reading its own inputs, so the stage keeps lane 0 and
// block 0 of the spec.

tv.mesh @mesh axes ["dp"] sizes [1]
tv.mesh @pipe axes ["pp"] sizes [2]

// CHECK-LABEL: tv.stage @lanes
// CHECK-SAME: assumes [#tv.lineage<"x"[0:1, 0:2] = ["x_mb0":0]>]
// CHECK-SAME: guarantees [#tv.lineage<"y"[0:1, 0:2] = ["y_mb0":0]>]
// CHECK: tv.input "x" : tensor<1x2xf32>
// CHECK: tv.plan @plan mesh @mesh micro_batches 2 folded_micro_batches {
// CHECK-NEXT: tv.rank_program [0] {
// CHECK-NEXT: tv.input "x_mb0"
// CHECK-NEXT: tv.exp
// CHECK-NEXT: tv.output "y_mb0"
// CHECK-NEXT: }
tv.stage @lanes assumes [#tv.lineage<"x"[0:1, 0:2] = ["x_mb0":0]>, #tv.lineage<"x"[1:2, 0:2] = ["x_mb1":0]>]
    guarantees [#tv.lineage<"y"[0:1, 0:2] = ["y_mb0":0]>, #tv.lineage<"y"[1:2, 0:2] = ["y_mb1":0]>] {
  tv.spec @spec {
    %0 = tv.input "x" : tensor<2x2xf32>
    %1 = tv.exp %0 : tensor<2x2xf32>
    tv.output "y", %1 : tensor<2x2xf32>
  }
  tv.plan @plan mesh @mesh micro_batches 2 {
    tv.rank_program [0] {
      %0 = tv.input "x_mb0" : tensor<1x2xf32>
      %1 = tv.input "x_mb1" : tensor<1x2xf32>
      %2 = tv.exp %0 {mb = 0 : i64} : tensor<1x2xf32>
      %3 = tv.exp %1 {mb = 1 : i64} : tensor<1x2xf32>
      tv.output "y_mb0", %2 : tensor<1x2xf32>
      tv.output "y_mb1", %3 : tensor<1x2xf32>
    }
  }
}

// Gradient accumulation: the spec contracts the batch, the plan adds the
// micro-batches' gradients. Folded, the sum is micro-batch 0's term.
// CHECK-LABEL: tv.stage @accum
// CHECK-SAME: guarantees [#tv.lineage<"dw"[0:3, 0:2] = ["dw":0]>]
// CHECK: tv.linear_grad {{.*}} : tensor<1x2xf32>, tensor<3x2xf32>, tensor<1x3xf32>
// CHECK: folded_micro_batches
// CHECK-NOT: tv.add
// CHECK: %[[DX:.*]], %[[DW:.*]] = tv.linear_grad
// CHECK-NOT: tv.add
// CHECK: tv.output "dw", %[[DW]]
tv.stage @accum assumes [#tv.lineage<"w"[0:3, 0:2] = ["w":0]>, #tv.lineage<"x"[0:1, 0:2] = ["x_mb0":0]>, #tv.lineage<"x"[1:2, 0:2] = ["x_mb1":0]>, #tv.lineage<"g"[0:1, 0:3] = ["g_mb0":0]>, #tv.lineage<"g"[1:2, 0:3] = ["g_mb1":0]>]
    guarantees [#tv.lineage<"dw"[0:3, 0:2] = ["dw":0]>] {
  tv.spec @spec {
    %x = tv.input "x" : tensor<2x2xf32>
    %w = tv.input "w" : tensor<3x2xf32>
    %g = tv.input "g" : tensor<2x3xf32>
    %dx, %dw = tv.linear_grad %x, %w, %g : tensor<2x2xf32>, tensor<3x2xf32>, tensor<2x3xf32>
    tv.output "dw", %dw : tensor<3x2xf32>
  }
  tv.plan @plan mesh @mesh micro_batches 2 {
    tv.rank_program [0] {
      %x0 = tv.input "x_mb0" : tensor<1x2xf32>
      %x1 = tv.input "x_mb1" : tensor<1x2xf32>
      %w = tv.input "w" : tensor<3x2xf32>
      %g0 = tv.input "g_mb0" : tensor<1x3xf32>
      %g1 = tv.input "g_mb1" : tensor<1x3xf32>
      %dx0, %dw0 = tv.linear_grad %x0, %w, %g0 {mb = 0 : i64} : tensor<1x2xf32>, tensor<3x2xf32>, tensor<1x3xf32>
      %dx1, %dw1 = tv.linear_grad %x1, %w, %g1 {mb = 1 : i64} : tensor<1x2xf32>, tensor<3x2xf32>, tensor<1x3xf32>
      %s = tv.add %dw0, %dw1 : tensor<3x2xf32>, tensor<3x2xf32> -> tensor<3x2xf32>
      tv.output "dw", %s : tensor<3x2xf32>
    }
  }
}

// The last micro-batch's gradient is never added: the output is micro-batch
// 0's tensor, which micro-batch 1 has no counterpart of. Not folded, verified
// in full, and fails.
// CHECK-LABEL: tv.stage @accum_missing
// CHECK: tv.plan @plan mesh @mesh micro_batches 2 {
// expected-remark @+1 {{micro-batches not folded: the lineages of 'micro-batch' coordinate 1 are not those of coordinate 0 translated}}
tv.stage @accum_missing assumes [#tv.lineage<"w"[0:3, 0:2] = ["w":0]>, #tv.lineage<"x"[0:1, 0:2] = ["x_mb0":0]>, #tv.lineage<"x"[1:2, 0:2] = ["x_mb1":0]>, #tv.lineage<"g"[0:1, 0:3] = ["g_mb0":0]>, #tv.lineage<"g"[1:2, 0:3] = ["g_mb1":0]>]
    guarantees [#tv.lineage<"dw"[0:3, 0:2] = ["dw":0]>] {
  tv.spec @spec {
    %x = tv.input "x" : tensor<2x2xf32>
    %w = tv.input "w" : tensor<3x2xf32>
    %g = tv.input "g" : tensor<2x3xf32>
    %dx, %dw = tv.linear_grad %x, %w, %g : tensor<2x2xf32>, tensor<3x2xf32>, tensor<2x3xf32>
    tv.output "dw", %dw : tensor<3x2xf32>
  }
  tv.plan @plan mesh @mesh micro_batches 2 {
    tv.rank_program [0] {
      %x0 = tv.input "x_mb0" : tensor<1x2xf32>
      %x1 = tv.input "x_mb1" : tensor<1x2xf32>
      %w = tv.input "w" : tensor<3x2xf32>
      %g0 = tv.input "g_mb0" : tensor<1x3xf32>
      %g1 = tv.input "g_mb1" : tensor<1x3xf32>
      %dx0, %dw0 = tv.linear_grad %x0, %w, %g0 {mb = 0 : i64} : tensor<1x2xf32>, tensor<3x2xf32>, tensor<1x3xf32>
      %dx1, %dw1 = tv.linear_grad %x1, %w, %g1 {mb = 1 : i64} : tensor<1x2xf32>, tensor<3x2xf32>, tensor<1x3xf32>
      tv.output "dw", %dw0 : tensor<3x2xf32>
    }
  }
}

// Micro-batch 0's gradient is added twice.
// expected-remark @+1 {{micro-batches not folded: plan tv.add: a micro-batch's value leaves its micro-batch other than through a sum over every micro-batch}}
tv.stage @accum_twice assumes [#tv.lineage<"w"[0:3, 0:2] = ["w":0]>, #tv.lineage<"x"[0:1, 0:2] = ["x_mb0":0]>, #tv.lineage<"x"[1:2, 0:2] = ["x_mb1":0]>, #tv.lineage<"g"[0:1, 0:3] = ["g_mb0":0]>, #tv.lineage<"g"[1:2, 0:3] = ["g_mb1":0]>]
    guarantees [#tv.lineage<"dw"[0:3, 0:2] = ["dw":0]>] {
  tv.spec @spec {
    %x = tv.input "x" : tensor<2x2xf32>
    %w = tv.input "w" : tensor<3x2xf32>
    %g = tv.input "g" : tensor<2x3xf32>
    %dx, %dw = tv.linear_grad %x, %w, %g : tensor<2x2xf32>, tensor<3x2xf32>, tensor<2x3xf32>
    tv.output "dw", %dw : tensor<3x2xf32>
  }
  tv.plan @plan mesh @mesh micro_batches 2 {
    tv.rank_program [0] {
      %x0 = tv.input "x_mb0" : tensor<1x2xf32>
      %x1 = tv.input "x_mb1" : tensor<1x2xf32>
      %w = tv.input "w" : tensor<3x2xf32>
      %g0 = tv.input "g_mb0" : tensor<1x3xf32>
      %g1 = tv.input "g_mb1" : tensor<1x3xf32>
      %dx0, %dw0 = tv.linear_grad %x0, %w, %g0 {mb = 0 : i64} : tensor<1x2xf32>, tensor<3x2xf32>, tensor<1x3xf32>
      %dx1, %dw1 = tv.linear_grad %x1, %w, %g1 {mb = 1 : i64} : tensor<1x2xf32>, tensor<3x2xf32>, tensor<1x3xf32>
      %s = tv.add %dw0, %dw0 : tensor<3x2xf32>, tensor<3x2xf32> -> tensor<3x2xf32>
      tv.output "dw", %s : tensor<3x2xf32>
    }
  }
}

// Micro-batch 1 runs another op.
// expected-remark @+1 {{micro-batches not folded: op 0 (tv.exp) of micro-batch 1 differs from micro-batch 0's}}
tv.stage @lane_differs assumes [#tv.lineage<"x"[0:1, 0:2] = ["x_mb0":0]>, #tv.lineage<"x"[1:2, 0:2] = ["x_mb1":0]>]
    guarantees [#tv.lineage<"y"[0:1, 0:2] = ["y_mb0":0]>, #tv.lineage<"y"[1:2, 0:2] = ["y_mb1":0]>] {
  tv.spec @spec {
    %0 = tv.input "x" : tensor<2x2xf32>
    %1 = tv.exp %0 : tensor<2x2xf32>
    tv.output "y", %1 : tensor<2x2xf32>
  }
  tv.plan @plan mesh @mesh micro_batches 2 {
    tv.rank_program [0] {
      %0 = tv.input "x_mb0" : tensor<1x2xf32>
      %1 = tv.input "x_mb1" : tensor<1x2xf32>
      %2 = tv.exp %0 {mb = 0 : i64} : tensor<1x2xf32>
      %3 = tv.tanh %1 {mb = 1 : i64} : tensor<1x2xf32>
      tv.output "y_mb0", %2 : tensor<1x2xf32>
      tv.output "y_mb1", %3 : tensor<1x2xf32>
    }
  }
}

// Micro-batch 1 reads micro-batch 0's input: that input belongs to no single
// micro-batch, so the spec sees it replicated and the refusal comes from the
// output's lineage.
// expected-remark @+1 {{micro-batches not folded: spec tensor 'y' is not factored the way its lineage is}}
tv.stage @lane_reads_other assumes [#tv.lineage<"x"[0:1, 0:2] = ["x_mb0":0]>, #tv.lineage<"x"[1:2, 0:2] = ["x_mb1":0]>]
    guarantees [#tv.lineage<"y"[0:1, 0:2] = ["y_mb0":0]>, #tv.lineage<"y"[1:2, 0:2] = ["y_mb1":0]>] {
  tv.spec @spec {
    %0 = tv.input "x" : tensor<2x2xf32>
    %1 = tv.exp %0 : tensor<2x2xf32>
    tv.output "y", %1 : tensor<2x2xf32>
  }
  tv.plan @plan mesh @mesh micro_batches 2 {
    tv.rank_program [0] {
      %0 = tv.input "x_mb0" : tensor<1x2xf32>
      %1 = tv.input "x_mb1" : tensor<1x2xf32>
      %2 = tv.exp %0 {mb = 0 : i64} : tensor<1x2xf32>
      %3 = tv.exp %0 {mb = 1 : i64} : tensor<1x2xf32>
      tv.output "y_mb0", %2 : tensor<1x2xf32>
      tv.output "y_mb1", %3 : tensor<1x2xf32>
    }
  }
}

// Every micro-batch runs the wrong op: folded (the lanes agree), and the
// counterexample found for micro-batch 0 says it holds for every one.
// CHECK-LABEL: tv.stage @all_lanes_wrong
// CHECK: folded_micro_batches
tv.stage @all_lanes_wrong assumes [#tv.lineage<"x"[0:1, 0:2] = ["x_mb0":0]>, #tv.lineage<"x"[1:2, 0:2] = ["x_mb1":0]>]
    guarantees [#tv.lineage<"y"[0:1, 0:2] = ["y_mb0":0]>, #tv.lineage<"y"[1:2, 0:2] = ["y_mb1":0]>] {
  tv.spec @spec {
    %0 = tv.input "x" : tensor<2x2xf32>
    %1 = tv.exp %0 : tensor<2x2xf32>
    tv.output "y", %1 : tensor<2x2xf32>
  }
  tv.plan @plan mesh @mesh micro_batches 2 {
    tv.rank_program [0] {
      %0 = tv.input "x_mb0" : tensor<1x2xf32>
      %1 = tv.input "x_mb1" : tensor<1x2xf32>
      %2 = tv.tanh %0 {mb = 0 : i64} : tensor<1x2xf32>
      %3 = tv.tanh %1 {mb = 1 : i64} : tensor<1x2xf32>
      tv.output "y_mb0", %2 : tensor<1x2xf32>
      tv.output "y_mb1", %3 : tensor<1x2xf32>
    }
  }
}

// Each rank's lanes agree, but rank 0 sends micro-batch 1 first while rank 1
// receives micro-batch 0 first: the pairs (matched by order) cross the
// micro-batches. Folding to micro-batch 0 would keep a correctly wired pair
// and hide it, so the fold is refused and the stage fails.
// expected-remark @+2 {{not folded along 'pp': rank 1 does not run the program of rank 0}}
// expected-remark @+1 {{micro-batches not folded: a tv.recv connects different micro-batches}}
tv.stage @cross_wired assumes [#tv.lineage<"x"[0:1, 0:2] = ["x_mb0":0]>, #tv.lineage<"x"[1:2, 0:2] = ["x_mb1":0]>]
    guarantees [#tv.lineage<"y"[0:1, 0:2] = ["y_mb0":1]>, #tv.lineage<"y"[1:2, 0:2] = ["y_mb1":1]>] {
  tv.spec @spec {
    %0 = tv.input "x" : tensor<2x2xf32>
    %1 = tv.exp %0 : tensor<2x2xf32>
    tv.output "y", %1 : tensor<2x2xf32>
  }
  tv.plan @plan mesh @pipe micro_batches 2 {
    tv.rank_program [0] {
      %0 = tv.input "x_mb0" : tensor<1x2xf32>
      %1 = tv.input "x_mb1" : tensor<1x2xf32>
      %2 = tv.exp %0 {mb = 0 : i64} : tensor<1x2xf32>
      %3 = tv.exp %1 {mb = 1 : i64} : tensor<1x2xf32>
      tv.send %3 {peer_axis = "pp", peer_offset = 1, mb = 1 : i64} : tensor<1x2xf32>
      tv.send %2 {peer_axis = "pp", peer_offset = 1, mb = 0 : i64} : tensor<1x2xf32>
    }
    tv.rank_program [1] {
      %0 = tv.recv {peer_axis = "pp", peer_offset = -1, mb = 0 : i64} : tensor<1x2xf32>
      %1 = tv.recv {peer_axis = "pp", peer_offset = -1, mb = 1 : i64} : tensor<1x2xf32>
      tv.output "y_mb0", %0 : tensor<1x2xf32>
      tv.output "y_mb1", %1 : tensor<1x2xf32>
    }
  }
}

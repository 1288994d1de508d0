// RUN: tv-opt %s --tv-fold-symmetry | FileCheck %s
// Each refusal says why (remarks are checked as diagnostics).
// RUN: tv-opt %s --tv-fold-symmetry="explain=true" -verify-diagnostics -o /dev/null
// Folded or not, every stage gets the verdict it gets without folding: the
// correct stages are proven, the wrong ones are counterexamples.
// RUN: not tv-opt %s --tv-fold-symmetry --tv-shape-reduce --tv-verify -o /dev/null 2>&1 | FileCheck %s --check-prefix=VERDICT
// RUN: not tv-opt %s --tv-shape-reduce --tv-verify -o /dev/null 2>&1 | FileCheck %s --check-prefix=VERDICT

tv.mesh @mesh axes ["dp"] sizes [4]

// Blockwise: each data-parallel rank maps its rows. Folded to rank 0, the
// spec keeps block 0 (one row of four).
// CHECK-LABEL: tv.stage @par
// CHECK-SAME: assumes [#tv.lineage<"x"[0:1, 0:2] = ["x":0]>]
// CHECK-SAME: guarantees [#tv.lineage<"y"[0:1, 0:2] = ["y":0]>]
// CHECK: tv.input "x" : tensor<1x2xf32>
// CHECK: tv.exp {{.*}} : tensor<1x2xf32>
// CHECK: tv.plan @plan mesh @mesh micro_batches 1 folded ["dp"]
// CHECK-NEXT: tv.rank_program [0] {
// CHECK-NOT: tv.rank_program
tv.stage @par assumes [#tv.lineage<"x"[0:1, 0:2] = ["x":0]>, #tv.lineage<"x"[1:2, 0:2] = ["x":1]>, #tv.lineage<"x"[2:3, 0:2] = ["x":2]>, #tv.lineage<"x"[3:4, 0:2] = ["x":3]>]
    guarantees [#tv.lineage<"y"[0:1, 0:2] = ["y":0]>, #tv.lineage<"y"[1:2, 0:2] = ["y":1]>, #tv.lineage<"y"[2:3, 0:2] = ["y":2]>, #tv.lineage<"y"[3:4, 0:2] = ["y":3]>] {
  tv.spec @spec {
    %0 = tv.input "x" : tensor<4x2xf32>
    %1 = tv.exp %0 : tensor<4x2xf32>
    tv.output "y", %1 : tensor<4x2xf32>
  }
  tv.plan @plan mesh @mesh micro_batches 1 {
    tv.rank_program [0, 1, 2, 3] {
      %0 = tv.input "x" : tensor<1x2xf32>
      %1 = tv.exp %0 : tensor<1x2xf32>
      tv.output "y", %1 : tensor<1x2xf32>
    }
  }
}

// A weight gradient: the spec contracts the batch (a sum over the blocks),
// the plan all-reduces the per-rank gradients. Folded: the proof at one rank
// is equivalent to the claim (take every rank's data equal).
// CHECK-LABEL: tv.stage @red
// CHECK-SAME: guarantees [#tv.lineage<"dw"[0:3, 0:2] = ["dw":0]>]
// CHECK: tv.linear_grad {{.*}} : tensor<1x2xf32>, tensor<3x2xf32>, tensor<1x3xf32>
// CHECK: folded ["dp"]
// CHECK-NEXT: tv.rank_program [0] {
tv.stage @red assumes [#tv.lineage<"w"[0:3, 0:2] = ["w":0] | ["w":1] | ["w":2] | ["w":3]>, #tv.lineage<"x"[0:1, 0:2] = ["x":0]>, #tv.lineage<"x"[1:2, 0:2] = ["x":1]>, #tv.lineage<"x"[2:3, 0:2] = ["x":2]>, #tv.lineage<"x"[3:4, 0:2] = ["x":3]>, #tv.lineage<"g"[0:1, 0:3] = ["g":0]>, #tv.lineage<"g"[1:2, 0:3] = ["g":1]>, #tv.lineage<"g"[2:3, 0:3] = ["g":2]>, #tv.lineage<"g"[3:4, 0:3] = ["g":3]>]
    guarantees [#tv.lineage<"dw"[0:3, 0:2] = ["dw":0] | ["dw":1] | ["dw":2] | ["dw":3]>] {
  tv.spec @spec {
    %x = tv.input "x" : tensor<4x2xf32>
    %w = tv.input "w" : tensor<3x2xf32>
    %g = tv.input "g" : tensor<4x3xf32>
    %dx, %dw = tv.linear_grad %x, %w, %g : tensor<4x2xf32>, tensor<3x2xf32>, tensor<4x3xf32>
    tv.output "dw", %dw : tensor<3x2xf32>
  }
  tv.plan @plan mesh @mesh micro_batches 1 {
    tv.rank_program [0, 1, 2, 3] {
      %x = tv.input "x" : tensor<1x2xf32>
      %w = tv.input "w" : tensor<3x2xf32>
      %g = tv.input "g" : tensor<1x3xf32>
      %dx, %dw = tv.linear_grad %x, %w, %g : tensor<1x2xf32>, tensor<3x2xf32>, tensor<1x3xf32>
      %r = tv.all_reduce sum %dw {axes = ["dp"]} : tensor<3x2xf32> -> tensor<3x2xf32>
      tv.output "dw", %r : tensor<3x2xf32>
    }
  }
}

// The same with its replicas written as lists (the form lineage maps expand
// to): folding keeps a list, of the ranks of coordinate 0, rather than one
// group attribute per replica (decision 80).
// CHECK-LABEL: tv.stage @red_replicas
// CHECK-SAME: assumes [#tv.lineage<"w"[0:3, 0:2] = "w":[0]>,
// CHECK-SAME: guarantees [#tv.lineage<"dw"[0:3, 0:2] = "dw":[0]>]
// CHECK: folded ["dp"]
// CHECK-NEXT: tv.rank_program [0] {
tv.stage @red_replicas assumes [#tv.lineage<"w"[0:3, 0:2] = "w":[0, 1, 2, 3]>, #tv.lineage<"x"[0:1, 0:2] = ["x":0]>, #tv.lineage<"x"[1:2, 0:2] = ["x":1]>, #tv.lineage<"x"[2:3, 0:2] = ["x":2]>, #tv.lineage<"x"[3:4, 0:2] = ["x":3]>, #tv.lineage<"g"[0:1, 0:3] = ["g":0]>, #tv.lineage<"g"[1:2, 0:3] = ["g":1]>, #tv.lineage<"g"[2:3, 0:3] = ["g":2]>, #tv.lineage<"g"[3:4, 0:3] = ["g":3]>]
    guarantees [#tv.lineage<"dw"[0:3, 0:2] = "dw":[0, 1, 2, 3]>] {
  tv.spec @spec {
    %x = tv.input "x" : tensor<4x2xf32>
    %w = tv.input "w" : tensor<3x2xf32>
    %g = tv.input "g" : tensor<4x3xf32>
    %dx, %dw = tv.linear_grad %x, %w, %g : tensor<4x2xf32>, tensor<3x2xf32>, tensor<4x3xf32>
    tv.output "dw", %dw : tensor<3x2xf32>
  }
  tv.plan @plan mesh @mesh micro_batches 1 {
    tv.rank_program [0, 1, 2, 3] {
      %x = tv.input "x" : tensor<1x2xf32>
      %w = tv.input "w" : tensor<3x2xf32>
      %g = tv.input "g" : tensor<1x3xf32>
      %dx, %dw = tv.linear_grad %x, %w, %g : tensor<1x2xf32>, tensor<3x2xf32>, tensor<1x3xf32>
      %r = tv.all_reduce sum %dw {axes = ["dp"]} : tensor<3x2xf32> -> tensor<3x2xf32>
      tv.output "dw", %r : tensor<3x2xf32>
    }
  }
}

// The gradient all-reduce is missing: each rank holds its own part of the
// sum. Not folded (the spec sums over the axis, the plan does not), so the
// full stage is verified and fails.
// CHECK-LABEL: tv.stage @missing_reduce
// CHECK: tv.plan @plan mesh @mesh micro_batches 1 {
// CHECK-NEXT: tv.rank_program [0, 1, 2, 3]
// expected-remark @+1 {{not folded along 'dp': 'dw' is a sum over the axis in the spec but dw on rank 0 is not in the plan}}
tv.stage @missing_reduce assumes [#tv.lineage<"w"[0:3, 0:2] = ["w":0] | ["w":1] | ["w":2] | ["w":3]>, #tv.lineage<"x"[0:1, 0:2] = ["x":0]>, #tv.lineage<"x"[1:2, 0:2] = ["x":1]>, #tv.lineage<"x"[2:3, 0:2] = ["x":2]>, #tv.lineage<"x"[3:4, 0:2] = ["x":3]>, #tv.lineage<"g"[0:1, 0:3] = ["g":0]>, #tv.lineage<"g"[1:2, 0:3] = ["g":1]>, #tv.lineage<"g"[2:3, 0:3] = ["g":2]>, #tv.lineage<"g"[3:4, 0:3] = ["g":3]>]
    guarantees [#tv.lineage<"dw"[0:3, 0:2] = ["dw":0] | ["dw":1] | ["dw":2] | ["dw":3]>] {
  tv.spec @spec {
    %x = tv.input "x" : tensor<4x2xf32>
    %w = tv.input "w" : tensor<3x2xf32>
    %g = tv.input "g" : tensor<4x3xf32>
    %dx, %dw = tv.linear_grad %x, %w, %g : tensor<4x2xf32>, tensor<3x2xf32>, tensor<4x3xf32>
    tv.output "dw", %dw : tensor<3x2xf32>
  }
  tv.plan @plan mesh @mesh micro_batches 1 {
    tv.rank_program [0, 1, 2, 3] {
      %x = tv.input "x" : tensor<1x2xf32>
      %w = tv.input "w" : tensor<3x2xf32>
      %g = tv.input "g" : tensor<1x3xf32>
      %dx, %dw = tv.linear_grad %x, %w, %g : tensor<1x2xf32>, tensor<3x2xf32>, tensor<1x3xf32>
      tv.output "dw", %dw : tensor<3x2xf32>
    }
  }
}

// An average all-reduce where the spec sums: folding would shrink the
// average to one rank and hide the factor 1/4, so it is refused.
// CHECK-LABEL: tv.stage @avg_reduce
// CHECK-NOT: folded
// expected-remark @+1 {{not folded along 'dp': plan tv.all_reduce: all-reduce along the axis that is not a sum of per-rank values}}
tv.stage @avg_reduce assumes [#tv.lineage<"w"[0:3, 0:2] = ["w":0] | ["w":1] | ["w":2] | ["w":3]>, #tv.lineage<"x"[0:1, 0:2] = ["x":0]>, #tv.lineage<"x"[1:2, 0:2] = ["x":1]>, #tv.lineage<"x"[2:3, 0:2] = ["x":2]>, #tv.lineage<"x"[3:4, 0:2] = ["x":3]>, #tv.lineage<"g"[0:1, 0:3] = ["g":0]>, #tv.lineage<"g"[1:2, 0:3] = ["g":1]>, #tv.lineage<"g"[2:3, 0:3] = ["g":2]>, #tv.lineage<"g"[3:4, 0:3] = ["g":3]>]
    guarantees [#tv.lineage<"dw"[0:3, 0:2] = ["dw":0] | ["dw":1] | ["dw":2] | ["dw":3]>] {
  tv.spec @spec {
    %x = tv.input "x" : tensor<4x2xf32>
    %w = tv.input "w" : tensor<3x2xf32>
    %g = tv.input "g" : tensor<4x3xf32>
    %dx, %dw = tv.linear_grad %x, %w, %g : tensor<4x2xf32>, tensor<3x2xf32>, tensor<4x3xf32>
    tv.output "dw", %dw : tensor<3x2xf32>
  }
  tv.plan @plan mesh @mesh micro_batches 1 {
    tv.rank_program [0, 1, 2, 3] {
      %x = tv.input "x" : tensor<1x2xf32>
      %w = tv.input "w" : tensor<3x2xf32>
      %g = tv.input "g" : tensor<1x3xf32>
      %dx, %dw = tv.linear_grad %x, %w, %g : tensor<1x2xf32>, tensor<3x2xf32>, tensor<1x3xf32>
      %r = tv.all_reduce avg %dw {axes = ["dp"]} : tensor<3x2xf32> -> tensor<3x2xf32>
      tv.output "dw", %r : tensor<3x2xf32>
    }
  }
}

// A mean over the batch depends on the batch's extent: a correct stage, but
// not foldable, so it is verified in full.
// CHECK-LABEL: tv.stage @mean
// CHECK-NOT: folded
// expected-remark @+1 {{not folded along 'dp': tv.mean: normalizes along the factored dimension}}
tv.stage @mean assumes [#tv.lineage<"x"[0:1, 0:2] = ["x":0]>, #tv.lineage<"x"[1:2, 0:2] = ["x":1]>, #tv.lineage<"x"[2:3, 0:2] = ["x":2]>, #tv.lineage<"x"[3:4, 0:2] = ["x":3]>]
    guarantees [#tv.lineage<"m"[0:2] = ["m":0] | ["m":1] | ["m":2] | ["m":3]>] {
  tv.spec @spec {
    %0 = tv.input "x" : tensor<4x2xf32>
    %1 = tv.mean %0 dims [0] : tensor<4x2xf32> -> tensor<2xf32>
    tv.output "m", %1 : tensor<2xf32>
  }
  tv.plan @plan mesh @mesh micro_batches 1 {
    tv.rank_program [0, 1, 2, 3] {
      %0 = tv.input "x" : tensor<1x2xf32>
      %1 = tv.mean %0 dims [0] : tensor<1x2xf32> -> tensor<2xf32>
      %2 = tv.scale %1, 2.500000e-01 : tensor<2xf32>
      %3 = tv.all_reduce sum %2 {axes = ["dp"]} : tensor<2xf32> -> tensor<2xf32>
      tv.output "m", %3 : tensor<2xf32>
    }
  }
}

// Rank 3 runs its own (wrong) program: the stage is not folded and rank 3 is
// verified on its own.
// CHECK-LABEL: tv.stage @odd_rank
// CHECK: tv.rank_program [0, 1, 2]
// CHECK: tv.rank_program [3]
// expected-remark @+1 {{not folded along 'dp': rank 3 does not run the program of rank 0}}
tv.stage @odd_rank assumes [#tv.lineage<"x"[0:1, 0:2] = ["x":0]>, #tv.lineage<"x"[1:2, 0:2] = ["x":1]>, #tv.lineage<"x"[2:3, 0:2] = ["x":2]>, #tv.lineage<"x"[3:4, 0:2] = ["x":3]>]
    guarantees [#tv.lineage<"y"[0:1, 0:2] = ["y":0]>, #tv.lineage<"y"[1:2, 0:2] = ["y":1]>, #tv.lineage<"y"[2:3, 0:2] = ["y":2]>, #tv.lineage<"y"[3:4, 0:2] = ["y":3]>] {
  tv.spec @spec {
    %0 = tv.input "x" : tensor<4x2xf32>
    %1 = tv.exp %0 : tensor<4x2xf32>
    tv.output "y", %1 : tensor<4x2xf32>
  }
  tv.plan @plan mesh @mesh micro_batches 1 {
    tv.rank_program [0, 1, 2] {
      %0 = tv.input "x" : tensor<1x2xf32>
      %1 = tv.exp %0 : tensor<1x2xf32>
      tv.output "y", %1 : tensor<1x2xf32>
    }
    tv.rank_program [3] {
      %0 = tv.input "x" : tensor<1x2xf32>
      %1 = tv.exp %0 : tensor<1x2xf32>
      %2 = tv.scale %1, 2.000000e+00 : tensor<1x2xf32>
      tv.output "y", %2 : tensor<1x2xf32>
    }
  }
}

// Every rank reads the rows of rank 0 (a wrong data shard): x is the same on
// every rank while y is blockwise, so the stage is not folded and fails at
// ranks 1-3.
// CHECK-LABEL: tv.stage @same_rows
// CHECK-NOT: folded
// expected-remark @+1 {{not folded along 'dp': spec tensor 'y' is not factored the way its lineage is}}
tv.stage @same_rows assumes [#tv.lineage<"x"[0:1, 0:2] = ["x":0] | ["x":1] | ["x":2] | ["x":3]>]
    guarantees [#tv.lineage<"y"[0:1, 0:2] = ["y":0]>, #tv.lineage<"y"[1:2, 0:2] = ["y":1]>, #tv.lineage<"y"[2:3, 0:2] = ["y":2]>, #tv.lineage<"y"[3:4, 0:2] = ["y":3]>] {
  tv.spec @spec {
    %0 = tv.input "x" : tensor<4x2xf32>
    %1 = tv.exp %0 : tensor<4x2xf32>
    tv.output "y", %1 : tensor<4x2xf32>
  }
  tv.plan @plan mesh @mesh micro_batches 1 {
    tv.rank_program [0, 1, 2, 3] {
      %0 = tv.input "x" : tensor<1x2xf32>
      %1 = tv.exp %0 : tensor<1x2xf32>
      tv.output "y", %1 : tensor<1x2xf32>
    }
  }
}

// Ranks 2 and 3 were split out of the class by a change elsewhere, but run
// the same code in this stage: their programs are merged, then folded.
// CHECK-LABEL: tv.stage @split_same
// CHECK: folded ["dp"]
// CHECK-NEXT: tv.rank_program [0] {
// CHECK-NOT: tv.rank_program
tv.stage @split_same assumes [#tv.lineage<"x"[0:1, 0:2] = ["x":0]>, #tv.lineage<"x"[1:2, 0:2] = ["x":1]>, #tv.lineage<"x"[2:3, 0:2] = ["x":2]>, #tv.lineage<"x"[3:4, 0:2] = ["x":3]>]
    guarantees [#tv.lineage<"y"[0:1, 0:2] = ["y":0]>, #tv.lineage<"y"[1:2, 0:2] = ["y":1]>, #tv.lineage<"y"[2:3, 0:2] = ["y":2]>, #tv.lineage<"y"[3:4, 0:2] = ["y":3]>] {
  tv.spec @spec {
    %0 = tv.input "x" : tensor<4x2xf32>
    %1 = tv.mul %0, %0 : tensor<4x2xf32>, tensor<4x2xf32> -> tensor<4x2xf32>
    tv.output "y", %1 : tensor<4x2xf32>
  }
  tv.plan @plan mesh @mesh micro_batches 1 {
    tv.rank_program [0, 1] {
      %0 = tv.input "x" : tensor<1x2xf32>
      %1 = tv.mul %0, %0 : tensor<1x2xf32>, tensor<1x2xf32> -> tensor<1x2xf32>
      tv.output "y", %1 : tensor<1x2xf32>
    }
    tv.rank_program [2, 3] {
      %0 = tv.input "x" : tensor<1x2xf32>
      %1 = tv.mul %0, %0 : tensor<1x2xf32>, tensor<1x2xf32> -> tensor<1x2xf32>
      tv.output "y", %1 : tensor<1x2xf32>
    }
  }
}

// Programs that differ only in which value an op reads are not merged:
// rank 3 subtracts the other way round.
// CHECK-LABEL: tv.stage @split_differs
// CHECK: tv.rank_program [0, 1, 2]
// CHECK: tv.rank_program [3]
// expected-remark @+1 {{not folded along 'dp': rank 3 does not run the program of rank 0}}
tv.stage @split_differs assumes [#tv.lineage<"x"[0:1, 0:2] = ["x":0]>, #tv.lineage<"x"[1:2, 0:2] = ["x":1]>, #tv.lineage<"x"[2:3, 0:2] = ["x":2]>, #tv.lineage<"x"[3:4, 0:2] = ["x":3]>]
    guarantees [#tv.lineage<"y"[0:1, 0:2] = ["y":0]>, #tv.lineage<"y"[1:2, 0:2] = ["y":1]>, #tv.lineage<"y"[2:3, 0:2] = ["y":2]>, #tv.lineage<"y"[3:4, 0:2] = ["y":3]>] {
  tv.spec @spec {
    %0 = tv.input "x" : tensor<4x2xf32>
    %1 = tv.exp %0 : tensor<4x2xf32>
    %2 = tv.sub %1, %0 : tensor<4x2xf32>, tensor<4x2xf32> -> tensor<4x2xf32>
    tv.output "y", %2 : tensor<4x2xf32>
  }
  tv.plan @plan mesh @mesh micro_batches 1 {
    tv.rank_program [0, 1] {
      %0 = tv.input "x" : tensor<1x2xf32>
      %1 = tv.exp %0 : tensor<1x2xf32>
      %2 = tv.sub %1, %0 : tensor<1x2xf32>, tensor<1x2xf32> -> tensor<1x2xf32>
      tv.output "y", %2 : tensor<1x2xf32>
    }
    tv.rank_program [2] {
      %0 = tv.input "x" : tensor<1x2xf32>
      %1 = tv.exp %0 : tensor<1x2xf32>
      %2 = tv.sub %1, %0 : tensor<1x2xf32>, tensor<1x2xf32> -> tensor<1x2xf32>
      tv.output "y", %2 : tensor<1x2xf32>
    }
    tv.rank_program [3] {
      %0 = tv.input "x" : tensor<1x2xf32>
      %1 = tv.exp %0 : tensor<1x2xf32>
      %2 = tv.sub %0, %1 : tensor<1x2xf32>, tensor<1x2xf32> -> tensor<1x2xf32>
      tv.output "y", %2 : tensor<1x2xf32>
    }
  }
}

// A gradient whose lineage is the sum over the axis of per-rank terms (the
// distributed optimizer's reduced gradient before its reduce-scatter): the
// lineage sum plays the all-reduce's part. Folded, each group keeps its
// coordinate-0 term.
// CHECK-LABEL: tv.stage @sum_in_lineage
// CHECK-SAME: guarantees [#tv.lineage<"dw"[0:3, 0:2] = ["dw":0]>]
// CHECK: tv.linear_grad {{.*}} : tensor<1x2xf32>, tensor<3x2xf32>, tensor<1x3xf32>
// CHECK: folded ["dp"]
// CHECK-NEXT: tv.rank_program [0] {
tv.stage @sum_in_lineage assumes [#tv.lineage<"w"[0:3, 0:2] = "w":[0, 1, 2, 3]>, #tv.lineage<"x"[0:1, 0:2] = ["x":0]>, #tv.lineage<"x"[1:2, 0:2] = ["x":1]>, #tv.lineage<"x"[2:3, 0:2] = ["x":2]>, #tv.lineage<"x"[3:4, 0:2] = ["x":3]>, #tv.lineage<"g"[0:1, 0:3] = ["g":0]>, #tv.lineage<"g"[1:2, 0:3] = ["g":1]>, #tv.lineage<"g"[2:3, 0:3] = ["g":2]>, #tv.lineage<"g"[3:4, 0:3] = ["g":3]>]
    guarantees [#tv.lineage<"dw"[0:3, 0:2] = ["dw":0 + "dw":1 + "dw":2 + "dw":3]>] {
  tv.spec @spec {
    %x = tv.input "x" : tensor<4x2xf32>
    %w = tv.input "w" : tensor<3x2xf32>
    %g = tv.input "g" : tensor<4x3xf32>
    %dx, %dw = tv.linear_grad %x, %w, %g : tensor<4x2xf32>, tensor<3x2xf32>, tensor<4x3xf32>
    tv.output "dw", %dw : tensor<3x2xf32>
  }
  tv.plan @plan mesh @mesh micro_batches 1 {
    tv.rank_program [0, 1, 2, 3] {
      %x = tv.input "x" : tensor<1x2xf32>
      %w = tv.input "w" : tensor<3x2xf32>
      %g = tv.input "g" : tensor<1x3xf32>
      %dx, %dw = tv.linear_grad %x, %w, %g : tensor<1x2xf32>, tensor<3x2xf32>, tensor<1x3xf32>
      tv.output "dw", %dw : tensor<3x2xf32>
    }
  }
}

// The terms are already all-reduced: the lineage counts the gradient four
// times. Folding would make the sum a group of one and hide it: refused, and
// the whole stage is a counterexample.
// CHECK-LABEL: tv.stage @sum_in_lineage_of_sums
// CHECK-NOT: folded
// expected-remark @+1 {{not folded along 'dp': 'dw' sums over the axis in its lineage a term that is already a sum over it: dw on rank 0}}
tv.stage @sum_in_lineage_of_sums assumes [#tv.lineage<"w"[0:3, 0:2] = "w":[0, 1, 2, 3]>, #tv.lineage<"x"[0:1, 0:2] = ["x":0]>, #tv.lineage<"x"[1:2, 0:2] = ["x":1]>, #tv.lineage<"x"[2:3, 0:2] = ["x":2]>, #tv.lineage<"x"[3:4, 0:2] = ["x":3]>, #tv.lineage<"g"[0:1, 0:3] = ["g":0]>, #tv.lineage<"g"[1:2, 0:3] = ["g":1]>, #tv.lineage<"g"[2:3, 0:3] = ["g":2]>, #tv.lineage<"g"[3:4, 0:3] = ["g":3]>]
    guarantees [#tv.lineage<"dw"[0:3, 0:2] = ["dw":0 + "dw":1 + "dw":2 + "dw":3]>] {
  tv.spec @spec {
    %x = tv.input "x" : tensor<4x2xf32>
    %w = tv.input "w" : tensor<3x2xf32>
    %g = tv.input "g" : tensor<4x3xf32>
    %dx, %dw = tv.linear_grad %x, %w, %g : tensor<4x2xf32>, tensor<3x2xf32>, tensor<4x3xf32>
    tv.output "dw", %dw : tensor<3x2xf32>
  }
  tv.plan @plan mesh @mesh micro_batches 1 {
    tv.rank_program [0, 1, 2, 3] {
      %x = tv.input "x" : tensor<1x2xf32>
      %w = tv.input "w" : tensor<3x2xf32>
      %g = tv.input "g" : tensor<1x3xf32>
      %dx, %dw = tv.linear_grad %x, %w, %g : tensor<1x2xf32>, tensor<3x2xf32>, tensor<1x3xf32>
      %r = tv.all_reduce sum %dw {axes = ["dp"]} : tensor<3x2xf32> -> tensor<3x2xf32>
      tv.output "dw", %r : tensor<3x2xf32>
    }
  }
}

// A term of the sum is missing (rank 3's): not an orbit of the axis.
// Refused, and the whole stage is a counterexample.
// CHECK-LABEL: tv.stage @sum_in_lineage_partial
// CHECK-NOT: folded
// expected-remark @+1 {{not folded along 'dp': a lineage group of 'dw' sums tensors of different 'dp' coordinates}}
tv.stage @sum_in_lineage_partial assumes [#tv.lineage<"w"[0:3, 0:2] = "w":[0, 1, 2, 3]>, #tv.lineage<"x"[0:1, 0:2] = ["x":0]>, #tv.lineage<"x"[1:2, 0:2] = ["x":1]>, #tv.lineage<"x"[2:3, 0:2] = ["x":2]>, #tv.lineage<"x"[3:4, 0:2] = ["x":3]>, #tv.lineage<"g"[0:1, 0:3] = ["g":0]>, #tv.lineage<"g"[1:2, 0:3] = ["g":1]>, #tv.lineage<"g"[2:3, 0:3] = ["g":2]>, #tv.lineage<"g"[3:4, 0:3] = ["g":3]>]
    guarantees [#tv.lineage<"dw"[0:3, 0:2] = ["dw":0 + "dw":1 + "dw":2]>] {
  tv.spec @spec {
    %x = tv.input "x" : tensor<4x2xf32>
    %w = tv.input "w" : tensor<3x2xf32>
    %g = tv.input "g" : tensor<4x3xf32>
    %dx, %dw = tv.linear_grad %x, %w, %g : tensor<4x2xf32>, tensor<3x2xf32>, tensor<4x3xf32>
    tv.output "dw", %dw : tensor<3x2xf32>
  }
  tv.plan @plan mesh @mesh micro_batches 1 {
    tv.rank_program [0, 1, 2, 3] {
      %x = tv.input "x" : tensor<1x2xf32>
      %w = tv.input "w" : tensor<3x2xf32>
      %g = tv.input "g" : tensor<1x3xf32>
      %dx, %dw = tv.linear_grad %x, %w, %g : tensor<1x2xf32>, tensor<3x2xf32>, tensor<1x3xf32>
      tv.output "dw", %dw : tensor<3x2xf32>
    }
  }
}

// A correct plan whose lineage splits a replicated value into four equal
// parts: the spec is no sum over blocks, so the proof at one rank (w*2 =
// w/2) is not the claim. Refused; the whole stage is proven.
// CHECK-LABEL: tv.stage @sum_in_lineage_not_in_spec
// CHECK-NOT: folded
// expected-remark @+1 {{not folded along 'dp': 'y' is a sum over the axis in its lineage but not in the spec}}
tv.stage @sum_in_lineage_not_in_spec assumes [#tv.lineage<"w"[0:3, 0:2] = "w":[0, 1, 2, 3]>]
    guarantees [#tv.lineage<"y"[0:3, 0:2] = ["y":0 + "y":1 + "y":2 + "y":3]>] {
  tv.spec @spec {
    %w = tv.input "w" : tensor<3x2xf32>
    %y = tv.scale %w, 2.0 : tensor<3x2xf32>
    tv.output "y", %y : tensor<3x2xf32>
  }
  tv.plan @plan mesh @mesh micro_batches 1 {
    tv.rank_program [0, 1, 2, 3] {
      %w = tv.input "w" : tensor<3x2xf32>
      %y = tv.scale %w, 0.5 : tensor<3x2xf32>
      tv.output "y", %y : tensor<3x2xf32>
    }
  }
}

// A wrong plan folded through a sum in its lineage stays wrong: each term
// is half the local gradient.
// CHECK-LABEL: tv.stage @sum_in_lineage_halved
// CHECK: folded ["dp"]
tv.stage @sum_in_lineage_halved assumes [#tv.lineage<"w"[0:3, 0:2] = "w":[0, 1, 2, 3]>, #tv.lineage<"x"[0:1, 0:2] = ["x":0]>, #tv.lineage<"x"[1:2, 0:2] = ["x":1]>, #tv.lineage<"x"[2:3, 0:2] = ["x":2]>, #tv.lineage<"x"[3:4, 0:2] = ["x":3]>, #tv.lineage<"g"[0:1, 0:3] = ["g":0]>, #tv.lineage<"g"[1:2, 0:3] = ["g":1]>, #tv.lineage<"g"[2:3, 0:3] = ["g":2]>, #tv.lineage<"g"[3:4, 0:3] = ["g":3]>]
    guarantees [#tv.lineage<"dw"[0:3, 0:2] = ["dw":0 + "dw":1 + "dw":2 + "dw":3]>] {
  tv.spec @spec {
    %x = tv.input "x" : tensor<4x2xf32>
    %w = tv.input "w" : tensor<3x2xf32>
    %g = tv.input "g" : tensor<4x3xf32>
    %dx, %dw = tv.linear_grad %x, %w, %g : tensor<4x2xf32>, tensor<3x2xf32>, tensor<4x3xf32>
    tv.output "dw", %dw : tensor<3x2xf32>
  }
  tv.plan @plan mesh @mesh micro_batches 1 {
    tv.rank_program [0, 1, 2, 3] {
      %x = tv.input "x" : tensor<1x2xf32>
      %w = tv.input "w" : tensor<3x2xf32>
      %g = tv.input "g" : tensor<1x3xf32>
      %dx, %dw = tv.linear_grad %x, %w, %g : tensor<1x2xf32>, tensor<3x2xf32>, tensor<1x3xf32>
      %h = tv.scale %dw, 5.000000e-01 : tensor<3x2xf32>
      tv.output "dw", %h : tensor<3x2xf32>
    }
  }
}

// Two groups whose terms match each other crosswise (a, b, a, b and b, a,
// b, a): each group is the gradient (the w terms cancel), but coordinate
// 1's term of a group is not that group's coordinate-0 term moved, and the
// folded claim (dw = a at rank 0) would be a false alarm. Refused; the
// whole stage is proven.
// CHECK-LABEL: tv.stage @sum_in_lineage_crossed
// CHECK-NOT: folded
// expected-remark @+1 {{not folded along 'dp': a lineage group of 'dw' sums over 'dp' terms that are not its coordinate-0 terms translated}}
tv.stage @sum_in_lineage_crossed assumes [#tv.lineage<"w"[0:3, 0:2] = "w":[0, 1, 2, 3]>, #tv.lineage<"x"[0:1, 0:2] = ["x":0]>, #tv.lineage<"x"[1:2, 0:2] = ["x":1]>, #tv.lineage<"x"[2:3, 0:2] = ["x":2]>, #tv.lineage<"x"[3:4, 0:2] = ["x":3]>, #tv.lineage<"g"[0:1, 0:3] = ["g":0]>, #tv.lineage<"g"[1:2, 0:3] = ["g":1]>, #tv.lineage<"g"[2:3, 0:3] = ["g":2]>, #tv.lineage<"g"[3:4, 0:3] = ["g":3]>]
    guarantees [#tv.lineage<"dw"[0:3, 0:2] = ["a":0 + "b":1 + "a":2 + "b":3] | ["b":0 + "a":1 + "b":2 + "a":3]>] {
  tv.spec @spec {
    %x = tv.input "x" : tensor<4x2xf32>
    %w = tv.input "w" : tensor<3x2xf32>
    %g = tv.input "g" : tensor<4x3xf32>
    %dx, %dw = tv.linear_grad %x, %w, %g : tensor<4x2xf32>, tensor<3x2xf32>, tensor<4x3xf32>
    tv.output "dw", %dw : tensor<3x2xf32>
  }
  tv.plan @plan mesh @mesh micro_batches 1 {
    tv.rank_program [0, 1, 2, 3] {
      %x = tv.input "x" : tensor<1x2xf32>
      %w = tv.input "w" : tensor<3x2xf32>
      %g = tv.input "g" : tensor<1x3xf32>
      %dx, %dw = tv.linear_grad %x, %w, %g : tensor<1x2xf32>, tensor<3x2xf32>, tensor<1x3xf32>
      %a = tv.add %dw, %w : tensor<3x2xf32>, tensor<3x2xf32> -> tensor<3x2xf32>
      %b = tv.sub %dw, %w : tensor<3x2xf32>, tensor<3x2xf32> -> tensor<3x2xf32>
      tv.output "a", %a : tensor<3x2xf32>
      tv.output "b", %b : tensor<3x2xf32>
    }
  }
}

// Lineages that differ only in their scale are not translates: rank 3's
// claim is twice its value. Refused, and a counterexample in full.
// CHECK-LABEL: tv.stage @scale_differs
// CHECK-NOT: folded
// expected-remark @+1 {{not folded along 'dp': the lineages of 'dp' coordinate 3 are not those of coordinate 0 translated}}
tv.stage @scale_differs assumes [#tv.lineage<"x"[0:1, 0:2] = ["x":0]>, #tv.lineage<"x"[1:2, 0:2] = ["x":1]>, #tv.lineage<"x"[2:3, 0:2] = ["x":2]>, #tv.lineage<"x"[3:4, 0:2] = ["x":3]>]
    guarantees [#tv.lineage<"y"[0:1, 0:2] = ["y":0]>, #tv.lineage<"y"[1:2, 0:2] = ["y":1]>, #tv.lineage<"y"[2:3, 0:2] = ["y":2]>, #tv.lineage<"y"[3:4, 0:2] = ["y":3] scaled 2>] {
  tv.spec @spec {
    %0 = tv.input "x" : tensor<4x2xf32>
    %1 = tv.exp %0 : tensor<4x2xf32>
    tv.output "y", %1 : tensor<4x2xf32>
  }
  tv.plan @plan mesh @mesh micro_batches 1 {
    tv.rank_program [0, 1, 2, 3] {
      %0 = tv.input "x" : tensor<1x2xf32>
      %1 = tv.exp %0 : tensor<1x2xf32>
      tv.output "y", %1 : tensor<1x2xf32>
    }
  }
}

// The stage assumes a spec value that is a sum over the axis (a recomputed
// gradient, tagged): every rank's q is the whole gradient, and the plan
// all-reduces it again (four times the gradient). Folding would make the
// all-reduce a group of one and prove it. Refused; a counterexample.
// CHECK-LABEL: tv.stage @assumes_a_sum
// CHECK-NOT: folded
// expected-remark @+1 {{not folded along 'dp': the stage assumes 's', a sum over the axis in the spec}}
tv.stage @assumes_a_sum assumes [#tv.lineage<"w"[0:3, 0:2] = "w":[0, 1, 2, 3]>, #tv.lineage<"x"[0:1, 0:2] = ["x":0]>, #tv.lineage<"x"[1:2, 0:2] = ["x":1]>, #tv.lineage<"x"[2:3, 0:2] = ["x":2]>, #tv.lineage<"x"[3:4, 0:2] = ["x":3]>, #tv.lineage<"g"[0:1, 0:3] = ["g":0]>, #tv.lineage<"g"[1:2, 0:3] = ["g":1]>, #tv.lineage<"g"[2:3, 0:3] = ["g":2]>, #tv.lineage<"g"[3:4, 0:3] = ["g":3]>, #tv.lineage<"s"[0:3, 0:2] = ["q":0] | ["q":1] | ["q":2] | ["q":3]>]
    guarantees [#tv.lineage<"o"[0:3, 0:2] = ["o":0] | ["o":1] | ["o":2] | ["o":3]>] {
  tv.spec @spec {
    %x = tv.input "x" : tensor<4x2xf32>
    %w = tv.input "w" : tensor<3x2xf32>
    %g = tv.input "g" : tensor<4x3xf32>
    %dx, %dw = tv.linear_grad %x, %w, %g : tensor<4x2xf32>, tensor<3x2xf32>, tensor<4x3xf32>
    tv.tag "s", %dw : tensor<3x2xf32>
    tv.output "o", %dw : tensor<3x2xf32>
  }
  tv.plan @plan mesh @mesh micro_batches 1 {
    tv.rank_program [0, 1, 2, 3] {
      %x = tv.input "x" : tensor<1x2xf32>
      %w = tv.input "w" : tensor<3x2xf32>
      %g = tv.input "g" : tensor<1x3xf32>
      %q = tv.input "q" : tensor<3x2xf32>
      %o = tv.all_reduce sum %q {axes = ["dp"]} : tensor<3x2xf32> -> tensor<3x2xf32>
      tv.output "o", %o : tensor<3x2xf32>
    }
  }
}

// VERDICT-DAG: error: stage @missing_reduce: counterexample
// VERDICT-DAG: error: stage @avg_reduce: counterexample
// VERDICT-DAG: error: stage @odd_rank: counterexample: lineage 'y'[3:4, 0:2] = 'y'@3 does not hold
// VERDICT-DAG: error: stage @same_rows: counterexample: lineage 'y'[1:2, 0:2] = 'y'@1 does not hold
// VERDICT-DAG: error: stage @split_differs: counterexample: lineage 'y'[3:4, 0:2] = 'y'@3 does not hold
// VERDICT-DAG: error: stage @sum_in_lineage_of_sums: counterexample
// VERDICT-DAG: error: stage @sum_in_lineage_partial: counterexample
// VERDICT-DAG: error: stage @sum_in_lineage_halved: counterexample
// VERDICT-DAG: error: stage @scale_differs: counterexample
// VERDICT-DAG: error: stage @assumes_a_sum: counterexample
// VERDICT: tv-verify: counterexample in 10 stage(s)

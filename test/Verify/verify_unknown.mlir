// RUN: not tv-opt %s --tv-stage-partition --tv-verify -o /dev/null 2>&1 | FileCheck %s

// exp(a + b) = exp(a) * exp(b) holds in the reals, but exp is uninterpreted:
// the solver's counterexample does not replay on the real exp, so the
// verdict is unknown -- never proven, never a false counterexample.
tv.mesh @mesh axes ["tp"] sizes [1]
tv.spec @spec {
  %a = tv.input "a" : tensor<2xf32>
  %b = tv.input "b" : tensor<2xf32>
  %s = tv.add %a, %b : tensor<2xf32>, tensor<2xf32> -> tensor<2xf32>
  %y = tv.exp %s : tensor<2xf32>
  tv.output "y", %y : tensor<2xf32>
}
tv.plan @plan mesh @mesh micro_batches 1 {
  tv.rank_program [0] {
    %a = tv.input "a" : tensor<2xf32>
    %b = tv.input "b" : tensor<2xf32>
    %ea = tv.exp %a : tensor<2xf32>
    %eb = tv.exp %b : tensor<2xf32>
    %y = tv.mul %ea, %eb : tensor<2xf32>, tensor<2xf32> -> tensor<2xf32>
    tv.output "y", %y : tensor<2xf32>
  }
}
tv.lineage #tv.lineage<"a"[0:2] = ["a":0]>
tv.lineage #tv.lineage<"b"[0:2] = ["b":0]>
tv.lineage #tv.lineage<"y"[0:2] = ["y":0]>

// CHECK: error: stage @stage0_y: unknown: the solver's counterexample relies on the abstraction of non-linear functions and does not replay on their real semantics
// CHECK: tv-verify: unknown in 1 stage(s)
// CHECK-NOT: proven

// RUN: tv-opt %s --tv-stage-partition --tv-verify -o /dev/null > %t.out 2>&1; echo "status $?" >> %t.out
// RUN: FileCheck %s < %t.out

// One stage unknown (exp(a + b) against exp(a) * exp(b), exp uninterpreted),
// one with a counterexample (a wrong scale): the summary names both classes,
// and the exit status is the deciding one's (1, the plan is wrong).
tv.mesh @mesh axes ["tp"] sizes [1]
tv.spec @spec {
  %a = tv.input "a" : tensor<2xf32>
  %b = tv.input "b" : tensor<2xf32>
  %s = tv.add %a, %b : tensor<2xf32>, tensor<2xf32> -> tensor<2xf32>
  %y = tv.exp %s : tensor<2xf32>
  tv.output "y", %y : tensor<2xf32>
  %z = tv.scale %a, 2.0 : tensor<2xf32>
  tv.output "z", %z : tensor<2xf32>
}
tv.plan @plan mesh @mesh micro_batches 1 {
  tv.rank_program [0] {
    %a = tv.input "a" : tensor<2xf32>
    %b = tv.input "b" : tensor<2xf32>
    %ea = tv.exp %a : tensor<2xf32>
    %eb = tv.exp %b : tensor<2xf32>
    %y = tv.mul %ea, %eb : tensor<2xf32>, tensor<2xf32> -> tensor<2xf32>
    tv.output "y", %y : tensor<2xf32>
    %z = tv.scale %a, 3.0 : tensor<2xf32>
    tv.output "z", %z : tensor<2xf32>
  }
}
tv.lineage #tv.lineage<"a"[0:2] = ["a":0]>
tv.lineage #tv.lineage<"b"[0:2] = ["b":0]>
tv.lineage #tv.lineage<"y"[0:2] = ["y":0]>
tv.lineage #tv.lineage<"z"[0:2] = ["z":0]>

// CHECK-DAG: error: stage @{{.*}}_y: unknown
// CHECK-DAG: error: stage @{{.*}}_z: counterexample
// CHECK: tv-verify: counterexample in 1 stage(s), unknown in 1 stage(s)
// CHECK-NEXT: tv-verdict: wrong
// CHECK-NEXT: status 1

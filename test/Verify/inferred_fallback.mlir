// A stage that fails under an inferred cut says nothing about the plan
// (decision 97): --tv-verify drops the cut, cuts the program kept in
// tv.source again without it, and verifies that. Here the hypothesis about
// "h" (tp_mlp's hidden activation) is wrong on purpose: its column shards
// are swapped. The plan is right, and it is proven without the cut.

// RUN: tv-opt %s --tv-stage-partition --tv-shape-reduce --tv-verify -o /dev/null 2>&1 | FileCheck %s
// CHECK: tv-verify: inferred lineage(s) 'h' (counterexample in stage @stage0_h) not proven: cutting the program again without them
// CHECK-NOT: error
// CHECK: tv-verify: proven (7 stages
// CHECK: tv-verdict: proven

// The same wrong hypothesis given as a claim (no `inferred` mark) is a
// counterexample: only hypotheses are dropped.
// RUN: sed -e 's/ {inferred}//' -e 's/tv.inferred = \["h"\]/tv.other/' %s > %t.claim.mlir
// RUN: not tv-opt %t.claim.mlir --tv-stage-partition --tv-shape-reduce --tv-verify -o /dev/null 2>&1 | FileCheck %s --check-prefix=CLAIM
// CLAIM: error: stage @stage0_h: counterexample
// CLAIM: tv-verdict: wrong

// Without the kept whole program (partition told to keep none) nothing can
// be cut again: an error, never "proven".
// RUN: not tv-opt %s --tv-stage-partition=source-elements=0 --tv-shape-reduce --tv-verify -o /dev/null 2>&1 | FileCheck %s --check-prefix=NOSOURCE
// NOSOURCE: error: inferred lineage(s) 'h' (counterexample in stage @stage0_h) did not prove, and the module keeps no tv.source to cut again
// NOSOURCE-NOT: proven
// NOSOURCE: tv-verdict: input-error

module attributes {tv.inferred = ["h"]} {
  tv.mesh @mesh axes ["tp"] sizes [2]
  tv.spec @spec {
    %x = tv.input "x" : tensor<4x8xf32>
    %w1 = tv.input "w1" : tensor<16x8xf32>
    %w2 = tv.input "w2" : tensor<8x16xf32>
    %dy = tv.input "dy" : tensor<4x8xf32>
    %h = tv.linear %x, %w1 : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
    tv.tag "h", %h : tensor<4x16xf32>
    %a = tv.gelu %h : tensor<4x16xf32>
    tv.tag "a", %a : tensor<4x16xf32>
    %o = tv.linear %a, %w2 : (tensor<4x16xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
    tv.output "y", %o : tensor<4x8xf32>
    %da, %dw2 = tv.linear_grad %a, %w2, %dy : tensor<4x16xf32>, tensor<8x16xf32>, tensor<4x8xf32>
    tv.tag "da", %da : tensor<4x16xf32>
    %dh = tv.gelu_grad %h, %da : tensor<4x16xf32>
    tv.tag "dh", %dh : tensor<4x16xf32>
    %dx, %dw1 = tv.linear_grad %x, %w1, %dh : tensor<4x8xf32>, tensor<16x8xf32>, tensor<4x16xf32>
    tv.output "dx", %dx : tensor<4x8xf32>
    tv.output "dw1", %dw1 : tensor<16x8xf32>
    tv.output "dw2", %dw2 : tensor<8x16xf32>
  }
  tv.plan @plan mesh @mesh micro_batches 1 {
    tv.rank_program [0, 1] {
      %x = tv.input "x" : tensor<4x8xf32>
      %dy = tv.input "dy" : tensor<4x8xf32>
      %w1 = tv.input "w1" : tensor<8x8xf32>
      %w2 = tv.input "w2" : tensor<8x8xf32>
      %h = tv.linear %x, %w1 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
      tv.tag "h", %h : tensor<4x8xf32>
      %a = tv.gelu %h : tensor<4x8xf32>
      tv.tag "a", %a : tensor<4x8xf32>
      %o_part = tv.linear %a, %w2 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
      %o = tv.all_reduce sum %o_part {axes = ["tp"]} : tensor<4x8xf32> -> tensor<4x8xf32>
      tv.output "y", %o : tensor<4x8xf32>
      %da, %dw2 = tv.linear_grad %a, %w2, %dy : tensor<4x8xf32>, tensor<8x8xf32>, tensor<4x8xf32>
      tv.tag "da", %da : tensor<4x8xf32>
      %dh = tv.gelu_grad %h, %da : tensor<4x8xf32>
      tv.tag "dh", %dh : tensor<4x8xf32>
      %dx_part, %dw1 = tv.linear_grad %x, %w1, %dh : tensor<4x8xf32>, tensor<8x8xf32>, tensor<4x8xf32>
      %dx = tv.all_reduce sum %dx_part {axes = ["tp"]} : tensor<4x8xf32> -> tensor<4x8xf32>
      tv.output "dx", %dx : tensor<4x8xf32>
      tv.output "dw1", %dw1 : tensor<8x8xf32>
      tv.output "dw2", %dw2 : tensor<8x8xf32>
    }
  }
  tv.lineage #tv.lineage<"x"[0:4, 0:8] = ["x":0] | ["x":1]>
  tv.lineage #tv.lineage<"dy"[0:4, 0:8] = ["dy":0] | ["dy":1]>
  tv.lineage #tv.lineage<"y"[0:4, 0:8] = ["y":0] | ["y":1]>
  tv.lineage #tv.lineage<"dx"[0:4, 0:8] = ["dx":0] | ["dx":1]>
  tv.lineage #tv.lineage<"w1"[0:8, 0:8] = ["w1":0]>
  tv.lineage #tv.lineage<"w1"[8:16, 0:8] = ["w1":1]>
  tv.lineage #tv.lineage<"dw1"[0:8, 0:8] = ["dw1":0]>
  tv.lineage #tv.lineage<"dw1"[8:16, 0:8] = ["dw1":1]>
  tv.lineage #tv.lineage<"w2"[0:8, 0:8] = ["w2":0]>
  tv.lineage #tv.lineage<"w2"[0:8, 8:16] = ["w2":1]>
  tv.lineage #tv.lineage<"dw2"[0:8, 0:8] = ["dw2":0]>
  tv.lineage #tv.lineage<"dw2"[0:8, 8:16] = ["dw2":1]>
  tv.lineage #tv.lineage<"h"[0:4, 0:8] = ["h":1]> {inferred}
  tv.lineage #tv.lineage<"h"[0:4, 8:16] = ["h":0]> {inferred}
  tv.lineage #tv.lineage<"a"[0:4, 0:8] = ["a":0]>
  tv.lineage #tv.lineage<"a"[0:4, 8:16] = ["a":1]>
  tv.lineage #tv.lineage<"da"[0:4, 0:8] = ["da":0]>
  tv.lineage #tv.lineage<"da"[0:4, 8:16] = ["da":1]>
  tv.lineage #tv.lineage<"dh"[0:4, 0:8] = ["dh":0]>
  tv.lineage #tv.lineage<"dh"[0:4, 8:16] = ["dh":1]>
}

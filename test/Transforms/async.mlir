// Asynchronous collectives (issue 36, decision 111): an all-reduce launched
// with `async` is in flight until its tv.wait, and compute that does not
// read it overlaps it. Without a race the plan means its synchronous form:
// the collective stays where it was launched (the place the members match
// it by) and the wait's readers read it.
// RUN: tv-opt %s --tv-ssa-canonicalize | FileCheck %s
// The README's three-pass command proves it.
// RUN: tv-opt %s --tv-stage-partition --tv-shape-reduce --tv-verify -o /dev/null 2>&1 | FileCheck %s --check-prefix=PROVEN
// PROVEN: tv-verdict: proven
// The JSON plan format carries `async` and tv.wait: exported and read
// back, the plan is proven the same.
// RUN: tv-translate --export-json-plan %s -o %t.json
// RUN: tv-translate --import-json-plan %t.json | tv-opt --tv-stage-partition --tv-shape-reduce --tv-verify -o /dev/null 2>&1 | FileCheck %s --check-prefix=PROVEN
// Without its wait, the all-reduce is an orphaned handle and the plan a
// wrong one (exit 1), at the README's three passes.
// RUN: sed -e '/tv.wait/d' -e 's/^    tv.output "y", %%y/    tv.output "y", %%r/' %s > %t.race.mlir
// RUN: not tv-opt %t.race.mlir --tv-stage-partition --tv-shape-reduce --tv-verify -o /dev/null 2>&1 | FileCheck %s --check-prefix=RACE
// RACE: error: race: the asynchronous 'tv.all_reduce' at {{.*}} is never waited (an orphaned handle)
// RACE: tv-verdict: wrong

// CHECK-LABEL: tv.rank_program [0, 1]
// CHECK: tv.gelu
// CHECK-NEXT: %[[P:.*]] = tv.linear
// CHECK-NEXT: %[[Y:.*]] = tv.all_reduce sum %[[P]] {axes = ["tp"]}
// CHECK-NEXT: tv.gelu
// CHECK-NOT: tv.wait
// CHECK: tv.output "y", %[[Y]]

tv.mesh @mesh axes ["tp"] sizes [2]
tv.spec @spec {
  %x = tv.input "x" : tensor<4x8xf32>
  %w1 = tv.input "w1" : tensor<16x8xf32>
  %w2 = tv.input "w2" : tensor<8x16xf32>
  %h = tv.linear %x, %w1 : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  %a = tv.gelu %h : tensor<4x16xf32>
  %y = tv.linear %a, %w2 : (tensor<4x16xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  tv.output "y", %y : tensor<4x8xf32>
  %z = tv.gelu %x : tensor<4x8xf32>
  tv.output "z", %z : tensor<4x8xf32>
}
tv.plan @plan mesh @mesh micro_batches 1 {
  tv.rank_program [0, 1] {
    %x = tv.input "x" : tensor<4x8xf32>
    %w1 = tv.input "w1" : tensor<8x8xf32>
    %w2 = tv.input "w2" : tensor<8x8xf32>
    %h = tv.linear %x, %w1 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    %a = tv.gelu %h : tensor<4x8xf32>
    %p = tv.linear %a, %w2 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    %r = tv.all_reduce sum %p {async, axes = ["tp"]} : tensor<4x8xf32> -> tensor<4x8xf32>
    %z = tv.gelu %x : tensor<4x8xf32>
    tv.output "z", %z : tensor<4x8xf32>
    %y = tv.wait %r : tensor<4x8xf32>
    tv.output "y", %y : tensor<4x8xf32>
  }
}
tv.lineage #tv.lineage<"x"[0:4, 0:8] = ["x":0] | ["x":1]>
tv.lineage #tv.lineage<"w1"[0:8, 0:8] = ["w1":0]>
tv.lineage #tv.lineage<"w1"[8:16, 0:8] = ["w1":1]>
tv.lineage #tv.lineage<"w2"[0:8, 0:8] = ["w2":0]>
tv.lineage #tv.lineage<"w2"[0:8, 8:16] = ["w2":1]>
tv.lineage #tv.lineage<"y"[0:4, 0:8] = ["y":0] | ["y":1]>
tv.lineage #tv.lineage<"z"[0:4, 0:8] = ["z":0] | ["z":1]>

// Rank programs in phases (decision 124): both ranks share phase 0 (a
// gradient summed over dp and a linked shard), each steps its own half in
// phase 1, as a distributed optimizer does. Every pass reads the plan
// joined: one program per rank, the name link an SSA value.
// RUN: tv-opt %s | tv-opt | FileCheck %s --check-prefix=ROUND
// RUN: tv-opt %s --tv-ssa-canonicalize | FileCheck %s --check-prefix=JOINED
// RUN: tv-opt %s --tv-stage-partition --tv-shape-reduce --tv-verify -o /dev/null 2>&1 | FileCheck %s --check-prefix=PROVEN
// RUN: tv-opt %s --tv-interpret -o /dev/null 2>&1 | FileCheck %s --check-prefix=INTERP
// RUN: tv-opt %s --tv-check-lineage -o /dev/null
// A linked output is not a plan tensor: a lineage naming it is refused (a
// tensor that needs one is named with tv.tag).
// RUN: (cat %s; echo 'tv.lineage #tv.lineage<"g"[0:4] = ["gsum":0] | ["gsum":1]>') | not tv-opt --tv-check-lineage -o /dev/null 2>&1 | FileCheck %s --check-prefix=LINK
// LINK: lineage refers to plan tensor 'gsum' that rank 0 does not define
// RUN: sed -e 's/start \[2\] : tensor<4xf32> -> tensor<2xf32> loc("own1")/start [0] : tensor<4xf32> -> tensor<2xf32> loc("own1")/' %s | not tv-opt --tv-stage-partition --tv-shape-reduce --tv-verify -o /dev/null 2>&1 | FileCheck %s --check-prefix=WRONG

// ROUND: tv.rank_program [0, 1] {
// ROUND: tv.rank_program [0] phase 1 {
// ROUND: tv.rank_program [1] phase 1 {

// JOINED: tv.plan @plan
// JOINED-NEXT: tv.rank_program [0] {
// JOINED-NEXT: %{{.*}} = tv.input "g"
// JOINED-NEXT: %[[S0:.*]] = tv.all_reduce
// JOINED-NEXT: %{{.*}} = tv.input "w0"
// JOINED-NEXT: %[[O0:.*]] = tv.slice %[[S0]] start [0]
// JOINED-NOT: tv.output "gsum"
// JOINED: tv.rank_program [1] {
// JOINED-NEXT: %{{.*}} = tv.input "g"
// JOINED-NEXT: %[[S1:.*]] = tv.all_reduce
// JOINED-NEXT: %{{.*}} = tv.input "w1"
// JOINED-NEXT: %{{.*}} = tv.slice %[[S1]] start [2]
// JOINED-NOT: ] phase
// JOINED-NOT: tv.output "gsum"

// PROVEN: tv-verify: proven
// INTERP-NOT: mismatch
// INTERP: tv-interpret
// WRONG: plan 'w.new1'@1 = {{.*}} <-- mismatch
// WRONG: tv-verify: counterexample

tv.mesh @mesh axes ["dp"] sizes [2]
tv.spec @spec {
  %g = tv.input "g" : tensor<4xf32>
  %w = tv.input "w" : tensor<4xf32>
  %n = tv.sgd %w, %g lr 1.000000e-01 : tensor<4xf32>
  tv.output "w.new", %n : tensor<4xf32>
}
tv.plan @plan mesh @mesh micro_batches 1 {
  tv.rank_program [0, 1] {
    %g = tv.input "g" : tensor<4xf32>
    %s = tv.all_reduce sum %g {axes = ["dp"]} : tensor<4xf32> -> tensor<4xf32>
    tv.output "gsum", %s : tensor<4xf32>
  }
  tv.rank_program [0] phase 1 {
    %s = tv.input "gsum" : tensor<4xf32>
    %w = tv.input "w0" : tensor<2xf32>
    %o = tv.slice %s start [0] : tensor<4xf32> -> tensor<2xf32> loc("own0")
    %n = tv.sgd %w, %o lr 1.000000e-01 : tensor<2xf32>
    tv.output "w.new0", %n : tensor<2xf32>
  }
  tv.rank_program [1] phase 1 {
    %s = tv.input "gsum" : tensor<4xf32>
    %w = tv.input "w1" : tensor<2xf32>
    %o = tv.slice %s start [2] : tensor<4xf32> -> tensor<2xf32> loc("own1")
    %n = tv.sgd %w, %o lr 1.000000e-01 : tensor<2xf32>
    tv.output "w.new1", %n : tensor<2xf32>
  }
}
tv.lineage #tv.lineage<"g"[0:4] = ["g":0 + "g":1]>
tv.lineage #tv.lineage<"w"[0:2] = ["w0":0]>
tv.lineage #tv.lineage<"w"[2:4] = ["w1":1]>
tv.lineage #tv.lineage<"w.new"[0:2] = ["w.new0":0]>
tv.lineage #tv.lineage<"w.new"[2:4] = ["w.new1":1]>

// --tv-infer-lineage relates plan values to spec values on exact values and
// adds the relations as lineages marked `inferred` (decision 97). With the
// given intermediate lineages removed, tp_mlp's are found again: the hidden
// activations and their gradients, column shards of the spec tensors.

// RUN: tv-opt %examples/tp_mlp.mlir --tv-infer-lineage=drop-intermediate --mlir-print-debuginfo=false 2>&1 | FileCheck %s
// CHECK: tv-infer-lineage: 4 intermediate tensor(s) related (8 lineage(s))
// CHECK: module attributes {tv.canonical, tv.inferred = ["h", "a", "da", "dh"]}
// CHECK-NOT: tv.lineage <"h"
// CHECK: tv.lineage <"w1"[0:8, 0:8] = ["w1":0]>
// CHECK-NOT: {inferred}
// CHECK: tv.lineage <"h"[0:4, 0:8] = ["h":0]> {inferred}
// CHECK-NEXT: tv.lineage <"h"[0:4, 8:16] = ["h":1]> {inferred}
// CHECK-NEXT: tv.lineage <"a"[0:4, 0:8] = ["a":0]> {inferred}
// CHECK-NEXT: tv.lineage <"a"[0:4, 8:16] = ["a":1]> {inferred}
// CHECK-NEXT: tv.lineage <"da"[0:4, 0:8] = ["da":0]> {inferred}
// CHECK-NEXT: tv.lineage <"da"[0:4, 8:16] = ["da":1]> {inferred}
// CHECK-NEXT: tv.lineage <"dh"[0:4, 0:8] = ["dh":0]> {inferred}
// CHECK-NEXT: tv.lineage <"dh"[0:4, 8:16] = ["dh":1]> {inferred}

// Partial sums (a row-parallel linear before its all-reduce) and replicas,
// in the text --tv-suggest-lineage writes for a user to review and paste.
// The spec tensor without a name gets a tag.
// RUN: tv-opt %examples/dp2_pp2_tp2.mlir --tv-suggest-lineage=drop-intermediate -o %t.tagged.mlir 2>&1 | FileCheck %s --check-prefix=SUGGEST
// SUGGEST: // tv-suggest-lineage: 100 lineage(s) found on random inputs; review before pasting
// SUGGEST: // spec: tv.tag "inferred_linear" after 'tv.linear' at loc("{{.*}}dp2_pp2_tp2.mlir":20:8)
// SUGGEST: tv.lineage #tv.lineage<"l0_h"[0:4, 0:128] = ["l0_h_mb0":0]>
// SUGGEST: tv.lineage #tv.lineage<"inferred_linear"[0:4, 0:128] = ["inferred_linear":0] | ["inferred_linear":1] | ["inferred_linear_1":0 + "inferred_linear_1":1]>
// The module gets the tags, not the lineages.
// RUN: FileCheck %s --check-prefix=TAGGED < %t.tagged.mlir
// TAGGED-NOT: inferred}
// TAGGED: tv.tag "inferred_linear"
// TAGGED-NOT: tv.inferred

// The stripped examples are proven through inferred cuts, with as many
// stages as with their own lineages or close.
// RUN: tv-opt %examples/tp_mlp.mlir --tv-infer-lineage=drop-intermediate --tv-stage-partition --tv-shape-reduce --tv-verify -o /dev/null 2>&1 | FileCheck %s --check-prefix=PROVEN
// RUN: tv-opt %examples/dp2_pp2_tp2.mlir --tv-infer-lineage=drop-intermediate --tv-stage-partition --tv-shape-reduce --tv-verify -o /dev/null 2>&1 | FileCheck %s --check-prefix=PROVEN
// RUN: tv-opt %examples/pp2.mlir --tv-infer-lineage=drop-intermediate --tv-stage-partition --tv-shape-reduce --tv-verify -o /dev/null 2>&1 | FileCheck %s --check-prefix=PROVEN
// PROVEN-NOT: not proven
// PROVEN: tv-verify: proven
// PROVEN: tv-verdict: proven

// A wrong plan stays wrong: its bug relates to nothing, so no inferred cut
// hides it, and the counterexample is a given lineage's.
// RUN: tv-opt %examples/dp2_pp2_tp2.mlir --tv-inject-bug="bug=missing-allreduce" -o %t.bug.mlir
// RUN: not tv-opt %t.bug.mlir --tv-infer-lineage=drop-intermediate --tv-stage-partition --tv-shape-reduce --tv-verify -o /dev/null 2>&1 | FileCheck %s --check-prefix=WRONG
// WRONG: error: stage @{{.*}}: counterexample: lineage 'loss'[] = 'loss'@2 does not hold
// WRONG: tv-verdict: wrong

// A plan that cannot run (here a deadlock) gets no inferred lineage, and
// the verification that follows reports the deadlock as such.
// RUN: tv-opt %examples/dp2_pp2_tp2.mlir --tv-inject-bug="bug=wrong-pp-peer" -o %t.peer.mlir
// RUN: not tv-opt %t.peer.mlir --tv-infer-lineage=drop-intermediate --tv-stage-partition --tv-shape-reduce --tv-verify -o /dev/null 2>&1 | FileCheck %s --check-prefix=PEER
// PEER: warning: no lineage inferred: plan deadlocks
// PEER-NOT: tv-verdict: proven
// PEER: tv-verdict:

// An output file that cannot be written is an error, before anything is
// printed.
// RUN: not tv-opt %examples/tp_mlp.mlir --tv-suggest-lineage="output=%t.no/such/dir/s.txt" -o /dev/null 2>&1 | FileCheck %s --check-prefix=NOFILE
// NOFILE: error: cannot write '{{.*}}s.txt'

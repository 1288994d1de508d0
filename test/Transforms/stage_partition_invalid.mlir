// RUN: tv-opt %s --tv-stage-partition --split-input-file --verify-diagnostics

// Broken dataflow: the plan computes y from a tensor without lineage.
tv.mesh @mesh axes ["tp"] sizes [1]
tv.spec @spec {
  %x = tv.input "x" : tensor<4xf32>
  %y = tv.exp %x : tensor<4xf32>
  tv.output "y", %y : tensor<4xf32>
}
tv.plan @plan mesh @mesh micro_batches 1 {
  tv.rank_program [0] {
    %x = tv.input "x" : tensor<4xf32>
    // expected-error @+1 {{unreachable lineage: spec tensor 'y' is computed on the plan from plan input 'stale' on rank 0, which carries no lineage; plan targets: 'y'@0; candidate sources (the spec computes 'y' from): 'x' (plan 'x'@0)}}
    %s = tv.input "stale" : tensor<4xf32>
    %y = tv.exp %s : tensor<4xf32>
    tv.output "y", %y : tensor<4xf32>
  }
}
tv.lineage #tv.lineage<"x"[0:4] = ["x":0]>
tv.lineage #tv.lineage<"y"[0:4] = ["y":0]>

// -----

// A pipeline peer that never sends: rank 1 waits forever.
tv.mesh @mesh axes ["pp"] sizes [3]
tv.spec @spec {
  %x = tv.input "x" : tensor<4xf32>
  %y = tv.exp %x : tensor<4xf32>
  tv.output "y", %y : tensor<4xf32>
}
tv.plan @plan mesh @mesh micro_batches 1 {
  tv.rank_program [0] {
    %x = tv.input "x" : tensor<4xf32>
    // expected-note @+1 {{unmatched send from rank 0 to rank 2 (tag 0)}}
    tv.send %x {peer = 2} : tensor<4xf32>
  }
  tv.rank_program [1] {
    // expected-error @+1 {{plan deadlocks: ranks {1} never complete; rank 1 waits in 'tv.recv' for a send from rank 0 (tag 0) that never comes}}
    %r = tv.recv {peer = 0} : tensor<4xf32>
    %y = tv.exp %r : tensor<4xf32>
    tv.output "y", %y : tensor<4xf32>
  }
  tv.rank_program [2] {
  }
}
tv.lineage #tv.lineage<"x"[0:4] = ["x":0]>
tv.lineage #tv.lineage<"y"[0:4] = ["y":1]>

// -----

// Members of one collective disagree on what it is.
tv.mesh @mesh axes ["tp"] sizes [2]
tv.spec @spec {
  %x = tv.input "x" : tensor<4xf32>
  tv.output "y", %x : tensor<4xf32>
}
tv.plan @plan mesh @mesh micro_batches 1 {
  tv.rank_program [0] {
    %x = tv.input "x" : tensor<2xf32>
    // expected-note @+1 {{the other member}}
    %y = tv.all_gather %x dim 0 {axes = ["tp"]} : tensor<2xf32> -> tensor<4xf32>
    tv.output "y", %y : tensor<4xf32>
  }
  tv.rank_program [1] {
    %x = tv.input "x" : tensor<2xf32>
    // expected-error @+1 {{collective mismatch on group {0, 1} (collective #0 of the group): rank 1 runs 'tv.all_reduce' 'tensor<2xf32>' {axes = ["tp"], kind = #tv<reduce_kind sum>} but rank 0 runs 'tv.all_gather' 'tensor<2xf32>' {axes = ["tp"], dim = 0 : i64}}}
    %y = tv.all_reduce sum %x {axes = ["tp"]} : tensor<2xf32> -> tensor<2xf32>
    tv.output "y", %y : tensor<2xf32>
  }
}
tv.lineage #tv.lineage<"x"[0:2] = ["x":0]>
tv.lineage #tv.lineage<"x"[2:4] = ["x":1]>
tv.lineage #tv.lineage<"y"[0:4] = ["y":0]>

// -----

// expected-error @+1 {{nothing to verify: no computed spec tensor carries a lineage}}
module {
  tv.mesh @mesh axes ["tp"] sizes [1]
  tv.spec @spec {
    %x = tv.input "x" : tensor<4xf32>
    tv.output "x2", %x : tensor<4xf32>
  }
  tv.plan @plan mesh @mesh micro_batches 1 {
    tv.rank_program [0] {
      %x = tv.input "x" : tensor<4xf32>
    }
  }
  tv.lineage #tv.lineage<"x"[0:4] = ["x":0]>
  tv.lineage #tv.lineage<"x2"[0:4] = ["x":0]>
}

// -----

// expected-error @+1 {{module needs a tv.spec and a tv.plan}}
module {
  tv.mesh @mesh axes ["tp"] sizes [1]
}

// -----

// Two stages with broken dataflow, drafted in parallel: only the first in
// lineage order reports, as a walk in order would.
tv.mesh @mesh axes ["tp"] sizes [1]
tv.spec @spec {
  %x = tv.input "x" : tensor<4xf32>
  %y = tv.exp %x : tensor<4xf32>
  %z = tv.neg %x : tensor<4xf32>
  tv.output "y", %y : tensor<4xf32>
  tv.output "z", %z : tensor<4xf32>
}
tv.plan @plan mesh @mesh micro_batches 1 {
  tv.rank_program [0] {
    %x = tv.input "x" : tensor<4xf32>
    // expected-error @+1 {{unreachable lineage: spec tensor 'y' is computed on the plan from plan input 'stale_y' on rank 0}}
    %s = tv.input "stale_y" : tensor<4xf32>
    %t = tv.input "stale_z" : tensor<4xf32>
    %y = tv.exp %s : tensor<4xf32>
    %z = tv.neg %t : tensor<4xf32>
    tv.output "y", %y : tensor<4xf32>
    tv.output "z", %z : tensor<4xf32>
  }
}
tv.lineage #tv.lineage<"x"[0:4] = ["x":0]>
tv.lineage #tv.lineage<"y"[0:4] = ["y":0]>
tv.lineage #tv.lineage<"z"[0:4] = ["z":0]>

// RUN: tv-opt %s --tv-stage-partition --split-input-file --verify-diagnostics
// A deadlock in a collective names the members of its group that never
// join it, with their mesh coordinates and where they are instead.

// The tied-embedding gradient all-reduce left out on the last pipeline
// stage: the first stage waits for a rank whose program ends without it.
tv.mesh @mesh axes ["dp", "pp"] sizes [1, 2]
tv.spec @spec {
  %x = tv.input "x" : tensor<4xf32>
  %y = tv.exp %x : tensor<4xf32>
  tv.output "y", %y : tensor<4xf32>
}
tv.plan @plan mesh @mesh micro_batches 1 {
  tv.rank_program [0] {
    %x = tv.input "x" : tensor<4xf32>
    %e = tv.exp %x : tensor<4xf32>
    // expected-error @+1 {{plan deadlocks: ranks {0} never complete; rank 0 waits in 'tv.all_reduce' of group {0, 1}, which rank {1} never joins: rank 1 (dp=0, pp=1) ends its program without it}}
    %y = tv.all_reduce sum %e {rank_groups = [array<i64: 0, 1>]} : tensor<4xf32> -> tensor<4xf32>
    tv.output "y", %y : tensor<4xf32>
  }
  tv.rank_program [1] {
    %x = tv.input "x" : tensor<4xf32>
    %y = tv.exp %x : tensor<4xf32>
    tv.output "y", %y : tensor<4xf32>
  }
}
tv.lineage #tv.lineage<"x"[0:4] = ["x":0]>
tv.lineage #tv.lineage<"y"[0:4] = ["y":0]>

// -----

// Several collectives wait: the one reported is the one a member never
// joins because its program has ended (rank 2), not the one rank 1 is
// late for because it waits on rank 2.
tv.mesh @mesh axes ["pp"] sizes [3]
tv.spec @spec {
  %x = tv.input "x" : tensor<4xf32>
  tv.output "y", %x : tensor<4xf32>
}
tv.plan @plan mesh @mesh micro_batches 1 {
  tv.rank_program [0] {
    %x = tv.input "x" : tensor<4xf32>
    %y = tv.all_reduce sum %x {rank_groups = [array<i64: 0, 1>]} : tensor<4xf32> -> tensor<4xf32>
    tv.output "y", %y : tensor<4xf32>
  }
  tv.rank_program [1] {
    %x = tv.input "x" : tensor<4xf32>
    // expected-error @+1 {{plan deadlocks: ranks {0, 1} never complete; rank 1 waits in 'tv.all_reduce' of group {1, 2}, which rank {2} never joins: rank 2 (pp=2) ends its program without it}}
    %a = tv.all_reduce sum %x {rank_groups = [array<i64: 1, 2>]} : tensor<4xf32> -> tensor<4xf32>
    %y = tv.all_reduce sum %a {rank_groups = [array<i64: 0, 1>]} : tensor<4xf32> -> tensor<4xf32>
    tv.output "y", %y : tensor<4xf32>
  }
  tv.rank_program [2] {
    %x = tv.input "x" : tensor<4xf32>
    tv.output "y", %x : tensor<4xf32>
  }
}
tv.lineage #tv.lineage<"x"[0:4] = ["x":0]>
tv.lineage #tv.lineage<"y"[0:4] = ["y":0]>

// -----

// A cycle of collectives: every rank waits for the next; the member that
// never joins is shown where it waits instead.
tv.mesh @mesh axes ["pp"] sizes [3]
tv.spec @spec {
  %x = tv.input "x" : tensor<4xf32>
  tv.output "y", %x : tensor<4xf32>
}
tv.plan @plan mesh @mesh micro_batches 1 {
  tv.rank_program [0] {
    %x = tv.input "x" : tensor<4xf32>
    // expected-error @+1 {{plan deadlocks: ranks {0, 1, 2} never complete; rank 0 waits in 'tv.all_reduce' of group {0, 1}, which rank {1} never joins: rank 1 (pp=1) waits in 'tv.all_reduce'}}
    %a = tv.all_reduce sum %x {rank_groups = [array<i64: 0, 1>]} : tensor<4xf32> -> tensor<4xf32>
    %y = tv.all_reduce sum %a {rank_groups = [array<i64: 0, 2>]} : tensor<4xf32> -> tensor<4xf32>
    tv.output "y", %y : tensor<4xf32>
  }
  tv.rank_program [1] {
    %x = tv.input "x" : tensor<4xf32>
    // expected-note @+1 {{rank 1 waits here instead of joining}}
    %a = tv.all_reduce sum %x {rank_groups = [array<i64: 1, 2>]} : tensor<4xf32> -> tensor<4xf32>
    %y = tv.all_reduce sum %a {rank_groups = [array<i64: 0, 1>]} : tensor<4xf32> -> tensor<4xf32>
    tv.output "y", %y : tensor<4xf32>
  }
  tv.rank_program [2] {
    %x = tv.input "x" : tensor<4xf32>
    %a = tv.all_reduce sum %x {rank_groups = [array<i64: 0, 2>]} : tensor<4xf32> -> tensor<4xf32>
    %y = tv.all_reduce sum %a {rank_groups = [array<i64: 1, 2>]} : tensor<4xf32> -> tensor<4xf32>
    tv.output "y", %y : tensor<4xf32>
  }
}
tv.lineage #tv.lineage<"x"[0:4] = ["x":0]>
tv.lineage #tv.lineage<"y"[0:4] = ["y":0]>

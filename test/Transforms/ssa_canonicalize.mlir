// RUN: tv-opt %s --tv-ssa-canonicalize | FileCheck %s
// Idempotent: a second run changes nothing.
// RUN: tv-opt %s --tv-ssa-canonicalize > %t.1.mlir
// RUN: tv-opt %t.1.mlir --tv-ssa-canonicalize > %t.2.mlir
// RUN: diff %t.1.mlir %t.2.mlir
// The module is marked canonical, so partition and bug injection (which need
// this form) do not canonicalize it again; a mutant is not marked.
// RUN: FileCheck %s --check-prefix=MARK < %t.1.mlir
// MARK: module attributes {tv.canonical}
// RUN: tv-opt %S/../../examples/tp_mlp.mlir --tv-ssa-canonicalize | tv-opt --tv-inject-bug=bug=missing-allreduce | FileCheck %s --check-prefix=MUTANT
// MUTANT-NOT: tv.canonical

tv.mesh @m axes ["dp", "tp"] sizes [2, 2]

// Identities and redundant copies fold away; a result that carries a name
// of its own stays (folding it would hide the op that computes the name).
// CHECK-LABEL: tv.spec @s
// CHECK: %[[X:.*]] = tv.input "x"
// CHECK-NOT: tv.copy
// CHECK: %[[Y:.*]] = tv.scale %[[X]], 1.0
// CHECK: tv.output "y", %[[Y]]
// CHECK: %[[Z:.*]] = tv.copy %[[X]]
// CHECK: tv.tag "z", %[[Z]]
tv.spec @s {
  %x = tv.input "x" : tensor<4xf32>
  %c = tv.copy %x : tensor<4xf32>
  %y = tv.scale %c, 1.0 : tensor<4xf32>
  tv.output "y", %y : tensor<4xf32>
  %z = tv.copy %x : tensor<4xf32>
  tv.tag "z", %z : tensor<4xf32>
}

// Rank programs are ordered by first rank; buffers become explicit
// versions; rank sets that match a mesh axis become that axis.
// CHECK-LABEL: tv.plan @p
// CHECK: tv.rank_program [0, 1]
// CHECK: %[[G0:.*]] = tv.input "g0"
// CHECK: %[[G1:.*]] = tv.input "g1"
// CHECK-NOT: tv.accumulate
// CHECK: %[[V1:.*]] = tv.add %[[G0]], %[[G1]]
// CHECK-NOT: tv.buffer_read
// CHECK: %[[R:.*]] = tv.all_reduce sum %[[V1]] {axes = ["dp"]}
// CHECK: tv.output "dw", %[[R]]
// CHECK: tv.rank_program [2, 3]
// CHECK: tv.all_reduce sum %{{.*}} {rank_groups = [array<i64: 0, 3>, array<i64: 1, 2>]}
tv.plan @p mesh @m micro_batches 2 {
  tv.rank_program [2, 3] {
    %g = tv.input "g0" : tensor<4xf32>
    %r = tv.all_reduce sum %g {rank_groups = [array<i64: 3, 0>, array<i64: 2, 1>]} : tensor<4xf32> -> tensor<4xf32>
    tv.output "dw", %r : tensor<4xf32>
  }
  tv.rank_program [0, 1] {
    %g0 = tv.input "g0" : tensor<4xf32>
    %g1 = tv.input "g1" : tensor<4xf32>
    tv.accumulate "dw", %g0 : tensor<4xf32>
    tv.accumulate "dw", %g1 : tensor<4xf32>
    %dw = tv.buffer_read "dw" : tensor<4xf32>
    %r = tv.all_reduce sum %dw {rank_groups = [array<i64: 1, 3>, array<i64: 0, 2>]} : tensor<4xf32> -> tensor<4xf32>
    tv.output "dw", %r : tensor<4xf32>
  }
}

// Peers that differ on two axes become a shift of the coordinates, so that
// the data-parallel replicas (here ranks 0 and 4, 1 and 5) share one
// program: the next pipeline stage's tensor-parallel rank one higher.
// CHECK-LABEL: tv.plan @two_axis_peers mesh @m3
// CHECK:         tv.rank_program [0, 4] {
// CHECK:           tv.send %{{.*}} {peer_shift = array<i64: 0, 1, 1>} : tensor<2xf32>
// CHECK:         tv.rank_program [3, 7] {
// CHECK:           tv.recv {peer_shift = array<i64: 0, -1, -1>} : tensor<2xf32>
tv.mesh @m3 axes ["dp", "pp", "tp"] sizes [2, 2, 2]
tv.plan @two_axis_peers mesh @m3 micro_batches 1 {
  tv.rank_program [0] {
    %x = tv.input "x" : tensor<2xf32>
    tv.send %x {peer = 3} : tensor<2xf32>
  }
  tv.rank_program [4] {
    %x = tv.input "x" : tensor<2xf32>
    tv.send %x {peer = 7} : tensor<2xf32>
  }
  tv.rank_program [3] {
    %y = tv.recv {peer = 0} : tensor<2xf32>
    tv.tag "y", %y : tensor<2xf32>
  }
  tv.rank_program [7] {
    %y = tv.recv {peer = 4} : tensor<2xf32>
    tv.tag "y", %y : tensor<2xf32>
  }
  tv.rank_program [1, 2, 5, 6] {
  }
}

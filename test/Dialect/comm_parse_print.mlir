// RUN: tv-opt %s | tv-opt | FileCheck %s
// RUN: tv-opt %s --mlir-print-op-generic | tv-opt | FileCheck %s

// Round trip of the communication ops: all_reduce, all_gather,
// reduce_scatter, all_to_all, bcast, reduce, chunk (with both group forms)
// and send, recv (with both peer forms).

tv.mesh @m axes ["tp"] sizes [2]
tv.mesh @m2 axes ["pp", "tp"] sizes [2, 2]

// Collectives with the group named by mesh axes.
// CHECK-LABEL: tv.plan @collectives_axes mesh @m micro_batches 1 {
// CHECK-NEXT:    tv.rank_program [0, 1] {
// CHECK-NEXT:      %[[X:.*]] = tv.input "x" : tensor<4x8xf32>
// CHECK-NEXT:      tv.all_reduce sum %[[X]] {axes = ["tp"]} : tensor<4x8xf32> -> tensor<4x8xf32>
// CHECK-NEXT:      tv.all_reduce avg %[[X]] {axes = ["tp"]} : tensor<4x8xf32> -> tensor<4x8xf32>
// CHECK-NEXT:      tv.all_reduce max %[[X]] {axes = ["tp"], mb = 0 : i64} : tensor<4x8xf32> -> tensor<4x8xf32>
// CHECK-NEXT:      tv.all_gather %[[X]] dim 0 {axes = ["tp"]} : tensor<4x8xf32> -> tensor<8x8xf32>
// CHECK-NEXT:      tv.all_gather %[[X]] dim 1 {axes = ["tp"]} : tensor<4x8xf32> -> tensor<4x16xf32>
// CHECK-NEXT:      tv.reduce_scatter %[[X]] dim 0 {axes = ["tp"]} : tensor<4x8xf32> -> tensor<2x8xf32>
// CHECK-NEXT:      tv.reduce_scatter %[[X]] dim 1 {axes = ["tp"], kind = #tv<reduce_kind avg>} : tensor<4x8xf32> -> tensor<4x4xf32>
// CHECK-NEXT:      tv.all_to_all %[[X]] split 0 concat 1 {axes = ["tp"]} : tensor<4x8xf32> -> tensor<2x16xf32>
// CHECK-NEXT:      tv.all_to_all %[[X]] split 1 concat 1 {axes = ["tp"]} : tensor<4x8xf32> -> tensor<4x8xf32>
// CHECK-NEXT:      tv.bcast %[[X]] root 0 {axes = ["tp"]} : tensor<4x8xf32> -> tensor<4x8xf32>
// CHECK-NEXT:      tv.bcast %[[X]] root 1 {axes = ["tp"]} : tensor<4x8xf32> -> tensor<4x8xf32>
// CHECK-NEXT:      tv.reduce %[[X]] root 1 {axes = ["tp"]} : tensor<4x8xf32> -> tensor<4x8xf32>
// CHECK-NEXT:      tv.chunk %[[X]] dim 1 {axes = ["tp"]} : tensor<4x8xf32> -> tensor<4x4xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:  }
tv.plan @collectives_axes mesh @m micro_batches 1 {
  tv.rank_program [0, 1] {
    %x = tv.input "x" : tensor<4x8xf32>
    %0 = tv.all_reduce sum %x {axes = ["tp"]} : tensor<4x8xf32> -> tensor<4x8xf32>
    %1 = tv.all_reduce avg %x {axes = ["tp"]} : tensor<4x8xf32> -> tensor<4x8xf32>
    %2 = tv.all_reduce max %x {axes = ["tp"], mb = 0} : tensor<4x8xf32> -> tensor<4x8xf32>
    %3 = tv.all_gather %x dim 0 {axes = ["tp"]} : tensor<4x8xf32> -> tensor<8x8xf32>
    %4 = tv.all_gather %x dim 1 {axes = ["tp"]} : tensor<4x8xf32> -> tensor<4x16xf32>
    %5 = tv.reduce_scatter %x dim 0 {axes = ["tp"]} : tensor<4x8xf32> -> tensor<2x8xf32>
    %6 = tv.reduce_scatter %x dim 1 {axes = ["tp"], kind = #tv<reduce_kind avg>} : tensor<4x8xf32> -> tensor<4x4xf32>
    %7 = tv.all_to_all %x split 0 concat 1 {axes = ["tp"]} : tensor<4x8xf32> -> tensor<2x16xf32>
    %8 = tv.all_to_all %x split 1 concat 1 {axes = ["tp"]} : tensor<4x8xf32> -> tensor<4x8xf32>
    %9 = tv.bcast %x root 0 {axes = ["tp"]} : tensor<4x8xf32> -> tensor<4x8xf32>
    %10 = tv.bcast %x root 1 {axes = ["tp"]} : tensor<4x8xf32> -> tensor<4x8xf32>
    %11 = tv.reduce %x root 1 {axes = ["tp"]} : tensor<4x8xf32> -> tensor<4x8xf32>
    %12 = tv.chunk %x dim 1 {axes = ["tp"]} : tensor<4x8xf32> -> tensor<4x4xf32>
  }
}

// An explicit `kind = sum` on reduce_scatter is the default and is elided.
// CHECK-LABEL: tv.plan @reduce_scatter_default_kind mesh @m micro_batches 1 {
// CHECK:         tv.reduce_scatter %{{.*}} dim 0 {axes = ["tp"]} : tensor<4xf32> -> tensor<2xf32>
tv.plan @reduce_scatter_default_kind mesh @m micro_batches 1 {
  tv.rank_program [0, 1] {
    %x = tv.input "x" : tensor<4xf32>
    %0 = tv.reduce_scatter %x dim 0 {axes = ["tp"], kind = #tv<reduce_kind sum>} : tensor<4xf32> -> tensor<2xf32>
  }
}

// Collectives with explicit rank groups.
// CHECK-LABEL: tv.plan @collectives_rank_groups mesh @m2 micro_batches 1 {
// CHECK-NEXT:    tv.rank_program [0, 1, 2, 3] {
// CHECK-NEXT:      %[[X:.*]] = tv.input "x" : tensor<4x8xf32>
// CHECK-NEXT:      tv.all_reduce sum %[[X]] {rank_groups = [array<i64: 0, 1>, array<i64: 2, 3>]} : tensor<4x8xf32> -> tensor<4x8xf32>
// CHECK-NEXT:      tv.all_reduce avg %[[X]] {rank_groups = [array<i64: 0, 1, 2, 3>]} : tensor<4x8xf32> -> tensor<4x8xf32>
// CHECK-NEXT:      tv.all_gather %[[X]] dim 0 {rank_groups = [array<i64: 0, 2>, array<i64: 1, 3>]} : tensor<4x8xf32> -> tensor<8x8xf32>
// CHECK-NEXT:      tv.reduce_scatter %[[X]] dim 1 {rank_groups = [array<i64: 3, 0>, array<i64: 2, 1>]} : tensor<4x8xf32> -> tensor<4x4xf32>
// CHECK-NEXT:      tv.all_to_all %[[X]] split 1 concat 0 {rank_groups = [array<i64: 0, 1, 2, 3>]} : tensor<4x8xf32> -> tensor<16x2xf32>
// CHECK-NEXT:      tv.bcast %[[X]] root 1 {rank_groups = [array<i64: 0, 1>, array<i64: 2, 3>]} : tensor<4x8xf32> -> tensor<4x8xf32>
// CHECK-NEXT:      tv.reduce %[[X]] root 0 {rank_groups = [array<i64: 0>, array<i64: 1>, array<i64: 2>, array<i64: 3>]} : tensor<4x8xf32> -> tensor<4x8xf32>
// CHECK-NEXT:      tv.chunk %[[X]] dim 0 {rank_groups = [array<i64: 0, 1>, array<i64: 2, 3>]} : tensor<4x8xf32> -> tensor<2x8xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:  }
tv.plan @collectives_rank_groups mesh @m2 micro_batches 1 {
  tv.rank_program [0, 1, 2, 3] {
    %x = tv.input "x" : tensor<4x8xf32>
    %0 = tv.all_reduce sum %x {rank_groups = [array<i64: 0, 1>, array<i64: 2, 3>]} : tensor<4x8xf32> -> tensor<4x8xf32>
    %1 = tv.all_reduce avg %x {rank_groups = [array<i64: 0, 1, 2, 3>]} : tensor<4x8xf32> -> tensor<4x8xf32>
    %2 = tv.all_gather %x dim 0 {rank_groups = [array<i64: 0, 2>, array<i64: 1, 3>]} : tensor<4x8xf32> -> tensor<8x8xf32>
    %3 = tv.reduce_scatter %x dim 1 {rank_groups = [array<i64: 3, 0>, array<i64: 2, 1>]} : tensor<4x8xf32> -> tensor<4x4xf32>
    %4 = tv.all_to_all %x split 1 concat 0 {rank_groups = [array<i64: 0, 1, 2, 3>]} : tensor<4x8xf32> -> tensor<16x2xf32>
    %5 = tv.bcast %x root 1 {rank_groups = [array<i64: 0, 1>, array<i64: 2, 3>]} : tensor<4x8xf32> -> tensor<4x8xf32>
    %6 = tv.reduce %x root 0 {rank_groups = [array<i64: 0>, array<i64: 1>, array<i64: 2>, array<i64: 3>]} : tensor<4x8xf32> -> tensor<4x8xf32>
    %7 = tv.chunk %x dim 0 {rank_groups = [array<i64: 0, 1>, array<i64: 2, 3>]} : tensor<4x8xf32> -> tensor<2x8xf32>
  }
}

// Group sizes from one axis, from several axes, and from rank groups that
// only cover the ranks that run the collective.
// CHECK-LABEL: tv.plan @group_sizes mesh @m2 micro_batches 1 {
// CHECK:         tv.rank_program [0, 1] {
// CHECK:           %[[X:.*]] = tv.input "x" : tensor<4xf32>
// CHECK:           tv.all_gather %[[X]] dim 0 {axes = ["pp"]} : tensor<4xf32> -> tensor<8xf32>
// CHECK:           tv.all_gather %[[X]] dim 0 {axes = ["pp", "tp"]} : tensor<4xf32> -> tensor<16xf32>
// CHECK:           tv.chunk %[[X]] dim 0 {axes = ["tp", "pp"]} : tensor<4xf32> -> tensor<1xf32>
// CHECK:           tv.all_gather %[[X]] dim 0 {rank_groups = [array<i64: 0, 1>]} : tensor<4xf32> -> tensor<8xf32>
// CHECK:         tv.rank_program [2, 3] {
tv.plan @group_sizes mesh @m2 micro_batches 1 {
  tv.rank_program [0, 1] {
    %x = tv.input "x" : tensor<4xf32>
    %0 = tv.all_gather %x dim 0 {axes = ["pp"]} : tensor<4xf32> -> tensor<8xf32>
    %1 = tv.all_gather %x dim 0 {axes = ["pp", "tp"]} : tensor<4xf32> -> tensor<16xf32>
    %2 = tv.chunk %x dim 0 {axes = ["tp", "pp"]} : tensor<4xf32> -> tensor<1xf32>
    %3 = tv.all_gather %x dim 0 {rank_groups = [array<i64: 0, 1>]} : tensor<4xf32> -> tensor<8xf32>
  }
  tv.rank_program [2, 3] {
    %x = tv.input "x" : tensor<4xf32>
    %0 = tv.all_gather %x dim 0 {axes = ["pp"]} : tensor<4xf32> -> tensor<8xf32>
    %1 = tv.all_gather %x dim 0 {axes = ["pp", "tp"]} : tensor<4xf32> -> tensor<16xf32>
    %2 = tv.chunk %x dim 0 {axes = ["tp", "pp"]} : tensor<4xf32> -> tensor<1xf32>
    %3 = tv.all_gather %x dim 0 {rank_groups = [array<i64: 2, 3>]} : tensor<4xf32> -> tensor<8xf32>
  }
}

// Point-to-point with explicit peers.
// CHECK-LABEL: tv.plan @p2p_explicit mesh @m micro_batches 1 {
// CHECK-NEXT:    tv.rank_program [0] {
// CHECK-NEXT:      %[[X:.*]] = tv.input "x" : tensor<4x8xf32>
// CHECK-NEXT:      tv.send %[[X]] {peer = 1 : i64} : tensor<4x8xf32>
// CHECK-NEXT:      tv.send %[[X]] {peer = 1 : i64, tag = 7 : i64} : tensor<4x8xf32>
// CHECK-NEXT:      %[[IDS:.*]] = tv.recv {peer = 1 : i64} : tensor<4xi64>
// CHECK-NEXT:    }
// CHECK-NEXT:    tv.rank_program [1] {
// CHECK-NEXT:      %[[A:.*]] = tv.recv {peer = 0 : i64} : tensor<4x8xf32>
// CHECK-NEXT:      %[[B:.*]] = tv.recv {mb = 0 : i64, peer = 0 : i64, tag = 7 : i64} : tensor<4x8xf32>
// CHECK-NEXT:      %[[IDS:.*]] = tv.input "ids" : tensor<4xi64>
// CHECK-NEXT:      tv.send %[[IDS]] {peer = 0 : i64} : tensor<4xi64>
// CHECK-NEXT:    }
// CHECK-NEXT:  }
tv.plan @p2p_explicit mesh @m micro_batches 1 {
  tv.rank_program [0] {
    %x = tv.input "x" : tensor<4x8xf32>
    tv.send %x {peer = 1} : tensor<4x8xf32>
    tv.send %x {peer = 1, tag = 7} : tensor<4x8xf32>
    %ids = tv.recv {peer = 1, tag = 0} : tensor<4xi64>
  }
  tv.rank_program [1] {
    %a = tv.recv {peer = 0} : tensor<4x8xf32>
    %b = tv.recv {peer = 0, tag = 7, mb = 0} : tensor<4x8xf32>
    %ids = tv.input "ids" : tensor<4xi64>
    tv.send %ids {peer = 0} : tensor<4xi64>
  }
}

// Point-to-point with peers relative along a mesh axis (pipeline stages).
// CHECK-LABEL: tv.plan @p2p_relative mesh @m2 micro_batches 2 {
// CHECK-NEXT:    tv.rank_program [0, 1] {
// CHECK-NEXT:      %[[X:.*]] = tv.input "x" : tensor<4x8xf32>
// CHECK-NEXT:      tv.send %[[X]] {peer_axis = "pp", peer_offset = 1 : i64} : tensor<4x8xf32>
// CHECK-NEXT:      %[[M:.*]] = tv.causal_mask : tensor<4x4xi1>
// CHECK-NEXT:      tv.send %[[M]] {peer_axis = "pp", peer_offset = 1 : i64, tag = 1 : i64} : tensor<4x4xi1>
// CHECK-NEXT:    }
// CHECK-NEXT:    tv.rank_program [2, 3] {
// CHECK-NEXT:      %[[Y:.*]] = tv.recv {peer_axis = "pp", peer_offset = -1 : i64} : tensor<4x8xf32>
// CHECK-NEXT:      %[[M:.*]] = tv.recv {peer_axis = "pp", peer_offset = -1 : i64, tag = 1 : i64} : tensor<4x4xi1>
// CHECK-NEXT:    }
// CHECK-NEXT:  }
tv.plan @p2p_relative mesh @m2 micro_batches 2 {
  tv.rank_program [0, 1] {
    %x = tv.input "x" : tensor<4x8xf32>
    tv.send %x {peer_axis = "pp", peer_offset = 1} : tensor<4x8xf32>
    %m = tv.causal_mask : tensor<4x4xi1>
    tv.send %m {peer_axis = "pp", peer_offset = 1, tag = 1} : tensor<4x4xi1>
  }
  tv.rank_program [2, 3] {
    %y = tv.recv {peer_axis = "pp", peer_offset = -1} : tensor<4x8xf32>
    %m = tv.recv {peer_axis = "pp", peer_offset = -1, tag = 1} : tensor<4x4xi1>
  }
}

// A relative peer along the fast axis, one program per rank.
// CHECK-LABEL: tv.plan @p2p_relative_tp mesh @m micro_batches 1 {
// CHECK:         tv.send %{{.*}} {peer_axis = "tp", peer_offset = 1 : i64} : tensor<2xf32>
// CHECK:         tv.recv {peer_axis = "tp", peer_offset = -1 : i64} : tensor<2xf32>
tv.plan @p2p_relative_tp mesh @m micro_batches 1 {
  tv.rank_program [0] {
    %x = tv.input "x" : tensor<2xf32>
    tv.send %x {peer_axis = "tp", peer_offset = 1} : tensor<2xf32>
  }
  tv.rank_program [1] {
    %y = tv.recv {peer_axis = "tp", peer_offset = -1} : tensor<2xf32>
  }
}

// An all-gather in an explicit piece order (group indices), and a chunk that
// names the piece its rank keeps.
// CHECK-LABEL: tv.plan @ordered_pieces mesh @m4 micro_batches 1 {
// CHECK:         tv.all_gather %{{.*}} dim 0 {axes = ["tp"], order = array<i64: 0, 2, 1, 3>} : tensor<2xf32> -> tensor<8xf32>
// CHECK:         tv.chunk %{{.*}} dim 0 {axes = ["tp"], index = 2 : i64} : tensor<8xf32> -> tensor<2xf32>
tv.mesh @m4 axes ["tp"] sizes [4]
tv.plan @ordered_pieces mesh @m4 micro_batches 1 {
  tv.rank_program [0, 1, 2, 3] {
    %x = tv.input "x" : tensor<2xf32>
    %0 = tv.all_gather %x dim 0 {axes = ["tp"], order = array<i64: 0, 2, 1, 3>} : tensor<2xf32> -> tensor<8xf32>
    %1 = tv.chunk %0 dim 0 {axes = ["tp"], index = 2} : tensor<8xf32> -> tensor<2xf32>
  }
}

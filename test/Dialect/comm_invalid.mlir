// RUN: tv-opt %s --split-input-file --verify-diagnostics

// Invalid communication ops: the collectives (all_reduce, all_gather,
// reduce_scatter, all_to_all, bcast, reduce, chunk), their group attributes
// (axes / rank_groups), and send / recv with their peer attributes.
// (Communication ops inside a tv.spec: see structure_invalid.mlir.)

// Group: neither axes nor rank_groups.
tv.mesh @m axes ["tp"] sizes [2]
tv.plan @p mesh @m micro_batches 1 {
  tv.rank_program [0, 1] {
    %x = tv.input "x" : tensor<4x8xf32>
    // expected-error @+1 {{'tv.all_reduce' op must name its group with exactly one of 'axes' or 'rank_groups'}}
    %0 = tv.all_reduce sum %x  : tensor<4x8xf32> -> tensor<4x8xf32>
  }
}

// -----

tv.mesh @m axes ["tp"] sizes [2]
tv.plan @p mesh @m micro_batches 1 {
  tv.rank_program [0, 1] {
    %x = tv.input "x" : tensor<4x8xf32>
    // expected-error @+1 {{'tv.all_gather' op must name its group with exactly one of 'axes' or 'rank_groups'}}
    %0 = tv.all_gather %x dim 0  : tensor<4x8xf32> -> tensor<8x8xf32>
  }
}

// -----

tv.mesh @m axes ["tp"] sizes [2]
tv.plan @p mesh @m micro_batches 1 {
  tv.rank_program [0, 1] {
    %x = tv.input "x" : tensor<4x8xf32>
    // expected-error @+1 {{'tv.reduce_scatter' op must name its group with exactly one of 'axes' or 'rank_groups'}}
    %0 = tv.reduce_scatter %x dim 0  : tensor<4x8xf32> -> tensor<2x8xf32>
  }
}

// -----

tv.mesh @m axes ["tp"] sizes [2]
tv.plan @p mesh @m micro_batches 1 {
  tv.rank_program [0, 1] {
    %x = tv.input "x" : tensor<4x8xf32>
    // expected-error @+1 {{'tv.all_to_all' op must name its group with exactly one of 'axes' or 'rank_groups'}}
    %0 = tv.all_to_all %x split 0 concat 1  : tensor<4x8xf32> -> tensor<2x16xf32>
  }
}

// -----

tv.mesh @m axes ["tp"] sizes [2]
tv.plan @p mesh @m micro_batches 1 {
  tv.rank_program [0, 1] {
    %x = tv.input "x" : tensor<4x8xf32>
    // expected-error @+1 {{'tv.bcast' op must name its group with exactly one of 'axes' or 'rank_groups'}}
    %0 = tv.bcast %x root 0  : tensor<4x8xf32> -> tensor<4x8xf32>
  }
}

// -----

tv.mesh @m axes ["tp"] sizes [2]
tv.plan @p mesh @m micro_batches 1 {
  tv.rank_program [0, 1] {
    %x = tv.input "x" : tensor<4x8xf32>
    // expected-error @+1 {{'tv.reduce' op must name its group with exactly one of 'axes' or 'rank_groups'}}
    %0 = tv.reduce %x root 0  : tensor<4x8xf32> -> tensor<4x8xf32>
  }
}

// -----

tv.mesh @m axes ["tp"] sizes [2]
tv.plan @p mesh @m micro_batches 1 {
  tv.rank_program [0, 1] {
    %x = tv.input "x" : tensor<4x8xf32>
    // expected-error @+1 {{'tv.chunk' op must name its group with exactly one of 'axes' or 'rank_groups'}}
    %0 = tv.chunk %x dim 0  : tensor<4x8xf32> -> tensor<2x8xf32>
  }
}

// -----

// Group: both axes and rank_groups.
tv.mesh @m axes ["tp"] sizes [2]
tv.plan @p mesh @m micro_batches 1 {
  tv.rank_program [0, 1] {
    %x = tv.input "x" : tensor<4x8xf32>
    // expected-error @+1 {{'tv.all_reduce' op must name its group with exactly one of 'axes' or 'rank_groups'}}
    %0 = tv.all_reduce sum %x {axes = ["tp"], rank_groups = [array<i64: 0, 1>]} : tensor<4x8xf32> -> tensor<4x8xf32>
  }
}

// -----

tv.mesh @m axes ["tp"] sizes [2]
tv.plan @p mesh @m micro_batches 1 {
  tv.rank_program [0, 1] {
    %x = tv.input "x" : tensor<4x8xf32>
    // expected-error @+1 {{'tv.all_gather' op group axes must not be empty}}
    %0 = tv.all_gather %x dim 0 {axes = []} : tensor<4x8xf32> -> tensor<8x8xf32>
  }
}

// -----

tv.mesh @m axes ["tp"] sizes [2]
tv.plan @p mesh @m micro_batches 1 {
  tv.rank_program [0, 1] {
    %x = tv.input "x" : tensor<4x8xf32>
    // expected-error @+1 {{'tv.reduce_scatter' op group axis 'dp' is not an axis of mesh @m}}
    %0 = tv.reduce_scatter %x dim 0 {axes = ["dp"]} : tensor<4x8xf32> -> tensor<2x8xf32>
  }
}

// -----

tv.mesh @m axes ["tp"] sizes [2]
tv.plan @p mesh @m micro_batches 1 {
  tv.rank_program [0, 1] {
    %x = tv.input "x" : tensor<4x8xf32>
    // expected-error @+1 {{'tv.chunk' op group axis 'tp' is repeated}}
    %0 = tv.chunk %x dim 0 {axes = ["tp", "tp"]} : tensor<4x8xf32> -> tensor<2x8xf32>
  }
}

// -----

tv.mesh @m axes ["tp"] sizes [2]
tv.plan @p mesh @m micro_batches 1 {
  tv.rank_program [0, 1] {
    %x = tv.input "x" : tensor<4x8xf32>
    // expected-error @+1 {{'tv.all_to_all' op rank_groups entries must be non-empty array<i64> rank lists}}
    %0 = tv.all_to_all %x split 0 concat 1 {rank_groups = [[0, 1]]} : tensor<4x8xf32> -> tensor<2x16xf32>
  }
}

// -----

tv.mesh @m axes ["tp"] sizes [2]
tv.plan @p mesh @m micro_batches 1 {
  tv.rank_program [0, 1] {
    %x = tv.input "x" : tensor<4x8xf32>
    // expected-error @+1 {{'tv.bcast' op rank_groups entries must be non-empty array<i64> rank lists}}
    %0 = tv.bcast %x root 0 {rank_groups = [array<i64>, array<i64: 0, 1>]} : tensor<4x8xf32> -> tensor<4x8xf32>
  }
}

// -----

tv.mesh @m axes ["tp"] sizes [2]
tv.plan @p mesh @m micro_batches 1 {
  tv.rank_program [0, 1] {
    %x = tv.input "x" : tensor<4x8xf32>
    // expected-error @+1 {{'tv.reduce' op rank_groups entries must be non-empty array<i64> rank lists}}
    %0 = tv.reduce %x root 0 {rank_groups = [0, 1]} : tensor<4x8xf32> -> tensor<4x8xf32>
  }
}

// -----

// An empty rank_groups list covers no rank.
tv.mesh @m axes ["tp"] sizes [2]
tv.plan @p mesh @m micro_batches 1 {
  tv.rank_program [0, 1] {
    %x = tv.input "x" : tensor<4x8xf32>
    // expected-error @+1 {{'tv.all_reduce' op rank_groups must not be empty}}
    %0 = tv.all_reduce sum %x {rank_groups = []} : tensor<4x8xf32> -> tensor<4x8xf32>
  }
}

// -----

tv.mesh @m axes ["tp"] sizes [4]
tv.plan @p mesh @m micro_batches 1 {
  tv.rank_program [0, 1, 2, 3] {
    %x = tv.input "x" : tensor<4x8xf32>
    // expected-error @+1 {{'tv.all_reduce' op rank_groups have different sizes (2 and 1)}}
    %0 = tv.all_reduce sum %x {rank_groups = [array<i64: 0, 1>, array<i64: 2>, array<i64: 3>]} : tensor<4x8xf32> -> tensor<4x8xf32>
  }
}

// -----

tv.mesh @m axes ["tp"] sizes [2]
tv.plan @p mesh @m micro_batches 1 {
  tv.rank_program [0, 1] {
    %x = tv.input "x" : tensor<4x8xf32>
    // expected-error @+1 {{'tv.all_gather' op rank_groups names rank 2 outside the mesh}}
    %0 = tv.all_gather %x dim 0 {rank_groups = [array<i64: 0, 1>, array<i64: 2, 3>]} : tensor<4x8xf32> -> tensor<8x8xf32>
  }
}

// -----

tv.mesh @m axes ["tp"] sizes [2]
tv.plan @p mesh @m micro_batches 1 {
  tv.rank_program [0, 1] {
    %x = tv.input "x" : tensor<4x8xf32>
    // expected-error @+1 {{'tv.all_gather' op rank_groups names rank -1 outside the mesh}}
    %0 = tv.all_gather %x dim 0 {rank_groups = [array<i64: -1, 0>, array<i64: 1, 2>]} : tensor<4x8xf32> -> tensor<8x8xf32>
  }
}

// -----

tv.mesh @m axes ["tp"] sizes [4]
tv.plan @p mesh @m micro_batches 1 {
  tv.rank_program [0, 1, 2, 3] {
    %x = tv.input "x" : tensor<4x8xf32>
    // expected-error @+1 {{'tv.reduce_scatter' op rank 1 appears in two rank_groups}}
    %0 = tv.reduce_scatter %x dim 0 {rank_groups = [array<i64: 0, 1>, array<i64: 1, 2>]} : tensor<4x8xf32> -> tensor<2x8xf32>
  }
}

// -----

tv.mesh @m axes ["tp"] sizes [4]
tv.plan @p mesh @m micro_batches 1 {
  tv.rank_program [0, 1] {
    %x = tv.input "x" : tensor<4x8xf32>
    // expected-error @+1 {{'tv.chunk' op rank 1 runs this collective but is in no group}}
    %0 = tv.chunk %x dim 0 {rank_groups = [array<i64: 0, 2>]} : tensor<4x8xf32> -> tensor<2x8xf32>
  }
  tv.rank_program [2, 3] {
  }
}

// -----

// ODS: group attribute types.
tv.mesh @m axes ["tp"] sizes [2]
tv.plan @p mesh @m micro_batches 1 {
  tv.rank_program [0, 1] {
    %x = tv.input "x" : tensor<4x8xf32>
    // expected-error @+1 {{'tv.all_reduce' op attribute 'axes' failed to satisfy constraint: string array attribute}}
    %0 = tv.all_reduce sum %x {axes = [0]} : tensor<4x8xf32> -> tensor<4x8xf32>
  }
}

// -----

tv.mesh @m axes ["tp"] sizes [2]
tv.plan @p mesh @m micro_batches 1 {
  tv.rank_program [0, 1] {
    %x = tv.input "x" : tensor<4x8xf32>
    // expected-error @+1 {{'tv.all_reduce' op attribute 'rank_groups' failed to satisfy constraint: array attribute}}
    %0 = tv.all_reduce sum %x {rank_groups = 1} : tensor<4x8xf32> -> tensor<4x8xf32>
  }
}

// -----

tv.mesh @m axes ["tp"] sizes [2]
tv.plan @p mesh @m micro_batches 1 {
  tv.rank_program [0, 1] {
    %x = tv.input "x" : tensor<4x8xi64>
    // expected-error @+1 {{'tv.all_reduce' op result type must equal input type}}
    %0 = tv.all_reduce sum %x {axes = ["tp"]} : tensor<4x8xi64> -> tensor<4x8xf32>
  }
}

// -----

tv.mesh @m axes ["tp"] sizes [2]
tv.plan @p mesh @m micro_batches 1 {
  tv.rank_program [0, 1] {
    %x = tv.input "x" : tensor<4x8xi64>
    // expected-error @+1 {{'tv.all_gather' op moves data: result element type must equal the input's}}
    %0 = tv.all_gather %x dim 0 {axes = ["tp"]} : tensor<4x8xi64> -> tensor<8x8xf32>
  }
}

// -----

tv.mesh @m axes ["tp"] sizes [2]
tv.plan @p mesh @m micro_batches 1 {
  tv.rank_program [0, 1] {
    %x = tv.input "x" : tensor<4x8xi64>
    // expected-error @+1 {{'tv.reduce_scatter' op moves data: result element type must equal the input's}}
    %0 = tv.reduce_scatter %x dim 0 {axes = ["tp"]} : tensor<4x8xi64> -> tensor<2x8xf32>
  }
}

// -----

tv.mesh @m axes ["tp"] sizes [2]
tv.plan @p mesh @m micro_batches 1 {
  tv.rank_program [0, 1] {
    %x = tv.input "x" : tensor<4x8xi64>
    // expected-error @+1 {{'tv.all_to_all' op moves data: result element type must equal the input's}}
    %0 = tv.all_to_all %x split 0 concat 1 {axes = ["tp"]} : tensor<4x8xi64> -> tensor<2x16xf32>
  }
}

// -----

tv.mesh @m axes ["tp"] sizes [2]
tv.plan @p mesh @m micro_batches 1 {
  tv.rank_program [0, 1] {
    %x = tv.input "x" : tensor<4x8xi64>
    // expected-error @+1 {{'tv.bcast' op result type must equal input type}}
    %0 = tv.bcast %x root 0 {axes = ["tp"]} : tensor<4x8xi64> -> tensor<4x8xf32>
  }
}

// -----

tv.mesh @m axes ["tp"] sizes [2]
tv.plan @p mesh @m micro_batches 1 {
  tv.rank_program [0, 1] {
    %x = tv.input "x" : tensor<4x8xi64>
    // expected-error @+1 {{'tv.reduce' op result type must equal input type}}
    %0 = tv.reduce %x root 0 {axes = ["tp"]} : tensor<4x8xi64> -> tensor<4x8xf32>
  }
}

// -----

tv.mesh @m axes ["tp"] sizes [2]
tv.plan @p mesh @m micro_batches 1 {
  tv.rank_program [0, 1] {
    %x = tv.input "x" : tensor<4x8xi64>
    // expected-error @+1 {{'tv.chunk' op moves data: result element type must equal the input's}}
    %0 = tv.chunk %x dim 0 {axes = ["tp"]} : tensor<4x8xi64> -> tensor<2x8xf32>
  }
}

// -----

// all_reduce
tv.mesh @m axes ["tp"] sizes [2]
tv.plan @p mesh @m micro_batches 1 {
  tv.rank_program [0, 1] {
    %x = tv.input "x" : tensor<4x8xf32>
    // expected-error @+1 {{'tv.all_reduce' op result type must equal input type}}
    %0 = tv.all_reduce sum %x {axes = ["tp"]} : tensor<4x8xf32> -> tensor<8x8xf32>
  }
}

// -----

tv.mesh @m axes ["tp"] sizes [2]
tv.plan @p mesh @m micro_batches 1 {
  tv.rank_program [0, 1] {
    %x = tv.input "x" : tensor<4x8xf32>
    // expected-error @+1 {{'tv.all_reduce' op result type must equal input type}}
    %0 = tv.all_reduce avg %x {axes = ["tp"]} : tensor<4x8xf32> -> tensor<4x8xf16>
  }
}

// -----

tv.mesh @m axes ["tp"] sizes [2]
tv.plan @p mesh @m micro_batches 1 {
  tv.rank_program [0, 1] {
    %x = tv.input "x" : tensor<4x8xf32>
    // expected-error @+1 {{expected a reduction kind (sum, avg, max, min, band, bor or bxor), got 'prod'}}
    %0 = tv.all_reduce prod %x {axes = ["tp"]} : tensor<4x8xf32> -> tensor<4x8xf32>
  }
}

// -----

// all_gather
tv.mesh @m axes ["tp"] sizes [2]
tv.plan @p mesh @m micro_batches 1 {
  tv.rank_program [0, 1] {
    %x = tv.input "x" : tensor<4x8xf32>
    // expected-error @+1 {{'tv.all_gather' op dim 2 is out of range for rank 2}}
    %0 = tv.all_gather %x dim 2 {axes = ["tp"]} : tensor<4x8xf32> -> tensor<4x8xf32>
  }
}

// -----

tv.mesh @m axes ["tp"] sizes [2]
tv.plan @p mesh @m micro_batches 1 {
  tv.rank_program [0, 1] {
    %x = tv.input "x" : tensor<4x8xf32>
    // expected-error @+1 {{'tv.all_gather' op dim -1 is out of range for rank 2}}
    %0 = tv.all_gather %x dim -1 {axes = ["tp"]} : tensor<4x8xf32> -> tensor<4x8xf32>
  }
}

// -----

tv.mesh @m axes ["tp"] sizes [2]
tv.plan @p mesh @m micro_batches 1 {
  tv.rank_program [0, 1] {
    %x = tv.input "x" : tensor<4x8xf32>
    // expected-error @+1 {{'tv.all_gather' op result has shape [4, 8], expected [8, 8] for group size 2}}
    %0 = tv.all_gather %x dim 0 {axes = ["tp"]} : tensor<4x8xf32> -> tensor<4x8xf32>
  }
}

// -----

tv.mesh @m axes ["pp", "tp"] sizes [2, 2]
tv.plan @p mesh @m micro_batches 1 {
  tv.rank_program [0, 1, 2, 3] {
    %x = tv.input "x" : tensor<4x8xf32>
    // expected-error @+1 {{'tv.all_gather' op result has shape [4, 16], expected [4, 32] for group size 4}}
    %0 = tv.all_gather %x dim 1 {axes = ["pp", "tp"]} : tensor<4x8xf32> -> tensor<4x16xf32>
  }
}

// -----

// reduce_scatter
tv.mesh @m axes ["tp"] sizes [2]
tv.plan @p mesh @m micro_batches 1 {
  tv.rank_program [0, 1] {
    %x = tv.input "x" : tensor<4x8xf32>
    // expected-error @+1 {{'tv.reduce_scatter' op supports sum and avg only}}
    %0 = tv.reduce_scatter %x dim 0 {axes = ["tp"], kind = #tv<reduce_kind max>} : tensor<4x8xf32> -> tensor<2x8xf32>
  }
}

// -----

tv.mesh @m axes ["tp"] sizes [2]
tv.plan @p mesh @m micro_batches 1 {
  tv.rank_program [0, 1] {
    %x = tv.input "x" : tensor<4x8xf32>
    // expected-error @+1 {{'tv.reduce_scatter' op attribute 'kind' failed to satisfy constraint: reduction of a collective}}
    %0 = tv.reduce_scatter %x dim 0 {axes = ["tp"], kind = 1 : i32} : tensor<4x8xf32> -> tensor<2x8xf32>
  }
}

// -----

tv.mesh @m axes ["tp"] sizes [2]
tv.plan @p mesh @m micro_batches 1 {
  tv.rank_program [0, 1] {
    %x = tv.input "x" : tensor<4x8xf32>
    // expected-error @+1 {{'tv.reduce_scatter' op dim 2 is out of range for rank 2}}
    %0 = tv.reduce_scatter %x dim 2 {axes = ["tp"]} : tensor<4x8xf32> -> tensor<4x8xf32>
  }
}

// -----

tv.mesh @m axes ["tp"] sizes [2]
tv.plan @p mesh @m micro_batches 1 {
  tv.rank_program [0, 1] {
    %x = tv.input "x" : tensor<3x8xf32>
    // expected-error @+1 {{'tv.reduce_scatter' op dimension 0 of size 3 does not split into 2 equal parts (group size 2)}}
    %0 = tv.reduce_scatter %x dim 0 {axes = ["tp"]} : tensor<3x8xf32> -> tensor<1x8xf32>
  }
}

// -----

tv.mesh @m axes ["tp"] sizes [2]
tv.plan @p mesh @m micro_batches 1 {
  tv.rank_program [0, 1] {
    %x = tv.input "x" : tensor<4x8xf32>
    // expected-error @+1 {{'tv.reduce_scatter' op result has shape [4, 8], expected [4, 4] for group size 2}}
    %0 = tv.reduce_scatter %x dim 1 {axes = ["tp"]} : tensor<4x8xf32> -> tensor<4x8xf32>
  }
}

// -----

// chunk
tv.mesh @m axes ["tp"] sizes [2]
tv.plan @p mesh @m micro_batches 1 {
  tv.rank_program [0, 1] {
    %x = tv.input "x" : tensor<4x8xf32>
    // expected-error @+1 {{'tv.chunk' op dim -1 is out of range for rank 2}}
    %0 = tv.chunk %x dim -1 {axes = ["tp"]} : tensor<4x8xf32> -> tensor<4x8xf32>
  }
}

// -----

tv.mesh @m axes ["tp"] sizes [2]
tv.plan @p mesh @m micro_batches 1 {
  tv.rank_program [0, 1] {
    %x = tv.input "x" : tensor<4x9xf32>
    // expected-error @+1 {{'tv.chunk' op dimension 1 of size 9 does not split into 2 equal parts (group size 2)}}
    %0 = tv.chunk %x dim 1 {axes = ["tp"]} : tensor<4x9xf32> -> tensor<4x4xf32>
  }
}

// -----

tv.mesh @m axes ["tp"] sizes [2]
tv.plan @p mesh @m micro_batches 1 {
  tv.rank_program [0, 1] {
    %x = tv.input "x" : tensor<4x8xf32>
    // expected-error @+1 {{'tv.chunk' op result has shape [2, 8], expected [4, 4] for group size 2}}
    %0 = tv.chunk %x dim 1 {axes = ["tp"]} : tensor<4x8xf32> -> tensor<2x8xf32>
  }
}

// -----

tv.mesh @m axes ["tp"] sizes [4]
tv.plan @p mesh @m micro_batches 1 {
  tv.rank_program [0, 1, 2, 3] {
    %x = tv.input "x" : tensor<4x8xf32>
    // expected-error @+1 {{'tv.chunk' op result has shape [2, 8], expected [1, 8] for group size 4}}
    %0 = tv.chunk %x dim 0 {rank_groups = [array<i64: 0, 1, 2, 3>]} : tensor<4x8xf32> -> tensor<2x8xf32>
  }
}

// -----

// all_to_all
tv.mesh @m axes ["tp"] sizes [2]
tv.plan @p mesh @m micro_batches 1 {
  tv.rank_program [0, 1] {
    %x = tv.input "x" : tensor<4x8xf32>
    // expected-error @+1 {{'tv.all_to_all' op dim 2 is out of range for rank 2}}
    %0 = tv.all_to_all %x split 2 concat 0 {axes = ["tp"]} : tensor<4x8xf32> -> tensor<4x8xf32>
  }
}

// -----

tv.mesh @m axes ["tp"] sizes [2]
tv.plan @p mesh @m micro_batches 1 {
  tv.rank_program [0, 1] {
    %x = tv.input "x" : tensor<4x8xf32>
    // expected-error @+1 {{'tv.all_to_all' op dim 5 is out of range for rank 2}}
    %0 = tv.all_to_all %x split 0 concat 5 {axes = ["tp"]} : tensor<4x8xf32> -> tensor<4x8xf32>
  }
}

// -----

tv.mesh @m axes ["tp"] sizes [2]
tv.plan @p mesh @m micro_batches 1 {
  tv.rank_program [0, 1] {
    %x = tv.input "x" : tensor<4x8xf32>
    // expected-error @+1 {{'tv.all_to_all' op dim -1 is out of range for rank 2}}
    %0 = tv.all_to_all %x split 0 concat -1 {axes = ["tp"]} : tensor<4x8xf32> -> tensor<4x8xf32>
  }
}

// -----

tv.mesh @m axes ["tp"] sizes [2]
tv.plan @p mesh @m micro_batches 1 {
  tv.rank_program [0, 1] {
    %x = tv.input "x" : tensor<4x5xf32>
    // expected-error @+1 {{'tv.all_to_all' op split dimension of size 5 does not split into 2 equal parts}}
    %0 = tv.all_to_all %x split 1 concat 0 {axes = ["tp"]} : tensor<4x5xf32> -> tensor<8x2xf32>
  }
}

// -----

tv.mesh @m axes ["tp"] sizes [2]
tv.plan @p mesh @m micro_batches 1 {
  tv.rank_program [0, 1] {
    %x = tv.input "x" : tensor<4x8xf32>
    // expected-error @+1 {{'tv.all_to_all' op result has shape [4, 8], expected [2, 16] for group size 2}}
    %0 = tv.all_to_all %x split 0 concat 1 {axes = ["tp"]} : tensor<4x8xf32> -> tensor<4x8xf32>
  }
}

// -----

tv.mesh @m axes ["tp"] sizes [2]
tv.plan @p mesh @m micro_batches 1 {
  tv.rank_program [0, 1] {
    %x = tv.input "x" : tensor<4x8xf32>
    // expected-error @+1 {{'tv.all_to_all' op result has shape [2, 8], expected [4, 8] for group size 2}}
    %0 = tv.all_to_all %x split 0 concat 0 {axes = ["tp"]} : tensor<4x8xf32> -> tensor<2x8xf32>
  }
}

// -----

// bcast
tv.mesh @m axes ["tp"] sizes [2]
tv.plan @p mesh @m micro_batches 1 {
  tv.rank_program [0, 1] {
    %x = tv.input "x" : tensor<4x8xf32>
    // expected-error @+1 {{'tv.bcast' op result type must equal input type}}
    %0 = tv.bcast %x root 0 {axes = ["tp"]} : tensor<4x8xf32> -> tensor<8x4xf32>
  }
}

// -----

tv.mesh @m axes ["tp"] sizes [2]
tv.plan @p mesh @m micro_batches 1 {
  tv.rank_program [0, 1] {
    %x = tv.input "x" : tensor<4x8xf32>
    // expected-error @+1 {{'tv.bcast' op root 2 is not a group index (group size 2)}}
    %0 = tv.bcast %x root 2 {axes = ["tp"]} : tensor<4x8xf32> -> tensor<4x8xf32>
  }
}

// -----

tv.mesh @m axes ["tp"] sizes [2]
tv.plan @p mesh @m micro_batches 1 {
  tv.rank_program [0, 1] {
    %x = tv.input "x" : tensor<4x8xf32>
    // expected-error @+1 {{'tv.bcast' op root 1 is not a group index (group size 1)}}
    %0 = tv.bcast %x root 1 {rank_groups = [array<i64: 0>, array<i64: 1>]} : tensor<4x8xf32> -> tensor<4x8xf32>
  }
}

// -----

// reduce
tv.mesh @m axes ["tp"] sizes [2]
tv.plan @p mesh @m micro_batches 1 {
  tv.rank_program [0, 1] {
    %x = tv.input "x" : tensor<4x8xf32>
    // expected-error @+1 {{'tv.reduce' op result type must equal input type}}
    %0 = tv.reduce %x root 0 {axes = ["tp"]} : tensor<4x8xf32> -> tensor<8x4xf32>
  }
}

// -----

tv.mesh @m axes ["tp"] sizes [2]
tv.plan @p mesh @m micro_batches 1 {
  tv.rank_program [0, 1] {
    %x = tv.input "x" : tensor<4x8xf32>
    // expected-error @+1 {{'tv.reduce' op root 2 is not a group index (group size 2)}}
    %0 = tv.reduce %x root 2 {axes = ["tp"]} : tensor<4x8xf32> -> tensor<4x8xf32>
  }
}

// -----

tv.mesh @m axes ["tp"] sizes [2]
tv.plan @p mesh @m micro_batches 1 {
  tv.rank_program [0, 1] {
    %x = tv.input "x" : tensor<4x8xf32>
    // expected-error @+1 {{'tv.reduce' op root 1 is not a group index (group size 1)}}
    %0 = tv.reduce %x root 1 {rank_groups = [array<i64: 0>, array<i64: 1>]} : tensor<4x8xf32> -> tensor<4x8xf32>
  }
}

// -----

// send / recv: peer attributes
tv.mesh @m axes ["tp"] sizes [2]
tv.plan @p mesh @m micro_batches 1 {
  tv.rank_program [0] {
    %x = tv.input "x" : tensor<4x8xf32>
    // expected-error @+1 {{'tv.send' op needs exactly one of 'peer', 'peer_axis' with 'peer_offset', or 'peer_shift'}}
    tv.send %x : tensor<4x8xf32>
  }
  tv.rank_program [1] {
  }
}

// -----

tv.mesh @m axes ["tp"] sizes [2]
tv.plan @p mesh @m micro_batches 1 {
  tv.rank_program [0] {
    %x = tv.input "x" : tensor<4x8xf32>
    // expected-error @+1 {{'tv.recv' op needs exactly one of 'peer', 'peer_axis' with 'peer_offset', or 'peer_shift'}}
    %0 = tv.recv {tag = 1} : tensor<4x8xf32>
  }
  tv.rank_program [1] {
  }
}

// -----

tv.mesh @m axes ["tp"] sizes [2]
tv.plan @p mesh @m micro_batches 1 {
  tv.rank_program [0] {
    %x = tv.input "x" : tensor<4x8xf32>
    // expected-error @+1 {{'tv.send' op needs exactly one of 'peer', 'peer_axis' with 'peer_offset', or 'peer_shift'}}
    tv.send %x {peer = 1, peer_axis = "tp", peer_offset = 1} : tensor<4x8xf32>
  }
  tv.rank_program [1] {
  }
}

// -----

tv.mesh @m axes ["tp"] sizes [2]
tv.plan @p mesh @m micro_batches 1 {
  tv.rank_program [0] {
    %x = tv.input "x" : tensor<4x8xf32>
    // expected-error @+1 {{'tv.recv' op needs exactly one of 'peer', 'peer_axis' with 'peer_offset', or 'peer_shift'}}
    %0 = tv.recv {peer = 1, peer_offset = 1} : tensor<4x8xf32>
  }
  tv.rank_program [1] {
  }
}

// -----

tv.mesh @m axes ["tp"] sizes [2]
tv.plan @p mesh @m micro_batches 1 {
  tv.rank_program [0] {
    %x = tv.input "x" : tensor<4x8xf32>
    // expected-error @+1 {{'tv.send' op needs both 'peer_axis' and 'peer_offset'}}
    tv.send %x {peer_axis = "tp"} : tensor<4x8xf32>
  }
  tv.rank_program [1] {
  }
}

// -----

tv.mesh @m axes ["tp"] sizes [2]
tv.plan @p mesh @m micro_batches 1 {
  tv.rank_program [0] {
    %x = tv.input "x" : tensor<4x8xf32>
    // expected-error @+1 {{'tv.recv' op needs both 'peer_axis' and 'peer_offset'}}
    %0 = tv.recv {peer_offset = -1} : tensor<4x8xf32>
  }
  tv.rank_program [1] {
  }
}

// -----

tv.mesh @m axes ["tp"] sizes [2]
tv.plan @p mesh @m micro_batches 1 {
  tv.rank_program [0] {
    %x = tv.input "x" : tensor<4x8xf32>
    // expected-error @+1 {{'tv.send' op peer axis 'pp' is not an axis of mesh @m}}
    tv.send %x {peer_axis = "pp", peer_offset = 1} : tensor<4x8xf32>
  }
  tv.rank_program [1] {
  }
}

// -----

tv.mesh @m axes ["tp"] sizes [2]
tv.plan @p mesh @m micro_batches 1 {
  tv.rank_program [0] {
    %x = tv.input "x" : tensor<4x8xf32>
    // expected-error @+1 {{'tv.recv' op peer axis 'dp' is not an axis of mesh @m}}
    %0 = tv.recv {peer_axis = "dp", peer_offset = -1} : tensor<4x8xf32>
  }
  tv.rank_program [1] {
  }
}

// -----

// A relative peer does not wrap around: rank 1 + 1 falls off the tp axis.
tv.mesh @m axes ["tp"] sizes [2]
tv.plan @p mesh @m micro_batches 1 {
  tv.rank_program [0, 1] {
    %x = tv.input "x" : tensor<4x8xf32>
    // expected-error @+1 {{'tv.send' op has no peer on the mesh for rank 1}}
    tv.send %x {peer_axis = "tp", peer_offset = 1} : tensor<4x8xf32>
  }
}

// -----

tv.mesh @m axes ["tp"] sizes [2]
tv.plan @p mesh @m micro_batches 1 {
  tv.rank_program [0, 1] {
    %x = tv.input "x" : tensor<4x8xf32>
    // expected-error @+1 {{'tv.recv' op has no peer on the mesh for rank 0}}
    %0 = tv.recv {peer_axis = "tp", peer_offset = -1} : tensor<4x8xf32>
  }
}

// -----

tv.mesh @m axes ["pp", "tp"] sizes [3, 2]
tv.plan @p mesh @m micro_batches 1 {
  tv.rank_program [2, 3] {
    %x = tv.input "x" : tensor<4x8xf32>
    // expected-error @+1 {{'tv.recv' op has no peer on the mesh for rank 2}}
    %0 = tv.recv {peer_axis = "pp", peer_offset = 2} : tensor<4x8xf32>
  }
  tv.rank_program [0, 1, 4, 5] {
  }
}

// -----

tv.mesh @m axes ["tp"] sizes [2]
tv.plan @p mesh @m micro_batches 1 {
  tv.rank_program [0] {
    %x = tv.input "x" : tensor<4x8xf32>
    // expected-error @+1 {{'tv.send' op has no peer on the mesh for rank 0}}
    tv.send %x {peer = 2} : tensor<4x8xf32>
  }
  tv.rank_program [1] {
  }
}

// -----

tv.mesh @m axes ["tp"] sizes [2]
tv.plan @p mesh @m micro_batches 1 {
  tv.rank_program [0] {
    %x = tv.input "x" : tensor<4x8xf32>
    // expected-error @+1 {{'tv.send' op has no peer on the mesh for rank 0}}
    tv.send %x {peer = -1} : tensor<4x8xf32>
  }
  tv.rank_program [1] {
  }
}

// -----

// An explicit peer is the same for every rank of the program.
tv.mesh @m axes ["tp"] sizes [2]
tv.plan @p mesh @m micro_batches 1 {
  tv.rank_program [0, 1] {
    %x = tv.input "x" : tensor<4x8xf32>
    // expected-error @+1 {{'tv.send' op on rank 1 names itself as peer}}
    tv.send %x {peer = 1} : tensor<4x8xf32>
  }
}

// -----

tv.mesh @m axes ["tp"] sizes [2]
tv.plan @p mesh @m micro_batches 1 {
  tv.rank_program [0, 1] {
    %x = tv.input "x" : tensor<4x8xf32>
    // expected-error @+1 {{'tv.recv' op on rank 0 names itself as peer}}
    %0 = tv.recv {peer_axis = "tp", peer_offset = 0} : tensor<4x8xf32>
  }
}

// -----

// ODS: attribute and value types.
tv.mesh @m axes ["tp"] sizes [2]
tv.plan @p mesh @m micro_batches 1 {
  tv.rank_program [0] {
    %x = tv.input "x" : tensor<4x8xf32>
    // expected-error @+1 {{'tv.send' op attribute 'tag' failed to satisfy constraint: 64-bit signless integer attribute}}
    tv.send %x {peer = 1, tag = "a"} : tensor<4x8xf32>
  }
  tv.rank_program [1] {
  }
}

// -----

tv.mesh @m axes ["tp"] sizes [2]
tv.plan @p mesh @m micro_batches 1 {
  tv.rank_program [0] {
    %x = tv.input "x" : tensor<4x8xf32>
    // expected-error @+1 {{'tv.recv' op attribute 'peer_axis' failed to satisfy constraint: string attribute}}
    %0 = tv.recv {peer_axis = 1, peer_offset = 1} : tensor<4x8xf32>
  }
  tv.rank_program [1] {
  }
}

// -----

tv.mesh @m axes ["tp"] sizes [2]
tv.plan @p mesh @m micro_batches 1 {
  tv.rank_program [0] {
    %x = tv.input "x" : tensor<4x8xf32>
    // expected-error @+1 {{'tv.send' op attribute 'peer' failed to satisfy constraint: 64-bit signless integer attribute}}
    tv.send %x {peer = 1 : i32} : tensor<4x8xf32>
  }
  tv.rank_program [1] {
  }
}

// -----

tv.mesh @m axes ["tp"] sizes [2]
tv.plan @p mesh @m micro_batches 1 {
  tv.rank_program [0] {
    %x = builtin.unrealized_conversion_cast to tensor<4xcomplex<f32>>
    // expected-error @+1 {{'tv.send' op operand #0 must be ranked tensor of floating-point or signless integer values}}
    tv.send %x {peer = 1} : tensor<4xcomplex<f32>>
  }
  tv.rank_program [1] {
  }
}

// -----

tv.mesh @m axes ["tp"] sizes [2]
tv.plan @p mesh @m micro_batches 1 {
  tv.rank_program [0] {
  }
  tv.rank_program [1] {
    // expected-error @+1 {{'tv.recv' op result #0 must be ranked tensor of floating-point or signless integer values}}
    %0 = tv.recv {peer = 0} : tensor<4xui8>
  }
}

// -----

tv.mesh @m axes ["tp"] sizes [4]
tv.plan @p mesh @m micro_batches 1 {
  tv.rank_program [0, 1, 2, 3] {
    %x = tv.input "x" : tensor<2xf32>
    // expected-error @+1 {{'tv.all_gather' op 'order' must be a permutation of the group indices 0..3}}
    %0 = tv.all_gather %x dim 0 {axes = ["tp"], order = array<i64: 0, 1, 1, 3>} : tensor<2xf32> -> tensor<8xf32>
  }
}

// -----

tv.mesh @m axes ["tp"] sizes [4]
tv.plan @p mesh @m micro_batches 1 {
  tv.rank_program [0, 1, 2, 3] {
    %x = tv.input "x" : tensor<2xf32>
    // expected-error @+1 {{'tv.all_gather' op 'order' has 2 entries for a group of 4}}
    %0 = tv.all_gather %x dim 0 {axes = ["tp"], order = array<i64: 1, 0>} : tensor<2xf32> -> tensor<8xf32>
  }
}

// -----

tv.mesh @m axes ["tp"] sizes [2]
tv.plan @p mesh @m micro_batches 1 {
  tv.rank_program [0, 1] {
    %x = tv.input "x" : tensor<4xf32>
    // expected-error @+1 {{'tv.chunk' op chunk index 2 is outside the group of 2}}
    %0 = tv.chunk %x dim 0 {axes = ["tp"], index = 2} : tensor<4xf32> -> tensor<2xf32>
  }
}

// -----

tv.mesh @m axes ["pp", "tp"] sizes [2, 2]
tv.plan @p mesh @m micro_batches 1 {
  tv.rank_program [0] {
    %x = tv.input "x" : tensor<4xf32>
    // expected-error @+1 {{'tv.send' op 'peer_shift' has 1 offsets for the 2 axes of mesh @m}}
    tv.send %x {peer_shift = array<i64: 1>} : tensor<4xf32>
  }
  tv.rank_program [1, 2, 3] {
  }
}

// -----

tv.mesh @m axes ["pp", "tp"] sizes [2, 2]
tv.plan @p mesh @m micro_batches 1 {
  tv.rank_program [1] {
    // expected-error @+1 {{'tv.recv' op has no peer on the mesh for rank 1}}
    %x = tv.recv {peer_shift = array<i64: 1, 1>} : tensor<4xf32>
  }
  tv.rank_program [0, 2, 3] {
  }
}

// #tv.lineage_map in a stage's lists (decision 127): the attribute's own
// rules, and its fit on the mesh it names, checked with the stage's symbol
// uses.
// RUN: tv-opt %s --split-input-file --verify-diagnostics

tv.mesh @m axes ["dp", "tp"] sizes [2, 2]
// expected-error @+1 {{lineage map's block shape must be positive, got 0}}
tv.stage @st assumes [] guarantees [#tv.lineage_map<"y" blocks affine_map<(d0, d1) -> (d0)> shape [0] = "y" on @m where {}>] {
  tv.spec @s {
  }
  tv.plan @p mesh @m micro_batches 1 {
    tv.rank_program [0, 1, 2, 3] {
    }
  }
}

// -----

tv.mesh @m axes ["dp", "tp"] sizes [2, 2]
// expected-error @+1 {{lineage map's blocks map has 1 results but the shape has 2 dimensions}}
tv.stage @st assumes [] guarantees [#tv.lineage_map<"y" blocks affine_map<(d0, d1) -> (d0)> shape [4, 4] = "y" on @m where {}>] {
  tv.spec @s {
  }
  tv.plan @p mesh @m micro_batches 1 {
    tv.rank_program [0, 1, 2, 3] {
    }
  }
}

// -----

tv.mesh @m axes ["dp", "tp"] sizes [2, 2]
// expected-error @+1 {{lineage map's where: coordinate of axis 'tp' must be a non-negative integer}}
tv.stage @st assumes [] guarantees [#tv.lineage_map<"y" blocks affine_map<(d0, d1) -> (d0)> shape [4] = "y" on @m where {tp = -1 : i64}>] {
  tv.spec @s {
  }
  tv.plan @p mesh @m micro_batches 1 {
    tv.rank_program [0, 1, 2, 3] {
    }
  }
}

// -----

tv.mesh @m axes ["dp", "tp"] sizes [2, 2]
// expected-error @+1 {{'tv.stage' op lineage map of 'y' refers to unknown mesh @nomesh}}
tv.stage @st assumes [] guarantees [#tv.lineage_map<"y" blocks affine_map<(d0, d1) -> (d0)> shape [4] = "y" on @nomesh where {}>] {
  tv.spec @s {
  }
  tv.plan @p mesh @m micro_batches 1 {
    tv.rank_program [0, 1, 2, 3] {
    }
  }
}

// -----

tv.mesh @m axes ["dp", "tp"] sizes [2, 2]
// expected-error @+1 {{'tv.stage' op lineage map of 'y' on @m: blocks map does not match the mesh and the shape}}
tv.stage @st assumes [#tv.lineage_map<"y" blocks affine_map<(d0) -> (d0)> shape [4] = "y" on @m where {}>] guarantees [#tv.lineage<"y"[0:4] = ["y":0]>] {
  tv.spec @s {
  }
  tv.plan @p mesh @m micro_batches 1 {
    tv.rank_program [0, 1, 2, 3] {
    }
  }
}

// -----

tv.mesh @m axes ["dp", "tp"] sizes [2, 2]
// expected-error @+1 {{'tv.stage' op lineage map of 'y' on @m: where: no mesh axis 'pp'}}
tv.stage @st assumes [] guarantees [#tv.lineage_map<"y" blocks affine_map<(d0, d1) -> (d0)> shape [4] = "y" on @m where {pp = 0 : i64}>] {
  tv.spec @s {
  }
  tv.plan @p mesh @m micro_batches 1 {
    tv.rank_program [0, 1, 2, 3] {
    }
  }
}

// -----

tv.mesh @m axes ["dp", "tp"] sizes [2, 2]
// expected-error @+1 {{'tv.stage' op lineage map of 'y' on @m: where: coordinate 2 of axis 'tp' is outside its size 2}}
tv.stage @st assumes [] guarantees [#tv.lineage_map<"y" blocks affine_map<(d0, d1) -> (d0)> shape [4] = "y" on @m where {tp = 2 : i64}>] {
  tv.spec @s {
  }
  tv.plan @p mesh @m micro_batches 1 {
    tv.rank_program [0, 1, 2, 3] {
    }
  }
}

// -----

tv.mesh @m axes ["dp", "tp"] sizes [2, 2]
// expected-error @+1 {{'tv.stage' op lineage map of 'y' on @m: blocks map cannot be evaluated at rank 0 (a division by a non-positive number)}}
tv.stage @st assumes [] guarantees [#tv.lineage_map<"y" blocks affine_map<(d0, d1) -> (d0 mod 0)> shape [4] = "y" on @m where {}>] {
  tv.spec @s {
  }
  tv.plan @p mesh @m micro_batches 1 {
    tv.rank_program [0, 1, 2, 3] {
    }
  }
}

// -----

tv.mesh @m axes ["dp", "tp"] sizes [2, 2]
// expected-error @+1 {{expected integer value}}
tv.stage @st assumes [] guarantees [#tv.lineage_map<"y" blocks affine_map<(d0, d1) -> (d0)> shape [x] = "y" on @m where {}>] {
  tv.spec @s {
  }
  tv.plan @p mesh @m micro_batches 1 {
    tv.rank_program [0, 1, 2, 3] {
    }
  }
}

// -----

// An index that overflows 64 bits on the mesh (at dp = 1, here) is refused
// before any statement is formed or folded: folding on the map would wrap
// it into range.
tv.mesh @mesh axes ["dp"] sizes [2]
// expected-error @+1 {{'tv.stage' op lineage map of 'x' on @mesh: blocks map's index 0 overflows 64 bits on the mesh}}
tv.stage @s assumes [#tv.lineage_map<"x" blocks affine_map<(d0) -> (d0 * 2305843009213693953, 0)> shape [4, 2] = "x" on @mesh where {}>] guarantees [#tv.lineage<"y"[0:8, 0:2] = ["y":0]>] {
  tv.spec @spec {
  }
  tv.plan @plan mesh @mesh micro_batches 1 {
    tv.rank_program [0, 1] {
    }
  }
}

// -----

tv.mesh @m axes ["dp", "tp"] sizes [2, 2]
// expected-error @+1 {{lineage map's where: coordinate of axis 'dp' must be a non-negative integer}}
tv.stage @st assumes [] guarantees [#tv.lineage_map<"y" blocks affine_map<(d0, d1) -> (d0)> shape [4] = "y" on @m where {dp = 18446744073709551616 : i128}>] {
  tv.spec @s {
  }
  tv.plan @p mesh @m micro_batches 1 {
    tv.rank_program [0, 1, 2, 3] {
    }
  }
}

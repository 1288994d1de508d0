// RUN: tv-opt %s --split-input-file --verify-diagnostics --tv-check-lineage -o /dev/null

// The op's own rules.

tv.mesh @mesh axes ["dp", "tp"] sizes [2, 2]
// expected-error @+1 {{'tv.lineage_map' op blocks map must not have symbols}}
tv.lineage_map "x" blocks affine_map<(d0, d1)[s0] -> (d0 + s0)> shape [4] = "x" on @mesh where {}

// -----

tv.mesh @mesh axes ["dp", "tp"] sizes [2, 2]
// expected-error @+1 {{'tv.lineage_map' op blocks map has 1 results but the shape has 2 dimensions}}
tv.lineage_map "x" blocks affine_map<(d0, d1) -> (d0)> shape [4, 8] = "x" on @mesh where {}

// -----

tv.mesh @mesh axes ["dp", "tp"] sizes [2, 2]
// expected-error @+1 {{'tv.lineage_map' op block shape must be positive, got 0}}
tv.lineage_map "x" blocks affine_map<(d0, d1) -> (d0)> shape [0] = "x" on @mesh where {}

// -----

tv.mesh @mesh axes ["dp", "tp"] sizes [2, 2]
// expected-error @+1 {{'tv.lineage_map' op lineage scale must be a numerator and a denominator}}
tv.lineage_map "x" blocks affine_map<(d0, d1) -> (d0)> shape [4] scaled [2] = "x" on @mesh where {}

// -----

tv.mesh @mesh axes ["dp", "tp"] sizes [2, 2]
// expected-error @+1 {{'tv.lineage_map' op lineage scale 2/4 is not in lowest terms}}
tv.lineage_map "x" blocks affine_map<(d0, d1) -> (d0)> shape [4] scaled [2, 4] = "x" on @mesh where {}

// -----

tv.mesh @mesh axes ["dp", "tp"] sizes [2, 2]
// expected-error @+1 {{'tv.lineage_map' op lineage scale 1/0 must be a non-zero fraction with a positive denominator}}
tv.lineage_map "x" blocks affine_map<(d0, d1) -> (d0)> shape [4] scaled [1, 0] = "x" on @mesh where {}

// -----

tv.mesh @mesh axes ["dp", "tp"] sizes [2, 2]
// expected-error @+1 {{'tv.lineage_map' op where: coordinate of axis 'tp' must be a non-negative integer}}
tv.lineage_map "x" blocks affine_map<(d0, d1) -> (d0)> shape [4] = "x" on @mesh where {tp = -1 : i64}

// -----

tv.mesh @mesh axes ["dp", "tp"] sizes [2, 2]
// expected-error @+1 {{'tv.lineage_map' op refers to unknown mesh @other}}
tv.lineage_map "x" blocks affine_map<(d0, d1) -> (d0)> shape [4] = "x" on @other where {}

// -----

tv.mesh @mesh axes ["dp", "tp"] sizes [2, 2]
// expected-error @+1 {{'tv.lineage_map' op blocks map has 3 dimensions but mesh @mesh has 2 axes}}
tv.lineage_map "x" blocks affine_map<(d0, d1, d2) -> (d0)> shape [4] = "x" on @mesh where {}

// -----

tv.mesh @mesh axes ["dp", "tp"] sizes [2, 2]
// expected-error @+1 {{'tv.lineage_map' op where: mesh @mesh has no axis 'pp'}}
tv.lineage_map "x" blocks affine_map<(d0, d1) -> (d0)> shape [4] = "x" on @mesh where {pp = 0 : i64}

// -----

tv.mesh @mesh axes ["dp", "tp"] sizes [2, 2]
// expected-error @+1 {{'tv.lineage_map' op where: coordinate 2 of axis 'tp' is outside its size 2}}
tv.lineage_map "x" blocks affine_map<(d0, d1) -> (d0)> shape [4] = "x" on @mesh where {tp = 2 : i64}

// -----

// The statements a map stands for are checked like written ones, and each
// fault of a map is reported once (not once per rank).

tv.mesh @mesh axes ["dp"] sizes [2]
tv.spec @spec {
  %x = tv.input "x" : tensor<8xf32>
  %y = tv.neg %x : tensor<8xf32>
  tv.output "y", %y : tensor<8xf32>
}
tv.plan @plan mesh @mesh micro_batches 1 {
  tv.rank_program [0, 1] {
    %x = tv.input "x" : tensor<4xf32>
    %y = tv.neg %x : tensor<4xf32>
    tv.output "y", %y : tensor<4xf32>
  }
}
// expected-error @+1 {{lineage slice of 'x' lies outside its shape [8]}}
tv.lineage_map "x" blocks affine_map<(d0) -> (d0 + 1)> shape [4] = "x" on @mesh where {}
tv.lineage_map "y" blocks affine_map<(d0) -> (d0)> shape [4] = "y" on @mesh where {}

// -----

tv.mesh @mesh axes ["dp"] sizes [2]
tv.spec @spec {
  %x = tv.input "x" : tensor<8xf32>
  %y = tv.neg %x : tensor<8xf32>
  tv.output "y", %y : tensor<8xf32>
}
tv.plan @plan mesh @mesh micro_batches 1 {
  tv.rank_program [0, 1] {
    %x = tv.input "x" : tensor<4xf32>
    %y = tv.neg %x : tensor<4xf32>
    tv.output "y", %y : tensor<4xf32>
  }
}
tv.lineage_map "x" blocks affine_map<(d0) -> (d0)> shape [4] = "x" on @mesh where {}
// expected-error @+1 {{lineage refers to plan tensor 'z' that rank 0 does not define}}
tv.lineage_map "y" blocks affine_map<(d0) -> (d0)> shape [4] = "z" on @mesh where {}

// -----

tv.mesh @mesh axes ["dp"] sizes [2]
tv.spec @spec {
  %x = tv.input "x" : tensor<8xf32>
  %y = tv.neg %x : tensor<8xf32>
  tv.output "y", %y : tensor<8xf32>
}
tv.plan @plan mesh @mesh micro_batches 1 {
  tv.rank_program [0, 1] {
    %x = tv.input "x" : tensor<4xf32>
    %y = tv.neg %x : tensor<4xf32>
    tv.output "y", %y : tensor<4xf32>
  }
}
tv.lineage_map "x" blocks affine_map<(d0) -> (d0)> shape [4] = "x" on @mesh where {}
// A written statement is not merged with a map's: the same box twice is an
// overlap.
// expected-note @+1 {{overlapping lineage}}
tv.lineage #tv.lineage<"y"[0:4] = ["y":0]>
// expected-error @+1 {{lineage slice of 'y' overlaps another}}
tv.lineage_map "y" blocks affine_map<(d0) -> (d0)> shape [4] = "y" on @mesh where {}

// -----

tv.mesh @mesh axes ["dp"] sizes [2]
tv.spec @spec {
  %x = tv.input "x" : tensor<8xf32>
  %y = tv.neg %x : tensor<8xf32>
  tv.output "y", %y : tensor<8xf32>
}
tv.plan @plan mesh @mesh micro_batches 1 {
  tv.rank_program [0, 1] {
    %x = tv.input "x" : tensor<4xf32>
    %y = tv.neg %x : tensor<4xf32>
    tv.output "y", %y : tensor<4xf32>
  }
}
// expected-error @+1 {{blocks map cannot be evaluated at rank 0}}
tv.lineage_map "x" blocks affine_map<(d0) -> (d0 mod 0)> shape [4] = "x" on @mesh where {}
tv.lineage_map "y" blocks affine_map<(d0) -> (d0)> shape [4] = "y" on @mesh where {}

// A reshape that flattens [4, 6] and a slice that cuts the flat dimension
// inside a row (start 3, 6 elements): shape reduction keeps the rows (a
// reduced row would stand for several, and the cut would move to another
// element) and reduces the columns by a ratio that keeps the cut on a
// block boundary (6 -> 2: start 3 -> 1).
// RUN: tv-opt %s --split-input-file --tv-stage-partition --tv-shape-reduce="fold=false" | FileCheck %s
// RUN: not tv-opt %s --split-input-file --tv-stage-partition --tv-shape-reduce --tv-verify -o /dev/null 2>&1 | FileCheck %s --check-prefix=PROVEN
// CHECK-LABEL: tv.stage @stage0_z
// CHECK:       tv.input "w" : tensor<4x2xf32>
// CHECK-NEXT:  tv.reshape %{{.*}} : tensor<4x2xf32> -> tensor<8xf32>
// CHECK-NEXT:  tv.slice %{{.*}} start [1] : tensor<8xf32> -> tensor<2xf32>
// PROVEN: tv-verify: proven
tv.mesh @mesh axes ["dp"] sizes [2]
tv.spec @spec {
  %w = tv.input "w" : tensor<4x6xf32>
  %f = tv.reshape %w : tensor<4x6xf32> -> tensor<24xf32>
  %y = tv.slice %f start [3] : tensor<24xf32> -> tensor<6xf32>
  %z = tv.scale %y, 2.0 : tensor<6xf32>
  tv.output "z", %z : tensor<6xf32>
}
tv.plan @plan mesh @mesh micro_batches 1 {
  tv.rank_program [0, 1] {
    %w = tv.input "w" : tensor<4x6xf32>
    %f = tv.reshape %w : tensor<4x6xf32> -> tensor<24xf32>
    %y = tv.slice %f start [3] : tensor<24xf32> -> tensor<6xf32>
    %z = tv.add %y, %y : tensor<6xf32>, tensor<6xf32> -> tensor<6xf32>
    tv.output "z", %z : tensor<6xf32>
  }
}
tv.lineage #tv.lineage<"w"[0:4, 0:6] = ["w":0] | ["w":1]>
tv.lineage #tv.lineage<"z"[0:6] = ["z":0] | ["z":1]>

// -----

// [6, 2] cut after 3 elements (row 1, column 1): the columns cannot shrink
// below 2, so nothing reduces. Without the rule the ratio 2/3 was chosen:
// rows 6 -> 4 and the slice [2, 4), a whole reduced row, where the full
// slice takes one column of row 1 and all of row 2.
// CHECK-LABEL: tv.stage @stage0_z
// CHECK:       tv.input "w" : tensor<6x2xf32>
// CHECK-NEXT:  tv.reshape %{{.*}} : tensor<6x2xf32> -> tensor<12xf32>
// CHECK-NEXT:  tv.slice %{{.*}} start [3] : tensor<12xf32> -> tensor<3xf32>
// PROVEN: tv-verify: proven
tv.mesh @mesh axes ["dp"] sizes [2]
tv.spec @spec {
  %w = tv.input "w" : tensor<6x2xf32>
  %f = tv.reshape %w : tensor<6x2xf32> -> tensor<12xf32>
  %y = tv.slice %f start [3] : tensor<12xf32> -> tensor<3xf32>
  %z = tv.scale %y, 2.0 : tensor<3xf32>
  tv.output "z", %z : tensor<3xf32>
}
tv.plan @plan mesh @mesh micro_batches 1 {
  tv.rank_program [0, 1] {
    %w = tv.input "w" : tensor<6x2xf32>
    %f = tv.reshape %w : tensor<6x2xf32> -> tensor<12xf32>
    %y = tv.slice %f start [3] : tensor<12xf32> -> tensor<3xf32>
    %z = tv.add %y, %y : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
    tv.output "z", %z : tensor<3xf32>
  }
}
tv.lineage #tv.lineage<"w"[0:6, 0:2] = ["w":0] | ["w":1]>
tv.lineage #tv.lineage<"z"[0:3] = ["z":0] | ["z":1]>

// -----

// [8, 2] cut at the start of row 1 (start 2, 4 elements): a cut on a row
// boundary, but rows 1-2 of 8 have no reduced counterpart unless the rows
// keep their size (reduced to 4, the cut fell inside reduced row 0).
// CHECK-LABEL: tv.stage @stage0_z
// CHECK:       tv.input "w" : tensor<8x2xf32>
// CHECK-NEXT:  tv.reshape %{{.*}} : tensor<8x2xf32> -> tensor<16xf32>
// CHECK-NEXT:  tv.slice %{{.*}} start [2] : tensor<16xf32> -> tensor<4xf32>
// PROVEN: tv-verify: proven
tv.mesh @mesh axes ["dp"] sizes [2]
tv.spec @spec {
  %w = tv.input "w" : tensor<8x2xf32>
  %f = tv.reshape %w : tensor<8x2xf32> -> tensor<16xf32>
  %y = tv.slice %f start [2] : tensor<16xf32> -> tensor<4xf32>
  %z = tv.scale %y, 2.0 : tensor<4xf32>
  tv.output "z", %z : tensor<4xf32>
}
tv.plan @plan mesh @mesh micro_batches 1 {
  tv.rank_program [0, 1] {
    %w = tv.input "w" : tensor<8x2xf32>
    %f = tv.reshape %w : tensor<8x2xf32> -> tensor<16xf32>
    %y = tv.slice %f start [2] : tensor<16xf32> -> tensor<4xf32>
    %z = tv.add %y, %y : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    tv.output "z", %z : tensor<4xf32>
  }
}
tv.lineage #tv.lineage<"w"[0:8, 0:2] = ["w":0] | ["w":1]>
tv.lineage #tv.lineage<"z"[0:4] = ["z":0] | ["z":1]>

// -----

// [2, 4, 3] cut at element 3 = (0, 1, 0): the first two levels keep their
// sizes, the last reduces (the cut stays at the start of a last-dim row).
// CHECK-LABEL: tv.stage @stage0_z
// CHECK:       tv.input "w" : tensor<2x4x2xf32>
// CHECK-NEXT:  tv.reshape %{{.*}} : tensor<2x4x2xf32> -> tensor<16xf32>
// CHECK-NEXT:  tv.slice %{{.*}} start [2] : tensor<16xf32> -> tensor<4xf32>
// PROVEN: tv-verify: proven
tv.mesh @mesh axes ["dp"] sizes [2]
tv.spec @spec {
  %w = tv.input "w" : tensor<2x4x3xf32>
  %f = tv.reshape %w : tensor<2x4x3xf32> -> tensor<24xf32>
  %y = tv.slice %f start [3] : tensor<24xf32> -> tensor<6xf32>
  %z = tv.scale %y, 2.0 : tensor<6xf32>
  tv.output "z", %z : tensor<6xf32>
}
tv.plan @plan mesh @mesh micro_batches 1 {
  tv.rank_program [0, 1] {
    %w = tv.input "w" : tensor<2x4x3xf32>
    %f = tv.reshape %w : tensor<2x4x3xf32> -> tensor<24xf32>
    %y = tv.slice %f start [3] : tensor<24xf32> -> tensor<6xf32>
    %z = tv.add %y, %y : tensor<6xf32>, tensor<6xf32> -> tensor<6xf32>
    tv.output "z", %z : tensor<6xf32>
  }
}
tv.lineage #tv.lineage<"w"[0:2, 0:4, 0:3] = ["w":0] | ["w":1]>
tv.lineage #tv.lineage<"z"[0:6] = ["z":0] | ["z":1]>

// -----

// Tokens flattened as frameworks do ([batch, seq, h] -> [batch*seq, h]),
// the spec's batch of 8 and each data-parallel rank's 4: both splits have
// the same rows (seq), tied equal, so a row length is no cut and the batch
// reduces with the sequence (it used to keep every batch row: the row
// length 4 read as a cut after batch row 1).
// CHECK-LABEL: tv.stage @stage0_y
// CHECK:       tv.input "x" : tensor<4x2x2xf32>
// CHECK-NEXT:  tv.reshape %{{.*}} : tensor<4x2x2xf32> -> tensor<8x2xf32>
// CHECK:       tv.input "x" : tensor<2x2x2xf32>
// CHECK-NEXT:  tv.reshape %{{.*}} : tensor<2x2x2xf32> -> tensor<4x2xf32>
// PROVEN: tv-verify: proven
tv.mesh @mesh axes ["dp"] sizes [2]
tv.spec @spec {
  %x = tv.input "x" : tensor<8x4x6xf32>
  %f = tv.reshape %x : tensor<8x4x6xf32> -> tensor<32x6xf32>
  %y = tv.scale %f, 2.0 : tensor<32x6xf32>
  tv.output "y", %y : tensor<32x6xf32>
}
tv.plan @plan mesh @mesh micro_batches 1 {
  tv.rank_program [0, 1] {
    %x = tv.input "x" : tensor<4x4x6xf32>
    %f = tv.reshape %x : tensor<4x4x6xf32> -> tensor<16x6xf32>
    %y = tv.add %f, %f : tensor<16x6xf32>, tensor<16x6xf32> -> tensor<16x6xf32>
    tv.output "y", %y : tensor<16x6xf32>
  }
}
tv.lineage #tv.lineage<"x"[0:4, 0:4, 0:6] = ["x":0]>
tv.lineage #tv.lineage<"x"[4:8, 0:4, 0:6] = ["x":1]>
tv.lineage #tv.lineage<"y"[0:16, 0:6] = ["y":0]>
tv.lineage #tv.lineage<"y"[16:32, 0:6] = ["y":1]>

// -----

// The same with a wrong plan (the last case: the run exits non-zero): rank 1 flattens its tokens in the other order
// (sequence-major), which a reduced batch still tells apart.
// PROVEN: counterexample
tv.mesh @mesh axes ["dp"] sizes [2]
tv.spec @spec {
  %x = tv.input "x" : tensor<8x4x6xf32>
  %f = tv.reshape %x : tensor<8x4x6xf32> -> tensor<32x6xf32>
  tv.output "y", %f : tensor<32x6xf32>
}
tv.plan @plan mesh @mesh micro_batches 1 {
  tv.rank_program [0] {
    %x = tv.input "x" : tensor<4x4x6xf32>
    %f = tv.reshape %x : tensor<4x4x6xf32> -> tensor<16x6xf32>
    tv.output "y", %f : tensor<16x6xf32>
  }
  tv.rank_program [1] {
    %x = tv.input "x" : tensor<4x4x6xf32>
    %t = tv.transpose %x perm [1, 0, 2] : tensor<4x4x6xf32> -> tensor<4x4x6xf32>
    %f = tv.reshape %t : tensor<4x4x6xf32> -> tensor<16x6xf32>
    tv.output "y", %f : tensor<16x6xf32>
  }
}
tv.lineage #tv.lineage<"x"[0:4, 0:4, 0:6] = ["x":0]>
tv.lineage #tv.lineage<"x"[4:8, 0:4, 0:6] = ["x":1]>
tv.lineage #tv.lineage<"y"[0:16, 0:6] = ["y":0]>
tv.lineage #tv.lineage<"y"[16:32, 0:6] = ["y":1]>

// RUN: tv-opt %s | tv-opt | FileCheck %s
// RUN: tv-opt %s --mlir-print-op-generic | tv-opt | FileCheck %s

// Round trip of the structure ops: tv.mesh, tv.spec, tv.plan,
// tv.rank_program, tv.input, tv.tag, tv.output, tv.accumulate,
// tv.buffer_read, tv.lineage and the #tv.lineage attribute.
// (tv.stage: see structure_stage_parse_print.mlir.)

// CHECK-LABEL: tv.mesh @m1 axes ["tp"] sizes [2]
tv.mesh @m1 axes ["tp"] sizes [2]

// CHECK-LABEL: tv.mesh @m3 axes ["dp", "pp", "tp"] sizes [2, 1, 4] {note = "three axes"}
tv.mesh @m3 axes ["dp", "pp", "tp"] sizes [2, 1, 4] {note = "three axes"}

// CHECK-LABEL: tv.mesh @m4 axes ["a", "b"] sizes [2, 2]
tv.mesh @m4 axes ["a", "b"] sizes [2, 2]

//===----------------------------------------------------------------------===//
// tv.spec with every program-level structure op
//===----------------------------------------------------------------------===//

// CHECK-LABEL: tv.spec @spec_io {
// CHECK-NEXT:    %[[X:.*]] = tv.input "x" : tensor<4x8xf32>
// CHECK-NEXT:    %[[IDS:.*]] = tv.input "ids" : tensor<4xi64>
// CHECK-NEXT:    %[[MASK:.*]] = tv.input "mask" : tensor<4x4xi1>
// CHECK-NEXT:    %[[S:.*]] = tv.input "scalar" : tensor<f32>
// CHECK-NEXT:    %[[H:.*]] = tv.input "half" {mb = 0 : i64} : tensor<2xf16>
// CHECK-NEXT:    tv.tag "x_tag", %[[X]] : tensor<4x8xf32>
// CHECK-NEXT:    tv.tag "ids_tag", %[[IDS]] {note} : tensor<4xi64>
// CHECK-NEXT:    tv.accumulate "dw", %[[X]] : tensor<4x8xf32>
// CHECK-NEXT:    tv.accumulate "dw", %[[X]] {mb = 1 : i64} : tensor<4x8xf32>
// CHECK-NEXT:    %[[R:.*]] = tv.buffer_read "dw" : tensor<4x8xf32>
// CHECK-NEXT:    %[[R2:.*]] = tv.buffer_read "dw" {mb = 1 : i64} : tensor<4x8xf32>
// CHECK-NEXT:    tv.output "y", %[[R]] : tensor<4x8xf32>
// CHECK-NEXT:    tv.output "loss", %[[S]] {kind = "loss"} : tensor<f32>
// CHECK-NEXT:    tv.output "mask_out", %[[MASK]] : tensor<4x4xi1>
// CHECK-NEXT:    tv.output "y2", %[[R2]] : tensor<4x8xf32>
// CHECK-NEXT:  }
tv.spec @spec_io {
  %x = tv.input "x" : tensor<4x8xf32>
  %ids = tv.input "ids" : tensor<4xi64>
  %mask = tv.input "mask" : tensor<4x4xi1>
  %s = tv.input "scalar" : tensor<f32>
  %h = tv.input "half" {mb = 0} : tensor<2xf16>
  tv.tag "x_tag", %x : tensor<4x8xf32>
  tv.tag "ids_tag", %ids {note} : tensor<4xi64>
  tv.accumulate "dw", %x : tensor<4x8xf32>
  tv.accumulate "dw", %x {mb = 1} : tensor<4x8xf32>
  %r = tv.buffer_read "dw" : tensor<4x8xf32>
  %r2 = tv.buffer_read "dw" {mb = 1} : tensor<4x8xf32>
  tv.output "y", %r : tensor<4x8xf32>
  tv.output "loss", %s {kind = "loss"} : tensor<f32>
  tv.output "mask_out", %mask : tensor<4x4xi1>
  tv.output "y2", %r2 : tensor<4x8xf32>
}

// An empty spec, and a spec with discardable attributes.
// CHECK-LABEL: tv.spec @spec_empty {
// CHECK-NEXT:  }
tv.spec @spec_empty {
}

// CHECK-LABEL: tv.spec @spec_attrs attributes {model = "llama", step = 3 : i64} {
// CHECK-NEXT:    tv.input "w" : tensor<8xbf16>
tv.spec @spec_attrs attributes {model = "llama", step = 3} {
  %w = tv.input "w" : tensor<8xbf16>
}

//===----------------------------------------------------------------------===//
// tv.plan and tv.rank_program
//===----------------------------------------------------------------------===//

// One SPMD program for all ranks.
// CHECK-LABEL: tv.plan @plan_spmd mesh @m1 micro_batches 1 {
// CHECK-NEXT:    tv.rank_program [0, 1] {
// CHECK-NEXT:      %[[X:.*]] = tv.input "x" : tensor<4x4xf32>
// CHECK-NEXT:      tv.tag "t", %[[X]] : tensor<4x4xf32>
// CHECK-NEXT:      tv.accumulate "g", %[[X]] : tensor<4x4xf32>
// CHECK-NEXT:      %[[G:.*]] = tv.buffer_read "g" : tensor<4x4xf32>
// CHECK-NEXT:      tv.output "y", %[[G]] : tensor<4x4xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:  }
tv.plan @plan_spmd mesh @m1 micro_batches 1 {
  tv.rank_program [0, 1] {
    %x = tv.input "x" : tensor<4x4xf32>
    tv.tag "t", %x : tensor<4x4xf32>
    tv.accumulate "g", %x : tensor<4x4xf32>
    %g = tv.buffer_read "g" : tensor<4x4xf32>
    tv.output "y", %g : tensor<4x4xf32>
  }
}

// One program per rank, unsorted rank lists, several micro-batches, and
// attributes on the plan and on rank programs. The same tensor name may be
// defined once in each program.
// CHECK-LABEL: tv.plan @plan_mpmd mesh @m3 micro_batches 4 attributes {schedule = "1f1b"} {
// CHECK-NEXT:    tv.rank_program [7, 0, 3] {
// CHECK-NEXT:      tv.input "x" : tensor<2xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    tv.rank_program [1, 2] attributes {stage = 0 : i64} {
// CHECK-NEXT:      tv.input "x" : tensor<2xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    tv.rank_program [4] {
// CHECK-NEXT:    }
// CHECK-NEXT:    tv.rank_program [5] {
// CHECK-NEXT:    }
// CHECK-NEXT:    tv.rank_program [6] {
// CHECK-NEXT:    }
// CHECK-NEXT:  }
tv.plan @plan_mpmd mesh @m3 micro_batches 4 attributes {schedule = "1f1b"} {
  tv.rank_program [7, 0, 3] {
    %x = tv.input "x" : tensor<2xf32>
  }
  tv.rank_program [1, 2] attributes {stage = 0} {
    %x = tv.input "x" : tensor<2xf32>
  }
  tv.rank_program [4] {
  }
  tv.rank_program [5] {
  }
  tv.rank_program [6] {
  }
}

// A plan may come before the mesh it refers to.
// CHECK-LABEL: tv.plan @plan_forward_ref mesh @m_later micro_batches 1 {
// CHECK-NEXT:    tv.rank_program [0] {
tv.plan @plan_forward_ref mesh @m_later micro_batches 1 {
  tv.rank_program [0] {
  }
}
// CHECK-LABEL: tv.mesh @m_later axes ["x"] sizes [1]
tv.mesh @m_later axes ["x"] sizes [1]

//===----------------------------------------------------------------------===//
// tv.lineage and #tv.lineage
//===----------------------------------------------------------------------===//

// The op prints its attribute without the `#tv.lineage` prefix.
// CHECK-LABEL: tv.lineage <"y"[0:4, 0:8] = ["y":0 + "y":1] | ["y":2]>
tv.lineage #tv.lineage<"y"[0:4, 0:8] = ["y":0 + "y":1] | ["y":2]>

// A plain copy (one group of one reference).
// CHECK-LABEL: tv.lineage <"w"[2:4] = ["w_shard":1]>
tv.lineage #tv.lineage<"w"[2:4] = ["w_shard":1]>

// A constant factor: slice = 1/2 * each group's sum; an integer factor
// prints without a denominator; a factor of 1 is not printed.
// CHECK-LABEL: tv.lineage <"dx"[0:4] = ["dx":0] | ["dx":1] scaled 1/2>
tv.lineage #tv.lineage<"dx"[0:4] = ["dx":0] | ["dx":1] scaled 1/2>
// CHECK-LABEL: tv.lineage <"g"[0:4] = ["g":0] scaled -3>
tv.lineage #tv.lineage<"g"[0:4] = ["g":0] scaled -3/1>
// CHECK-LABEL: tv.lineage <"e"[0:4] = ["e":0]>
tv.lineage #tv.lineage<"e"[0:4] = ["e":0] scaled 1>

// A rank-0 spec tensor has an empty box.
// CHECK-LABEL: tv.lineage <"loss"[] = ["loss":0]>
tv.lineage #tv.lineage<"loss"[] = ["loss":0]>

// Several replicas, each a sum, and discardable attributes on the op.
// CHECK-LABEL: tv.lineage <"h"[0:1, 3:5, 0:2] = ["a":0 + "b":1 + "c":2] | ["d":3] | ["e":4 + "f":5]> {mb = 0 : i64}
tv.lineage #tv.lineage<"h"[0:1, 3:5, 0:2] = ["a":0 + "b":1 + "c":2] | ["d":3] | ["e":4 + "f":5]> {mb = 0}

// Names with characters that need escaping survive the round trip.
// CHECK-LABEL: tv.lineage <"layers.0/w q"[0:8] = ["layers.0/w \22q\22":0]>
tv.lineage #tv.lineage<"layers.0/w q"[0:8] = ["layers.0/w \"q\"":0]>

// The attribute as a discardable attribute of another op.
// CHECK-LABEL: tv.spec @spec_with_lineage_attr
// CHECK-SAME:    attributes {l = #tv.lineage<"y"[0:2] = ["y":0]>}
tv.spec @spec_with_lineage_attr attributes {l = #tv.lineage<"y"[0:2] = ["y":0]>} {
}

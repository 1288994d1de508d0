// #tv.lineage_map prints as it parses: a scaled map, a scalar's empty block
// shape, `where` on several axes; printed and parsed again, the same text.
// RUN: tv-opt %s | tv-opt | FileCheck %s

tv.mesh @mesh axes ["dp", "tp"] sizes [2, 2]
// CHECK: tv.stage @st assumes [#tv.lineage_map<"x" blocks #{{map[0-9]*}} shape [4, 8] scaled [1, 2] = "x" on @mesh where {dp = 1 : i64, tp = 0 : i64}>, #tv.lineage_map<"s" blocks #{{map[0-9]*}} shape [] = "s" on @mesh where {}>]
// CHECK-SAME: guarantees [#tv.lineage<"y"[0:4] = ["y":0]>]
tv.stage @st assumes [#tv.lineage_map<"x" blocks affine_map<(d0, d1) -> (d0, 0)> shape [4, 8] scaled [1, 2] = "x" on @mesh where {dp = 1 : i64, tp = 0 : i64}>, #tv.lineage_map<"s" blocks affine_map<(d0, d1) -> ()> shape [] = "s" on @mesh where {}>] guarantees [#tv.lineage<"y"[0:4] = ["y":0]>] {
  tv.spec @s {
  }
  tv.plan @p mesh @mesh micro_batches 1 {
    tv.rank_program [0, 1, 2, 3] {
    }
  }
}

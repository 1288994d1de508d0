// tv.lineage_map: one statement per plan tensor, its block affine in the
// mesh coordinates. It prints back as written, partitions into the
// statements it stands for (replicas of one box merged across maps, in module
// order then rank order), and the plan is proven; a map that names the wrong
// block is caught.
// RUN: tv-opt %s | tv-opt | FileCheck %s --check-prefix=PRINT
// RUN: tv-opt %s --tv-stage-partition --tv-expand-lineage-maps | FileCheck %s
// RUN: tv-opt %s --tv-stage-partition=lineage-maps=false | FileCheck %s
// A stage that takes all of a tensor's statements holds its maps
// (decision 127): the module's, in module order, plain statements as they
// are.
// RUN: tv-opt %s --tv-stage-partition | FileCheck %s --check-prefix=MAPS
// Printed, the maps parse back to the same statements.
// RUN: tv-opt %s --tv-stage-partition | tv-opt --tv-expand-lineage-maps | FileCheck %s
// Every reader expands the maps first: the SMT-LIB export of stages that
// hold maps is the export of their statements.
// RUN: tv-opt %s --tv-stage-partition | tv-translate --export-smtlib > %t.maps.smt2
// RUN: tv-opt %s --tv-stage-partition=lineage-maps=false | tv-translate --export-smtlib > %t.plain.smt2
// RUN: diff %t.maps.smt2 %t.plain.smt2
// Folding decides on a map when the map leaves the axis free and its block
// indices move by whole blocks with the coordinate: the folded stage holds
// the map on coordinate 0 (`where` gains the axis). x's maps each hold one
// tp coordinate, so stage0_a is folded on its statements.
// RUN: tv-opt %s --tv-stage-partition --tv-fold-symmetry | FileCheck %s --check-prefix=FOLD
// RUN: tv-opt %s --tv-verify-pipeline -o /dev/null 2>&1 | FileCheck %s --check-prefix=PROVEN
// The JSON form writes the statements out; imported back, they are the
// merged lineages and the plan is proven again.
// RUN: tv-translate --export-json-plan %s | tv-translate --import-json-plan | FileCheck %s --check-prefix=JSON
// RUN: tv-translate --export-json-plan %s | tv-translate --import-json-plan | tv-opt --tv-verify-pipeline -o /dev/null 2>&1 | FileCheck %s --check-prefix=PROVEN
// RUN: sed 's/affine_map<(d0, d1) -> (d0, d1)>/affine_map<(d0, d1) -> (d0, -d1 + 1)>/' %s | not tv-opt --tv-verify-pipeline -o /dev/null 2>&1 | FileCheck %s --check-prefix=SWAPPED

tv.mesh @mesh axes ["dp", "tp"] sizes [2, 2]
tv.spec @spec {
  %x = tv.input "x" : tensor<8x8xf32>
  %w1 = tv.input "w1" : tensor<16x8xf32>
  %w2 = tv.input "w2" : tensor<8x16xf32>
  %h = tv.linear %x, %w1 : (tensor<8x8xf32>, tensor<16x8xf32>) -> tensor<8x16xf32>
  %a = tv.gelu %h : tensor<8x16xf32>
  tv.tag "a", %a : tensor<8x16xf32>
  %y = tv.linear %a, %w2 : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x8xf32>
  tv.output "y", %y : tensor<8x8xf32>
}
tv.plan @plan mesh @mesh micro_batches 1 {
  tv.rank_program [0, 1, 2, 3] {
    %x = tv.input "x" : tensor<4x8xf32>
    %w1 = tv.input "w1" : tensor<8x8xf32>
    %w2 = tv.input "w2" : tensor<8x8xf32>
    %h = tv.linear %x, %w1 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    %a = tv.gelu %h : tensor<4x8xf32>
    tv.tag "a", %a : tensor<4x8xf32>
    %p = tv.linear %a, %w2 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    %y = tv.all_reduce sum %p {axes = ["tp"]} : tensor<4x8xf32> -> tensor<4x8xf32>
    tv.output "y", %y : tensor<4x8xf32>
  }
}
// x: rows by dp, replicated over tp; written as two maps (tp = 0, tp = 1),
// another tensor's map between them, whose statements merge into one
// lineage per box, at the first map's place.
tv.lineage_map "x" blocks affine_map<(d0, d1) -> (d0, 0)> shape [4, 8] = "x" on @mesh where {tp = 0 : i64}
tv.lineage_map "w1" blocks affine_map<(d0, d1) -> (d1, 0)> shape [8, 8] = "w1" on @mesh where {}
tv.lineage_map "x" blocks affine_map<(d0, d1) -> (d0, 0)> shape [4, 8] = "x" on @mesh where {tp = 1 : i64}
tv.lineage_map "w2" blocks affine_map<(d0, d1) -> (0, d1)> shape [8, 8] = "w2" on @mesh where {}
tv.lineage_map "a" blocks affine_map<(d0, d1) -> (d0, d1)> shape [4, 8] = "a" on @mesh where {}
// Maps and plain statements mix.
tv.lineage #tv.lineage<"y"[0:4, 0:8] = ["y":0] | ["y":1]>
tv.lineage #tv.lineage<"y"[4:8, 0:8] = ["y":2] | ["y":3]>

// PRINT: tv.lineage_map "x" blocks #map shape [4, 8] = "x" on @mesh where {tp = 0 : i64}
// PRINT: tv.lineage_map "w1" blocks #map1 shape [8, 8] = "w1" on @mesh where {}
// PRINT: tv.lineage_map "x" blocks #map shape [4, 8] = "x" on @mesh where {tp = 1 : i64}
// PRINT: tv.lineage <"y"[0:4, 0:8] = ["y":0] | ["y":1]>

// CHECK-NOT: tv.lineage_map
// CHECK-LABEL: tv.stage @stage0_a
// Maps expand to replicas: a group of one reference per rank, stored as a
// list of ranks.
// CHECK-SAME: assumes [#tv.lineage<"x"[0:4, 0:8] = "x":[0, 1]>, #tv.lineage<"x"[4:8, 0:8] = "x":[2, 3]>, #tv.lineage<"w1"[0:8, 0:8] = "w1":[0, 2]>, #tv.lineage<"w1"[8:16, 0:8] = "w1":[1, 3]>]
// CHECK-SAME: guarantees [#tv.lineage<"a"[0:4, 0:8] = "a":[0]>, #tv.lineage<"a"[0:4, 8:16] = "a":[1]>, #tv.lineage<"a"[4:8, 0:8] = "a":[2]>, #tv.lineage<"a"[4:8, 8:16] = "a":[3]>]
// CHECK-LABEL: tv.stage @stage1_y
// CHECK-SAME: #tv.lineage<"w2"[0:8, 0:8] = "w2":[0, 2]>, #tv.lineage<"w2"[0:8, 8:16] = "w2":[1, 3]>
// CHECK-SAME: guarantees [#tv.lineage<"y"[0:4, 0:8] = ["y":0] | ["y":1]>, #tv.lineage<"y"[4:8, 0:8] = ["y":2] | ["y":3]>]

// MAPS-DAG: #[[$X:map[0-9]*]] = affine_map<(d0, d1) -> (d0, 0)>
// MAPS-DAG: #[[$W1:map[0-9]*]] = affine_map<(d0, d1) -> (d1, 0)>
// MAPS-DAG: #[[$A:map[0-9]*]] = affine_map<(d0, d1) -> (d0, d1)>
// MAPS-DAG: #[[$W2:map[0-9]*]] = affine_map<(d0, d1) -> (0, d1)>
// MAPS-LABEL: tv.stage @stage0_a
// MAPS-SAME: assumes [#tv.lineage_map<"x" blocks #[[$X]] shape [4, 8] = "x" on @mesh where {tp = 0 : i64}>, #tv.lineage_map<"x" blocks #[[$X]] shape [4, 8] = "x" on @mesh where {tp = 1 : i64}>, #tv.lineage_map<"w1" blocks #[[$W1]] shape [8, 8] = "w1" on @mesh where {}>]
// MAPS-SAME: guarantees [#tv.lineage_map<"a" blocks #[[$A]] shape [4, 8] = "a" on @mesh where {}>]
// MAPS-LABEL: tv.stage @stage1_y
// MAPS-SAME: assumes [#tv.lineage_map<"w2" blocks #[[$W2]] shape [8, 8] = "w2" on @mesh where {}>, #tv.lineage_map<"a" blocks #[[$A]] shape [4, 8] = "a" on @mesh where {}>]
// MAPS-SAME: guarantees [#tv.lineage<"y"[0:4, 0:8] = ["y":0] | ["y":1]>, #tv.lineage<"y"[4:8, 0:8] = ["y":2] | ["y":3]>]
// The whole program a counterexample is replayed on keeps its statements.
// MAPS: tv.stage @whole_program assumes [#tv.lineage<"x"[0:4, 0:8] = "x":[0, 1]>

// FOLD-LABEL: tv.stage @stage0_a
// FOLD-SAME: assumes [#tv.lineage<"x"[0:4, 0:8] = "x":[0]>, #tv.lineage<"w1"[0:8, 0:8] = "w1":[0]>] guarantees [#tv.lineage<"a"[0:4, 0:8] = "a":[0]>]
// FOLD: tv.rank_program [0] {
// FOLD-LABEL: tv.stage @stage1_y
// FOLD-SAME: assumes [#tv.lineage_map<"w2" blocks #{{.*}} shape [8, 8] = "w2" on @mesh where {dp = 0 : i64, tp = 0 : i64}>, #tv.lineage_map<"a" blocks #{{.*}} shape [4, 8] = "a" on @mesh where {dp = 0 : i64, tp = 0 : i64}>]
// FOLD-SAME: guarantees [#tv.lineage<"y"[0:4, 0:8] = ["y":0]>]
// FOLD: tv.rank_program [0] {

// JSON: tv.lineage <"x"[0:4, 0:8] = ["x":0] | ["x":1]>
// JSON-NEXT: tv.lineage <"x"[4:8, 0:8] = ["x":2] | ["x":3]>
// JSON-NEXT: tv.lineage <"w1"[0:8, 0:8] = ["w1":0] | ["w1":2]>

// PROVEN: tv-verify: proven (2 stages

// SWAPPED: error: stage @stage0_a: counterexample: lineage 'a'

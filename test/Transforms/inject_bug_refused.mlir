// Bug classes that cannot be injected into a plan are refused with a
// diagnostic and a non-zero exit.
// RUN: tv-opt %s --tv-inject-bug="bug=wrong-pp-peer" --split-input-file --verify-diagnostics
// RUN: not tv-opt %S/Inputs/experts_tp_only.mlir --tv-inject-bug="bug=ep-double-reduce" -o /dev/null 2>&1 | FileCheck %s --check-prefix=EP
// EP: error: ep-double-reduce needs a mesh with a data-parallel axis

// A two-rank pipeline has no third rank to name as the wrong peer.
module {
  tv.mesh @m axes ["pp"] sizes [2]
  tv.spec @s {
    %x = tv.input "x" : tensor<2xf32>
    %y = tv.copy %x : tensor<2xf32>
    tv.output "y", %y : tensor<2xf32>
  }
  tv.plan @p mesh @m micro_batches 1 {
    tv.rank_program [0] {
      %x = tv.input "x" : tensor<2xf32>
      tv.send %x {peer_axis = "pp", peer_offset = 1 : i64} : tensor<2xf32>
    }
    tv.rank_program [1] {
      // expected-error @+1 {{wrong-pp-peer needs a third rank on the mesh}}
      %y = tv.recv {peer_axis = "pp", peer_offset = -1 : i64} : tensor<2xf32>
      tv.output "y", %y : tensor<2xf32>
    }
  }
  tv.lineage #tv.lineage<"x"[0:2] = ["x":0]>
  tv.lineage #tv.lineage<"y"[0:2] = ["y":1]>
}

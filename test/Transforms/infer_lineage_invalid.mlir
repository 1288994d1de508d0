// RUN: tv-opt %s --tv-infer-lineage -split-input-file -verify-diagnostics

// expected-error @+1 {{module needs a tv.spec and a tv.plan}}
module {
  tv.mesh @mesh axes ["tp"] sizes [2]
}

// -----

// A plan whose input no lineage covers cannot run: nothing is inferred,
// and the verification after it says why.
// expected-warning @+1 {{no lineage inferred: exact run failed: plan input 'w' on rank 0 is not covered by an assumed lineage}}
module {
  tv.mesh @mesh axes ["tp"] sizes [2]
  tv.spec @spec {
    %x = tv.input "x" : tensor<4x8xf32>
    %y = tv.gelu %x : tensor<4x8xf32>
    tv.output "y", %y : tensor<4x8xf32>
  }
  tv.plan @plan mesh @mesh micro_batches 1 {
    tv.rank_program [0, 1] {
      %x = tv.input "x" : tensor<4x8xf32>
      %w = tv.input "w" : tensor<4x8xf32>
      %s = tv.add %x, %w : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
      %y = tv.gelu %s : tensor<4x8xf32>
      tv.output "y", %y : tensor<4x8xf32>
    }
  }
  tv.lineage #tv.lineage<"x"[0:4, 0:8] = ["x":0] | ["x":1]>
  tv.lineage #tv.lineage<"y"[0:4, 0:8] = ["y":0] | ["y":1]>
}

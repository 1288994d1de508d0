// RUN: tv-opt %s --tv-verify --split-input-file --verify-diagnostics

// expected-error @+1 {{no tv.stage to verify; run --tv-stage-partition first (or --tv-verify-pipeline)}}
module {
  tv.mesh @mesh axes ["tp"] sizes [1]
}

// -----

// A stage whose plan reads a tensor no assumption covers.
module {
  tv.mesh @mesh axes ["tp"] sizes [1]
  // expected-error @+1 {{stage @s: plan input 'z' on rank 0 is not covered by an assumed lineage}}
  tv.stage @s assumes [#tv.lineage<"x"[0:2] = ["x":0]>] guarantees [#tv.lineage<"y"[0:2] = ["y":0]>] {
    tv.spec @spec {
      %x = tv.input "x" : tensor<2xf32>
      tv.output "y", %x : tensor<2xf32>
    }
    tv.plan @plan mesh @mesh micro_batches 1 {
      tv.rank_program [0] {
        %z = tv.input "z" : tensor<2xf32>
        tv.output "y", %z : tensor<2xf32>
      }
    }
  }
}

// -----

// An assumed lineage whose box lies outside the stage's spec tensor (a stage
// edited by hand, or a fold that kept a lineage it should have dropped).
module {
  tv.mesh @mesh axes ["tp"] sizes [1]
  // expected-error @+1 {{assumed lineage of 'x' lies outside the stage's spec tensor}}
  tv.stage @s assumes [#tv.lineage<"x"[2:4] = ["x":0]>] guarantees [#tv.lineage<"y"[0:2] = ["y":0]>] {
    tv.spec @spec {
      %x = tv.input "x" : tensor<2xf32>
      tv.output "y", %x : tensor<2xf32>
    }
    tv.plan @plan mesh @mesh micro_batches 1 {
      tv.rank_program [0] {
        %x = tv.input "x" : tensor<2xf32>
        tv.output "y", %x : tensor<2xf32>
      }
    }
  }
}

// -----

// One plan tensor assumed equal to two spec slices of different sizes.
module {
  tv.mesh @mesh axes ["dp"] sizes [1]
  // expected-error @+1 {{stage @s: plan tensor 'p' on rank 0 is assumed equal to slices of different sizes}}
  tv.stage @s assumes [#tv.lineage<"a"[0:2, 0:2] = ["p":0]>, #tv.lineage<"b"[0:1, 0:2] = ["p":0]>] guarantees [#tv.lineage<"y"[0:2, 0:2] = ["y":0]>] {
    tv.spec @spec {
      %a = tv.input "a" : tensor<2x2xf32>
      %b = tv.input "b" : tensor<2x2xf32>
      %y = tv.exp %a : tensor<2x2xf32>
      tv.output "y", %y : tensor<2x2xf32>
    }
    tv.plan @plan mesh @mesh micro_batches 1 {
      tv.rank_program [0] {
        %p = tv.input "p" : tensor<2x2xf32>
        %y = tv.exp %p : tensor<2x2xf32>
        tv.output "y", %y : tensor<2x2xf32>
      }
    }
  }
}

// RUN: tv-opt %s --split-input-file --tv-fold-symmetry="axes=dp,foo" --verify-diagnostics -o /dev/null

tv.mesh @mesh axes ["dp"] sizes [2]
// expected-error @+1 {{'tv.plan' op can be folded only inside a tv.stage}}
tv.plan @plan mesh @mesh micro_batches 1 folded ["dp"] {
  tv.rank_program [0, 1] {
  }
}

// -----

tv.mesh @mesh axes ["dp"] sizes [2]
// expected-error @+1 {{'tv.plan' op can be folded only inside a tv.stage}}
tv.plan @plan mesh @mesh micro_batches 2 folded_micro_batches {
  tv.rank_program [0, 1] {
  }
}

// -----

tv.mesh @mesh axes ["dp"] sizes [2]
tv.stage @s assumes [#tv.lineage<"x"[0:1] = ["x":0]>] guarantees [#tv.lineage<"y"[0:1] = ["y":0]>] {
  tv.spec @spec {
    %0 = tv.input "x" : tensor<2xf32>
    tv.output "y", %0 : tensor<2xf32>
  }
  // expected-error @+1 {{'tv.plan' op folded axis 'tp' is not an axis of mesh @mesh}}
  tv.plan @plan mesh @mesh micro_batches 1 folded ["tp"] {
    tv.rank_program [0] {
      %0 = tv.input "x" : tensor<1xf32>
      tv.output "y", %0 : tensor<1xf32>
    }
  }
}

// -----

tv.mesh @mesh axes ["dp"] sizes [2]
tv.stage @s assumes [#tv.lineage<"x"[0:1] = ["x":0]>] guarantees [#tv.lineage<"y"[0:1] = ["y":0]>] {
  tv.spec @spec {
    %0 = tv.input "x" : tensor<2xf32>
    tv.output "y", %0 : tensor<2xf32>
  }
  // expected-error @+1 {{'tv.plan' op folded axis 'dp' is repeated}}
  tv.plan @plan mesh @mesh micro_batches 1 folded ["dp", "dp"] {
    tv.rank_program [0] {
      %0 = tv.input "x" : tensor<1xf32>
      tv.output "y", %0 : tensor<1xf32>
    }
  }
}

// -----

// The pass's axes must be axes of the stage's mesh.
tv.mesh @mesh axes ["dp"] sizes [2]
// expected-error @+1 {{cannot fold along 'foo': not an axis of mesh @mesh}}
tv.stage @s assumes [#tv.lineage<"x"[0:1] = ["x":0]>, #tv.lineage<"x"[1:2] = ["x":1]>] guarantees [#tv.lineage<"y"[0:1] = ["y":0]>, #tv.lineage<"y"[1:2] = ["y":1]>] {
  tv.spec @spec {
    %0 = tv.input "x" : tensor<2xf32>
    %1 = tv.neg %0 : tensor<2xf32>
    tv.output "y", %1 : tensor<2xf32>
  }
  tv.plan @plan mesh @mesh micro_batches 1 {
    tv.rank_program [0, 1] {
      %0 = tv.input "x" : tensor<1xf32>
      %1 = tv.neg %0 : tensor<1xf32>
      tv.output "y", %1 : tensor<1xf32>
    }
  }
}

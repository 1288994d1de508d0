// RUN: tv-opt %s --split-input-file --verify-diagnostics
// Rank programs in phases (decision 124): what the plan verifier refuses.

tv.mesh @mesh axes ["dp"] sizes [2]
tv.plan @plan mesh @mesh micro_batches 1 {
  // expected-note @+1 {{first program of rank 1}}
  tv.rank_program [0, 1] phase 1 {
  }
  // expected-error @+1 {{'tv.rank_program' op lists rank 1 that another rank program already runs in phase 1}}
  tv.rank_program [1] phase 1 {
  }
  tv.rank_program [0, 1] {
  }
}

// -----

tv.mesh @mesh axes ["dp"] sizes [2]
tv.plan @plan mesh @mesh micro_batches 1 {
  tv.rank_program [0, 1] {
    %x = tv.input "x" : tensor<4xf32>
    // expected-note @+1 {{defined here}}
    tv.output "y", %x : tensor<4xf32>
  }
  tv.rank_program [0, 1] phase 1 {
    %x = tv.input "x" : tensor<4xf32>
    // expected-error @+1 {{'tv.output' op defines tensor name 'y' on rank 0 in phase 1, which an earlier phase of the rank already defines}}
    tv.output "y", %x : tensor<4xf32>
  }
}

// -----

tv.mesh @mesh axes ["dp"] sizes [2]
tv.plan @plan mesh @mesh micro_batches 1 {
  tv.rank_program [0, 1] {
    %x = tv.input "x" : tensor<4xf32>
    // expected-note @+1 {{defined here}}
    tv.tag "h", %x : tensor<4xf32>
  }
  tv.rank_program [1] phase 1 {
    // expected-error @+1 {{'tv.input' op reads tensor 'h' of an earlier phase on rank 1 as 'tensor<2xf32>', but it is defined as 'tensor<4xf32>'}}
    %h = tv.input "h" : tensor<2xf32>
  }
}

// -----

tv.mesh @mesh axes ["dp"] sizes [2]
tv.plan @plan mesh @mesh micro_batches 1 {
  // expected-error @+1 {{'tv.rank_program' op has phase -1; phases are numbered from 0}}
  tv.rank_program [0, 1] phase -1 {
  }
}

// -----

tv.mesh @mesh axes ["dp"] sizes [2]
tv.plan @plan mesh @mesh micro_batches 1 {
  tv.rank_program [0, 1] {
    %x = tv.input "x" : tensor<4xf32>
    // expected-note @+1 {{used here}}
    tv.accumulate "dw", %x : tensor<4xf32>
  }
  tv.rank_program [0] phase 1 {
    // expected-error @+1 {{'tv.buffer_read' op uses buffer 'dw' on rank 0 in phase 1, which an earlier phase of the rank uses; a buffer lives in one phase (pass its value with tv.output and tv.input)}}
    %w = tv.buffer_read "dw" : tensor<4xf32>
  }
}

// -----

tv.mesh @mesh axes ["dp"] sizes [2]
tv.plan @plan mesh @mesh micro_batches 1 {
  tv.rank_program [0, 1] {
    %g = tv.input "g" : tensor<4xf32>
    // expected-note @+1 {{started here}}
    %h = tv.reduce_scatter %g dim 0 {async, axes = ["dp"]} : tensor<4xf32> -> tensor<2xf32>
    tv.output "h", %h : tensor<2xf32>
  }
  tv.rank_program [0, 1] phase 1 {
    // expected-error @+1 {{'tv.input' op reads tensor 'h' on rank 0 in phase 1, the in-flight result of an asynchronous 'tv.reduce_scatter' of an earlier phase; a start and its wait are in one phase}}
    %h = tv.input "h" : tensor<2xf32>
    %w = tv.add %h, %h : tensor<2xf32>, tensor<2xf32> -> tensor<2xf32>
  }
}

// -----

// A stage's plan is joined: no phases inside a tv.stage.
tv.mesh @mesh axes ["dp"] sizes [2]
tv.stage @st assumes [] guarantees [#tv.lineage<"y"[0:4] = ["y":0]>] {
  tv.spec @spec {
    %x = tv.input "x" : tensor<4xf32>
    tv.output "y", %x : tensor<4xf32>
  }
  // expected-error @+1 {{'tv.plan' op of a stage has rank programs in phases; a stage's plan is joined}}
  tv.plan @plan mesh @mesh micro_batches 1 {
    tv.rank_program [0] {
      %x = tv.input "x" : tensor<4xf32>
      tv.output "y", %x : tensor<4xf32>
    }
    tv.rank_program [0] phase 1 {
    }
  }
}

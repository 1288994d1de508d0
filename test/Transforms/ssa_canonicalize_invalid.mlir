// RUN: tv-opt %s --tv-ssa-canonicalize --split-input-file --verify-diagnostics

tv.mesh @m axes ["tp"] sizes [1]
tv.plan @p mesh @m micro_batches 1 {
  tv.rank_program [0] {
    // expected-error @+1 {{reads buffer 'dw' before anything is accumulated into it}}
    %dw = tv.buffer_read "dw" : tensor<4xf32>
  }
}

// -----

tv.mesh @m axes ["tp"] sizes [1]
tv.plan @p mesh @m micro_batches 1 {
  tv.rank_program [0] {
    %a = tv.input "a" : tensor<4xf32>
    %b = tv.input "b" : tensor<2xf32>
    tv.accumulate "dw", %a : tensor<4xf32>
    // expected-error @+1 {{accumulates 'tensor<2xf32>' into buffer 'dw' holding 'tensor<4xf32>'}}
    tv.accumulate "dw", %b : tensor<2xf32>
  }
}

// -----

tv.mesh @m axes ["tp"] sizes [1]
tv.plan @p mesh @m micro_batches 1 {
  tv.rank_program [0] {
    %a = tv.input "a" : tensor<4xf32>
    tv.accumulate "dw", %a : tensor<4xf32>
    // expected-error @+1 {{reads buffer 'dw' as 'tensor<8xf32>' but it holds 'tensor<4xf32>'}}
    %dw = tv.buffer_read "dw" : tensor<8xf32>
  }
}

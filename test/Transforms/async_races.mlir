// Races of asynchronous collectives and receives (issue 36, decision 111):
// each is an error naming the racy op, the launch and the wait, and the
// plan is wrong (exit 1), never proven.
// RUN: tv-opt %s -split-input-file --tv-ssa-canonicalize --verify-diagnostics -o /dev/null

// A gradient read before its all-reduce is waited (grad-read-before-wait).
tv.mesh @mesh axes ["dp"] sizes [2]
tv.plan @plan mesh @mesh micro_batches 1 {
  tv.rank_program [0, 1] {
    %g = tv.input "g" : tensor<4xf32>
    // expected-note @below {{the asynchronous 'tv.all_reduce'}}
    %r = tv.all_reduce sum %g {async, axes = ["dp"]} : tensor<4xf32> -> tensor<4xf32>
    // expected-error @below {{race: 'tv.scale' at}}
    %s = tv.scale %r, 5.0e-01 : tensor<4xf32>
    tv.output "s", %s : tensor<4xf32>
    // expected-note @below {{the wait, after the read}}
    %y = tv.wait %r : tensor<4xf32>
    tv.output "y", %y : tensor<4xf32>
  }
}

// -----

// A parameter all-gather never waited (an orphaned handle).
tv.mesh @mesh axes ["dp"] sizes [2]
tv.plan @plan mesh @mesh micro_batches 1 {
  tv.rank_program [0, 1] {
    %w = tv.input "w" : tensor<4xf32>
    // expected-error @below {{race: the asynchronous 'tv.all_gather' at}}
    %r = tv.all_gather %w dim 0 {async, axes = ["dp"]} : tensor<4xf32> -> tensor<8xf32>
    tv.output "w_full", %w : tensor<4xf32>
  }
}

// -----

// One result waited twice.
tv.mesh @mesh axes ["dp"] sizes [2]
tv.plan @plan mesh @mesh micro_batches 1 {
  tv.rank_program [0, 1] {
    %g = tv.input "g" : tensor<4xf32>
    // expected-note @below {{the asynchronous 'tv.reduce_scatter'}}
    %r = tv.reduce_scatter %g dim 0 {async, axes = ["dp"]} : tensor<4xf32> -> tensor<2xf32>
    %y = tv.wait %r : tensor<2xf32>
    // expected-error @below {{race: waits again on 'tv.reduce_scatter' at}}
    %z = tv.wait %r : tensor<2xf32>
    tv.output "y", %y : tensor<2xf32>
    tv.output "z", %z : tensor<2xf32>
  }
}

// -----

// A gradient bucket accumulated into while its reduction is in flight
// (bucket-written-in-flight).
tv.mesh @mesh axes ["dp"] sizes [2]
tv.plan @plan mesh @mesh micro_batches 1 {
  tv.rank_program [0, 1] {
    %g0 = tv.input "g0" : tensor<4xf32>
    %g1 = tv.input "g1" : tensor<4xf32>
    tv.accumulate "bucket", %g0 : tensor<4xf32>
    %b = tv.buffer_read "bucket" : tensor<4xf32>
    // expected-note @below {{the asynchronous 'tv.all_reduce'}}
    %r = tv.all_reduce sum %b {async, axes = ["dp"]} : tensor<4xf32> -> tensor<4xf32>
    // expected-error @below {{race: accumulates into buffer 'bucket' while 'tv.all_reduce' at}}
    tv.accumulate "bucket", %g1 : tensor<4xf32>
    %y = tv.wait %r : tensor<4xf32>
    tv.output "y", %y : tensor<4xf32>
  }
}

// -----

// An activation received asynchronously and read before its wait.
tv.mesh @mesh axes ["pp"] sizes [2]
tv.plan @plan mesh @mesh micro_batches 1 {
  tv.rank_program [0] {
    %x = tv.input "x" : tensor<4xf32>
    tv.send %x {peer_axis = "pp", peer_offset = 1 : i64} : tensor<4xf32>
  }
  tv.rank_program [1] {
    // expected-note @below {{the asynchronous 'tv.recv'}}
    %r = tv.recv {async, peer_axis = "pp", peer_offset = -1 : i64} : tensor<4xf32>
    // expected-error @below {{race: 'tv.exp' at}}
    %e = tv.exp %r : tensor<4xf32>
    // expected-note @below {{the wait, after the read}}
    %y = tv.wait %r : tensor<4xf32>
    tv.output "e", %e : tensor<4xf32>
  }
}

// -----

// A wait on a value no asynchronous op produces: malformed.
tv.mesh @mesh axes ["dp"] sizes [2]
tv.plan @plan mesh @mesh micro_batches 1 {
  tv.rank_program [0, 1] {
    %g = tv.input "g" : tensor<4xf32>
    // expected-error @below {{'tv.wait' op waits on a value that no asynchronous collective or receive (`async`) produces}}
    %y = tv.wait %g : tensor<4xf32>
    tv.output "y", %y : tensor<4xf32>
  }
}

// -----

// `async` on an op that is not communication.
tv.mesh @mesh axes ["dp"] sizes [2]
tv.plan @plan mesh @mesh micro_batches 1 {
  tv.rank_program [0, 1] {
    %g = tv.input "g" : tensor<4xf32>
    // expected-error @below {{`async` marks only a collective or a tv.recv, not 'tv.exp' at}}
    %e = tv.exp %g {async} : tensor<4xf32>
    tv.output "e", %e : tensor<4xf32>
  }
}

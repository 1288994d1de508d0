// RUN: tv-opt %s --tv-inject-bug="bug=no-such-bug" --split-input-file --verify-diagnostics

// expected-error @+1 {{unknown bug class 'no-such-bug'}}
module {
  tv.mesh @m axes ["tp"] sizes [1]
  tv.spec @s {
  }
  tv.plan @p mesh @m micro_batches 1 {
    tv.rank_program [0] {
    }
  }
}

// Stage verifier rules that need a stage holding a tv.spec or tv.plan.
//
// Known bug: tv.spec and tv.plan carry the Symbol trait but tv.stage is not a
// SymbolTable, so these cases fail first with "'tv.spec' op symbol's parent
// must have the SymbolTable trait" and the rules below are unreachable.
// Remove the XFAIL line once a well-formed stage verifies. (Reachable stage
// rules are tested in structure_invalid.mlir.)
//
// RUN: tv-opt %s --split-input-file --verify-diagnostics

tv.mesh @m axes ["tp"] sizes [1]
// expected-error @+1 {{'tv.stage' op guarantees nothing}}
tv.stage @st assumes [#tv.lineage<"x"[0:4] = ["x":0]>] guarantees [] {
  tv.spec @s {
  }
  tv.plan @p mesh @m micro_batches 1 {
    tv.rank_program [0] {
    }
  }
}

// -----

// expected-error @+1 {{'tv.stage' op must hold exactly one tv.spec and one tv.plan, found 1 and 0}}
tv.stage @st assumes [] guarantees [#tv.lineage<"y"[0:4] = ["y":0]>] {
  tv.spec @s {
  }
}

// -----

tv.mesh @m axes ["tp"] sizes [1]
// expected-error @+1 {{'tv.stage' op must hold exactly one tv.spec and one tv.plan, found 2 and 1}}
tv.stage @st assumes [] guarantees [#tv.lineage<"y"[0:4] = ["y":0]>] {
  tv.spec @s {
  }
  tv.spec @s2 {
  }
  tv.plan @p mesh @m micro_batches 1 {
    tv.rank_program [0] {
    }
  }
}

// -----

tv.mesh @m axes ["tp"] sizes [1]
// expected-error @+1 {{'tv.stage' op must hold exactly one tv.spec and one tv.plan, found 1 and 2}}
tv.stage @st assumes [] guarantees [#tv.lineage<"y"[0:4] = ["y":0]>] {
  tv.spec @s {
  }
  tv.plan @p mesh @m micro_batches 1 {
    tv.rank_program [0] {
    }
  }
  tv.plan @p2 mesh @m micro_batches 1 {
    tv.rank_program [0] {
    }
  }
}

// -----

// Inside a stage the Symbol trait should not pre-empt the stage's own rule.
tv.stage @st assumes [] guarantees [#tv.lineage<"y"[0:4] = ["y":0]>] {
  // expected-error @+1 {{'tv.mesh' op symbol's parent must have the SymbolTable trait}}
  tv.mesh @m axes ["tp"] sizes [1]
}

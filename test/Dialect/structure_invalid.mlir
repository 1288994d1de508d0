// RUN: tv-opt %s --split-input-file --verify-diagnostics

//===----------------------------------------------------------------------===//
// tv.mesh
//===----------------------------------------------------------------------===//

// expected-error @+1 {{'tv.mesh' op has 2 axes but 1 sizes}}
tv.mesh @m axes ["dp", "tp"] sizes [2]

// -----

// expected-error @+1 {{'tv.mesh' op has 1 axes but 2 sizes}}
tv.mesh @m axes ["tp"] sizes [2, 2]

// -----

// expected-error @+1 {{'tv.mesh' op needs at least one axis}}
tv.mesh @m axes [] sizes []

// -----

// expected-error @+1 {{'tv.mesh' op axis names must not be empty}}
tv.mesh @m axes ["tp", ""] sizes [2, 2]

// -----

// expected-error @+1 {{'tv.mesh' op axis 'tp' is declared twice}}
tv.mesh @m axes ["tp", "dp", "tp"] sizes [2, 2, 2]

// -----

// expected-error @+1 {{'tv.mesh' op axis 'pp' has size 0, expected at least 1}}
tv.mesh @m axes ["tp", "pp"] sizes [2, 0]

// -----

// expected-error @+1 {{'tv.mesh' op axis 'tp' has size -3, expected at least 1}}
tv.mesh @m axes ["tp"] sizes [-3]

// -----

// ODS: axes must be strings.
// expected-error @+1 {{attribute 'axes' failed to satisfy constraint: string array attribute}}
tv.mesh @m axes [1, 2] sizes [2, 2]

//===----------------------------------------------------------------------===//
// tv.spec
//===----------------------------------------------------------------------===//

// -----

tv.spec @s {
  %0 = tv.input "x" : tensor<4xf32>
  // expected-error @+1 {{'tv.all_reduce' op is a communication op; a spec runs on one device}}
  %1 = tv.all_reduce sum %0 {axes = ["tp"]} : tensor<4xf32> -> tensor<4xf32>
}

// -----

tv.spec @s {
  %0 = tv.input "x" : tensor<4xf32>
  // expected-error @+1 {{'tv.all_gather' op is a communication op; a spec runs on one device}}
  %1 = tv.all_gather %0 dim 0 {rank_groups = [array<i64: 0, 1>]} : tensor<4xf32> -> tensor<8xf32>
}

// -----

tv.spec @s {
  %0 = tv.input "x" : tensor<4xf32>
  // expected-error @+1 {{'tv.reduce_scatter' op is a communication op; a spec runs on one device}}
  %1 = tv.reduce_scatter %0 dim 0 {axes = ["tp"]} : tensor<4xf32> -> tensor<2xf32>
}

// -----

tv.spec @s {
  %0 = tv.input "x" : tensor<4x4xf32>
  // expected-error @+1 {{'tv.all_to_all' op is a communication op; a spec runs on one device}}
  %1 = tv.all_to_all %0 split 0 concat 1 {axes = ["tp"]} : tensor<4x4xf32> -> tensor<2x8xf32>
}

// -----

tv.spec @s {
  %0 = tv.input "x" : tensor<4xf32>
  // expected-error @+1 {{'tv.bcast' op is a communication op; a spec runs on one device}}
  %1 = tv.bcast %0 root 0 {axes = ["tp"]} : tensor<4xf32> -> tensor<4xf32>
}

// -----

tv.spec @s {
  %0 = tv.input "x" : tensor<4xf32>
  // expected-error @+1 {{'tv.reduce' op is a communication op; a spec runs on one device}}
  %1 = tv.reduce %0 root 0 {axes = ["tp"]} : tensor<4xf32> -> tensor<4xf32>
}

// -----

tv.spec @s {
  %0 = tv.input "x" : tensor<4xf32>
  // expected-error @+1 {{'tv.chunk' op is a communication op; a spec runs on one device}}
  %1 = tv.chunk %0 dim 0 {axes = ["tp"]} : tensor<4xf32> -> tensor<2xf32>
}

// -----

tv.spec @s {
  %0 = tv.input "x" : tensor<4xf32>
  // expected-error @+1 {{'tv.send' op is a communication op; a spec runs on one device}}
  tv.send %0 {peer = 1} : tensor<4xf32>
}

// -----

tv.spec @s {
  // expected-error @+1 {{'tv.recv' op is a communication op; a spec runs on one device}}
  %0 = tv.recv {peer_axis = "pp", peer_offset = -1} : tensor<4xf32>
}

// -----

tv.spec @s {
  // expected-error @+1 {{'tv.lineage' op cannot appear inside a spec}}
  tv.lineage #tv.lineage<"y"[0:4] = ["y":0]>
}

// -----

// tv.mesh, tv.spec, tv.plan and tv.stage are symbols: inside a spec the
// Symbol trait rejects them before the spec's own rule does.
tv.spec @s {
  // expected-error @+1 {{'tv.mesh' op symbol's parent must have the SymbolTable trait}}
  tv.mesh @m axes ["tp"] sizes [2]
}

// -----

// ODS: a rank program lives only in a plan.
tv.spec @s {
  // expected-error @+1 {{'tv.rank_program' op expects parent op 'tv.plan'}}
  tv.rank_program [0] {
  }
}

// -----

tv.spec @s {
  %0 = tv.input "x" : tensor<4xf32>
  // expected-error @+1 {{'tv.input' op defines tensor name 'x' that is already defined in this program}}
  %1 = tv.input "x" : tensor<8xf32>
}

// -----

tv.spec @s {
  %0 = tv.input "x" : tensor<4xf32>
  // expected-error @+1 {{'tv.tag' op defines tensor name 'x' that is already defined in this program}}
  tv.tag "x", %0 : tensor<4xf32>
}

// -----

tv.spec @s {
  %0 = tv.input "x" : tensor<4xf32>
  tv.tag "t", %0 : tensor<4xf32>
  // expected-error @+1 {{'tv.output' op defines tensor name 't' that is already defined in this program}}
  tv.output "t", %0 : tensor<4xf32>
}

// -----

tv.spec @s {
  %0 = tv.input "x" : tensor<4xf32>
  tv.output "y", %0 : tensor<4xf32>
  // expected-error @+1 {{'tv.output' op defines tensor name 'y' that is already defined in this program}}
  tv.output "y", %0 : tensor<4xf32>
}

//===----------------------------------------------------------------------===//
// tv.plan
//===----------------------------------------------------------------------===//

// -----

// expected-error @+1 {{'tv.plan' op refers to unknown mesh @nope}}
tv.plan @p mesh @nope micro_batches 1 {
}

// -----

// The mesh symbol resolves, but not to a tv.mesh.
tv.spec @s {
}
// expected-error @+1 {{'tv.plan' op refers to unknown mesh @s}}
tv.plan @p mesh @s micro_batches 1 {
}

// -----

tv.mesh @m axes ["tp"] sizes [1]
// expected-error @+1 {{'tv.plan' op needs at least one micro-batch, got 0}}
tv.plan @p mesh @m micro_batches 0 {
  tv.rank_program [0] {
  }
}

// -----

tv.mesh @m axes ["tp"] sizes [1]
tv.plan @p mesh @m micro_batches 1 {
  // expected-error @+1 {{'tv.input' op expects parent op to be one of 'tv.spec, tv.rank_program'}}
  %0 = tv.input "x" : tensor<4xf32>
  tv.rank_program [0] {
  }
}

// -----

tv.mesh @m axes ["tp"] sizes [1]
tv.plan @p mesh @m micro_batches 1 {
  tv.rank_program [0] {
  }
  // expected-error @+1 {{'tv.lineage' op cannot appear directly in a plan; wrap it in tv.rank_program}}
  tv.lineage #tv.lineage<"y"[0:4] = ["y":0]>
}

// -----

tv.mesh @m axes ["tp"] sizes [2]
tv.plan @p mesh @m micro_batches 1 {
  // expected-error @+1 {{'tv.rank_program' op lists rank 2 but mesh @m has 2 ranks}}
  tv.rank_program [0, 1, 2] {
  }
}

// -----

tv.mesh @m axes ["tp"] sizes [2]
tv.plan @p mesh @m micro_batches 1 {
  // expected-error @+1 {{'tv.rank_program' op lists rank -1 but mesh @m has 2 ranks}}
  tv.rank_program [-1, 0, 1] {
  }
}

// -----

tv.mesh @m axes ["dp", "tp"] sizes [2, 2]
tv.plan @p mesh @m micro_batches 1 {
  // expected-note @+1 {{first program of rank 1}}
  tv.rank_program [0, 1] {
  }
  // expected-error @+1 {{'tv.rank_program' op lists rank 1 that another rank program already runs}}
  tv.rank_program [1, 2, 3] {
  }
}

// -----

tv.mesh @m axes ["dp", "tp"] sizes [2, 2]
// expected-error @+1 {{'tv.plan' op gives no program to rank 2}}
tv.plan @p mesh @m micro_batches 1 {
  tv.rank_program [0, 1] {
  }
  tv.rank_program [3] {
  }
}

// -----

tv.mesh @m axes ["tp"] sizes [2]
// expected-error @+1 {{'tv.plan' op gives no program to rank 0}}
tv.plan @p mesh @m micro_batches 1 {
}

//===----------------------------------------------------------------------===//
// tv.rank_program
//===----------------------------------------------------------------------===//

// -----

tv.mesh @m axes ["tp"] sizes [1]
tv.plan @p mesh @m micro_batches 1 {
  // expected-error @+1 {{'tv.rank_program' op must list at least one rank}}
  tv.rank_program [] {
  }
}

// -----

tv.mesh @m axes ["tp"] sizes [2]
tv.plan @p mesh @m micro_batches 1 {
  // expected-error @+1 {{'tv.rank_program' op lists rank 1 twice}}
  tv.rank_program [1, 0, 1] {
  }
}

// -----

tv.mesh @m axes ["tp"] sizes [1]
tv.plan @p mesh @m micro_batches 1 {
  tv.rank_program [0] {
    // expected-error @+1 {{'tv.lineage' op cannot appear inside a rank program}}
    tv.lineage #tv.lineage<"y"[0:4] = ["y":0]>
  }
}

// -----

tv.mesh @m axes ["tp"] sizes [1]
tv.plan @p mesh @m micro_batches 1 {
  tv.rank_program [0] {
    // expected-error @+1 {{'tv.mesh' op cannot appear inside a rank program}}
    tv.mesh @m2 axes ["tp"] sizes [1]
  }
}

// -----

tv.mesh @m axes ["tp"] sizes [1]
tv.plan @p mesh @m micro_batches 1 {
  tv.rank_program [0] {
    // expected-error @+1 {{'tv.spec' op cannot appear inside a rank program}}
    tv.spec @s {
    }
  }
}

// -----

tv.mesh @m axes ["tp"] sizes [1]
tv.plan @p mesh @m micro_batches 1 {
  tv.rank_program [0] {
    // expected-error @+1 {{'tv.plan' op cannot appear inside a rank program}}
    tv.plan @p2 mesh @m micro_batches 1 {
    }
  }
}

// -----

tv.mesh @m axes ["tp"] sizes [1]
tv.plan @p mesh @m micro_batches 1 {
  tv.rank_program [0] {
    // expected-error @+1 {{'tv.stage' op cannot appear inside a rank program}}
    tv.stage @st assumes [] guarantees [] {
    }
  }
}

// -----

tv.mesh @m axes ["tp"] sizes [1]
tv.plan @p mesh @m micro_batches 1 {
  tv.rank_program [0] {
    %0 = tv.input "x" : tensor<4xf32>
    // expected-error @+1 {{'tv.output' op defines tensor name 'x' that is already defined in this program}}
    tv.output "x", %0 : tensor<4xf32>
  }
}

// -----

// ODS: a rank program lives only in a plan.
// expected-error @+1 {{'tv.rank_program' op expects parent op 'tv.plan'}}
tv.rank_program [0] {
}

//===----------------------------------------------------------------------===//
// tv.input, tv.tag, tv.output, tv.accumulate, tv.buffer_read (ODS types)
//===----------------------------------------------------------------------===//

// -----

tv.spec @s {
  // expected-error @+1 {{'tv.input' op result #0 must be ranked tensor of floating-point or signless integer values}}
  %0 = tv.input "x" : tensor<4xui8>
}

// -----

tv.spec @s {
  // expected-error @+1 {{invalid kind of type specified: expected builtin.tensor, but found 'tensor<*xf32>'}}
  %0 = tv.input "x" : tensor<*xf32>
}

// -----

tv.spec @s {
  // expected-error @+1 {{'tv.input' op result #0 must be ranked tensor of floating-point or signless integer values}}
  %0 = tv.input "x" : tensor<4xindex>
}

// -----

tv.spec @s {
  // expected-error @+1 {{invalid properties {name = 3 : i64} for op tv.input}}
  %0 = "tv.input"() <{name = 3 : i64}> : () -> tensor<4xf32>
}

// -----

tv.spec @s {
  %0 = builtin.unrealized_conversion_cast to tensor<4xcomplex<f32>>
  // expected-error @+1 {{'tv.tag' op operand #0 must be ranked tensor of floating-point or signless integer values}}
  tv.tag "t", %0 : tensor<4xcomplex<f32>>
}

// -----

tv.spec @s {
  %0 = builtin.unrealized_conversion_cast to vector<4xf32>
  // expected-error @+1 {{'tv.output' op operand #0 must be ranked tensor of floating-point or signless integer values}}
  "tv.output"(%0) <{name = "y"}> : (vector<4xf32>) -> ()
}

// -----

tv.spec @s {
  %0 = tv.input "x" : tensor<4xi64>
  // expected-error @+1 {{'tv.accumulate' op operand #0 must be ranked tensor of floating-point values}}
  tv.accumulate "dw", %0 : tensor<4xi64>
}

// -----

tv.spec @s {
  // expected-error @+1 {{'tv.buffer_read' op result #0 must be ranked tensor of floating-point values}}
  %0 = tv.buffer_read "dw" : tensor<4xi1>
}

//===----------------------------------------------------------------------===//
// #tv.lineage
//===----------------------------------------------------------------------===//

// -----

// expected-error @+1 {{lineage needs a spec tensor name}}
tv.lineage #tv.lineage<""[0:4] = ["y":0]>

// -----

// expected-error @+1 {{lineage slice dimension 1 is empty or negative: 4:4}}
tv.lineage #tv.lineage<"y"[0:4, 4:4] = ["y":0]>

// -----

// expected-error @+1 {{lineage slice dimension 0 is empty or negative: 3:1}}
tv.lineage #tv.lineage<"y"[3:1] = ["y":0]>

// -----

// expected-error @+1 {{lineage slice dimension 0 is empty or negative: -1:4}}
tv.lineage #tv.lineage<"y"[-1:4] = ["y":0]>

// -----

// expected-error @+1 {{plan reference to negative rank -1}}
tv.lineage #tv.lineage<"y"[0:4] = ["y":0] | ["y":1 + "y":-1]>

// -----

// Syntax: every group needs at least one reference.
// expected-error @+1 {{expected string}}
tv.lineage #tv.lineage<"y"[0:4] = []>

// -----

// Syntax: a lineage needs at least one group.
// expected-error @+1 {{expected string}}
tv.lineage #tv.lineage<"y"[0:4] = >

// -----

// Replicas name at least one rank.
// expected-error @+1 {{replicas of 'y' name no rank}}
tv.lineage #tv.lineage<"y"[0:4] = "y":[]>

// -----

// Replicas on a negative rank.
// expected-error @+1 {{plan reference to negative rank -2}}
tv.lineage #tv.lineage<"y"[0:4] = "y":[0, -2]>

// -----

// A replicas list ends the groups.
// expected-error @+1 {{a replicas list must be the last group}}
tv.lineage #tv.lineage<"y"[0:4] = "y":[0, 1] | ["y":2]>

// -----

// Replicas need a tensor name.
// expected-error @+1 {{replicas need a plan tensor name}}
tv.lineage #tv.lineage<"y"[0:4] = "":[0]>

// -----

// Syntax: a plan reference is "name":rank.
// expected-error @+1 {{expected ':'}}
tv.lineage #tv.lineage<"y"[0:4] = ["y"]>

// -----

// ODS: tv.lineage takes a #tv.lineage attribute.
// expected-error @+1 {{invalid properties {lineage = "y"} for op tv.lineage}}
"tv.lineage"() <{lineage = "y"}> : () -> ()

//===----------------------------------------------------------------------===//
// tv.stage
//===----------------------------------------------------------------------===//

// -----

// expected-error @+1 {{'tv.stage' op must hold exactly one tv.spec and one tv.plan, found 0 and 0}}
tv.stage @st assumes [] guarantees [#tv.lineage<"y"[0:4] = ["y":0]>] {
}

// -----

tv.stage @st assumes [] guarantees [#tv.lineage<"y"[0:4] = ["y":0]>] {
  // expected-error @+1 {{'tv.lineage' op cannot appear in a stage; a stage holds one tv.spec and one tv.plan}}
  tv.lineage #tv.lineage<"y"[0:4] = ["y":0]>
}

// -----

tv.stage @st assumes [] guarantees [#tv.lineage<"y"[0:4] = ["y":0]>] {
  // expected-error @+1 {{'tv.input' op expects parent op to be one of 'tv.spec, tv.rank_program'}}
  %0 = tv.input "x" : tensor<4xf32>
}

// -----

// ODS: assumes and guarantees are arrays of #tv.lineage.
// expected-error @+1 {{'tv.stage' op attribute 'assumes' failed to satisfy constraint: lineages}}
tv.stage @st assumes [1] guarantees [#tv.lineage<"y"[0:4] = ["y":0]>] {
}

// -----

// expected-error @+1 {{'tv.stage' op attribute 'guarantees' failed to satisfy constraint: lineages}}
tv.stage @st assumes [] guarantees ["y"] {
}

// -----

// The program-op annotations are declared: `mb` is a micro-batch index.
tv.spec @s {
  %x = tv.input "x" : tensor<2xf32>
  // expected-error @+1 {{'tv.exp' op 'mb' must be a non-negative i64 micro-batch index}}
  %0 = tv.exp %x {mb = -1} : tensor<2xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<2xf32>
  // expected-error @+1 {{'tv.exp' op 'mb' must be a non-negative i64 micro-batch index}}
  %0 = tv.exp %x {mb = "zero"} : tensor<2xf32>
}

// -----

tv.spec @s {
  %x = tv.input "x" : tensor<2xf32>
  // expected-error @+1 {{'tv.exp' op 'src' must be a string}}
  %0 = tv.exp %x {src = 3} : tensor<2xf32>
}

// -----

// expected-error @+1 {{lineage scale 0/1 must be a non-zero fraction with a positive denominator}}
tv.lineage #tv.lineage<"y"[0:4] = ["y":0] scaled 0>

// -----

// expected-error @+1 {{lineage scale 1/-2 must be a non-zero fraction with a positive denominator}}
tv.lineage #tv.lineage<"y"[0:4] = ["y":0] scaled 1/-2>

// -----

// expected-error @+1 {{lineage scale 2/4 is not in lowest terms}}
tv.lineage #tv.lineage<"y"[0:4] = ["y":0] scaled 2/4>

//===----------------------------------------------------------------------===//
// tv.source
//===----------------------------------------------------------------------===//

// -----

// expected-error @+1 {{'tv.source' op must hold one tv.mesh and one tv.stage}}
tv.source {
  tv.mesh @mesh axes ["tp"] sizes [1]
}

// -----

tv.source {
  tv.mesh @mesh axes ["tp"] sizes [1]
  // expected-error @+1 {{'tv.lineage' op cannot appear in a tv.source}}
  tv.lineage #tv.lineage<"y"[0:4] = ["y":0]>
}

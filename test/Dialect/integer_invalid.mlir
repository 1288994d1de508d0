// RUN: tv-opt %s --split-input-file --verify-diagnostics

// Invalid integer ops: element types that differ, masks, an operation
// that does not reduce, float operands, kinds that only reduce integers.

tv.spec @s {
  %a = tv.input "a" : tensor<4xi32>
  %b = tv.input "b" : tensor<4xi8>
  // expected-error @+1 {{'tv.int_binary' op operands and result must share one element type}}
  %0 = tv.int_binary andi %a, %b : tensor<4xi32>, tensor<4xi8> -> tensor<4xi32>
}

// -----

tv.spec @s {
  %a = tv.input "a" : tensor<4xi1>
  // expected-error @+1 {{'tv.int_binary' op takes integers of at least 2 bits, not masks}}
  %0 = tv.int_binary ori %a, %a : tensor<4xi1>, tensor<4xi1> -> tensor<4xi1>
}

// -----

tv.spec @s {
  %a = tv.input "a" : tensor<4xf32>
  // expected-error @+1 {{'tv.int_binary' op operand #0 must be ranked tensor of signless integer values}}
  %0 = tv.int_binary ori %a, %a : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
}

// -----

tv.spec @s {
  %a = tv.input "a" : tensor<4xi32>
  %b = tv.input "b" : tensor<3xi32>
  // expected-error @+1 {{'tv.int_binary' op operands of shapes [4] and [3] do not broadcast}}
  %0 = tv.int_binary xori %a, %b : tensor<4xi32>, tensor<3xi32> -> tensor<4xi32>
}

// -----

tv.spec @s {
  %a = tv.input "a" : tensor<4xi32>
  // expected-error @+1 {{expected an integer operation (andi, ori, xori, maxsi, minsi, maxui, minui, shli, shrsi or shrui), got 'nandi'}}
  %0 = tv.int_binary nandi %a, %a : tensor<4xi32>, tensor<4xi32> -> tensor<4xi32>
}

// -----

tv.spec @s {
  %a = tv.input "a" : tensor<4x2xi32>
  // expected-error @+1 {{'tv.int_reduce' op 'shli' is not associative: it does not reduce}}
  %0 = tv.int_reduce shli %a dims [1] : tensor<4x2xi32> -> tensor<4xi32>
}

// -----

tv.spec @s {
  %a = tv.input "a" : tensor<4x2xi32>
  // expected-error @+1 {{'tv.int_reduce' op result has shape [4, 1], expected [4]}}
  %0 = tv.int_reduce andi %a dims [1] : tensor<4x2xi32> -> tensor<4x1xi32>
}

// -----

tv.spec @s {
  %a = tv.input "a" : tensor<4x2xi32>
  // expected-error @+1 {{'tv.int_reduce' op result element type must equal the input's}}
  %0 = tv.int_reduce andi %a dims [1] : tensor<4x2xi32> -> tensor<4xi16>
}

// -----

tv.mesh @m axes ["tp"] sizes [2]
tv.plan @p mesh @m micro_batches 1 {
  tv.rank_program [0, 1] {
    %x = tv.input "x" : tensor<4xf32>
    // expected-error @+1 {{'tv.all_reduce' op 'band' reduces integers only}}
    %0 = tv.all_reduce band %x {axes = ["tp"]} : tensor<4xf32> -> tensor<4xf32>
  }
}

// -----

tv.mesh @m axes ["tp"] sizes [2]
tv.plan @p mesh @m micro_batches 1 {
  tv.rank_program [0, 1] {
    %x = tv.input "x" : tensor<4xi32>
    // expected-error @+1 {{'tv.all_reduce' op 'avg' of integers has no exact meaning}}
    %0 = tv.all_reduce avg %x {axes = ["tp"]} : tensor<4xi32> -> tensor<4xi32>
  }
}

// -----

tv.mesh @m axes ["tp"] sizes [2]
tv.plan @p mesh @m micro_batches 1 {
  tv.rank_program [0, 1] {
    %x = tv.input "x" : tensor<4xi32>
    // expected-error @+1 {{'tv.reduce_scatter' op supports sum and avg only}}
    %0 = tv.reduce_scatter %x dim 0 {axes = ["tp"], kind = #tv<reduce_kind bor>} : tensor<4xi32> -> tensor<2xi32>
  }
}

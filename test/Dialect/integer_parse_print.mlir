// RUN: tv-opt %s | tv-opt | FileCheck %s
// RUN: tv-opt %s --mlir-print-op-generic | tv-opt | FileCheck %s

// Round trip of the integer ops: tv.int_binary (bitwise, order and shift
// operations, with broadcasting), tv.int_reduce, the ring ops and sum on
// integers, and the integer kinds of tv.all_reduce.

// CHECK-LABEL: tv.spec @ops {
// CHECK:         %[[A:.*]] = tv.input "a" : tensor<4x8xi32>
// CHECK:         %[[B:.*]] = tv.input "b" : tensor<8xi32>
// CHECK:         tv.int_binary andi %[[A]], %[[B]] : tensor<4x8xi32>, tensor<8xi32> -> tensor<4x8xi32>
// CHECK:         tv.int_binary maxui %[[A]], %[[A]] : tensor<4x8xi32>, tensor<4x8xi32> -> tensor<4x8xi32>
// CHECK:         tv.int_binary shrsi %[[A]], %[[B]] : tensor<4x8xi32>, tensor<8xi32> -> tensor<4x8xi32>
// CHECK:         tv.int_reduce xori %[[A]] dims [1] : tensor<4x8xi32> -> tensor<4xi32>
// CHECK:         tv.int_reduce minsi %[[A]] dims [0] {keepdim} : tensor<4x8xi32> -> tensor<1x8xi32>
// CHECK:         tv.add %[[A]], %[[B]] : tensor<4x8xi32>, tensor<8xi32> -> tensor<4x8xi32>
// CHECK:         tv.scale %[[A]], -3.000000e+00 : tensor<4x8xi32>
// CHECK:         tv.sum %[[A]] dims [1] : tensor<4x8xi32> -> tensor<4xi32>
tv.spec @ops {
  %a = tv.input "a" : tensor<4x8xi32>
  %b = tv.input "b" : tensor<8xi32>
  %0 = tv.int_binary andi %a, %b : tensor<4x8xi32>, tensor<8xi32> -> tensor<4x8xi32>
  %1 = tv.int_binary maxui %a, %a : tensor<4x8xi32>, tensor<4x8xi32> -> tensor<4x8xi32>
  %2 = tv.int_binary shrsi %a, %b : tensor<4x8xi32>, tensor<8xi32> -> tensor<4x8xi32>
  %3 = tv.int_reduce xori %a dims [1] : tensor<4x8xi32> -> tensor<4xi32>
  %4 = tv.int_reduce minsi %a dims [0] {keepdim} : tensor<4x8xi32> -> tensor<1x8xi32>
  %5 = tv.add %a, %b : tensor<4x8xi32>, tensor<8xi32> -> tensor<4x8xi32>
  %6 = tv.scale %a, -3.0 : tensor<4x8xi32>
  %7 = tv.sum %a dims [1] : tensor<4x8xi32> -> tensor<4xi32>
}

// CHECK-LABEL: tv.plan @p mesh @m
// CHECK:         tv.all_reduce band %{{.*}} {axes = ["tp"]} : tensor<4xi8> -> tensor<4xi8>
// CHECK:         tv.all_reduce bor
// CHECK:         tv.all_reduce bxor
// CHECK:         tv.all_reduce min
// CHECK:         tv.all_reduce max
tv.mesh @m axes ["tp"] sizes [2]
tv.plan @p mesh @m micro_batches 1 {
  tv.rank_program [0, 1] {
    %x = tv.input "x" : tensor<4xi8>
    %0 = tv.all_reduce band %x {axes = ["tp"]} : tensor<4xi8> -> tensor<4xi8>
    %1 = tv.all_reduce bor %x {axes = ["tp"]} : tensor<4xi8> -> tensor<4xi8>
    %2 = tv.all_reduce bxor %x {axes = ["tp"]} : tensor<4xi8> -> tensor<4xi8>
    %3 = tv.all_reduce min %x {axes = ["tp"]} : tensor<4xi8> -> tensor<4xi8>
    %4 = tv.all_reduce max %x {axes = ["tp"]} : tensor<4xi8> -> tensor<4xi8>
  }
}

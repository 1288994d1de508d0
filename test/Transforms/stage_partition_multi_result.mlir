// A stage that holds an op for one of its results while another result is a
// cut (a lineage the stage assumes): the uses of the cut read the assumed
// input on both sides, as when the op is outside the stage. A plan that
// recomputed it instead would compute a value the spec side does not relate
// to its assumption (found on a distributed-optimizer plan, whose gradient
// bucket holds the final norm's weight gradient next to the tagged d_x).
// RUN: tv-opt %s --tv-stage-partition | FileCheck %s
// RUN: tv-opt %s --tv-stage-partition --tv-shape-reduce --tv-verify -o /dev/null 2>&1 | FileCheck %s --check-prefix=PROVEN
// CHECK-LABEL: tv.stage @stage1_t
// CHECK:       tv.rank_program [0, 1]
// CHECK-NEXT:    %[[DX:.*]] = tv.input "dx" : tensor<2x8xf32>
// CHECK:         %{{.*}}, %[[DW:.*]] = tv.rmsnorm_grad
// CHECK-NEXT:    %[[S:.*]] = tv.sum %[[DX]] dims [0]
// CHECK-NEXT:    tv.add %[[S]], %[[DW]]
// PROVEN: tv-verify: proven
tv.mesh @mesh axes ["dp"] sizes [2]
tv.spec @spec {
  %x = tv.input "x" : tensor<4x8xf32>
  %w = tv.input "w" : tensor<8xf32>
  %dy = tv.input "dy" : tensor<4x8xf32>
  %dx, %dw = tv.rmsnorm_grad %x, %w, %dy eps 1.000000e-05 : tensor<4x8xf32>, tensor<8xf32>
  tv.tag "dx", %dx : tensor<4x8xf32>
  %s = tv.sum %dx dims [0] : tensor<4x8xf32> -> tensor<8xf32>
  %t = tv.add %s, %dw : tensor<8xf32>, tensor<8xf32> -> tensor<8xf32>
  tv.output "t", %t : tensor<8xf32>
}
tv.plan @plan mesh @mesh micro_batches 1 {
  tv.rank_program [0, 1] {
    %x = tv.input "x" : tensor<2x8xf32>
    %w = tv.input "w" : tensor<8xf32>
    %dy = tv.input "dy" : tensor<2x8xf32>
    %dx, %dw = tv.rmsnorm_grad %x, %w, %dy eps 1.000000e-05 : tensor<2x8xf32>, tensor<8xf32>
    tv.tag "dx", %dx : tensor<2x8xf32>
    %s = tv.sum %dx dims [0] : tensor<2x8xf32> -> tensor<8xf32>
    %p = tv.add %s, %dw : tensor<8xf32>, tensor<8xf32> -> tensor<8xf32>
    %t = tv.all_reduce sum %p {axes = ["dp"]} : tensor<8xf32> -> tensor<8xf32>
    tv.output "t", %t : tensor<8xf32>
  }
}
tv.lineage #tv.lineage<"x"[0:2, 0:8] = ["x":0]>
tv.lineage #tv.lineage<"x"[2:4, 0:8] = ["x":1]>
tv.lineage #tv.lineage<"dy"[0:2, 0:8] = ["dy":0]>
tv.lineage #tv.lineage<"dy"[2:4, 0:8] = ["dy":1]>
tv.lineage #tv.lineage<"w"[0:8] = ["w":0] | ["w":1]>
tv.lineage #tv.lineage<"dx"[0:2, 0:8] = ["dx":0]>
tv.lineage #tv.lineage<"dx"[2:4, 0:8] = ["dx":1]>
tv.lineage #tv.lineage<"t"[0:8] = ["t":0] | ["t":1]>

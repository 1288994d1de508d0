//===- TVOps.h - tv operations ----------------------------------*- C++ -*-===//
#ifndef TRAINVERIFY_DIALECT_TVOPS_H
#define TRAINVERIFY_DIALECT_TVOPS_H

#include "TrainVerify/Dialect/TVDialect.h"
#include "TrainVerify/Interfaces/TVOpInterfaces.h"
#include "TrainVerify/Semantics/Term.h"

#define GET_OP_CLASSES
#include "TrainVerify/Dialect/TVOps.h.inc"

namespace mlir::tv {
/// Whether a collective of this kind is linear in its inputs (sum, avg).
inline bool isLinearReduceKind(ReduceKind k) {
  return k == ReduceKind::sum || k == ReduceKind::avg;
}
/// The term language's function for an integer operation (the enums list
/// the operations in one order).
inline sym::Fn intFnOf(IntFn f) {
  static_assert((int)sym::Fn::IShrU - (int)sym::Fn::IAnd ==
                    (int)IntFn::shrui - (int)IntFn::andi,
                "IntFn and sym::Fn list the integer operations alike");
  return sym::Fn((int)sym::Fn::IAnd + ((int)f - (int)IntFn::andi));
}
} // namespace mlir::tv

#endif // TRAINVERIFY_DIALECT_TVOPS_H

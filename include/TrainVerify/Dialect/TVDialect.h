//===- TVDialect.h - tv dialect ---------------------------------*- C++ -*-===//
#ifndef TRAINVERIFY_DIALECT_TVDIALECT_H
#define TRAINVERIFY_DIALECT_TVDIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "TrainVerify/Dialect/TVOpsDialect.h.inc"
#include "TrainVerify/Dialect/TVOpsEnums.h.inc"

namespace mlir::tv {
/// A plan tensor on one rank, as a lineage group names it (a view: the name
/// lives in the context).
struct PlanRefView {
  llvm::StringRef name;
  int64_t rank;
};
} // namespace mlir::tv

#define GET_ATTRDEF_CLASSES
#include "TrainVerify/Dialect/TVAttrs.h.inc"

#endif // TRAINVERIFY_DIALECT_TVDIALECT_H

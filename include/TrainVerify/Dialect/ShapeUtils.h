//===- ShapeUtils.h - shape rules shared by verifiers and engines -*- C++ -*-===//
#ifndef TRAINVERIFY_DIALECT_SHAPEUTILS_H
#define TRAINVERIFY_DIALECT_SHAPEUTILS_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include <optional>

namespace mlir::tv {

/// Numpy broadcast of two shapes, or nothing if they are incompatible.
std::optional<llvm::SmallVector<int64_t>>
broadcastShapes(llvm::ArrayRef<int64_t> a, llvm::ArrayRef<int64_t> b);

/// Shape after reducing `dims` (which must be valid) with or without keepdim.
llvm::SmallVector<int64_t> reducedShape(llvm::ArrayRef<int64_t> shape,
                                        llvm::ArrayRef<int64_t> dims,
                                        bool keepdim);

/// Row-major strides of a shape.
llvm::SmallVector<int64_t> stridesOf(llvm::ArrayRef<int64_t> shape);

int64_t numElements(llvm::ArrayRef<int64_t> shape);

} // namespace mlir::tv

#endif

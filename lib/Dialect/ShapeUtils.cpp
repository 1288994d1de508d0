//===- ShapeUtils.cpp - shape rules shared by verifiers and engines -------===//
#include "TrainVerify/Dialect/ShapeUtils.h"

#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace llvm;

std::optional<SmallVector<int64_t>>
mlir::tv::broadcastShapes(ArrayRef<int64_t> a, ArrayRef<int64_t> b) {
  size_t rank = std::max(a.size(), b.size());
  SmallVector<int64_t> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1)
      return std::nullopt;
    out[i] = da == 1 ? db : da;
  }
  return out;
}

SmallVector<int64_t> mlir::tv::reducedShape(ArrayRef<int64_t> shape,
                                            ArrayRef<int64_t> dims,
                                            bool keepdim) {
  SmallVector<int64_t> out;
  for (auto [i, d] : llvm::enumerate(shape)) {
    bool reduced = llvm::is_contained(dims, (int64_t)i);
    if (!reduced)
      out.push_back(d);
    else if (keepdim)
      out.push_back(1);
  }
  return out;
}

SmallVector<int64_t> mlir::tv::stridesOf(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> strides(shape.size(), 1);
  for (int64_t i = (int64_t)shape.size() - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * shape[i + 1];
  return strides;
}

int64_t mlir::tv::numElements(ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

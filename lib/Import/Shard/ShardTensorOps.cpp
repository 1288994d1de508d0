//===- ShardTensorOps.cpp - scalars, extract, insert, pad -----------------===//
//
// Data scalars outside structured ops (0-d tensors), tensor.extract and
// tensor.insert at constant indices, tensor.pad with a constant, and
// constants materialized as tensors.
//
//===----------------------------------------------------------------------===//
#include "ShardImport.h"
#include "TrainVerify/Dialect/TVOps.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <cmath>

using namespace mlir;
using namespace mlir::tv::shardimport;
namespace tvir = mlir::tv;

Value Emitter::constantTensor(Location loc, RankedTensorType type, double c) {
  // Positions along a 1-element (or the tensor's first) dimension, times 0,
  // plus c; a 0-d tensor is the 1-element one reshaped.
  RankedTensorType base =
      type.getRank() ? type : RankedTensorType::get({1}, type.getElementType());
  Value pos = tvir::IotaOp::create(b, loc, base, i64(0), i64(0));
  Value v = tvir::ScaleOp::create(b, loc, pos, num(0.0));
  if (c != 0.0)
    v = tvir::AddScalarOp::create(b, loc, v, num(c));
  if (!type.getRank())
    v = tvir::ReshapeOp::create(b, loc, type, v);
  return v;
}

FailureOr<Value> Emitter::scalarOperand(Operation *op, Value v) {
  if (auto c = scalar.find(v); c != scalar.end())
    return constantTensor(op->getLoc(), tvType(v.getType()), c->second);
  return use(op, v);
}

LogicalResult Emitter::scalarData(Operation *op, StringRef tvName) {
  // Constants only: folded (a scalar constant stays a constant, usable as
  // a fill or a reduction's initial value).
  SmallVector<std::optional<double>> consts;
  for (Value v : op->getOperands()) {
    auto c = scalar.find(v);
    consts.push_back(c == scalar.end() ? std::nullopt
                                       : std::optional<double>(c->second));
  }
  if (llvm::all_of(consts, [](auto c) { return c.has_value(); })) {
    std::optional<double> folded;
    if (consts.size() == 1 && tvName == "neg")
      folded = -*consts[0];
    else if (consts.size() == 2 && tvName == "add")
      folded = *consts[0] + *consts[1];
    else if (consts.size() == 2 && tvName == "sub")
      folded = *consts[0] - *consts[1];
    else if (consts.size() == 2 && tvName == "mul")
      folded = *consts[0] * *consts[1];
    else if (consts.size() == 2 && tvName == "div" &&
             isa<FloatType>(op->getResult(0).getType()))
      folded = *consts[0] / *consts[1];
    if (folded) {
      scalar[op->getResult(0)] = *folded;
      return success();
    }
  }
  RankedTensorType t = tvType(op->getResult(0).getType());
  SmallVector<Value> ops;
  for (Value v : op->getOperands()) {
    FailureOr<Value> n = scalarOperand(op, v);
    if (failed(n))
      return failure();
    ops.push_back(*n);
  }
  FailureOr<Value> r = buildElementwise(b, op->getLoc(), tvName, ops, t);
  if (failed(r))
    return unsupported(op);
  name[op->getResult(0)] = *r;
  return success();
}

FailureOr<SmallVector<int64_t>>
Emitter::elementIndex(Operation *op, ValueRange indices,
                      RankedTensorType type) {
  if (failed(checkTensor(op, type)))
    return failure();
  SmallVector<int64_t> out;
  for (Value i : indices) {
    auto it = index.find(i);
    if (it == index.end())
      return op->emitError() << "shard-partition import: '" << op->getName()
                             << "' at indices other than constants is not "
                                "modeled",
             failure();
    out.push_back(it->second);
  }
  for (auto [i, s] : llvm::zip(out, type.getShape()))
    if (i < 0 || i >= s)
      return op->emitError() << "shard-partition import: '" << op->getName()
                             << "' at index " << i
                             << " outside a dimension of size " << s,
             failure();
  return out;
}

LogicalResult Emitter::extract(tensor::ExtractOp op) {
  auto srcTy = op.getTensor().getType();
  FailureOr<SmallVector<int64_t>> at = elementIndex(op, op.getIndices(), srcTy);
  if (failed(at) || failed(checkTensor(op, op.getType())))
    return failure();
  FailureOr<Value> src = use(op, op.getTensor());
  if (failed(src))
    return failure();
  Type elt = tvType(srcTy).getElementType();
  SmallVector<int64_t> ones(srcTy.getRank(), 1);
  Value one = tvir::SliceOp::create(b, op.getLoc(),
                                    RankedTensorType::get(ones, elt), *src,
                                    ints(*at));
  name[op.getResult()] = tvir::ReshapeOp::create(
      b, op.getLoc(), tvType(op.getType()), one);
  return success();
}

LogicalResult Emitter::insert(tensor::InsertOp op) {
  auto destTy = op.getDest().getType();
  FailureOr<SmallVector<int64_t>> at = elementIndex(op, op.getIndices(), destTy);
  if (failed(at))
    return failure();
  FailureOr<Value> src = scalarOperand(op, op.getScalar());
  FailureOr<Value> dest = use(op, op.getDest());
  if (failed(src) || failed(dest))
    return failure();
  Type elt = tvType(destTy).getElementType();
  SmallVector<int64_t> ones(destTy.getRank(), 1);
  Value one = tvir::ReshapeOp::create(b, op.getLoc(),
                                      RankedTensorType::get(ones, elt), *src);
  name[op.getResult()] = insertAt(op, *dest, one, *at, 0);
  return success();
}

LogicalResult Emitter::pad(tensor::PadOp op) {
  // Static low and high padding with a constant: the source placed at
  // `low` in a tensor of that constant.
  if (!op.getLow().empty() || !op.getHigh().empty())
    return op.emitError() << "shard-partition import: a tensor.pad with "
                             "padding sizes that are values is not modeled";
  Value padValue = op.getConstantPaddingValue();
  auto c = padValue ? scalar.find(padValue) : scalar.end();
  if (c == scalar.end() || !std::isfinite(c->second))
    return op.emitError() << "shard-partition import: a tensor.pad with a "
                             "padding value other than a finite constant is "
                             "not modeled";
  if (failed(checkTensor(op, op.getSourceType())) ||
      failed(checkTensor(op, op.getResultType())))
    return failure();
  FailureOr<Value> src = use(op, op.getSource());
  if (failed(src))
    return failure();
  RankedTensorType t = tvType(op.getResultType());
  ArrayRef<int64_t> low = op.getStaticLow();
  if (c->second == 0.0) {
    name[op.getResult()] =
        tvir::SliceGradOp::create(b, op.getLoc(), t, *src, ints(low));
    return success();
  }
  Value filled = constantTensor(op.getLoc(), t, c->second);
  name[op.getResult()] = insertAt(op, filled, *src, low, 0);
  return success();
}

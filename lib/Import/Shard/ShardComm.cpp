//===- ShardComm.cpp - roots, peers and insert_slice in the shard import --===//
//
// The shard ops whose meaning depends on which process runs them: gather to
// a root, scatter from one, send / recv to a peer, shift along a grid axis,
// a min all-reduce, and tensor.insert_slice. Each is translated for the one
// process being emitted; what the op leaves undefined on that process is
// marked so (Emitter::undefined), never given a value (docs/shard.md,
// "Communication with a root or a peer").
//
//===----------------------------------------------------------------------===//
#include "ShardImport.h"
#include "TrainVerify/Dialect/TVOps.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace mlir::tv::shardimport;
namespace tvir = mlir::tv;

LogicalResult Emitter::needsProcess(Operation *op) {
  if (process >= 0)
    return success();
  return op->emitError() << "shard-partition import: '" << op->getName()
                         << "' in the annotated input (before partitioning) "
                            "is not modeled";
}

static bool isStatic(ArrayRef<int64_t> index) {
  return llvm::none_of(index, ShapedType::isDynamic);
}

FailureOr<int64_t> Emitter::peerAt(Operation *op, ArrayRef<int16_t> axes,
                                   ArrayRef<int64_t> index) {
  if (index.size() != axes.size() || !isStatic(index))
    return op->emitError() << "shard-partition import: a peer or root that is "
                              "not a static index on every grid axis of the "
                              "group is not modeled";
  SmallVector<int64_t> c = grid.coords(process);
  for (auto [a, i] : llvm::zip(axes, index)) {
    if (a < 0 || a >= (int64_t)grid.sizes.size() || i < 0 ||
        i >= grid.sizes[a])
      return op->emitError() << "shard-partition import: index " << i
                             << " on grid axis " << a
                             << " is outside the grid",
             FailureOr<int64_t>();
    c[a] = i;
  }
  return grid.linear(c);
}

bool Emitter::isAt(ArrayRef<int16_t> axes, ArrayRef<int64_t> index) const {
  SmallVector<int64_t> c = grid.coords(process);
  for (auto [a, i] : llvm::zip(axes, index))
    if (c[a] != i)
      return false;
  return true;
}

/// The in-group index of a static root, the first listed axis major (tv's
/// group order; groupAxes refuses axes out of grid order).
static int64_t rootIndex(const Grid &grid, ArrayRef<int16_t> axes,
                         ArrayRef<int64_t> root) {
  int64_t linear = 0;
  for (auto [a, i] : llvm::zip(axes, root))
    linear = linear * grid.sizes[a] + i;
  return linear;
}

LogicalResult Emitter::rootCollective(Operation *op) {
  // A root given by its multi-index in the group: its group index, the
  // first listed axis major (tv's group order, the axes being in grid
  // order).
  auto b = dyn_cast<shard::BroadcastOp>(op);
  auto red = dyn_cast<shard::ReduceOp>(op);
  ArrayRef<int16_t> axes = b ? b.getGridAxes() : red.getGridAxes();
  ArrayRef<int64_t> root = b ? b.getRoot() : red.getRoot();
  if ((b ? !b.getRootDynamic().empty() : !red.getRootDynamic().empty()) ||
      root.size() != axes.size())
    return op->emitError() << "shard-partition import: a root that is "
                              "not a static index on every grid axis "
                              "is not modeled";
  if (red && red.getReduction() != shard::ReductionKind::Sum)
    return op->emitError() << "shard-partition import: a reduce other "
                              "than a sum is not modeled";
  IntegerAttr rootAttr = i64(rootIndex(grid, axes, root));
  Value in = b ? b.getInput() : red.getInput();
  RankedTensorType resTy = tvType(op->getResult(0).getType());
  auto make = [&](Value x, ArrayAttr ax) -> Value {
    if (b)
      return tvir::BroadcastCommOp::create(this->b, op->getLoc(), resTy, x,
                                           rootAttr, ax, ArrayAttr());
    return tvir::ReduceOp::create(this->b, op->getLoc(), resTy, x, rootAttr,
                                  ax, ArrayAttr());
  };
  if (b && process >= 0 && !isAt(axes, root) && undefs.count(in) &&
      !name.count(in)) {
    // A member other than the root: its input is not read, and is
    // undefined here (a gather's off its root). Any defined value means
    // the same; positions are one that reads nothing.
    if (failed(checkTensor(op, in.getType())))
      return failure();
    Value n = tvir::IotaOp::create(this->b, op->getLoc(), tvType(in.getType()),
                                   i64(0), i64(0));
    FailureOr<Value> bc =
        collectiveOf(op, axes, [&](ArrayAttr ax) { return make(n, ax); });
    if (failed(bc))
      return failure();
    name[op->getResult(0)] = *bc;
    return success();
  }
  return collective(op, in, axes, op->getResult(0), make);
}

LogicalResult Emitter::gather(shard::GatherOp op) {
  if (failed(needsProcess(op)) ||
      failed(peerAt(op, op.getGridAxes(), op.getRoot())))
    return failure();
  // Every member takes part in the gather; only the root's result is
  // defined.
  if (failed(collective(op, op.getInput(), op.getGridAxes(), op.getResult(),
                        [&](Value in, ArrayAttr ax) -> Value {
                          return tvir::AllGatherOp::create(
                              b, op.getLoc(), tvType(op.getType()), in,
                              i64(op.getGatherAxis().getSExtValue()),
                              DenseI64ArrayAttr(), ax, ArrayAttr());
                        })))
    return failure();
  if (!isAt(op.getGridAxes(), op.getRoot())) {
    name.erase(op.getResult());
    undefined(op.getResult(), "shard.gather off its root");
  }
  return success();
}

LogicalResult Emitter::scatter(shard::ScatterOp op) {
  if (failed(needsProcess(op)) ||
      failed(peerAt(op, op.getGridAxes(), op.getRoot())))
    return failure();
  // The root's input split along the axis: the root's input broadcast, then
  // each member's chunk of it (the others' inputs are ignored).
  FailureOr<Value> in = use(op, op.getInput());
  if (failed(in))
    return failure();
  FailureOr<Value> bc = collectiveOf(op, op.getGridAxes(), [&](ArrayAttr ax) {
    return tvir::BroadcastCommOp::create(
        b, op.getLoc(), tvType(op.getInput().getType()), *in,
        i64(rootIndex(grid, op.getGridAxes(), op.getRoot())), ax, ArrayAttr());
  });
  if (failed(bc))
    return failure();
  FailureOr<Value> c = collectiveOf(op, op.getGridAxes(), [&](ArrayAttr ax) {
    return tvir::ChunkOp::create(b, op.getLoc(), tvType(op.getType()), *bc,
                                 i64(op.getScatterAxis().getSExtValue()),
                                 IntegerAttr(), ax, ArrayAttr());
  });
  if (failed(c))
    return failure();
  name[op.getResult()] = *c;
  return success();
}

LogicalResult Emitter::send(shard::SendOp op) {
  if (failed(needsProcess(op)) || failed(checkTensor(op, op.getInput().getType())))
    return failure();
  if (!op.getDestinationDynamic().empty())
    return op.emitError() << "shard-partition import: a send to a dynamic "
                             "destination is not modeled";
  FailureOr<int64_t> peer = peerAt(op, op.getGridAxes(), op.getDestination());
  FailureOr<Value> in = use(op, op.getInput());
  if (failed(peer) || failed(in))
    return failure();
  if (*peer == process)
    return op.emitError() << "shard-partition import: process " << process
                          << " sends to itself (not modeled)";
  tvir::SendOp::create(b, op.getLoc(), *in, i64(*peer), StringAttr(),
                       IntegerAttr(), i64(0), DenseI64ArrayAttr());
  // The op's result is not specified by the dialect: undefined.
  undefined(op.getResult(), "the result of shard.send");
  return success();
}

LogicalResult Emitter::recv(shard::RecvOp op) {
  if (failed(needsProcess(op)) ||
      failed(checkTensor(op, op.getResult().getType())))
    return failure();
  std::optional<ArrayRef<int64_t>> source = op.getSource();
  if (!source || !op.getSourceDynamic().empty())
    return op.emitError() << "shard-partition import: a recv without a "
                             "static source is not modeled";
  FailureOr<int64_t> peer = peerAt(op, op.getGridAxes(), *source);
  if (failed(peer))
    return failure();
  if (*peer == process)
    return op.emitError() << "shard-partition import: process " << process
                          << " receives from itself (not modeled)";
  name[op.getResult()] = tvir::RecvOp::create(
      b, op.getLoc(), tvType(op.getType()), i64(*peer), StringAttr(),
      IntegerAttr(), i64(0), DenseI64ArrayAttr());
  return success();
}

LogicalResult Emitter::shift(shard::ShiftOp op) {
  if (failed(needsProcess(op)) ||
      failed(checkTensor(op, op.getInput().getType())))
    return failure();
  int64_t axis = op.getShiftAxis().getSExtValue();
  if (!llvm::is_contained(op.getGridAxes(), axis))
    return op.emitError() << "shard-partition import: shift_axis " << axis
                          << " is not one of the group's grid axes";
  // The process at coordinate c along the axis receives the input of the
  // one at c - offset (the data moves by +offset; docs/shard.md states the
  // direction chosen); with rotate, modulo the axis size.
  int64_t n = grid.sizes[axis];
  int64_t offset = (int64_t)op.getOffset();
  SmallVector<int64_t> c = grid.coords(process);
  auto along = [&](int64_t to) -> int64_t {
    if (op.getRotate())
      to = ((to % n) + n) % n;
    if (to < 0 || to >= n)
      return -1;
    SmallVector<int64_t> p = c;
    p[axis] = to;
    return grid.linear(p);
  };
  int64_t dest = along(c[axis] + offset), src = along(c[axis] - offset);
  FailureOr<Value> in = use(op, op.getInput());
  if (failed(in))
    return failure();
  RankedTensorType t = tvType(op.getInput().getType());
  if (dest == process) { // a whole turn: nothing moves
    name[op.getResult()] = *in;
    return success();
  }
  if (dest >= 0)
    tvir::SendOp::create(b, op.getLoc(), *in, i64(dest), StringAttr(),
                         IntegerAttr(), i64(0), DenseI64ArrayAttr());
  if (src < 0) {
    undefined(op.getResult(), "shard.shift with no source");
    return success();
  }
  name[op.getResult()] =
      tvir::RecvOp::create(b, op.getLoc(), t, i64(src), StringAttr(),
                           IntegerAttr(), i64(0), DenseI64ArrayAttr());
  return success();
}

LogicalResult Emitter::allReduceMin(shard::AllReduceOp op) {
  // min = -max(-x), elementwise over the group (floats: the negation is
  // exact).
  auto ty = cast<RankedTensorType>(op.getInput().getType());
  if (!isFloatTensor(op.getInput()))
    return op.emitError() << "shard-partition import: a min all-reduce of "
                             "integers is not modeled";
  FailureOr<Value> in = use(op, op.getInput());
  if (failed(in))
    return failure();
  RankedTensorType t = tvType(ty);
  Value neg = tvir::NegOp::create(b, op.getLoc(), t, *in);
  FailureOr<Value> m = collectiveOf(op, op.getGridAxes(), [&](ArrayAttr ax) {
    return tvir::AllReduceOp::create(
        b, op.getLoc(), t, neg,
        tvir::ReduceKindAttr::get(b.getContext(), tvir::ReduceKind::max), ax,
        ArrayAttr());
  });
  if (failed(m))
    return failure();
  name[op.getResult()] = tvir::NegOp::create(b, op.getLoc(), t, *m);
  return success();
}

Value Emitter::insertAt(Operation *op, Value dest, Value src,
                        ArrayRef<int64_t> offsets, unsigned d) {
  auto destTy = cast<RankedTensorType>(dest.getType());
  ArrayRef<int64_t> destShape = destTy.getShape();
  ArrayRef<int64_t> srcShape = cast<RankedTensorType>(src.getType()).getShape();
  if (d == destShape.size())
    return src;
  // dest[..., a:b, ...] along dimension d (whole along the others).
  auto piece = [&](int64_t a, int64_t c) -> Value {
    SmallVector<int64_t> start(destShape.size(), 0), shape(destShape);
    start[d] = a;
    shape[d] = c - a;
    return tvir::SliceOp::create(
        b, op->getLoc(), RankedTensorType::get(shape, destTy.getElementType()),
        dest, ints(start));
  };
  int64_t lo = offsets[d], hi = lo + srcShape[d];
  // The middle rows: src inserted into dest's rows lo:hi along the later
  // dimensions.
  Value mid = lo == 0 && hi == destShape[d] ? dest : piece(lo, hi);
  Value middle = insertAt(op, mid, src, offsets, d + 1);
  SmallVector<Value> parts;
  if (lo > 0)
    parts.push_back(piece(0, lo));
  parts.push_back(middle);
  if (hi < destShape[d])
    parts.push_back(piece(hi, destShape[d]));
  if (parts.size() == 1)
    return middle;
  return tvir::ConcatOp::create(b, op->getLoc(), destTy, parts, i64(d));
}

LogicalResult Emitter::insertSlice(tensor::InsertSliceOp op) {
  RankedTensorType srcTy = op.getSourceType(), destTy = op.getDestType();
  if (!op.hasUnitStride() || !op.getOffsets().empty() ||
      !op.getSizes().empty() || srcTy.getRank() != destTy.getRank())
    return op.emitError() << "shard-partition import: an insert_slice with "
                             "dynamic offsets, strides or a rank change is "
                             "not modeled";
  if (failed(checkTensor(op, srcTy)) || failed(checkTensor(op, destTy)))
    return failure();
  FailureOr<Value> src = use(op, op.getSource());
  if (failed(src))
    return failure();
  ArrayRef<int64_t> offsets = op.getStaticOffsets();
  Value r;
  if (zeros.contains(op.getDest())) {
    // Into zeros: exactly tv.slice_grad (dy placed at start in zeros).
    r = tvir::SliceGradOp::create(b, op.getLoc(), tvType(destTy), *src,
                                  ints(offsets));
  } else {
    FailureOr<Value> dest = use(op, op.getDest());
    if (failed(dest))
      return failure();
    r = insertAt(op, *dest, *src, offsets, 0);
  }
  name[op.getResult()] = r;
  return success();
}

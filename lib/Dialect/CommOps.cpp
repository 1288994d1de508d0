//===- CommOps.cpp - collectives and point-to-point -----------------------===//
#include "TrainVerify/Dialect/TVOps.h"

#include "mlir/IR/TypeUtilities.h"

#include "llvm/ADT/DenseSet.h"

using namespace mlir;
using namespace mlir::tv;

static MeshOp enclosingMesh(Operation *op) {
  auto plan = op->getParentOfType<PlanOp>();
  return plan ? plan.getMeshOp() : MeshOp();
}

static ArrayRef<int64_t> enclosingRanks(Operation *op) {
  auto prog = op->getParentOfType<RankProgramOp>();
  return prog ? prog.getRanks() : ArrayRef<int64_t>();
}

static ArrayRef<int64_t> shapeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}

/// Group of `rank` for a collective with the given group attributes.
static SmallVector<int64_t> groupOf(Operation *op, ArrayAttr axes,
                                    ArrayAttr rankGroups, int64_t rank) {
  if (rankGroups) {
    for (Attribute g : rankGroups) {
      auto arr = dyn_cast<DenseI64ArrayAttr>(g);
      if (arr && llvm::is_contained(arr.asArrayRef(), rank)) {
        SmallVector<int64_t> group(arr.asArrayRef());
        llvm::sort(group);
        return group;
      }
    }
    return {};
  }
  MeshOp mesh = enclosingMesh(op);
  if (!mesh || !axes)
    return {};
  // A stage folded along an axis keeps coordinate 0 only: along that axis
  // the group is the rank alone (see PlanOp's `folded`).
  ArrayAttr folded = op->getParentOfType<PlanOp>().getFoldedAttr();
  SmallVector<StringRef> names;
  for (Attribute a : axes)
    if (!folded || !llvm::is_contained(folded, a))
      names.push_back(cast<StringAttr>(a).getValue());
  return mesh.getAxisGroup(rank, names);
}

/// Checks the group attributes; returns the group size (0 if unknown).
static FailureOr<int64_t> verifyGroup(Operation *op, ArrayAttr axes,
                                      ArrayAttr rankGroups) {
  if (!axes == !rankGroups)
    return op->emitOpError()
           << "must name its group with exactly one of 'axes' or "
              "'rank_groups'";
  MeshOp mesh = enclosingMesh(op);
  if (axes) {
    if (axes.empty())
      return op->emitOpError() << "group axes must not be empty";
    if (!mesh)
      return 0;
    int64_t size = 1;
    llvm::DenseSet<int64_t> seen;
    for (Attribute a : axes) {
      StringRef name = cast<StringAttr>(a).getValue();
      int64_t idx = mesh.getAxisIndex(name);
      if (idx < 0)
        return op->emitOpError() << "group axis '" << name
                                 << "' is not an axis of mesh @"
                                 << mesh.getSymName();
      if (!seen.insert(idx).second)
        return op->emitOpError() << "group axis '" << name << "' is repeated";
      size *= mesh.getSizes()[idx];
    }
    return size;
  }
  if (rankGroups.empty())
    return op->emitOpError() << "rank_groups must not be empty";
  int64_t size = -1;
  llvm::DenseSet<int64_t> seen;
  for (Attribute g : rankGroups) {
    auto arr = dyn_cast<DenseI64ArrayAttr>(g);
    if (!arr || arr.empty())
      return op->emitOpError() << "rank_groups entries must be non-empty "
                                  "array<i64> rank lists";
    if (size >= 0 && (int64_t)arr.size() != size)
      return op->emitOpError() << "rank_groups have different sizes ("
                               << size << " and " << arr.size() << ")";
    size = arr.size();
    for (int64_t r : arr.asArrayRef()) {
      if (mesh && (r < 0 || r >= mesh.getNumRanks()))
        return op->emitOpError() << "rank_groups names rank " << r
                                 << " outside the mesh";
      if (!seen.insert(r).second)
        return op->emitOpError() << "rank " << r
                                 << " appears in two rank_groups";
    }
  }
  for (int64_t r : enclosingRanks(op))
    if (!seen.contains(r))
      return op->emitOpError() << "rank " << r
                               << " runs this collective but is in no group";
  return size;
}

static std::string str(ArrayRef<int64_t> shape) {
  std::string s = "[";
  for (auto [i, d] : llvm::enumerate(shape))
    s += (i ? ", " : "") + std::to_string(d);
  return s + "]";
}

/// Result equals input except `dim`, which is multiplied by `mul` and
/// divided by `div` (checking divisibility).
static LogicalResult verifyResized(Operation *op, Value in, Value out,
                                   int64_t dim, int64_t mul, int64_t div,
                                   int64_t n) {
  ArrayRef<int64_t> is = shapeOf(in);
  if (getElementTypeOrSelf(in.getType()) != getElementTypeOrSelf(out.getType()))
    return op->emitOpError() << "moves data: result element type must equal "
                                "the input's";
  if (dim < 0 || dim >= (int64_t)is.size())
    return op->emitOpError() << "dim " << dim << " is out of range for rank "
                             << is.size();
  if (is[dim] % div)
    return op->emitOpError() << "dimension " << dim << " of size " << is[dim]
                             << " does not split into " << n
                             << " equal parts (group size " << n << ")";
  SmallVector<int64_t> expected(is);
  expected[dim] = is[dim] / div * mul;
  if (shapeOf(out) != ArrayRef<int64_t>(expected))
    return op->emitOpError() << "result has shape " << str(shapeOf(out))
                             << ", expected " << str(expected)
                             << " for group size " << n;
  return success();
}

#define TV_GROUP_METHODS(OpT)                                                  \
  SmallVector<int64_t> OpT::getGroup(int64_t rank) {                           \
    return groupOf(*this, getAxesAttr(), getRankGroupsAttr(), rank);           \
  }                                                                            \
  int64_t OpT::getGroupSize() {                                                \
    FailureOr<int64_t> n = verifyGroup(*this, getAxesAttr(),                   \
                                       getRankGroupsAttr());                   \
    return succeeded(n) ? *n : 0;                                              \
  }
TV_GROUP_METHODS(AllReduceOp)
TV_GROUP_METHODS(AllGatherOp)
TV_GROUP_METHODS(ReduceScatterOp)
TV_GROUP_METHODS(AllToAllOp)
TV_GROUP_METHODS(BroadcastCommOp)
TV_GROUP_METHODS(ReduceOp)
TV_GROUP_METHODS(ChunkOp)
#undef TV_GROUP_METHODS

LogicalResult AllReduceOp::verify() {
  if (failed(verifyGroup(*this, getAxesAttr(), getRankGroupsAttr())))
    return failure();
  if (getInput().getType() != getResult().getType())
    return emitOpError() << "result type must equal input type";
  return success();
}

LogicalResult AllGatherOp::verify() {
  FailureOr<int64_t> n = verifyGroup(*this, getAxesAttr(), getRankGroupsAttr());
  if (failed(n))
    return failure();
  if (std::optional<ArrayRef<int64_t>> order = getOrder()) {
    SmallVector<int64_t> sorted(*order);
    llvm::sort(sorted);
    for (auto [i, p] : llvm::enumerate(sorted))
      if (p != (int64_t)i)
        return emitOpError() << "'order' must be a permutation of the group "
                                "indices 0.."
                             << (int64_t)sorted.size() - 1;
    if (*n != 0 && (int64_t)order->size() != *n)
      return emitOpError() << "'order' has " << order->size()
                           << " entries for a group of " << *n;
  }
  if (*n == 0)
    return success();
  return verifyResized(*this, getInput(), getResult(), getDim(), *n, 1, *n);
}

LogicalResult ReduceScatterOp::verify() {
  FailureOr<int64_t> n = verifyGroup(*this, getAxesAttr(), getRankGroupsAttr());
  if (failed(n))
    return failure();
  if (getKind() == ReduceKind::max)
    return emitOpError() << "supports sum and avg only";
  if (*n == 0)
    return success();
  return verifyResized(*this, getInput(), getResult(), getDim(), 1, *n, *n);
}

LogicalResult ChunkOp::verify() {
  FailureOr<int64_t> n = verifyGroup(*this, getAxesAttr(), getRankGroupsAttr());
  if (failed(n))
    return failure();
  if (std::optional<int64_t> index = getIndex())
    if (*index < 0 || (*n != 0 && *index >= *n))
      return emitOpError() << "chunk index " << *index
                           << " is outside the group of " << *n;
  if (*n == 0)
    return success();
  return verifyResized(*this, getInput(), getResult(), getDim(), 1, *n, *n);
}

LogicalResult AllToAllOp::verify() {
  FailureOr<int64_t> n = verifyGroup(*this, getAxesAttr(), getRankGroupsAttr());
  if (failed(n))
    return failure();
  ArrayRef<int64_t> is = shapeOf(getInput());
  if (getElementTypeOrSelf(getInput().getType()) !=
      getElementTypeOrSelf(getResult().getType()))
    return emitOpError() << "moves data: result element type must equal the "
                            "input's";
  int64_t rank = is.size();
  for (int64_t d : {getSplitDim(), getConcatDim()})
    if (d < 0 || d >= rank)
      return emitOpError() << "dim " << d << " is out of range for rank "
                           << rank;
  if (*n == 0)
    return success();
  if (is[getSplitDim()] % *n)
    return emitOpError() << "split dimension of size " << is[getSplitDim()]
                         << " does not split into " << *n << " equal parts";
  SmallVector<int64_t> expected(is);
  expected[getSplitDim()] /= *n;
  expected[getConcatDim()] *= *n;
  if (shapeOf(getResult()) != ArrayRef<int64_t>(expected))
    return emitOpError() << "result has shape " << str(shapeOf(getResult()))
                         << ", expected " << str(expected) << " for group size "
                         << *n;
  return success();
}

template <typename OpT> static LogicalResult verifyRooted(OpT op) {
  FailureOr<int64_t> n =
      verifyGroup(op, op.getAxesAttr(), op.getRankGroupsAttr());
  if (failed(n))
    return failure();
  if (op.getInput().getType() != op.getResult().getType())
    return op.emitOpError() << "result type must equal input type";
  if (*n && ((int64_t)op.getRoot() < 0 || (int64_t)op.getRoot() >= *n))
    return op.emitOpError() << "root " << op.getRoot()
                            << " is not a group index (group size " << *n
                            << ")";
  return success();
}
LogicalResult BroadcastCommOp::verify() { return verifyRooted(*this); }
LogicalResult ReduceOp::verify() { return verifyRooted(*this); }

//===----------------------------------------------------------------------===//
// Point-to-point
//===----------------------------------------------------------------------===//

static int64_t peerOf(Operation *op, std::optional<int64_t> peer,
                      std::optional<StringRef> axis,
                      std::optional<int64_t> offset,
                      std::optional<ArrayRef<int64_t>> shift, int64_t rank) {
  if (peer)
    return *peer;
  MeshOp mesh = enclosingMesh(op);
  if (!mesh)
    return -1;
  SmallVector<int64_t> coords = mesh.getCoords(rank);
  if (shift) {
    if (shift->size() != coords.size())
      return -1;
    for (auto [c, d] : llvm::zip(coords, *shift))
      c += d;
  } else {
    if (!axis || !offset)
      return -1;
    int64_t idx = mesh.getAxisIndex(*axis);
    if (idx < 0)
      return -1;
    coords[idx] += *offset;
  }
  for (auto [c, n] : llvm::zip(coords, mesh.getSizes()))
    if (c < 0 || c >= n)
      return -1;
  return mesh.getRank(coords);
}

static LogicalResult verifyPeer(Operation *op, std::optional<int64_t> peer,
                                std::optional<StringRef> axis,
                                std::optional<int64_t> offset,
                                std::optional<ArrayRef<int64_t>> shift) {
  bool relative = axis || offset;
  if ((int)peer.has_value() + (int)relative + (int)shift.has_value() != 1)
    return op->emitOpError() << "needs exactly one of 'peer', 'peer_axis' "
                                "with 'peer_offset', or 'peer_shift'";
  if (relative && !(axis && offset))
    return op->emitOpError() << "needs both 'peer_axis' and 'peer_offset'";
  MeshOp mesh = enclosingMesh(op);
  if (!mesh)
    return success();
  if (axis && mesh.getAxisIndex(*axis) < 0)
    return op->emitOpError() << "peer axis '" << *axis
                             << "' is not an axis of mesh @"
                             << mesh.getSymName();
  if (shift && shift->size() != mesh.getSizes().size())
    return op->emitOpError() << "'peer_shift' has " << shift->size()
                             << " offsets for the " << mesh.getSizes().size()
                             << " axes of mesh @" << mesh.getSymName();
  for (int64_t r : enclosingRanks(op)) {
    int64_t p = peerOf(op, peer, axis, offset, shift, r);
    if (p < 0 || p >= mesh.getNumRanks())
      return op->emitOpError() << "has no peer on the mesh for rank " << r;
    if (p == r)
      return op->emitOpError() << "on rank " << r << " names itself as peer";
  }
  return success();
}

int64_t SendOp::getPeerOf(int64_t rank) {
  return peerOf(*this, getPeer(), getPeerAxis(), getPeerOffset(),
                getPeerShift(), rank);
}
int64_t RecvOp::getPeerOf(int64_t rank) {
  return peerOf(*this, getPeer(), getPeerAxis(), getPeerOffset(),
                getPeerShift(), rank);
}
LogicalResult SendOp::verify() {
  return verifyPeer(*this, getPeer(), getPeerAxis(), getPeerOffset(),
                    getPeerShift());
}
LogicalResult RecvOp::verify() {
  return verifyPeer(*this, getPeer(), getPeerAxis(), getPeerOffset(),
                    getPeerShift());
}

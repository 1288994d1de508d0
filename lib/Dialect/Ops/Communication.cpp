//===- Communication.cpp - collectives and point-to-point -----------------===//
//
// Collectives (evaluated once per group instance) and send/recv (matched by
// the executor): their verifiers, their meaning and their shape rules.
//
//===----------------------------------------------------------------------===//
#include "OpFamily.h"

#include "mlir/IR/TypeUtilities.h"

#include "llvm/ADT/DenseSet.h"

using namespace mlir;
using namespace mlir::tv;
using namespace mlir::tv::ops;

static MeshOp enclosingMesh(Operation *op) {
  auto plan = op->getParentOfType<PlanOp>();
  return plan ? plan.getMeshOp() : MeshOp();
}

/// The mesh of the enclosing plan, through the verifier's symbol tables.
static MeshOp meshOf(Operation *op, SymbolTableCollection &symbols) {
  auto plan = op->getParentOfType<PlanOp>();
  return plan
             ? symbols.lookupNearestSymbolFrom<MeshOp>(plan, plan.getMeshAttr())
             : MeshOp();
}

static ArrayRef<int64_t> enclosingRanks(Operation *op) {
  auto prog = op->getParentOfType<RankProgramOp>();
  return prog ? prog.getRanks() : ArrayRef<int64_t>();
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
                                      ArrayAttr rankGroups, MeshOp mesh) {
  if (!axes == !rankGroups)
    return op->emitOpError()
           << "must name its group with exactly one of 'axes' or "
              "'rank_groups'";
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
        return op->emitOpError()
               << "group axis '" << name << "' is not an axis of mesh @"
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
      return op->emitOpError() << "rank_groups have different sizes (" << size
                               << " and " << arr.size() << ")";
    size = arr.size();
    for (int64_t r : arr.asArrayRef()) {
      if (mesh && (r < 0 || r >= mesh.getNumRanks()))
        return op->emitOpError()
               << "rank_groups names rank " << r << " outside the mesh";
      if (!seen.insert(r).second)
        return op->emitOpError()
               << "rank " << r << " appears in two rank_groups";
    }
  }
  for (int64_t r : enclosingRanks(op))
    if (!seen.contains(r))
      return op->emitOpError()
             << "rank " << r << " runs this collective but is in no group";
  return size;
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
    return op->emitOpError()
           << "dim " << dim << " is out of range for rank " << is.size();
  if (is[dim] % div)
    return op->emitOpError() << "dimension " << dim << " of size " << is[dim]
                             << " does not split into " << n
                             << " equal parts (group size " << n << ")";
  SmallVector<int64_t> expected(is);
  expected[dim] = is[dim] / div * mul;
  if (shapeOf(out) != ArrayRef<int64_t>(expected))
    return op->emitOpError()
           << "result has shape " << str(shapeOf(out)) << ", expected "
           << str(expected) << " for group size " << n;
  return success();
}

#define TV_GROUP_METHODS(OpT)                                                  \
  SmallVector<int64_t> OpT::getGroup(int64_t rank) {                           \
    return groupOf(*this, getAxesAttr(), getRankGroupsAttr(), rank);           \
  }                                                                            \
  int64_t OpT::getGroupSize() {                                                \
    FailureOr<int64_t> n = verifyGroup(                                        \
        *this, getAxesAttr(), getRankGroupsAttr(), enclosingMesh(*this));      \
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

LogicalResult AllReduceOp::verifySymbolUses(SymbolTableCollection &symbols) {
  if (failed(verifyGroup(*this, getAxesAttr(), getRankGroupsAttr(),
                         meshOf(*this, symbols))))
    return failure();
  return success();
}

// Type checks that need no mesh stay local.
LogicalResult AllReduceOp::verify() {
  if (getInput().getType() != getResult().getType())
    return emitOpError() << "result type must equal input type";
  Type elt = getInput().getType().getElementType();
  bool integer = isa<IntegerType>(elt);
  ReduceKind k = getKind();
  if (!integer && k != ReduceKind::sum && k != ReduceKind::avg &&
      k != ReduceKind::max)
    return emitOpError() << "'" << stringifyReduceKind(k)
                         << "' reduces integers only";
  if (integer && k == ReduceKind::avg)
    return emitOpError() << "'avg' of integers has no exact meaning";
  return success();
}
LogicalResult BroadcastCommOp::verify() {
  if (getInput().getType() != getResult().getType())
    return emitOpError() << "result type must equal input type";
  return success();
}
LogicalResult ReduceOp::verify() {
  if (getInput().getType() != getResult().getType())
    return emitOpError() << "result type must equal input type";
  return success();
}

LogicalResult AllGatherOp::verifySymbolUses(SymbolTableCollection &symbols) {
  FailureOr<int64_t> n = verifyGroup(*this, getAxesAttr(), getRankGroupsAttr(),
                                     meshOf(*this, symbols));
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

LogicalResult
ReduceScatterOp::verifySymbolUses(SymbolTableCollection &symbols) {
  FailureOr<int64_t> n = verifyGroup(*this, getAxesAttr(), getRankGroupsAttr(),
                                     meshOf(*this, symbols));
  if (failed(n))
    return failure();
  if (!isLinearReduceKind(getKind()))
    return emitOpError() << "supports sum and avg only";
  if (*n == 0)
    return success();
  return verifyResized(*this, getInput(), getResult(), getDim(), 1, *n, *n);
}

LogicalResult ChunkOp::verifySymbolUses(SymbolTableCollection &symbols) {
  FailureOr<int64_t> n = verifyGroup(*this, getAxesAttr(), getRankGroupsAttr(),
                                     meshOf(*this, symbols));
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

LogicalResult AllToAllOp::verifySymbolUses(SymbolTableCollection &symbols) {
  FailureOr<int64_t> n = verifyGroup(*this, getAxesAttr(), getRankGroupsAttr(),
                                     meshOf(*this, symbols));
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

template <typename OpT>
static LogicalResult verifyRooted(OpT op, SymbolTableCollection &symbols) {
  FailureOr<int64_t> n = verifyGroup(
      op, op.getAxesAttr(), op.getRankGroupsAttr(), meshOf(op, symbols));
  if (failed(n))
    return failure();
  if (*n && ((int64_t)op.getRoot() < 0 || (int64_t)op.getRoot() >= *n))
    return op.emitOpError()
           << "root " << op.getRoot() << " is not a group index (group size "
           << *n << ")";
  return success();
}
LogicalResult
BroadcastCommOp::verifySymbolUses(SymbolTableCollection &symbols) {
  return verifyRooted(*this, symbols);
}
LogicalResult ReduceOp::verifySymbolUses(SymbolTableCollection &symbols) {
  return verifyRooted(*this, symbols);
}

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
    return op->emitOpError()
           << "peer axis '" << *axis << "' is not an axis of mesh @"
           << mesh.getSymName();
  if (shift && shift->size() != mesh.getSizes().size())
    return op->emitOpError()
           << "'peer_shift' has " << shift->size() << " offsets for the "
           << mesh.getSizes().size() << " axes of mesh @" << mesh.getSymName();
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

LogicalResult WaitOp::verify() {
  Operation *def = getHandle().getDefiningOp();
  if (!def || !def->hasAttr(kAsyncAttrName) ||
      !(isa<RecvOp>(def) ||
        (isa<CollectiveOpInterface>(def) && !isa<ChunkOp>(def))))
    return emitOpError() << "waits on a value that no asynchronous "
                            "collective or receive (`async`) produces";
  return success();
}

//===----------------------------------------------------------------------===//
// Meaning (one group instance: operand and result i are member i's)
//===----------------------------------------------------------------------===//

/// Piece i of n along `dim`.
template <typename D>
static Tensor<typename D::V> chunkOf(Evaluator<D> &ev,
                                     const Tensor<typename D::V> &x,
                                     int64_t dim, int64_t i, int64_t n) {
  Shape cs = x.shape;
  cs[dim] /= n;
  Tensor<typename D::V> res = ev.make(cs);
  Shape strides = computeStrides(cs), xStrides = computeStrides(x.shape);
  for (int64_t k = 0, end = res.data.size(); k < end; ++k) {
    Shape idx = delinearize(k, strides);
    idx[dim] += i * cs[dim];
    res.data[k] = x.data[linearize(idx, xStrides)];
  }
  return res;
}

/// The parts concatenated along `dim`.
template <typename D>
static Tensor<typename D::V>
concatOf(Evaluator<D> &ev, ArrayRef<Tensor<typename D::V>> parts, int64_t dim) {
  Shape rs = parts[0].shape;
  rs[dim] *= parts.size();
  Tensor<typename D::V> res = ev.make(rs);
  Shape rStrides = computeStrides(rs);
  for (auto [p, x] : llvm::enumerate(parts)) {
    Shape strides = computeStrides(x.shape);
    for (int64_t k = 0, end = x.data.size(); k < end; ++k) {
      Shape idx = delinearize(k, strides);
      idx[dim] += p * x.shape[dim];
      res.data[linearize(idx, rStrides)] = x.data[k];
    }
  }
  return res;
}

/// The sum of every member's operand, divided by the group size for `avg`.
template <typename D>
static Tensor<typename D::V> reduceSum(Evaluator<D> &ev, bool average) {
  Tensor<typename D::V> acc = *ev.in[0];
  int64_t n = ev.in.size();
  // Each element summed over the members at once (Domains.h: linear in the
  // terms' size, where a chain of additions is quadratic in n).
  SmallVector<typename D::V> xs(n);
  for (size_t k = 0; k < acc.data.size() && n > 1; ++k) {
    for (int64_t i = 0; i < n; ++i)
      xs[i] = ev.in[i]->data[k];
    acc.data[k] = ev.d.sum(xs);
  }
  if (average)
    for (auto &v : acc.data)
      v = ev.d.divInt(v, n);
  return acc;
}

template <typename D>
static EvalStatus evaluateGroup(AllReduceOp o, Evaluator<D> &ev) {
  int64_t n = ev.in.size();
  if (isLinearReduceKind(o.getKind())) {
    ev.out.assign(n, reduceSum(ev, o.getKind() == ReduceKind::avg));
    return std::nullopt;
  }
  // Integers: the kind's operation on n-bit values (max and min signed).
  std::optional<sym::Fn> fn;
  unsigned width = 0;
  if (auto it = dyn_cast<IntegerType>(o.getInput().getType().getElementType())) {
    width = it.getWidth();
    switch (o.getKind()) {
    case ReduceKind::max: fn = sym::Fn::IMaxS; break;
    case ReduceKind::min: fn = sym::Fn::IMinS; break;
    case ReduceKind::band: fn = sym::Fn::IAnd; break;
    case ReduceKind::bor: fn = sym::Fn::IOr; break;
    case ReduceKind::bxor: fn = sym::Fn::IXor; break;
    default: break;
    }
  }
  if (!fn && o.getKind() != ReduceKind::max)
    return std::string("all_reduce '") +
           stringifyReduceKind(o.getKind()).str() + "' of floats";
  Tensor<typename D::V> acc = ev.make(ev.in[0]->shape);
  for (size_t k = 0; k < acc.data.size(); ++k) {
    SmallVector<typename D::V> xs;
    for (int64_t i = 0; i < n; ++i)
      xs.push_back(ev.in[i]->data[k]);
    acc.data[k] = fn ? ev.d.intOp(*fn, width, xs) : ev.d.max(xs);
  }
  ev.out.assign(n, acc);
  return std::nullopt;
}
TV_EVALUATE_GROUP_BY_TEMPLATE(AllReduceOp)

// Members' pieces are concatenated in `order` (default: group order).
template <typename D>
static EvalStatus evaluateGroup(AllGatherOp o, Evaluator<D> &ev) {
  int64_t n = ev.in.size();
  std::optional<ArrayRef<int64_t>> order = o.getOrder();
  if (order && (int64_t)order->size() != n)
    return std::string("all_gather 'order' does not match its group");
  SmallVector<Tensor<typename D::V>> parts;
  for (int64_t p = 0; p < n; ++p)
    parts.push_back(*ev.in[order ? (*order)[p] : p]);
  ev.out.assign(
      n, concatOf(ev, ArrayRef<Tensor<typename D::V>>(parts), o.getDim()));
  return std::nullopt;
}
TV_EVALUATE_GROUP_BY_TEMPLATE(AllGatherOp)

template <typename D>
static EvalStatus evaluateGroup(ReduceScatterOp o, Evaluator<D> &ev) {
  int64_t n = ev.in.size();
  Tensor<typename D::V> acc = reduceSum(ev, o.getKind() == ReduceKind::avg);
  for (int64_t i = 0; i < n; ++i)
    ev.out.push_back(chunkOf(ev, acc, o.getDim(), i, n));
  return std::nullopt;
}
TV_EVALUATE_GROUP_BY_TEMPLATE(ReduceScatterOp)

template <typename D>
static EvalStatus evaluateGroup(AllToAllOp o, Evaluator<D> &ev) {
  int64_t n = ev.in.size();
  for (int64_t j = 0; j < n; ++j) {
    SmallVector<Tensor<typename D::V>> parts;
    for (int64_t i = 0; i < n; ++i)
      parts.push_back(chunkOf(ev, *ev.in[i], o.getSplitDim(), j, n));
    ev.out.push_back(
        concatOf(ev, ArrayRef<Tensor<typename D::V>>(parts), o.getConcatDim()));
  }
  return std::nullopt;
}
TV_EVALUATE_GROUP_BY_TEMPLATE(AllToAllOp)

template <typename D>
static EvalStatus evaluateGroup(BroadcastCommOp o, Evaluator<D> &ev) {
  ev.out.assign(ev.in.size(), *ev.in[o.getRoot()]);
  return std::nullopt;
}
TV_EVALUATE_GROUP_BY_TEMPLATE(BroadcastCommOp)

// Only the root receives the sum; the others' results are undefined.
template <typename D>
static EvalStatus evaluateGroup(ReduceOp o, Evaluator<D> &ev) {
  for (int64_t i = 0, n = ev.in.size(); i < n; ++i) {
    if (i == (int64_t)o.getRoot()) {
      ev.out.push_back(reduceSum(ev, false));
      continue;
    }
    Tensor<typename D::V> u = ev.make(ev.in[i]->shape);
    for (auto &v : u.data)
      v = ev.d.undef();
    ev.out.push_back(std::move(u));
  }
  return std::nullopt;
}
TV_EVALUATE_GROUP_BY_TEMPLATE(ReduceOp)

// Chunk is local: member i keeps piece i of its own operand.
template <typename D>
static EvalStatus evaluateGroup(ChunkOp o, Evaluator<D> &ev) {
  for (int64_t i = 0, n = ev.in.size(); i < n; ++i)
    ev.out.push_back(chunkOf(ev, *ev.in[i], o.getDim(), i, n));
  return std::nullopt;
}
TV_EVALUATE_GROUP_BY_TEMPLATE(ChunkOp)

//===----------------------------------------------------------------------===//
// Shape rules: a resized dimension keeps its ratio to the operand's.
//===----------------------------------------------------------------------===//

void AllReduceOp::addShapeConstraints(ShapeConstraints &c) {
  c.equalShapes(*this, getInput(), getResult());
}
void BroadcastCommOp::addShapeConstraints(ShapeConstraints &c) {
  c.equalShapes(*this, getInput(), getResult());
}
void ReduceOp::addShapeConstraints(ShapeConstraints &c) {
  c.equalShapes(*this, getInput(), getResult());
}

void AllGatherOp::addShapeConstraints(ShapeConstraints &c) {
  Value in = getInput(), res = getResult();
  int64_t dim = getDim(), n = shapeOf(res)[dim] / shapeOf(in)[dim];
  for (unsigned d = 0; d < rankOf(res); ++d)
    if ((int64_t)d == dim)
      c.linear(*this, {{1, key(res, d)}}, {{n, key(in, d)}});
    else
      c.equal(*this, key(res, d), key(in, d));
}

/// The result is piece of the operand along `dim`.
static void splitShapeRule(Operation *o, int64_t dim, ShapeConstraints &c) {
  Value in = o->getOperand(0), res = o->getResult(0);
  int64_t n = shapeOf(in)[dim] / shapeOf(res)[dim];
  for (unsigned d = 0; d < rankOf(res); ++d)
    if ((int64_t)d == dim)
      c.linear(o, {{1, key(in, d)}}, {{n, key(res, d)}});
    else
      c.equal(o, key(res, d), key(in, d));
}
void ReduceScatterOp::addShapeConstraints(ShapeConstraints &c) {
  splitShapeRule(*this, getDim(), c);
}
void ChunkOp::addShapeConstraints(ShapeConstraints &c) {
  splitShapeRule(*this, getDim(), c);
}

void AllToAllOp::addShapeConstraints(ShapeConstraints &c) {
  Value in = getInput(), res = getResult();
  int64_t s = getSplitDim(), cd = getConcatDim();
  if (s == cd)
    return c.equalShapes(*this, in, res);
  int64_t n = shapeOf(in)[s] / shapeOf(res)[s];
  for (unsigned d = 0; d < rankOf(res); ++d)
    if ((int64_t)d == s)
      c.linear(*this, {{1, key(in, d)}}, {{n, key(res, d)}});
    else if ((int64_t)d == cd)
      c.linear(*this, {{1, key(res, d)}}, {{n, key(in, d)}});
    else
      c.equal(*this, key(res, d), key(in, d));
}

//===- NnScalerTransfers.cpp - nnScaler's point-to-point primitives -------===//
//
// MovePrim and BroadcastPrim of an nnScaler plan as tv.send / tv.recv: the
// tag pairs a send with its recv by the tensor in flight (tid, mb).
//
//===----------------------------------------------------------------------===//
#include "NnScaler.h"

using namespace mlir;
using namespace mlir::tv;
using namespace mlir::tv::nnscaler;

LogicalResult
Importer::emitTransfer(Prog &p, GraphInfo &g, const json::Object &n,
                       StringRef op, const std::string &path, Location loc,
                       ArrayRef<TRef> ins, ArrayRef<TRef> outs,
                       llvm::function_ref<FailureOr<Value>(size_t)> in) {
  const json::Object *kw = n.getObject("kwargs");
  auto outTy = [&](size_t i) { return typeOf(g, outs[i]); };
  // The halves of a point-to-point transfer (MovePrim, BroadcastPrim): the
  // tag pairs a send with its recv by the tensor in flight (tid, mb).
  // A program of several ranks names its peer as a shift of coordinates
  // (the same for every translate), a program of one rank explicitly.
  auto peerAttrs =
      [&](int64_t peer) -> std::pair<IntegerAttr, DenseI64ArrayAttr> {
    if (p.ranks.size() <= 1)
      return {b.getI64IntegerAttr(peer), DenseI64ArrayAttr()};
    auto coords = [&](int64_t r) {
      return SmallVector<int64_t>{
          r / planRanks, r / meshSizes[2] % meshSizes[1], r % meshSizes[2]};
    };
    SmallVector<int64_t> a = coords(p.rank), c = coords(peer), shift;
    for (auto [x, y] : llvm::zip(a, c))
      shift.push_back(y - x);
    return {IntegerAttr(), b.getDenseI64ArrayAttr(shift)};
  };
  auto sendTo = [&](Value x, int64_t dst) {
    auto [peer, shift] = peerAttrs(dst);
    auto s = SendOp::create(
        b, loc, x, peer, StringAttr(), IntegerAttr(),
        b.getI64IntegerAttr(outs[0].tid * 1000 + outs[0].mb + 1), shift);
    setMicroBatch(s, outs[0].mb);
  };
  auto recvFrom = [&](int64_t src) {
    auto [peer, shift] = peerAttrs(src);
    auto r = RecvOp::create(
        b, loc, outTy(0), peer, StringAttr(), IntegerAttr(),
        b.getI64IntegerAttr(ins[0].tid * 1000 + ins[0].mb + 1), shift);
    setMicroBatch(r, outs[0].mb);
    define(p, outs[0], r);
  };
  if (op == "MovePrim") {
    const json::Object *p2p = n.getObject("p2p");
    std::optional<StringRef> role = p2p ? p2p->getString("role") : std::nullopt;
    std::optional<int64_t> src = p2p ? p2p->getInteger("src") : std::nullopt;
    std::optional<int64_t> dst = p2p ? p2p->getInteger("dst") : std::nullopt;
    if (!role || !src || !dst || ins.size() != 1 || outs.size() != 1)
      return emitError(loc) << "nnscaler import: at " << path
                            << ": MovePrim needs p2p {src, dst, role} and one "
                               "input and output";
    if (*role == "send") {
      auto x = in(0);
      if (failed(x))
        return failure();
      sendTo(*x, *dst);
    } else if (*role == "recv") {
      recvFrom(*src);
    } else {
      return emitError(loc) << "nnscaler import: at " << path
                            << ".p2p.role: expected 'send' or 'recv'";
    }
    return success();
  }
  // BroadcastPrim.
  // The source sends its tensor to every other rank of `kwargs.ranks`;
  // each of them receives it (nnScaler broadcasts the loss this way to
  // the first pipeline stage). Written as point-to-point, so a wrong
  // source or member list is a dataflow error like a wrong MovePrim.
  const json::Object *p2p = n.getObject("p2p");
  std::optional<StringRef> role = p2p ? p2p->getString("role") : std::nullopt;
  std::optional<int64_t> src = p2p ? p2p->getInteger("src") : std::nullopt;
  const json::Array *ranks = kw ? kw->getArray("ranks") : nullptr;
  if (!role || !src || !ranks || ins.size() != 1 || outs.size() != 1)
    return emitError(loc) << "nnscaler import: at " << path
                          << ": BroadcastPrim needs p2p {src, role}, "
                             "kwargs.ranks and one input and output";
  SmallVector<int64_t> members;
  for (const json::Value &r : *ranks) {
    std::optional<int64_t> m = r.getAsInteger();
    if (!m || *m < 0)
      return emitError(loc) << "nnscaler import: at " << path
                            << ".kwargs.ranks: expected rank numbers";
    members.push_back(*m);
  }
  if (!llvm::is_contained(members, *src) ||
      !llvm::is_contained(members, p.rank))
    return emitError(loc) << "nnscaler import: at " << path
                          << ": broadcast source " << *src << " and rank "
                          << p.rank << " must both be in kwargs.ranks";
  if (*role == "send") {
    if (*src != p.rank)
      return emitError(loc)
             << "nnscaler import: at " << path << ": rank " << p.rank
             << " sends a broadcast whose source is " << *src;
    auto x = in(0);
    if (failed(x))
      return failure();
    llvm::sort(members);
    for (int64_t dst : members)
      if (dst != p.rank)
        sendTo(*x, dst);
  } else if (*role == "recv") {
    recvFrom(*src);
  } else {
    return emitError(loc) << "nnscaler import: at " << path
                          << ".p2p.role: expected 'send' or 'recv'";
  }
  return success();
}

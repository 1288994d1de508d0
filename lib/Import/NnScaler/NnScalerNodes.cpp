//===- NnScalerNodes.cpp - one nnScaler node as tv ops --------------------===//
//
// The operator semantics of the nnScaler importer: each node of Gs or Gp
// becomes the tv ops that compute exactly what it computes (every operator
// of docs/nnscaler-import.md; an unknown one is an error naming the node).
//
//===----------------------------------------------------------------------===//
#include "NnScaler.h"
#include "TrainVerify/Dialect/Lineage.h"

#include "mlir/IR/Verifier.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"

using namespace mlir;
using namespace mlir::tv;
using namespace mlir::tv::nnscaler;

static double constAt(const json::Object &n, size_t i, bool *ok) {
  const json::Object *kw = n.getObject("kwargs");
  const json::Array *c = kw ? kw->getArray("__consts") : nullptr;
  if (!c || i >= c->size()) {
    *ok = false;
    return 0;
  }
  if (auto d = (*c)[i].getAsNumber())
    return *d;
  *ok = false;
  return 0;
}

LogicalResult Importer::emitNode(Prog &p, GraphInfo &g,
                                 const json::Object &n,
                                 const std::string &path) {
  std::string op = opName(n);
  Location loc =
      NameLoc::get(StringAttr::get(ctx, nodeLabel(n, p.rank)), nodeFileLoc);
  // `op` restates `opname`, `fw` its FW_/BW_ prefix.
  static const StringRef nodeKeys[] = {"cid", "in",     "out",   "irname",
                                       "kwargs", "mb", "opname", "group",
                                       "p2p"};
  static const StringRef nodeInfo[] = {"op", "fw"};
  if (failed(onlyKeys(n, path, nodeKeys, nodeInfo, loc)))
    return failure();
  if (const json::Value *pv = n.get("p2p")) {
    const json::Object *po = pv->getAsObject();
    if (!po)
      return emitError(loc) << "nnscaler import: at " << path
                            << ".p2p: expected an object";
    if (failed(onlyKeys(*po, path + ".p2p", {"src", "dst", "role"}, {}, loc)))
      return failure();
  }
  const json::Array *inArr = n.getArray("in"), *outArr = n.getArray("out");
  if (!inArr || !outArr)
    return emitError(loc) << "nnscaler import: at " << path
                          << ": node needs 'in' and 'out' lists";
  SmallVector<TRef> ins, outs;
  auto refs = [&](const json::Array &arr, StringRef key,
                  SmallVectorImpl<TRef> &into) -> LogicalResult {
    for (auto [i, v] : llvm::enumerate(arr)) {
      TRef t;
      if (!parseTRef(&v, t))
        return emitError(loc) << "nnscaler import: at " << path << "." << key
                              << "[" << i << "]: expected [rank, mb, tid, v]";
      into.push_back(t);
    }
    return success();
  };
  if (failed(refs(*inArr, "in", ins)) || failed(refs(*outArr, "out", outs)))
    return failure();
  const json::Object *kw = n.getObject("kwargs");
  auto in = [&](size_t i, int part = 0) -> FailureOr<Value> {
    if (i >= ins.size())
      return emitError(loc) << "nnscaler import: at " << path << ": '" << op
                            << "' needs at least " << i + 1 << " inputs";
    return get(p, g, ins[i], part,
               path + ".in[" + std::to_string(i) + "] (node " +
                   nodeLabel(n, p.rank) + ")",
               loc);
  };
  auto outTy = [&](size_t i) { return typeOf(g, outs[i]); };
  auto needOuts = [&](size_t k) -> LogicalResult {
    if (outs.size() != k)
      return emitError(loc) << "nnscaler import: at " << path << ": '" << op
                            << "' has " << outs.size() << " outputs, expected "
                            << k;
    return success();
  };
  auto rankOf = [](Value v) {
    return cast<RankedTensorType>(v.getType()).getRank();
  };
  // A kwarg the op's semantics do not read is refused by name.
  auto knownKwargs = [&](std::initializer_list<StringRef> known)
      -> LogicalResult {
    if (!kw)
      return success();
    for (auto &[k, v] : *kw)
      if (StringRef(k) != "__consts" && !llvm::is_contained(known, StringRef(k)))
        return emitError(loc) << "nnscaler import: at " << path << ".kwargs."
                              << StringRef(k) << ": '" << op
                              << "' has no semantics for this key; refusing";
    return success();
  };
  b.setInsertionPointToEnd(p.block);
  Operation *before = p.block->empty() ? nullptr : &p.block->back();
  bool ok = true;
  auto scalar = [&](size_t i) {
    double c = constAt(n, i, &ok);
    return c;
  };
  // Unary and copy-like ops: [x] -> [y].
  auto unary = [&](auto build) -> LogicalResult {
    if (failed(needOuts(1)))
      return failure();
    auto x = in(0);
    if (failed(x))
      return failure();
    define(p, outs[0], build(*x));
    return success();
  };
  // Backward ops of unary ops: [dy, x] -> [dx].
  auto unaryGrad = [&](auto build) -> LogicalResult {
    if (failed(needOuts(1)))
      return failure();
    auto dy = in(0), x = in(1);
    if (failed(dy) || failed(x))
      return failure();
    define(p, outs[0], build(*x, *dy));
    return success();
  };
  auto perm2 = [&](int64_t rank) {
    SmallVector<int64_t> perm;
    for (int64_t i = 0; i < rank; ++i)
      perm.push_back(i);
    int64_t d0 = kw ? kw->getInteger("dim0").value_or(0) : 0;
    int64_t d1 = kw ? kw->getInteger("dim1").value_or(0) : 0;
    if (d0 < 0)
      d0 += rank;
    if (d1 < 0)
      d1 += rank;
    if (d0 < 0 || d0 >= rank || d1 < 0 || d1 >= rank)
      return FailureOr<SmallVector<int64_t>>(failure());
    std::swap(perm[d0], perm[d1]);
    return FailureOr<SmallVector<int64_t>>(perm);
  };
  auto transposed = [&](Value x, ArrayRef<int64_t> perm) -> Value {
    auto ty = cast<RankedTensorType>(x.getType());
    SmallVector<int64_t> shape;
    for (int64_t q : perm)
      shape.push_back(ty.getDimSize(q));
    return TransposeOp::create(
        b, loc, RankedTensorType::get(shape, ty.getElementType()), x,
        b.getDenseI64ArrayAttr(perm));
  };
  auto maskMatrix = [&](Value m) -> Value {
    auto ty = cast<RankedTensorType>(m.getType());
    ArrayRef<int64_t> s = ty.getShape();
    if (s.size() == 2)
      return m;
    return ReshapeOp::create(
        b, loc, RankedTensorType::get(s.take_back(2), ty.getElementType()), m);
  };
  SmallVector<int64_t> groupMembers; // the group on the program's first rank
  auto groupOf = [&]() -> FailureOr<ArrayAttr> {
    auto gi = n.getInteger("group");
    if (!gi || !groups || *gi < 0 || *gi >= (int64_t)groups->size())
      return emitError(loc) << "nnscaler import: at " << path
                            << ": collective without a valid 'group'";
    const json::Object *grp = (*groups)[*gi].getAsObject();
    const json::Array *nodes = grp ? grp->getArray("nodes") : nullptr;
    if (!nodes)
      return emitError(loc) << "nnscaler import: at $.Gp.collective_groups["
                            << *gi << "]: group without 'nodes'";
    SmallVector<int64_t> members;
    for (const json::Value &m : *nodes) {
      const json::Array *pair = m.getAsArray();
      if (!pair || pair->empty() || !(*pair)[0].getAsInteger())
        return emitError(loc) << "nnscaler import: at $.Gp.collective_groups["
                              << *gi << "].nodes: expected [rank, index]";
      members.push_back(*(*pair)[0].getAsInteger());
    }
    llvm::sort(members);
    if (!llvm::is_contained(members, p.rank))
      return emitError(loc) << "nnscaler import: at " << path << ": rank "
                            << p.rank << " runs a collective of group " << *gi
                            << " but is not one of its members";
    groupMembers = members;
    return classGroups(p, members);
  };
  auto own = [&]() -> FailureOr<Value> {
    for (auto [i, t] : llvm::enumerate(ins))
      if (t.rank == p.rank)
        return get(p, g, t, 0,
                   path + ".in[" + std::to_string(i) + "] (node " +
                       nodeLabel(n, p.rank) + ")",
                   loc);
    return emitError(loc) << "nnscaler import: at " << path
                          << ": no input of the collective lives on rank "
                          << p.rank;
  };

  LogicalResult result = success();
  if (op == "DATALOADER") {
    if (failed(needOuts(1)))
      return failure();
    OpBuilder ib(ctx);
    if (p.lastInput)
      ib.setInsertionPointAfter(p.lastInput);
    else
      ib.setInsertionPointToStart(p.block);
    auto inOp = InputOp::create(ib, loc, outTy(0), name(outs[0], p.rank < 0));
    p.lastInput = inOp;
    p.values[Key{outs[0].mb, outs[0].tid, outs[0].v, 0}] = inOp.getResult();
    (p.rank < 0 ? specNames : namesByRank[p.rank])
        .insert(name(outs[0], p.rank < 0));
    inputNames[p.rank].insert(name(outs[0], p.rank < 0));
  } else if (op == "FW_embedding" || op == "BW_embedding") {
    bool fw = op == "FW_embedding";
    if (failed(needOuts(1)))
      return failure();
    auto a = in(0), c = in(1);
    if (failed(a) || failed(c))
      return failure();
    int64_t start = kw ? kw->getInteger("start").value_or(0) : 0;
    IntegerAttr off = start ? b.getI64IntegerAttr(start) : IntegerAttr();
    Value r;
    if (fw)
      r = EmbeddingOp::create(b, loc, outTy(0), *a, *c, StringAttr(), off);
    else
      r = EmbeddingGradOp::create(b, loc, outTy(0), *c, *a, StringAttr(), off);
    define(p, outs[0], r);
  } else if (op == "FW_create_mask") {
    if (failed(needOuts(1)))
      return failure();
    RankedTensorType ty = outTy(0);
    auto m = CausalMaskOp::create(
        b, loc,
        TypeRange{RankedTensorType::get(ty.getShape().take_back(2),
                                        ty.getElementType())},
        ValueRange{}, ArrayRef<NamedAttribute>{});
    define(p, outs[0], ReshapeOp::create(b, loc, ty, m));
  } else if (op == "FW_apply_mask") {
    auto x = in(0), m = in(1);
    if (failed(needOuts(1)) || failed(x) || failed(m))
      return failure();
    define(p, outs[0], ApplyMaskOp::create(b, loc, outTy(0), *x, maskMatrix(*m)));
  } else if (op == "BW_apply_mask") {
    auto dy = in(0), m = in(2);
    if (failed(needOuts(1)) || failed(dy) || failed(m))
      return failure();
    define(p, outs[0],
           ApplyMaskGradOp::create(b, loc, outTy(0), *dy, maskMatrix(*m)));
  } else if (op == "FW_multiref") {
    auto x = in(0);
    if (failed(x))
      return failure();
    for (auto [i, t] : llvm::enumerate(outs))
      define(p, t, CopyOp::create(b, loc, *x));
  } else if (op == "BW_multiref") {
    if (failed(needOuts(1)) || ins.empty())
      return failure();
    auto acc = in(0);
    if (failed(acc))
      return failure();
    Value s = *acc;
    for (size_t i = 1; i < ins.size(); ++i) {
      auto x = in(i);
      if (failed(x))
        return failure();
      s = AddOp::create(b, loc, s.getType(), s, *x);
    }
    if (ins.size() == 1)
      s = CopyOp::create(b, loc, s);
    define(p, outs[0], s);
  } else if (op == "FW_float" || op == "FW_to" || op == "FW_contiguous" ||
             op == "FW_identity" || op == "IdentityPrim" ||
             op == "BW_identity") {
    result = unary([&](Value x) { return CopyOp::create(b, loc, x); });
  } else if (op == "BW_float" || op == "BW_to" || op == "BW_contiguous") {
    result = unaryGrad([&](Value, Value dy) { return CopyOp::create(b, loc, dy); });
  } else if (op == "FW_pow") {
    double c = scalar(0);
    result = unary([&](Value x) {
      return PowOp::create(b, loc, x, b.getF64FloatAttr(c));
    });
  } else if (op == "BW_pow") {
    double c = scalar(0);
    result = unaryGrad([&](Value x, Value dy) {
      return PowGradOp::create(b, loc, x.getType(), x, dy, b.getF64FloatAttr(c));
    });
  } else if (op == "FW_mean" || op == "BW_mean") {
    bool fw = op == "FW_mean";
    SmallVector<int64_t> dims;
    const json::Array *d = kw ? kw->getArray("dim") : nullptr;
    std::optional<int64_t> single = kw ? kw->getInteger("dim") : std::nullopt;
    auto x = in(fw ? 0 : 1);
    if (failed(x) || failed(needOuts(1)))
      return failure();
    int64_t r = rankOf(*x);
    if (d)
      for (const json::Value &v : *d)
        dims.push_back(v.getAsInteger().value_or(0));
    else if (single)
      dims.push_back(*single);
    for (int64_t &v : dims)
      if (v < 0)
        v += r;
    bool keep = kw && kw->getBoolean("keepdim").value_or(false);
    if (fw) {
      define(p, outs[0],
             MeanOp::create(b, loc, outTy(0), *x, b.getDenseI64ArrayAttr(dims),
                            keep ? b.getUnitAttr() : UnitAttr()));
    } else {
      auto dy = in(0);
      if (failed(dy))
        return failure();
      define(p, outs[0],
             MeanGradOp::create(b, loc, outTy(0), *dy,
                                b.getDenseI64ArrayAttr(dims),
                                keep ? b.getUnitAttr() : UnitAttr()));
    }
  } else if (op == "FW_add" || op == "FW_mul") {
    bool add = op == "FW_add";
    if (failed(needOuts(1)))
      return failure();
    double alpha = kw ? kw->getNumber("alpha").value_or(1.0) : 1.0;
    auto a = in(0);
    if (failed(a))
      return failure();
    if (ins.size() == 1) {
      double c = scalar(0);
      Value r = add ? Value(AddScalarOp::create(b, loc, *a,
                                                b.getF64FloatAttr(alpha * c)))
                    : Value(ScaleOp::create(b, loc, *a, b.getF64FloatAttr(c)));
      define(p, outs[0], r);
    } else {
      auto c = in(1);
      if (failed(c))
        return failure();
      Value rhs = *c;
      if (add && alpha != 1.0)
        rhs = ScaleOp::create(b, loc, rhs, b.getF64FloatAttr(alpha));
      Value r = add ? Value(AddOp::create(b, loc, outTy(0), *a, rhs))
                    : Value(MulOp::create(b, loc, outTy(0), *a, rhs));
      define(p, outs[0], r);
    }
  } else if (op == "BW_add") {
    auto dy = in(0);
    if (failed(dy))
      return failure();
    double alpha = kw ? kw->getNumber("alpha").value_or(1.0) : 1.0;
    // [dy, x] (constant form) or [dy, a, b].
    for (size_t i = 0; i < outs.size(); ++i) {
      Value gI = *dy;
      if (i == 1 && alpha != 1.0)
        gI = ScaleOp::create(b, loc, gI, b.getF64FloatAttr(alpha));
      FailureOr<Value> reduced = unbroadcast(
          loc, gI, outTy(i).getShape(),
          path + ".out[" + std::to_string(i) + "] (node " +
              nodeLabel(n, p.rank) + ")");
      if (failed(reduced))
        return failure();
      gI = *reduced;
      if (gI == *dy)
        gI = CopyOp::create(b, loc, gI);
      define(p, outs[i], gI);
    }
  } else if (op == "BW_mul") {
    auto dy = in(0), a = in(1);
    if (failed(dy) || failed(a))
      return failure();
    if (ins.size() == 2) { // x * constant
      double c = scalar(0);
      define(p, outs[0], ScaleOp::create(b, loc, *dy, b.getF64FloatAttr(c)));
    } else {
      auto c = in(2);
      if (failed(c))
        return failure();
      Value opnd[2] = {*a, *c};
      for (size_t i = 0; i < outs.size() && i < 2; ++i) {
        Value other = opnd[1 - i];
        auto gt = cast<RankedTensorType>((*dy).getType());
        Value prod = MulOp::create(b, loc, gt, *dy, other);
        FailureOr<Value> reduced = unbroadcast(
            loc, prod, outTy(i).getShape(),
            path + ".out[" + std::to_string(i) + "] (node " +
                nodeLabel(n, p.rank) + ")");
        if (failed(reduced))
          return failure();
        define(p, outs[i], *reduced);
      }
    }
  } else if (op == "FW_rsqrt") {
    result = unary([&](Value x) { return RsqrtOp::create(b, loc, x); });
  } else if (op == "BW_rsqrt") {
    result = unaryGrad([&](Value x, Value dy) {
      return RsqrtGradOp::create(b, loc, x.getType(), x, dy);
    });
  } else if (op == "FW_silu") {
    result = unary([&](Value x) { return SiluOp::create(b, loc, x); });
  } else if (op == "BW_silu") {
    result = unaryGrad([&](Value x, Value dy) {
      return SiluGradOp::create(b, loc, x.getType(), x, dy);
    });
  } else if (op == "FW_div" || op == "BW_div") {
    double c = scalar(0);
    size_t xi = 0; // FW: x; BW: dy
    auto x = in(xi);
    if (failed(x) || failed(needOuts(1)))
      return failure();
    if (ins.size() > (op == "FW_div" ? 1u : 2u))
      return emitError(loc) << "nnscaler import: at " << path
                            << ": division by a tensor is not supported";
    define(p, outs[0], DivScalarOp::create(b, loc, *x, b.getF64FloatAttr(c)));
  } else if (op == "FW_linear") {
    auto x = in(0), w = in(1);
    if (failed(x) || failed(w) || failed(needOuts(1)))
      return failure();
    define(p, outs[0], LinearOp::create(b, loc, outTy(0), *x, *w, Value()));
  } else if (op == "BW_linear") {
    auto dy = in(0), x = in(1), w = in(2);
    if (failed(dy) || failed(x) || failed(w) || failed(needOuts(2)))
      return failure();
    auto lg = LinearGradOp::create(b, loc, (*x).getType(), (*w).getType(), *x,
                                   *w, *dy);
    define(p, outs[0], lg.getDinput());
    define(p, outs[1], lg.getDweight());
  } else if (op == "FW_matmul") {
    auto x = in(0), w = in(1);
    if (failed(x) || failed(w) || failed(needOuts(1)))
      return failure();
    define(p, outs[0], MatmulOp::create(b, loc, outTy(0), *x, *w));
  } else if (op == "BW_matmul") {
    auto dc = in(0), a = in(1), c = in(2);
    if (failed(dc) || failed(a) || failed(c) || failed(needOuts(2)))
      return failure();
    auto da = MatmulOp::create(b, loc, outTy(0), *dc, *c, UnitAttr(),
                               b.getUnitAttr());
    auto db = MatmulOp::create(b, loc, outTy(1), *a, *dc, b.getUnitAttr(),
                               UnitAttr());
    define(p, outs[0], da);
    define(p, outs[1], db);
  } else if (op == "FW_view" || op == "BW_view") {
    auto x = in(0);
    if (failed(x) || failed(needOuts(1)))
      return failure();
    define(p, outs[0], ReshapeOp::create(b, loc, outTy(0), *x));
  } else if (op == "FW_transpose" || op == "BW_transpose") {
    auto x = in(0);
    if (failed(x) || failed(needOuts(1)))
      return failure();
    auto perm = perm2(rankOf(*x));
    if (failed(perm))
      return emitError(loc) << "nnscaler import: at " << path
                            << ".kwargs: dim0 / dim1 outside a tensor of rank "
                            << rankOf(*x);
    define(p, outs[0], transposed(*x, *perm));
  } else if (op == "FW_softmax" || op == "BW_softmax") {
    bool fw = op == "FW_softmax";
    auto x = in(fw ? 0 : 1);
    if (failed(x) || failed(needOuts(1)))
      return failure();
    int64_t dim = kw ? kw->getInteger("dim").value_or(-1) : -1;
    if (dim < 0)
      dim += rankOf(*x);
    Value y = SoftmaxOp::create(b, loc, *x, b.getI64IntegerAttr(dim));
    if (fw) {
      define(p, outs[0], y);
    } else {
      auto dy = in(0);
      if (failed(dy))
        return failure();
      define(p, outs[0], SoftmaxGradOp::create(b, loc, y.getType(), y, *dy,
                                               b.getI64IntegerAttr(dim)));
    }
  } else if (op == "FW_sum" || op == "BW_sum") {
    if (failed(needOuts(1)))
      return failure();
    if (op == "FW_sum") {
      auto x = in(0);
      if (failed(x))
        return failure();
      SmallVector<int64_t> dims;
      for (int64_t i = 0; i < rankOf(*x); ++i)
        dims.push_back(i);
      auto s = SumOp::create(b, loc, RankedTensorType::get({}, b.getF32Type()),
                             *x, b.getDenseI64ArrayAttr(dims), UnitAttr());
      define(p, outs[0], ReshapeOp::create(b, loc, outTy(0), s));
    } else {
      auto dy = in(0);
      if (failed(dy))
        return failure();
      auto s = ReshapeOp::create(b, loc, RankedTensorType::get({}, b.getF32Type()),
                                 *dy);
      define(p, outs[0], BroadcastOp::create(b, loc, outTy(0), s));
    }
  } else if (op == "FW_apply_rotary_emb" || op == "BW_apply_rotary_emb") {
    bool fw = op == "FW_apply_rotary_emb";
    size_t fi = fw ? 2 : 4;
    auto re = in(fi, 1), im = in(fi, 2);
    if (failed(re) || failed(im) || failed(needOuts(2)))
      return failure();
    for (size_t k = 0; k < 2; ++k) {
      auto x = in(k);
      if (failed(x))
        return failure();
      if (rankOf(*x) != 4)
        return emitError(loc) << "nnscaler import: at " << path
                              << ": rotary input must be [batch, seq, heads, "
                                 "head_dim]";
      SmallVector<int64_t> perm{0, 2, 1, 3};
      Value xt = transposed(*x, perm);
      Value r = fw ? Value(RotaryOp::create(b, loc, xt.getType(), xt, *re, *im))
                   : Value(RotaryGradOp::create(b, loc, xt.getType(), xt, *re,
                                                *im));
      define(p, outs[k], transposed(r, perm));
    }
  } else if (op == "LOCAL_GRAD_ACCUM") {
    auto x = in(0), y = in(1);
    if (failed(x) || failed(y) || failed(needOuts(1)))
      return failure();
    define(p, outs[0], AddOp::create(b, loc, outTy(0), *x, *y));
  } else if (op == "AllReducePrim" || op == "CROSS_DP_WRED") {
    auto grp = groupOf();
    auto x = own();
    if (failed(grp) || failed(x) || failed(needOuts(1)))
      return failure();
    define(p, outs[0],
           AllReduceOp::create(b, loc, outTy(0), *x, ReduceKind::sum,
                               ArrayAttr(), *grp));
  } else if (op == "AllGatherPrim") {
    auto grp = groupOf();
    auto x = own();
    if (failed(grp) || failed(x) || failed(needOuts(1)))
      return failure();
    int64_t dim = kw ? kw->getInteger("dim").value_or(0) : 0;
    // The fused input list is sorted by the pieces' positions in the full
    // tensor (indmap): the result concatenates the pieces in that order,
    // whichever ranks hold them (nnScaler places tp shards out of rank order
    // on larger meshes). Record it as the gather order over group indices.
    ArrayRef<int64_t> members = groupMembers;
    SmallVector<int64_t> order;
    for (const TRef &t : ins) {
      auto pos = llvm::find(members, t.rank);
      if (pos == members.end() ||
          llvm::is_contained(order, pos - members.begin()))
        return emitError(loc) << "nnscaler import: at " << path
                              << ": all-gather input on rank " << t.rank
                              << " is not one piece of one group member";
      order.push_back(pos - members.begin());
    }
    if (order.size() != members.size())
      return emitError(loc) << "nnscaler import: at " << path << ": all-gather "
                            << "of " << members.size() << " members has "
                            << order.size() << " inputs";
    bool identity = llvm::all_of(llvm::enumerate(order), [](auto e) {
      return e.value() == (int64_t)e.index();
    });
    define(p, outs[0],
           AllGatherOp::create(b, loc, outTy(0), *x, dim,
                               identity ? DenseI64ArrayAttr()
                                        : b.getDenseI64ArrayAttr(order),
                               ArrayAttr(), *grp));
  } else if (op == "ChunkPrim") {
    auto x = in(0);
    if (failed(x) || failed(needOuts(1)))
      return failure();
    const json::Array *ranks = kw ? kw->getArray("ranks") : nullptr;
    SmallVector<int64_t> members;
    if (ranks)
      for (const json::Value &r : *ranks)
        members.push_back(r.getAsInteger().value_or(-1));
    // nnScaler writes the ranks of the first data-parallel replica into
    // every replica's prims: shift them to this rank's replica.
    if (!llvm::is_contained(members, p.rank) && planRanks > 0) {
      int64_t shift = p.rank / planRanks * planRanks;
      for (int64_t &m : members)
        if (m >= 0 && m < planRanks)
          m += shift;
    }
    llvm::sort(members);
    int64_t idx = kw ? kw->getInteger("__collective_idx").value_or(-1) : -1;
    auto pos = llvm::find(members, p.rank);
    if (pos == members.end() || idx < 0 || idx >= (int64_t)members.size())
      return emitError(loc) << "nnscaler import: at " << path
                            << ": chunk index " << idx << " of rank "
                            << p.rank << " is not one of the "
                            << members.size() << " chunks of its group";
    int64_t dim = kw ? kw->getInteger("dim").value_or(0) : 0;
    // A rank takes the chunk its node names; only where that is not its
    // position in the group is the index written out.
    define(p, outs[0],
           ChunkOp::create(b, loc, outTy(0), *x, dim,
                           idx == pos - members.begin()
                               ? IntegerAttr()
                               : b.getI64IntegerAttr(idx),
                           ArrayAttr(), classGroups(p, members)));
  } else if (op == "MovePrim" || op == "BroadcastPrim") {
    if (failed(emitTransfer(p, g, n, op, path, loc, ins, outs,
                            [&](size_t i) { return in(i); })))
      return failure();
  } else if (op == "FW_nns_moe_gate" || op == "BW_nns_moe_gate") {
    // DeepSeek-V3's router (nnScaler's gate_fw): FW [x, w] -> [weights,
    // indices]; BW [d weights, x, w] -> [dx, dw]. Every kwarg is modeled or
    // refused by name.
    bool fw = op == "FW_nns_moe_gate";
    if (failed(knownKwargs({"score_func", "bias", "n_groups", "topk_groups",
                            "topk", "route_scale"})))
      return failure();
    if (kw && kw->get("bias") && !kw->get("bias")->getAsNull())
      return emitError(loc) << "nnscaler import: at " << path
                            << ".kwargs.bias: a router score bias is not "
                               "modeled (only bias = null); refusing";
    std::optional<StringRef> sf = kw ? kw->getString("score_func")
                                     : std::nullopt;
    // Absent or malformed numbers read as 0 and fail the check below.
    auto integer = [&](StringRef key) {
      return kw ? kw->getInteger(key).value_or(0) : 0;
    };
    int64_t groups = integer("n_groups"), keep = integer("topk_groups"),
            k = integer("topk");
    double scale = kw ? kw->getNumber("route_scale").value_or(0.0) : 0.0;
    if (!sf || (*sf != "sigmoid" && *sf != "softmax") || groups < 1 ||
        keep < 1 || k < 1 || !(scale > 0))
      return emitError(loc) << "nnscaler import: at " << path
                            << ".kwargs: the gate needs score_func "
                               "('sigmoid' or 'softmax') and positive "
                               "n_groups, topk_groups, topk and route_scale";
    ScoreFunc f = *sf == "sigmoid" ? ScoreFunc::sigmoid : ScoreFunc::softmax;
    if (fw) {
      auto x = in(0), w = in(1);
      if (failed(x) || failed(w) || failed(needOuts(2)))
        return failure();
      auto gate = MoEGateOp::create(b, loc, outTy(0), outTy(1), *x, *w, f, k,
                                    groups, keep, llvm::APFloat(scale));
      define(p, outs[0], gate.getWeights());
      define(p, outs[1], gate.getIndices());
    } else {
      auto g = in(0), x = in(1), w = in(2);
      if (failed(g) || failed(x) || failed(w) || failed(needOuts(2)))
        return failure();
      auto gate = MoEGateGradOp::create(b, loc, *x, *w, *g, f, k, groups,
                                        keep, llvm::APFloat(scale));
      define(p, outs[0], gate.getDinput());
      define(p, outs[1], gate.getDweight());
    }
  } else if (op == "FW_nns_moe_gmm" || op == "BW_nns_moe_gmm") {
    // nnScaler's nnscaler_moe_gmm: FW [x, indices, weights, w1, w3, w2] ->
    // [y]; BW [dy, x, indices, weights, w1, w3, w2] -> [dx, d weights, dw1,
    // dw3, dw2]. The local experts are [local_expert_start, _end).
    bool fw = op == "FW_nns_moe_gmm";
    if (failed(knownKwargs(
            {"n_routed_experts", "local_expert_start", "local_expert_end"})))
      return failure();
    auto integer = [&](StringRef key) {
      return kw ? kw->getInteger(key).value_or(-1) : -1;
    };
    int64_t total = integer("n_routed_experts"),
            start = integer("local_expert_start"),
            end = integer("local_expert_end");
    if (start < 0 || end <= start || end > total)
      return emitError(loc) << "nnscaler import: at " << path
                            << ".kwargs: the expert matmul needs 0 <= "
                               "local_expert_start < local_expert_end <= "
                               "n_routed_experts";
    unsigned base = fw ? 0 : 1;
    SmallVector<Value> v;
    for (unsigned i = 0; i < base + 6; ++i) {
      auto x = in(i);
      if (failed(x))
        return failure();
      v.push_back(*x);
    }
    int64_t local = cast<RankedTensorType>(v[base + 3].getType()).getDimSize(0);
    if (local != end - start)
      return emitError(loc) << "nnscaler import: at " << path
                            << ": the expert weights hold " << local
                            << " experts, the kwargs name " << end - start
                            << " (local_expert_start " << start
                            << ", local_expert_end " << end << ")";
    if (fw) {
      if (failed(needOuts(1)))
        return failure();
      define(p, outs[0],
             MoEGmmOp::create(b, loc, outTy(0), v[0], v[1], v[2], v[3], v[4],
                              v[5], start));
    } else {
      if (failed(needOuts(5)))
        return failure();
      auto gg = MoEGmmGradOp::create(b, loc, v[0], v[1], v[2], v[3], v[4],
                                     v[5], v[6], start);
      for (unsigned i = 0; i < 5; ++i)
        define(p, outs[i], gg->getResult(i));
    }
  } else {
    return emitError(loc) << "nnscaler import: at " << path
                          << ": unknown operator '" << op << "' (irname '"
                          << n.getString("irname").value_or("?")
                          << "'); no semantics, refusing to skip it";
  }
  if (!ok)
    return emitError(loc) << "nnscaler import: at " << path
                          << ".kwargs.__consts: '" << op
                          << "' needs a numeric constant";
  if (failed(result))
    return failure();
  // Mark every op of this node with its micro-batch and its source node, so
  // that diagnostics name the node even after the IR is printed.
  auto mb = n.getInteger("mb");
  StringAttr src = b.getStringAttr(nodeAttr(n));
  auto first = before ? std::next(Block::iterator(before)) : p.block->begin();
  for (Operation &o : llvm::make_range(first, p.block->end())) {
    if (o.getLoc() != loc || isa<TagOp, OutputOp>(o))
      continue;
    // Gradient accumulation joins micro-batches and a weight reducer runs
    // once per step, after them, although the files give both a micro-batch:
    // they belong to none.
    if (mb && p.rank >= 0 && !getMicroBatch(&o) && op != "CROSS_DP_WRED" &&
        op != "LOCAL_GRAD_ACCUM")
      setMicroBatch(&o, *mb);
    o.setAttr(kSourceAttrName, src);
  }
  return success();
}

//===- ModelGenProg.h - the builder of tv programs --------------*- C++ -*-===//
//
// The op builder of the model-config generator (ModelGen.h): the tensor
// shapes, `Val` (one SSA value, its shape and element type) and `Prog` (the
// body of the spec or of one rank program, one method per tv op it
// appends, each built with the op's ODS builder).
//
// Every op is located where it stands in the module's listing (decision
// 108): "model-config.mlir", its line, and the column of its op name after
// `%name = ` (the value names `fresh` gives). A Prog counts its lines
// (inputs first, then the body, comments included) and the module's
// assembly (ModelGenPrograms.cpp) sets the locations once it knows where
// each body starts.
//
//===----------------------------------------------------------------------===//
#ifndef TRAINVERIFY_MODELGEN_MODELGENPROG_H
#define TRAINVERIFY_MODELGEN_MODELGENPROG_H

#include "TrainVerify/Dialect/TVDialect.h"
#include "TrainVerify/Dialect/TVOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"
#include <algorithm>
#include <cctype>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace mlir::tv::modelgen {

using Shape = std::vector<int64_t>;

//===----------------------------------------------------------------------===//
// Values
//===----------------------------------------------------------------------===//

/// One SSA value: its name in the listing (which places the columns of
/// later ops), its shape, its element type ("f32", "i64" or "i1") and the
/// value itself.
struct Val {
  std::string n;
  Shape s;
  std::string et = "f32";
  Value v;
};

/// The ranked tensor type of shape `s` and element type `et`.
inline RankedTensorType tensorOf(MLIRContext *ctx, const Shape &s,
                                 StringRef et = "f32") {
  Type e = et == "f32"   ? Type(Float32Type::get(ctx))
           : et == "i64" ? Type(IntegerType::get(ctx, 64))
                         : Type(IntegerType::get(ctx, 1));
  return RankedTensorType::get(s, e);
}

//===----------------------------------------------------------------------===//
// Prog
//===----------------------------------------------------------------------===//

/// The body of the spec or of one rank program. Every op method appends one
/// op; `mb` (>= 0) puts {mb = k : i64} on the ops built while it is set.
/// Inputs go to the head of the body (after the inputs before them).
class Prog {
public:
  Prog(MLIRContext *ctx, std::string indent)
      : ctx(ctx), b(ctx), block(std::make_unique<Block>()),
        ind(std::move(indent)) {
    b.setInsertionPointToEnd(block.get());
  }
  int64_t mb = -1;

  /// The body, handed to the op that holds it (once).
  std::unique_ptr<Block> takeBlock() { return std::move(block); }
  Block &body() { return *block; }
  /// Moves `ops` (in their order) to just after `after`: each op of the
  /// body then takes the listing line of its new place (comments keep
  /// theirs).
  void moveAfter(ArrayRef<Operation *> ops, Operation *after) {
    for (Operation *op : llvm::reverse(ops))
      op->moveAfter(after);
    std::vector<int64_t> at;
    std::map<Operation *, Placed *> byOp;
    for (Placed &p : placed)
      if (!p.head) {
        at.push_back(p.line);
        byOp[p.op] = &p;
      }
    std::sort(at.begin(), at.end());
    size_t i = 0;
    for (Operation &op : *block)
      if (auto it = byOp.find(&op); it != byOp.end())
        it->second->line = at[i++];
  }
  /// The body's lines in the listing: its inputs, then its other ops and
  /// its comments.
  int64_t lines() const { return nHead + nBody; }
  /// Locates every op: the body's first line is `first`.
  void setLocations(StringAttr file, int64_t first) {
    for (const Placed &p : placed)
      p.op->setLoc(FileLineColLoc::get(
          file, (unsigned)(first + (p.head ? 0 : nHead) + p.line), p.col));
  }

  Val fresh(StringRef hint, Shape s, StringRef et = "f32") {
    std::string h;
    for (char c : hint)
      h += (std::isalnum((unsigned char)c) || c == '_') ? c : '_';
    // Each hint resumes its suffixes where it stopped: linear probing from
    // 1 made a hint used k times cost k^2 (mb=4096 ran for minutes).
    std::string name = h;
    int &next = nextSuffix[h];
    while (used.count(name))
      name = h + "_" + std::to_string(++next);
    used.insert(name);
    return Val{name, std::move(s), et.str(), Value()};
  }
  void comment(const std::string &) { ++nBody; }

  // -- structure -----------------------------------------------------------
  Val input(const std::string &name, Shape s, StringRef et = "f32") {
    Val v = fresh(name, std::move(s), et);
    OpBuilder::InsertionGuard g(b);
    if (lastInput)
      b.setInsertionPointAfter(lastInput);
    else
      b.setInsertionPointToStart(block.get());
    auto op = InputOp::create(b, b.getUnknownLoc(), type(v), name);
    lastInput = op;
    const Val *named[] = {&v};
    placed.push_back({op, true, nHead++, col(named)});
    v.v = op.getResult();
    return v;
  }
  void tag(const std::string &name, const Val &v) {
    place(TagOp::create(b, loc(), name, v.v), {});
  }
  void output(const std::string &name, const Val &v) {
    place(OutputOp::create(b, loc(), name, v.v), {});
  }

  // -- compute -------------------------------------------------------------
  Val linear(const Val &x, const Val &w, StringRef hint) {
    Shape s = x.s;
    s.back() = w.s[0];
    Val r = fresh(hint, s);
    place(LinearOp::create(b, loc(), type(r), x.v, w.v, Value()), {&r});
    return r;
  }
  std::pair<Val, Val> linearGrad(const Val &x, const Val &w, const Val &g,
                                 StringRef hx, StringRef hw) {
    Val dx = fresh(hx, x.s), dw = fresh(hw, w.s);
    place(LinearGradOp::create(b, loc(), type(dx), type(dw), x.v, w.v, g.v),
          {&dx, &dw});
    return {dx, dw};
  }
  Val scale(const Val &x, double c, StringRef hint) {
    Val r = fresh(hint, x.s, x.et);
    place(ScaleOp::create(b, loc(), type(r), x.v, b.getF64FloatAttr(c)),
          {&r});
    return r;
  }
  Val zeros(Shape s, StringRef hint) {
    Val r = fresh(hint, s);
    place(ZerosOp::create(b, loc(), type(r)), {&r});
    return r;
  }
  Val allReduce(const Val &x, ArrayRef<std::string> axes, StringRef hint) {
    Val r = fresh(hint, x.s, x.et);
    place(AllReduceOp::create(b, loc(), type(r), x.v, ReduceKind::sum,
                              axesAttr(axes), ArrayAttr()),
          {&r});
    return r;
  }

  void accumulate(const std::string &buf, const Val &v) {
    place(AccumulateOp::create(b, loc(), buf, v.v), {});
  }
  Val bufferRead(const std::string &buf, const Shape &s) {
    Val r = fresh(buf + "_acc", s);
    place(BufferReadOp::create(b, loc(), type(r), buf), {&r});
    return r;
  }
  Val linearBias(const Val &x, const Val &w, const Val &bias, StringRef hint) {
    Shape s = x.s;
    s.back() = w.s[0];
    Val r = fresh(hint, s);
    place(LinearOp::create(b, loc(), type(r), x.v, w.v, bias.v), {&r});
    return r;
  }
  Val rmsnorm(const Val &x, const Val &w, double eps, StringRef hint) {
    Val r = fresh(hint, x.s);
    place(
        RMSNormOp::create(b, loc(), type(r), x.v, w.v, b.getF64FloatAttr(eps)),
        {&r});
    return r;
  }
  std::pair<Val, Val> rmsnormGrad(const Val &x, const Val &w, const Val &g,
                                  double eps, StringRef hx, StringRef hw) {
    Val dx = fresh(hx, x.s), dw = fresh(hw, w.s);
    place(RMSNormGradOp::create(b, loc(), type(dx), type(dw), x.v, w.v, g.v,
                                b.getF64FloatAttr(eps)),
          {&dx, &dw});
    return {dx, dw};
  }
  Val reshape(const Val &x, Shape s, StringRef hint) {
    Val r = fresh(hint, std::move(s), x.et);
    place(ReshapeOp::create(b, loc(), type(r), x.v), {&r});
    return r;
  }
  Val transpose(const Val &x, ArrayRef<int64_t> perm, StringRef hint) {
    Shape s;
    for (int64_t p : perm)
      s.push_back(x.s[p]);
    Val r = fresh(hint, s);
    place(TransposeOp::create(b, loc(), type(r), x.v,
                              b.getDenseI64ArrayAttr(perm)),
          {&r});
    return r;
  }
  Val rotary(const Val &x, const Val &c, const Val &s, StringRef hint,
             bool grad = false) {
    Val r = fresh(hint, x.s);
    if (grad)
      place(RotaryGradOp::create(b, loc(), type(r), x.v, c.v, s.v), {&r});
    else
      place(RotaryOp::create(b, loc(), type(r), x.v, c.v, s.v), {&r});
    return r;
  }
  Val broadcast(const Val &x, Shape s, StringRef hint) {
    Val r = fresh(hint, std::move(s));
    place(BroadcastOp::create(b, loc(), type(r), x.v), {&r});
    return r;
  }
  Val sum(const Val &x, int64_t dim, StringRef hint) {
    return reduceDim<SumOp>(x, dim, false, hint);
  }
  Val matmul(const Val &lhs, const Val &rhs, bool ta, bool tb, StringRef hint) {
    size_t n = lhs.s.size();
    Shape s = lhs.s;
    s[n - 2] = ta ? lhs.s[n - 1] : lhs.s[n - 2];
    s[n - 1] = tb ? rhs.s[n - 2] : rhs.s[n - 1];
    Val r = fresh(hint, s);
    place(MatmulOp::create(b, loc(), type(r), lhs.v, rhs.v,
                           ta ? b.getUnitAttr() : UnitAttr(),
                           tb ? b.getUnitAttr() : UnitAttr()),
          {&r});
    return r;
  }
  /// `sq` queries against `sk` keys; with `queryAxis` the queries are the
  /// rank's block along that mesh axis of the `sk` positions.
  Val causalMask(int64_t s, StringRef hint, int64_t window = 0, int64_t sk = 0,
                 StringRef queryAxis = "") {
    Val r = fresh(hint, {s, sk ? sk : s}, "i1");
    place(CausalMaskOp::create(
              b, loc(), type(r),
              window ? b.getI64IntegerAttr(window) : IntegerAttr(),
              queryAxis.empty() ? StringAttr() : b.getStringAttr(queryAxis),
              DenseI64ArrayAttr(), DenseI64ArrayAttr(), IntegerAttr()),
          {&r});
    return r;
  }
  Val applyMask(const Val &x, const Val &m, StringRef hint, bool grad = false) {
    Val r = fresh(hint, x.s);
    if (grad)
      place(ApplyMaskGradOp::create(b, loc(), type(r), x.v, m.v), {&r});
    else
      place(ApplyMaskOp::create(b, loc(), type(r), x.v, m.v), {&r});
    return r;
  }
  Val softmax(const Val &x, int64_t dim, StringRef hint) {
    Val r = fresh(hint, x.s);
    place(SoftmaxOp::create(b, loc(), type(r), x.v, b.getI64IntegerAttr(dim)),
          {&r});
    return r;
  }
  Val softmaxGrad(const Val &y, const Val &g, int64_t dim, StringRef hint) {
    Val r = fresh(hint, y.s);
    place(SoftmaxGradOp::create(b, loc(), type(r), y.v, g.v,
                                b.getI64IntegerAttr(dim)),
          {&r});
    return r;
  }
  /// An elementwise binary op (AddOp, SubOp, MulOp, DivOp).
  template <typename OpTy>
  Val binary(const Val &lhs, const Val &rhs, StringRef hint) {
    Val r = fresh(hint, lhs.s, lhs.et);
    place(OpTy::create(b, loc(), type(r), lhs.v, rhs.v), {&r});
    return r;
  }
  Val add(const Val &lhs, const Val &rhs, StringRef hint) {
    return binary<AddOp>(lhs, rhs, hint);
  }
  Val mul(const Val &lhs, const Val &rhs, StringRef hint) {
    return binary<MulOp>(lhs, rhs, hint);
  }
  std::pair<Val, Val> mulGrad(const Val &lhs, const Val &rhs, const Val &g,
                              StringRef ha, StringRef hb) {
    Val da = fresh(ha, lhs.s), db = fresh(hb, rhs.s);
    place(MulGradOp::create(b, loc(), type(da), type(db), lhs.v, rhs.v, g.v),
          {&da, &db});
    return {da, db};
  }
  /// An elementwise unary op (ExpOp, LogOp, TanhOp, RsqrtOp, ...).
  template <typename OpTy> Val unary(const Val &x, StringRef hint) {
    Val r = fresh(hint, x.s, x.et);
    place(OpTy::create(b, loc(), type(r), x.v), {&r});
    return r;
  }
  /// An elementwise op with a constant (AddScalarOp, PowOp, ...).
  template <typename OpTy>
  Val scalarOp(const Val &x, double c, StringRef hint) {
    Val r = fresh(hint, x.s, x.et);
    place(OpTy::create(b, loc(), type(r), x.v, b.getF64FloatAttr(c)), {&r});
    return r;
  }
  /// A reduction (SumOp, MeanOp, MaxOp) over one dimension, dropped or
  /// (`keep`) kept as size 1.
  template <typename OpTy>
  Val reduceDim(const Val &x, int64_t dim, bool keep, StringRef hint) {
    Shape s = x.s;
    if (keep)
      s[dim] = 1;
    else
      s.erase(s.begin() + dim);
    Val r = fresh(hint, s);
    place(OpTy::create(b, loc(), type(r), x.v, b.getDenseI64ArrayAttr({dim}),
                       keep ? b.getUnitAttr() : UnitAttr()),
          {&r});
    return r;
  }
  Val meanKeep(const Val &x, int64_t dim, StringRef hint) {
    return reduceDim<MeanOp>(x, dim, true, hint);
  }
  Val silu(const Val &x, StringRef hint) {
    Val r = fresh(hint, x.s);
    place(SiluOp::create(b, loc(), type(r), x.v), {&r});
    return r;
  }
  Val siluGrad(const Val &x, const Val &g, StringRef hint) {
    Val r = fresh(hint, x.s);
    place(SiluGradOp::create(b, loc(), type(r), x.v, g.v), {&r});
    return r;
  }
  /// The gradient of tanh at `x`: g * (1 - tanh(x)^2).
  Val tanhGrad(const Val &x, const Val &g, StringRef hint) {
    Val r = fresh(hint, x.s);
    place(TanhGradOp::create(b, loc(), type(r), x.v, g.v), {&r});
    return r;
  }
  Val embedding(const Val &ids, const Val &table, bool vocabPar,
                StringRef hint) {
    Shape s = ids.s;
    s.push_back(table.s[1]);
    Val r = fresh(hint, s);
    place(EmbeddingOp::create(b, loc(), type(r), ids.v, table.v,
                              vocabPar ? b.getStringAttr("tp") : StringAttr(),
                              IntegerAttr()),
          {&r});
    return r;
  }
  Val embeddingGrad(const Val &ids, const Val &g, const Shape &table,
                    bool vocabPar, StringRef hint) {
    Val r = fresh(hint, table);
    place(EmbeddingGradOp::create(
              b, loc(), type(r), ids.v, g.v,
              vocabPar ? b.getStringAttr("tp") : StringAttr(), IntegerAttr()),
          {&r});
    return r;
  }
  /// Max over `dim`, kept as a dimension of 1.
  Val maxKeep(const Val &x, int64_t dim, StringRef hint) {
    return reduceDim<MaxOp>(x, dim, true, hint);
  }
  Val allReduceMax(const Val &x, ArrayRef<std::string> axes, StringRef hint) {
    Val r = fresh(hint, x.s, x.et);
    place(AllReduceOp::create(b, loc(), type(r), x.v, ReduceKind::max,
                              axesAttr(axes), ArrayAttr()),
          {&r});
    return r;
  }
  Val mean(const Val &x, int64_t dim, StringRef hint) {
    return reduceDim<MeanOp>(x, dim, false, hint);
  }
  Val meanGrad(const Val &g, Shape s, int64_t dim, StringRef hint) {
    Val r = fresh(hint, std::move(s));
    place(MeanGradOp::create(b, loc(), type(r), g.v,
                             b.getDenseI64ArrayAttr({dim}), UnitAttr()),
          {&r});
    return r;
  }
  /// Each row's logit at its label on this rank's vocabulary shard (over
  /// `axis`), zero when another shard holds the label.
  Val targetLogit(const Val &logits, const Val &labels, StringRef axis,
                  StringRef hint) {
    Val r = fresh(hint, {logits.s[0]});
    place(TargetLogitOp::create(b, loc(), type(r), logits.v, labels.v,
                                axis.empty() ? StringAttr()
                                             : b.getStringAttr(axis),
                                IntegerAttr()),
          {&r});
    return r;
  }
  Val targetLogitGrad(const Val &labels, const Val &g, Shape s, StringRef axis,
                      StringRef hint) {
    Val r = fresh(hint, std::move(s));
    place(TargetLogitGradOp::create(b, loc(), type(r), labels.v, g.v,
                                    b.getStringAttr(axis), IntegerAttr()),
          {&r});
    return r;
  }
  Val crossEntropy(const Val &logits, const Val &labels, StringRef hint) {
    Val r = fresh(hint, {});
    place(CrossEntropyOp::create(b, loc(), type(r), logits.v, labels.v), {&r});
    return r;
  }
  Val crossEntropyGrad(const Val &logits, const Val &labels, const Val &g,
                       StringRef hint) {
    Val r = fresh(hint, logits.s);
    place(
        CrossEntropyGradOp::create(b, loc(), type(r), logits.v, labels.v, g.v),
        {&r});
    return r;
  }
  /// An all-reduce over explicit rank groups (each a list of ranks).
  Val allReduceGroups(const Val &x,
                      const std::vector<std::vector<int64_t>> &groups,
                      StringRef hint) {
    SmallVector<Attribute> g;
    for (const std::vector<int64_t> &ranks : groups)
      g.push_back(b.getDenseI64ArrayAttr(ranks));
    Val r = fresh(hint, x.s, x.et);
    place(AllReduceOp::create(b, loc(), type(r), x.v, ReduceKind::sum,
                              ArrayAttr(), b.getArrayAttr(g)),
          {&r});
    return r;
  }
  /// With `async`, launched only: its result is in flight until `wait`.
  Val allGather(const Val &x, int64_t dim, int64_t n,
                ArrayRef<std::string> axes, StringRef hint,
                bool async = false) {
    Shape s = x.s;
    s[dim] *= n;
    Val r = fresh(hint, s);
    auto op = AllGatherOp::create(b, loc(), type(r), x.v,
                                  b.getI64IntegerAttr(dim), DenseI64ArrayAttr(),
                                  axesAttr(axes), ArrayAttr());
    if (async)
      op->setAttr(kAsyncAttrName, b.getUnitAttr());
    place(op, {&r});
    return r;
  }
  /// The value of an asynchronous op `inFlight` once it has arrived.
  Val wait(const Val &inFlight, StringRef hint) {
    Val r = fresh(hint, inFlight.s, inFlight.et);
    place(WaitOp::create(b, loc(), type(r), inFlight.v), {&r});
    return r;
  }
  Val chunk(const Val &x, int64_t dim, int64_t n, ArrayRef<std::string> axes,
            StringRef hint) {
    Shape s = x.s;
    s[dim] /= n;
    Val r = fresh(hint, s, x.et);
    place(ChunkOp::create(b, loc(), type(r), x.v, b.getI64IntegerAttr(dim),
                          IntegerAttr(), axesAttr(axes), ArrayAttr()),
          {&r});
    return r;
  }
  /// With `async`, launched only: its result is in flight until `wait`.
  Val reduceScatter(const Val &x, int64_t dim, int64_t n,
                    ArrayRef<std::string> axes, StringRef hint,
                    bool average = false, bool async = false) {
    Shape s = x.s;
    s[dim] /= n;
    Val r = fresh(hint, s);
    auto op = ReduceScatterOp::create(
        b, loc(), type(r), x.v, b.getI64IntegerAttr(dim),
        average ? ReduceKindAttr::get(ctx, ReduceKind::avg)
                : ReduceKindAttr(),
        axesAttr(axes), ArrayAttr());
    if (async)
      op->setAttr(kAsyncAttrName, b.getUnitAttr());
    place(op, {&r});
    return r;
  }
  Val allReduceAvg(const Val &x, ArrayRef<std::string> axes, StringRef hint) {
    Val r = fresh(hint, x.s, x.et);
    place(AllReduceOp::create(b, loc(), type(r), x.v, ReduceKind::avg,
                              axesAttr(axes), ArrayAttr()),
          {&r});
    return r;
  }
  Val allToAll(const Val &x, int64_t split, int64_t concat, int64_t n,
               ArrayRef<std::string> axes, StringRef hint) {
    Shape s = x.s;
    s[split] /= n;
    s[concat] *= n;
    Val r = fresh(hint, s);
    place(AllToAllOp::create(b, loc(), type(r), x.v, b.getI64IntegerAttr(split),
                             b.getI64IntegerAttr(concat), axesAttr(axes),
                             ArrayAttr()),
          {&r});
    return r;
  }
  Val slice(const Val &x, Shape start, Shape s, StringRef hint) {
    Val r = fresh(hint, std::move(s), x.et);
    place(
        SliceOp::create(b, loc(), type(r), x.v, b.getDenseI64ArrayAttr(start)),
        {&r});
    return r;
  }
  Val sliceGrad(const Val &g, Shape start, Shape s, StringRef hint) {
    Val r = fresh(hint, std::move(s));
    place(SliceGradOp::create(b, loc(), type(r), g.v,
                              b.getDenseI64ArrayAttr(start)),
          {&r});
    return r;
  }
  /// Which of `s`'s columns are real vocabulary entries (`vocab` of them
  /// over all shards of `axis`, or in this unsharded vocabulary).
  Val vocabMask(Shape s, int64_t vocab, StringRef axis, StringRef hint) {
    Val r = fresh(hint, std::move(s), "i1");
    place(
        VocabMaskOp::create(b, loc(), type(r), b.getI64IntegerAttr(vocab),
                            axis.empty() ? StringAttr() : b.getStringAttr(axis),
                            IntegerAttr()),
        {&r});
    return r;
  }
  Val concat(const Val &lhs, const Val &rhs, int64_t dim, StringRef hint) {
    Shape s = lhs.s;
    s[dim] += rhs.s[dim];
    Val r = fresh(hint, s, lhs.et);
    Value inputs[] = {lhs.v, rhs.v};
    place(ConcatOp::create(b, loc(), type(r), ValueRange(inputs),
                           b.getI64IntegerAttr(dim)),
          {&r});
    return r;
  }
  /// The causal mask between chunks of `cs` positions, queries and keys in
  /// the chunk orders given (a load-balanced sequence).
  Val chunkMask(ArrayRef<int64_t> qc, ArrayRef<int64_t> kc, int64_t cs,
                StringRef hint) {
    Val r =
        fresh(hint, {(int64_t)qc.size() * cs, (int64_t)kc.size() * cs}, "i1");
    place(CausalMaskOp::create(b, loc(), type(r), IntegerAttr(), StringAttr(),
                               b.getDenseI64ArrayAttr(qc),
                               b.getDenseI64ArrayAttr(kc),
                               b.getI64IntegerAttr(cs)),
          {&r});
    return r;
  }
  Val topk(const Val &x, int64_t k, StringRef hint) {
    Val r = fresh(hint, x.s);
    place(TopKGateOp::create(b, loc(), type(r), x.v, b.getI64IntegerAttr(k)),
          {&r});
    return r;
  }
  Val topkGrad(const Val &x, const Val &g, int64_t k, StringRef hint) {
    Val r = fresh(hint, x.s);
    place(TopKGateGradOp::create(b, loc(), type(r), x.v, g.v,
                                 b.getI64IntegerAttr(k)),
          {&r});
    return r;
  }
  Val dispatch(const Val &x, const Val &g, StringRef hint) {
    Val r = fresh(hint, {g.s[1], x.s[0], x.s[1]});
    place(DispatchOp::create(b, loc(), type(r), x.v, g.v), {&r});
    return r;
  }
  Val dispatchGrad(const Val &dy, const Val &g, StringRef hint) {
    Val r = fresh(hint, {dy.s[1], dy.s[2]});
    place(DispatchGradOp::create(b, loc(), type(r), dy.v, g.v), {&r});
    return r;
  }
  Val combine(const Val &y, const Val &g, StringRef hint) {
    Val r = fresh(hint, {y.s[1], y.s[2]});
    place(CombineOp::create(b, loc(), type(r), y.v, g.v), {&r});
    return r;
  }
  std::pair<Val, Val> combineGrad(const Val &y, const Val &g, const Val &dout,
                                  StringRef hy, StringRef hg) {
    Val dy = fresh(hy, y.s), dg = fresh(hg, g.s);
    place(CombineGradOp::create(b, loc(), type(dy), type(dg), y.v, g.v, dout.v),
          {&dy, &dg});
    return {dy, dg};
  }
  std::tuple<Val, Val, Val> adam(const Val &w, const Val &g, const Val &m,
                                 const Val &v, double lr, double b1, double b2,
                                 double eps, int64_t step, StringRef hint) {
    Val nw = fresh(hint, w.s), nm = fresh(hint.str() + "_exp_avg", w.s),
        nv = fresh(hint.str() + "_exp_avg_sq", w.s);
    place(AdamOp::create(b, loc(), type(nw), type(nm), type(nv), w.v, g.v, m.v,
                         v.v, b.getF64FloatAttr(lr), b.getF64FloatAttr(b1),
                         b.getF64FloatAttr(b2), b.getF64FloatAttr(eps),
                         b.getI64IntegerAttr(step)),
          {&nw, &nm, &nv});
    return {nw, nm, nv};
  }
  Val sgd(const Val &w, const Val &g, double lr, StringRef hint) {
    Val r = fresh(hint, w.s);
    place(SGDOp::create(b, loc(), type(r), w.v, g.v, b.getF64FloatAttr(lr)),
          {&r});
    return r;
  }
  /// A point-to-point message along pp; `tag` separates the channels of
  /// one pair of ranks (0: written out never).
  void send(const Val &x, int64_t offset, int64_t tag = 0,
            StringRef axis = "pp") {
    place(SendOp::create(b, loc(), x.v, IntegerAttr(), b.getStringAttr(axis),
                         b.getI64IntegerAttr(offset),
                         tag ? b.getI64IntegerAttr(tag) : IntegerAttr(),
                         DenseI64ArrayAttr()),
          {});
  }
  /// With `async`, launched only: its result is in flight until `wait`.
  Val recv(const Shape &s, int64_t offset, StringRef hint, int64_t tag = 0,
           StringRef axis = "pp", bool async = false) {
    Val r = fresh(hint, s);
    auto op = RecvOp::create(b, loc(), type(r), IntegerAttr(),
                             b.getStringAttr(axis), b.getI64IntegerAttr(offset),
                             tag ? b.getI64IntegerAttr(tag) : IntegerAttr(),
                             DenseI64ArrayAttr());
    if (async)
      op->setAttr(kAsyncAttrName, b.getUnitAttr());
    place(op, {&r});
    return r;
  }

private:
  /// Where an op is listed: in the head (inputs) or the body, its line
  /// there (from 0) and the column of its op name.
  struct Placed {
    Operation *op;
    bool head;
    int64_t line;
    unsigned col;
  };
  /// The column of the op name of an op listed with `results`:
  /// `<indent>%a, %b = tv.op` (1-based).
  unsigned col(ArrayRef<const Val *> results) const {
    size_t c = ind.size() + 1;
    for (size_t i = 0; i < results.size(); ++i)
      c += results[i]->n.size() + 1 + (i ? 2 : 0);
    if (!results.empty())
      c += 3;
    return (unsigned)c;
  }
  /// Records `op` (just built at the end of the body) with its results
  /// named `results`, puts the micro-batch on it and binds the values.
  void place(Operation *op, std::initializer_list<Val *> results) {
    if (mb >= 0)
      op->setAttr("mb", b.getI64IntegerAttr(mb));
    SmallVector<const Val *> named(results.begin(), results.end());
    placed.push_back({op, false, nBody++, col(named)});
    size_t i = 0;
    for (Val *r : results)
      r->v = op->getResult(i++);
  }
  Location loc() { return b.getUnknownLoc(); }
  RankedTensorType type(const Val &v) const { return tensorOf(ctx, v.s, v.et); }
  ArrayAttr axesAttr(ArrayRef<std::string> axes) {
    SmallVector<Attribute> a;
    for (const std::string &x : axes)
      a.push_back(b.getStringAttr(x));
    return b.getArrayAttr(a);
  }
  MLIRContext *ctx;
  OpBuilder b;
  std::unique_ptr<Block> block;
  std::string ind;
  Operation *lastInput = nullptr;
  std::vector<Placed> placed;
  int64_t nHead = 0, nBody = 0;
  std::set<std::string> used;
  std::map<std::string, int> nextSuffix;
};

} // namespace mlir::tv::modelgen

#endif

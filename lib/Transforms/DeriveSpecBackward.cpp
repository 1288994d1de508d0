//===- DeriveSpecBackward.cpp - --tv-derive-spec-backward -----------------===//
//
// The spec's backward is written by hand as often as the plan's, and a
// proof of the plan against a wrong spec proves nothing. This pass derives
// the backward from the spec's forward (reverse mode, with tv's backward ops,
// each of which the unit tests check against finite differences) and turns
// the module into a check: spec = forward + derived backward, plan = the
// spec as written, on one rank, every name tied to itself. Verified as any
// plan, a failure names the first written op that departs from the
// derivative.
//
// Names (docs/guide.md, "Checking the spec's backward"): an input `dY` or
// `d_Y` is the cotangent of the output `Y`; the gradient of an input or tag
// `X` is named `dX`, `d_X`, `X.grad`, or `P.d_S` for `X` = `P.S`.
//
//===----------------------------------------------------------------------===//
#include "TrainVerify/Dialect/Lineage.h"
#include "TrainVerify/Dialect/TVOps.h"
#include "TrainVerify/Transforms/Passes.h"
#include "TrainVerify/Transforms/Utils.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

namespace mlir::tv {
#define GEN_PASS_DEF_TVDERIVESPECBACKWARD
#include "TrainVerify/Transforms/Passes.h.inc"
} // namespace mlir::tv

using namespace mlir;
using namespace mlir::tv;

/// The cotangent inputs' names of an output `y`.
static SmallVector<std::string, 2> cotangentNames(StringRef y) {
  return {("d" + y).str(), ("d_" + y).str()};
}

bool mlir::tv::specHasCotangents(ModuleOp module) {
  SpecOp spec = getProgramParts(module).spec;
  if (!spec)
    return false;
  llvm::StringSet<> inputs;
  for (auto in : spec.getBody().front().getOps<InputOp>())
    inputs.insert(in.getName());
  for (auto out : spec.getBody().front().getOps<OutputOp>())
    for (const std::string &c : cotangentNames(out.getName()))
      if (inputs.contains(c))
        return true;
  return false;
}

namespace {

/// The names a gradient of `x` may carry.
SmallVector<std::string> gradientNames(StringRef x) {
  SmallVector<std::string> n = {("d" + x).str(), ("d_" + x).str(),
                                (x + ".grad").str()};
  auto [prefix, stem] = x.rsplit('.');
  if (!stem.empty())
    n.push_back((prefix + ".d_" + stem).str());
  return n;
}

bool isFloat(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  return t && isa<FloatType>(t.getElementType());
}

struct Deriver {
  OpBuilder &b;
  IRMapping fwd;              // written value -> derived forward value
  DenseMap<Value, Value> adj; // written forward value -> its adjoint
  /// Written forward values whose adjoint misses a contribution (an operand
  /// no rule differentiates): a gradient of them is not derived.
  DenseSet<Value> partial;

  explicit Deriver(OpBuilder &b) : b(b) {}

  Value make(Location loc, StringRef name, ValueRange operands, Type type,
             ArrayRef<NamedAttribute> attrs = {}) {
    return makeN(loc, name, operands, TypeRange(type), attrs)[0];
  }
  SmallVector<Value> makeN(Location loc, StringRef name, ValueRange operands,
                           TypeRange types,
                           ArrayRef<NamedAttribute> attrs = {}) {
    OperationState st(loc, name);
    st.addOperands(operands);
    st.addTypes(types);
    st.addAttributes(attrs);
    Operation *op = b.create(st);
    return SmallVector<Value>(op->getResults());
  }
  NamedAttribute attr(StringRef n, Attribute a) {
    return b.getNamedAttr(n, a);
  }

  void add(Location loc, Value written, Value g) {
    auto [it, first] = adj.try_emplace(written, g);
    if (!first)
      it->second = make(loc, "tv.add", {it->second, g}, g.getType());
  }

  /// `g` summed over the dimensions numpy broadcasting added to reach it
  /// from `to`.
  Value unbroadcast(Location loc, Value g, Type to) {
    auto gt = cast<RankedTensorType>(g.getType());
    auto tt = cast<RankedTensorType>(to);
    if (gt.getShape() == tt.getShape())
      return g;
    int64_t lead = gt.getRank() - tt.getRank();
    if (lead > 0) {
      SmallVector<int64_t> dims, shape;
      for (int64_t i = 0; i < lead; ++i)
        dims.push_back(i);
      shape.assign(gt.getShape().begin() + lead, gt.getShape().end());
      g = make(loc, "tv.sum", {g},
               RankedTensorType::get(shape, gt.getElementType()),
               {attr("dims", b.getDenseI64ArrayAttr(dims))});
      gt = cast<RankedTensorType>(g.getType());
    }
    SmallVector<int64_t> dims;
    for (int64_t i = 0; i < tt.getRank(); ++i)
      if (tt.getDimSize(i) == 1 && gt.getDimSize(i) != 1)
        dims.push_back(i);
    if (!dims.empty())
      g = make(loc, "tv.sum", {g}, tt,
               {attr("dims", b.getDenseI64ArrayAttr(dims)),
                attr("keepdim", b.getUnitAttr())});
    return g;
  }

  /// Propagates the adjoint of `op`'s result to its operands; an op without
  /// a rule is named in `why`.
  LogicalResult rule(Operation *op, std::string &why);
};

LogicalResult Deriver::rule(Operation *op, std::string &why) {
  Location loc = op->getLoc();
  if (op->getNumResults() != 1) {
    why = "no derivative rule for '" + op->getName().getStringRef().str() +
          "' (several results)";
    return failure();
  }
  Value r = op->getResult(0);
  auto it = adj.find(r);
  if (it == adj.end())
    return success();
  Value g = it->second;
  Type gt = g.getType();
  auto in = [&](unsigned i) { return fwd.lookup(op->getOperand(i)); };
  auto ty = [&](unsigned i) { return op->getOperand(i).getType(); };
  auto to = [&](unsigned i, Value v) { add(loc, op->getOperand(i), v); };
  auto dense = [&](StringRef n) {
    return op->getAttrOfType<DenseI64ArrayAttr>(n);
  };
  StringRef name = op->getName().getStringRef();
  auto copyAttrs = [&](ArrayRef<StringRef> names) {
    SmallVector<NamedAttribute> a;
    for (StringRef n : names)
      if (Attribute v = op->getAttr(n))
        a.push_back(attr(n, v));
    return a;
  };

  if (isa<AddOp>(op)) {
    to(0, unbroadcast(loc, g, ty(0)));
    to(1, unbroadcast(loc, g, ty(1)));
  } else if (isa<SubOp>(op)) {
    to(0, unbroadcast(loc, g, ty(0)));
    to(1, unbroadcast(loc, make(loc, "tv.neg", {g}, gt), ty(1)));
  } else if (isa<MulOp>(op)) {
    to(0, unbroadcast(loc, make(loc, "tv.mul", {g, in(1)}, gt), ty(0)));
    to(1, unbroadcast(loc, make(loc, "tv.mul", {g, in(0)}, gt), ty(1)));
  } else if (isa<DivOp>(op)) {
    // d(a/b) = g/b, -g a / b^2.
    to(0, unbroadcast(loc, make(loc, "tv.div", {g, in(1)}, gt), ty(0)));
    Value ga = make(loc, "tv.mul", {g, in(0)}, gt);
    Value bb = make(loc, "tv.mul", {in(1), in(1)}, ty(1));
    to(1, unbroadcast(loc,
                      make(loc, "tv.neg", {make(loc, "tv.div", {ga, bb}, gt)},
                           gt),
                      ty(1)));
  } else if (isa<AddScalarOp, SubScalarOp, CopyOp>(op)) {
    to(0, g);
  } else if (isa<RSubScalarOp, NegOp>(op)) {
    to(0, make(loc, "tv.neg", {g}, gt));
  } else if (isa<ScaleOp, DivScalarOp>(op)) {
    to(0, make(loc, name, {g}, gt, copyAttrs({"scalar"})));
  } else if (isa<PowOp>(op)) {
    to(0, make(loc, "tv.pow_grad", {in(0), g}, gt,
               {attr("exponent", op->getAttr("scalar"))}));
  } else if (isa<ExpOp, LogOp, SqrtOp, RsqrtOp, SigmoidOp, SiluOp, GeluOp,
                 ReluOp, TanhOp>(op)) {
    to(0, make(loc, (name + "_grad").str(), {in(0), g}, gt));
  } else if (isa<ReshapeOp>(op)) {
    to(0, make(loc, "tv.reshape", {g}, ty(0)));
  } else if (isa<TransposeOp>(op)) {
    ArrayRef<int64_t> perm = dense("perm").asArrayRef();
    SmallVector<int64_t> inv(perm.size());
    for (auto [i, p] : llvm::enumerate(perm))
      inv[p] = i;
    to(0, make(loc, "tv.transpose", {g}, ty(0),
               {attr("perm", b.getDenseI64ArrayAttr(inv))}));
  } else if (isa<SliceOp>(op)) {
    if (!isFloat(op->getOperand(0)))
      return success();
    to(0, make(loc, "tv.slice_grad", {g}, ty(0), copyAttrs({"start"})));
  } else if (isa<ConcatOp>(op)) {
    int64_t dim = op->getAttrOfType<IntegerAttr>("dim").getInt();
    int64_t offset = 0;
    for (unsigned i = 0; i < op->getNumOperands(); ++i) {
      auto t = cast<RankedTensorType>(ty(i));
      SmallVector<int64_t> start(t.getRank(), 0);
      start[dim] = offset;
      offset += t.getDimSize(dim);
      if (isFloat(op->getOperand(i)))
        to(i, make(loc, "tv.slice", {g}, t,
                   {attr("start", b.getDenseI64ArrayAttr(start))}));
    }
  } else if (isa<BroadcastOp>(op)) {
    if (isFloat(op->getOperand(0)))
      to(0, unbroadcast(loc, g, ty(0)));
  } else if (isa<SumOp>(op)) {
    auto t = cast<RankedTensorType>(ty(0));
    Value k = g;
    if (!op->hasAttr("keepdim")) {
      SmallVector<int64_t> shape(t.getShape());
      for (int64_t d : dense("dims").asArrayRef())
        shape[d] = 1;
      k = make(loc, "tv.reshape", {g},
               RankedTensorType::get(shape, t.getElementType()));
    }
    to(0, make(loc, "tv.broadcast", {k}, t));
  } else if (isa<MeanOp>(op)) {
    to(0, make(loc, "tv.mean_grad", {g}, ty(0), copyAttrs({"dims", "keepdim"})));
  } else if (isa<MaxOp, LogSumExpOp>(op)) {
    to(0, make(loc, (name + "_grad").str(), {in(0), g}, ty(0),
               copyAttrs({"dims", "keepdim"})));
  } else if (isa<SoftmaxOp>(op)) {
    to(0, make(loc, "tv.softmax_grad", {fwd.lookup(r), g}, gt,
               copyAttrs({"dim"})));
  } else if (isa<LinearOp>(op)) {
    auto d = makeN(loc, "tv.linear_grad", {in(0), in(1), g},
                   TypeRange{ty(0), ty(1)});
    to(0, d[0]);
    to(1, d[1]);
    if (op->getNumOperands() == 3) {
      // The bias's gradient: g summed over every dimension but the last.
      auto rank = cast<RankedTensorType>(gt).getRank();
      SmallVector<int64_t> dims;
      for (int64_t i = 0; i + 1 < rank; ++i)
        dims.push_back(i);
      to(2, dims.empty() ? g
                         : make(loc, "tv.sum", {g}, ty(2),
                                {attr("dims", b.getDenseI64ArrayAttr(dims))}));
    }
  } else if (isa<MatmulOp>(op)) {
    auto lt = cast<RankedTensorType>(ty(0)), rt = cast<RankedTensorType>(ty(1));
    if (lt.getRank() != rt.getRank() ||
        lt.getShape().drop_back(2) != rt.getShape().drop_back(2)) {
      why = "no derivative rule for a 'tv.matmul' that broadcasts its batch "
            "dimensions";
      return failure();
    }
    bool tl = op->hasAttr("transpose_lhs"), tr = op->hasAttr("transpose_rhs");
    auto mm = [&](Value x, Value y, bool tx, bool tyy, Type res) {
      SmallVector<NamedAttribute> a;
      if (tx)
        a.push_back(attr("transpose_lhs", b.getUnitAttr()));
      if (tyy)
        a.push_back(attr("transpose_rhs", b.getUnitAttr()));
      return make(loc, "tv.matmul", {x, y}, res, a);
    };
    // C = A' B' (A' = A or its transpose, B' likewise): dA' = g B'^T,
    // dB' = A'^T g, transposed back where the operand was.
    Value a = in(0), bv = in(1);
    to(0, !tl ? mm(g, bv, false, !tr, lt) : mm(bv, g, tr, true, lt));
    to(1, !tr ? mm(a, g, !tl, false, rt) : mm(g, a, true, tl, rt));
  } else if (isa<RMSNormOp>(op)) {
    auto d = makeN(loc, "tv.rmsnorm_grad", {in(0), in(1), g},
                   TypeRange{ty(0), ty(1)}, copyAttrs({"eps"}));
    to(0, d[0]);
    to(1, d[1]);
  } else if (isa<LayerNormOp>(op)) {
    auto d = makeN(loc, "tv.layernorm_grad", {in(0), in(1), g},
                   TypeRange{ty(0), ty(1), ty(2)}, copyAttrs({"eps"}));
    to(0, d[0]);
    to(1, d[1]);
    to(2, d[2]);
  } else if (isa<EmbeddingOp>(op)) {
    to(1, make(loc, "tv.embedding_grad", {in(0), g}, ty(1),
               copyAttrs({"vocab_axis", "vocab_offset"})));
  } else if (isa<CrossEntropyOp>(op)) {
    to(0, make(loc, "tv.cross_entropy_grad", {in(0), in(1), g}, ty(0)));
  } else if (isa<TargetLogitOp>(op)) {
    // The logit at the label: the cotangent lands on that column.
    to(0, make(loc, "tv.target_logit_grad", {in(1), g}, ty(0),
               copyAttrs({"vocab_axis", "vocab_offset"})));
  } else if (isa<RotaryOp>(op)) {
    to(0, make(loc, "tv.rotary_grad", {g, in(1), in(2)}, ty(0)));
    partial.insert(op->getOperand(1));
    partial.insert(op->getOperand(2));
  } else if (isa<ApplyMaskOp>(op)) {
    to(0, make(loc, "tv.apply_mask_grad", {g, in(1)}, ty(0)));
  } else {
    why = "no derivative rule for '" + name.str() + "'";
    return failure();
  }
  return success();
}

struct DeriveSpecBackwardPass
    : public tv::impl::TVDeriveSpecBackwardBase<DeriveSpecBackwardPass> {
  using TVDeriveSpecBackwardBase::TVDeriveSpecBackwardBase;
  void runOnOperation() override;
};

/// `"n"[0:a, 0:b] = ["n":0]`.
LineageAttr wholeLineage(MLIRContext *ctx, StringRef n, Type t) {
  ArrayRef<int64_t> shape = cast<RankedTensorType>(t).getShape();
  SmallVector<int64_t> lo(shape.size(), 0);
  Builder b(ctx);
  ArrayAttr groups =
      b.getArrayAttr({b.getArrayAttr({PlanRefAttr::get(ctx, n, 0)})});
  return LineageAttr::get(ctx, b.getStringAttr(n), lo, shape, groups,
                          StringAttr(), ArrayRef<int64_t>());
}

void DeriveSpecBackwardPass::runOnOperation() {
  ModuleOp module = getOperation();
  MLIRContext *ctx = module.getContext();
  ProgramParts parts = getProgramParts(module);
  if (!parts.spec) {
    module.emitError() << "the module has no tv.spec whose backward to check";
    return signalPassFailure();
  }
  Block &body = parts.spec.getBody().front();
  llvm::StringMap<Value> inputs, outputs, tags;
  for (Operation &op : body) {
    if (auto in = dyn_cast<InputOp>(op))
      inputs[in.getName()] = in.getResult();
    else if (auto out = dyn_cast<OutputOp>(op))
      outputs[out.getName()] = out.getValue();
    else if (auto tag = dyn_cast<TagOp>(op))
      tags[tag.getName()] = tag.getValue();
  }
  // Seeds: outputs with a cotangent input.
  SmallVector<std::pair<Value, Value>> seeds; // (output value, cotangent)
  DenseSet<Value> cotangents;
  for (auto &[name, v] : outputs)
    for (const std::string &c : cotangentNames(name))
      if (auto it = inputs.find(c); it != inputs.end()) {
        seeds.push_back({v, it->second});
        cotangents.insert(it->second);
      }
  if (seeds.empty()) {
    parts.spec.emitError()
        << "spec backward not checked: no spec input is the cotangent of a "
           "spec output (an input 'dY' or 'd_Y' for an output 'Y')";
    return signalPassFailure();
  }
  // The forward: what the seeded outputs depend on.
  DenseSet<Operation *> forward;
  DenseSet<Value> forwardValues;
  SmallVector<Value> work;
  for (auto &s : seeds)
    work.push_back(s.first);
  while (!work.empty()) {
    Value v = work.pop_back_val();
    if (!forwardValues.insert(v).second)
      continue;
    if (cotangents.contains(v)) {
      parts.spec.emitError() << "spec backward not checked: a seeded output "
                                "depends on a cotangent input";
      return signalPassFailure();
    }
    if (Operation *def = v.getDefiningOp();
        def && !isa<InputOp>(def) && forward.insert(def).second)
      llvm::append_range(work, def->getOperands());
  }
  // Gradients claimed: of inputs and tags of the forward.
  struct Claim {
    std::string of, name;
    bool isOutput;
  };
  std::vector<Claim> claims;
  auto claimsOf = [&](StringRef x) {
    for (const std::string &n : gradientNames(x)) {
      if (outputs.count(n))
        claims.push_back({x.str(), n, true});
      else if (tags.count(n))
        claims.push_back({x.str(), n, false});
    }
  };
  for (auto &[name, v] : inputs)
    if (forwardValues.contains(v))
      claimsOf(name);
  for (auto &[name, v] : tags)
    if (forwardValues.contains(v))
      claimsOf(name);
  if (llvm::none_of(claims, [](const Claim &c) { return c.isOutput; })) {
    parts.spec.emitError()
        << "spec backward not checked: no spec output is named as the "
           "gradient of a forward input ('dX', 'd_X', 'X.grad' or 'P.d_S')";
    return signalPassFailure();
  }

  // The check module, built beside the original and swapped in at the end.
  OwningOpRef<ModuleOp> check = ModuleOp::create(module.getLoc());
  OpBuilder b = OpBuilder::atBlockEnd(check->getBody());
  MeshOp::create(b, module.getLoc(), "mesh", b.getStrArrayAttr({"one"}),
                 b.getDenseI64ArrayAttr({1}));
  auto spec = SpecOp::create(b, parts.spec.getLoc(), "spec");
  spec.getBody().push_back(new Block());
  OpBuilder sb = OpBuilder::atBlockEnd(&spec.getBody().front());
  Deriver d(sb);
  // Forward, in program order, with its names.
  for (Operation &op : body) {
    if (isa<InputOp>(op) || forward.contains(&op))
      sb.clone(op, d.fwd);
    else if ((isa<TagOp>(op) || isa<OutputOp>(op)) &&
             forwardValues.contains(op.getOperand(0)))
      sb.clone(op, d.fwd);
  }
  // Reverse mode from the seeds.
  for (auto &[out, cot] : seeds)
    d.add(out.getLoc(), out, d.fwd.lookup(cot));
  SmallVector<Operation *> order;
  for (Operation &op : body)
    if (forward.contains(&op))
      order.push_back(&op);
  for (Operation *op : llvm::reverse(order)) {
    std::string why;
    if (failed(d.rule(op, why))) {
      op->emitError() << "spec backward not checked: " << why;
      return signalPassFailure();
    }
    // Operands the rule does not differentiate carry no gradient.
  }
  std::vector<std::string> names;
  for (const Claim &c : claims) {
    Value x = inputs.count(c.of) ? inputs[c.of] : tags[c.of];
    auto it = d.adj.find(x);
    if (it == d.adj.end() || d.partial.contains(x) || !isFloat(x)) {
      Operation *at = c.isOutput ? outputs[c.name].getDefiningOp()
                                 : tags[c.name].getDefiningOp();
      (at ? at : parts.spec.getOperation())->emitError()
          << "spec backward not checked: '" << c.name << "' is named as the "
          << "gradient of '" << c.of << "', which "
          << (!isFloat(x)               ? "holds no real numbers (ids or a mask)"
              : d.partial.contains(x)   ? "tv does not differentiate (an "
                                          "operand no rule carries a "
                                          "gradient to)"
                                        : "reaches no seeded output");
      return signalPassFailure();
    }
    if (c.isOutput)
      OutputOp::create(sb, x.getLoc(), c.name, it->second);
    else
      TagOp::create(sb, x.getLoc(), c.name, it->second);
    names.push_back(c.name);
  }

  // The plan: the spec as written, on the one rank.
  auto plan = PlanOp::create(b, module.getLoc(), b.getStringAttr("plan"),
                             FlatSymbolRefAttr::get(ctx, "mesh"),
                             b.getI64IntegerAttr(1), ArrayAttr(), UnitAttr());
  plan.getBody().push_back(new Block());
  OpBuilder pb = OpBuilder::atBlockEnd(&plan.getBody().front());
  auto rank = RankProgramOp::create(pb, parts.spec.getLoc(),
                                    ArrayRef<int64_t>{0});
  rank.getBody().push_back(new Block());
  OpBuilder rb = OpBuilder::atBlockEnd(&rank.getBody().front());
  IRMapping same;
  for (Operation &op : body)
    rb.clone(op, same);

  // Every name of the derived spec tied to the same name as written.
  for (Operation &op : spec.getBody().front()) {
    StringRef n;
    if (auto in = dyn_cast<InputOp>(op))
      n = in.getName();
    else if (auto t = dyn_cast<TagOp>(op))
      n = t.getName();
    else if (auto o = dyn_cast<OutputOp>(op))
      n = o.getName();
    else
      continue;
    LineageOp::create(b, op.getLoc(),
                      wholeLineage(ctx, n,
                                   op.getNumResults()
                                       ? op.getResult(0).getType()
                                       : op.getOperand(0).getType()));
  }

  // Swap the check in.
  module.getBody()->clear();
  for (Operation &op : llvm::make_early_inc_range(*check->getBody()))
    op.moveBefore(module.getBody(), module.getBody()->end());
  module->setAttr("tv.checks", b.getStringAttr("spec-backward"));
}

} // namespace

//===- Elementwise.cpp - elementwise ops and their VJPs -------------------===//
//
// Elementwise arithmetic with numpy broadcasting, unary functions and their
// backward ops, and `broadcast`. All are structured: every loop is parallel.
//
//===----------------------------------------------------------------------===//
#include "OpFamily.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::tv;
using namespace mlir::tv::ops;

//===----------------------------------------------------------------------===//
// Verifiers and folders
//===----------------------------------------------------------------------===//

template <typename OpT> static LogicalResult verifyBinary(OpT op) {
  if (failed(verifyIntegerOperands(op)))
    return failure();
  auto shape = broadcastShapes(shapeOf(op.getLhs()), shapeOf(op.getRhs()));
  if (!shape)
    return op.emitOpError()
           << "operands of shapes " << str(shapeOf(op.getLhs())) << " and "
           << str(shapeOf(op.getRhs())) << " do not broadcast";
  return expectShape(op, op.getResult(), *shape, "result");
}

static bool isConst(FloatAttr a, double v) { return a.getValueAsDouble() == v; }

LogicalResult AddOp::verify() { return verifyBinary(*this); }

LogicalResult SubOp::verify() { return verifyBinary(*this); }

LogicalResult MulOp::verify() { return verifyBinary(*this); }

LogicalResult DivOp::verify() { return verifyBinary(*this); }

/// A scalar op on integers takes an integer scalar.
template <typename OpT> static LogicalResult verifyScalar(OpT op) {
  if (failed(verifyIntegerOperands(op)))
    return failure();
  double c = op.getScalarAttr().getValueAsDouble();
  if (isa<IntegerType>(op.getType().getElementType()) &&
      (c != std::floor(c) || std::fabs(c) >= 0x1p53))
    return op.emitOpError() << "the scalar of an integer tensor must be an "
                               "integer below 2^53, not "
                            << llvm::formatv("{0}", c).str();
  return success();
}
LogicalResult AddScalarOp::verify() { return verifyScalar(*this); }
LogicalResult SubScalarOp::verify() { return verifyScalar(*this); }
LogicalResult RSubScalarOp::verify() { return verifyScalar(*this); }
LogicalResult ScaleOp::verify() { return verifyScalar(*this); }
LogicalResult NegOp::verify() { return verifyIntegerOperands(*this); }
LogicalResult AbsOp::verify() { return verifyIntegerOperands(*this); }

LogicalResult IntBinaryOp::verify() {
  Type elt = getLhs().getType().getElementType();
  if (getRhs().getType().getElementType() != elt ||
      getResult().getType().getElementType() != elt)
    return emitOpError() << "operands and result must share one element type";
  if (elt.isInteger(1))
    return emitOpError() << "takes integers of at least 2 bits, not masks";
  return verifyBinary(*this);
}

LogicalResult DivScalarOp::verify() {
  if (getScalar().isZero())
    return emitOpError() << "divides by zero";
  return success();
}

OpFoldResult DivScalarOp::fold(FoldAdaptor) {
  if (isNamed(getResult()))
    return {};
  return isConst(getScalarAttr(), 1) ? getInput() : OpFoldResult();
}

LogicalResult BroadcastOp::verify() {
  auto shape = broadcastShapes(shapeOf(getInput()), shapeOf(getResult()));
  if (!shape || *shape != shapeOf(getResult()))
    return emitOpError() << "cannot broadcast " << str(shapeOf(getInput()))
                         << " to " << str(shapeOf(getResult()));
  return success();
}

LogicalResult IotaOp::verify() {
  if (getType().getElementType().isInteger(1))
    return emitOpError() << "positions are not masks: its element type must "
                            "be a float or an integer of 2 bits or more";
  int64_t rank = shapeOf(getResult()).size();
  // I64Attr's getter is unsigned: read the attributes as signed.
  int64_t dim = getDimAttr().getInt(), offset = getOffsetAttr().getInt();
  if (dim < 0 || dim >= rank)
    return emitOpError() << "dim " << dim << " is not a dimension of a "
                         << "rank-" << rank << " result";
  // Positions are exact in f32 below 2^24.
  int64_t size = shapeOf(getResult())[dim];
  if (offset < 0)
    return emitOpError() << "offset " << offset << " is negative";
  if (offset > (int64_t(1) << 24) - size)
    return emitOpError() << "positions " << offset << " to " << offset + size
                         << " are not exact in f32";
  return success();
}

OpFoldResult BroadcastOp::fold(FoldAdaptor) {
  if (isNamed(getResult()))
    return {};
  return getInput().getType() == getType() ? getInput() : OpFoldResult();
}

OpFoldResult AddScalarOp::fold(FoldAdaptor) {
  if (isNamed(getResult()))
    return {};
  return isConst(getScalarAttr(), 0) ? getInput() : OpFoldResult();
}

OpFoldResult SubScalarOp::fold(FoldAdaptor) {
  if (isNamed(getResult()))
    return {};
  return isConst(getScalarAttr(), 0) ? getInput() : OpFoldResult();
}

OpFoldResult ScaleOp::fold(FoldAdaptor) {
  if (isNamed(getResult()))
    return {};
  return isConst(getScalarAttr(), 1) ? getInput() : OpFoldResult();
}

OpFoldResult PowOp::fold(FoldAdaptor) {
  if (isNamed(getResult()))
    return {};
  return isConst(getScalarAttr(), 1) ? getInput() : OpFoldResult();
}

OpFoldResult CopyOp::fold(FoldAdaptor) {
  if (isNamed(getResult()))
    return {};
  return getInput();
}

//===----------------------------------------------------------------------===//
// Meaning
//===----------------------------------------------------------------------===//

// Each op is written as its scalar function over the domain: `f(d, x)` for
// an op of one input, `f(d, x, g)` for a VJP of one input (x the forward
// input, g the cotangent), `f(d, a, b)` for a binary op.

/// `f` on every element of the input.
template <typename D, typename F>
static EvalStatus unary(Evaluator<D> &ev, F f) {
  ev.out.push_back(
      ev.map(*ev.in[0], [&](typename D::V x) { return f(ev.d, x); }));
  return std::nullopt;
}
/// `f` on every (input, cotangent) pair.
template <typename D, typename F>
static EvalStatus withCotangent(Evaluator<D> &ev, F f) {
  ev.out.push_back(
      ev.zip(*ev.in[0], *ev.in[1],
             [&](typename D::V x, typename D::V g) { return f(ev.d, x, g); }));
  return std::nullopt;
}
/// `f` on the operands broadcast to the result.
template <typename D, typename F>
static EvalStatus binaryOp(Evaluator<D> &ev, F f) {
  ev.out.push_back(ev.binary(
      *ev.in[0], *ev.in[1], ev.result(),
      [&](typename D::V a, typename D::V b) { return f(ev.d, a, b); }));
  return std::nullopt;
}

#define TV_BINARY(OP, EXPR)                                                    \
  template <typename D> static EvalStatus evaluate(OP, Evaluator<D> &ev) {     \
    return binaryOp(ev, [](D &d, auto a, auto b) { return EXPR; });            \
  }                                                                            \
  TV_EVALUATE_BY_TEMPLATE(OP)
TV_BINARY(AddOp, d.add(a, b))
TV_BINARY(SubOp, d.sub(a, b))
TV_BINARY(MulOp, d.mul(a, b))
TV_BINARY(DivOp, d.div(a, b))
#undef TV_BINARY

template <typename D>
static EvalStatus evaluate(IntBinaryOp o, Evaluator<D> &ev) {
  sym::Fn fn = intFnOf(o.getFn());
  unsigned width = intWidthOf(o.getResult());
  return binaryOp(ev, [&](D &d, auto a, auto b) {
    return d.intOp(fn, width, {a, b});
  });
}
TV_EVALUATE_BY_TEMPLATE(IntBinaryOp)

// c is the op's `scalar`.
#define TV_SCALAR(OP, EXPR)                                                    \
  template <typename D> static EvalStatus evaluate(OP o, Evaluator<D> &ev) {   \
    double c = ev.scalarOf(o);                                                 \
    return unary(ev, [c](D &d, auto x) { return EXPR; });                      \
  }                                                                            \
  TV_EVALUATE_BY_TEMPLATE(OP)
TV_SCALAR(AddScalarOp, d.add(x, d.cst(c)))
TV_SCALAR(SubScalarOp, d.sub(x, d.cst(c)))
TV_SCALAR(RSubScalarOp, d.sub(d.cst(c), x))
TV_SCALAR(DivScalarOp, d.div(x, d.cst(c)))
TV_SCALAR(ScaleOp, d.scale(x, c))
TV_SCALAR(PowOp, d.powc(x, c))
#undef TV_SCALAR

#define TV_UNARY(OP, EXPR)                                                     \
  template <typename D> static EvalStatus evaluate(OP, Evaluator<D> &ev) {     \
    return unary(ev, [](D &d, auto x) { return EXPR; });                       \
  }                                                                            \
  TV_EVALUATE_BY_TEMPLATE(OP)
TV_UNARY(NegOp, d.neg(x))
TV_UNARY(ExpOp, d.exp(x))
TV_UNARY(LogOp, d.log(x))
TV_UNARY(SqrtOp, d.sqrt(x))
TV_UNARY(RsqrtOp, d.rsqrt(x))
TV_UNARY(SigmoidOp, d.sigmoid(x))
TV_UNARY(SiluOp, d.mul(x, d.sigmoid(x)))
TV_UNARY(GeluOp, d.gelu(x))
TV_UNARY(ReluOp, d.relu(x))
TV_UNARY(TanhOp, d.tanh(x))
TV_UNARY(AbsOp, d.abs(x))

template <typename D> static EvalStatus evaluate(IotaOp op, Evaluator<D> &ev) {
  D &d = ev.d;
  Shape rs = ev.result();
  Tensor<typename D::V> res = ev.make(rs);
  int64_t dim = op.getDimAttr().getInt(), inner = 1;
  for (size_t k = dim + 1; k < rs.size(); ++k)
    inner *= rs[k];
  for (size_t i = 0; i < res.data.size(); ++i)
    res.data[i] = d.cst(
        double((int64_t(i) / inner) % rs[dim] + op.getOffsetAttr().getInt()));
  ev.out.push_back(std::move(res));
  return std::nullopt;
}
TV_EVALUATE_BY_TEMPLATE(IotaOp)
template <typename D> static EvalStatus evaluate(ZerosOp, Evaluator<D> &ev) {
  Tensor<typename D::V> res = ev.make(ev.result());
  for (auto &x : res.data)
    x = ev.d.cst(0.0);
  ev.out.push_back(std::move(res));
  return std::nullopt;
}
TV_EVALUATE_BY_TEMPLATE(ZerosOp)
TV_UNARY(CopyOp, x)
#undef TV_UNARY

// VJPs: dx = g * f'(x).
#define TV_UNARY_GRAD(OP, EXPR)                                                \
  template <typename D> static EvalStatus evaluate(OP, Evaluator<D> &ev) {     \
    return withCotangent(ev, [](D &d, auto x, auto g) { return EXPR; });       \
  }                                                                            \
  TV_EVALUATE_BY_TEMPLATE(OP)
TV_UNARY_GRAD(ExpGradOp, d.mul(g, d.exp(x)))
TV_UNARY_GRAD(LogGradOp, d.div(g, x))
TV_UNARY_GRAD(SqrtGradOp, d.scale(d.mul(g, d.rsqrt(x)), 0.5))
TV_UNARY_GRAD(GeluGradOp, d.mul(g, d.geluGrad(x)))
TV_UNARY_GRAD(ReluGradOp, d.mul(g, d.step(x)))
#undef TV_UNARY_GRAD

// VJPs that name an intermediate.
#define TV_UNARY_GRAD_BODY(OP, ...)                                            \
  template <typename D> static EvalStatus evaluate(OP, Evaluator<D> &ev) {     \
    return withCotangent(ev, [](D & d, auto x, auto g) __VA_ARGS__);           \
  }                                                                            \
  TV_EVALUATE_BY_TEMPLATE(OP)
TV_UNARY_GRAD_BODY(RsqrtGradOp, {
  auto r = d.rsqrt(x);
  return d.scale(d.mul(g, d.mul(r, d.mul(r, r))), -0.5);
})
TV_UNARY_GRAD_BODY(SigmoidGradOp, {
  auto s = d.sigmoid(x);
  return d.mul(g, d.mul(s, d.sub(d.one(), s)));
})
TV_UNARY_GRAD_BODY(SiluGradOp, {
  auto s = d.sigmoid(x);
  return d.mul(g, d.mul(s, d.add(d.one(), d.mul(x, d.sub(d.one(), s)))));
})
TV_UNARY_GRAD_BODY(TanhGradOp, {
  auto t = d.tanh(x);
  return d.mul(g, d.sub(d.one(), d.mul(t, t)));
})
#undef TV_UNARY_GRAD_BODY

template <typename D>
static EvalStatus evaluate(PowGradOp o, Evaluator<D> &ev) {
  double c = o.getExponent().convertToDouble();
  return withCotangent(ev, [c](D &d, auto x, auto g) {
    return d.mul(g, d.scale(d.powc(x, c - 1), c));
  });
}
TV_EVALUATE_BY_TEMPLATE(PowGradOp)

// (a, b, g) -> (g * b, g * a).
template <typename D> static EvalStatus evaluate(MulGradOp, Evaluator<D> &ev) {
  using V = typename D::V;
  D &d = ev.d;
  auto in = ev.in;
  ev.out.push_back(
      ev.zip(*in[2], *in[1], [&](V g, V b) { return d.mul(g, b); }));
  ev.out.push_back(
      ev.zip(*in[2], *in[0], [&](V g, V a) { return d.mul(g, a); }));
  return std::nullopt;
}
TV_EVALUATE_BY_TEMPLATE(MulGradOp)

template <typename D>
static EvalStatus evaluate(BroadcastOp, Evaluator<D> &ev) {
  using T = Tensor<typename D::V>;
  auto in = ev.in;
  auto &out = ev.out;
  const T &x = *in[0];
  Shape rs = ev.result();
  T res = ev.make(rs);
  SmallVector<int64_t> idx;
  for (int64_t i = 0, e = res.data.size(); i < e; ++i) {
    unravel(i, rs, idx);
    res.data[i] = x.data[ev.broadcastIndex(idx, rs, x.shape)];
  }
  out.push_back(std::move(res));
  return std::nullopt;
}
TV_EVALUATE_BY_TEMPLATE(BroadcastOp)

//===----------------------------------------------------------------------===//
// Structure and rules
//===----------------------------------------------------------------------===//

OpStructure mlir::tv::ops::elementwiseStructure(Operation *op) {
  MLIRContext *ctx = op->getContext();
  ArrayRef<int64_t> rs = shapeOf(op->getResult(0));
  OpStructure s;
  s.loops.assign(rs.size(), LoopKind::Parallel);
  for (Value v : op->getOperands())
    s.operands.push_back(broadcastMap(shapeOf(v), rs, ctx));
  s.result = loopsMap(rs.size(), ctx);
  return s;
}

// Every op of the family (broadcast included) is elementwise with numpy
// broadcasting.
#define TV_ELEMENTWISE(OP)                                                     \
  OpStructure OP::getStructure(unsigned) { return elementwiseStructure(*this); }
TV_ELEMENTWISE(AddOp)
TV_ELEMENTWISE(SubOp)
TV_ELEMENTWISE(MulOp)
TV_ELEMENTWISE(DivOp)
TV_ELEMENTWISE(IntBinaryOp)
TV_ELEMENTWISE(AddScalarOp)
TV_ELEMENTWISE(SubScalarOp)
TV_ELEMENTWISE(RSubScalarOp)
TV_ELEMENTWISE(DivScalarOp)
TV_ELEMENTWISE(ScaleOp)
TV_ELEMENTWISE(PowOp)
TV_ELEMENTWISE(NegOp)
TV_ELEMENTWISE(ExpOp)
TV_ELEMENTWISE(LogOp)
TV_ELEMENTWISE(SqrtOp)
TV_ELEMENTWISE(RsqrtOp)
TV_ELEMENTWISE(SigmoidOp)
TV_ELEMENTWISE(SiluOp)
TV_ELEMENTWISE(GeluOp)
TV_ELEMENTWISE(ReluOp)
TV_ELEMENTWISE(TanhOp)
TV_ELEMENTWISE(AbsOp)

// Parallel but for the counted dimension, which keeps its size.
OpStructure IotaOp::getStructure(unsigned) {
  OpStructure s = elementwiseStructure(*this);
  s.loops[getDimAttr().getInt()] = LoopKind::Pinned;
  return s;
}
TV_ELEMENTWISE(CopyOp)
TV_ELEMENTWISE(ZerosOp)
TV_ELEMENTWISE(ExpGradOp)
TV_ELEMENTWISE(LogGradOp)
TV_ELEMENTWISE(SqrtGradOp)
TV_ELEMENTWISE(RsqrtGradOp)
TV_ELEMENTWISE(SigmoidGradOp)
TV_ELEMENTWISE(SiluGradOp)
TV_ELEMENTWISE(GeluGradOp)
TV_ELEMENTWISE(ReluGradOp)
TV_ELEMENTWISE(TanhGradOp)
TV_ELEMENTWISE(MulGradOp)
TV_ELEMENTWISE(PowGradOp)
TV_ELEMENTWISE(BroadcastOp)
#undef TV_ELEMENTWISE

//===----------------------------------------------------------------------===//
// Backward ops
//===----------------------------------------------------------------------===//

unsigned ExpGradOp::getCotangentIndex() { return 1; }
unsigned LogGradOp::getCotangentIndex() { return 1; }
unsigned SqrtGradOp::getCotangentIndex() { return 1; }
unsigned RsqrtGradOp::getCotangentIndex() { return 1; }
unsigned SigmoidGradOp::getCotangentIndex() { return 1; }
unsigned SiluGradOp::getCotangentIndex() { return 1; }
unsigned GeluGradOp::getCotangentIndex() { return 1; }
unsigned ReluGradOp::getCotangentIndex() { return 1; }
unsigned TanhGradOp::getCotangentIndex() { return 1; }
unsigned MulGradOp::getCotangentIndex() { return 2; }
unsigned PowGradOp::getCotangentIndex() { return 1; }

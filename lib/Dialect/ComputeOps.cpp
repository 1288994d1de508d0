//===- ComputeOps.cpp - verifiers of compute and backward ops -------------===//
#include "TrainVerify/Dialect/ShapeUtils.h"
#include "TrainVerify/Dialect/TVOps.h"

#include "llvm/ADT/DenseSet.h"

using namespace mlir;
using namespace mlir::tv;

//===----------------------------------------------------------------------===//
// Shape helpers
//===----------------------------------------------------------------------===//

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

static ArrayRef<int64_t> shapeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}

static std::string str(ArrayRef<int64_t> shape) {
  std::string s = "[";
  for (auto [i, d] : llvm::enumerate(shape))
    s += (i ? ", " : "") + std::to_string(d);
  return s + "]";
}

/// All dims valid and distinct.
static LogicalResult checkDims(Operation *op, ArrayRef<int64_t> dims,
                               int64_t rank, StringRef what = "dims") {
  llvm::DenseSet<int64_t> seen;
  for (int64_t d : dims) {
    if (d < 0 || d >= rank)
      return op->emitOpError() << what << " entry " << d
                               << " is out of range for rank " << rank;
    if (!seen.insert(d).second)
      return op->emitOpError() << what << " lists dimension " << d << " twice";
  }
  return success();
}

static LogicalResult expectShape(Operation *op, Value v,
                                 ArrayRef<int64_t> expected, StringRef what) {
  if (shapeOf(v) != expected)
    return op->emitOpError() << what << " has shape " << str(shapeOf(v))
                             << ", expected " << str(expected);
  return success();
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

template <typename OpT> static LogicalResult verifyBinary(OpT op) {
  auto shape = broadcastShapes(shapeOf(op.getLhs()), shapeOf(op.getRhs()));
  if (!shape)
    return op.emitOpError() << "operands of shapes " << str(shapeOf(op.getLhs()))
                            << " and " << str(shapeOf(op.getRhs()))
                            << " do not broadcast";
  return expectShape(op, op.getResult(), *shape, "result");
}
LogicalResult AddOp::verify() { return verifyBinary(*this); }
LogicalResult SubOp::verify() { return verifyBinary(*this); }
LogicalResult MulOp::verify() { return verifyBinary(*this); }
LogicalResult DivOp::verify() { return verifyBinary(*this); }

LogicalResult DivScalarOp::verify() {
  if (getScalar().isZero())
    return emitOpError() << "divides by zero";
  return success();
}

//===----------------------------------------------------------------------===//
// Contractions and reductions
//===----------------------------------------------------------------------===//

LogicalResult MatmulOp::verify() {
  ArrayRef<int64_t> a = shapeOf(getLhs()), b = shapeOf(getRhs());
  if (a.size() < 2 || b.size() < 2)
    return emitOpError() << "operands must have rank at least 2";
  if (b.size() != 2 && b.size() != a.size())
    return emitOpError() << "rhs must have rank 2 or the rank of lhs ("
                         << a.size() << "), got " << b.size();
  int64_t m = getTransposeLhs() ? a[a.size() - 1] : a[a.size() - 2];
  int64_t ka = getTransposeLhs() ? a[a.size() - 2] : a[a.size() - 1];
  int64_t kb = getTransposeRhs() ? b[b.size() - 1] : b[b.size() - 2];
  int64_t n = getTransposeRhs() ? b[b.size() - 2] : b[b.size() - 1];
  if (ka != kb)
    return emitOpError() << "contracted dimensions differ: " << ka << " vs "
                         << kb;
  if (b.size() == a.size() && a.drop_back(2) != b.drop_back(2))
    return emitOpError() << "batch dimensions differ: "
                         << str(a.drop_back(2)) << " vs "
                         << str(b.drop_back(2));
  SmallVector<int64_t> expected(a.drop_back(2));
  expected.push_back(m);
  expected.push_back(n);
  return expectShape(*this, getResult(), expected, "result");
}

LogicalResult LinearOp::verify() {
  ArrayRef<int64_t> x = shapeOf(getInput()), w = shapeOf(getWeight());
  if (x.empty())
    return emitOpError() << "input must have rank at least 1";
  if (w.size() != 2)
    return emitOpError() << "weight must have rank 2, got " << w.size();
  if (x.back() != w[1])
    return emitOpError() << "input features " << x.back()
                         << " differ from weight columns " << w[1];
  if (getBias() && failed(expectShape(*this, getBias(), {w[0]}, "bias")))
    return failure();
  SmallVector<int64_t> expected(x.drop_back());
  expected.push_back(w[0]);
  return expectShape(*this, getResult(), expected, "result");
}

template <typename OpT> static LogicalResult verifyReduction(OpT op) {
  ArrayRef<int64_t> in = shapeOf(op.getInput());
  if (op.getDims().empty())
    return op.emitOpError() << "must reduce at least one dimension";
  if (failed(checkDims(op, op.getDims(), in.size())))
    return failure();
  return expectShape(op, op.getResult(),
                     reducedShape(in, op.getDims(), op.getKeepdim()),
                     "result");
}
LogicalResult SumOp::verify() { return verifyReduction(*this); }
LogicalResult MeanOp::verify() { return verifyReduction(*this); }
LogicalResult MaxOp::verify() { return verifyReduction(*this); }

//===----------------------------------------------------------------------===//
// Neural-network ops
//===----------------------------------------------------------------------===//

static LogicalResult verifyDim(Operation *op, int64_t dim, Value v) {
  int64_t rank = shapeOf(v).size();
  if (dim < 0 || dim >= rank)
    return op->emitOpError() << "dim " << dim << " is out of range for rank "
                             << rank;
  return success();
}
LogicalResult SoftmaxOp::verify() { return verifyDim(*this, getDim(), getInput()); }
LogicalResult SoftmaxGradOp::verify() {
  return verifyDim(*this, getDim(), getOutput());
}

static LogicalResult verifyNormParam(Operation *op, Value x, Value p,
                                     StringRef what) {
  ArrayRef<int64_t> xs = shapeOf(x);
  if (xs.empty())
    return op->emitOpError() << "input must have rank at least 1";
  return expectShape(op, p, {xs.back()}, what);
}

LogicalResult LayerNormOp::verify() {
  if (failed(verifyNormParam(*this, getInput(), getGamma(), "gamma")) ||
      failed(verifyNormParam(*this, getInput(), getBeta(), "beta")))
    return failure();
  return expectShape(*this, getResult(), shapeOf(getInput()), "result");
}

LogicalResult RMSNormOp::verify() {
  if (failed(verifyNormParam(*this, getInput(), getWeight(), "weight")))
    return failure();
  return expectShape(*this, getResult(), shapeOf(getInput()), "result");
}

LogicalResult LayerNormGradOp::verify() {
  return verifyNormParam(*this, getInput(), getGamma(), "gamma");
}
LogicalResult RMSNormGradOp::verify() {
  return verifyNormParam(*this, getInput(), getWeight(), "weight");
}

static LogicalResult verifyRotaryShapes(Operation *op, Value x, Value cos,
                                        Value sin, Value result) {
  ArrayRef<int64_t> xs = shapeOf(x);
  if (xs.size() < 2)
    return op->emitOpError() << "input must have rank at least 2 ([..., s, d])";
  if (xs.back() % 2)
    return op->emitOpError() << "last dimension " << xs.back()
                             << " must be even (rotated in pairs)";
  SmallVector<int64_t> table{xs[xs.size() - 2], xs.back() / 2};
  if (failed(expectShape(op, cos, table, "cos")) ||
      failed(expectShape(op, sin, table, "sin")))
    return failure();
  return expectShape(op, result, xs, "result");
}
LogicalResult RotaryOp::verify() {
  return verifyRotaryShapes(*this, getInput(), getCos(), getSin(), getResult());
}
LogicalResult RotaryGradOp::verify() {
  return verifyRotaryShapes(*this, getGrad(), getCos(), getSin(), getResult());
}

/// A vocab-parallel embedding shards over a mesh axis of its plan.
static LogicalResult verifyVocabAxis(Operation *op,
                                     std::optional<StringRef> axis) {
  if (op->hasAttr("vocab_offset") && axis)
    return op->emitOpError() << "takes either vocab_axis or vocab_offset";
  if (auto off = op->getAttrOfType<IntegerAttr>("vocab_offset");
      off && off.getInt() < 0)
    return op->emitOpError() << "vocab_offset must not be negative";
  if (!axis)
    return success();
  auto plan = op->getParentOfType<PlanOp>();
  if (!plan)
    return op->emitOpError() << "has a vocab_axis but runs on one device (not "
                                "in a plan)";
  MeshOp mesh = plan.getMeshOp();
  if (mesh && mesh.getAxisIndex(*axis) < 0)
    return op->emitOpError() << "vocab_axis '" << *axis
                             << "' is not an axis of mesh @"
                             << mesh.getSymName();
  return success();
}

LogicalResult EmbeddingOp::verify() {
  if (failed(verifyVocabAxis(*this, getVocabAxis())))
    return failure();
  ArrayRef<int64_t> t = shapeOf(getTable());
  if (t.size() != 2)
    return emitOpError() << "table must have rank 2 ([vocab, hidden])";
  SmallVector<int64_t> expected(shapeOf(getIds()));
  expected.push_back(t[1]);
  return expectShape(*this, getResult(), expected, "result");
}

LogicalResult EmbeddingGradOp::verify() {
  if (failed(verifyVocabAxis(*this, getVocabAxis())))
    return failure();
  ArrayRef<int64_t> t = shapeOf(getResult());
  if (t.size() != 2)
    return emitOpError() << "result must have rank 2 ([vocab, hidden])";
  SmallVector<int64_t> expected(shapeOf(getIds()));
  expected.push_back(t[1]);
  return expectShape(*this, getGrad(), expected, "grad");
}

LogicalResult CausalMaskOp::verify() {
  ArrayRef<int64_t> s = shapeOf(getResult());
  if (s.size() != 2)
    return emitOpError() << "mask must have rank 2 ([s_q, s_k])";
  if (s[0] > s[1])
    return emitOpError() << "has more queries (" << s[0] << ") than keys ("
                         << s[1] << ")";
  return success();
}

static LogicalResult verifyMaskShapes(Operation *op, Value x, Value mask,
                                      Value result) {
  ArrayRef<int64_t> xs = shapeOf(x);
  if (xs.size() < 2)
    return op->emitOpError() << "input must have rank at least 2";
  if (failed(expectShape(op, mask, xs.take_back(2), "mask")))
    return failure();
  return expectShape(op, result, xs, "result");
}
LogicalResult ApplyMaskOp::verify() {
  return verifyMaskShapes(*this, getInput(), getMask(), getResult());
}
LogicalResult ApplyMaskGradOp::verify() {
  return verifyMaskShapes(*this, getGrad(), getMask(), getResult());
}

LogicalResult CrossEntropyOp::verify() {
  ArrayRef<int64_t> l = shapeOf(getLogits());
  if (l.size() != 2)
    return emitOpError() << "logits must have rank 2 ([n, vocab])";
  if (failed(expectShape(*this, getLabels(), {l[0]}, "labels")))
    return failure();
  return expectShape(*this, getResult(), {}, "result");
}

LogicalResult CrossEntropyGradOp::verify() {
  ArrayRef<int64_t> l = shapeOf(getLogits());
  if (l.size() != 2)
    return emitOpError() << "logits must have rank 2 ([n, vocab])";
  if (failed(expectShape(*this, getLabels(), {l[0]}, "labels")) ||
      failed(expectShape(*this, getGrad(), {}, "grad")))
    return failure();
  return expectShape(*this, getResult(), l, "result");
}

LogicalResult MaxGradOp::verify() {
  ArrayRef<int64_t> in = shapeOf(getInput());
  if (getDims().empty())
    return emitOpError() << "must reduce at least one dimension";
  if (failed(checkDims(*this, getDims(), in.size())) ||
      failed(expectShape(*this, getGrad(),
                         reducedShape(in, getDims(), getKeepdim()), "grad")))
    return failure();
  return expectShape(*this, getResult(), in, "result");
}

LogicalResult MeanGradOp::verify() {
  ArrayRef<int64_t> out = shapeOf(getResult());
  if (getDims().empty())
    return emitOpError() << "must reduce at least one dimension";
  if (failed(checkDims(*this, getDims(), out.size())))
    return failure();
  return expectShape(*this, getGrad(), reducedShape(out, getDims(), getKeepdim()),
                     "grad");
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

LogicalResult ReshapeOp::verify() {
  if (numElements(shapeOf(getInput())) != numElements(shapeOf(getResult())))
    return emitOpError() << "changes the element count: "
                         << str(shapeOf(getInput())) << " to "
                         << str(shapeOf(getResult()));
  return success();
}

LogicalResult TransposeOp::verify() {
  ArrayRef<int64_t> in = shapeOf(getInput());
  if (getPerm().size() != in.size())
    return emitOpError() << "perm has " << getPerm().size()
                         << " entries for rank " << in.size();
  if (failed(checkDims(*this, getPerm(), in.size(), "perm")))
    return failure();
  SmallVector<int64_t> expected;
  for (int64_t p : getPerm())
    expected.push_back(in[p]);
  return expectShape(*this, getResult(), expected, "result");
}

static LogicalResult verifyBoxInside(Operation *op, ArrayRef<int64_t> start,
                                     ArrayRef<int64_t> inner,
                                     ArrayRef<int64_t> outer) {
  if (start.size() != outer.size() || inner.size() != outer.size())
    return op->emitOpError() << "start, slice and tensor ranks differ ("
                             << start.size() << ", " << inner.size() << ", "
                             << outer.size() << ")";
  for (size_t i = 0; i < outer.size(); ++i)
    if (start[i] < 0 || start[i] + inner[i] > outer[i])
      return op->emitOpError()
             << "box dimension " << i << " [" << start[i] << ", "
             << start[i] + inner[i] << ") is outside [0, " << outer[i] << ")";
  return success();
}

LogicalResult SliceOp::verify() {
  return verifyBoxInside(*this, getStart(), shapeOf(getResult()),
                         shapeOf(getInput()));
}

LogicalResult SliceGradOp::verify() {
  return verifyBoxInside(*this, getStart(), shapeOf(getGrad()),
                         shapeOf(getResult()));
}

LogicalResult ConcatOp::verify() {
  if (getInputs().empty())
    return emitOpError() << "needs at least one input";
  ArrayRef<int64_t> first = shapeOf(getInputs()[0]);
  int64_t dim = getDim();
  if (dim < 0 || dim >= (int64_t)first.size())
    return emitOpError() << "dim " << dim << " is out of range for rank "
                         << first.size();
  SmallVector<int64_t> expected(first);
  expected[dim] = 0;
  for (Value in : getInputs()) {
    ArrayRef<int64_t> s = shapeOf(in);
    if (s.size() != first.size())
      return emitOpError() << "inputs have different ranks";
    for (size_t i = 0; i < s.size(); ++i)
      if ((int64_t)i != dim && s[i] != first[i])
        return emitOpError() << "inputs differ in dimension " << i << ": "
                             << s[i] << " vs " << first[i];
    expected[dim] += s[dim];
  }
  return expectShape(*this, getResult(), expected, "result");
}

LogicalResult BroadcastOp::verify() {
  auto shape = broadcastShapes(shapeOf(getInput()), shapeOf(getResult()));
  if (!shape || *shape != shapeOf(getResult()))
    return emitOpError() << "cannot broadcast " << str(shapeOf(getInput()))
                         << " to " << str(shapeOf(getResult()));
  return success();
}

//===----------------------------------------------------------------------===//
// Mixture of experts
//===----------------------------------------------------------------------===//

LogicalResult TopKGateOp::verify() {
  ArrayRef<int64_t> s = shapeOf(getInput());
  if (s.size() != 2)
    return emitOpError() << "logits must have rank 2 ([tokens, experts])";
  if ((int64_t)getK() < 1 || (int64_t)getK() > s[1])
    return emitOpError() << "k = " << getK() << " must be in [1, " << s[1]
                         << "]";
  return success();
}

static LogicalResult verifyExpertShapes(Operation *op, Value tokens,
                                        Value gates, Value experts) {
  ArrayRef<int64_t> x = shapeOf(tokens), g = shapeOf(gates);
  if (x.size() != 2 || g.size() != 2)
    return op->emitOpError() << "tokens and gates must have rank 2";
  if (g[0] != x[0])
    return op->emitOpError() << "gates cover " << g[0] << " tokens, input has "
                             << x[0];
  return expectShape(op, experts, {g[1], x[0], x[1]}, "expert tensor");
}
LogicalResult DispatchOp::verify() {
  return verifyExpertShapes(*this, getInput(), getGates(), getResult());
}
LogicalResult CombineOp::verify() {
  return verifyExpertShapes(*this, getResult(), getGates(), getInput());
}
LogicalResult DispatchGradOp::verify() {
  return verifyExpertShapes(*this, getResult(), getGates(), getGrad());
}
LogicalResult CombineGradOp::verify() {
  return verifyExpertShapes(*this, getGrad(), getGates(), getInput());
}

LogicalResult LinearGradOp::verify() {
  ArrayRef<int64_t> x = shapeOf(getInput()), w = shapeOf(getWeight());
  if (x.empty() || w.size() != 2)
    return emitOpError() << "input must have rank >= 1 and weight rank 2";
  if (x.back() != w[1])
    return emitOpError() << "input features " << x.back()
                         << " differ from weight columns " << w[1];
  SmallVector<int64_t> dy(x.drop_back());
  dy.push_back(w[0]);
  return expectShape(*this, getGrad(), dy, "grad");
}

//===----------------------------------------------------------------------===//
// Folders: identities fold to their input.
//===----------------------------------------------------------------------===//

static bool isConst(FloatAttr a, double v) { return a.getValueAsDouble() == v; }

/// A result that carries a tensor name of its own (tv.tag / tv.output) is not
/// redundant: folding it would merge two named tensors into one value and
/// hide the op that computes the second from diagnostics.
static bool isNamed(Value v) {
  return llvm::any_of(v.getUsers(),
                      [](Operation *u) { return isa<TagOp, OutputOp>(u); });
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
OpFoldResult DivScalarOp::fold(FoldAdaptor) {
  if (isNamed(getResult()))
    return {};
  return isConst(getScalarAttr(), 1) ? getInput() : OpFoldResult();
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
OpFoldResult ReshapeOp::fold(FoldAdaptor) {
  if (isNamed(getResult()))
    return {};
  return getInput().getType() == getType() ? getInput() : OpFoldResult();
}
OpFoldResult TransposeOp::fold(FoldAdaptor) {
  if (isNamed(getResult()))
    return {};
  for (auto [i, p] : llvm::enumerate(getPerm()))
    if ((int64_t)i != p)
      return {};
  return getInput();
}
OpFoldResult SliceOp::fold(FoldAdaptor) {
  if (isNamed(getResult()))
    return {};
  if (getInput().getType() != getType())
    return {};
  return llvm::all_of(getStart(), [](int64_t s) { return s == 0; })
             ? OpFoldResult(getInput())
             : OpFoldResult();
}
OpFoldResult BroadcastOp::fold(FoldAdaptor) {
  if (isNamed(getResult()))
    return {};
  return getInput().getType() == getType() ? getInput() : OpFoldResult();
}

//===----------------------------------------------------------------------===//
// Routed experts (nnScaler / DeepSeek-V3)
//===----------------------------------------------------------------------===//

/// Tokens `[t, h]` and router `[e, h]`; the selection parameters fit `e`.
static LogicalResult verifyRouter(Operation *op, Value input, Value weight,
                                  int64_t k, int64_t groups,
                                  int64_t topkGroups) {
  ArrayRef<int64_t> x = shapeOf(input), w = shapeOf(weight);
  if (x.size() != 2 || w.size() != 2)
    return op->emitOpError() << "tokens and router weight must have rank 2";
  if (w[1] != x[1])
    return op->emitOpError() << "router weight has hidden size " << w[1]
                             << ", tokens have " << x[1];
  int64_t e = w[0];
  if (groups < 1 || e % groups != 0)
    return op->emitOpError() << "n_groups " << groups << " must divide the "
                             << e << " experts";
  if (topkGroups < 1 || topkGroups > groups)
    return op->emitOpError() << "topk_groups " << topkGroups
                             << " must be in [1, " << groups << "]";
  if (k < 1 || k > topkGroups * (e / groups))
    return op->emitOpError() << "k = " << k << " must be in [1, "
                             << topkGroups * (e / groups)
                             << "] (the experts of the kept groups)";
  return success();
}

LogicalResult MoEGateOp::verify() {
  if (failed(verifyRouter(*this, getInput(), getWeight(), getK(), getNGroups(),
                          getTopkGroups())))
    return failure();
  SmallVector<int64_t> out{shapeOf(getInput())[0], (int64_t)getK()};
  if (failed(expectShape(*this, getWeights(), out, "weights")) ||
      failed(expectShape(*this, getIndices(), out, "indices")))
    return failure();
  return success();
}

LogicalResult MoEGateGradOp::verify() {
  if (failed(verifyRouter(*this, getInput(), getWeight(), getK(), getNGroups(),
                          getTopkGroups())))
    return failure();
  return expectShape(*this, getGrad(),
                     {shapeOf(getInput())[0], (int64_t)getK()}, "grad");
}

/// Tokens `[t, h]`, routing `[t, k]`, local experts `w1`, `w3` `[n, f, h]`
/// and `w2` `[n, h, f]`.
static LogicalResult verifyExperts(Operation *op, Value input, Value indices,
                                   Value weights, Value w1, Value w3,
                                   Value w2, int64_t start) {
  ArrayRef<int64_t> x = shapeOf(input), i = shapeOf(indices);
  if (x.size() != 2 || i.size() != 2)
    return op->emitOpError() << "tokens and indices must have rank 2";
  if (i[0] != x[0])
    return op->emitOpError() << "indices cover " << i[0]
                             << " tokens, input has " << x[0];
  if (failed(expectShape(op, weights, i, "routing weights")))
    return failure();
  ArrayRef<int64_t> a = shapeOf(w1);
  if (a.size() != 3 || a[2] != x[1])
    return op->emitOpError() << "w1 must be [experts, ffn, " << x[1]
                             << "], got " << str(a);
  if (failed(expectShape(op, w3, a, "w3")) ||
      failed(expectShape(op, w2, {a[0], a[2], a[1]}, "w2")))
    return failure();
  if (start < 0)
    return op->emitOpError() << "expert_start " << start << " is negative";
  return success();
}

LogicalResult MoEGmmOp::verify() {
  if (failed(verifyExperts(*this, getInput(), getIndices(), getWeights(),
                           getW1(), getW3(), getW2(), getExpertStart())))
    return failure();
  return expectShape(*this, getResult(), shapeOf(getInput()), "result");
}

LogicalResult MoEGmmGradOp::verify() {
  if (failed(verifyExperts(*this, getInput(), getIndices(), getWeights(),
                           getW1(), getW3(), getW2(), getExpertStart())))
    return failure();
  return expectShape(*this, getGrad(), shapeOf(getInput()), "grad");
}

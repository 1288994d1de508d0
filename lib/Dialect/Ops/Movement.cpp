//===- Movement.cpp - reshape, transpose, slice, concat -------------------===//
//
// Data movement. Reshape relates products of dimensions, slices keep the
// ratio of their start to the sliced dimension.
//
//===----------------------------------------------------------------------===//
#include "OpFamily.h"

using namespace mlir;
using namespace mlir::tv;
using namespace mlir::tv::ops;

//===----------------------------------------------------------------------===//
// Verifiers and folders
//===----------------------------------------------------------------------===//

static LogicalResult verifyBoxInside(Operation *op, ArrayRef<int64_t> start,
                                     ArrayRef<int64_t> inner,
                                     ArrayRef<int64_t> outer) {
  if (start.size() != outer.size() || inner.size() != outer.size())
    return op->emitOpError()
           << "start, slice and tensor ranks differ (" << start.size() << ", "
           << inner.size() << ", " << outer.size() << ")";
  for (size_t i = 0; i < outer.size(); ++i)
    if (start[i] < 0 || start[i] + inner[i] > outer[i])
      return op->emitOpError()
             << "box dimension " << i << " [" << start[i] << ", "
             << start[i] + inner[i] << ") is outside [0, " << outer[i] << ")";
  return success();
}

LogicalResult ReshapeOp::verify() {
  if (numElements(shapeOf(getInput())) != numElements(shapeOf(getResult())))
    return emitOpError() << "changes the element count: "
                         << str(shapeOf(getInput())) << " to "
                         << str(shapeOf(getResult()));
  return success();
}

OpFoldResult ReshapeOp::fold(FoldAdaptor) {
  if (isNamed(getResult()))
    return {};
  return getInput().getType() == getType() ? getInput() : OpFoldResult();
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

OpFoldResult TransposeOp::fold(FoldAdaptor) {
  if (isNamed(getResult()))
    return {};
  for (auto [i, p] : llvm::enumerate(getPerm()))
    if ((int64_t)i != p)
      return {};
  return getInput();
}

LogicalResult SliceOp::verify() {
  return verifyBoxInside(*this, getStart(), shapeOf(getResult()),
                         shapeOf(getInput()));
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

//===----------------------------------------------------------------------===//
// Meaning
//===----------------------------------------------------------------------===//

template <typename D> static EvalStatus evaluate(ReshapeOp, Evaluator<D> &ev) {
  using T = Tensor<typename D::V>;
  auto in = ev.in;
  auto &out = ev.out;
  T res = *in[0];
  res.shape = ev.result();
  out.push_back(std::move(res));
  return std::nullopt;
}
TV_EVALUATE_BY_TEMPLATE(ReshapeOp)

template <typename D>
static EvalStatus evaluate(TransposeOp o, Evaluator<D> &ev) {
  using T = Tensor<typename D::V>;
  auto in = ev.in;
  auto &out = ev.out;
  const T &x = *in[0];
  Shape rs = ev.result();
  T res = ev.make(rs);
  SmallVector<int64_t> idx, src(x.shape.size());
  for (int64_t i = 0, e = res.data.size(); i < e; ++i) {
    unravel(i, rs, idx);
    for (auto [k, p] : llvm::enumerate(o.getPerm()))
      src[p] = idx[k];
    res.data[i] = x.data[ravel(src, x.shape)];
  }
  out.push_back(std::move(res));
  return std::nullopt;
}
TV_EVALUATE_BY_TEMPLATE(TransposeOp)

template <typename D> static EvalStatus evaluate(SliceOp o, Evaluator<D> &ev) {
  using T = Tensor<typename D::V>;
  auto in = ev.in;
  auto &out = ev.out;
  const T &x = *in[0];
  Shape rs = ev.result();
  T res = ev.make(rs);
  SmallVector<int64_t> idx;
  for (int64_t i = 0, e = res.data.size(); i < e; ++i) {
    unravel(i, rs, idx);
    for (auto [k, s] : llvm::enumerate(o.getStart()))
      idx[k] += s;
    res.data[i] = x.data[ravel(idx, x.shape)];
  }
  out.push_back(std::move(res));
  return std::nullopt;
}
TV_EVALUATE_BY_TEMPLATE(SliceOp)

template <typename D>
static EvalStatus evaluate(SliceGradOp o, Evaluator<D> &ev) {
  using T = Tensor<typename D::V>;
  auto in = ev.in;
  auto &out = ev.out;
  const T &g = *in[0];
  T res = ev.make(ev.result());
  SmallVector<int64_t> idx;
  for (int64_t i = 0, e = g.data.size(); i < e; ++i) {
    unravel(i, g.shape, idx);
    for (auto [k, s] : llvm::enumerate(o.getStart()))
      idx[k] += s;
    res.data[ravel(idx, res.shape)] = g.data[i];
  }
  out.push_back(std::move(res));
  return std::nullopt;
}
TV_EVALUATE_BY_TEMPLATE(SliceGradOp)

template <typename D> static EvalStatus evaluate(ConcatOp o, Evaluator<D> &ev) {
  using T = Tensor<typename D::V>;
  auto in = ev.in;
  auto &out = ev.out;
  Shape rs = ev.result();
  T res = ev.make(rs);
  int64_t dim = o.getDim(), off = 0;
  SmallVector<int64_t> idx;
  for (const T *x : in) {
    for (int64_t i = 0, e = x->data.size(); i < e; ++i) {
      unravel(i, x->shape, idx);
      idx[dim] += off;
      res.data[ravel(idx, rs)] = x->data[i];
    }
    off += x->shape[dim];
  }
  out.push_back(std::move(res));
  return std::nullopt;
}
TV_EVALUATE_BY_TEMPLATE(ConcatOp)

//===----------------------------------------------------------------------===//
// Structure and rules
//===----------------------------------------------------------------------===//

/// Groups of input and output dimensions with equal products keep equal
/// products; unit dimensions stay 1. A reshape that no grouping explains
/// keeps every dimension.
static void addReshapeConstraints(ShapeConstraints &c, Operation *op, Value in,
                                  Value out) {
  ArrayRef<int64_t> a = shapeOf(in), b = shapeOf(out);
  unsigned i = 0, j = 0;
  while (i < a.size() || j < b.size()) {
    SmallVector<DimRef> l, r;
    int64_t pa = 1, pb = 1;
    // Skip unit dims (fixed at 1).
    if (i < a.size() && a[i] == 1) {
      ++i;
      continue;
    }
    if (j < b.size() && b[j] == 1) {
      ++j;
      continue;
    }
    if (i < a.size()) {
      l.push_back(key(in, i));
      pa = a[i++];
    }
    if (j < b.size()) {
      r.push_back(key(out, j));
      pb = b[j++];
    }
    while (pa != pb) {
      if (pa < pb && i < a.size()) {
        if (a[i] != 1)
          l.push_back(key(in, i));
        pa *= a[i++];
      } else if (pb < pa && j < b.size()) {
        if (b[j] != 1)
          r.push_back(key(out, j));
        pb *= b[j++];
      } else {
        break;
      }
    }
    if (pa != pb || l.empty() || r.empty()) {
      c.fix(in);
      c.fix(out);
      return;
    }
    c.product(op, l, r);
  }
}

void ReshapeOp::addShapeConstraints(ShapeConstraints &c) {
  ReshapeOp o = *this;
  addReshapeConstraints(c, o, o->getOperand(0), o->getResult(0));
}

void TransposeOp::addShapeConstraints(ShapeConstraints &c) {
  TransposeOp o = *this;
  for (auto [i, p] : llvm::enumerate(o.getPerm()))
    c.equal(o, key(o->getResult(0), i), key(o->getOperand(0), p));
}

static void sliceShapeRule(Operation *o, ShapeConstraints &c) {
  bool isGrad = isa<SliceGradOp>(o);
  Value big = isGrad ? o->getResult(0) : o->getOperand(0);
  Value small = isGrad ? o->getOperand(0) : o->getResult(0);
  auto start = cast<DenseI64ArrayAttr>(o->getAttr("start")).asArrayRef();
  for (unsigned d = 0; d < rankOf(big); ++d) {
    if (shapeOf(big)[d] == shapeOf(small)[d] && start[d] == 0) {
      c.equal(o, key(big, d), key(small, d));
      continue;
    }
    // Keep the ratios: N_big * n_small = N_small * n_big, and the
    // start scales to an integer.
    int64_t nb = shapeOf(big)[d], ns = shapeOf(small)[d];
    c.linear(o, {{nb, key(small, d)}}, {{ns, key(big, d)}});
    c.sliceStart(o, d, start[d], key(big, d));
  }
}

TV_SHAPE_RULE_BY(SliceOp, sliceShapeRule)
TV_SHAPE_RULE_BY(SliceGradOp, sliceShapeRule)

void ConcatOp::addShapeConstraints(ShapeConstraints &c) {
  ConcatOp o = *this;
  int64_t dim = o.getDim();
  SmallVector<std::pair<int64_t, DimRef>> parts;
  for (Value v : o.getInputs()) {
    for (unsigned d = 0; d < rankOf(v); ++d)
      if ((int64_t)d != dim)
        c.equal(o, key(v, d), key(o->getResult(0), d));
    parts.push_back({1, key(v, dim)});
  }
  c.linear(o, parts, {{1, key(o->getResult(0), dim)}});
}

FoldFact ReshapeOp::getFoldFact(ArrayRef<FoldFact> operands, unsigned result,
                                int64_t axisSize, std::string &why) {
  ReshapeOp o = *this;
  // Block c of the input is a set of flattened positions; the output
  // is factored along k iff that set is block c of dimension k: equal
  // products before the factored dimensions (the total then fixes the
  // products after them).
  ArrayRef<int64_t> in = shapeOf(o->getOperand(0)),
                    out = shapeOf(o.getResult());
  int d = operands[0].dim;
  int64_t pre = 1;
  for (int i = 0; i < d; ++i)
    pre *= in[i];
  int64_t opre = 1;
  for (int k = 0; k < (int)out.size(); ++k) {
    if (opre == pre && out[k] % axisSize == 0)
      return FoldFact::par(k);
    opre *= out[k];
  }
  return notFoldable(why, "reshape splits the factored blocks");
}

FoldFact TransposeOp::getFoldFact(ArrayRef<FoldFact> operands, unsigned result,
                                  int64_t axisSize, std::string &why) {
  TransposeOp o = *this;
  for (auto [i, p] : llvm::enumerate(o.getPerm()))
    if (p == operands[0].dim)
      return FoldFact::par(i);
  return notFoldable(why, "bad permutation");
}

static FoldFact sliceFoldFact(Operation *o, ArrayRef<FoldFact> operands,
                              unsigned result, int64_t axisSize,
                              std::string &why) {
  Value small = isa<SliceGradOp>(o) ? o->getOperand(0) : o->getResult(0);
  Value big = isa<SliceGradOp>(o) ? o->getResult(0) : o->getOperand(0);
  int d = operands[0].dim;
  auto start = cast<DenseI64ArrayAttr>(o->getAttr("start")).asArrayRef();
  if (start[d] != 0 || shapeOf(small)[d] != shapeOf(big)[d])
    return notFoldable(why, "slice along the factored dimension");
  return FoldFact::par(d);
}

TV_FOLD_FACT_BY(SliceOp, sliceFoldFact)
TV_FOLD_FACT_BY(SliceGradOp, sliceFoldFact)

FoldFact ConcatOp::getFoldFact(ArrayRef<FoldFact> operands, unsigned result,
                               int64_t axisSize, std::string &why) {
  ConcatOp o = *this;
  int d = operands[0].dim;
  if (d == (int64_t)o.getDim())
    return notFoldable(why, "concat along the factored dimension");
  for (FoldFact fv : operands)
    if (!fv.isPar(d))
      return notFoldable(why, "concat factored inconsistently");
  return FoldFact::par(d);
}

//===----------------------------------------------------------------------===//
// Backward ops
//===----------------------------------------------------------------------===//

unsigned SliceGradOp::getCotangentIndex() { return 0; }

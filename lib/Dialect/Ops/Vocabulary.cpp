//===- Vocabulary.cpp - embedding and cross-entropy -----------------------===//
//
// Ops over a vocabulary: embedding lookup (optionally vocabulary-parallel)
// and cross-entropy, forward and backward.
//
//===----------------------------------------------------------------------===//
#include "OpFamily.h"

using namespace mlir;
using namespace mlir::tv;
using namespace mlir::tv::ops;

//===----------------------------------------------------------------------===//
// Verifiers and folders
//===----------------------------------------------------------------------===//

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
    return op->emitOpError()
           << "vocab_axis '" << *axis << "' is not an axis of mesh @"
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

/// `rows` (named `role` in the error) is `[n, vocab]` and `labels` is `[n]`.
static LogicalResult verifyRowsAndLabels(Operation *op, Value rows,
                                         StringRef role, Value labels) {
  ArrayRef<int64_t> s = shapeOf(rows);
  if (s.size() != 2)
    return op->emitOpError() << role << " must have rank 2 ([n, vocab])";
  return expectShape(op, labels, {s[0]}, "labels");
}

LogicalResult CrossEntropyOp::verify() {
  if (failed(verifyRowsAndLabels(*this, getLogits(), "logits", getLabels())))
    return failure();
  return expectShape(*this, getResult(), {}, "result");
}

LogicalResult CrossEntropyGradOp::verify() {
  if (failed(verifyRowsAndLabels(*this, getLogits(), "logits", getLabels())) ||
      failed(expectShape(*this, getGrad(), {}, "grad")))
    return failure();
  return expectShape(*this, getResult(), shapeOf(getLogits()), "result");
}

LogicalResult TargetLogitOp::verify() {
  if (failed(verifyVocabAxis(*this, getVocabAxis())) ||
      failed(verifyRowsAndLabels(*this, getLogits(), "logits", getLabels())))
    return failure();
  return expectShape(*this, getResult(), {shapeOf(getLogits())[0]}, "result");
}

LogicalResult TargetLogitGradOp::verify() {
  if (failed(verifyVocabAxis(*this, getVocabAxis())) ||
      failed(verifyRowsAndLabels(*this, getResult(), "result", getLabels())))
    return failure();
  return expectShape(*this, getGrad(), {shapeOf(getResult())[0]}, "grad");
}

LogicalResult VocabMaskOp::verify() {
  if (failed(verifyVocabAxis(*this, getVocabAxis())))
    return failure();
  if (rankOf(getResult()) != 2)
    return emitOpError() << "result must have rank 2 ([n, vocab])";
  if ((int64_t)getVocabSize() <= 0)
    return emitOpError() << "vocab_size must be positive";
  return success();
}

//===----------------------------------------------------------------------===//
// Meaning
//===----------------------------------------------------------------------===//

/// The first vocabulary row or column a shard of `size` holds.
template <typename Op, typename D>
static std::optional<int64_t> vocabOffset(Op o, Evaluator<D> &ev,
                                          int64_t size, std::string &err) {
  int64_t offset = o.getVocabOffset() ? (int64_t)*o.getVocabOffset() : 0;
  if (auto axis = o.getVocabAxis()) {
    int64_t c = ev.coord(*axis);
    if (c < 0) {
      err = "vocab_axis '" + axis->str() + "' is not a mesh axis";
      return std::nullopt;
    }
    offset = c * size;
  }
  return offset;
}

/// The offset of the vocabulary shard of `rows` rows that ids look up; ids
/// read against a whole (unsharded) vocabulary are recorded as lying in it.
template <typename Op, typename D>
static std::optional<int64_t>
lookupOffset(Op o, Evaluator<D> &ev, const Tensor<typename D::V> &ids,
             int64_t rows, std::string &err) {
  std::optional<int64_t> off = vocabOffset(o, ev, rows, err);
  if (off && !o.getVocabAxis() && !o.getVocabOffset())
    for (const auto &id : ids.data)
      ev.d.idInVocabulary(id, rows);
  return off;
}

template <typename D>
static EvalStatus evaluate(EmbeddingOp o, Evaluator<D> &ev) {
  using V = typename D::V;
  using T = Tensor<typename D::V>;
  D &d = ev.d;
  auto in = ev.in;
  auto &out = ev.out;
  const T &ids = *in[0], &table = *in[1];
  int64_t rows = table.shape[0], h = table.shape[1];
  std::string err;
  std::optional<int64_t> off = lookupOffset(o, ev, ids, rows, err);
  if (!off)
    return err;
  int64_t offset = *off;
  T res = ev.make(ev.result());
  SmallVector<V> column(rows);
  for (int64_t j = 0; j < h; ++j) {
    for (int64_t r = 0; r < rows; ++r)
      column[r] = table.data[r * h + j];
    for (size_t p = 0; p < ids.data.size(); ++p)
      res.data[p * h + j] = d.select(ids.data[p], offset, column);
  }
  out.push_back(std::move(res));
  return std::nullopt;
}
TV_EVALUATE_BY_TEMPLATE(EmbeddingOp)

template <typename D>
static EvalStatus evaluate(EmbeddingGradOp o, Evaluator<D> &ev) {
  using V = typename D::V;
  using T = Tensor<typename D::V>;
  D &d = ev.d;
  auto in = ev.in;
  auto &out = ev.out;
  const T &ids = *in[0], &g = *in[1];
  Shape rs = ev.result();
  int64_t rows = rs[0], h = rs[1];
  std::string err;
  std::optional<int64_t> off = lookupOffset(o, ev, ids, rows, err);
  if (!off)
    return err;
  int64_t offset = *off;
  T res = ev.make(rs);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < h; ++j) {
      V s = d.zero();
      for (size_t p = 0; p < ids.data.size(); ++p)
        s = d.add(s, d.select(ids.data[p], offset + r, {g.data[p * h + j]}));
      res.data[r * h + j] = s;
    }
  out.push_back(std::move(res));
  return std::nullopt;
}
TV_EVALUATE_BY_TEMPLATE(EmbeddingGradOp)

template <typename D>
static EvalStatus evaluate(CrossEntropyOp, Evaluator<D> &ev) {
  using V = typename D::V;
  using T = Tensor<typename D::V>;
  D &d = ev.d;
  auto in = ev.in;
  auto &out = ev.out;
  const T &l = *in[0], &lab = *in[1];
  int64_t n = l.shape[0], v = l.shape[1];
  for (V id : lab.data)
    d.idInVocabulary(id, v);
  V total = d.zero();
  for (int64_t i = 0; i < n; ++i) {
    ArrayRef<V> row(l.data.data() + i * v, v);
    total = d.add(total,
                  d.sub(ev.logSumExp(row), d.select(lab.data[i], 0, row)));
  }
  T res = ev.make({});
  res.data[0] = d.divInt(total, n);
  out.push_back(std::move(res));
  return std::nullopt;
}
TV_EVALUATE_BY_TEMPLATE(CrossEntropyOp)

template <typename D>
static EvalStatus evaluate(CrossEntropyGradOp, Evaluator<D> &ev) {
  using V = typename D::V;
  using T = Tensor<typename D::V>;
  D &d = ev.d;
  auto in = ev.in;
  auto &out = ev.out;
  const T &l = *in[0], &lab = *in[1], &g = *in[2];
  int64_t n = l.shape[0], v = l.shape[1];
  for (V id : lab.data)
    d.idInVocabulary(id, v);
  T res = ev.make(l.shape);
  V scale = d.divInt(g.data[0], n);
  for (int64_t i = 0; i < n; ++i) {
    SmallVector<V> sm =
        ev.softmax(ArrayRef<V>(l.data.data() + i * v, v));
    for (int64_t j = 0; j < v; ++j)
      res.data[i * v + j] = d.mul(
          scale, d.sub(sm[j], d.select(lab.data[i], j, {d.one()})));
  }
  out.push_back(std::move(res));
  return std::nullopt;
}
TV_EVALUATE_BY_TEMPLATE(CrossEntropyGradOp)

template <typename D>
static EvalStatus evaluate(TargetLogitOp o, Evaluator<D> &ev) {
  using V = typename D::V;
  using T = Tensor<typename D::V>;
  D &d = ev.d;
  const T &l = *ev.in[0], &lab = *ev.in[1];
  int64_t n = l.shape[0], v = l.shape[1];
  std::string err;
  std::optional<int64_t> offset = vocabOffset(o, ev, v, err);
  if (!offset)
    return err;
  if (!o.getVocabAxis() && !o.getVocabOffset())
    for (int64_t i = 0; i < n; ++i)
      d.idInVocabulary(lab.data[i], v);
  T res = ev.make({n});
  for (int64_t i = 0; i < n; ++i)
    res.data[i] =
        d.select(lab.data[i], *offset, ArrayRef<V>(l.data.data() + i * v, v));
  ev.out.push_back(std::move(res));
  return std::nullopt;
}
TV_EVALUATE_BY_TEMPLATE(TargetLogitOp)

template <typename D>
static EvalStatus evaluate(TargetLogitGradOp o, Evaluator<D> &ev) {
  using T = Tensor<typename D::V>;
  D &d = ev.d;
  const T &lab = *ev.in[0], &g = *ev.in[1];
  Shape rs = ev.result();
  int64_t n = rs[0], v = rs[1];
  std::string err;
  std::optional<int64_t> offset = vocabOffset(o, ev, v, err);
  if (!offset)
    return err;
  T res = ev.make(rs);
  // As tv.cross_entropy_grad forms its one-hot term: dy times the
  // indicator of the label's column.
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < v; ++j)
      res.data[i * v + j] =
          d.mul(g.data[i], d.select(lab.data[i], *offset + j, {d.one()}));
  ev.out.push_back(std::move(res));
  return std::nullopt;
}
TV_EVALUATE_BY_TEMPLATE(TargetLogitGradOp)

template <typename D>
static EvalStatus evaluate(VocabMaskOp o, Evaluator<D> &ev) {
  using T = Tensor<typename D::V>;
  D &d = ev.d;
  Shape rs = ev.result();
  std::string err;
  std::optional<int64_t> offset = vocabOffset(o, ev, rs[1], err);
  if (!offset)
    return err;
  T res = ev.make(rs);
  int64_t real = (int64_t)o.getVocabSize() - *offset;
  for (int64_t i = 0; i < rs[0]; ++i)
    for (int64_t j = 0; j < rs[1]; ++j)
      res.data[i * rs[1] + j] = j < real ? d.one() : d.zero();
  ev.out.push_back(std::move(res));
  return std::nullopt;
}
TV_EVALUATE_BY_TEMPLATE(VocabMaskOp)

//===----------------------------------------------------------------------===//
// Structure and rules
//===----------------------------------------------------------------------===//

void EmbeddingOp::addShapeConstraints(ShapeConstraints &c) {
  EmbeddingOp o = *this;
  Value ids = o->getOperand(0), t = o->getOperand(1), r = o->getResult(0);
  for (unsigned d = 0; d < rankOf(ids); ++d)
    c.equal(o, key(ids, d), key(r, d));
  c.equal(o, key(t, 1), last(r));
  if (auto off = o.getVocabOffset())
    c.vocabOffset(o, (int64_t)*off, t);
}

void EmbeddingGradOp::addShapeConstraints(ShapeConstraints &c) {
  EmbeddingGradOp o = *this;
  Value ids = o->getOperand(0), g = o->getOperand(1), r = o->getResult(0);
  for (unsigned d = 0; d < rankOf(ids); ++d)
    c.equal(o, key(ids, d), key(g, d));
  c.equal(o, key(r, 1), last(g));
  if (auto off = o.getVocabOffset())
    c.vocabOffset(o, (int64_t)*off, r);
}

static void crossEntropyShapeRule(Operation *o, ShapeConstraints &c) {
  Value l = o->getOperand(0), lab = o->getOperand(1);
  c.equal(o, key(l, 0), key(lab, 0));
  c.atLeast(key(l, 1), 2);
  if (o->getNumResults() && rankOf(o->getResult(0)) == 2)
    c.equalShapes(o, l, o->getResult(0));
}

TV_SHAPE_RULE_BY(CrossEntropyOp, crossEntropyShapeRule)

void TargetLogitOp::addShapeConstraints(ShapeConstraints &c) {
  Value l = getLogits(), lab = getLabels(), r = getResult();
  c.equal(*this, key(l, 0), key(lab, 0));
  c.equal(*this, key(l, 0), key(r, 0));
  c.atLeast(key(l, 1), 2);
  if (auto off = getVocabOffset())
    c.vocabOffset(*this, (int64_t)*off, l);
}

void TargetLogitGradOp::addShapeConstraints(ShapeConstraints &c) {
  Value lab = getLabels(), g = getGrad(), r = getResult();
  c.equal(*this, key(lab, 0), key(g, 0));
  c.equal(*this, key(r, 0), key(g, 0));
  c.atLeast(key(r, 1), 2);
  if (auto off = getVocabOffset())
    c.vocabOffset(*this, (int64_t)*off, r);
}
TV_SHAPE_RULE_BY(CrossEntropyGradOp, crossEntropyShapeRule)

void VocabMaskOp::addShapeConstraints(ShapeConstraints &c) {
  // The boundary between real columns and padding keeps its ratio to the
  // shard's width (as a vocab_offset does), and so does the offset.
  Value r = getResult();
  c.atLeast(key(r, 1), 2);
  c.position(*this, "vocab_size", (int64_t)getVocabSize(), key(r, 1));
  if (auto off = getVocabOffset())
    c.position(*this, "vocab_offset", (int64_t)*off, key(r, 1));
}

FoldFact EmbeddingOp::getFoldFact(ArrayRef<FoldFact> operands, unsigned result,
                                  int64_t axisSize, std::string &why) {
  EmbeddingOp o = *this;
  if (o.getVocabOffset())
    return notFoldable(why, "vocabulary-parallel embedding");
  FoldFact fi = operands[0], ft = operands[1];
  if (fi.kind == FoldFact::Par && ft.kind == FoldFact::Rep)
    return FoldFact::par(fi.dim);
  if (fi.kind == FoldFact::Rep && ft.isPar(1))
    return FoldFact::par(rankOf(o->getOperand(0)));
  return notFoldable(why, "embedding factored inconsistently");
}

FoldFact EmbeddingGradOp::getFoldFact(ArrayRef<FoldFact> operands,
                                      unsigned result, int64_t axisSize,
                                      std::string &why) {
  EmbeddingGradOp o = *this;
  if (o.getVocabOffset())
    return notFoldable(why, "vocabulary-parallel embedding");
  FoldFact fi = operands[0], fg = operands[1];
  if (fi.kind == FoldFact::Par && fg.isPar(fi.dim))
    return FoldFact::red();
  if (fi.kind == FoldFact::Rep && fg.isPar(rankOf(o->getOperand(1)) - 1))
    return FoldFact::par(1);
  return notFoldable(why, "embedding_grad factored inconsistently");
}

//===----------------------------------------------------------------------===//
// Backward ops
//===----------------------------------------------------------------------===//

unsigned EmbeddingGradOp::getCotangentIndex() { return 1; }
unsigned CrossEntropyGradOp::getCotangentIndex() { return 2; }
unsigned TargetLogitGradOp::getCotangentIndex() { return 1; }

//===- NnScalerValues.cpp - nnScaler tensors as named tv values -----------===//
//
// The tensors of the nnScaler importer (NnScaler.h): their names and types,
// reading one in a program (an initial value becomes a tv.input), defining
// one (tagged, or a spec output), and reducing a broadcast operand's
// gradient to its shape.
//
//===----------------------------------------------------------------------===//
#include "NnScaler.h"

using namespace mlir;
using namespace mlir::tv;
using namespace mlir::tv::nnscaler;

std::string Importer::name(const TRef &t, bool spec, int part) const {
  std::string s = "t" + std::to_string(t.tid) + ".v" + std::to_string(t.v);
  if (!spec && t.mb >= 0)
    s += ".mb" + std::to_string(t.mb);
  if (part == 1)
    s += ".re";
  if (part == 2)
    s += ".im";
  return s;
}

RankedTensorType Importer::typeOf(const GraphInfo &g, const TRef &t) const {
  auto it = g.shape.find(t.tid);
  ArrayRef<int64_t> shape = it == g.shape.end() ? ArrayRef<int64_t>()
                                                : ArrayRef<int64_t>(it->second);
  Type elt = g.ids.count(t.tid)     ? Type(IntegerType::get(ctx, 64))
             : g.masks.count(t.tid) ? Type(IntegerType::get(ctx, 1))
                                    : Type(Float32Type::get(ctx));
  return RankedTensorType::get(shape, elt);
}

FailureOr<Value> Importer::get(Prog &p, GraphInfo &g, const TRef &t, int part,
                               const std::string &path, Location loc) {
  if (p.rank >= 0 && t.rank != p.rank)
    return emitError(loc) << "nnscaler import: at " << path << ": tensor "
                          << name(t, false) << " lives on rank " << t.rank
                          << ", not on rank " << p.rank;
  Key key{t.mb, t.tid, t.v, part};
  auto it = p.values.find(key);
  if (it != p.values.end())
    return it->second;
  if (!g.initial.count(t.tid))
    return emitError(loc) << "nnscaler import: at " << path << ": tensor "
                          << name(t, p.rank < 0) << " (tid " << t.tid << ", v"
                          << t.v << ", mb " << t.mb << ") is read on "
                          << (p.rank < 0 ? std::string("the spec")
                                         : "rank " + std::to_string(p.rank))
                          << " but no node produces it and it is not an "
                             "initial value (broken dataflow)";
  // An initial value: an input of the program, placed with the others.
  OpBuilder ib(ctx);
  if (p.lastInput)
    ib.setInsertionPointAfter(p.lastInput);
  else
    ib.setInsertionPointToStart(p.block);
  auto in = InputOp::create(ib, fileLoc, typeOf(g, t), name(t, p.rank < 0, part));
  p.lastInput = in;
  p.values[key] = in.getResult();
  (p.rank < 0 ? specNames : namesByRank[p.rank]).insert(name(t, p.rank < 0, part));
  inputNames[p.rank].insert(name(t, p.rank < 0, part));
  return in.getResult();
}

void Importer::define(Prog &p, const TRef &t, Value v, int part) {
  p.values[Key{t.mb, t.tid, t.v, part}] = v;
  std::string n = name(t, p.rank < 0, part);
  auto &names = p.rank < 0 ? specNames : namesByRank[p.rank];
  if (!names.insert(n).second)
    return; // A re-definition keeps the first name (the JSON is SSA).
  if (p.rank < 0 && specOutputs.count(n))
    OutputOp::create(b, v.getLoc(), n, v);
  else
    TagOp::create(b, v.getLoc(), n, v);
}

FailureOr<Value> Importer::unbroadcast(Location loc, Value g,
                                       ArrayRef<int64_t> target,
                                       const std::string &path) {
  auto gt = cast<RankedTensorType>(g.getType());
  ArrayRef<int64_t> gs = gt.getShape();
  // The operand's shape must broadcast to the gradient's: no more
  // dimensions, each equal or 1 (else the reduction is not defined).
  auto shapeText = [](ArrayRef<int64_t> s) {
    std::string t = "[";
    for (auto [i, d] : llvm::enumerate(s))
      t += (i ? ", " : "") + std::to_string(d);
    return t + "]";
  };
  bool broadcasts = target.size() <= gs.size();
  for (size_t i = 0; broadcasts && i < target.size(); ++i) {
    int64_t d = target[i], e = gs[gs.size() - target.size() + i];
    broadcasts = d == e || d == 1;
  }
  if (!broadcasts)
    return emitError(loc) << "nnscaler import: at " << path
                          << ": the gradient's shape " << shapeText(gs)
                          << " does not reduce to the operand's shape "
                          << shapeText(target)
                          << " (it does not broadcast to the gradient's)";
  size_t off = gs.size() - target.size();
  SmallVector<int64_t> keepDims, leadDims;
  for (size_t i = 0; i < target.size(); ++i)
    if (target[i] == 1 && gs[off + i] != 1)
      keepDims.push_back(off + i);
  for (size_t i = 0; i < off; ++i)
    leadDims.push_back(i);
  Value v = g;
  auto reduce = [&](ArrayRef<int64_t> dims, bool keep) {
    auto ty = cast<RankedTensorType>(v.getType());
    SmallVector<int64_t> shape;
    for (auto [i, d] : llvm::enumerate(ty.getShape())) {
      bool r = llvm::is_contained(dims, (int64_t)i);
      if (!r)
        shape.push_back(d);
      else if (keep)
        shape.push_back(1);
    }
    v = SumOp::create(b, loc, RankedTensorType::get(shape, ty.getElementType()),
                      v, b.getDenseI64ArrayAttr(dims), keep ? b.getUnitAttr()
                                                           : UnitAttr());
  };
  if (!keepDims.empty())
    reduce(keepDims, true);
  if (!leadDims.empty())
    reduce(leadDims, false);
  return v;
}

//===- ShapeProgram.cpp - the shape-reduction integer program -------------===//
#include "ShapeProgramImpl.h"
#include "TrainVerify/Dialect/Lineage.h"
#include "TrainVerify/Verify/Executor.h"
#include "TrainVerify/Semantics/Semantics.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/EquivalenceClasses.h"
#include <functional>
#include <map>
#include <numeric>
#include <set>
#include <z3++.h>

using namespace mlir;
using namespace mlir::tv;
using namespace mlir::tv::shapes;

void ShapeProgram::addValue(Value v) {
  auto ty = dyn_cast<RankedTensorType>(v.getType());
  if (!ty)
    return;
  for (unsigned d = 0; d < ty.getRank(); ++d) {
    DimKey k = key(v, d);
    original[k] = ty.getDimSize(d);
    classes.insert(k);
    // Every dimension keeps two elements: ops that relate different indices
    // (transposes, reshapes, masks, slices, gathers) stay distinguishable; at
    // size 1 a permutation is the identity and a causal mask is all-true.
    lower[k] = std::min<int64_t>(2, ty.getDimSize(d));
    if (ty.getDimSize(d) == 1)
      fixed.insert(k); // broadcast dimensions stay 1
  }
}

void ShapeProgram::equalKeys(Operation *why, DimKey a, DimKey b) {
  classes.unionSets(a, b);
}

void ShapeProgram::linearKeys(Operation *why, std::vector<LinearTerm> lhs,
                          std::vector<LinearTerm> rhs) {
  constraints.push_back({why, std::move(lhs), std::move(rhs), false, {}, {}});
}

void ShapeProgram::productKeys(Operation *why, std::vector<DimKey> lhs,
                           std::vector<DimKey> rhs) {
  if (lhs.size() == 1 && rhs.size() == 1)
    return equalKeys(why, lhs[0], rhs[0]);
  constraints.push_back({why, {}, {}, true, std::move(lhs), std::move(rhs)});
}

LogicalResult ShapeProgram::addOp(Operation *op) {
  for (Value r : op->getResults())
    addValue(r);
  // Structure ops carry no size relation of their own.
  if (isa<InputOp, TagOp, OutputOp, SendOp, RecvOp>(op))
    return success();
  addShapeConstraints(op, *this);
  return success();
}

void ShapeProgram::sliceStart(Operation *op, unsigned d, int64_t start,
                              DimRef big) {
  virtuals.push_back(std::make_unique<int>(0));
  DimKey st{virtuals.back().get(), 0};
  original[st] = start;
  classes.insert(st);
  lower[st] = 0;
  linearKeys(op, {{shape(big.value)[big.dim], st}}, {{start, key(big)}});
  sliceStarts.push_back({op, d, st, key(big)});
}

LogicalResult ShapeProgram::addLineages() {
  // Values named in the stage programs.
  llvm::StringMap<Value> specNamed;
  for (Operation &op : stage.getSpec().getBody().front()) {
    if (auto in = dyn_cast<InputOp>(op))
      specNamed[in.getName()] = in.getResult();
    else if (auto out = dyn_cast<OutputOp>(op))
      specNamed[out.getName()] = out.getValue();
    else if (auto tag = dyn_cast<TagOp>(op))
      specNamed[tag.getName()] = tag.getValue();
  }
  std::map<std::pair<int64_t, std::string>, Value> planNamed;
  for (auto prog : stage.getPlan().getBody().front().getOps<RankProgramOp>())
    for (Operation &op : prog.getBody().front()) {
      std::string name;
      Value v;
      if (auto in = dyn_cast<InputOp>(op))
        name = in.getName().str(), v = in.getResult();
      else if (auto out = dyn_cast<OutputOp>(op))
        name = out.getName().str(), v = out.getValue();
      else
        continue;
      for (int64_t r : prog.getRanks())
        planNamed[{r, name}] = v;
    }
  // Spec tensors the spec side does not hold get a virtual full shape.
  llvm::StringMap<SmallVector<DimKey>> fullDims;
  auto fullOf = [&](LineageAttr l) -> SmallVector<DimKey> & {
    auto &dims = fullDims[l.getSpec().getValue()];
    if (!dims.empty())
      return dims;
    if (Value v = specNamed.lookup(l.getSpec().getValue())) {
      for (unsigned d = 0; d < rank(v); ++d)
        dims.push_back(key(v, d));
      return dims;
    }
    int64_t r = l.getRank();
    for (int64_t d = 0; d < r; ++d) {
      virtuals.push_back(std::make_unique<int>(0));
      DimKey k{virtuals.back().get(), 0};
      int64_t extent = 0;
      for (ArrayAttr list : {stage.getAssumes(), stage.getGuarantees()})
        for (Attribute a : list) {
          auto o = cast<LineageAttr>(a);
          if (o.getSpec() == l.getSpec())
            extent = std::max(extent, o.getUpper()[d]);
        }
      original[k] = extent;
      classes.insert(k);
      lower[k] = 1;
      dims.push_back(k);
    }
    return dims;
  };
  auto visit = [&](ArrayAttr list, bool guarantee) -> LogicalResult {
    for (auto [i, a] : llvm::enumerate(list)) {
      auto l = cast<LineageAttr>(a);
      SmallVector<DimKey> &full = fullOf(l);
      if (full.size() != l.getRank())
        return stage.emitError() << "lineage of '" << l.getSpec().getValue()
                                 << "' has rank " << l.getRank()
                                 << " but the spec tensor has rank "
                                 << full.size();
      for (unsigned d = 0; d < l.getRank(); ++d) {
        int64_t n = orig(full[d]), lo = l.getLower()[d],
                ext = l.getUpper()[d] - lo;
        virtuals.push_back(std::make_unique<int>(0));
        DimKey lov{virtuals.back().get(), 0};
        virtuals.push_back(std::make_unique<int>(0));
        DimKey extv{virtuals.back().get(), 0};
        original[lov] = lo;
        original[extv] = ext;
        classes.insert(lov);
        classes.insert(extv);
        lower[lov] = 0;
        lower[extv] = 1;
        if (ext == n) {
          equalKeys(nullptr, extv, full[d]);
        } else {
          linearKeys(nullptr, {{n, extv}}, {{ext, full[d]}});
        }
        linearKeys(nullptr, {{n, lov}}, {{lo, full[d]}});
        l.walkRefs([&](size_t, PlanRefView ref) {
          // Tensors of an assumed lineage that the stage does not read
          // (other replicas, other ranks) do not constrain it.
          auto it = planNamed.find({ref.rank, ref.name.str()});
          if (it != planNamed.end() && it->second)
            equalKeys(nullptr, key(it->second, d), extv);
        });
        boxes.push_back({guarantee, (unsigned)i, d, full[d], lov, extv});
      }
    }
    return success();
  };
  if (failed(visit(stage.getAssumes(), false)) ||
      failed(visit(stage.getGuarantees(), true)))
    return failure();
  return success();
}

LogicalResult ShapeProgram::build() {
  SmallVector<Operation *> ops;
  stage.getBody().walk([&](Operation *op) {
    if (!isa<SpecOp, PlanOp, RankProgramOp>(op))
      ops.push_back(op);
  });
  for (Operation *op : ops)
    if (failed(addOp(op)))
      return failure();
  // Point-to-point: what is sent is what is received.
  if (!schedule)
    schedule = &ownSchedule.emplace(stage);
  const PlanSchedule *sched = schedule->get();
  if (!sched)
    return emitError(schedule->errorLoc()) << schedule->error();
  for (const PlanStep &step : sched->steps)
    if (step.kind == PlanStep::P2P)
      for (unsigned d = 0; d < rank(step.op->getResult(0)); ++d)
        equalKeys(step.op, key(step.op->getResult(0), d),
              key(step.sendOp->getOperand(0), d));
  if (failed(addLineages()))
    return failure();
  fixUnalignedReshapes();
  reduceBySegments(*sched);
  return success();
}

/// A reshape that merges dimensions [d1, ..., dn] into one keeps each
/// reduced element standing for a block of the original ones only if every
/// boundary along the merged dimension (a slice start or size, a chunk, a
/// concatenated part, a lineage box: every size and position of its ratio
/// component) falls on a multiple of the inner extent d(i+1) x ... x dn, or
/// d1 .. di keep their sizes. A flat buffer cut inside a row of a
/// parameter is such a boundary: reducing the rows would move the cut to
/// another element (docs/soundness.md, "Reshapes and flat offsets").
void ShapeProgram::fixUnalignedReshapes() {
  bool any = llvm::any_of(constraints, [](const Constraint &c) {
    return c.isProduct;
  });
  if (!any)
    return;
  // Ratio components: equality classes joined by every linear constraint.
  llvm::EquivalenceClasses<DimKey> comps;
  auto leader = [&](DimKey k) { return classes.getLeaderValue(k); };
  for (auto &[k, n] : original)
    comps.insert(leader(k));
  for (const Constraint &c : constraints) {
    if (c.isProduct)
      continue;
    std::optional<DimKey> first;
    for (const auto *side : {&c.lhs, &c.rhs})
      for (const LinearTerm &t : *side) {
        if (first)
          comps.unionSets(*first, leader(t.dim));
        else
          first = leader(t.dim);
      }
  }
  DenseMap<DimKey, SmallVector<int64_t>> positions;
  for (auto &[k, n] : original)
    positions[comps.getLeaderValue(leader(k))].push_back(n);
  // Differently shaped tensors flattened into one ratio component: a flat
  // buffer. Its offsets tie every tensor's shape to every other's; nothing
  // reduces consistently (and the solver would only time out proving so).
  // Per merged component and program (the spec or one rank program).
  std::map<std::pair<DimKey, Operation *>, std::set<std::vector<int64_t>>>
      flattenedInto;
  // The merges: (split dims, outer to inner; the merged component).
  auto nonUnit = [&](const std::vector<DimKey> &side) {
    std::vector<DimKey> out;
    for (DimKey k : side)
      if (orig(k) > 1)
        out.push_back(k);
    return out;
  };
  std::vector<std::tuple<Operation *, std::vector<DimKey>, DimKey>> merges;
  for (const Constraint &c : constraints) {
    if (!c.isProduct)
      continue;
    std::vector<DimKey> l = nonUnit(c.plhs), r = nonUnit(c.prhs);
    if (l.size() >= 2 && r.size() >= 2) {
      // Dimensions regrouped on both sides: kept as they are.
      for (DimKey k : l)
        fixed.insert(k);
      for (DimKey k : r)
        fixed.insert(k);
      continue;
    }
    if ((l.size() < 2 && r.size() < 2) || l.empty() || r.empty())
      continue;
    const std::vector<DimKey> &split = l.size() >= 2 ? l : r;
    const std::vector<DimKey> &merged = l.size() >= 2 ? r : l;
    DimKey comp = comps.getLeaderValue(leader(merged[0]));
    merges.push_back({c.why, split, comp});
    // Only whole tensors flattened to one dimension count (a flat buffer's
    // members); regrouping some dimensions (heads, tokens) does not.
    auto flattens = [](Operation *op) {
      if (!op || op->getNumOperands() != 1 || op->getNumResults() != 1)
        return false;
      unsigned a = rank(op->getOperand(0)), b = rank(op->getResult(0));
      return (a == 1) != (b == 1);
    };
    // A flat buffer is one program's, and its members have different
    // shapes (a bucket of [40, 24] and [24, 64]). The spec flattening its
    // [16, 8] tokens and a rank its [4, 8] micro-batch or its [1, 2]
    // context-parallel chunk are slices of one tensor on two sides, and a
    // program that flattens [8, 8] labels and unflattens an [8, 8] loss
    // holds one shape: the reshape rules keep those offsets on reduced row
    // boundaries.
    if (flattens(c.why)) {
      auto &shapes = flattenedInto[{comp, c.why->getParentOp()}];
      std::vector<int64_t> sizes;
      for (DimKey k : split)
        sizes.push_back(orig(k));
      shapes.insert(sizes);
      if (shapes.size() >= 2)
        keepAll = true;
    }
  }
  // Another split of the same merged dimension cuts it at its own row
  // lengths ([6, 2] -> [12] -> [3, 4]: a row of 4 holds two of 2). A row
  // length is no cut for a split whose rows below some level are the same
  // dimensions' (its own rows; the spec's [1024, 128] tokens and a rank's
  // [256, 128]): tied equal, those rows stay the same rows at every size.
  struct Row {
    int64_t length;
    std::vector<DimKey> dims; // the split's dimensions below the row
  };
  std::map<DimKey, std::vector<Row>> rows;
  for (auto &[why, split, comp] : merges) {
    int64_t inner = 1;
    for (size_t i = split.size(); i-- > 1;) {
      inner *= orig(split[i]);
      rows[comp].push_back(
          {inner, std::vector<DimKey>(split.begin() + i, split.end())});
    }
  }
  std::vector<Constraint> added;
  for (auto &[why, split, comp] : merges) {
    SmallVector<int64_t> pos(positions[comp]);
    for (const Row &row : rows[comp]) {
      size_t below = row.dims.size();
      bool same = below < split.size();
      for (size_t k = 0; same && k < below; ++k)
        same = orig(row.dims[k]) == orig(split[split.size() - below + k]);
      if (!same) {
        pos.push_back(row.length);
        continue;
      }
      for (size_t k = 0; k < below; ++k)
        equalKeys(why, row.dims[k], split[split.size() - below + k]);
    }
    llvm::sort(pos);
    pos.erase(std::unique(pos.begin(), pos.end()), pos.end());
    // inner[i]: the product of the split dimensions after i.
    std::vector<int64_t> inner(split.size(), 1);
    for (size_t i = split.size() - 1; i-- > 0;)
      inner[i] = inner[i + 1] * orig(split[i + 1]);
    // A position with a remainder below level i cuts inside a block of
    // level i's index: the levels up to i keep their sizes.
    int keepUpTo = -1;
    for (int i = (int)split.size() - 2; i >= 0 && keepUpTo < 0; --i)
      if (llvm::any_of(pos, [&](int64_t p) { return p % inner[i] != 0; }))
        keepUpTo = i;
    for (int i = 0; i <= keepUpTo; ++i)
      fixed.insert(split[i]);
    // Each position's index at every level keeps its ratio to that level's
    // size, as a slice start does: a reduced block boundary stays a block
    // boundary at every level ([8, 2] cut after row 1 keeps its rows).
    for (size_t i = keepUpTo + 1; i < split.size(); ++i)
      for (int64_t p : pos) {
        int64_t at = (p / inner[i]) % orig(split[i]);
        if (at == 0)
          continue;
        virtuals.push_back(std::make_unique<int>(0));
        DimKey v{virtuals.back().get(), 0};
        original[v] = at;
        classes.insert(v);
        lower[v] = 0;
        added.push_back({why, {{orig(split[i]), v}}, {{at, split[i]}}, false,
                         {}, {}});
      }
  }
  for (Constraint &c : added)
    constraints.push_back(std::move(c));
}

LogicalResult mlir::tv::reduceStageShapes(StageOp stage, unsigned timeoutMs,
                                          const StageSchedule *schedule) {
  if (failed(expandLineageMaps(stage)))
    return failure();
  ShapeProgram program(stage, schedule);
  if (failed(program.build()))
    return failure();
  return program.solveAndRewrite(timeoutMs);
}

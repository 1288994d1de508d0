//===- ShapeSegments.cpp - position-wise dimensions reduced by segments ---===//
//
// Keeping ratios cannot shrink a dimension cut at a position that shares no
// factor with its size: a distributed optimizer's owned range that ends
// inside a row (row 24638 of 64128) keeps all 64128 rows. When every op
// that touches a dimension treats it position by position, only which
// pieces each position lies in matters, not how long the pieces are: such
// a dimension is laid on one axis, cut at every boundary of every tensor
// on it, and each segment between two cuts keeps at most two positions, or
// as many as one tensor has dimensions on the axis (decision 122;
// docs/soundness.md, "Position-wise dimensions reduced by segments").
//
//===----------------------------------------------------------------------===//
#include "ShapeProgramImpl.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SmallBitVector.h"

#include <numeric>

using namespace mlir;
using namespace mlir::tv;
using namespace mlir::tv::shapes;

namespace {
/// Pieces (classes of dimensions) and where they lie relative to each
/// other; `bad` holds those some op does not treat position by position.
struct SegmentGraph {
  /// off(to) = off(from) + shift, both ways.
  struct Edge {
    DimKey to;
    int64_t shift;
  };
  DenseMap<DimKey, SmallVector<Edge, 2>> adj;
  llvm::DenseSet<DimKey> bad;
};
} // namespace

void ShapeProgram::reduceBySegments(const PlanSchedule &sched) {
  if (keepAll)
    return;
  auto leader = [&](DimKey k) { return classes.getLeaderValue(k); };
  SegmentGraph g;
  auto edge = [&](DimKey from, DimKey to, int64_t shift) {
    from = leader(from);
    to = leader(to);
    g.adj[from].push_back({to, shift});
    g.adj[to].push_back({from, -shift});
  };
  auto markDim = [&](Value v, unsigned d) { g.bad.insert(leader(key(v, d))); };
  auto markAll = [&](Operation *op) {
    for (Value v : llvm::concat<Value>(op->getOperands(), op->getResults()))
      if (isa<RankedTensorType>(v.getType()))
        for (unsigned d = 0; d < rank(v); ++d)
          markDim(v, d);
  };

  // Which ops keep each dimension position-wise. Anything not named here
  // (reshapes, transposes, concatenations, gathers, masks, rotary pairs,
  // routing, vocabulary ops) relates different positions, or might: its
  // dimensions stay with the ratio rules.
  stage.getBody().walk([&](Operation *op) {
    if (isa<SpecOp, PlanOp, RankProgramOp>(op))
      return;
    if (isa<InputOp, TagOp, OutputOp, SendOp, RecvOp, WaitOp, AllReduceOp,
            BroadcastCommOp, ReduceOp>(op))
      return; // identity or sum across ranks, position by position
    if (isa<SliceOp, SliceGradOp>(op)) {
      bool isGrad = isa<SliceGradOp>(op);
      Value big = isGrad ? op->getResult(0) : op->getOperand(0);
      Value small = isGrad ? op->getOperand(0) : op->getResult(0);
      auto start = cast<DenseI64ArrayAttr>(op->getAttr("start")).asArrayRef();
      for (unsigned d = 0; d < rank(big); ++d)
        edge(key(big, d), key(small, d), start[d]);
      return;
    }
    // Gathered or split along one dimension: that one moves positions.
    auto alongDim = [&](Value in, Value res, int64_t dim) {
      markDim(in, dim);
      markDim(res, dim);
    };
    if (auto o = dyn_cast<AllGatherOp>(op))
      return alongDim(o.getInput(), o.getResult(), o.getDim());
    if (auto o = dyn_cast<ReduceScatterOp>(op))
      return alongDim(o.getInput(), o.getResult(), o.getDim());
    if (auto o = dyn_cast<ChunkOp>(op))
      return alongDim(o.getInput(), o.getResult(), o.getDim());
    if (auto a2a = dyn_cast<AllToAllOp>(op)) {
      for (Value v : {a2a.getInput(), a2a.getResult()}) {
        markDim(v, a2a.getSplitDim());
        markDim(v, a2a.getConcatDim());
      }
      return;
    }
    // An op with a shape rule of its own says more than its structure (or
    // has none); an iota reads its positions.
    auto structured = dyn_cast<StructuredOpInterface>(op);
    if (!structured || isa<ShapeRuleOpInterface>(op) || isa<IotaOp>(op)) {
      markAll(op);
      return;
    }
    // A structured op: a dimension is read and written at the same position
    // when it runs over a parallel loop that indexes the result, once in
    // its tensor's map. Anything else is marked: a loop that sums or
    // normalizes, a constant index on a dimension longer than one, a
    // compound index, a loop used twice in one map (a diagonal).
    for (unsigned r = 0; r < op->getNumResults(); ++r) {
      OpStructure s = structured.getStructure(r);
      llvm::SmallBitVector inResult(s.loops.size());
      for (AffineExpr e : s.result.getResults())
        if (auto loop = dyn_cast<AffineDimExpr>(e))
          inResult.set(loop.getPosition());
      auto visit = [&](Value v, AffineMap map) {
        if (!isa<RankedTensorType>(v.getType()))
          return;
        llvm::SmallBitVector seen(s.loops.size());
        for (auto [d, e] : llvm::enumerate(map.getResults())) {
          if (auto c = dyn_cast<AffineConstantExpr>(e);
              c && c.getValue() == 0 && shape(v)[d] == 1)
            continue; // a broadcast dimension of size 1
          auto loop = dyn_cast<AffineDimExpr>(e);
          if (!loop || s.loops[loop.getPosition()] != LoopKind::Parallel ||
              !inResult.test(loop.getPosition()) ||
              seen.test(loop.getPosition())) {
            markDim(v, d);
            continue;
          }
          seen.set(loop.getPosition());
        }
      };
      for (auto [v, map] : llvm::zip(op->getOperands(), s.operands))
        visit(v, map);
      visit(op->getResult(r), s.result);
    }
  });
  // Members of one collective meet position by position: their operands
  // (and results) lie at one offset.
  for (const PlanStep &step : sched.steps) {
    if (step.kind != PlanStep::Collective || step.members.empty())
      continue;
    Operation *first = step.members.front().second;
    for (auto &[rank, member] : step.members) {
      if (member == first)
        continue; // one program run by several ranks: one value
      bool alike = member->getNumOperands() == first->getNumOperands() &&
                   member->getNumResults() == first->getNumResults();
      for (auto [a, b] : llvm::zip(
               llvm::concat<Value>(first->getOperands(), first->getResults()),
               llvm::concat<Value>(member->getOperands(),
                                   member->getResults()))) {
        auto ta = dyn_cast<RankedTensorType>(a.getType());
        auto tb = dyn_cast<RankedTensorType>(b.getType());
        if (!ta || !tb || ta.getRank() != tb.getRank()) {
          alike = false;
          continue;
        }
        for (unsigned d = 0; d < ta.getRank(); ++d)
          edge(key(a, d), key(b, d), 0);
      }
      // Members that do not line up (the schedule's checks exclude it)
      // relate nothing position by position.
      if (!alike) {
        markAll(first);
        markAll(member);
      }
    }
  }
  // Lineage boxes: the box's extent lies at `lo` of the full tensor. The
  // box's lower corner and a slice's start are positions, not pieces:
  // sized below from their axis.
  for (const BoxDim &b : boxes)
    edge(b.full, b.extent, orig(b.lo));
  // Relations that no edge above stands for (a concatenation's sum, a
  // chunk's ratio, a product, a reshape's row positions, a vocabulary
  // offset) keep their dimensions with the ratio rules.
  for (const Constraint &c : constraints) {
    bool ours = !c.isProduct && (!c.why || isa<SliceOp, SliceGradOp>(c.why));
    if (ours)
      continue;
    for (const auto *side : {&c.lhs, &c.rhs})
      for (const LinearTerm &t : *side)
        g.bad.insert(leader(t.dim));
    for (const auto *side : {&c.plhs, &c.prhs})
      for (DimKey k : *side)
        g.bad.insert(leader(k));
  }
  // A kept size (an iota's positions, a pinned loop, a windowed mask) is
  // kept.
  for (DimKey k : fixed)
    if (orig(k) > 1)
      g.bad.insert(leader(k));

  // Sizes per class, and the floor each class must keep.
  DenseMap<DimKey, int64_t> sizeOf, floorOf;
  for (auto &[k, n] : original)
    sizeOf[leader(k)] = n;
  for (auto &[k, n] : lower) {
    int64_t &f = floorOf[leader(k)];
    f = std::max(f, n);
  }

  // Each connected piece of the graph is one axis: offsets by a walk from
  // any class, consistent or not at all.
  llvm::DenseSet<DimKey> seen;
  SmallVector<DimKey> roots;
  for (auto &[k, edges] : g.adj)
    roots.push_back(k);
  for (DimKey root : roots) {
    if (seen.contains(root))
      continue;
    DenseMap<DimKey, int64_t> off;
    SmallVector<DimKey> members{root};
    off[root] = 0;
    seen.insert(root);
    bool ok = true;
    for (size_t i = 0; i < members.size(); ++i) {
      DimKey u = members[i];
      ok &= !g.bad.contains(u);
      for (const SegmentGraph::Edge &e : g.adj[u]) {
        int64_t want = off[u] + e.shift;
        auto [it, fresh] = off.try_emplace(e.to, want);
        if (fresh) {
          members.push_back(e.to);
          seen.insert(e.to);
        } else if (it->second != want) {
          ok = false; // two positions for one piece: not one axis
        }
      }
    }
    if (!ok)
      continue;
    // Every boundary of every piece, and each segment between two kept
    // at most two positions long.
    std::vector<int64_t> cuts;
    for (DimKey u : members) {
      cuts.push_back(off[u]);
      cuts.push_back(off[u] + sizeOf.lookup(u));
    }
    llvm::sort(cuts);
    cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
    // A claim reads as many positions of one segment as a tensor has
    // dimensions on the axis ([n, n] = linear(W, W) reads rows i and j of
    // W): each segment keeps that many, and at least two.
    DenseMap<const void *, int64_t> dimsOnAxis;
    int64_t keep = 2;
    llvm::DenseSet<DimKey> inAxis(members.begin(), members.end());
    for (auto &[k, n] : original)
      if (inAxis.contains(leader(k)))
        keep = std::max(keep, ++dimsOnAxis[k.first]);
    std::vector<int64_t> reducedAt(cuts.size(), 0);
    for (size_t i = 1; i < cuts.size(); ++i)
      reducedAt[i] =
          reducedAt[i - 1] + std::min<int64_t>(cuts[i] - cuts[i - 1], keep);
    // Only cuts are looked up (every end, corner and start is one); were
    // another asked for, the axis is left to the ratios.
    bool offCut = false;
    auto at = [&](int64_t pos) -> int64_t {
      auto it = llvm::lower_bound(cuts, pos);
      if (it == cuts.end() || *it != pos) {
        offCut = true;
        return 0;
      }
      return reducedAt[it - cuts.begin()];
    };
    // Only where the ratios cannot do as well: the largest common step of
    // every cut, limited by the floors, is what they reach.
    int64_t step = 0;
    for (int64_t c : cuts)
      step = std::gcd(step, c - cuts.front());
    for (DimKey u : members)
      if (int64_t n = sizeOf.lookup(u); n > 1)
        step = std::min<int64_t>(step,
                                 n / std::max<int64_t>(1, floorOf.lookup(u)));
    int64_t span = cuts.back() - cuts.front();
    if (step < 1 || reducedAt.back() >= span / step)
      continue;
    DenseMap<DimKey, int64_t> sized;
    for (DimKey u : members) {
      int64_t n = at(off[u] + sizeOf.lookup(u)) - at(off[u]);
      if (n < floorOf.lookup(u)) {
        ok = false;
        break;
      }
      sized[u] = n;
    }
    if (!ok)
      continue;
    // The positions anchored on this axis.
    DenseMap<DimKey, int64_t> placed;
    for (const BoxDim &b : boxes)
      if (sized.count(leader(b.full)))
        placed[leader(b.lo)] =
            at(off[leader(b.full)] + orig(b.lo)) - at(off[leader(b.full)]);
    for (auto &[op, d, st, big] : sliceStarts)
      if (sized.count(leader(big)))
        placed[leader(st)] =
            at(off[leader(big)] + orig(st)) - at(off[leader(big)]);
    if (offCut)
      continue;
    for (auto &[u, n] : sized)
      segmentSize[u] = n;
    for (auto &[u, n] : placed)
      segmentSize[u] = n;
  }
}

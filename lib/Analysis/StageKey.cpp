//===- StageKey.cpp - canonical stage keys and ranks ----------------------===//
//
// The canonical key of a stage (StageVerifier.h): its text up to a renaming
// of tensor names and a translation of its ranks along the mesh axes where
// that cannot change what it computes, and the rank translation itself.
//
//===----------------------------------------------------------------------===//
#include "TrainVerify/Analysis/StageKey.h"
#include "TrainVerify/Dialect/Lineage.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/raw_ostream.h"
#include <functional>

using namespace mlir;
using namespace mlir::tv;

namespace {
/// A translation of a stage's ranks along mesh axes: rank r becomes the rank
/// at coords(r) - offset. The offset is, per axis, the smallest coordinate
/// of the stage's ranks, or 0 where translating could change the semantics.
struct RankShift {
  int64_t delta = 0; // subtracted from every rank

  explicit RankShift(StageOp stage) {
    PlanOp plan = stage.getPlan();
    if (!plan)
      return;
    auto mesh =
        SymbolTable::lookupNearestSymbolFrom<MeshOp>(stage, plan.getMeshAttr());
    if (!mesh)
      return;
    ArrayRef<int64_t> sizes = mesh.getSizes();
    unsigned n = sizes.size();
    SmallVector<int64_t> offset(n, INT64_MAX);
    DenseSet<int64_t> ranks;
    for (auto prog : plan.getBody().front().getOps<RankProgramOp>())
      for (int64_t r : prog.getRanks()) {
        ranks.insert(r);
        SmallVector<int64_t> c = mesh.getCoords(r);
        if (c.size() != n)
          return;
        for (unsigned i = 0; i < n; ++i)
          offset[i] = std::min(offset[i], c[i]);
      }
    if (ranks.empty())
      return;
    auto pin = [&](StringRef axis) {
      int64_t i = mesh.getAxisIndex(axis);
      if (i >= 0)
        offset[i] = 0;
    };
    // An op that names an axis (a collective's group, a vocabulary shard's
    // coordinate) may read the coordinate: no translation along it.
    // Point-to-point along an axis is translated only when every peer is a
    // rank of the stage (a peer off the mesh could come onto it).
    stage.getBody().walk([&](Operation *op) {
      for (NamedAttribute a : op->getAttrs()) {
        if (a.getName() == "peer_axis")
          continue;
        if (auto s = dyn_cast<StringAttr>(a.getValue()))
          pin(s.getValue());
        else if (auto arr = dyn_cast<ArrayAttr>(a.getValue()))
          for (Attribute e : arr)
            if (auto s = dyn_cast<StringAttr>(e))
              pin(s.getValue());
      }
      auto peerAxis = op->getAttrOfType<StringAttr>("peer_axis");
      auto peerShift = op->getAttrOfType<DenseI64ArrayAttr>("peer_shift");
      if ((!peerAxis && !peerShift) || !isa<SendOp, RecvOp>(op))
        return;
      auto prog = op->getParentOfType<RankProgramOp>();
      for (int64_t r : prog ? prog.getRanks() : ArrayRef<int64_t>()) {
        int64_t peer = isa<SendOp>(op) ? cast<SendOp>(op).getPeerOf(r)
                                       : cast<RecvOp>(op).getPeerOf(r);
        if (peer < 0 || !ranks.contains(peer)) {
          if (peerAxis)
            pin(peerAxis.getValue());
          else
            for (auto [i, d] : llvm::enumerate(peerShift.asArrayRef()))
              if (d != 0)
                offset[i] = 0;
          break;
        }
      }
    });
    int64_t stride = 1;
    for (int i = n - 1; i >= 0; --i) {
      delta += offset[i] * stride;
      stride *= sizes[i];
    }
  }
  int64_t operator()(int64_t rank) const { return rank - delta; }
};
} // namespace

int64_t mlir::tv::canonicalRank(StageOp stage, int64_t rank) {
  return RankShift(stage)(rank);
}

/// The ops of `block` in an order fixed by dataflow alone: a post-order walk
/// of operands from the block's sinks (ops whose results are unused), sinks
/// in block order. Two programs that list the same graph in different orders
/// (the forward and backward passes of micro-batches interleaved by another
/// pipeline stage's schedule) get the same order.
static SmallVector<Operation *> dataflowOrder(Block &block) {
  SmallVector<Operation *> order;
  DenseSet<Operation *> seen;
  SmallVector<std::pair<Operation *, unsigned>> stack;
  auto visit = [&](Operation *root) {
    if (!seen.insert(root).second)
      return;
    stack.push_back({root, 0});
    while (!stack.empty()) {
      auto &[op, next] = stack.back();
      if (next < op->getNumOperands()) {
        Operation *def = op->getOperand(next++).getDefiningOp();
        if (def && def->getBlock() == &block && seen.insert(def).second)
          stack.push_back({def, 0});
        continue;
      }
      order.push_back(op);
      stack.pop_back();
    }
  };
  for (Operation &op : block)
    if (op.use_empty())
      visit(&op);
  for (Operation &op : block) // unreachable from a sink: none in practice
    visit(&op);
  return order;
}

/// Whether the order of `plan`'s ops cannot change what it computes: one
/// program run by every rank (a collective matches the same op on every
/// member, whatever the order) and no point-to-point pair (whose order
/// decides deadlocks).
static bool orderFree(StageOp stage) {
  PlanOp plan = stage.getPlan();
  if (!plan || !llvm::hasSingleElement(plan.getBody().front()))
    return false;
  bool p2p = false;
  plan.walk([&](Operation *op) { p2p |= isa<SendOp, RecvOp>(op); });
  return !p2p;
}

std::string mlir::tv::canonicalStageKey(StageOp stage, bool dataflow) {
  // The key is of the statements (a stage that holds maps is keyed as the
  // statements they stand for).
  if (failed(expandLineageMaps(stage)))
    return "unexpanded:" + stage.getSymName().str(); // shared with no stage
  RankShift shift(stage);
  llvm::StringMap<unsigned> rename;
  auto ren = [&](StringRef n) {
    auto [it, inserted] = rename.try_emplace(n, rename.size());
    return "%n" + std::to_string(it->second);
  };
  DenseMap<Value, unsigned> valueIds;
  std::string key;
  llvm::raw_string_ostream os(key);
  auto printLineage = [&](Attribute a) {
    auto l = cast<LineageAttr>(a);
    os << ren(l.getSpec().getValue()) << "[";
    for (unsigned i = 0; i < l.getRank(); ++i)
      os << l.getLower()[i] << ":" << l.getUpper()[i] << ",";
    os << "]";
    if (l.isScaled())
      os << "*" << l.getScaleFraction().first << "/"
         << l.getScaleFraction().second;
    os << "=";
    l.walkGroups([&](size_t, ArrayRef<PlanRefView> g) {
      os << "(";
      for (const PlanRefView &r : g)
        os << ren(r.name) << "@" << shift(r.rank) << "+";
      os << ")";
    });
    os << ";";
  };
  // Ops before the lineages so names get numbers in program order.
  auto printOp = [&](Operation *op) {
    os << op->getName().getStringRef() << "(";
    for (Value v : op->getOperands())
      os << valueIds.lookup(v) << ",";
    os << ")";
    for (Value r : op->getResults()) {
      valueIds[r] = valueIds.size() + 1;
      os << r.getType();
    }
    for (NamedAttribute a : op->getAttrs()) {
      // Provenance (micro-batch, source node) does not change what a stage
      // computes.
      if (a.getName() == "sym_name" || isProgramAnnotation(a.getName()))
        continue;
      os << " " << a.getName().getValue() << "=";
      if (isa<InputOp, TagOp, OutputOp>(op) && a.getName() == "name") {
        os << ren(cast<StringAttr>(a.getValue()).getValue());
      } else if (isa<RankProgramOp>(op) && a.getName() == "ranks") {
        for (int64_t r : cast<DenseI64ArrayAttr>(a.getValue()).asArrayRef())
          os << shift(r) << ",";
      } else if (isa<SendOp, RecvOp>(op) && a.getName() == "peer") {
        os << shift(cast<IntegerAttr>(a.getValue()).getInt());
      } else if (a.getName() == "rank_groups") {
        for (Attribute g : cast<ArrayAttr>(a.getValue())) {
          os << "[";
          for (int64_t r : cast<DenseI64ArrayAttr>(g).asArrayRef())
            os << shift(r) << ",";
          os << "]";
        }
      } else {
        os << a.getValue();
      }
    }
    os << "|";
  };
  // The rank program's ops in dataflow order when their order cannot
  // matter (and `dataflow` asks for it), else in block order.
  bool byDataflow = dataflow && orderFree(stage);
  std::function<void(Operation *)> printTree = [&](Operation *op) {
    printOp(op);
    for (Region &region : op->getRegions())
      for (Block &block : region) {
        if (byDataflow && isa<RankProgramOp>(op)) {
          for (Operation *inner : dataflowOrder(block))
            printTree(inner);
        } else {
          for (Operation &inner : block)
            printTree(&inner);
        }
      }
  };
  for (Block &block : stage.getBody())
    for (Operation &op : block)
      printTree(&op);
  os << "A:";
  for (Attribute a : stage.getAssumes())
    printLineage(a);
  os << "G:";
  for (Attribute a : stage.getGuarantees())
    printLineage(a);
  return key;
}

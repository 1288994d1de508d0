//===- ShardLineages.cpp - lineages from the shard annotations ------------===//
//
// The blocks a sharding gives each process (even splits, uneven offsets,
// halos), checked against the partitioned program's local types, and the
// lineages that tie them to the spec (docs/shard.md, "What is proven").
//
//===----------------------------------------------------------------------===//
#include "ShardImport.h"
#include "TrainVerify/Dialect/TVOps.h"
#include "TrainVerify/Translate/Translations.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"

#include <map>

using namespace mlir;
using namespace mlir::tv;
using namespace mlir::tv::shardimport;

void shardimport::markWrongPartition() { translationFoundWrongProgram() = true; }

/// The block of `process` along one dimension with split axes `axes`:
/// (index, count), the first listed axis major.
std::pair<int64_t, int64_t> shardimport::blockOf(const Grid &grid, ArrayRef<int16_t> axes,
                                    int64_t process) {
  SmallVector<int64_t> c = grid.coords(process);
  int64_t idx = 0, count = 1;
  for (int16_t a : axes) {
    idx = idx * grid.sizes[a] + c[a];
    count *= grid.sizes[a];
  }
  return {idx, count};
}

/// Lineages of one spec tensor (`name`, full shape) with `sharding`: one
/// per distinct block, naming every process that holds it, or with
/// `witness` the first process that holds it and for which `witness` holds.
LogicalResult shardimport::lineagesOf(Operation *where, StringRef tensor, ArrayRef<int64_t> shape,
           shard::ShardingOp sharding, const Grid &grid, Lineages &out,
           llvm::function_ref<bool(int64_t)> witness, Value local,
           std::vector<SmallVector<int64_t>> *shapesOut,
           std::vector<HaloLayout> *halosOut) {
  SmallVector<SmallVector<int16_t>> split;
  // Halos: two sizes (before, after) per split dimension, in order.
  ArrayRef<int64_t> halos;
  // Uneven shards: per split dimension, count + 1 offsets (concatenated in
  // dimension order); offsets[d] is the first of dimension d's.
  ArrayRef<int64_t> uneven;
  std::map<int64_t, size_t> offsetsOf;
  if (sharding) {
    if (!sharding.getDynamicShardedDimsOffsets().empty())
      return where->emitError() << "shard-partition import: shard offsets "
                                   "that are runtime values are not modeled";
    uneven = sharding.getStaticShardedDimsOffsets();
    if (!sharding.getDynamicHaloSizes().empty())
      return where->emitError() << "shard-partition import: halo sizes that "
                                   "are runtime values are not modeled";
    halos = sharding.getStaticHaloSizes();
    for (auto axes : sharding.getSplitAxes().getAxes())
      split.emplace_back(axes.asArrayRef());
    size_t splitDims = llvm::count_if(
        split, [](const SmallVector<int16_t> &a) { return !a.empty(); });
    if (!halos.empty() && halos.size() != 2 * splitDims)
      return where->emitError()
             << "shard-partition import: " << halos.size()
             << " halo sizes for " << splitDims << " split dimensions";
    if (!uneven.empty()) {
      size_t at = 0;
      for (auto [d, axes] : llvm::enumerate(split)) {
        if (axes.empty() || d >= shape.size())
          continue;
        offsetsOf[d] = at;
        at += blockOf(grid, axes, 0).second + 1;
      }
      if (at != uneven.size())
        return where->emitError()
               << "shard-partition import: sharded_dims_offsets has "
               << uneven.size() << " entries where the split dimensions need "
               << at;
    }
  }
  // Per block (ordered by its text, as before the builders), its bounds
  // and the processes that hold it.
  struct Holders {
    SmallVector<int64_t> lo, hi;
    std::vector<std::pair<std::string, int64_t>> procs;
  };
  std::map<std::string, Holders> holders;
  auto hold = [&](const std::string &key, const std::string &name,
                  ArrayRef<int64_t> lo, ArrayRef<int64_t> hi, int64_t p) {
    Holders &h = holders[key];
    h.lo.assign(lo.begin(), lo.end());
    h.hi.assign(hi.begin(), hi.end());
    if (!witness || (h.procs.empty() && witness(p)))
      h.procs.push_back({name, p});
  };
  std::vector<HaloLayout> layouts;
  auto localType = local ? dyn_cast<RankedTensorType>(local.getType())
                         : RankedTensorType();
  for (int64_t p = 0; p < grid.numProcesses(); ++p) {
    std::string box = "[";
    SmallVector<int64_t> blockShape, blockLo, blockHi;
    for (auto [d, size] : llvm::enumerate(shape)) {
      int64_t lo = 0, hi = size;
      if (d < split.size() && !split[d].empty()) {
        auto [idx, count] = blockOf(grid, split[d], p);
        if (auto o = offsetsOf.find(d); o != offsetsOf.end()) {
          // Uneven shards: the block between this shard's offsets, which
          // must rise from 0 to the dimension's size.
          ArrayRef<int64_t> offs = uneven.slice(o->second, count + 1);
          if (offs.front() != 0 || offs.back() != size ||
              !llvm::is_sorted(offs))
            return where->emitError()
                   << "shard-partition import: the shard offsets of "
                      "dimension "
                   << d << " do not rise from 0 to its size " << size;
          lo = offs[idx];
          hi = offs[idx + 1];
        } else if (size % count) {
          // Without sharded_dims_offsets the dialect splits evenly only
          // (shard::shardDimension asserts it). A partitioned program whose
          // blocks do not cover the dimension loses data: a wrong
          // partition, not an unmodeled one.
          if (localType && localType.getRank() == (int64_t)shape.size() &&
              !localType.isDynamicDim(d) &&
              localType.getDimSize(d) * count < size) {
            int64_t held = localType.getDimSize(d) * count;
            markWrongPartition();
            InFlightDiagnostic diag =
                emitError(local.getLoc())
                << "wrong partition: '" << tensor << "' is " << localType
                << " on each of the " << count
                << " processes that split its dimension " << d << " of size "
                << size << ", which hold " << held
                << " of its rows: counterexample: elements " << held << ":"
                << size << " of dimension " << d
                << " are held by no process";
            diag.attachNote(where->getLoc()) << "the annotation";
            return failure();
          }
          return where->emitError()
                 << "shard-partition import: dimension " << d << " of size "
                 << size << " does not split into " << count
                 << " equal blocks (uneven shards without "
                    "sharded_dims_offsets are not modeled)";
        } else {
          lo = idx * (size / count);
          hi = lo + size / count;
        }
      }
      box += (d ? ", " : "") + std::to_string(lo) + ":" + std::to_string(hi);
      blockShape.push_back(hi - lo);
      blockLo.push_back(lo);
      blockHi.push_back(hi);
    }
    // Halos around the block: the local value is the block and its halos.
    HaloLayout halo;
    if (!halos.empty()) {
      size_t k = 0;
      for (auto [d, size] : llvm::enumerate(shape)) {
        int64_t before = 0, after = 0;
        if (d < split.size() && !split[d].empty()) {
          before = halos[k], after = halos[k + 1];
          k += 2;
        }
        int64_t core = blockHi[d] - blockLo[d];
        if (before < 0 || after < 0 || before > core || after > core)
          return where->emitError()
                 << "shard-partition import: a halo of " << before << " and "
                 << after << " around a block of " << core
                 << " in dimension " << d
                 << " reaches past the neighbour (not modeled)";
        halo.before.push_back(before);
        halo.after.push_back(after);
        halo.coreLo.push_back(blockLo[d]);
        halo.coreHi.push_back(blockHi[d]);
        halo.global.push_back(size);
      }
      blockShape = halo.localShape();
    }
    // The partitioned program's local type must be the block (and halos)
    // the sharding gives the process, checked before any proof: a
    // partitioned value that is not is a wrong partition (exit 1), reported
    // at the partitioned value with a note at the annotation.
    if (localType && localType.hasStaticShape() &&
        localType.getShape() != ArrayRef<int64_t>(blockShape)) {
      markWrongPartition();
      InFlightDiagnostic diag =
          emitError(local.getLoc())
          << "wrong partition: '" << tensor << "' is " << localType
          << " in the partitioned program, but its sharding gives process "
          << p << " the block " << box << "] of shape [";
      llvm::interleaveComma(blockShape, diag);
      diag << "]";
      if (!halos.empty())
        diag << " with its halos";
      diag.attachNote(where->getLoc()) << "the annotation";
      return failure();
    }
    if (shapesOut)
      shapesOut->push_back(blockShape);
    if (halo.empty())
      hold(box + "]", tensor.str(), blockLo, blockHi, p);
    layouts.push_back(std::move(halo));
  }
  if (!halos.empty()) {
    // With halos, the tiles of every process are cut where any process's
    // core or halo starts or ends; each defined tile is a plan tensor of
    // its own (ShardHalo.cpp), an undefined one is named by no lineage.
    SmallVector<SmallVector<int64_t>> cuts(shape.size());
    for (const HaloLayout &l : layouts)
      for (size_t d = 0; d < shape.size(); ++d)
        for (int64_t c : {l.coreLo[d] - l.before[d], l.coreLo[d],
                          l.coreHi[d], l.coreHi[d] + l.after[d]})
          if (c > 0 && c < shape[d])
            cuts[d].push_back(c);
    for (SmallVector<int64_t> &c : cuts) {
      llvm::sort(c);
      c.erase(std::unique(c.begin(), c.end()), c.end());
    }
    for (auto [p, l] : llvm::enumerate(layouts)) {
      l.cuts = cuts;
      for (const HaloTile &t : haloTiles(l)) {
        if (!t.defined)
          continue;
        std::string tileBox = "[";
        for (auto [d, lo] : llvm::enumerate(t.globalLo))
          tileBox += (d ? ", " : "") + std::to_string(lo) + ":" +
                     std::to_string(t.globalHi[d]);
        hold(tileBox + "]", tensor.str() + t.suffix, t.globalLo, t.globalHi,
             p);
      }
    }
  }
  if (halosOut)
    *halosOut = std::move(layouts);
  MLIRContext *ctx = where->getContext();
  for (auto &[box, h] : holders) {
    if (h.procs.empty())
      continue;
    // Each holder is an alternative of its own: the block equals the
    // tensor of any one of them.
    SmallVector<Attribute> groups;
    for (auto &[name, p] : h.procs)
      groups.push_back(ArrayAttr::get(ctx, {PlanRefAttr::get(ctx, name, p)}));
    out.emplace_back(where->getLoc(),
                     LineageAttr::get(ctx, StringAttr::get(ctx, tensor), h.lo,
                                      h.hi, ArrayAttr::get(ctx, groups)));
  }
  return success();
}

/// The sharding a value is annotated with: the first shard.shard of it (not
/// for its users), else the first for its users (an argument annotated only
/// for its users is partitioned so), for an argument; the shard.shard
/// producing it for a result. The local types of the partitioned program
/// are checked against the blocks this implies.
shard::ShardingOp shardimport::argSharding(Value arg) {
  shard::ShardingOp forUsers;
  for (Operation *u : arg.getUsers())
    if (auto s = dyn_cast<shard::ShardOp>(u)) {
      if (!s.getAnnotateForUsers())
        return s.getSharding().getDefiningOp<shard::ShardingOp>();
      if (!forUsers)
        forUsers = s.getSharding().getDefiningOp<shard::ShardingOp>();
    }
  return forUsers;
}
/// The shard.sharding a !shard.sharding value is: the op itself, or, for
/// shard.get_sharding, the sharding of the shard.shard that produced its
/// operand; null when it is neither.
shard::ShardingOp shardimport::resolvedSharding(Value v) {
  if (auto s = v.getDefiningOp<shard::ShardingOp>())
    return s;
  if (auto g = v.getDefiningOp<shard::GetShardingOp>())
    if (auto sh = g.getSource().getDefiningOp<shard::ShardOp>())
      return resolvedSharding(sh.getSharding());
  return nullptr;
}
shard::ShardingOp shardimport::resultSharding(Value v) {
  shard::ShardingOp found;
  while (auto s = v.getDefiningOp<shard::ShardOp>()) {
    if (!found)
      found = s.getSharding().getDefiningOp<shard::ShardingOp>();
    v = s.getSrc();
  }
  return found;
}


//===- ShardHalo.cpp - halos in the shard import --------------------------===//
//
// A sharding with `halo_sizes` gives each process its core block plus halo
// rows before and after it along each split dimension. A halo cell is the
// cell of the global tensor at its position, which a neighbour holds as
// core; at the grid's edge there is none, and the cell is undefined. tv
// splits such a value into tiles (core, halo before, halo after along each
// split dimension): each defined tile is a plan tensor of its own with a
// lineage to its global box, an undefined one is named by no lineage, so
// nothing that depends on it is ever proven (docs/shard.md, "Halos").
//
//===----------------------------------------------------------------------===//
#include "ShardImport.h"
#include "TrainVerify/Dialect/TVOps.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"

#include <map>

using namespace mlir;
using namespace mlir::tv::shardimport;
namespace tvir = mlir::tv;

std::vector<HaloTile>
mlir::tv::shardimport::haloTiles(const HaloLayout &h) {
  size_t rank = h.before.size();
  // Per dimension, its ranges: the halo before, the core, the halo after,
  // each cut where `h.cuts` cuts the global dimension (so that the tiles
  // of all processes have equal or disjoint global boxes).
  struct Range {
    int64_t off, localLo, globalLo, size;
  };
  SmallVector<SmallVector<Range>> ranges(rank);
  for (size_t d = 0; d < rank; ++d) {
    int64_t core = h.coreHi[d] - h.coreLo[d];
    int64_t local = 0;
    auto add = [&](int64_t off, int64_t glo, int64_t n) {
      SmallVector<int64_t> at = {glo};
      if (d < h.cuts.size())
        for (int64_t c : h.cuts[d])
          if (c > glo && c < glo + n)
            at.push_back(c);
      at.push_back(glo + n);
      for (size_t k = 0; k + 1 < at.size(); ++k) {
        ranges[d].push_back({off, local, at[k], at[k + 1] - at[k]});
        local += at[k + 1] - at[k];
      }
    };
    if (h.before[d])
      add(-1, h.coreLo[d] - h.before[d], h.before[d]);
    add(0, h.coreLo[d], core);
    if (h.after[d])
      add(1, h.coreHi[d], h.after[d]);
  }
  std::vector<HaloTile> tiles;
  SmallVector<size_t> pick(rank, 0);
  while (true) {
    HaloTile t;
    bool wholeCore = true;
    for (size_t d = 0; d < rank; ++d) {
      const Range &r = ranges[d][pick[d]];
      t.offs.push_back(r.off);
      t.localLo.push_back(r.localLo);
      t.localHi.push_back(r.localLo + r.size);
      t.globalLo.push_back(r.globalLo);
      t.globalHi.push_back(r.globalLo + r.size);
      if (r.globalLo < 0 || r.globalLo + r.size > h.global[d])
        t.defined = false;
      wholeCore &= r.off == 0 && r.globalLo == h.coreLo[d] &&
                   r.globalLo + r.size == h.coreHi[d];
    }
    if (!wholeCore) {
      t.suffix = ".box[";
      for (size_t d = 0; d < rank; ++d)
        t.suffix += (d ? "," : "") + std::to_string(t.globalLo[d]) + ":" +
                    std::to_string(t.globalHi[d]);
      t.suffix += "]";
    }
    tiles.push_back(std::move(t));
    // The next combination (the last dimension fastest).
    size_t d = rank;
    while (d > 0 && ++pick[d - 1] == ranges[d - 1].size())
      pick[--d] = 0;
    if (d == 0)
      break;
  }
  return tiles;
}

Value Emitter::assemble(Location loc, RankedTensorType type,
                        const HaloLayout &h,
                        llvm::function_ref<Value(const HaloTile &)> tile) {
  std::vector<HaloTile> tiles = haloTiles(h);
  size_t rank = h.before.size();
  // The tiles are a product of per-dimension ranges: those that share a
  // range along d are assembled along the later dimensions, then joined
  // along d in the order of their local positions.
  std::function<Value(ArrayRef<const HaloTile *>, size_t)> build =
      [&](ArrayRef<const HaloTile *> subset, size_t d) -> Value {
    if (d == rank)
      return tile(*subset.front());
    std::map<int64_t, SmallVector<const HaloTile *>> byRange;
    for (const HaloTile *t : subset)
      byRange[t->localLo[d]].push_back(t);
    SmallVector<Value> parts;
    for (auto &[lo, group] : byRange)
      parts.push_back(build(group, d + 1));
    if (parts.size() == 1)
      return parts.front();
    SmallVector<int64_t> shape(
        cast<RankedTensorType>(parts.front().getType()).getShape());
    shape[d] = 0;
    for (Value v : parts)
      shape[d] += cast<RankedTensorType>(v.getType()).getDimSize(d);
    return tvir::ConcatOp::create(
        b, loc, RankedTensorType::get(shape, type.getElementType()), parts,
        i64(d));
  };
  SmallVector<const HaloTile *> all;
  for (const HaloTile &t : tiles)
    all.push_back(&t);
  return build(all, 0);
}

Value Emitter::freeInput(Location loc, RankedTensorType type,
                         const std::string &n) {
  if (freeInputs)
    freeInputs->push_back({n, type});
  return tvir::InputOp::create(b, loc, type, b.getStringAttr(n));
}

Value Emitter::haloArgument(Location loc, unsigned i, Type type,
                            const HaloLayout &h) {
  RankedTensorType t = tvType(type);
  return assemble(loc, t, h, [&](const HaloTile &tile) -> Value {
    auto tileTy = RankedTensorType::get(tile.shape(), t.getElementType());
    std::string n = "arg" + std::to_string(i) + tile.suffix;
    if (!tile.defined)
      return freeInput(loc, tileTy, n + " (undefined: past the grid's edge)");
    return tvir::InputOp::create(b, loc, tileTy, b.getStringAttr(n));
  });
}

void Emitter::haloResult(Location loc, unsigned i, Value v,
                         const HaloLayout &h) {
  auto t = cast<RankedTensorType>(v.getType());
  for (const HaloTile &tile : haloTiles(h)) {
    if (!tile.defined)
      continue;
    Value part = tvir::SliceOp::create(
        b, loc, RankedTensorType::get(tile.shape(), t.getElementType()), v,
        ints(tile.localLo));
    tvir::OutputOp::create(b, loc,
                           b.getStringAttr("out" + Twine(i) + tile.suffix),
                           part);
  }
}

LogicalResult Emitter::updateHalo(shard::UpdateHaloOp op) {
  if (failed(needsProcess(op)) ||
      failed(checkTensor(op, op.getDestination().getType())))
    return failure();
  if (!op.getHaloSizes().empty())
    return op.emitError() << "shard-partition import: halo sizes that are "
                             "runtime values are not modeled";
  auto ty = cast<RankedTensorType>(op.getDestination().getType());
  ArrayRef<int64_t> sizes = op.getStaticHaloSizes();
  auto splits = op.getSplitAxes().getAxes();
  // The halo layout of this process's value, from the op's own split axes
  // and halo sizes (two per split dimension, in order).
  HaloLayout h;
  SmallVector<SmallVector<int16_t>> axesOf;
  size_t k = 0;
  SmallVector<int64_t> coords = grid.coords(process);
  SmallVector<int64_t> idxOf, countOf;
  for (int64_t d = 0; d < ty.getRank(); ++d) {
    SmallVector<int16_t> axes;
    if ((size_t)d < splits.size())
      axes.assign(splits[d].asArrayRef().begin(), splits[d].asArrayRef().end());
    int64_t before = 0, after = 0, idx = 0, count = 1;
    for (int16_t a : axes) {
      if (a < 0 || a >= (int64_t)grid.sizes.size())
        return op.emitError() << "shard-partition import: grid axis " << a
                              << " is outside the grid";
      idx = idx * grid.sizes[a] + coords[a];
      count *= grid.sizes[a];
    }
    if (!axes.empty()) {
      if (k + 2 > sizes.size())
        return op.emitError() << "shard-partition import: update_halo has "
                                 "fewer halo sizes than split dimensions";
      before = sizes[k], after = sizes[k + 1];
      k += 2;
    }
    int64_t core = ty.getDimSize(d) - before - after;
    if (core < 1 || before > core || after > core)
      return op.emitError()
             << "shard-partition import: a halo wider than its core block "
                "(dimension "
             << d << ": " << before << " and " << after << " around "
             << core << ") reaches past the neighbour and is not modeled";
    // Core bounds in the units of the group (the global tensor's rows are
    // not needed: a tile is defined when its owner exists).
    h.before.push_back(before);
    h.after.push_back(after);
    h.coreLo.push_back(idx * core);
    h.coreHi.push_back(idx * core + core);
    h.global.push_back(count * core);
    axesOf.push_back(axes);
    idxOf.push_back(idx);
    countOf.push_back(count);
  }
  if (k != sizes.size())
    return op.emitError() << "shard-partition import: update_halo has "
                          << sizes.size() << " halo sizes for " << k / 2
                          << " split dimensions";
  // The process whose in-group index is this one's shifted by `offs`
  // along every split dimension (-1 if outside the grid).
  auto neighbour = [&](ArrayRef<int64_t> offs) -> int64_t {
    SmallVector<int64_t> c = coords;
    for (auto [d, o] : llvm::enumerate(offs)) {
      if (!o)
        continue;
      int64_t idx = idxOf[d] + o;
      if (idx < 0 || idx >= countOf[d])
        return -1;
      // The in-group index back to coordinates, the first axis major.
      for (int16_t a : llvm::reverse(axesOf[d])) {
        c[a] = idx % grid.sizes[a];
        idx /= grid.sizes[a];
      }
    }
    return grid.linear(c);
  };
  FailureOr<Value> dest = use(op, op.getDestination());
  if (failed(dest))
    return failure();
  Location loc = op.getLoc();
  RankedTensorType t = tvType(ty);
  std::vector<HaloTile> tiles = haloTiles(h);
  // Sends first: the neighbour at -o receives this process's core cells
  // for its tile o (for o = -1 along d: the last rows of this core; +1:
  // the first). One message per pair of processes.
  for (const HaloTile &tile : tiles) {
    if (llvm::all_of(tile.offs, [](int64_t o) { return o == 0; }))
      continue;
    SmallVector<int64_t> back;
    for (int64_t o : tile.offs)
      back.push_back(-o);
    int64_t to = neighbour(back);
    if (to < 0)
      continue;
    SmallVector<int64_t> start;
    for (auto [d, o] : llvm::enumerate(tile.offs)) {
      int64_t core = h.coreHi[d] - h.coreLo[d];
      // Its last rows for the neighbour after it (o = -1 there), else
      // from the core's first row.
      start.push_back(o == -1 ? core : h.before[d]);
    }
    // Along an unsplit dimension the core is the whole dimension.
    Value part = tvir::SliceOp::create(
        b, loc, RankedTensorType::get(tile.shape(), t.getElementType()), *dest,
        ints(start));
    tvir::SendOp::create(b, loc, part, i64(to), StringAttr(), IntegerAttr(),
                         i64(0), DenseI64ArrayAttr());
  }
  Value result = assemble(loc, t, h, [&](const HaloTile &tile) -> Value {
    auto tileTy = RankedTensorType::get(tile.shape(), t.getElementType());
    if (llvm::all_of(tile.offs, [](int64_t o) { return o == 0; }))
      return tvir::SliceOp::create(b, loc, tileTy, *dest, ints(tile.localLo));
    int64_t from = neighbour(tile.offs);
    if (from < 0)
      return freeInput(loc, tileTy,
                       "undefined" + std::to_string(undefCount++) +
                           " (shard.update_halo at the grid's edge)");
    return tvir::RecvOp::create(b, loc, tileTy, i64(from), StringAttr(),
                                IntegerAttr(), i64(0), DenseI64ArrayAttr());
  });
  name[op.getResult()] = result;
  return success();
}

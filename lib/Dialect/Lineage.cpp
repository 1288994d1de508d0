//===- Lineage.cpp - slice arithmetic and lineage checks ------------------===//
#include "TrainVerify/Dialect/Lineage.h"
#include "TrainVerify/Dialect/TVOps.h"

#include "mlir/IR/Threading.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringMap.h"

using namespace mlir;
using namespace mlir::tv;

int64_t Box::volume() const {
  // Saturates instead of overflowing: absurd boxes compare as huge.
  int64_t v = 1;
  for (unsigned i = 0; i < rank(); ++i) {
    int64_t extent = std::max<int64_t>(0, upper[i] - lower[i]);
    if (__builtin_mul_overflow(v, extent, &v))
      return INT64_MAX;
  }
  return v;
}

bool Box::contains(const Box &o) const {
  if (o.rank() != rank())
    return false;
  for (unsigned i = 0; i < rank(); ++i)
    if (o.lower[i] < lower[i] || o.upper[i] > upper[i])
      return false;
  return true;
}

std::optional<Box> Box::intersect(const Box &o) const {
  if (o.rank() != rank())
    return std::nullopt;
  Box r;
  for (unsigned i = 0; i < rank(); ++i) {
    int64_t lo = std::max(lower[i], o.lower[i]);
    int64_t hi = std::min(upper[i], o.upper[i]);
    if (lo >= hi)
      return std::nullopt;
    r.lower.push_back(lo);
    r.upper.push_back(hi);
  }
  return r;
}

SmallVector<int64_t> Box::shape() const {
  SmallVector<int64_t> s;
  for (unsigned i = 0; i < rank(); ++i)
    s.push_back(upper[i] - lower[i]);
  return s;
}

Box Box::full(ArrayRef<int64_t> shape) {
  Box b;
  b.lower.assign(shape.size(), 0);
  b.upper.assign(shape.begin(), shape.end());
  return b;
}

/// Every intersecting pair (i, j), j < i, of `boxes`, ordered by (i, j).
/// A sweep along dimension 0: linear for slices that partition a tensor
/// along it (batch and micro-batch shards), quadratic only for boxes that
/// share their dimension-0 range.
static std::vector<std::pair<size_t, size_t>>
overlappingPairs(ArrayRef<const Box *> boxes) {
  std::vector<std::pair<size_t, size_t>> pairs;
  std::vector<size_t> order(boxes.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  bool scalar = llvm::any_of(boxes, [](const Box *b) { return !b->rank(); });
  if (!scalar)
    llvm::stable_sort(order, [&](size_t a, size_t b) {
      return boxes[a]->lower[0] < boxes[b]->lower[0];
    });
  std::vector<size_t> active;
  for (size_t i : order) {
    if (!scalar)
      llvm::erase_if(active, [&](size_t a) {
        return boxes[a]->upper[0] <= boxes[i]->lower[0];
      });
    for (size_t a : active)
      if (boxes[i]->intersect(*boxes[a]))
        pairs.push_back({std::max(a, i), std::min(a, i)});
    active.push_back(i);
  }
  llvm::sort(pairs);
  return pairs;
}

bool mlir::tv::tilesExactly(const Box &whole, ArrayRef<Box> parts,
                            std::string *why) {
  int64_t total = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (!whole.contains(parts[i])) {
      if (why)
        *why = "slice " + std::to_string(i) + " is outside the tensor";
      return false;
    }
    total += parts[i].volume();
  }
  SmallVector<const Box *> ptrs;
  for (const Box &b : parts)
    ptrs.push_back(&b);
  auto pairs = overlappingPairs(ptrs);
  if (!pairs.empty()) {
    if (why)
      *why = "slices " + std::to_string(pairs[0].second) + " and " +
             std::to_string(pairs[0].first) + " overlap";
    return false;
  }
  if (total != whole.volume()) {
    if (why)
      *why = "slices cover " + std::to_string(total) + " of " +
             std::to_string(whole.volume()) + " elements";
    return false;
  }
  return true;
}

namespace {
struct NameInfo {
  RankedTensorType type;
  bool isOutput = false;
  bool isInput = false; // defined by tv.input (or a tag of one)
};
} // namespace

static void collectNames(Block &block, llvm::StringMap<NameInfo> &names) {
  for (Operation &op : block) {
    if (auto in = dyn_cast<InputOp>(op))
      names[in.getName()] = {cast<RankedTensorType>(in.getType()), false, true};
    else if (auto tag = dyn_cast<TagOp>(op))
      names[tag.getName()] = {cast<RankedTensorType>(tag.getValue().getType()),
                              false,
                              (bool)tag.getValue().getDefiningOp<InputOp>()};
    else if (auto out = dyn_cast<OutputOp>(op))
      names[out.getName()] = {cast<RankedTensorType>(out.getValue().getType()),
                              true, false};
  }
}

static std::string shapeStr(ArrayRef<int64_t> shape) {
  std::string s = "[";
  for (auto [i, d] : llvm::enumerate(shape))
    s += (i ? ", " : "") + std::to_string(d);
  return s + "]";
}

/// "at <where>: " for ops whose location names where they come from (an
/// importer's JSON path), so that diagnostics point into the source file.
static std::string where(Operation *op) {
  if (auto name = dyn_cast<NameLoc>(op->getLoc()))
    return "at " + name.getName().str() + ": ";
  return "";
}

ProgramParts mlir::tv::getProgramParts(ModuleOp module) {
  ProgramParts parts;
  for (Operation &op : *module.getBody()) {
    if (auto m = dyn_cast<MeshOp>(op))
      parts.mesh = m;
    else if (auto s = dyn_cast<SpecOp>(op))
      parts.spec = s;
    else if (auto p = dyn_cast<PlanOp>(op))
      parts.plan = p;
  }
  return parts;
}

/// The value of an affine expression (no symbols) at integer dimensions;
/// nullopt on a division by zero or a non-positive divisor.
static std::optional<int64_t> evalAffine(AffineExpr e, ArrayRef<int64_t> dims) {
  switch (e.getKind()) {
  case AffineExprKind::Constant:
    return cast<AffineConstantExpr>(e).getValue();
  case AffineExprKind::DimId:
    return dims[cast<AffineDimExpr>(e).getPosition()];
  case AffineExprKind::SymbolId:
    return std::nullopt;
  default:
    break;
  }
  auto bin = cast<AffineBinaryOpExpr>(e);
  std::optional<int64_t> l = evalAffine(bin.getLHS(), dims);
  std::optional<int64_t> r = evalAffine(bin.getRHS(), dims);
  if (!l || !r)
    return std::nullopt;
  switch (e.getKind()) {
  case AffineExprKind::Add:
    return *l + *r;
  case AffineExprKind::Mul:
    return *l * *r;
  case AffineExprKind::Mod:
    if (*r <= 0)
      return std::nullopt;
    return ((*l % *r) + *r) % *r;
  case AffineExprKind::FloorDiv:
    if (*r <= 0)
      return std::nullopt;
    return llvm::divideFloorSigned(*l, *r);
  case AffineExprKind::CeilDiv:
    if (*r <= 0)
      return std::nullopt;
    return llvm::divideCeilSigned(*l, *r);
  default:
    return std::nullopt;
  }
}

std::optional<int64_t> mlir::tv::evaluateAffineAt(AffineExpr e,
                                                  ArrayRef<int64_t> dims) {
  return evalAffine(e, dims);
}

/// `e` as `c[0] * d0 + ... + c[n-1] * d(n-1) + c[n]` when it is that
/// (sums, dimensions, constants and products by a constant, every
/// coefficient within 64 bits); nullopt otherwise. (MLIR's
/// getFlattenedAffineExpr flattens too, but lives in MLIRAnalysis, adds
/// local variables for mod and floordiv, and does not check overflow.)
static std::optional<SmallVector<int64_t>> linearForm(AffineExpr e,
                                                      unsigned numDims) {
  SmallVector<int64_t> c(numDims + 1, 0);
  switch (e.getKind()) {
  case AffineExprKind::Constant:
    c[numDims] = cast<AffineConstantExpr>(e).getValue();
    return c;
  case AffineExprKind::DimId:
    c[cast<AffineDimExpr>(e).getPosition()] = 1;
    return c;
  case AffineExprKind::Add:
  case AffineExprKind::Mul: {
    auto bin = cast<AffineBinaryOpExpr>(e);
    auto l = linearForm(bin.getLHS(), numDims);
    auto r = linearForm(bin.getRHS(), numDims);
    if (!l || !r)
      return std::nullopt;
    if (e.getKind() == AffineExprKind::Add) {
      for (unsigned i = 0; i <= numDims; ++i)
        if (__builtin_add_overflow((*l)[i], (*r)[i], &c[i]))
          return std::nullopt;
      return c;
    }
    // A product is linear when one side is a constant.
    auto isConst = [&](ArrayRef<int64_t> f) {
      return llvm::all_of(f.drop_back(), [](int64_t x) { return x == 0; });
    };
    if (!isConst(*l) && !isConst(*r))
      return std::nullopt;
    ArrayRef<int64_t> f = isConst(*l) ? *r : *l;
    int64_t k = isConst(*l) ? l->back() : r->back();
    for (unsigned i = 0; i <= numDims; ++i)
      if (__builtin_mul_overflow(f[i], k, &c[i]))
        return std::nullopt;
    return c;
  }
  default:
    return std::nullopt;
  }
}

/// Calls `fn(rank, coordinates)` for every rank of a mesh of `sizes` whose
/// coordinates are `fixed` where that is not -1, in rank order (the last
/// free axis fastest).
static void walkSlice(ArrayRef<int64_t> sizes, ArrayRef<int64_t> fixed,
                      function_ref<void(int64_t, ArrayRef<int64_t>)> fn) {
  if (llvm::any_of(sizes, [](int64_t s) { return s < 1; }))
    return; // no rank
  SmallVector<int64_t> coords(sizes.size());
  for (auto [i, f] : llvm::enumerate(fixed))
    coords[i] = f < 0 ? 0 : f;
  while (true) {
    int64_t rank = 0;
    for (auto [c, s] : llvm::zip(coords, sizes))
      rank = rank * s + c;
    fn(rank, coords);
    int64_t i = sizes.size() - 1;
    for (; i >= 0; --i) {
      if (fixed[i] >= 0)
        continue;
      if (++coords[i] < sizes[i])
        break;
      coords[i] = 0;
    }
    if (i < 0)
      return;
  }
}

namespace {
/// One tv.lineage_map of a module (or #tv.lineage_map of a stage's list),
/// resolved against its mesh.
struct MapSite {
  StringAttr spec, plan;
  AffineMap blocks;
  ArrayRef<int64_t> shape;
  ArrayRef<int64_t> sizes; // the mesh's
  SmallVector<int64_t> fixed; // coordinate per axis, -1: free
  int64_t scaleNum = 1, scaleDen = 1;
  /// The lineages of the boxes this map names first (module order), in the
  /// order their first statements come.
  std::vector<LineageView> fresh;
};
} // namespace

/// The statements of the maps of one spec tensor (`sites`, in module order)
/// merged per box: each box's lineage goes to the `fresh` list of the first
/// map that names it. Boxes of different spec tensors never merge, so each
/// spec tensor's maps are expanded on their own: the working arrays are one
/// tensor's, not the whole plan's (millions of statements on large plans).
static void expandSpecMaps(MLIRContext *ctx, ArrayRef<MapSite *> sites,
                           LineageStore &store) {
  struct PendingBox {
    int64_t scaleNum, scaleDen; // the maps' factor (1/1: none)
    uint32_t bounds; // offset in `bounds`: lower then upper, `dims` each
    uint32_t dims;
    uint32_t site; // index in `sites` of the map naming it first
  };
  struct PendingRef {
    uint32_t box;
    uint32_t plan; // index in `planNames`
    uint32_t rank; // the mesh verifier caps meshes at 2^20 ranks
  };
  StringAttr spec = sites.front()->spec;
  std::vector<StringAttr> planNames;
  DenseMap<StringAttr, uint32_t> planIndexOf;
  std::vector<PendingBox> boxes;
  std::vector<int64_t> bounds;
  std::vector<PendingRef> refs;
  // Boxes by hash, equal hashes chained.
  DenseMap<uint64_t, uint32_t> boxByHash;
  std::vector<uint32_t> nextSameHash;
  constexpr uint32_t none = ~0u;
  SmallVector<int64_t> lower, upper;
  for (auto [siteIndex, site] : llvm::enumerate(sites)) {
    ArrayRef<int64_t> sizes = site->sizes;
    AffineMap map = site->blocks;
    ArrayRef<int64_t> shape = site->shape;
    auto [planSlot, newPlan] =
        planIndexOf.try_emplace(site->plan, planNames.size());
    if (newPlan)
      planNames.push_back(site->plan);
    uint32_t planIndex = planSlot->second;
    // Linear indices (the usual map) are dot products; others are
    // evaluated as expressions.
    SmallVector<std::optional<SmallVector<int64_t>>> linear;
    for (AffineExpr e : map.getResults())
      linear.push_back(linearForm(e, map.getNumDims()));
    walkSlice(sizes, site->fixed, [&](int64_t rank, ArrayRef<int64_t> coords) {
      lower.clear();
      upper.clear();
      for (auto [d, e] : llvm::enumerate(map.getResults())) {
        // collectLineages checked that the map evaluates (it does at every
        // coordinate when it does at one: a divisor is a constant), and
        // resolveSite that every index fits in 64 bits on the slice (a dot
        // product's terms, coefficients of 64 bits times coordinates below
        // 2^20, are added in 128).
        int64_t idx;
        if (const auto &f = linear[d]) {
          __int128 sum = f->back();
          for (auto [ci, x] : llvm::zip(ArrayRef(*f).drop_back(), coords))
            sum += (__int128)ci * x;
          idx = (int64_t)sum;
        } else {
          idx = *evalAffine(e, coords);
        }
        lower.push_back(idx * shape[d]);
        upper.push_back(idx * shape[d] + shape[d]);
      }
      // A box is both corners and the factor (two maps of one tensor may
      // use different block shapes).
      uint64_t h = llvm::hash_combine(
          site->scaleNum, site->scaleDen,
          llvm::hash_combine_range(lower.begin(), lower.end()),
          llvm::hash_combine_range(upper.begin(), upper.end()));
      auto [head, fresh] = boxByHash.try_emplace(h, none);
      uint32_t found = none;
      for (uint32_t b = head->second; b != none; b = nextSameHash[b]) {
        const PendingBox &box = boxes[b];
        ArrayRef<int64_t> bb(bounds.data() + box.bounds, 2 * box.dims);
        if (box.scaleNum == site->scaleNum && box.scaleDen == site->scaleDen &&
            bb.take_front(box.dims) == ArrayRef(lower) &&
            bb.drop_front(box.dims) == ArrayRef(upper)) {
          found = b;
          break;
        }
      }
      if (found == none) {
        found = boxes.size();
        nextSameHash.push_back(head->second);
        head->second = found;
        boxes.push_back({site->scaleNum, site->scaleDen,
                         (uint32_t)bounds.size(), (uint32_t)lower.size(),
                         (uint32_t)siteIndex});
        bounds.insert(bounds.end(), lower.begin(), lower.end());
        bounds.insert(bounds.end(), upper.begin(), upper.end());
      }
      refs.push_back({found, planIndex, (uint32_t)rank});
    });
  }
  // Each box's replicas by plan tensor and rank.
  llvm::sort(refs, [](const PendingRef &a, const PendingRef &b) {
    return std::tie(a.box, a.plan, a.rank) < std::tie(b.box, b.plan, b.rank);
  });
  // The last run of one plan tensor becomes the lineage's replicas list (a
  // rank costs eight bytes, not an attribute); others, rare (two maps of
  // one box naming different tensors), explicit groups of one reference.
  // Boxes are numbered in the order they come, so the lineages of each map
  // are appended in order.
  // Statements are views into arrays the store keeps (sized up front: the
  // views point into them), not uniqued attributes (decision 128).
  std::vector<int64_t> ranks, scales;
  ranks.reserve(refs.size());
  if (llvm::any_of(sites, [](const MapSite *s) {
        return s->scaleNum != 1 || s->scaleDen != 1;
      }))
    scales.reserve(2 * boxes.size());
  SmallVector<Attribute> groups;
  ArrayAttr noGroups = ArrayAttr::get(ctx, {});
  for (size_t i = 0, e = refs.size(); i < e;) {
    const PendingBox &box = boxes[refs[i].box];
    groups.clear();
    uint32_t plan = 0;
    size_t first = ranks.size();
    while (true) {
      plan = refs[i].plan;
      first = ranks.size();
      for (; i < e && &boxes[refs[i].box] == &box && refs[i].plan == plan; ++i)
        ranks.push_back(refs[i].rank);
      if (i == e || &boxes[refs[i].box] != &box)
        break;
      for (int64_t r : ArrayRef(ranks).drop_front(first))
        groups.push_back(ArrayAttr::get(
            ctx, {PlanRefAttr::get(ctx, planNames[plan].getValue(), r)}));
      ranks.resize(first);
    }
    ArrayRef<int64_t> b(bounds.data() + box.bounds, 2 * box.dims);
    LineageView v;
    if (box.scaleNum != 1 || box.scaleDen != 1) {
      scales.push_back(box.scaleNum);
      scales.push_back(box.scaleDen);
      v.scaleData = scales.data() + scales.size() - 2;
    }
    v.spec = spec;
    v.lowerData = b.data();
    v.upperData = b.data() + box.dims;
    v.rank = box.dims;
    v.groups = groups.empty() ? noGroups : ArrayAttr::get(ctx, groups);
    v.replicaName = planNames[plan];
    v.ranksData = ranks.data() + first;
    v.numRanks = ranks.size() - first;
    sites[box.site]->fresh.push_back(v);
  }
  store.arrays.push_back(std::move(bounds));
  store.arrays.push_back(std::move(ranks));
  store.arrays.push_back(std::move(scales));
}

/// Resolves a map against its mesh and checks that it evaluates; the
/// diagnostic (through `emitError`) says why not.
static LogicalResult
resolveSite(MapSite &site, MeshOp mesh, StringAttr spec, AffineMap blocks,
            ArrayRef<int64_t> shape, StringAttr plan, DictionaryAttr where,
            std::optional<ArrayRef<int64_t>> scale,
            function_ref<InFlightDiagnostic()> emitError) {
  site.spec = spec;
  site.plan = plan;
  site.blocks = blocks;
  site.shape = shape;
  site.sizes = mesh.getSizes();
  if (blocks.getNumDims() != site.sizes.size() ||
      blocks.getNumResults() != shape.size())
    return emitError() << "blocks map does not match the mesh and the shape";
  site.fixed.assign(site.sizes.size(), -1);
  for (NamedAttribute w : where) {
    int64_t idx = mesh.getAxisIndex(w.getName().getValue());
    if (idx < 0)
      return emitError() << "where: no mesh axis '" << w.getName().getValue()
                         << "'";
    int64_t c = cast<IntegerAttr>(w.getValue()).getInt();
    if (c < 0 || c >= site.sizes[idx])
      return emitError() << "where: coordinate " << c << " of axis '"
                         << w.getName().getValue() << "' is outside its size "
                         << site.sizes[idx];
    site.fixed[idx] = c;
  }
  if (scale && scale->size() == 2)
    site.scaleNum = (*scale)[0], site.scaleDen = (*scale)[1];
  // A divisor is a constant (or a symbol, which never evaluates): a map
  // that evaluates at the slice's first rank evaluates at every rank.
  SmallVector<int64_t> first(site.sizes.size());
  int64_t rank = 0;
  for (auto [i, f] : llvm::enumerate(site.fixed)) {
    first[i] = f < 0 ? 0 : f;
    rank = rank * site.sizes[i] + first[i];
  }
  for (AffineExpr e : blocks.getResults())
    if (!evalAffine(e, first))
      return emitError() << "blocks map cannot be evaluated at rank " << rank
                         << " (a division by a non-positive number)";
  // Every index, and its box's bounds, fits in 64 bits on the whole slice
  // (bounded by intervals): evaluation never overflows.
  SmallVector<std::pair<int64_t, int64_t>> ranges;
  for (auto [i, f] : llvm::enumerate(site.fixed))
    ranges.push_back(f < 0 ? std::make_pair<int64_t, int64_t>(0, site.sizes[i] - 1)
                           : std::make_pair(f, f));
  for (auto [d, e] : llvm::enumerate(blocks.getResults())) {
    auto r = affineRangeOver(e, ranges);
    int64_t top, lo, hi;
    if (!r || __builtin_add_overflow(r->second, 1, &top) ||
        __builtin_mul_overflow(r->first, shape[d], &lo) ||
        __builtin_mul_overflow(top, shape[d], &hi))
      return emitError() << "blocks map's index " << d
                         << " overflows 64 bits on the mesh";
  }
  return success();
}

FailureOr<std::vector<LineageEntry>>
mlir::tv::collectLineages(ModuleOp module) {
  LineageStore store;
  FailureOr<std::vector<LineageRun>> runs = collectLineageRuns(module, store);
  if (failed(runs))
    return failure();
  std::vector<LineageEntry> out;
  MLIRContext *ctx = module.getContext();
  for (const LineageRun &run : *runs)
    for (const LineageView &v : run.views)
      out.push_back({v.toAttr(ctx), run.op});
  return out;
}

FailureOr<std::vector<LineageRun>>
mlir::tv::collectLineageRuns(ModuleOp module, LineageStore &store) {
  MLIRContext *ctx = module.getContext();
  // The maps, resolved and checked first, in module order.
  std::vector<MapSite> sites;
  SymbolTableCollection symbols;
  size_t plain = 0;
  for (Operation &op : *module.getBody()) {
    if (isa<LineageOp>(op))
      ++plain;
    auto lmap = dyn_cast<LineageMapOp>(op);
    if (!lmap)
      continue;
    auto mesh =
        symbols.lookupNearestSymbolFrom<MeshOp>(lmap, lmap.getMeshAttr());
    if (!mesh)
      return lmap.emitOpError()
             << "refers to unknown mesh " << lmap.getMeshAttr();
    MapSite site;
    if (failed(resolveSite(site, mesh, lmap.getSpecAttr(), lmap.getBlocks(),
                           lmap.getShape(), lmap.getPlanAttr(),
                           lmap.getWhere(), lmap.getScale(),
                           [&] { return lmap.emitOpError(); })))
      return failure();
    sites.push_back(std::move(site));
  }
  // Expanded per spec tensor, its maps in module order.
  llvm::MapVector<StringAttr, SmallVector<MapSite *>> bySpec;
  for (MapSite &site : sites)
    bySpec[site.spec].push_back(&site);
  // Spec tensors expand independently (each into arrays of its own, moved
  // into `store` after: the views point into their buffers, which a move
  // keeps).
  std::vector<LineageStore> perSpec(bySpec.size());
  parallelFor(ctx, 0, bySpec.size(), [&](size_t i) {
    expandSpecMaps(ctx, bySpec.begin()[i].second, perSpec[i]);
  });
  for (LineageStore &part : perSpec)
    for (std::vector<int64_t> &array : part.arrays)
      store.arrays.push_back(std::move(array));
  // One run per op in module order: a map's boxes where it names them
  // first (its list moved into the store), a plain statement from a list
  // sized up front (the runs point into it).
  std::vector<LineageRun> out;
  out.reserve(plain + sites.size());
  store.views.reserve(store.views.size() + 1 + sites.size()); // no move
  store.views.emplace_back();
  std::vector<LineageView> &plainViews = store.views.back();
  plainViews.reserve(plain);
  auto nextSite = sites.begin();
  for (Operation &op : *module.getBody()) {
    if (auto lin = dyn_cast<LineageOp>(op)) {
      plainViews.push_back(LineageView(lin.getLineage()));
      out.push_back({ArrayRef(plainViews.back()), &op});
    } else if (isa<LineageMapOp>(op)) {
      store.views.push_back(std::move(nextSite->fresh));
      out.push_back({store.views.back(), &op});
      ++nextSite;
    }
  }
  return out;
}

FailureOr<std::vector<LineageStatement>>
mlir::tv::collectLineageViews(ModuleOp module, LineageStore &store) {
  FailureOr<std::vector<LineageRun>> runs = collectLineageRuns(module, store);
  if (failed(runs))
    return failure();
  size_t total = 0;
  for (const LineageRun &run : *runs)
    total += run.views.size();
  std::vector<LineageStatement> out;
  out.reserve(total);
  for (const LineageRun &run : *runs)
    for (const LineageView &v : run.views)
      out.push_back({v, run.op});
  return out;
}

/// resolveSite for a #tv.lineage_map attribute.
static LogicalResult
resolveSite(MapSite &site, MeshOp mesh, LineageMapAttr map,
            function_ref<InFlightDiagnostic()> emitError) {
  std::optional<ArrayRef<int64_t>> scale;
  if (!map.getScale().empty())
    scale = map.getScale();
  return resolveSite(site, mesh, map.getSpec(), map.getBlocks().getValue(),
                     map.getShape(), map.getPlan(), map.getWhere(), scale,
                     emitError);
}

FailureOr<SmallVector<LineageAttr>>
mlir::tv::expandLineageList(ArrayAttr list,
                            function_ref<MeshOp(FlatSymbolRefAttr)> meshOf,
                            function_ref<InFlightDiagnostic()> emitError) {
  SmallVector<LineageAttr> out;
  std::vector<MapSite> sites;
  for (Attribute a : list) {
    auto m = dyn_cast<LineageMapAttr>(a);
    if (!m)
      continue;
    MeshOp mesh = meshOf(m.getMesh());
    if (!mesh)
      return emitError() << "lineage map of '" << m.getSpec().getValue()
                         << "' refers to unknown mesh " << m.getMesh();
    MapSite site;
    if (failed(resolveSite(site, mesh, m, [&] {
                             InFlightDiagnostic d = emitError();
                             d << "lineage map of '" << m.getSpec().getValue()
                               << "': ";
                             return d;
                           })))
      return failure();
    sites.push_back(std::move(site));
  }
  if (sites.empty()) {
    for (Attribute a : list)
      out.push_back(cast<LineageAttr>(a));
    return out;
  }
  // As collectLineages: each spec tensor's maps merged per box, each box at
  // the map naming it first.
  llvm::MapVector<StringAttr, SmallVector<MapSite *>> bySpec;
  for (MapSite &site : sites)
    bySpec[site.spec].push_back(&site);
  LineageStore store;
  for (auto &[spec, specSites] : bySpec)
    expandSpecMaps(list.getContext(), specSites, store);
  auto nextSite = sites.begin();
  for (Attribute a : list) {
    if (auto l = dyn_cast<LineageAttr>(a)) {
      out.push_back(l);
      continue;
    }
    for (const LineageView &v : nextSite->fresh)
      out.push_back(v.toAttr(list.getContext()));
    ++nextSite;
  }
  return out;
}

LogicalResult
mlir::tv::verifyLineageMapOnMesh(LineageMapAttr map, MeshOp mesh,
                                 function_ref<InFlightDiagnostic()> emitError) {
  MapSite site;
  return resolveSite(site, mesh, map, [&] {
                       InFlightDiagnostic d = emitError();
                       d << "lineage map of '" << map.getSpec().getValue()
                         << "' on " << map.getMesh() << ": ";
                       return d;
                     });
}

std::optional<std::pair<int64_t, int64_t>>
mlir::tv::affineRangeOver(AffineExpr e,
                          ArrayRef<std::pair<int64_t, int64_t>> ranges) {
  using Range = std::pair<int64_t, int64_t>;
  if (auto c = dyn_cast<AffineConstantExpr>(e))
    return Range{c.getValue(), c.getValue()};
  if (auto d = dyn_cast<AffineDimExpr>(e))
    return d.getPosition() < ranges.size()
               ? std::optional<Range>(ranges[d.getPosition()])
               : std::nullopt;
  auto bin = dyn_cast<AffineBinaryOpExpr>(e);
  if (!bin)
    return std::nullopt;
  auto l = affineRangeOver(bin.getLHS(), ranges);
  auto r = affineRangeOver(bin.getRHS(), ranges);
  if (!l || !r)
    return std::nullopt;
  auto [a, b] = *l;
  auto [c, d] = *r;
  // Every bound computed without overflow: nullopt otherwise.
  switch (e.getKind()) {
  case AffineExprKind::Add: {
    int64_t lo, hi;
    if (__builtin_add_overflow(a, c, &lo) || __builtin_add_overflow(b, d, &hi))
      return std::nullopt;
    return Range{lo, hi};
  }
  case AffineExprKind::Mul: {
    int64_t p[4];
    if (__builtin_mul_overflow(a, c, &p[0]) ||
        __builtin_mul_overflow(a, d, &p[1]) ||
        __builtin_mul_overflow(b, c, &p[2]) ||
        __builtin_mul_overflow(b, d, &p[3]))
      return std::nullopt;
    return Range{*std::min_element(p, p + 4), *std::max_element(p, p + 4)};
  }
  case AffineExprKind::Mod:
    if (c != d || c <= 0)
      return std::nullopt;
    if (a >= 0 && b < c)
      return Range{a, b};
    return Range{0, c - 1};
  case AffineExprKind::FloorDiv:
    if (c != d || c <= 0)
      return std::nullopt;
    return Range{llvm::divideFloorSigned(a, c), llvm::divideFloorSigned(b, c)};
  case AffineExprKind::CeilDiv:
    if (c != d || c <= 0)
      return std::nullopt;
    return Range{llvm::divideCeilSigned(a, c), llvm::divideCeilSigned(b, c)};
  default:
    return std::nullopt;
  }
}

FailureOr<SmallVector<std::pair<int64_t, int64_t>>>
mlir::tv::sliceRanges(MeshOp mesh, DictionaryAttr where) {
  SmallVector<std::pair<int64_t, int64_t>> ranges;
  for (int64_t s : mesh.getSizes())
    ranges.push_back({0, s - 1});
  for (NamedAttribute w : where) {
    int64_t idx = mesh.getAxisIndex(w.getName().getValue());
    auto c = dyn_cast<IntegerAttr>(w.getValue());
    if (idx < 0 || !c || c.getInt() < 0 || c.getInt() > ranges[idx].second)
      return failure();
    ranges[idx] = {c.getInt(), c.getInt()};
  }
  return ranges;
}

LogicalResult mlir::tv::forEachRankWhere(
    MeshOp mesh, DictionaryAttr where,
    function_ref<void(int64_t, ArrayRef<int64_t>)> fn) {
  FailureOr<SmallVector<std::pair<int64_t, int64_t>>> ranges =
      sliceRanges(mesh, where);
  if (failed(ranges))
    return failure();
  SmallVector<int64_t> fixed(ranges->size(), -1);
  for (NamedAttribute w : where)
    fixed[mesh.getAxisIndex(w.getName().getValue())] =
        cast<IntegerAttr>(w.getValue()).getInt();
  walkSlice(mesh.getSizes(), fixed, fn);
  return success();
}

static bool holdsMaps(ArrayAttr list) {
  return list && llvm::any_of(list, [](Attribute a) {
           return isa<LineageMapAttr>(a);
         });
}

LogicalResult mlir::tv::expandLineageMaps(StageOp stage) {
  if (!holdsMaps(stage.getAssumes()) && !holdsMaps(stage.getGuarantees()))
    return success();
  // Each mesh looked up once, without a table of the whole module (built
  // anew for every stage, it cost a walk of thousands of stages each).
  DenseMap<Attribute, MeshOp> meshes;
  auto meshOf = [&](FlatSymbolRefAttr sym) {
    auto [it, fresh] = meshes.try_emplace(sym);
    if (fresh)
      it->second = SymbolTable::lookupNearestSymbolFrom<MeshOp>(stage, sym);
    return it->second;
  };
  auto emitError = [&] { return stage.emitOpError(); };
  MLIRContext *ctx = stage.getContext();
  for (bool guarantees : {false, true}) {
    ArrayAttr list = guarantees ? stage.getGuarantees() : stage.getAssumes();
    if (!holdsMaps(list))
      continue;
    FailureOr<SmallVector<LineageAttr>> all =
        expandLineageList(list, meshOf, emitError);
    if (failed(all))
      return failure();
    SmallVector<Attribute> attrs(all->begin(), all->end());
    if (guarantees)
      stage.setGuaranteesAttr(ArrayAttr::get(ctx, attrs));
    else
      stage.setAssumesAttr(ArrayAttr::get(ctx, attrs));
  }
  return success();
}

LogicalResult mlir::tv::expandLineageMaps(Operation *root) {
  WalkResult r = root->walk([](StageOp stage) {
    return failed(expandLineageMaps(stage)) ? WalkResult::interrupt()
                                            : WalkResult::advance();
  });
  return failure(r.wasInterrupted());
}

LogicalResult mlir::tv::checkLineages(ModuleOp module) {
  LineageStore store;
  FailureOr<std::vector<LineageRun>> runs = collectLineageRuns(module, store);
  return failed(runs) ? failure()
                      : checkLineages(module, ArrayRef<LineageRun>(*runs));
}

LogicalResult mlir::tv::checkLineages(ModuleOp module,
                                      ArrayRef<LineageEntry> entries) {
  std::vector<LineageView> views;
  views.reserve(entries.size()); // the runs point into it
  std::vector<LineageRun> runs;
  runs.reserve(entries.size());
  for (const LineageEntry &e : entries) {
    views.push_back(LineageView(e.attr));
    runs.push_back({ArrayRef(views.back()), e.op});
  }
  return checkLineages(module, runs);
}

LogicalResult mlir::tv::checkLineages(ModuleOp module,
                                      ArrayRef<LineageRun> lineages) {
  auto [mesh, spec, plan] = getProgramParts(module);
  if (!spec || !plan)
    return module.emitError() << "module needs a tv.spec and a tv.plan";
  // A plan in phases means its joined form (decision 124): checked on a
  // joined copy (an importer checks before any pass joins it; the copy's
  // ops keep their locations).
  if (plan.hasPhases()) {
    OwningOpRef<ModuleOp> copy = module.clone();
    copy->walk([](PlanOp p) { p.joinPhases(); });
    LineageStore store;
    FailureOr<std::vector<LineageRun>> all = collectLineageRuns(*copy, store);
    return failed(all) ? failure()
                       : checkLineages(*copy, ArrayRef<LineageRun>(*all));
  }
  // Ranks outside the mesh are refused before any lookup keyed by rank
  // (a rank of 2^63 - 1 is the empty key of LLVM's DenseMap).
  int64_t meshRanks = INT64_MAX;
  if (mesh) {
    meshRanks = 1;
    for (int64_t s : mesh.getSizes())
      meshRanks = s > 0 && meshRanks <= INT64_MAX / s ? meshRanks * s
                                                      : INT64_MAX;
  }
  llvm::StringMap<NameInfo> specNames;
  collectNames(spec.getBody().front(), specNames);
  // Names per rank program, and which program each rank runs.
  std::vector<llvm::StringMap<NameInfo>> progNames;
  llvm::DenseMap<int64_t, unsigned> rankProg;
  for (Operation &op : plan.getBody().front()) {
    auto prog = cast<RankProgramOp>(op);
    progNames.emplace_back();
    collectNames(prog.getBody().front(), progNames.back());
    for (int64_t r : prog.getRanks())
      rankProg[r] = progNames.size() - 1;
  }

  bool ok = true;
  // The statements of each spec tensor, by index (a box is rebuilt from its
  // attribute when the tensor's slices are compared: millions of statements
  // on large plans).
  // A statement is its run and its position in the run.
  using Index = std::pair<uint32_t, uint32_t>;
  llvm::StringMap<std::vector<Index>> slices;
  auto boxOf = [&](Index i) {
    const LineageView &a = lineages[i.first].views[i.second];
    return Box{SmallVector<int64_t>(a.getLower()),
               SmallVector<int64_t>(a.getUpper())};
  };
  // Initial lineages (of spec inputs) are never proven, only assumed: they
  // must name plan inputs, and a plan tensor may stand for one slice only.
  // (Names live in the context, as long as the lineages.)
  DenseMap<std::pair<int64_t, StringRef>, const LineageView *> initialRefs;
  // A lineage map stands for many statements: report each of its faults once.
  llvm::SmallPtrSet<Operation *, 8> reported;
  auto report = [&](Operation *op) {
    return !isa<LineageMapOp>(op) || reported.insert(op).second;
  };
  unsigned lastProg = ~0u;
  StringRef lastName;
  const NameInfo *lastInfo = nullptr;
  // A run's statements mostly share their spec tensor: it is looked up
  // once per run of one.
  StringAttr lastSpec;
  llvm::StringMap<NameInfo>::iterator it = specNames.end();
  std::vector<Index> *specSlices = nullptr;
  for (auto [runIndex, run] : llvm::enumerate(lineages))
    for (auto [offset, attr] : llvm::enumerate(run.views)) {
      Operation *lin = run.op;
      if (attr.getSpec() != lastSpec) {
        lastSpec = attr.getSpec();
        it = specNames.find(attr.getSpec().getValue());
        specSlices = &slices[attr.getSpec().getValue()];
      }
      if (it == specNames.end()) {
        if (report(lin))
          lin->emitError() << where(lin) << "lineage names spec tensor '"
                           << attr.getSpec().getValue()
                           << "' that the spec does not define";
        ok = false;
        continue;
      }
      Box box{SmallVector<int64_t>(attr.getLower()),
              SmallVector<int64_t>(attr.getUpper())};
      ArrayRef<int64_t> full = it->second.type.getShape();
      if (!Box::full(full).contains(box)) {
        if (report(lin))
          lin->emitError() << where(lin) << "lineage slice of '"
                           << attr.getSpec().getValue()
                           << "' lies outside its shape " << shapeStr(full);
        ok = false;
        continue;
      }
      SmallVector<int64_t> sliceShape = box.shape();
      attr.walkRefs([&](size_t, PlanRefView ref) {
        {
          if (ref.rank < 0 || ref.rank >= meshRanks ||
              ref.rank >= INT64_MAX - 1) {
            if (report(lin))
              lin->emitError()
                  << where(lin) << "lineage refers to rank " << ref.rank
                  << ", outside the mesh of " << meshRanks << " rank(s)";
            ok = false;
            return;
          }
          auto rp = rankProg.find(ref.rank);
          if (rp == rankProg.end()) {
            if (report(lin))
              lin->emitError() << where(lin) << "lineage refers to rank "
                               << ref.rank << " that runs no program";
            ok = false;
            return;
          }
          // Consecutive references mostly name one tensor of one program.
          if (rp->second != lastProg || ref.name.data() != lastName.data() ||
              ref.name.size() != lastName.size()) {
            auto &names = progNames[rp->second];
            auto found = names.find(ref.name);
            lastInfo = found == names.end() ? nullptr : &found->second;
            lastProg = rp->second;
            lastName = ref.name;
          }
          if (!lastInfo) {
            if (report(lin))
              lin->emitError()
                  << where(lin) << "lineage refers to plan tensor '" << ref.name
                  << "' that rank " << ref.rank << " does not define";
            ok = false;
            return;
          }
          if (it->second.isInput && !lastInfo->isInput) {
            if (report(lin))
              lin->emitError()
                  << where(lin) << "lineage of spec input '"
                  << attr.getSpec().getValue() << "' names plan tensor '"
                  << ref.name << "' on rank " << ref.rank
                  << ", which the plan computes; an input's lineage "
                     "must name plan inputs (what computes the tensor "
                     "would never be checked)";
            ok = false;
            return;
          }
          if (it->second.isInput) {
            auto [prev, inserted] =
                initialRefs.try_emplace({ref.rank, ref.name}, &attr);
            const LineageView &other = *prev->second;
            if (!inserted && (other.getSpec() != attr.getSpec() ||
                              other.getLower() != attr.getLower() ||
                              other.getUpper() != attr.getUpper())) {
              if (report(lin))
                lin->emitError() << where(lin) << "plan input '" << ref.name
                                 << "' on rank " << ref.rank
                                 << " is assumed equal to two different spec "
                                    "input slices ('"
                                 << other.getSpec().getValue() << "' and '"
                                 << attr.getSpec().getValue()
                                 << "'); that would restrict the inputs";
              ok = false;
              return;
            }
          }
          if (lastInfo->type.getShape() != ArrayRef<int64_t>(sliceShape)) {
            if (report(lin))
              lin->emitError() << where(lin) << "plan tensor '" << ref.name
                               << "' on rank " << ref.rank << " has shape "
                               << shapeStr(lastInfo->type.getShape())
                               << " but the lineage slice has shape "
                               << shapeStr(sliceShape);
            ok = false;
          }
        }
      });
      specSlices->push_back({(uint32_t)runIndex, (uint32_t)offset});
    }
  if (!ok)
    return failure();

  // Slices of one tensor are disjoint; spec outputs are tiled exactly.
  for (auto &entry : slices) {
    std::vector<Box> boxes;
    boxes.reserve(entry.second.size());
    for (Index i : entry.second)
      boxes.push_back(boxOf(i));
    SmallVector<const Box *> ptrs;
    for (const Box &b : boxes)
      ptrs.push_back(&b);
    for (auto [i, j] : overlappingPairs(ptrs)) {
      ok = false;
      Operation *first = lineages[entry.second[i].first].op;
      if (!report(first))
        continue;
      InFlightDiagnostic d = first->emitError()
                             << where(first) << "lineage slice of '"
                             << entry.getKey()
                             << "' overlaps another; express replicas as "
                                "groups of one lineage";
      d.attachNote(lineages[entry.second[j].first].op->getLoc())
          << "overlapping lineage";
    }
  }
  if (!ok)
    return failure();
  for (auto &entry : specNames) {
    if (!entry.second.isOutput)
      continue;
    SmallVector<Box> parts;
    auto it = slices.find(entry.getKey());
    if (it != slices.end())
      for (Index i : it->second)
        parts.push_back(boxOf(i));
    std::string why;
    if (!tilesExactly(Box::full(entry.second.type.getShape()), parts, &why)) {
      spec.emitError() << "lineages of spec output '" << entry.getKey()
                       << "' do not cover it: " << why;
      ok = false;
    }
  }
  return success(ok);
}

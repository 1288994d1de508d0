//===- ShardSpecialize.cpp - dynamic grids and sizes made static ----------===//
//
// A grid of dynamic shape (`shard.grid @g(shape = ?)`) or a function with
// dynamic tensor dimensions is validated for static sizes: the grid's
// dynamic axes and the input's dynamic dimensions are given sizes (the
// user's, or the defaults below), and the partitioned program is
// specialized to them as for uneven shards. What is proven is then said
// for those sizes, in a remark that names them (docs/shard.md, "Dynamic
// grids and dimensions"; decision 91).
//
//===----------------------------------------------------------------------===//
#include "ShardImport.h"
#include "TrainVerify/Translate/Translations.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tosa/Transforms/Passes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;
using namespace mlir::tv;
using namespace mlir::tv::shardimport;

/// The product of `grid`'s sizes over `axes` (-1 if one is dynamic).
static int64_t groupSize(shard::GridOp grid, ArrayRef<int16_t> axes) {
  int64_t n = 1;
  for (int16_t a : axes) {
    if (a < 0 || a >= (int64_t)grid.getShape().size() ||
        ShapedType::isDynamic(grid.getShape()[a]))
      return -1;
    n *= grid.getShape()[a];
  }
  return n;
}

/// The static result shape of a shard collective whose input is static,
/// from the collective's own rule; nullopt if it has none or a size is
/// unknown.
static std::optional<SmallVector<int64_t>>
collectiveShape(Operation *op, SymbolTableCollection &symbols) {
  auto in = dyn_cast<RankedTensorType>(op->getOperand(0).getType());
  if (!in || !in.hasStaticShape())
    return std::nullopt;
  SmallVector<int64_t> shape(in.getShape());
  if (isa<shard::ShardOp>(op))
    return shape;
  auto gridOf = [&](FlatSymbolRefAttr g) {
    return symbols.lookupNearestSymbolFrom<shard::GridOp>(op, g);
  };
  auto resize = [&](FlatSymbolRefAttr g, ArrayRef<int16_t> axes,
                    int64_t mulAxis, int64_t divAxis)
      -> std::optional<SmallVector<int64_t>> {
    shard::GridOp grid = gridOf(g);
    int64_t n = grid ? groupSize(grid, axes) : -1;
    if (n < 1)
      return std::nullopt;
    if (mulAxis >= 0 && mulAxis < (int64_t)shape.size())
      shape[mulAxis] *= n;
    if (divAxis >= 0 && divAxis < (int64_t)shape.size()) {
      if (shape[divAxis] % n)
        return std::nullopt;
      shape[divAxis] /= n;
    }
    return shape;
  };
  if (auto g = dyn_cast<shard::AllGatherOp>(op))
    return resize(g.getGridAttr(), g.getGridAxes(),
                  g.getGatherAxis().getSExtValue(), -1);
  if (auto s = dyn_cast<shard::AllSliceOp>(op))
    return resize(s.getGridAttr(), s.getGridAxes(), -1,
                  s.getSliceAxis().getSExtValue());
  if (auto a = dyn_cast<shard::AllToAllOp>(op))
    return resize(a.getGridAttr(), a.getGridAxes(),
                  a.getConcatAxis().getSExtValue(),
                  a.getSplitAxis().getSExtValue());
  if (auto r = dyn_cast<shard::ReduceScatterOp>(op))
    return resize(r.getGridAttr(), r.getGridAxes(), -1,
                  r.getScatterAxis().getSExtValue());
  if (isa<shard::AllReduceOp, shard::BroadcastOp, shard::ReduceOp,
          shard::ShiftOp, shard::UpdateHaloOp>(op))
    return shape;
  return std::nullopt;
}

LogicalResult shardimport::refineStaticShapes(func::FuncOp f) {
  MLIRContext *ctx = f.getContext();
  SymbolTableCollection symbols;
  // Upstream's own shape inference and folding, then the shard ops' result
  // types from their rules, until nothing changes (each round makes at
  // least one more value static; the bound is a guard).
  auto refineShardOps = [&] {
    bool changed = false;
    f.walk([&](Operation *op) {
      if (op->getNumResults() != 1 || op->getNumOperands() < 1 ||
          op->getDialect() != ctx->getLoadedDialect<shard::ShardDialect>())
        return;
      auto res = dyn_cast<RankedTensorType>(op->getResult(0).getType());
      if (!res || res.hasStaticShape())
        return;
      std::optional<SmallVector<int64_t>> shape = collectiveShape(op, symbols);
      if (!shape || shape->size() != (size_t)res.getRank())
        return;
      for (auto [d, s] : llvm::enumerate(res.getShape()))
        if (!ShapedType::isDynamic(s) && s != (*shape)[d])
          return; // inconsistent: left for the import to report
      op->getResult(0).setType(
          RankedTensorType::get(*shape, res.getElementType()));
      changed = true;
    });
    // A returned value made static: the function's result type follows.
    auto ret = cast<func::ReturnOp>(f.getBody().front().getTerminator());
    f.setFunctionType(FunctionType::get(ctx, f.getArgumentTypes(),
                                        ret.getOperandTypes()));
    return changed;
  };
  // The shard ops first (an annotation's type is its operand's, which the
  // verifier checks), then upstream's passes, until nothing changes; the
  // bound is a guard.
  // Between the passes an annotation can lag its operand's new type for a
  // round, so the passes do not verify; the function is verified at the
  // end.
  for (int round = 0; round < 8; ++round) {
    bool changed = refineShardOps();
    PassManager pm(ctx, func::FuncOp::getOperationName());
    pm.enableVerifier(false);
    pm.addPass(tosa::createTosaInferShapesPass());
    pm.addPass(createCanonicalizerPass());
    if (failed(pm.run(f)))
      return failure();
    if (!changed && round > 0)
      break;
  }
  // Shape inference keeps the function's dynamic result types through a
  // tensor.cast; the results are the casts' static sources.
  auto ret = cast<func::ReturnOp>(f.getBody().front().getTerminator());
  for (OpOperand &o : ret->getOpOperands())
    if (auto c = o.get().getDefiningOp<tensor::CastOp>();
        c && cast<ShapedType>(c.getSource().getType()).hasStaticShape()) {
      o.set(c.getSource());
      if (c->use_empty())
        c->erase();
    }
  f.setFunctionType(FunctionType::get(ctx, f.getArgumentTypes(),
                                      ret.getOperandTypes()));
  return verify(f);
}

FailureOr<ShardSizes> mlir::tv::ShardSizes::parse(StringRef gridShapes,
                                        int64_t dimSize, Location loc) {
  ShardSizes s;
  s.dimSize = dimSize;
  if (dimSize < 0 || dimSize > (1 << 20))
    return emitError(loc) << "--shard-dim-size " << dimSize
                          << " is not a size from 1 to 2^20",
           failure();
  SmallVector<StringRef> entries;
  gridShapes.split(entries, ',', -1, false);
  for (StringRef e : entries) {
    auto [name, shape] = e.trim().split('=');
    SmallVector<StringRef> dims;
    shape.split(dims, 'x');
    SmallVector<int64_t> sizes;
    for (StringRef d : dims) {
      int64_t v;
      if (d.getAsInteger(10, v) || v < 1 || v > 4096)
        return emitError(loc) << "--shard-grid-shape: '" << e
                              << "' is not NAME=AxB… with sizes from 1 to "
                                 "4096",
               failure();
      sizes.push_back(v);
    }
    if (name.empty() || sizes.empty())
      return emitError(loc) << "--shard-grid-shape: '" << e
                            << "' is not NAME=AxB…",
             failure();
    s.gridShapes[name.str()] = sizes;
  }
  return s;
}

/// Whether giving `grid`'s dynamic axes `size` splits every static
/// dimension the function's shardings split over it evenly.
static bool splitsEvenly(func::FuncOp f, shard::GridOp grid, int64_t size) {
  SmallVector<int64_t> shape(grid.getShape());
  for (int64_t &s : shape)
    if (ShapedType::isDynamic(s))
      s = size;
  bool even = true;
  f.walk([&](shard::ShardOp sh) {
    auto sharding = sh.getSharding().getDefiningOp<shard::ShardingOp>();
    auto ty = dyn_cast<RankedTensorType>(sh.getSrc().getType());
    if (!sharding || !ty || sharding.getGridAttr().getValue() != grid.getSymName() ||
        !sharding.getStaticShardedDimsOffsets().empty())
      return;
    for (auto [d, axes] : llvm::enumerate(sharding.getSplitAxes().getAxes())) {
      if (d >= (size_t)ty.getRank() || ty.isDynamicDim(d))
        continue;
      int64_t n = 1;
      for (int16_t a : axes.asArrayRef())
        n *= a < (int64_t)shape.size() ? shape[a] : 1;
      if (ty.getDimSize(d) % n)
        even = false;
    }
  });
  return even;
}

LogicalResult shardimport::specializeSizes(ModuleOp input, ModuleOp part,
                                           func::FuncOp spec,
                                           const ShardSizes &sizes,
                                           Location loc) {
  // Grids: each dynamic axis its given size, else the smallest size from 2
  // to 16 that splits the function's static dimensions evenly.
  DenseSet<StringRef> named;
  spec.walk([&](shard::ShardingOp s) {
    named.insert(s.getGridAttr().getValue());
  });
  for (shard::GridOp grid : input.getOps<shard::GridOp>()) {
    if (!named.contains(grid.getSymName()) ||
        !llvm::any_of(grid.getShape(), ShapedType::isDynamic))
      continue;
    SmallVector<int64_t> shape(grid.getShape());
    auto given = sizes.gridShapes.find(grid.getSymName().str());
    std::string how;
    if (given != sizes.gridShapes.end()) {
      if (given->second.size() != shape.size())
        return grid.emitError() << "--shard-grid-shape gives @"
                                << grid.getSymName() << " "
                                << given->second.size() << " axes; it has "
                                << shape.size();
      for (auto [s, g] : llvm::zip(shape, given->second)) {
        if (!ShapedType::isDynamic(s) && s != g)
          return grid.emitError()
                 << "--shard-grid-shape gives a static axis of @"
                 << grid.getSymName() << " the size " << g
                 << "; it is " << s;
        s = g;
      }
      how = "given by --shard-grid-shape / grid-shape";
    } else {
      int64_t chosen = 2;
      for (int64_t c = 2; c <= 16; ++c)
        if (splitsEvenly(spec, grid, c)) {
          chosen = c;
          break;
        }
      for (int64_t &s : shape)
        if (ShapedType::isDynamic(s))
          s = chosen;
      how = "the smallest size from 2 that splits the function's "
            "dimensions evenly; --shard-grid-shape (pass option grid-shape) " +
            grid.getSymName().str() + "=… sets it";
    }
    std::string text;
    llvm::raw_string_ostream os(text);
    llvm::interleave(shape, os, "x");
    emitRemark(grid.getLoc())
        << "@" << grid.getSymName()
        << " has a dynamic shape: validated for shape " << text << " (" << how
        << ")";
    grid.setShape(shape);
    if (auto g = part.lookupSymbol<shard::GridOp>(grid.getSymName()))
      g.setShape(shape);
  }
  // The input's dynamic dimensions: the given size, else twice the number
  // of processes of the grid its shardings name (every split of it is then
  // even and holds two rows or more).
  bool dynamicArgs = llvm::any_of(spec.getArgumentTypes(), [](Type t) {
    auto ty = dyn_cast<RankedTensorType>(t);
    return ty && !ty.hasStaticShape();
  });
  if (!dynamicArgs)
    return success();
  int64_t processes = 1;
  spec.walk([&](shard::ShardingOp s) {
    if (auto g = input.lookupSymbol<shard::GridOp>(s.getGridAttr())) {
      // Saturated: an absurd grid is refused later, by name.
      int64_t n = 1;
      for (int64_t d : g.getShape())
        n = d > 0 && n <= (int64_t(1) << 20) / d ? n * d : int64_t(1) << 20;
      processes = std::max(processes, n);
    }
  });
  int64_t dim = sizes.dimSize ? sizes.dimSize : 2 * processes;
  SmallVector<Type> args;
  for (BlockArgument arg : spec.getArguments()) {
    if (auto ty = dyn_cast<RankedTensorType>(arg.getType());
        ty && !ty.hasStaticShape()) {
      SmallVector<int64_t> shape(ty.getShape());
      for (int64_t &s : shape)
        if (ShapedType::isDynamic(s))
          s = dim;
      arg.setType(RankedTensorType::get(shape, ty.getElementType()));
    }
    args.push_back(arg.getType());
  }
  spec.setFunctionType(
      FunctionType::get(spec.getContext(), args, spec.getResultTypes()));
  emitRemark(spec.getLoc())
      << "@" << spec.getSymName()
      << " has dynamic dimensions: validated with each of size " << dim
      << (sizes.dimSize ? " (given by --shard-dim-size / dim-size)"
                        : " (twice the grid's processes; --shard-dim-size "
                          "(pass option dim-size) sets it)");
  if (failed(refineStaticShapes(spec)))
    return spec.emitError() << "shard-partition import: the static shapes of "
                               "@"
                            << spec.getSymName()
                            << " could not be inferred for size " << dim;
  return success();
}

/// The constant value of an index, if it is one.
static std::optional<int64_t> constantIndex(Value v) {
  APInt c;
  if (v && matchPattern(v, m_ConstantInt(&c)))
    return c.getSExtValue();
  return std::nullopt;
}

/// `grid`'s coordinates of `process` (row-major, the last axis fastest).
static SmallVector<int64_t> coordsOf(shard::GridOp grid, int64_t process) {
  ArrayRef<int64_t> sizes = grid.getShape();
  SmallVector<int64_t> c(sizes.size());
  for (int64_t i = sizes.size() - 1; i >= 0; --i) {
    c[i] = process % sizes[i];
    process /= sizes[i];
  }
  return c;
}

/// The local size along one dimension of size `size` split over `axes` of
/// `grid`, on the process at `coords`; nullopt where the dialect leaves it
/// undefined (an even split that does not divide).
static std::optional<int64_t> localSize(shard::GridOp grid,
                                        ArrayRef<int16_t> axes,
                                        ArrayRef<int64_t> coords, int64_t size,
                                        ArrayRef<int64_t> offsets) {
  int64_t idx = 0, count = 1;
  for (int16_t a : axes) {
    if (a < 0 || a >= (int64_t)coords.size())
      return std::nullopt;
    idx = idx * grid.getShape()[a] + coords[a];
    count *= grid.getShape()[a];
  }
  if (!offsets.empty()) {
    if ((int64_t)offsets.size() != count + 1)
      return std::nullopt;
    return offsets[idx + 1] - offsets[idx];
  }
  if (size % count)
    return std::nullopt;
  return size / count;
}

void shardimport::foldProcessQueries(func::FuncOp f, int64_t process) {
  SymbolTableCollection symbols;
  OpBuilder b(f.getContext());
  auto constant = [&](Operation *op, Value v, int64_t c) {
    b.setInsertionPoint(op);
    v.replaceAllUsesWith(
        arith::ConstantIndexOp::create(b, op->getLoc(), c).getResult());
  };
  SmallVector<Operation *> folded;
  f.walk([&](Operation *op) {
    if (auto q = dyn_cast<shard::ProcessMultiIndexOp>(op)) {
      auto grid = symbols.lookupNearestSymbolFrom<shard::GridOp>(
          op, q.getGridAttr());
      if (!grid || llvm::any_of(grid.getShape(), ShapedType::isDynamic))
        return;
      SmallVector<int64_t> c = coordsOf(grid, process);
      ArrayRef<int16_t> axes = q.getAxes();
      for (auto [i, res] : llvm::enumerate(q.getResults()))
        constant(op, res, c[axes.empty() ? i : axes[i]]);
      folded.push_back(op);
    } else if (auto q = dyn_cast<shard::ProcessLinearIndexOp>(op)) {
      constant(op, q.getResult(), process);
      folded.push_back(op);
    } else if (auto s = dyn_cast<shard::ShardShapeOp>(op)) {
      // The local shape of a static global shape on a device given by
      // constants: each dimension's block size.
      auto sharding = s.getSharding().getDefiningOp<shard::ShardingOp>();
      if (!sharding || !sharding.getDynamicShardedDimsOffsets().empty())
        return;
      auto grid = symbols.lookupNearestSymbolFrom<shard::GridOp>(
          op, sharding.getGridAttr());
      if (!grid || llvm::any_of(grid.getShape(), ShapedType::isDynamic))
        return;
      SmallVector<int64_t> dims, device;
      unsigned dyn = 0;
      for (int64_t d : s.getDims()) {
        std::optional<int64_t> v =
            ShapedType::isDynamic(d) ? constantIndex(s.getDimsDynamic()[dyn++])
                                     : std::optional<int64_t>(d);
        if (!v)
          return;
        dims.push_back(*v);
      }
      dyn = 0;
      for (int64_t d : s.getDevice()) {
        std::optional<int64_t> v =
            ShapedType::isDynamic(d)
                ? constantIndex(s.getDeviceDynamic()[dyn++])
                : std::optional<int64_t>(d);
        if (!v)
          return;
        device.push_back(*v);
      }
      // The device is a multi-index on the grid, or a linear index.
      SmallVector<int64_t> coords;
      if (device.size() == grid.getShape().size())
        coords = device;
      else if (device.size() == 1)
        coords = coordsOf(grid, device[0]);
      else
        return;
      ArrayRef<int64_t> offsets = sharding.getStaticShardedDimsOffsets();
      auto splits = sharding.getSplitAxes().getAxes();
      SmallVector<int64_t> local;
      size_t at = 0;
      for (auto [d, size] : llvm::enumerate(dims)) {
        ArrayRef<int16_t> axes;
        if (d < splits.size())
          axes = splits[d].asArrayRef();
        if (axes.empty()) {
          local.push_back(size);
          continue;
        }
        int64_t count = 1;
        for (int16_t a : axes)
          count *= a < (int64_t)grid.getShape().size() ? grid.getShape()[a]
                                                       : 1;
        ArrayRef<int64_t> offs;
        if (!offsets.empty()) {
          if (at + count + 1 > offsets.size())
            return;
          offs = offsets.slice(at, count + 1);
          at += count + 1;
        }
        std::optional<int64_t> l = localSize(grid, axes, coords, size, offs);
        if (!l)
          return;
        local.push_back(*l);
      }
      for (auto [res, l] : llvm::zip(s.getResults(), local))
        constant(op, res, l);
      folded.push_back(op);
    }
  });
  for (Operation *op : folded)
    op->erase();
}

//===- ShardStructured.cpp - linalg structured ops over their space -------===//
#include "ShardImport.h"
#include "TrainVerify/Dialect/TVOps.h"
#include "TrainVerify/Semantics/Term.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tosa/IR/TosaOps.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <numeric>

using namespace mlir;
using namespace mlir::tv::shardimport;
namespace tvir = mlir::tv;

LogicalResult Emitter::structured(Operation *op, ArrayRef<Value> ins,
                                  Value init, ArrayRef<AffineMap> inMaps,
                                  AffineMap outMap, ArrayRef<bool> reduction,
                                  Block &body, Value result, unsigned output) {
  auto outTy = cast<RankedTensorType>(result.getType());
  if (failed(checkTensor(op, outTy)))
    return failure();
  unsigned loops = reduction.size();
  // Loop sizes from the operands' shapes.
  SmallVector<int64_t> space(loops, -1);
  auto sizes = [&](Value v, AffineMap map) -> LogicalResult {
    auto ty = cast<RankedTensorType>(v.getType());
    if (!map.isProjectedPermutation(/*allowZeroInResults=*/false))
      return op->emitError() << "shard-partition import: an indexing map "
                                "that is not a projected permutation is "
                                "not modeled";
    for (auto [d, e] : llvm::enumerate(map.getResults()))
      space[cast<AffineDimExpr>(e).getPosition()] = ty.getDimSize(d);
    return success();
  };
  // An input the body never reads (tosa-to-linalg passes a float negate's
  // zero points, broadcast by a constant map) does not take part.
  for (auto [i, v, map] : llvm::enumerate(ins, inMaps))
    if (!body.getArgument(i).use_empty() &&
        (failed(checkTensor(op, v.getType())) || failed(sizes(v, map))))
      return failure();
  if (failed(sizes(result, outMap)))
    return failure();
  if (llvm::is_contained(space, -1))
    return op->emitError() << "shard-partition import: a loop no operand "
                              "indexes is not modeled";
  // As tvType: integers proven over the reals.
  Type elt = tvType(outTy).getElementType();
  auto tensorOf = [&](ArrayRef<int64_t> shape) {
    return RankedTensorType::get(shape, elt);
  };
  RankedTensorType full = tensorOf(space);
  Location loc = op->getLoc();
  // An input over the whole space.
  auto toSpace = [&](Value v, AffineMap map) -> FailureOr<Value> {
    FailureOr<Value> n = use(op, v);
    if (failed(n))
      return failure();
    auto ty = cast<RankedTensorType>(v.getType());
    SmallVector<unsigned> loopOf;
    for (AffineExpr e : map.getResults())
      loopOf.push_back(cast<AffineDimExpr>(e).getPosition());
    SmallVector<int64_t> order(loopOf.size());
    std::iota(order.begin(), order.end(), 0);
    llvm::sort(order,
               [&](int64_t a, int64_t b) { return loopOf[a] < loopOf[b]; });
    Value cur = *n;
    SmallVector<int64_t> sorted;
    for (int64_t d : order)
      sorted.push_back(ty.getDimSize(d));
    if (!llvm::equal(order, llvm::seq<int64_t>(0, order.size())))
      cur = tvir::TransposeOp::create(b, loc, tensorOf(sorted), cur,
                                      ints(order));
    SmallVector<int64_t> withUnits(loops, 1);
    for (unsigned l : loopOf)
      withUnits[l] = space[l];
    if (loopOf.size() != loops)
      cur = tvir::ReshapeOp::create(b, loc, tensorOf(withUnits), cur);
    if (ArrayRef<int64_t>(withUnits) != ArrayRef<int64_t>(space))
      cur = tvir::BroadcastOp::create(b, loc, full, cur);
    return cur;
  };
  // The body over the space: block argument i < ins is input i, the last
  // one the accumulator.
  DenseMap<Value, Value> vals;
  Value acc = body.getArgument(ins.size() + output);
  for (auto [i, v] : llvm::enumerate(ins)) {
    if (body.getArgument(i).use_empty())
      continue;
    FailureOr<Value> n = toSpace(v, inMaps[i]);
    if (failed(n))
      return failure();
    vals[body.getArgument(i)] = *n;
  }
  Operation *yieldOp = body.getTerminator();
  Value yielded = yieldOp->getOperand(output);
  // The body's ops this output depends on: a multi-result op's other
  // outputs (each with its own combiner) are translated on their own.
  DenseSet<Operation *> needed;
  SmallVector<Value> work = {yielded};
  while (!work.empty()) {
    Operation *def = work.pop_back_val().getDefiningOp();
    if (!def || def->getBlock() != &body || !needed.insert(def).second)
      continue;
    llvm::append_range(work, def->getOperands());
  }
  // A reduction's combiner, if any, is the yielded op.
  Operation *combiner =
      llvm::is_contained(reduction, true) ? yielded.getDefiningOp() : nullptr;
  // Positions: linalg.index and index arithmetic on it with process
  // constants, then cast to a number (exact: tv.iota's positions are below
  // 2^24). A cast of anything else (integer data) is not modeled: integer
  // data is proven as polynomials, which a conversion to floats would break.
  DenseSet<Value> positions;
  auto constOf = [&](Value v) -> std::optional<double> {
    if (auto c = scalar.find(v); c != scalar.end())
      return c->second;
    if (auto c = index.find(v); c != index.end())
      return (double)c->second;
    return std::nullopt;
  };
  for (Operation &bop : body.without_terminator()) {
    if (&bop == combiner || !needed.contains(&bop))
      continue;
    if (auto c = dyn_cast<arith::ConstantOp>(bop)) {
      // A scalar constant of the body (tosa-to-linalg puts them there).
      if (auto f = dyn_cast<FloatAttr>(c.getValue()))
        scalar[c] = f.getValueAsDouble();
      else if (auto i = dyn_cast<IntegerAttr>(c.getValue()))
        scalar[c] = (double)i.getInt();
      else
        return bop.emitError() << "shard-partition import: a constant that "
                                "is not a scalar is not modeled";
      continue;
    }
    if (auto ix = dyn_cast<linalg::IndexOp>(bop)) {
      vals[ix.getResult()] = tvir::IotaOp::create(b, bop.getLoc(), full,
                                                  i64(ix.getDim()), i64(0));
      positions.insert(ix.getResult());
      continue;
    }
    if (isa<arith::IndexCastOp, arith::IndexCastUIOp, arith::SIToFPOp,
            arith::UIToFPOp>(bop)) {
      Value from = bop.getOperand(0);
      if (!positions.contains(from))
        return bop.emitError() << "shard-partition import: '" << bop.getName()
                             << "' of a value other than a position "
                                "(linalg.index) is not modeled";
      vals[bop.getResult(0)] = vals[from];
      positions.insert(bop.getResult(0));
      continue;
    }
    if (llvm::any_of(bop.getOperands(), [&](Value v) {
          auto a = dyn_cast<BlockArgument>(v);
          return a && a.getOwner() == &body && a.getArgNumber() >= ins.size();
        }))
      return bop.emitError() << "shard-partition import: the accumulator "
                              "read other than by the reduction's combiner "
                              "is not modeled";
    std::optional<std::pair<StringRef, unsigned>> k = scalarOp(&bop);
    if (!k || bop.getNumResults() != 1)
      return bop.emitError() << "shard-partition import: '" << bop.getName()
                           << "' in a structured op's body is not modeled";
    // Index arithmetic on a position (an offset added) stays a position.
    if (bop.getResult(0).getType().isIndex() &&
        (!isa<arith::AddIOp, arith::SubIOp>(bop) ||
         !llvm::any_of(bop.getOperands(),
                       [&](Value v) { return positions.contains(v); })))
      return bop.emitError() << "shard-partition import: index arithmetic "
                              "other than adding to a position is not "
                              "modeled";
    Value r;
    // A body op made by a named op's generalization has no location of
    // its own: the structured op's.
    Location bloc = isa<UnknownLoc>(bop.getLoc()) ? loc : bop.getLoc();
    if (k->second == 1) {
      auto it = vals.find(bop.getOperand(0));
      if (it == vals.end())
        return bop.emitError() << "shard-partition import: an operand that "
                                  "is not a value of the iteration space";
      r = *buildElementwise(b, bloc, k->first, {it->second}, full);
    } else {
      Value x = bop.getOperand(0), y = bop.getOperand(1);
      auto vx = vals.find(x), vy = vals.find(y);
      std::optional<double> cx = constOf(x), cy = constOf(y);
      StringRef name = k->first;
      if (vx != vals.end() && vy != vals.end()) {
        r = *buildElementwise(b, bloc, name, {vx->second, vy->second}, full);
      } else if (tvir::symbolizeIntFn(name) &&
                 ((vx != vals.end() && cy) || (cx && vy != vals.end()))) {
        // An integer operation with a constant: the constant as a tensor.
        Value cst = constantTensor(bloc, full, cx ? *cx : *cy);
        r = *buildElementwise(b, bloc, name,
                              {cx ? cst : vx->second, cx ? vy->second : cst},
                              full);
      } else if ((vx != vals.end() && cy) || (cx && vy != vals.end())) {
        // t op c, or c op t (c / t = c * t^-1; c - t reversed).
        bool constLeft = !cy;
        Value t = constLeft ? vy->second : vx->second;
        FloatAttr c = num(constLeft ? *cx : *cy);
        if (name == "add")
          r = tvir::AddScalarOp::create(b, bloc, t, c);
        else if (name == "mul")
          r = tvir::ScaleOp::create(b, bloc, t, c);
        else if (name == "sub" && !constLeft)
          r = tvir::SubScalarOp::create(b, bloc, t, c);
        else if (name == "sub")
          r = tvir::RSubScalarOp::create(b, bloc, t, c);
        else if (!constLeft)
          r = tvir::DivScalarOp::create(b, bloc, t, c);
        else {
          r = tvir::PowOp::create(b, bloc, t, num(-1.0));
          if (c.getValueAsDouble() != 1.0)
            r = tvir::ScaleOp::create(b, bloc, r, c);
        }
      } else {
        return bop.emitError() << "shard-partition import: operands of '"
                               << bop.getName() << "' are not modeled";
      }
    }
    vals[bop.getResult(0)] = r;
    if (bop.getResult(0).getType().isIndex())
      positions.insert(bop.getResult(0));
  }
  // Reduce, then the output's order.
  SmallVector<int64_t> redDims, kept;
  SmallVector<unsigned> keptLoops;
  for (unsigned l = 0; l < loops; ++l) {
    if (reduction[l]) {
      redDims.push_back(l);
    } else {
      kept.push_back(space[l]);
      keptLoops.push_back(l);
    }
  }
  Value cur;
  bool initUsed = false;
  std::optional<tvir::IntFn> combineInit;
  if (!combiner) {
    auto it = vals.find(yielded);
    if (it == vals.end())
      return op->emitError() << "shard-partition import: the yielded value "
                                "is not a value of the iteration space";
    cur = it->second;
  } else {
    bool sum = isa<arith::AddFOp, arith::AddIOp>(combiner);
    bool max = isa<arith::MaximumFOp, arith::MaxNumFOp>(combiner);
    // min(x) = -max(-x), exactly.
    bool min = isa<arith::MinimumFOp, arith::MinNumFOp>(combiner);
    // An associative integer operation (andi ... minui): tv.int_reduce.
    std::optional<tvir::IntFn> intFn = intFnOf(combiner);
    if (intFn && !::mlir::tv::sym::isAcIntFn(tvir::intFnOf(*intFn)))
      intFn.reset(); // a shift does not reduce
    Value term = combiner->getOperand(0) == acc ? combiner->getOperand(1)
                                                : combiner->getOperand(0);
    auto it = vals.find(term);
    if ((!sum && !max && !min && !intFn) ||
        !llvm::is_contained(combiner->getOperands(), acc) || it == vals.end())
      return combiner->emitError()
             << "shard-partition import: a reduction whose combiner is not "
                "addf, maximumf, minimumf or an associative integer "
                "operation (andi, ori, xori, maxsi, minsi, maxui, minui) of "
                "the accumulator and a term is not modeled";
    auto fillIt = fills.find(init);
    if (intFn) {
      // The reduction, then combined with the initial value unless that is
      // the operation's identity.
      Type elt = cast<RankedTensorType>(outTy).getElementType();
      std::optional<int64_t> id = ::mlir::tv::sym::intIdentity(
          tvir::intFnOf(*intFn), elt.getIntOrFloatBitWidth());
      bool identity = id && fillIt != fills.end() &&
                      std::fabs(fillIt->second) < 0x1p53 &&
                      ::mlir::tv::sym::wrapSigned((int64_t)fillIt->second,
                                                  elt.getIntOrFloatBitWidth()) ==
                          *id;
      if (!identity)
        combineInit = intFn;
      cur = tvir::IntReduceOp::create(
          b, loc, RankedTensorType::get(kept, elt),
          tvir::IntFnAttr::get(b.getContext(), *intFn), it->second,
          ints(redDims), UnitAttr());
    } else {
      if (max && (fillIt == fills.end() || fillIt->second != -INFINITY))
        return op->emitError() << "shard-partition import: a max reduction "
                                  "whose init is not filled with -inf is not "
                                  "modeled";
      if (min && (fillIt == fills.end() || fillIt->second != INFINITY))
        return op->emitError() << "shard-partition import: a min reduction "
                                  "whose init is not filled with +inf is not "
                                  "modeled";
      initUsed = sum && !(fillIt != fills.end() && fillIt->second == 0.0);
      Value reduced = it->second;
      if (min)
        reduced = tvir::NegOp::create(b, loc, full, reduced);
      if (sum)
        cur = tvir::SumOp::create(b, loc, tensorOf(kept), reduced,
                                  ints(redDims), UnitAttr());
      else
        cur = tvir::MaxOp::create(b, loc, tensorOf(kept), reduced,
                                  ints(redDims), UnitAttr());
      if (min)
        cur = tvir::NegOp::create(b, loc, tensorOf(kept), cur);
    }
  }
  // The output map orders the kept loops.
  SmallVector<int64_t> perm;
  for (AffineExpr e : outMap.getResults()) {
    unsigned l = cast<AffineDimExpr>(e).getPosition();
    perm.push_back(llvm::find(keptLoops, l) - keptLoops.begin());
  }
  if (perm.size() != keptLoops.size())
    return op->emitError() << "shard-partition import: an output that does "
                              "not index every parallel loop is not modeled";
  if (!llvm::equal(perm, llvm::seq<int64_t>(0, perm.size())))
    cur = tvir::TransposeOp::create(b, loc, tvType(outTy), cur, ints(perm));
  if (initUsed || combineInit) {
    FailureOr<Value> in = use(op, init);
    if (failed(in))
      return failure();
    if (combineInit)
      cur = tvir::IntBinaryOp::create(
          b, loc, tvType(outTy),
          tvir::IntFnAttr::get(b.getContext(), *combineInit), cur, *in);
    else
      cur = tvir::AddOp::create(b, loc, tvType(outTy), cur, *in);
  }
  name[result] = cur;
  return success();
}

LogicalResult Emitter::generic(linalg::GenericOp g) {
  if (g.getNumResults() != g.getNumDpsInits())
    return g.emitError() << "shard-partition import: a linalg.generic "
                            "on buffers is not modeled";
  SmallVector<bool> reduction;
  for (utils::IteratorType t : g.getIteratorTypesArray())
    reduction.push_back(t == utils::IteratorType::reduction);
  SmallVector<AffineMap> maps = g.getIndexingMapsArray();
  SmallVector<Value> ins(g.getDpsInputs());
  // An output is read only as a reduction's accumulator. Each output is
  // its own computation over the space, with its own combiner (a sum and a
  // max of one generic are reduced each by its kind).
  Block &body = g.getRegion().front();
  unsigned numIns = ins.size();
  for (unsigned k = 0; k < g.getNumResults(); ++k) {
    if (!llvm::is_contained(reduction, true) &&
        !body.getArgument(numIns + k).use_empty())
      return g.emitError() << "shard-partition import: a parallel generic "
                              "that reads its output is not modeled";
    if (failed(structured(g, ins, g.getDpsInits()[k],
                          ArrayRef<AffineMap>(maps).take_front(numIns),
                          maps[numIns + k], reduction, body, g.getResult(k),
                          k)))
      return failure();
  }
  return success();
}

LogicalResult Emitter::reduce(linalg::ReduceOp r) {
  auto inTy = cast<RankedTensorType>(r.getInputs()[0].getType());
  unsigned rank = inTy.getRank();
  SmallVector<bool> reduction(rank, false);
  SmallVector<AffineExpr> out;
  for (int64_t d : r.getDimensions())
    reduction[d] = true;
  for (unsigned d = 0; d < rank; ++d)
    if (!reduction[d])
      out.push_back(getAffineDimExpr(d, r.getContext()));
  AffineMap inMap = AffineMap::getMultiDimIdentityMap(rank, r.getContext());
  AffineMap outMap = AffineMap::get(rank, 0, out, r.getContext());
  // Several tensors reduced together: each result with its own combiner.
  SmallVector<Value> ins(r.getInputs());
  SmallVector<AffineMap> inMaps(ins.size(), inMap);
  for (unsigned k = 0; k < r.getNumResults(); ++k)
    if (failed(structured(r, ins, r.getInits()[k], inMaps, outMap, reduction,
                          r.getCombiner().front(), r.getResult(k), k)))
      return failure();
  return success();
}

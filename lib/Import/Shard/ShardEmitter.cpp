//===- ShardEmitter.cpp - one function body to a tv program ---------------===//
#include "ShardImport.h"
#include "TrainVerify/Dialect/TVOps.h"
#include "TrainVerify/Translate/Translations.h"

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

FailureOr<Value> mlir::tv::shardimport::buildElementwise(
    OpBuilder &b, Location loc, StringRef name, ArrayRef<Value> operands,
    RankedTensorType type) {
  if (operands.size() == 1) {
    Value x = operands[0];
    auto unary = [&](auto tag) -> Value {
      using OpTy = decltype(tag);
      return OpTy::create(b, loc, type, x);
    };
    if (name == "exp")
      return unary(tvir::ExpOp());
    if (name == "tanh")
      return unary(tvir::TanhOp());
    if (name == "log")
      return unary(tvir::LogOp());
    if (name == "sqrt")
      return unary(tvir::SqrtOp());
    if (name == "rsqrt")
      return unary(tvir::RsqrtOp());
    if (name == "abs")
      return unary(tvir::AbsOp());
    if (name == "neg")
      return unary(tvir::NegOp());
    if (name == "sigmoid")
      return unary(tvir::SigmoidOp());
    return failure();
  }
  if (operands.size() != 2)
    return failure();
  Value x = operands[0], y = operands[1];
  auto binary = [&](auto tag) -> Value {
    using OpTy = decltype(tag);
    return OpTy::create(b, loc, type, x, y);
  };
  if (name == "add")
    return binary(tvir::AddOp());
  if (name == "sub")
    return binary(tvir::SubOp());
  if (name == "mul")
    return binary(tvir::MulOp());
  if (name == "div")
    return binary(tvir::DivOp());
  if (std::optional<tvir::IntFn> f = tvir::symbolizeIntFn(name))
    return tvir::IntBinaryOp::create(
               b, loc, type, tvir::IntFnAttr::get(b.getContext(), *f), x, y)
        .getResult();
  return failure();
}

Value Emitter::input(Location loc, Type t, const Twine &inputName) {
  return tvir::InputOp::create(b, loc, tvType(t), b.getStringAttr(inputName));
}

LogicalResult Emitter::function(func::FuncOp f) {
  for (auto [i, arg] : llvm::enumerate(f.getArguments())) {
    // An argument that is not a tensor and that nothing reads (checked by
    // the importer) carries no data.
    if (!isDataType(arg.getType()) && arg.use_empty())
      continue;
    if (failed(checkTensor(f, arg.getType())))
      return failure();
    if (auto h = argHalos.find(i); h != argHalos.end())
      name[arg] = haloArgument(f.getLoc(), i, arg.getType(), h->second);
    else
      name[arg] = input(f.getLoc(), arg.getType(), "arg" + Twine(i));
  }
  unsigned ordinal = 0;
  f.walk<WalkOrder::PreOrder>(
      [&](tensor::EmptyOp e) {
        emptyOf.push_back(e.getResult());
        empties[e.getResult()] = ordinal++;
      });
  return block(f.getBody().front(), nullptr);
}

LogicalResult Emitter::checkTensor(Operation *op, Type t) {
  if (isDataScalar(t))
    return success(); // a 0-d tensor
  auto ty = dyn_cast<RankedTensorType>(t);
  if (!ty || !ty.hasStaticShape())
    return op->emitError() << "shard-partition import: " << t
                           << " is not a statically shaped tensor";
  // Integers: only ring operations (+, -, *) are translated, so a proof
  // over the reals is a polynomial identity and holds modulo 2^n too.
  Type elt = ty.getElementType();
  if (!isa<FloatType>(elt) && !elt.isSignlessInteger())
    return op->emitError() << "shard-partition import: element type " << elt
                           << " is not modeled";
  return success();
}

FailureOr<Value> Emitter::use(Operation *op, Value v) {
  auto it = name.find(v);
  if (it != name.end())
    return it->second;
  if (auto f = fills.find(v); f != fills.end()) {
    // A constant tensor (a fill, a splat constant) read as data: positions
    // times 0, plus the constant.
    if (failed(checkTensor(op, v.getType())))
      return failure();
    if (!std::isfinite(f->second))
      return op->emitError() << "shard-partition import: a tensor of "
                             << f->second
                             << " read other than as a reduction's initial "
                                "value is not modeled",
             FailureOr<Value>();
    Value pos = tvir::IotaOp::create(b, v.getLoc(), tvType(v.getType()),
                                     i64(0), i64(0));
    Value n = tvir::ScaleOp::create(b, v.getLoc(), pos, num(0.0));
    if (f->second != 0.0)
      n = tvir::AddScalarOp::create(b, v.getLoc(), n, num(f->second));
    name[v] = n;
    return n;
  }
  if (auto u = undefs.find(v); u != undefs.end()) {
    // An op's undefined result, read: values of its own, named by no
    // lineage, so no result that depends on them is proven.
    if (failed(checkTensor(op, v.getType())))
      return failure();
    Value n = freeInput(v.getLoc(), tvType(v.getType()),
                        "undefined" + std::to_string(undefCount++) + " (" +
                            u->second + ")");
    name[v] = n;
    return n;
  }
  if (auto e = empties.find(v); e != empties.end()) {
    // Undefined values read: an input of their own. The importer ties the
    // spec's to one process's (a witness), never the other way round
    // (docs/shard.md, "Undefined values").
    if (failed(checkTensor(op, v.getType())))
      return failure();
    auto [read, first] = emptyRead.try_emplace(e->second, emptyOf[e->second]);
    if (!first)
      return emptyName[e->second];
    Value n = input(emptyOf[e->second].getLoc(), v.getType(),
                    "empty" + Twine(e->second));
    name[v] = n;
    emptyName[e->second] = n;
    return n;
  }
  op->emitError() << "shard-partition import: operand is not a tensor "
                     "value tv models";
  return failure();
}

LogicalResult Emitter::unsupported(Operation *op) {
  return op->emitError() << "shard-partition import: '" << op->getName()
                         << "' is not modeled";
}

std::optional<std::pair<StringRef, unsigned>> Emitter::scalarOp(Operation *op) {
  if (isa<math::ExpOp>(op))
    return std::make_pair(StringRef("exp"), 1u);
  if (isa<math::TanhOp>(op))
    return std::make_pair(StringRef("tanh"), 1u);
  if (isa<math::LogOp>(op))
    return std::make_pair(StringRef("log"), 1u);
  if (isa<math::SqrtOp>(op))
    return std::make_pair(StringRef("sqrt"), 1u);
  if (isa<math::RsqrtOp>(op))
    return std::make_pair(StringRef("rsqrt"), 1u);
  // |x|: an uninterpreted function of x, so also sound for integers, whose
  // abs wraps at the minimum value (docs/shard.md).
  if (isa<math::AbsFOp, math::AbsIOp>(op))
    return std::make_pair(StringRef("abs"), 1u);
  if (isa<arith::NegFOp>(op))
    return std::make_pair(StringRef("neg"), 1u);
  if (isa<arith::AddFOp>(op))
    return std::make_pair(StringRef("add"), 2u);
  if (isa<arith::SubFOp>(op))
    return std::make_pair(StringRef("sub"), 2u);
  if (isa<arith::MulFOp>(op))
    return std::make_pair(StringRef("mul"), 2u);
  if (isa<arith::DivFOp>(op))
    return std::make_pair(StringRef("div"), 2u);
  // Integer ring operations (wrap-around agrees with the reals' polynomial
  // identities); division, comparisons and casts are not translated.
  if (isa<arith::AddIOp>(op))
    return std::make_pair(StringRef("add"), 2u);
  if (isa<arith::SubIOp>(op))
    return std::make_pair(StringRef("sub"), 2u);
  if (isa<arith::MulIOp>(op))
    return std::make_pair(StringRef("mul"), 2u);
  // Bitwise, order and shift operations: tv.int_binary, on n-bit values.
  if (std::optional<tvir::IntFn> f = intFnOf(op))
    return std::make_pair(tvir::stringifyIntFn(*f), 2u);
  return std::nullopt;
}

LogicalResult Emitter::unaryOrBinary(Operation *op, StringRef tvName,
                                     ArrayRef<Value> ins, Value result) {
  SmallVector<Value> ops;
  for (Value v : ins) {
    FailureOr<Value> n = use(op, v);
    if (failed(n))
      return failure();
    ops.push_back(*n);
  }
  FailureOr<Value> r =
      buildElementwise(b, op->getLoc(), tvName, ops, tvType(result.getType()));
  if (failed(r))
    return unsupported(op);
  name[result] = *r;
  return success();
}

LogicalResult Emitter::matmul(linalg::MatmulOp m) {
  if (m.hasUserDefinedMaps())
    return m.emitError() << "shard-partition import: a matmul with "
                            "explicit indexing maps is not modeled";
  Value a = m.getDpsInputs()[0], bv = m.getDpsInputs()[1];
  Value init = m.getDpsInits()[0];
  for (Value v : {a, bv, init})
    if (failed(checkTensor(m, v.getType())))
      return failure();
  // One element type: a matmul that extends its operands (i8 into i32) is
  // not a ring operation of one modulus.
  Type elt = cast<RankedTensorType>(init.getType()).getElementType();
  for (Value v : {a, bv})
    if (cast<RankedTensorType>(v.getType()).getElementType() != elt)
      return m.emitError() << "shard-partition import: a matmul whose "
                              "operands' element types differ from its "
                              "result's is not modeled";
  FailureOr<Value> an = use(m, a), bn = use(m, bv);
  if (failed(an) || failed(bn))
    return failure();
  RankedTensorType t = tvType(m.getResult(0).getType());
  Value prod = tvir::MatmulOp::create(this->b, m.getLoc(), t, *an, *bn,
                                      UnitAttr(), UnitAttr());
  // The result accumulates into the initial value (zeros: nothing to add).
  if (zeros.contains(init)) {
    name[m.getResult(0)] = prod;
    return success();
  }
  FailureOr<Value> in = use(m, init);
  if (failed(in))
    return failure();
  name[m.getResult(0)] = tvir::AddOp::create(b, m.getLoc(), t, prod, *in);
  return success();
}

LogicalResult Emitter::tosaMatmul(tosa::MatMulOp m) {
  Value a = m.getA(), bv = m.getB(), res = m.getResult();
  for (Value v : {a, bv, res})
    if (failed(checkTensor(m, v.getType())))
      return failure();
  // TOSA requires the zero points of a float matmul to be 0 (an error
  // otherwise), so they are not read; integer matmuls with zero points go
  // through upstream's tosa-to-linalg-named, which checks them.
  if (!isFloatTensor(res))
    return unsupported(m);
  auto ta = cast<RankedTensorType>(a.getType()),
       tb = cast<RankedTensorType>(bv.getType()),
       tr = cast<RankedTensorType>(res.getType());
  // [B, M, K] x [B, K, N] -> [B, M, N]. The partitioner clones the op onto
  // local operands; a result type it leaves global is a wrong partition.
  if (ta.getRank() != 3 || tb.getRank() != 3 || tr.getRank() != 3 ||
      ta.getDimSize(0) != tb.getDimSize(0) ||
      ta.getDimSize(2) != tb.getDimSize(1) ||
      tr.getShape() != ArrayRef<int64_t>{ta.getDimSize(0), ta.getDimSize(1),
                                         tb.getDimSize(2)}) {
    translationFoundWrongProgram() = true;
    return m.emitError() << "wrong partition: 'tosa.matmul' of " << ta
                         << " and " << tb << " cannot have the type " << tr
                         << " (a matmul's result is [B, M, N] for operands "
                            "[B, M, K] and [B, K, N])";
  }
  FailureOr<Value> an = use(m, a), bn = use(m, bv);
  if (failed(an) || failed(bn))
    return failure();
  name[res] = tvir::MatmulOp::create(b, m.getLoc(), tvType(tr), *an, *bn,
                                     UnitAttr(), UnitAttr());
  return success();
}

FailureOr<ArrayAttr> Emitter::groupAxes(Operation *op,
                                        ArrayRef<int16_t> axes) {
  SmallVector<StringRef> names;
  SmallVector<std::string> storage;
  for (auto [i, a] : llvm::enumerate(axes)) {
    if (i && axes[i - 1] >= a)
      return op->emitError() << "shard-partition import: grid axes not in "
                                "increasing order are not modeled",
             FailureOr<ArrayAttr>();
    storage.push_back(Grid::axis(a));
  }
  for (const std::string &n : storage)
    names.push_back(n);
  return b.getStrArrayAttr(names);
}

FailureOr<Value> Emitter::collectiveOf(Operation *op, ArrayRef<int16_t> axes,
                                       MakeCollective make) {
  FailureOr<ArrayAttr> ax = groupAxes(op, axes);
  if (failed(ax) || failed(needsProcess(op)))
    return failure();
  return make(*ax);
}

LogicalResult
Emitter::collective(Operation *op, Value input, ArrayRef<int16_t> axes,
                    Value result,
                    llvm::function_ref<Value(Value, ArrayAttr)> make) {
  FailureOr<Value> in = use(op, input);
  if (failed(in))
    return failure();
  FailureOr<Value> r =
      collectiveOf(op, axes, [&](ArrayAttr ax) { return make(*in, ax); });
  if (failed(r))
    return failure();
  name[result] = *r;
  return success();
}

LogicalResult Emitter::block(Block &blk, SmallVectorImpl<Value> *yielded) {
  for (Operation &opRef : blk) {
    Operation *op = &opRef;
    LogicalResult r = success();
    if (auto c = dyn_cast<arith::ConstantOp>(op)) {
      if (auto f = dyn_cast<FloatAttr>(c.getValue()))
        scalar[c] = f.getValueAsDouble();
      else if (auto i = dyn_cast<IntegerAttr>(c.getValue())) {
        index[c] = i.getInt();
        if (!c.getType().isIndex())
          scalar[c] = (double)i.getInt(); // a ring constant
      } else if (auto d = dyn_cast<DenseElementsAttr>(c.getValue());
                 d && d.isSplat() && isa<RankedTensorType>(c.getType())) {
        // A splat tensor constant: a fill of its value.
        Type elt = d.getElementType();
        double v = 0;
        if (isa<FloatType>(elt))
          v = d.getSplatValue<APFloat>().convertToDouble();
        else if (elt.isSignlessInteger())
          v = (double)d.getSplatValue<APInt>().getSExtValue();
        else
          return unsupported(op);
        if (failed(checkTensor(op, c.getType())))
          return failure();
        fills[c] = v;
        if (v == 0.0)
          zeros.insert(c);
      } else {
        // A dense tensor constant: an input of its own, named by its value
        // (one name per distinct value across the spec and every
        // process); the importer ties the processes' to the spec's.
        auto dense = dyn_cast<DenseElementsAttr>(c.getValue());
        if (!dense || !isa<RankedTensorType>(c.getType()) || !constants ||
            failed(checkTensor(op, c.getType())))
          return op->emitError() << "shard-partition import: a constant that "
                                    "is not a scalar or a dense tensor is not "
                                    "modeled";
        auto [it, fresh] =
            constants->names.try_emplace(dense, "const" + std::to_string(
                                                          constants->names.size()));
        constants->used.insert({it->second, process});
        constants->types[it->second] = tvType(c.getType());
        constants->locs.try_emplace(it->second, c.getLoc());
        name[c.getResult()] =
            input(c.getLoc(), c.getType(), it->second);
      }
    } else if (isa<arith::AddIOp, arith::SubIOp, arith::MulIOp>(op) &&
               op->getResult(0).getType().isIndex()) {
      // Index arithmetic on process constants (a block's offset).
      auto l = index.find(op->getOperand(0)), rr = index.find(op->getOperand(1));
      if (l == index.end() || rr == index.end())
        return op->emitError() << "shard-partition import: index arithmetic "
                                  "on values other than process constants is "
                                  "not modeled";
      int64_t x = l->second, y = rr->second;
      index[op->getResult(0)] = isa<arith::AddIOp>(op)   ? x + y
                                : isa<arith::SubIOp>(op) ? x - y
                                                         : x * y;
    } else if (std::optional<std::pair<StringRef, unsigned>> k = scalarOp(op);
               k && op->getNumResults() == 1 &&
               isDataScalar(op->getResult(0).getType())) {
      r = scalarData(op, k->first);
    } else if (isa<shard::ShardingOp, shard::GetShardingOp>(op)) {
      continue;
    } else if (auto s = dyn_cast<shard::ShardOp>(op)) {
      // An annotation: the identity on values.
      Value src = s.getSrc();
      if (zeros.contains(src))
        zeros.insert(s.getResult());
      if (fills.count(src) && !name.count(src)) {
        // A constant stays one (materialized only where read as data).
        fills[s.getResult()] = fills[src];
        continue;
      }
      if (auto e = empties.find(src); e != empties.end()) {
        empties[s.getResult()] = e->second;
        continue;
      }
      FailureOr<Value> n = use(op, src);
      if (failed(n))
        return failure();
      name[s.getResult()] = *n;
    } else if (auto e = dyn_cast<tensor::EmptyOp>(op)) {
      // Undefined values (their ordinal is set in function()); read, they
      // become an input.
      continue;
    } else if (auto fill = dyn_cast<linalg::FillOp>(op)) {
      auto it = scalar.find(fill.getDpsInputs()[0]);
      if (it == scalar.end())
        return op->emitError() << "shard-partition import: a fill with "
                                  "other than a constant is not modeled";
      // A constant tensor: the initial value of a matmul or a reduction.
      fills[fill.getResult(0)] = it->second;
      if (it->second == 0.0)
        zeros.insert(fill.getResult(0));
    } else if (auto m = dyn_cast<linalg::MatmulOp>(op)) {
      r = matmul(m);
    } else if (auto g = dyn_cast<linalg::GenericOp>(op)) {
      r = generic(g);
    } else if (auto red = dyn_cast<linalg::ReduceOp>(op)) {
      r = reduce(red);
    } else if (auto s = dyn_cast<tosa::SigmoidOp>(op)) {
      r = unaryOrBinary(op, "sigmoid", {s.getInput()}, s.getResult());
    } else if (auto t = dyn_cast<tosa::TanhOp>(op)) {
      r = unaryOrBinary(op, "tanh", {t.getInput()}, t.getResult());
    } else if (auto a = dyn_cast<tosa::AbsOp>(op)) {
      r = unaryOrBinary(op, "abs", {a.getInput1()}, a.getResult());
    } else if (auto mm = dyn_cast<tosa::MatMulOp>(op)) {
      r = tosaMatmul(mm);
    } else if (auto cast = dyn_cast<tensor::CastOp>(op)) {
      // A cast between static types is the identity (a cast that changes
      // the shape does not verify); to or from a dynamic type is refused.
      if (cast.getSource().getType() != cast.getType())
        return op->emitError() << "shard-partition import: a tensor.cast "
                                  "that changes the type is not modeled";
      FailureOr<Value> n = use(op, cast.getSource());
      if (failed(n))
        return failure();
      name[cast.getResult()] = *n;
    } else if (auto e = dyn_cast<tosa::ExpOp>(op)) {
      r = unaryOrBinary(op, "exp", {e.getInput1()}, e.getResult());
    } else if (auto q = dyn_cast<shard::ProcessMultiIndexOp>(op)) {
      if (failed(needsProcess(op)))
        return failure();
      SmallVector<int64_t> c = grid.coords(process);
      ArrayRef<int16_t> axes = q.getAxes();
      for (auto [i, res] : llvm::enumerate(q.getResults()))
        index[res] = c[axes.empty() ? i : axes[i]];
    } else if (auto q = dyn_cast<shard::ProcessLinearIndexOp>(op)) {
      if (failed(needsProcess(op)))
        return failure();
      index[q.getResult()] = process;
    } else if (auto q = dyn_cast<shard::GridShapeOp>(op)) {
      ArrayRef<int16_t> axes = q.getAxes();
      for (auto [i, res] : llvm::enumerate(q.getResults()))
        index[res] = grid.sizes[axes.empty() ? i : axes[i]];
    } else if (auto cmp = dyn_cast<arith::CmpIOp>(op)) {
      auto l = index.find(cmp.getLhs()), rr = index.find(cmp.getRhs());
      if (l == index.end() || rr == index.end())
        return op->emitError() << "shard-partition import: a comparison "
                                  "of values other than process constants "
                                  "is not modeled";
      int64_t x = l->second, y = rr->second;
      bool v = false;
      switch (cmp.getPredicate()) {
      case arith::CmpIPredicate::eq:
        v = x == y;
        break;
      case arith::CmpIPredicate::ne:
        v = x != y;
        break;
      case arith::CmpIPredicate::slt:
      case arith::CmpIPredicate::ult:
        v = x < y;
        break;
      case arith::CmpIPredicate::sle:
      case arith::CmpIPredicate::ule:
        v = x <= y;
        break;
      case arith::CmpIPredicate::sgt:
      case arith::CmpIPredicate::ugt:
        v = x > y;
        break;
      case arith::CmpIPredicate::sge:
      case arith::CmpIPredicate::uge:
        v = x >= y;
        break;
      }
      index[cmp.getResult()] = v;
    } else if (auto ifOp = dyn_cast<scf::IfOp>(op)) {
      auto c = index.find(ifOp.getCondition());
      if (c == index.end())
        return op->emitError() << "shard-partition import: an scf.if on a "
                                  "value other than a process constant is "
                                  "not modeled";
      Region &taken = c->second ? ifOp.getThenRegion() : ifOp.getElseRegion();
      SmallVector<Value> values;
      if (!taken.empty() && failed(block(taken.front(), &values)))
        return failure();
      for (auto [res, v] : llvm::zip(ifOp.getResults(), values)) {
        bool filled = fills.count(v);
        if (filled)
          fills[res] = fills[v];
        if (zeros.contains(v))
          zeros.insert(res);
        else if (auto e = empties.find(v); e != empties.end())
          empties[res] = e->second;
        else if (name.count(v))
          name[res] = name[v];
        else if (!filled)
          return op->emitError() << "shard-partition import: scf.if yields "
                                    "a value tv does not model";
      }
    } else if (auto y = dyn_cast<scf::YieldOp>(op)) {
      if (yielded)
        llvm::append_range(*yielded, y.getOperands());
    } else if (auto ar = dyn_cast<shard::AllReduceOp>(op)) {
      std::optional<tvir::ReduceKind> kind;
      switch (ar.getReduction()) {
      case shard::ReductionKind::Sum:
        kind = tvir::ReduceKind::sum;
        break;
      case shard::ReductionKind::Max:
        // Of integers: signed, as shard-to-MPI gives a signless integer a
        // signed MPI type (docs/integers.md).
        kind = tvir::ReduceKind::max;
        break;
      case shard::ReductionKind::Min:
        if (isFloatTensor(ar.getInput()))
          r = allReduceMin(ar);
        else
          kind = tvir::ReduceKind::min;
        break;
      case shard::ReductionKind::BitwiseAnd:
      case shard::ReductionKind::BitwiseOr:
      case shard::ReductionKind::BitwiseXor:
        if (isFloatTensor(ar.getInput()))
          return op->emitError() << "shard-partition import: a bitwise "
                                    "all-reduce of floats has no meaning";
        kind = ar.getReduction() == shard::ReductionKind::BitwiseAnd
                   ? tvir::ReduceKind::band
               : ar.getReduction() == shard::ReductionKind::BitwiseOr
                   ? tvir::ReduceKind::bor
                   : tvir::ReduceKind::bxor;
        break;
      case shard::ReductionKind::Average:
        // The sum over the group divided by its size, as tv's avg.
        if (!isFloatTensor(ar.getInput()))
          return op->emitError() << "shard-partition import: an average "
                                    "all-reduce of integers is not modeled";
        kind = tvir::ReduceKind::avg;
        break;
      default:
        return op->emitError() << "shard-partition import: all_reduce "
                                  "kind '"
                               << shard::stringifyReductionKind(
                                      ar.getReduction())
                               << "' is not modeled";
      }
      if (kind)
        r = collective(op, ar.getInput(), ar.getGridAxes(), ar.getResult(),
                       [&](Value in, ArrayAttr ax) -> Value {
                         return tvir::AllReduceOp::create(
                             b, op->getLoc(), tvType(ar.getType()), in,
                             tvir::ReduceKindAttr::get(b.getContext(), *kind),
                             ax, ArrayAttr());
                       });
    } else if (auto ag = dyn_cast<shard::AllGatherOp>(op)) {
      r = collective(op, ag.getInput(), ag.getGridAxes(), ag.getResult(),
                     [&](Value in, ArrayAttr ax) -> Value {
                       return tvir::AllGatherOp::create(
                           b, op->getLoc(), tvType(ag.getType()), in,
                           i64(ag.getGatherAxis().getSExtValue()),
                           DenseI64ArrayAttr(), ax, ArrayAttr());
                     });
    } else if (auto as = dyn_cast<shard::AllSliceOp>(op)) {
      r = collective(op, as.getInput(), as.getGridAxes(), as.getResult(),
                     [&](Value in, ArrayAttr ax) -> Value {
                       return tvir::ChunkOp::create(
                           b, op->getLoc(), tvType(as.getType()), in,
                           i64(as.getSliceAxis().getSExtValue()),
                           IntegerAttr(), ax, ArrayAttr());
                     });
    } else if (auto aa = dyn_cast<shard::AllToAllOp>(op)) {
      r = collective(op, aa.getInput(), aa.getGridAxes(), aa.getResult(),
                     [&](Value in, ArrayAttr ax) -> Value {
                       return tvir::AllToAllOp::create(
                           b, op->getLoc(), tvType(aa.getType()), in,
                           i64(aa.getSplitAxis().getSExtValue()),
                           i64(aa.getConcatAxis().getSExtValue()), ax,
                           ArrayAttr());
                     });
    } else if (auto es = dyn_cast<tensor::ExtractSliceOp>(op)) {
      // A static, unit-stride slice of the same rank: tv.slice.
      auto srcTy = es.getSourceType();
      if (!es.hasUnitStride() || !es.getOffsets().empty() ||
          !es.getSizes().empty() ||
          es.getResultType().getRank() != srcTy.getRank())
        return op->emitError() << "shard-partition import: an extract_slice "
                                  "with dynamic offsets, strides or a rank "
                                  "change is not modeled";
      FailureOr<Value> in = use(op, es.getSource());
      if (failed(in) || failed(checkTensor(op, es.getResultType())))
        return failure();
      name[es.getResult()] =
          tvir::SliceOp::create(b, op->getLoc(), tvType(es.getResultType()),
                                *in, ints(es.getStaticOffsets()));
    } else if (isa<tensor::CollapseShapeOp, tensor::ExpandShapeOp>(op)) {
      // Row-major regrouping of dimensions: tv.reshape.
      FailureOr<Value> in = use(op, op->getOperand(0));
      if (failed(in) || failed(checkTensor(op, op->getResult(0).getType())))
        return failure();
      name[op->getResult(0)] = tvir::ReshapeOp::create(
          b, op->getLoc(), tvType(op->getResult(0).getType()), *in);
    } else if (auto cat = dyn_cast<tensor::ConcatOp>(op)) {
      SmallVector<Value> ins;
      for (Value v : cat.getInputs()) {
        FailureOr<Value> in = use(op, v);
        if (failed(in))
          return failure();
        ins.push_back(*in);
      }
      if (failed(checkTensor(op, cat.getType())))
        return failure();
      name[cat.getResult()] =
          tvir::ConcatOp::create(b, op->getLoc(), tvType(cat.getType()), ins,
                                 i64(cat.getDim()));
    } else if (auto rs = dyn_cast<shard::ReduceScatterOp>(op)) {
      if (rs.getReduction() != shard::ReductionKind::Sum)
        return op->emitError() << "shard-partition import: a reduce_scatter "
                                  "other than a sum is not modeled";
      r = collective(op, rs.getInput(), rs.getGridAxes(), rs.getResult(),
                     [&](Value in, ArrayAttr ax) -> Value {
                       return tvir::ReduceScatterOp::create(
                           b, op->getLoc(), tvType(rs.getType()), in,
                           i64(rs.getScatterAxis().getSExtValue()),
                           tvir::ReduceKindAttr::get(b.getContext(),
                                                     tvir::ReduceKind::sum),
                           ax, ArrayAttr());
                     });
    } else if (isa<shard::BroadcastOp, shard::ReduceOp>(op)) {
      r = rootCollective(op);
    } else if (auto g = dyn_cast<shard::GatherOp>(op)) {
      r = gather(g);
    } else if (auto sc = dyn_cast<shard::ScatterOp>(op)) {
      r = scatter(sc);
    } else if (auto sd = dyn_cast<shard::SendOp>(op)) {
      r = send(sd);
    } else if (auto rv = dyn_cast<shard::RecvOp>(op)) {
      r = recv(rv);
    } else if (auto sh = dyn_cast<shard::ShiftOp>(op)) {
      r = shift(sh);
    } else if (auto is = dyn_cast<tensor::InsertSliceOp>(op)) {
      r = insertSlice(is);
    } else if (auto ex = dyn_cast<tensor::ExtractOp>(op)) {
      r = extract(ex);
    } else if (auto in = dyn_cast<tensor::InsertOp>(op)) {
      r = insert(in);
    } else if (auto pd = dyn_cast<tensor::PadOp>(op)) {
      r = pad(pd);
    } else if (auto uh = dyn_cast<shard::UpdateHaloOp>(op)) {
      r = updateHalo(uh);
    } else if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
        // A returned sharding is compared by the importer, not computed.
        if (isa<shard::ShardingType>(v.getType()))
          continue;
        FailureOr<Value> n = use(op, v);
        if (failed(n))
          return failure();
        // A result that is an argument (a pure reshard) is still a claim:
        // the spec computes it as a copy, so a stage checks the plan's
        // data movement against it.
        if (process < 0 &&
            llvm::any_of(
                op->getParentOfType<func::FuncOp>().getArguments(),
                [&](BlockArgument a) { return name.lookup(a) == *n; }))
          n = tvir::CopyOp::create(b, op->getLoc(), *n).getResult();
        // On a process, a result that is an input of its own (an
        // undefined value a free variable stands for) is a copy of it, so
        // that its stage reaches the input as a cut.
        if (process >= 0 && n->getDefiningOp<tvir::InputOp>())
          n = tvir::CopyOp::create(b, op->getLoc(), *n).getResult();
        if (auto h = resultHalos.find(i); h != resultHalos.end())
          haloResult(op->getLoc(), i, *n, h->second);
        else
          tvir::OutputOp::create(b, op->getLoc(),
                                 b.getStringAttr("out" + Twine(i)), *n);
      }
    } else {
      r = unsupported(op);
    }
    if (failed(r))
      return failure();
  }
  return success();
}


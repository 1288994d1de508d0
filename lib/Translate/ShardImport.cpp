//===- ShardImport.cpp - MLIR's partitioner pair to a tv module -----------===//
//
// --import-shard-partition: the annotated function (input) and what
// shard-partition made of it (--partitioned) become a tv module: the spec is
// the input with every shard.shard read as the identity, the plan gives
// every process of the grid its own copy of the partitioned function with
// the process queries (process_multi_index, process_linear_index,
// grid_shape) folded to that process's constants and scf.if on them folded,
// and the lineages follow the shardings of the arguments (assumed) and of
// the results (guaranteed). docs/shard-validation.md gives the mapping.
// Every op is translated to the tv op with its meaning or refused by name.
//
//===----------------------------------------------------------------------===//
#include "TrainVerify/Dialect/TVOps.h"
#include "TrainVerify/Translate/Translations.h"
#include "TrainVerify/Upstream/Registration.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tosa/IR/TosaOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Tools/mlir-translate/Translation.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <map>

using namespace mlir;
using namespace mlir::tv;

static llvm::cl::opt<std::string>
    partitionedFile("partitioned",
                    llvm::cl::desc("With --import-shard-partition: the "
                                   "output of shard-partition for the input"),
                    llvm::cl::value_desc("file"), llvm::cl::init(""));

namespace {

/// The grid: axis sizes, and the coordinates of a process (row-major, the
/// last axis fastest, as shard numbers processes).
struct Grid {
  std::string name;
  SmallVector<int64_t> sizes;
  int64_t numProcesses() const {
    int64_t n = 1;
    for (int64_t s : sizes)
      n *= s;
    return n;
  }
  SmallVector<int64_t> coords(int64_t p) const {
    SmallVector<int64_t> c(sizes.size());
    for (int64_t i = sizes.size() - 1; i >= 0; --i) {
      c[i] = p % sizes[i];
      p /= sizes[i];
    }
    return c;
  }
  static std::string axis(int64_t i) { return "g" + std::to_string(i); }
};

std::string typeStr(Type t) {
  std::string s;
  llvm::raw_string_ostream os(s);
  t.print(os);
  return s;
}

std::string locStr(Location loc) {
  std::string s;
  llvm::raw_string_ostream os(s);
  loc.print(os);
  return s;
}

/// Translates one function body into the ops of a tv program (spec, or the
/// program of one process).
class Emitter {
public:
  Emitter(const Grid &grid, int64_t process, std::string &out)
      : grid(grid), process(process), out(out) {}

  LogicalResult function(func::FuncOp f) {
    for (auto [i, arg] : llvm::enumerate(f.getArguments())) {
      if (failed(checkTensor(f, arg.getType())))
        return failure();
      std::string n = fresh();
      line(n + " = tv.input \"arg" + std::to_string(i) +
               "\" : " + typeStr(arg.getType()),
           f.getLoc());
      name[arg] = n;
    }
    return block(f.getBody().front(), nullptr);
  }

private:
  LogicalResult checkTensor(Operation *op, Type t) {
    auto ty = dyn_cast<RankedTensorType>(t);
    if (!ty || !ty.hasStaticShape())
      return op->emitError() << "shard-partition import: " << t
                             << " is not a statically shaped tensor";
    if (!isa<FloatType>(ty.getElementType()))
      return op->emitError()
             << "shard-partition import: element type " << ty.getElementType()
             << " is not modeled (tv proves over the reals; integer "
                "arithmetic, which wraps around, is refused)";
    return success();
  }

  std::string fresh() { return "%v" + std::to_string(counter++); }
  void line(const std::string &text, Location loc) {
    out += "    " + text + " " + locStr(loc) + "\n";
  }
  FailureOr<std::string> use(Operation *op, Value v) {
    auto it = name.find(v);
    if (it != name.end())
      return it->second;
    if (zeros.contains(v))
      return op->emitError() << "shard-partition import: a zero-filled "
                                "tensor is read other than as a matmul's "
                                "initial value (not modeled)",
             FailureOr<std::string>();
    op->emitError() << "shard-partition import: operand is not a tensor "
                       "value tv models";
    return failure();
  }
  LogicalResult unsupported(Operation *op) {
    return op->emitError() << "shard-partition import: '" << op->getName()
                           << "' is not modeled";
  }

  /// The single scalar op of an elementwise linalg.generic's body applied to
  /// its inputs, as a tv op name (unary or binary).
  static std::optional<std::pair<StringRef, unsigned>> scalarOp(Operation *op) {
    if (isa<math::ExpOp>(op))
      return std::make_pair(StringRef("exp"), 1u);
    if (isa<math::TanhOp>(op))
      return std::make_pair(StringRef("tanh"), 1u);
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
    return std::nullopt;
  }

  LogicalResult unaryOrBinary(Operation *op, StringRef tvName,
                              ArrayRef<Value> ins, Value result) {
    SmallVector<std::string> ops;
    for (Value v : ins) {
      FailureOr<std::string> n = use(op, v);
      if (failed(n))
        return failure();
      ops.push_back(*n);
    }
    std::string r = fresh();
    std::string t = typeStr(result.getType());
    if (ins.size() == 1)
      line(r + " = tv." + tvName.str() + " " + ops[0] + " : " + t,
           op->getLoc());
    else
      line(r + " = tv." + tvName.str() + " " + ops[0] + ", " + ops[1] + " : " +
               typeStr(ins[0].getType()) + ", " + typeStr(ins[1].getType()) +
               " -> " + t,
           op->getLoc());
    name[result] = r;
    return success();
  }

  LogicalResult generic(linalg::GenericOp g) {
    // Elementwise: every loop parallel, every map the identity, one scalar
    // op of the inputs yielded.
    if (g.getNumDpsInits() != 1 || g.getNumResults() != 1 ||
        !llvm::all_of(g.getIteratorTypesArray(),
                      [](utils::IteratorType t) {
                        return t == utils::IteratorType::parallel;
                      }) ||
        !llvm::all_of(g.getIndexingMapsArray(),
                      [](AffineMap m) { return m.isIdentity(); }))
      return g.emitError() << "shard-partition import: a linalg.generic "
                              "that is not elementwise is not modeled";
    Block &body = g.getRegion().front();
    auto yield = cast<linalg::YieldOp>(body.getTerminator());
    Operation *def = yield.getOperand(0).getDefiningOp();
    if (!def || &*body.begin() != def || def->getNextNode() != yield)
      return g.emitError() << "shard-partition import: a linalg.generic "
                              "body of more than one op is not modeled";
    std::optional<std::pair<StringRef, unsigned>> k = scalarOp(def);
    if (!k || def->getNumOperands() != k->second)
      return def->emitError() << "shard-partition import: '" << def->getName()
                              << "' in a linalg.generic "
                              << "is not modeled";
    SmallVector<Value> ins;
    for (Value a : def->getOperands()) {
      auto arg = dyn_cast<BlockArgument>(a);
      if (!arg || arg.getOwner() != &body ||
          arg.getArgNumber() >= g.getNumDpsInputs())
        return def->emitError() << "shard-partition import: the body must "
                                   "read the generic's inputs only";
      ins.push_back(g.getDpsInputs()[arg.getArgNumber()]);
    }
    return unaryOrBinary(g, k->first, ins, g.getResult(0));
  }

  LogicalResult matmul(linalg::MatmulOp m) {
    if (m.hasUserDefinedMaps())
      return m.emitError() << "shard-partition import: a matmul with "
                              "explicit indexing maps is not modeled";
    Value a = m.getDpsInputs()[0], b = m.getDpsInputs()[1];
    Value init = m.getDpsInits()[0];
    for (Value v : {a, b, init})
      if (failed(checkTensor(m, v.getType())))
        return failure();
    FailureOr<std::string> an = use(m, a), bn = use(m, b);
    if (failed(an) || failed(bn))
      return failure();
    std::string t = typeStr(m.getResult(0).getType());
    std::string prod = fresh();
    line(prod + " = tv.matmul " + *an + ", " + *bn + " : " +
             typeStr(a.getType()) + ", " + typeStr(b.getType()) + " -> " + t,
         m.getLoc());
    // The result accumulates into the initial value (zeros: nothing to add).
    if (zeros.contains(init)) {
      name[m.getResult(0)] = prod;
      return success();
    }
    FailureOr<std::string> in = use(m, init);
    if (failed(in))
      return failure();
    std::string r = fresh();
    line(r + " = tv.add " + prod + ", " + *in + " : " + t + ", " + t + " -> " +
             t,
         m.getLoc());
    name[m.getResult(0)] = r;
    return success();
  }

  /// Group axes of a collective as tv mesh axes (in grid order only: tv
  /// orders a group by rank, shard by the listed axes, first major).
  FailureOr<std::string> groupAxes(Operation *op, ArrayRef<int16_t> axes) {
    std::string s = "[";
    for (auto [i, a] : llvm::enumerate(axes)) {
      if (i && axes[i - 1] >= a)
        return op->emitError() << "shard-partition import: grid axes not in "
                                  "increasing order are not modeled",
               FailureOr<std::string>();
      s += (i ? ", \"" : "\"") + Grid::axis(a) + "\"";
    }
    return s + "]";
  }

  /// `tv.<head> <input><tail> {axes = ...} : T -> R`.
  LogicalResult collective(Operation *op, const std::string &head,
                           const std::string &tail, Value input,
                           ArrayRef<int16_t> axes, Value result) {
    FailureOr<std::string> in = use(op, input);
    FailureOr<std::string> ax = groupAxes(op, axes);
    if (failed(in) || failed(ax))
      return failure();
    std::string r = fresh();
    line(r + " = tv." + head + " " + *in + tail + " {axes = " + *ax + "} : " +
             typeStr(input.getType()) + " -> " + typeStr(result.getType()),
         op->getLoc());
    name[result] = r;
    return success();
  }

  LogicalResult block(Block &b, SmallVectorImpl<Value> *yielded) {
    for (Operation &opRef : b) {
      Operation *op = &opRef;
      LogicalResult r = success();
      if (auto c = dyn_cast<arith::ConstantOp>(op)) {
        if (auto f = dyn_cast<FloatAttr>(c.getValue()))
          scalar[c] = f.getValueAsDouble();
        else if (auto i = dyn_cast<IntegerAttr>(c.getValue()))
          index[c] = i.getInt();
        else
          r = unsupported(op);
      } else if (isa<shard::ShardingOp>(op)) {
        continue;
      } else if (auto s = dyn_cast<shard::ShardOp>(op)) {
        // An annotation: the identity on values.
        Value src = s.getSrc();
        if (zeros.contains(src)) {
          zeros.insert(s.getResult());
          continue;
        }
        if (empties.contains(src)) {
          empties.insert(s.getResult());
          continue;
        }
        FailureOr<std::string> n = use(op, src);
        if (failed(n))
          return failure();
        name[s.getResult()] = *n;
      } else if (auto e = dyn_cast<tensor::EmptyOp>(op)) {
        // Undefined values: only an init a fill overwrites may read them.
        empties.insert(e.getResult());
      } else if (auto fill = dyn_cast<linalg::FillOp>(op)) {
        auto it = scalar.find(fill.getDpsInputs()[0]);
        if (it == scalar.end() || it->second != 0.0)
          return op->emitError() << "shard-partition import: a fill with "
                                    "other than the constant 0 is not "
                                    "modeled";
        zeros.insert(fill.getResult(0));
      } else if (auto m = dyn_cast<linalg::MatmulOp>(op)) {
        r = matmul(m);
      } else if (auto g = dyn_cast<linalg::GenericOp>(op)) {
        r = generic(g);
      } else if (auto s = dyn_cast<tosa::SigmoidOp>(op)) {
        r = unaryOrBinary(op, "sigmoid", {s.getInput()}, s.getResult());
      } else if (auto t = dyn_cast<tosa::TanhOp>(op)) {
        r = unaryOrBinary(op, "tanh", {t.getInput()}, t.getResult());
      } else if (auto e = dyn_cast<tosa::ExpOp>(op)) {
        r = unaryOrBinary(op, "exp", {e.getInput1()}, e.getResult());
      } else if (auto q = dyn_cast<shard::ProcessMultiIndexOp>(op)) {
        SmallVector<int64_t> c = grid.coords(process);
        ArrayRef<int16_t> axes = q.getAxes();
        for (auto [i, res] : llvm::enumerate(q.getResults()))
          index[res] = c[axes.empty() ? i : axes[i]];
      } else if (auto q = dyn_cast<shard::ProcessLinearIndexOp>(op)) {
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
          if (zeros.contains(v))
            zeros.insert(res);
          else if (name.count(v))
            name[res] = name[v];
          else
            return op->emitError() << "shard-partition import: scf.if yields "
                                      "a value tv does not model";
        }
      } else if (auto y = dyn_cast<scf::YieldOp>(op)) {
        if (yielded)
          llvm::append_range(*yielded, y.getOperands());
      } else if (auto ar = dyn_cast<shard::AllReduceOp>(op)) {
        StringRef kind;
        switch (ar.getReduction()) {
        case shard::ReductionKind::Sum:
          kind = "sum";
          break;
        case shard::ReductionKind::Max:
          kind = "max";
          break;
        default:
          return op->emitError() << "shard-partition import: all_reduce "
                                    "kind is not modeled";
        }
        r = collective(op, ("all_reduce " + kind).str(), "", ar.getInput(),
                       ar.getGridAxes(), ar.getResult());
      } else if (auto ag = dyn_cast<shard::AllGatherOp>(op)) {
        r = collective(op, "all_gather",
                       " dim " +
                           std::to_string(ag.getGatherAxis().getSExtValue()),
                       ag.getInput(), ag.getGridAxes(), ag.getResult());
      } else if (auto as = dyn_cast<shard::AllSliceOp>(op)) {
        r = collective(op, "chunk",
                       " dim " +
                           std::to_string(as.getSliceAxis().getSExtValue()),
                       as.getInput(), as.getGridAxes(), as.getResult());
      } else if (auto ret = dyn_cast<func::ReturnOp>(op)) {
        for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
          FailureOr<std::string> n = use(op, v);
          if (failed(n))
            return failure();
          line("tv.output \"out" + std::to_string(i) + "\", " + *n + " : " +
                   typeStr(v.getType()),
               op->getLoc());
        }
      } else {
        r = unsupported(op);
      }
      if (failed(r))
        return failure();
    }
    return success();
  }

  const Grid &grid;
  int64_t process;
  std::string &out;
  int counter = 0;
  DenseMap<Value, std::string> name;
  DenseMap<Value, double> scalar;
  DenseMap<Value, int64_t> index;
  DenseSet<Value> zeros, empties;
};

/// The block of `process` along one dimension with split axes `axes`:
/// (index, count), the first listed axis major.
std::pair<int64_t, int64_t> blockOf(const Grid &grid, ArrayRef<int16_t> axes,
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
/// per distinct block, naming every process that holds it.
LogicalResult lineagesOf(Operation *where, StringRef tensor,
                         ArrayRef<int64_t> shape, shard::ShardingOp sharding,
                         const Grid &grid, std::string &out) {
  SmallVector<SmallVector<int16_t>> split;
  if (sharding) {
    if (!sharding.getStaticShardedDimsOffsets().empty() ||
        !sharding.getDynamicShardedDimsOffsets().empty())
      return where->emitError() << "shard-partition import: uneven shards "
                                   "(sharded_dims_offsets) are not modeled";
    if (!sharding.getStaticHaloSizes().empty() ||
        !sharding.getDynamicHaloSizes().empty())
      return where->emitError()
             << "shard-partition import: halo sizes are not modeled";
    for (auto axes : sharding.getSplitAxes().getAxes())
      split.emplace_back(axes.asArrayRef());
  }
  std::map<std::string, std::vector<int64_t>> holders;
  for (int64_t p = 0; p < grid.numProcesses(); ++p) {
    std::string box = "[";
    for (auto [d, size] : llvm::enumerate(shape)) {
      int64_t lo = 0, hi = size;
      if (d < split.size() && !split[d].empty()) {
        auto [idx, count] = blockOf(grid, split[d], p);
        if (size % count)
          return where->emitError()
                 << "shard-partition import: dimension " << d << " of size "
                 << size << " does not split into " << count << " equal blocks";
        lo = idx * (size / count);
        hi = lo + size / count;
      }
      box += (d ? ", " : "") + std::to_string(lo) + ":" + std::to_string(hi);
    }
    holders[box + "]"].push_back(p);
  }
  for (auto &[box, procs] : holders) {
    out += "tv.lineage #tv.lineage<\"" + tensor.str() + "\"" + box + " = ";
    for (auto [i, p] : llvm::enumerate(procs))
      out += (i ? " | [\"" : "[\"") + tensor.str() + "\":" + std::to_string(p) +
             "]";
    out += ">\n";
  }
  return success();
}

/// The sharding a value is annotated with: the first shard.shard of it (not
/// for its users) for an argument; the shard.shard producing it for a result.
shard::ShardingOp argSharding(Value arg) {
  for (Operation *u : arg.getUsers())
    if (auto s = dyn_cast<shard::ShardOp>(u))
      if (!s.getAnnotateForUsers())
        return s.getSharding().getDefiningOp<shard::ShardingOp>();
  return {};
}
shard::ShardingOp resultSharding(Value v) {
  shard::ShardingOp found;
  while (auto s = v.getDefiningOp<shard::ShardOp>()) {
    if (!found)
      found = s.getSharding().getDefiningOp<shard::ShardingOp>();
    v = s.getSrc();
  }
  return found;
}

OwningOpRef<Operation *> importShardPartition(llvm::SourceMgr &sourceMgr,
                                              MLIRContext *ctx) {
  Location fileLoc =
      FileLineColLoc::get(ctx,
                          sourceMgr.getMemoryBuffer(sourceMgr.getMainFileID())
                              ->getBufferIdentifier(),
                          0, 0);
  if (partitionedFile.empty()) {
    emitError(fileLoc) << "--import-shard-partition needs --partitioned=FILE "
                          "(the output of shard-partition for this input)";
    return {};
  }
  OwningOpRef<ModuleOp> input = parseSourceFile<ModuleOp>(sourceMgr, ctx);
  OwningOpRef<ModuleOp> part = parseSourceFile<ModuleOp>(partitionedFile, ctx);
  if (!input || !part)
    return {};
  // One grid, one function of the same name in both.
  SmallVector<shard::GridOp> grids(input->getOps<shard::GridOp>());
  SmallVector<func::FuncOp> inFns(input->getOps<func::FuncOp>());
  if (grids.size() != 1 || inFns.size() != 1) {
    emitError(fileLoc) << "shard-partition import: the input must hold one "
                          "shard.grid and one func.func (it has "
                       << grids.size() << " and " << inFns.size() << ")";
    return {};
  }
  shard::GridOp gridOp = grids.front();
  func::FuncOp spec = inFns.front();
  auto plan = part->lookupSymbol<func::FuncOp>(spec.getSymName());
  if (!plan) {
    emitError(fileLoc) << "shard-partition import: the partitioned module has "
                          "no function @"
                       << spec.getSymName();
    return {};
  }
  Grid grid;
  grid.name = gridOp.getSymName().str();
  for (int64_t s : gridOp.getShape()) {
    if (ShapedType::isDynamic(s) || s < 1) {
      gridOp.emitError() << "shard-partition import: a grid of dynamic shape "
                            "is not modeled";
      return {};
    }
    grid.sizes.push_back(s);
  }

  std::string text = "tv.mesh @mesh axes [";
  for (size_t i = 0; i < grid.sizes.size(); ++i)
    text += (i ? ", \"" : "\"") + Grid::axis(i) + "\"";
  text += "] sizes [";
  for (auto [i, s] : llvm::enumerate(grid.sizes))
    text += (i ? ", " : "") + std::to_string(s);
  text += "]\ntv.spec @spec {\n";
  {
    Emitter e(grid, -1, text);
    if (failed(e.function(spec)))
      return {};
  }
  text += "}\ntv.plan @plan mesh @mesh micro_batches 1 {\n";
  for (int64_t p = 0; p < grid.numProcesses(); ++p) {
    text += "  tv.rank_program [" + std::to_string(p) + "] {\n";
    Emitter e(grid, p, text);
    if (failed(e.function(plan)))
      return {};
    text += "  }\n";
  }
  text += "}\n";
  for (auto [i, arg] : llvm::enumerate(spec.getArguments()))
    if (failed(lineagesOf(spec, "arg" + std::to_string(i),
                          cast<RankedTensorType>(arg.getType()).getShape(),
                          argSharding(arg), grid, text)))
      return {};
  auto ret = cast<func::ReturnOp>(spec.getBody().front().getTerminator());
  for (auto [i, v] : llvm::enumerate(ret.getOperands()))
    if (failed(lineagesOf(ret, "out" + std::to_string(i),
                          cast<RankedTensorType>(v.getType()).getShape(),
                          resultSharding(v), grid, text)))
      return {};
  OwningOpRef<ModuleOp> out = parseSourceString<ModuleOp>(text, ctx, "shard");
  if (!out)
    emitError(fileLoc) << "shard-partition import: internal error, the "
                          "translated module does not parse";
  return out;
}

} // namespace

void mlir::tv::registerShardImport() {
  static TranslateToMLIRRegistration reg(
      "import-shard-partition",
      "MLIR's shard-partition: an annotated function and its partitioned "
      "output (--partitioned) to a tv module",
      [](llvm::SourceMgr &sourceMgr, MLIRContext *ctx) {
        return importShardPartition(sourceMgr, ctx);
      },
      [](DialectRegistry &registry) {
        registry.insert<tv::TVDialect>();
        registerUpstreamDialects(registry);
      });
}

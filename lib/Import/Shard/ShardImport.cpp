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
#include "ShardImport.h"
#include "TrainVerify/Dialect/InputLimits.h"
#include "TrainVerify/Dialect/TVOps.h"
#include "TrainVerify/Translate/Translations.h"
#include "TrainVerify/Upstream/Registration.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tosa/IR/TosaOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Conversion/TosaToLinalg/TosaToLinalg.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Dialect/Tosa/Transforms/Passes.h"
#include "mlir/Transforms/DialectConversion.h"
#include "mlir/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Tools/mlir-translate/Translation.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include "llvm/Support/Format.h"
#include <cmath>
#include <map>
#include <numeric>
#include <set>

using namespace mlir;
using namespace mlir::tv;
using namespace mlir::tv::shardimport;

static llvm::cl::opt<std::string>
    partitionedFile("partitioned",
                    llvm::cl::desc("With --import-shard-partition: the "
                                   "output of shard-partition for the input"),
                    llvm::cl::value_desc("file"), llvm::cl::init(""));

static llvm::cl::opt<std::string> shardFunction(
    "shard-function",
    llvm::cl::desc("With --import-shard-partition: the function to validate "
                   "when the module holds several"),
    llvm::cl::value_desc("name"), llvm::cl::init(""));

static llvm::cl::opt<std::string> shardGridShape(
    "shard-grid-shape",
    llvm::cl::desc("With --import-shard-partition: the shape to validate a "
                   "grid of dynamic shape for, NAME=AxB[,NAME=...] "
                   "(default: the smallest size from 2 that splits the "
                   "function's dimensions evenly)"),
    llvm::cl::value_desc("name=shape"), llvm::cl::init(""));

static llvm::cl::opt<bool> shardIntermediates(
    "shard-intermediate-cuts",
    llvm::cl::desc("With --import-shard-partition: tie every annotated "
                   "intermediate to the partitioned op at its location "
                   "(smaller stages; a cut that does not hold fails its "
                   "stage, so validate again without it then)"),
    llvm::cl::init(false));

static llvm::cl::opt<int64_t> shardDimSize(
    "shard-dim-size",
    llvm::cl::desc("With --import-shard-partition: the size to validate "
                   "every dynamic tensor dimension of the input for "
                   "(default: twice the grid's processes)"),
    llvm::cl::value_desc("n"), llvm::cl::init(0));

LogicalResult mlir::tv::refuseShardImportOptions(Location loc,
                                                 StringRef translation) {
  for (const llvm::cl::Option *o :
       std::initializer_list<const llvm::cl::Option *>{
           &partitionedFile, &shardFunction, &shardGridShape, &shardDimSize,
           &shardIntermediates})
    if (o->getNumOccurrences())
      return emitError(loc) << "--" << o->ArgStr
                            << " applies to --import-shard-partition only, "
                               "not to --"
                            << translation;
  return success();
}

bool &mlir::tv::translationFoundWrongProgram() {
  static bool wrong = false;
  return wrong;
}


/// tosa lowered to linalg by upstream's own patterns (those of
/// tosa-to-linalg), on a copy: the import then reads one form
/// (linalg.generic / reduce with arith and math bodies) for tosa's
/// elementwise ops and reductions. `abs`, `sigmoid`, `tanh` and `exp` stay
/// tosa and are read directly as tv's functions: lowered, integer `abs`
/// becomes a max of wrapped integers, which is not a polynomial identity
/// (docs/shard.md). A tosa op without a pattern stays, and the import
/// names it.
static OwningOpRef<ModuleOp> normalized(ModuleOp module, Location fileLoc) {
  MLIRContext *ctx = module.getContext();
  // What the patterns create (already loaded inside a pass, whose dependent
  // dialects these are).
  ctx->loadDialect<linalg::LinalgDialect, arith::ArithDialect,
                   math::MathDialect, tensor::TensorDialect>();
  OwningOpRef<ModuleOp> copy(cast<ModuleOp>(module->clone()));
  TypeConverter converter;
  tosa::populateTosaTypeConversion(converter);
  RewritePatternSet patterns(ctx);
  tosa::populateTosaToLinalgConversionPatterns(converter, &patterns);
  // tosa.matmul and the other named ops: upstream's tosa-to-linalg-named.
  tosa::populateTosaToLinalgNamedConversionPatterns(
      converter, &patterns, TosaToLinalgNamedOptions());
  ConversionTarget target(*ctx);
  target.addLegalDialect<linalg::LinalgDialect, arith::ArithDialect,
                         math::MathDialect, tensor::TensorDialect,
                         shard::ShardDialect, scf::SCFDialect,
                         func::FuncDialect>();
  target.addLegalOp<tosa::AbsOp, tosa::SigmoidOp, tosa::TanhOp, tosa::ExpOp>();
  // A float matmul is read directly (its zero points are 0 by TOSA's rules,
  // and upstream lowers only constant ones).
  target.addDynamicallyLegalOp<tosa::MatMulOp>([](tosa::MatMulOp m) {
    return isa<FloatType>(getElementTypeOrSelf(m.getType()));
  });
  FrozenRewritePatternSet frozen(std::move(patterns));
  for (auto f : copy->getOps<func::FuncOp>())
    if (failed(applyPartialConversion(f, target, frozen))) {
      emitError(fileLoc) << "shard-partition import: upstream's tosa-to-linalg "
                            "patterns failed on @"
                         << f.getSymName();
      return {};
    }
  // linalg's named ops other than matmul (batch_matmul, transpose,
  // broadcast, map, elementwise, ...) as the generics upstream defines them
  // to be (linalg's own generalization), which the import reads.
  IRRewriter rewriter(ctx);
  SmallVector<linalg::LinalgOp> named;
  copy->walk([&](linalg::LinalgOp op) {
    if (!isa<linalg::GenericOp, linalg::MatmulOp, linalg::FillOp,
             linalg::ReduceOp>(
            op.getOperation()))
      named.push_back(op);
  });
  for (linalg::LinalgOp op : named) {
    rewriter.setInsertionPoint(op);
    (void)linalg::generalizeNamedOp(rewriter, op);
  }
  return copy;
}

/// The partitioned module with `plan`'s dynamic argument types made the
/// static block shapes of `process` (uneven shards: each process its own
/// local shapes), and the static shapes carried through its ops by
/// upstream's own shape inference (tosa-infer-shapes) and canonicalization;
/// the function's result types follow its returned values.
static OwningOpRef<ModuleOp>
specializeForProcess(ModuleOp part, func::FuncOp plan,
                     ArrayRef<std::vector<SmallVector<int64_t>>> argBlocks,
                     int64_t process) {
  MLIRContext *ctx = part.getContext();
  OwningOpRef<ModuleOp> copy(cast<ModuleOp>(part->clone()));
  auto f = copy->lookupSymbol<func::FuncOp>(plan.getSymName());
  SmallVector<Type> args;
  for (auto [i, arg] : llvm::enumerate(f.getArguments())) {
    auto ty = dyn_cast<RankedTensorType>(arg.getType());
    if (ty && !ty.hasStaticShape() && i < argBlocks.size() &&
        (size_t)process < argBlocks[i].size()) {
      ArrayRef<int64_t> block = argBlocks[i][process];
      if (block.size() != (size_t)ty.getRank())
        return plan.emitError() << "shard-partition import: argument " << i
                                << " has rank " << ty.getRank()
                                << " in the partitioned program",
               OwningOpRef<ModuleOp>();
      for (auto [d, s] : llvm::enumerate(ty.getShape()))
        if (!ShapedType::isDynamic(s) && s != block[d]) {
          markWrongPartition();
          return emitError(arg.getLoc())
                     << "wrong partition: argument " << i << " is " << ty
                     << " but its sharding gives process " << process
                     << " a block of size " << block[d] << " in dimension "
                     << d,
                 OwningOpRef<ModuleOp>();
        }
      arg.setType(RankedTensorType::get(block, ty.getElementType()));
    }
    args.push_back(arg.getType());
  }
  f.setFunctionType(FunctionType::get(ctx, args, f.getResultTypes()));
  foldProcessQueries(f, process);
  if (failed(refineStaticShapes(f)))
    return plan.emitError() << "shard-partition import: process " << process
                            << "'s static shapes could not be inferred",
           OwningOpRef<ModuleOp>();
  return copy;
}

/// Upstream's test pass (-test-grid-resharding-partition) keeps a function's
/// global signature and converts at its boundary with
/// `builtin.unrealized_conversion_cast`: an argument whose every use is a
/// cast to one tensor type is read as that type (the process's block), a
/// returned cast as its operand. The local types are then checked against
/// the shardings like any other (docs/shard.md).
static void unwrapBoundaryCasts(func::FuncOp f) {
  if (f.isExternal())
    return;
  Block &body = f.getBody().front();
  auto single = [](Operation *op) -> UnrealizedConversionCastOp {
    auto c = dyn_cast<UnrealizedConversionCastOp>(op);
    if (c && c.getNumOperands() == 1 && c.getNumResults() == 1 &&
        isa<RankedTensorType>(c.getOperand(0).getType()) &&
        isa<RankedTensorType>(c.getResult(0).getType()))
      return c;
    return {};
  };
  SmallVector<Type> args;
  for (BlockArgument arg : body.getArguments()) {
    Type local;
    bool all = !arg.use_empty();
    for (Operation *u : arg.getUsers()) {
      auto c = single(u);
      if (!c || (local && local != c.getResult(0).getType())) {
        all = false;
        break;
      }
      local = c.getResult(0).getType();
    }
    if (all) {
      arg.setType(local);
      for (Operation *u : llvm::make_early_inc_range(arg.getUsers())) {
        u->getResult(0).replaceAllUsesWith(arg);
        u->erase();
      }
    }
    args.push_back(arg.getType());
  }
  auto ret = dyn_cast<func::ReturnOp>(body.getTerminator());
  if (!ret)
    return;
  for (OpOperand &o : ret->getOpOperands())
    if (auto c = o.get().getDefiningOp() ? single(o.get().getDefiningOp())
                                         : UnrealizedConversionCastOp()) {
      o.set(c.getOperand(0));
      if (c->use_empty())
        c->erase();
    }
  f.setFunctionType(
      FunctionType::get(f.getContext(), args, ret.getOperandTypes()));
}

OwningOpRef<ModuleOp>
mlir::tv::buildShardValidation(ModuleOp inputModule, ModuleOp partModule,
                               StringRef function, Location fileLoc,
                               const ShardSizes &sizes) {
  OwningOpRef<ModuleOp> inputCopy = normalized(inputModule, fileLoc);
  OwningOpRef<ModuleOp> partCopy = normalized(partModule, fileLoc);
  if (!inputCopy || !partCopy)
    return {};
  ModuleOp inputNorm = *inputCopy, partNorm = *partCopy;
  ModuleOp *input = &inputNorm, *part = &partNorm;
  MLIRContext *ctx = inputModule.getContext();
  // The lineages' attributes are built before the module.
  ctx->loadDialect<TVDialect>();
  // One grid; one function (or the one named), of the same name in both.
  SmallVector<shard::GridOp> grids(input->getOps<shard::GridOp>());
  SmallVector<func::FuncOp> inFns(input->getOps<func::FuncOp>());
  if (!function.empty()) {
    inFns.clear();
    if (auto f = input->lookupSymbol<func::FuncOp>(function))
      inFns.push_back(f);
    else {
      emitError(fileLoc) << "shard-partition import: the input has no "
                            "function @"
                         << function;
      return {};
    }
  }
  if (inFns.size() != 1) {
    emitError(fileLoc) << "shard-partition import: the input holds "
                       << inFns.size()
                       << " functions; name one with --shard-function";
    return {};
  }
  func::FuncOp spec = inFns.front();
  // A function that returns nothing computes nothing to compare: said as
  // such, before anything is read (the pass says it with
  // a warning).
  if (spec.getNumResults() == 0) {
    emitError(spec.getLoc())
        << "shard-partition import: nothing to validate: @"
        << spec.getSymName()
        << " returns nothing (tv compares the partitioned function's "
           "results with the input's)";
    return {};
  }
  if (auto p = part->lookupSymbol<func::FuncOp>(spec.getSymName()))
    unwrapBoundaryCasts(p);
  // Dynamic grid axes and dimensions get static sizes (both copies).
  if (failed(specializeSizes(*input, *part, spec, sizes, fileLoc)))
    return {};
  // The grid is the one the function's shardings name: a module may hold
  // several grids, one function one grid.
  SmallVector<shard::GridOp> used;
  spec.walk([&](shard::ShardingOp s) {
    auto g = input->lookupSymbol<shard::GridOp>(s.getGridAttr());
    if (g && !llvm::is_contained(used, g))
      used.push_back(g);
  });
  if (used.empty() && grids.size() == 1)
    used = grids;
  if (used.size() > 1) {
    emitError(spec.getLoc())
        << "shard-partition import: @" << spec.getSymName()
        << " shards over more than one shard.grid (one grid per function is "
           "modeled)";
    return {};
  }
  auto plan = part->lookupSymbol<func::FuncOp>(spec.getSymName());
  if (!plan) {
    emitError(fileLoc) << "shard-partition import: the partitioned module has "
                          "no function @"
                       << spec.getSymName();
    return {};
  }
  // A function that names no grid (a module without one, or with several
  // and no sharding in the function) is not partitioned: it runs as it is
  // on one process, which must compute what the input computes.
  shard::GridOp gridOp = used.empty() ? shard::GridOp() : used.front();
  Location gridLoc = gridOp ? gridOp.getLoc() : spec.getLoc();
  Grid grid;
  grid.name = gridOp ? gridOp.getSymName().str() : "";
  SmallVector<int64_t> gridShape =
      gridOp ? SmallVector<int64_t>(gridOp.getShape()) : SmallVector<int64_t>{1};
  // Every process gets a program of its own: an absurd grid is refused
  // before anything is sized by it.
  constexpr int64_t kMaxProcesses = int64_t(1) << 16;
  int64_t processes = 1;
  for (int64_t s : gridShape) {
    if (ShapedType::isDynamic(s) || s < 1) {
      gridOp.emitError() << "shard-partition import: a grid of dynamic shape "
                            "is not modeled";
      return {};
    }
    if (s > kMaxProcesses || processes * s > kMaxProcesses) {
      gridOp.emitError() << "shard-partition import: a grid of more than "
                         << kMaxProcesses
                         << " processes is more than tv validates (each "
                            "process is a program of its own)";
      return {};
    }
    processes *= s;
    grid.sizes.push_back(s);
  }

  // The shardings first: what tv does not model (uneven shards, halos) is
  // named before any op of the partitioned program is read.
  Lineages lineages;
  if (plan.getNumArguments() != spec.getNumArguments() ||
      plan.getNumResults() != spec.getNumResults()) {
    plan.emitError() << "shard-partition import: the partitioned @"
                     << plan.getSymName() << " has " << plan.getNumArguments()
                     << " arguments and " << plan.getNumResults()
                     << " results, the input " << spec.getNumArguments()
                     << " and " << spec.getNumResults();
    return {};
  }
  // Arguments and results are tensors of a static shape; an argument of
  // another type that nothing reads (an unused index, say) carries no data
  // and is skipped. Checked here, before any type is read as a tensor.
  // (A data scalar, `f32` or `i8`, is read as a 0-d tensor.)
  for (auto [i, arg] : llvm::enumerate(spec.getArguments()))
    if (!isDataType(arg.getType()) && !arg.use_empty()) {
      spec.emitError() << "shard-partition import: argument " << i
                       << " of type " << arg.getType()
                       << " is not a statically shaped tensor (not modeled)";
      return {};
    }
  auto ret = cast<func::ReturnOp>(spec.getBody().front().getTerminator());
  auto planRet = cast<func::ReturnOp>(plan.getBody().front().getTerminator());
  for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
    // A returned sharding (shard.get_sharding in the input, the constant
    // sharding in the partitioned function) is compared as an attribute.
    if (isa<shard::ShardingType>(v.getType()) &&
        isa<shard::ShardingType>(planRet.getOperand(i).getType())) {
      shard::ShardingOp want = resolvedSharding(v),
                        got = resolvedSharding(planRet.getOperand(i));
      if (!want || !got) {
        ret.emitError() << "shard-partition import: result " << i
                        << " is a sharding tv cannot resolve to a "
                           "shard.sharding (not modeled)";
        return {};
      }
      if (shard::Sharding(want.getResult()) !=
          shard::Sharding(got.getResult())) {
        markWrongPartition();
        InFlightDiagnostic d = planRet.emitError()
                               << "wrong partition: result " << i
                               << " is a sharding other than the input's";
        d.attachNote(want.getLoc()) << "the input's sharding";
        return {};
      }
      continue;
    }
    if (!isDataType(v.getType()) ||
        !(isa<RankedTensorType>(planRet.getOperand(i).getType()) ||
          isDataScalar(planRet.getOperand(i).getType()))) {
      Value bad = isDataType(v.getType()) ? planRet.getOperand(i) : v;
      (isDataType(v.getType()) ? planRet : ret).emitError()
          << "shard-partition import: result " << i << " of type "
          << bad.getType()
          << " is not a statically shaped tensor (not modeled)";
      return {};
    }
  }
  // One tensor's lineages, reported at its annotation (else at `fallback`),
  // its local type checked against the partitioned value `local`.
  auto tensorLineages = [&](StringRef name, Value v, shard::ShardingOp sharding,
                            Operation *fallback, Value local,
                            std::vector<SmallVector<int64_t>> *shapes,
                            std::vector<HaloLayout> *halos) {
    return lineagesOf(sharding ? sharding.getOperation() : fallback, name,
                      dataShape(v.getType()), sharding, grid, lineages,
                      nullptr, local, shapes, halos);
  };
  // Each argument's block shape on each process: a partitioned function
  // with dynamic local types (uneven shards) is specialized per process.
  // Halos: each argument's and result's layout on each process.
  std::vector<std::vector<SmallVector<int64_t>>> argBlocks(
      spec.getNumArguments());
  std::vector<std::vector<HaloLayout>> argHalos(spec.getNumArguments()),
      resultHalos(ret.getNumOperands());
  for (auto [i, arg] : llvm::enumerate(spec.getArguments()))
    if (isDataType(arg.getType()) &&
        failed(tensorLineages("arg" + std::to_string(i), arg,
                              argSharding(arg), spec, plan.getArgument(i),
                              &argBlocks[i], &argHalos[i])))
      return {};
  for (auto [i, v] : llvm::enumerate(ret.getOperands()))
    if (!isa<shard::ShardingType>(v.getType()) &&
        failed(tensorLineages("out" + std::to_string(i), v, resultSharding(v),
                              ret, planRet.getOperand(i), nullptr,
                              &resultHalos[i])))
      return {};
  // This process's halos, by position.
  auto halosOf = [](const std::vector<std::vector<HaloLayout>> &all,
                    int64_t p) {
    std::map<unsigned, HaloLayout> m;
    for (auto [i, perProcess] : llvm::enumerate(all))
      if ((size_t)p < perProcess.size() && !perProcess[p].empty())
        m[i] = perProcess[p];
    return m;
  };

  // The tv module, built op by op with the tv ops' builders.
  OwningOpRef<ModuleOp> out = ModuleOp::create(fileLoc);
  OpBuilder mb = OpBuilder::atBlockEnd(out->getBody());
  {
    SmallVector<std::string> axisNames;
    for (size_t i = 0; i < grid.sizes.size(); ++i)
      axisNames.push_back(Grid::axis(i));
    SmallVector<StringRef> axisRefs(axisNames.begin(), axisNames.end());
    MeshOp::create(mb, gridLoc, mb.getStringAttr("mesh"),
                   mb.getStrArrayAttr(axisRefs),
                   mb.getDenseI64ArrayAttr(grid.sizes));
  }
  std::map<unsigned, Value> specEmpties;
  Block *specBody = nullptr;
  struct FreeInput {
    std::string name;
    RankedTensorType type;
    int64_t process;
  };
  std::vector<FreeInput> freeInputs;
  // Annotated intermediates (decision 93): each value a shard.shard
  // annotates (not for its users) that a single-result op computes, at a
  // location of its own; matched on each process to the last op of the
  // partitioned program at that location whose result has the local type
  // of the value's block there (the op, or the all-reduce the partitioner
  // puts after it).
  struct Intermediate {
    std::string name;
    Value value;
    shard::ShardingOp sharding;
    std::vector<Value> plan; // per process, null where unmatched
  };
  std::vector<Intermediate> inters;
  if (sizes.intermediateCuts && gridOp) {
    DenseSet<Location> seen, repeated;
    spec.walk([&](Operation *op) {
      if (op->getNumResults() && !isa<UnknownLoc>(op->getLoc()) &&
          !seen.insert(op->getLoc()).second)
        repeated.insert(op->getLoc());
    });
    spec.walk([&](shard::ShardOp s) {
      if (s.getAnnotateForUsers())
        return;
      Operation *d = s.getSrc().getDefiningOp();
      auto sh = s.getSharding().getDefiningOp<shard::ShardingOp>();
      auto ty = dyn_cast<RankedTensorType>(s.getSrc().getType());
      if (!d || d->getNumResults() != 1 || isa<UnknownLoc>(d->getLoc()) ||
          repeated.contains(d->getLoc()) ||
          isa<shard::ShardOp, tensor::EmptyOp, linalg::FillOp,
              arith::ConstantOp>(d) ||
          !sh || !ty || !ty.hasStaticShape() ||
          !sh.getStaticHaloSizes().empty() ||
          !sh.getStaticShardedDimsOffsets().empty() ||
          sh.getGridAttr().getValue() != gridOp.getSymName())
        return;
      if (llvm::any_of(inters,
                       [&](const Intermediate &i) { return i.value == s.getSrc(); }))
        return;
      inters.push_back({"v" + std::to_string(inters.size()), s.getSrc(), sh,
                        std::vector<Value>(grid.numProcesses())});
    });
  }
  DenseConstants denseConstants;
  std::unique_ptr<Emitter> specEmitter;
  std::unique_ptr<OpBuilder> specBuilder;
  {
    auto specOp = SpecOp::create(mb, spec.getLoc(), mb.getStringAttr("spec"));
    specBody = new Block();
    specOp.getBody().push_back(specBody);
    specBuilder = std::make_unique<OpBuilder>(OpBuilder::atBlockEnd(specBody));
    specEmitter = std::make_unique<Emitter>(grid, -1, *specBuilder);
    specEmitter->setConstants(&denseConstants);
    if (failed(specEmitter->function(spec)))
      return {};
    specEmpties = specEmitter->readEmpties();
  }
  auto planOp = PlanOp::create(mb, plan.getLoc(), mb.getStringAttr("plan"),
                               FlatSymbolRefAttr::get(ctx, "mesh"),
                               mb.getI64IntegerAttr(1), ArrayAttr(),
                               UnitAttr());
  Block *planBody = new Block();
  planOp.getBody().push_back(planBody);
  OpBuilder pb = OpBuilder::atBlockEnd(planBody);
  std::map<unsigned, std::set<int64_t>> planEmpties;
  std::map<std::pair<unsigned, int64_t>, RankedTensorType> planEmptyTypes;
  // Any dynamic type (uneven shards, a dynamic grid or dimension) makes
  // each process's program its own specialization.
  bool dynamicPlan = false;
  plan.walk([&](Operation *op) {
    for (Type t : llvm::concat<Type>(op->getOperandTypes(),
                                     op->getResultTypes()))
      if (auto ty = dyn_cast<RankedTensorType>(t); ty && !ty.hasStaticShape())
        dynamicPlan = true;
  });
  for (Type t : plan.getArgumentTypes())
    if (auto ty = dyn_cast<RankedTensorType>(t); ty && !ty.hasStaticShape())
      dynamicPlan = true;
  for (int64_t p = 0; p < grid.numProcesses(); ++p) {
    auto prog = RankProgramOp::create(pb, plan.getLoc(),
                                      pb.getDenseI64ArrayAttr({p}));
    Block *body = new Block();
    prog.getBody().push_back(body);
    OpBuilder b = OpBuilder::atBlockEnd(body);
    Emitter e(grid, p, b);
    e.setHalos(halosOf(argHalos, p), halosOf(resultHalos, p));
    std::vector<std::pair<std::string, RankedTensorType>> free;
    e.setFreeInputs(&free);
    e.setConstants(&denseConstants);
    OwningOpRef<ModuleOp> specialized;
    func::FuncOp program = plan;
    if (dynamicPlan) {
      specialized = specializeForProcess(*part, plan, argBlocks, p);
      if (!specialized)
        return {};
      program = specialized->lookupSymbol<func::FuncOp>(plan.getSymName());
    }
    if (failed(e.function(program)))
      return {};
    for (auto &[k, v] : e.readEmpties()) {
      planEmpties[k].insert(p);
      planEmptyTypes[{k, p}] = tvType(v.getType());
    }
    for (auto &[n, ty] : free)
      freeInputs.push_back({n, ty, p});
    // This process's values of the annotated intermediates, tagged.
    if (!inters.empty()) {
      DenseMap<Location, SmallVector<Operation *>> atLoc;
      program.walk([&](Operation *op) {
        if (op->getNumResults() == 1)
          atLoc[op->getLoc()].push_back(op);
      });
      for (Intermediate &in : inters) {
        auto it = atLoc.find(in.value.getDefiningOp()->getLoc());
        if (it == atLoc.end())
          continue;
        Type local = shard::shardType(in.value.getType(), gridOp,
                                      shard::Sharding(in.sharding.getResult()));
        for (Operation *op : llvm::reverse(it->second)) {
          if (op->getResult(0).getType() != local)
            continue;
          if (Value v = e.lookup(op->getResult(0))) {
            in.plan[p] = v;
            TagOp::create(b, op->getLoc(), b.getStringAttr(in.name), v);
          }
          break;
        }
      }
    }
  }
  // An intermediate matched on every process is tagged in the spec and
  // tied by the lineages its sharding gives.
  for (Intermediate &in : inters) {
    Value sv = specEmitter->lookup(in.value);
    if (!sv || llvm::is_contained(in.plan, Value()))
      continue;
    TagOp::create(*specBuilder, in.value.getLoc(),
                  specBuilder->getStringAttr(in.name), sv);
    if (failed(lineagesOf(in.sharding, in.name,
                          cast<RankedTensorType>(in.value.getType()).getShape(),
                          in.sharding, grid, lineages)))
      return {};
  }

  // Undefined values (tensor.empty) read by the input are existential: the
  // partitioned program is correct if, whatever values its own empties
  // hold, some values of the input's make the results equal. Ordinal K of
  // the input is given the values of ordinal K of the first process that
  // holds its block and reads it: a witness, so a proof is sound whichever
  // is chosen (docs/shard.md, "Undefined values").
  for (auto &[k, v] : specEmpties) {
    const std::set<int64_t> &readers = planEmpties[k];
    if (failed(lineagesOf(v.getDefiningOp() ? v.getDefiningOp()
                                            : spec.getOperation(),
                          "empty" + std::to_string(k),
                          cast<RankedTensorType>(v.getType()).getShape(),
                          argSharding(v), grid, lineages,
                          [&](int64_t p) { return readers.count(p) > 0; })))
      return {};
  }
  // Dense constants: each value the processes read is the spec's own (the
  // same attribute, uniqued), tied replica by replica; a constant only one
  // side holds is refused (a block of a spec constant, say, would need its
  // values compared).
  {
    std::map<std::string, std::vector<int64_t>> readers;
    for (auto &[n, p] : denseConstants.used)
      readers[n].push_back(p);
    for (auto &[n, procs] : readers) {
      bool inSpec = procs.front() == -1;
      if (!inSpec || procs.size() == 1) {
        emitError(denseConstants.locs.at(n))
            << "shard-partition import: a dense constant that "
            << (inSpec ? "the partitioned program does not hold"
                       : "the input does not hold")
            << " is not modeled (only the same constant on both sides is)";
        return {};
      }
      RankedTensorType ty = denseConstants.types.at(n);
      SmallVector<int64_t> zero(ty.getRank(), 0);
      SmallVector<Attribute> groups;
      for (int64_t p : ArrayRef<int64_t>(procs).drop_front())
        groups.push_back(ArrayAttr::get(ctx, {PlanRefAttr::get(ctx, n, p)}));
      lineages.emplace_back(
          denseConstants.locs.at(n),
          LineageAttr::get(ctx, StringAttr::get(ctx, n), zero, ty.getShape(),
                           ArrayAttr::get(ctx, groups)));
    }
  }
  // Undefined values the partitioned program reads and no lineage ties to
  // the input's (an empty no witness names, a halo past the grid's edge):
  // each plan input is tied to a spec input of its own that the spec never
  // reads, a free variable of every stage that reaches it. A result that
  // depends on one fails with a counterexample; one that does not (the
  // dependence only through a whole tensor) is proven (docs/shard.md,
  // "Undefined values").
  std::set<std::pair<std::string, int64_t>> named;
  for (auto &[loc, lineage] : lineages)
    lineage.walkRefs(
        [&](size_t, PlanRefView ref) { named.insert({ref.name.str(), ref.rank}); });
  for (auto &[key, ty] : planEmptyTypes) {
    std::string n = "empty" + std::to_string(key.first);
    if (!named.count({n, key.second}))
      freeInputs.push_back({n, ty, key.second});
  }
  OpBuilder sb = OpBuilder::atBlockBegin(specBody);
  for (const FreeInput &f : freeInputs) {
    std::string specName = "free " + f.name + " @" + std::to_string(f.process);
    InputOp::create(sb, plan.getLoc(), f.type, sb.getStringAttr(specName));
    SmallVector<int64_t> zero(f.type.getRank(), 0);
    lineages.emplace_back(
        plan.getLoc(),
        LineageAttr::get(
            ctx, sb.getStringAttr(specName), zero, f.type.getShape(),
            ArrayAttr::get(ctx, {ArrayAttr::get(ctx, {PlanRefAttr::get(
                                                         ctx, f.name,
                                                         f.process)})})));
  }
  for (auto &[loc, lineage] : lineages)
    LineageOp::create(mb, loc, lineage);
  // The ops' verifiers, as the parser ran them on the text this replaced: a
  // failure here is an importer defect, reported as one.
  if (failed(verify(*out))) {
    emitError(fileLoc) << "shard-partition import: internal error, the "
                          "translated module does not verify";
    return {};
  }
  return out;
}

OwningOpRef<Operation *>
mlir::tv::importShardPartition(llvm::SourceMgr &sourceMgr, MLIRContext *ctx) {
  Location fileLoc =
      inputFileLoc(sourceMgr, ctx);
  if (partitionedFile.empty()) {
    emitError(fileLoc) << "--import-shard-partition needs --partitioned=FILE "
                          "(the output of shard-partition for this input)";
    return {};
  }
  if (!llvm::sys::fs::exists(partitionedFile)) {
    emitError(fileLoc) << "--partitioned: cannot open '" << partitionedFile
                       << "'";
    return {};
  }
  // Diagnostics on the pair's ops point at their source lines; the op's
  // generic form after each (mlir-translate's default) would only repeat it.
  ctx->printOpOnDiagnostic(false);
  // Both files are scanned for nesting before MLIR's recursive parser reads
  // them.
  if (failed(checkMlirNesting(sourceMgr, ctx)) ||
      failed(checkMlirNestingOfFile(partitionedFile, ctx)))
    return {};
  OwningOpRef<ModuleOp> input = parseSourceFile<ModuleOp>(sourceMgr, ctx);
  OwningOpRef<ModuleOp> part = parseSourceFile<ModuleOp>(partitionedFile, ctx);
  if (!input || !part)
    return {};
  FailureOr<ShardSizes> sizes =
      ShardSizes::parse(shardGridShape, shardDimSize, fileLoc);
  if (failed(sizes))
    return {};
  sizes->intermediateCuts = shardIntermediates;
  return buildShardValidation(*input, *part, shardFunction, fileLoc, *sizes);
}

void mlir::tv::registerShardImportDialects(DialectRegistry &registry) {
  registry.insert<tv::TVDialect>();
  registerUpstreamDialects(registry);
}

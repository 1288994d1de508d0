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
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include "llvm/Support/Format.h"
#include <cmath>
#include <map>
#include <numeric>

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

LogicalResult mlir::tv::refuseShardImportOptions(Location loc,
                                                 StringRef translation) {
  for (const llvm::cl::Option *o :
       std::initializer_list<const llvm::cl::Option *>{&partitionedFile,
                                                       &shardFunction})
    if (o->getNumOccurrences())
      return emitError(loc) << "--" << o->ArgStr
                            << " applies to --import-shard-partition only, "
                               "not to --"
                            << translation;
  return success();
}

namespace {

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

} // namespace

OwningOpRef<ModuleOp>
mlir::tv::buildShardValidation(ModuleOp inputModule, ModuleOp partModule,
                               StringRef function, Location fileLoc) {
  ModuleOp *input = &inputModule, *part = &partModule;
  MLIRContext *ctx = inputModule.getContext();
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
  if (grids.size() != 1 || inFns.size() != 1) {
    InFlightDiagnostic d = emitError(fileLoc)
                           << "shard-partition import: the input must hold "
                              "one shard.grid and one func.func (it has "
                           << grids.size() << " and " << inFns.size() << ")";
    if (inFns.size() > 1)
      d << "; name one with --shard-function";
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
  ctx->loadDialect<TVDialect>();
  OwningOpRef<ModuleOp> out = parseSourceString<ModuleOp>(text, ctx, "shard");
  if (!out)
    emitError(fileLoc) << "shard-partition import: internal error, the "
                          "translated module does not parse";
  return out;
}

static OwningOpRef<Operation *>
importShardPartition(llvm::SourceMgr &sourceMgr, MLIRContext *ctx) {
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
  OwningOpRef<ModuleOp> input = parseSourceFile<ModuleOp>(sourceMgr, ctx);
  OwningOpRef<ModuleOp> part = parseSourceFile<ModuleOp>(partitionedFile, ctx);
  if (!input || !part)
    return {};
  return buildShardValidation(*input, *part, shardFunction, fileLoc);
}

void mlir::tv::registerShardImport() {
  static TranslateToMLIRRegistration reg(
      "import-shard-partition",
      "MLIR's shard-partition: an annotated function and its partitioned "
      "output (--partitioned) to a tv module",
      [](llvm::SourceMgr &sourceMgr, MLIRContext *ctx) {
        Location loc = inputFileLoc(sourceMgr, ctx);
        if (failed(refuseModelConfigOptions(loc, "import-shard-partition")))
          return OwningOpRef<Operation *>();
        return importShardPartition(sourceMgr, ctx);
      },
      [](DialectRegistry &registry) {
        registry.insert<tv::TVDialect>();
        registerUpstreamDialects(registry);
      });
}

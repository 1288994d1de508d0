//===- ValidateShardPartition.cpp - --tv-validate-shard-partition ---------===//
//
// Translation validation in a compiler's own pipeline: MLIR's partitioner
// runs on a clone, and tv proves the clone's function a correct plan for
// the annotated one (docs/shard-validation.md).
//
//===----------------------------------------------------------------------===//
#include "TrainVerify/Transforms/Passes.h"
#include "TrainVerify/Transforms/Utils.h"
#include "TrainVerify/Translate/Translations.h"
#include "TrainVerify/Upstream/Registration.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Program.h"

namespace mlir::tv {
#define GEN_PASS_DEF_TVVALIDATESHARDPARTITION
#include "TrainVerify/Transforms/Passes.h.inc"
} // namespace mlir::tv

using namespace mlir;
using namespace mlir::tv;

namespace {
struct ValidateShardPartitionPass
    : public tv::impl::TVValidateShardPartitionBase<
          ValidateShardPartitionPass> {
  using TVValidateShardPartitionBase::TVValidateShardPartitionBase;

  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<TVDialect>();
    registerUpstreamDialects(registry);
  }

  /// Runs `pipeline` on `module` in a child tv-opt; the result, or null
  /// with a diagnostic.
  OwningOpRef<ModuleOp> partitionInChild(ModuleOp module,
                                         StringRef pipeline) {
    auto fail = [&](const Twine &why) {
      module.emitError() << "the partitioning pipeline '" << pipeline
                         << "' " << why;
      return OwningOpRef<ModuleOp>();
    };
    SmallString<128> in, out, err;
    for (auto [path, ext] : {std::pair(&in, "mlir"), std::pair(&out, "mlir"),
                             std::pair(&err, "txt")})
      if (llvm::sys::fs::createTemporaryFile("tv-shard", ext, *path))
        return fail("cannot create a temporary file");
    llvm::scope_exit cleanup([&] {
      for (SmallString<128> *p : {&in, &out, &err})
        llvm::sys::fs::remove(*p);
    });
    {
      std::error_code ec;
      llvm::raw_fd_ostream os(in, ec);
      if (ec)
        return fail("cannot write its input");
      module.print(os, OpPrintingFlags().enableDebugInfo());
    }
    std::string self = llvm::sys::fs::getMainExecutable(
        nullptr, (void *)&registerUpstreamDialects);
    std::string pipe = ("--pass-pipeline=" + pipeline).str();
    SmallVector<StringRef> args = {self, "--mlir-print-debuginfo", pipe,
                                   in, "-o", out};
    std::optional<StringRef> redirects[] = {std::nullopt, std::nullopt,
                                            StringRef(err)};
    std::string msg;
    int rc = llvm::sys::ExecuteAndWait(self, args, std::nullopt, redirects,
                                       /*SecondsToWait=*/0,
                                       /*MemoryLimit=*/0, &msg);
    if (rc != 0) {
      std::string first;
      if (auto buf = llvm::MemoryBuffer::getFile(err))
        first = (*buf)->getBuffer().split('\n').first.str();
      return fail(rc < 0 ? "crashed inside MLIR (" + msg + ")"
                         : "failed: " + first);
    }
    OwningOpRef<ModuleOp> result =
        parseSourceFile<ModuleOp>(out.str(), &getContext());
    if (!result)
      return fail("printed a module tv cannot read back");
    return result;
  }

  /// The sharding-propagation element of `pipeline` (with its options),
  /// or "" when the pipeline does not propagate.
  static std::string propagationOf(StringRef pipeline) {
    size_t at = pipeline.find("sharding-propagation");
    if (at == StringRef::npos)
      return "";
    size_t end = at + StringRef("sharding-propagation").size();
    if (end < pipeline.size() && pipeline[end] == '{') {
      size_t close = pipeline.find('}', end);
      end = close == StringRef::npos ? pipeline.size() : close + 1;
    }
    return pipeline.slice(at, end).str();
  }

  /// One validation of `f` with the annotated intermediates as stage cuts:
  /// success only if every stage is proven; its diagnostics are kept back
  /// (the remarks replayed on success) and the verdict restored otherwise,
  /// `why` then holding its first error.
  LogicalResult attemptWithCuts(ModuleOp spec, ModuleOp partitioned,
                                func::FuncOp f, ShardSizes sizes,
                                std::string &why) {
    MLIRContext *ctx = &getContext();
    struct Kept {
      Location loc;
      DiagnosticSeverity severity;
      std::string message;
    };
    std::vector<Kept> kept;
    Verdict before = toolVerdict();
    bool wrongBefore = translationFoundWrongProgram();
    LogicalResult result = failure();
    {
      ScopedDiagnosticHandler capture(ctx, [&](Diagnostic &d) {
        kept.push_back({d.getLocation(), d.getSeverity(), d.str()});
        return success();
      });
      verifyAttemptOnly() = true;
      auto restore = llvm::make_scope_exit([] { verifyAttemptOnly() = false; });
      sizes.intermediateCuts = true;
      OwningOpRef<ModuleOp> plan =
          buildShardValidation(spec, partitioned, f.getSymName(), f.getLoc(),
                               sizes);
      if (plan) {
        PassManager verify(ctx, ModuleOp::getOperationName());
        buildVerifyPipeline(verify, TVVerifyOptions(), /*fold=*/true);
        result = verify.run(*plan);
      }
    }
    if (succeeded(result)) {
      for (const Kept &k : kept)
        if (k.severity != DiagnosticSeverity::Error)
          emitDiagnostic(k.loc, k.severity, k.message);
      return success();
    }
    toolVerdict() = before;
    translationFoundWrongProgram() = wrongBefore;
    for (const Kept &k : kept)
      if (k.severity == DiagnosticSeverity::Error) {
        why = k.message;
        break;
      }
    return failure();
  }

  static void emitDiagnostic(Location loc, DiagnosticSeverity severity,
                             const std::string &message) {
    switch (severity) {
    case DiagnosticSeverity::Remark:
      emitRemark(loc) << message;
      break;
    case DiagnosticSeverity::Warning:
      emitWarning(loc) << message;
      break;
    default:
      break; // notes went with their diagnostic
    }
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<func::FuncOp> annotated;
    for (auto f : module.getOps<func::FuncOp>())
      if (!f.getOps<shard::ShardOp>().empty())
        annotated.push_back(f);
    // Nothing annotated: the partitioner leaves the module as it is, and
    // there is nothing to validate (a warning, not a failure of the
    // compiler's pipeline).
    if (annotated.empty()) {
      module.emitWarning() << "no function annotated with shard.shard to "
                              "validate";
      markAllAnalysesPreserved();
      return;
    }
    // The partitioner, as the compiler would run it, on a copy, in a child
    // tv-opt: Debian's MLIR has no assertions, and a partitioner that
    // crashes on an input it mishandles must not take tv down with it.
    OwningOpRef<ModuleOp> partitioned = partitionInChild(module, pipeline.getValue());
    if (!partitioned)
      return signalPassFailure();
    // The partitioner partitions what propagation annotated: the spec's
    // lineages come from the module as it stands after propagation (the
    // annotations the compiler's pipeline itself adds), not before.
    OwningOpRef<ModuleOp> propagated;
    std::string propagation = propagationOf(pipeline.getValue());
    if (!propagation.empty()) {
      // In process, on a copy: the child above has already run it on this
      // input without crashing, and MLIR 22.1.8 prints a 0-d tensor's
      // propagated sharding as `split_axes = []`, which its own parser (text
      // or bytecode) refuses, so the result cannot come back as text.
      propagated = OwningOpRef<ModuleOp>(cast<ModuleOp>(module->clone()));
      PassManager pm(&getContext(), ModuleOp::getOperationName());
      std::string text = "func.func(" + propagation + ")";
      if (failed(parsePassPipeline(text, pm)) || failed(pm.run(*propagated))) {
        module.emitError() << "sharding propagation ('" << propagation
                           << "') failed on a copy of the module";
        return signalPassFailure();
      }
    }
    ModuleOp spec = propagated ? *propagated : module;
    FailureOr<ShardSizes> sizes =
        ShardSizes::parse(gridShape, dimSize, module.getLoc());
    if (failed(sizes))
      return signalPassFailure();
    bool ok = true;
    for (func::FuncOp f : annotated) {
      // A function without tensor results computes nothing to compare.
      if (llvm::none_of(f.getResultTypes(), llvm::IsaPred<TensorType>)) {
        f.emitWarning() << "@" << f.getSymName()
                        << " has no tensor result: nothing to validate";
        continue;
      }
      // First with the annotated intermediates as stage cuts (small
      // stages); a cut that does not hold, or anything else short of a
      // proof, and the function is validated end to end instead, with that
      // run's diagnostics and verdict (decision 93).
      std::string cutFailure;
      // Each function's outcome is said at the function (a module may hold
      // several, each on its own grid).
      auto proven = [&](StringRef how) {
        f.emitRemark() << "@" << f.getSymName()
                       << ": shard-partition's output proven a correct plan "
                          "for it ("
                       << how << ")";
      };
      if (intermediateCuts && succeeded(attemptWithCuts(spec, *partitioned, f,
                                                        *sizes, cutFailure))) {
        proven("with its annotated intermediates as cuts");
        continue;
      }
      translationFoundWrongProgram() = false;
      OwningOpRef<ModuleOp> plan =
          buildShardValidation(spec, *partitioned, f.getSymName(), f.getLoc(),
                               *sizes);
      if (!plan) {
        // A partition that does not match its annotations is wrong (exit
        // 1); anything else the import refuses is an input error.
        if (translationFoundWrongProgram())
          toolVerdict() = Verdict::Wrong;
        ok = false;
        continue;
      }
      PassManager verify(&getContext(), ModuleOp::getOperationName());
      buildVerifyPipeline(verify, TVVerifyOptions(), /*fold=*/true);
      if (failed(verify.run(*plan))) {
        InFlightDiagnostic d = f.emitError()
                               << "shard-partition's output for @"
                               << f.getSymName()
                               << " is not proven a correct plan for it";
        if (!cutFailure.empty())
          d.attachNote() << "with the annotated intermediates as cuts: "
                         << cutFailure;
        ok = false;
      } else {
        proven("end to end");
      }
    }
    if (!ok)
      signalPassFailure();
    markAllAnalysesPreserved();
  }
};
} // namespace

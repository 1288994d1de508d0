//===- tv-opt.cpp - the tv pass driver ------------------------------------===//
#include "TrainVerify/Dialect/InputLimits.h"
#include "TrainVerify/Dialect/LongLineDiagnostics.h"
#include "TrainVerify/Dialect/TVOps.h"
#include "TrainVerify/Transforms/Passes.h"
#include "TrainVerify/Transforms/Utils.h"
#include "TrainVerify/Upstream/Registration.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/ToolOutputFile.h"
#include <cstdio>

/// MLIR's mlir-opt driver, with the input's nesting checked between reading
/// and parsing it (the input may be stdin, which is read once).
static mlir::LogicalResult runOpt(int argc, char **argv,
                                  llvm::StringRef inputFilename,
                                  llvm::StringRef outputFilename,
                                  mlir::DialectRegistry &registry) {
  mlir::MlirOptMainConfig config = mlir::MlirOptMainConfig::createFromCLOptions();
  if (config.shouldShowDialects() || config.shouldListPasses())
    return mlir::MlirOptMain(argc, argv, inputFilename, outputFilename,
                             registry);
  llvm::InitLLVM y(argc, argv);
  if (inputFilename == "-" &&
      llvm::sys::Process::FileDescriptorIsDisplayed(fileno(stdin)))
    llvm::errs() << "(processing input from stdin now, hit ctrl-c/ctrl-d to "
                    "interrupt)\n";
  std::string errorMessage;
  std::unique_ptr<llvm::MemoryBuffer> file =
      mlir::openInputFile(inputFilename, &errorMessage);
  if (!file) {
    llvm::errs() << errorMessage << "\n";
    return mlir::failure();
  }
  if (mlir::failed(mlir::tv::checkMlirNesting(
          file->getBuffer(), file->getBufferIdentifier(), llvm::errs())))
    return mlir::failure();
  std::unique_ptr<llvm::ToolOutputFile> output =
      mlir::openOutputFile(outputFilename, &errorMessage);
  if (!output) {
    llvm::errs() << errorMessage << "\n";
    return mlir::failure();
  }
  if (mlir::failed(
          mlir::MlirOptMain(output->os(), std::move(file), registry, config)))
    return mlir::failure();
  output->keep();
  return mlir::success();
}

int main(int argc, char **argv) {
  mlir::tv::toolStartTime() = std::chrono::steady_clock::now();
  mlir::tv::registerTVPasses();
  mlir::tv::registerTVPipelines();
  mlir::tv::registerUpstreamPasses();
  mlir::DialectRegistry registry;
  registry.insert<mlir::tv::TVDialect>();
  // Plans imported from one-line JSON carry locations on megabyte lines
  // (not under --verify-diagnostics, whose handler must see every one).
  bool verifying = false;
  for (int i = 1; i < argc; ++i)
    verifying |= llvm::StringRef(argv[i]).ltrim('-').starts_with(
        "verify-diagnostics");
  if (!verifying)
    registry.addExtension(+[](mlir::MLIRContext *ctx, mlir::tv::TVDialect *) {
      mlir::tv::addLongLineDiagnostics(ctx);
    });
  // The IR of MLIR-based training compilers around MLIR's partitioner.
  mlir::tv::registerUpstreamDialects(registry);
  mlir::tv::setUpToolOptions("tv-opt");
  std::vector<char *> args =
      mlir::tv::withLocations(mlir::tv::withQuietOpDiagnostics(argc, argv));
  int n = (int)args.size();
  // --help lists the bug classes from their registry.
  static const std::string bugHelp = mlir::tv::bugClassesText();
  static llvm::cl::extrahelp bugClasses(bugHelp);
  static llvm::cl::opt<bool> listBugClasses(
      "tv-list-bug-classes",
      llvm::cl::desc("Print the classes of --tv-inject-bug as Markdown "
                     "(docs/reference/BugClasses.md) and exit"));
  auto [in, out] = mlir::registerAndParseCLIOptions(
      n, args.data(), "tv training-plan verifier\n", registry);
  if (listBugClasses) {
    llvm::outs() << mlir::tv::bugClassesMarkdown();
    return 0;
  }
  return mlir::tv::exitStatus(runOpt(n, args.data(), in, out, registry));
}

//===- tv-translate.cpp - importers and exporters of tv modules -----------===//
#include "TrainVerify/Dialect/TVOps.h"
#include "TrainVerify/Translate/Translations.h"
#include "TrainVerify/Transforms/Utils.h"

#include "mlir/Tools/mlir-translate/MlirTranslateMain.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/raw_ostream.h"

int main(int argc, char **argv) {
  mlir::tv::registerTVTranslations();
  mlir::tv::setUpToolOptions("tv-translate");
  // Without a translation the command line parser would repeat its
  // complaint once per registered option: say it once, with the choices.
  bool named = false, info = false;
  for (int i = 1; i < argc; ++i) {
    llvm::StringRef arg = llvm::StringRef(argv[i]).ltrim('-');
    arg = arg.split('=').first;
    named |= llvm::is_contained(mlir::tv::tvTranslationNames(), arg);
    info |= arg.starts_with("help") || arg == "version";
  }
  if (!named && !info) {
    llvm::errs() << "tv-translate: name one translation:";
    for (llvm::StringRef n : mlir::tv::tvTranslationNames())
      llvm::errs() << " --" << n;
    llvm::errs() << " (--help lists them)\n";
    return 3;
  }
  // An imported module carries its ops' locations in the user's file.
  std::vector<char *> args =
      mlir::tv::withLocations(mlir::tv::withQuietOpDiagnostics(argc, argv));
  mlir::LogicalResult result = mlir::mlirTranslateMain(
      (int)args.size(), args.data(), "tv importers and exporters\n");
  // An import that found a wrong program (a partition that does not match
  // its annotations) is a counterexample, not an input error.
  if (mlir::failed(result) && mlir::tv::translationFoundWrongProgram())
    mlir::tv::toolVerdict() = mlir::tv::Verdict::Wrong;
  return mlir::tv::exitStatus(result);
}

//===- Utils.cpp - helpers shared by the tv passes ------------------------===//
#include "TrainVerify/Transforms/Utils.h"

#include "llvm/ADT/StringMap.h"
#include <mutex>

using namespace mlir;
using namespace mlir::tv;

std::vector<char *> mlir::tv::withQuietOpDiagnostics(int argc, char **argv) {
  std::vector<char *> args(argv, argv + argc);
  for (int i = 1; i < argc; ++i)
    if (StringRef(argv[i]).contains("print-op-on-diagnostic"))
      return args;
  static char quiet[] = "--mlir-print-op-on-diagnostic=false";
  args.insert(args.begin() + 1, quiet);
  return args;
}

std::chrono::steady_clock::time_point &mlir::tv::toolStartTime() {
  static std::chrono::steady_clock::time_point start =
      std::chrono::steady_clock::now();
  return start;
}

namespace {
struct TimingRegistry {
  std::mutex mutex;
  llvm::StringMap<double> seconds;
};
TimingRegistry &registry() {
  static TimingRegistry r;
  return r;
}
} // namespace

PhaseTimer::PhaseTimer(ModuleOp module, StringRef phase)
    : module(module), phase(phase.str()),
      start(std::chrono::steady_clock::now()) {
  TimingRegistry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  if (!r.seconds.count("parse"))
    r.seconds["parse"] =
        std::chrono::duration<double>(start - toolStartTime()).count();
}

PhaseTimer::~PhaseTimer() {
  TimingRegistry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.seconds[phase] +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
}

double mlir::tv::phaseSeconds(ModuleOp, StringRef phase) {
  TimingRegistry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  return r.seconds.lookup(phase);
}

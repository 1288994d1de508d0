//===- Utils.cpp - helpers shared by the tv passes ------------------------===//
#include "TrainVerify/Transforms/Utils.h"
#include "TrainVerify/Transforms/RunStatus.h"
#include "TrainVerify/Dialect/InputLimits.h"

#include "llvm/Config/llvm-config.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"
#include <cstring>
#include <link.h>


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

std::vector<char *> mlir::tv::withLocations(std::vector<char *> args) {
  for (size_t i = 1; i < args.size(); ++i)
    if (StringRef(args[i]).contains("print-debuginfo"))
      return args;
  static char locations[] = "--mlir-print-debuginfo";
  args.insert(args.begin() + 1, locations);
  return args;
}

void mlir::tv::setUpToolOptions(StringRef tool) {
  static std::string name = tool.str();
  llvm::cl::SetVersionPrinter([](llvm::raw_ostream &os) {
    os << name << " (tv, the training-plan verifier) built with LLVM/MLIR "
       << LLVM_VERSION_STRING << "\n";
  });
  // Options whose storage lives in another shared object than this tool's
  // code come from libLLVM (its targets' code-generation flags): hidden,
  // but for the generic ones a user needs. The objects' loaded segments are
  // read once (dladdr per option searched libLLVM's symbol table each time:
  // 0.4 s at every start of every tool).
  struct Segment {
    uintptr_t begin, end;
    unsigned object;
  };
  struct Objects {
    std::vector<Segment> segments;
    unsigned count = 0;
  } objects;
  auto collect = [](struct dl_phdr_info *info, size_t, void *data) -> int {
    auto &objs = *static_cast<Objects *>(data);
    unsigned object = objs.count++;
    for (unsigned i = 0; i < info->dlpi_phnum; ++i) {
      const auto &ph = info->dlpi_phdr[i];
      if (ph.p_type == PT_LOAD && ph.p_memsz > 0)
        objs.segments.push_back({info->dlpi_addr + ph.p_vaddr,
                                 info->dlpi_addr + ph.p_vaddr + ph.p_memsz,
                                 object});
    }
    return 0;
  };
  dl_iterate_phdr(collect, &objects);
  auto objectOf = [&](const void *p) -> int {
    auto addr = reinterpret_cast<uintptr_t>(p);
    for (const Segment &s : objects.segments)
      if (addr >= s.begin && addr < s.end)
        return s.object;
    return -1;
  };
  int self = objectOf((const void *)&setUpToolOptions);
  if (self < 0)
    return;
  static const char *keep[] = {"help", "help-hidden", "help-list",
                               "help-list-hidden", "version", "color"};
  for (auto &entry : llvm::cl::getRegisteredOptions()) {
    if (llvm::is_contained(keep, entry.first))
      continue;
    int object = objectOf(entry.second);
    if (object >= 0 && object != self)
      entry.second->setHiddenFlag(llvm::cl::ReallyHidden);
  }
}

Verdict &mlir::tv::toolVerdict() {
  static Verdict v = Verdict::None;
  return v;
}

bool &mlir::tv::verifyAttemptOnly() {
  static bool attempt = false;
  return attempt;
}

int mlir::tv::exitStatus(LogicalResult result) { return finishRun(result); }

std::chrono::steady_clock::time_point &mlir::tv::toolStartTime() {
  // The drivers call this first: the signals a parent left ignored are
  // noted too, before LLVM installs its handlers over them (RunStatus.h).
  static bool noted = (noteInitialSignals(), true);
  (void)noted;
  static std::chrono::steady_clock::time_point start =
      std::chrono::steady_clock::now();
  return start;
}

static PhaseClock &clockOf(Operation *op) {
  return op->getContext()->getLoadedDialect<TVDialect>()->getPhaseClock();
}

PhaseTimer::PhaseTimer(Operation *op, StringRef phase)
    : op(op), phase(phase.str()), start(std::chrono::steady_clock::now()) {
  PhaseClock &clock = clockOf(op);
  if (!clock.has("parse"))
    clock.record("parse", toolStartTime(), start);
}

PhaseTimer::~PhaseTimer() {
  clockOf(op).record(phase, start, std::chrono::steady_clock::now());
}

double mlir::tv::phaseSeconds(Operation *op, StringRef phase) {
  return clockOf(op).seconds(phase);
}

uint64_t mlir::tv::programElements(Operation *root) {
  uint64_t total = 0;
  root->walk([&](Operation *op) {
    uint64_t copies = 1;
    if (auto prog = op->getParentOfType<RankProgramOp>())
      copies = std::max<uint64_t>(1, prog.getRanks().size());
    auto add = [&](Type t) {
      if (auto tt = dyn_cast<RankedTensorType>(t))
        total = satAdd(total, satMul(copies, satElements(tt.getShape())));
    };
    for (Type t : op->getResultTypes())
      add(t);
    for (Region &r : op->getRegions())
      for (Block &b : r)
        for (BlockArgument a : b.getArguments())
          add(a.getType());
  });
  return total;
}

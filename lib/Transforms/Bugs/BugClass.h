//===- BugClass.h - the registry of --tv-inject-bug's classes ---*- C++ -*-===//
//
// Each class of real distributed-training bug that --tv-inject-bug can put
// into a correct plan: its name, its family, what it does, which ops are
// its candidates and how it mutates the one chosen. The pass, its --help
// and docs/reference/BugClasses.md read this registry, so they list the
// same classes.
//
//===----------------------------------------------------------------------===//
#ifndef TRAINVERIFY_TRANSFORMS_BUGS_BUGCLASS_H
#define TRAINVERIFY_TRANSFORMS_BUGS_BUGCLASS_H

#include "TrainVerify/Dialect/TVOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

#include <functional>

namespace mlir::tv::bugs {

/// Where a class's candidates are looked for, and (for the mutation) the
/// op chosen: the module's plan and mesh, then the rank program, the op,
/// the rank it was chosen on and the `index` asked for.
struct BugSite {
  ModuleOp module;
  PlanOp plan;
  MeshOp mesh;
  StringRef name;
  RankProgramOp prog;
  Operation *target = nullptr;
  int64_t rank = -1;
  int index = 0;
  /// Marks `op` as edited (`injected_bug`): the op a counterexample should
  /// blame.
  void tag(Operation *op) const;
};

using Candidates = std::function<bool(Operation *)>;

struct BugClass {
  const char *name;
  /// The family it belongs to (a heading of the listing).
  const char *family;
  /// What it does, in one or two sentences.
  const char *summary;
  /// The ops it can mutate in the site's plan.
  Candidates (*candidates)(const BugSite &site);
  /// Mutates `site.target`; fails with a diagnostic when the plan cannot
  /// take the bug.
  LogicalResult (*mutate)(BugSite &site);
  /// Given a rank program of its own (the bug is on one rank only).
  bool singleRank = false;
  /// Candidates counted from the end of the program.
  bool fromEnd = false;
  /// Every candidate of every program is mutated (a collective that spans
  /// two programs, mutated on one only, deadlocks).
  bool everyCandidate = false;
  /// What a plan needs to have a candidate, said when it has none.
  const char *needs = nullptr;
  /// Mutates the program as written, before canonicalization (which gives
  /// asynchronous ops their synchronous meaning and named buffers their
  /// versions): the races of overlapped communication.
  bool temporal = false;
};

/// Every class, grouped by family, in a fixed order.
ArrayRef<BugClass> bugClasses();
const BugClass *lookupBugClass(StringRef name);
/// The classes as a Markdown page (docs/reference/BugClasses.md) or as
/// plain text (--help).
std::string bugClassesMarkdown();
std::string bugClassesText();

// The families, each in a file of its own.
void addCollectiveBugs(std::vector<BugClass> &out);
void addComputeBugs(std::vector<BugClass> &out);
void addGradientBugs(std::vector<BugClass> &out);
void addModelParallelBugs(std::vector<BugClass> &out);
void addShardingBugs(std::vector<BugClass> &out);
void addContextParallelBugs(std::vector<BugClass> &out);
void addOverlapBugs(std::vector<BugClass> &out);
void addClippingBugs(std::vector<BugClass> &out);

// Helpers shared by the families.
/// Replaces `op` (one result) by a copy of `input` that keeps its
/// discardable attributes (`mb`, ...) and is tagged with the bug class.
void replaceByCopy(Operation *op, Value input, StringRef bug);
/// The mutation of every class that turns an all-reduce into a copy.
LogicalResult allReduceToCopy(BugSite &site);
/// Whether a collective's axes are exactly `axis`.
bool onlyAxis(std::optional<ArrayAttr> axes, StringRef axis);
/// Whether `v` reaches, through collectives, chunks and copies only (the
/// end-of-step gradient reductions and sharding), a tv.output whose name
/// satisfies `pred`.
bool reachesOutput(Value v, llvm::function_ref<bool(StringRef)> pred,
                   int depth = 0);
/// An end-of-step reduction: `v` reaches, through collectives only, an
/// output that is a gradient (neither the loss nor an updated parameter).
bool isGradReduction(Value v);
/// Swaps every use of `a` with every use of `b`.
void swapUses(Value a, Value b);

} // namespace mlir::tv::bugs

#endif

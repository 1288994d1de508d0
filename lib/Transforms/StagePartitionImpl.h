//===- StagePartitionImpl.h - the stage partitioner, inside -----*- C++ -*-===//
//
// The partitioner of --tv-stage-partition: StageDraft.cpp finds each
// stage's ops (the spec and plan ops between a lineage-carrying tensor and
// the nearest ones above it), StagePartition.cpp emits the stages.
//
//===----------------------------------------------------------------------===//
#ifndef TRAINVERIFY_LIB_TRANSFORMS_STAGEPARTITIONIMPL_H
#define TRAINVERIFY_LIB_TRANSFORMS_STAGEPARTITIONIMPL_H

#include "TrainVerify/Dialect/Lineage.h"
#include "TrainVerify/Transforms/RunStatus.h"
#include "TrainVerify/Transforms/Utils.h"
#include "TrainVerify/Verify/Executor.h"
#include "TrainVerify/Semantics/Semantics.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Threading.h"
#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/ErrorHandling.h"
#include <map>
#include <set>

namespace mlir::tv::partition {

using RankValue = std::pair<int64_t, Value>;
struct RankValueLess {
  bool operator()(const RankValue &a, const RankValue &b) const {
    if (a.first != b.first)
      return a.first < b.first;
    return a.second.getAsOpaquePointer() < b.second.getAsOpaquePointer();
  }
};

/// A spec tensor's statements: runs of the module's statements (a lineage
/// map's boxes, a plain statement), in module order, read in place (no copy
/// per statement: tens of millions on large plans).
class LineageRuns {
public:
  class iterator
      : public llvm::iterator_facade_base<iterator, std::forward_iterator_tag,
                                          const LineageView> {
  public:
    iterator() = default;
    iterator(const ArrayRef<LineageView> *run, const ArrayRef<LineageView> *end)
        : run(run), end(end) {
      skipEmpty();
    }
    bool operator==(const iterator &o) const {
      return run == o.run && pos == o.pos;
    }
    const LineageView &operator*() const { return (*run)[pos]; }
    iterator &operator++() {
      if (++pos == run->size()) {
        ++run;
        pos = 0;
        skipEmpty();
      }
      return *this;
    }

  private:
    void skipEmpty() {
      while (run != end && run->empty())
        ++run;
    }
    const ArrayRef<LineageView> *run = nullptr, *end = nullptr;
    size_t pos = 0;
  };
  void append(ArrayRef<LineageView> run) {
    runs.push_back(run);
    count += run.size();
  }
  size_t size() const { return count; }
  bool empty() const { return count == 0; }
  iterator begin() const { return iterator(runs.begin(), runs.end()); }
  iterator end() const { return iterator(runs.end(), runs.end()); }

private:
  SmallVector<ArrayRef<LineageView>, 1> runs;
  size_t count = 0;
};

/// A plan tensor that carries a lineage: its spec tensor and its name.
struct PlanCut {
  StringRef spec; // storage of the lineage attributes (lives in the context)
  StringRef name;
};

/// Names given to values by tv.input / tv.tag / tv.output in one block.
struct NameTable {
  llvm::StringMap<Value> valueOf;
  DenseMap<Value, SmallVector<std::string, 1>> namesOf;
  void build(Block &block) {
    for (Operation &op : block) {
      if (auto in = dyn_cast<InputOp>(op))
        add(in.getName(), in.getResult());
      else if (auto tag = dyn_cast<TagOp>(op))
        add(tag.getName(), tag.getValue());
      else if (auto out = dyn_cast<OutputOp>(op))
        add(out.getName(), out.getValue());
    }
  }
  void add(StringRef name, Value v) {
    valueOf[name] = v;
    namesOf[v].push_back(name.str());
  }
};

/// Ranks of one rank program, as positions in its rank list.
using RankSet = llvm::BitVector;

struct StageDraft {
  std::string target;
  Value specValue;
  llvm::SetVector<Operation *> specOps;
  llvm::SetVector<Value> specInputs; // boundary values of the spec cone
  /// The plan ops of the stage, each with the ranks of its program that run
  /// it in the stage. The cone is walked once per value with a set of ranks,
  /// not once per (rank, value): the ranks of a program share its ops, and
  /// split only where cuts or communication differ between them.
  DenseMap<Operation *, RankSet> planOps;
  /// Plan tensors the stage assumes, by (rank, value): each at most once (a
  /// rank reaches a value once), sorted by rank and value when emitted.
  struct PlanInput {
    int64_t rank;
    Value value;
    PlanCut cut;
  };
  std::vector<PlanInput> planInputs;
  /// Plan tensors the stage guarantees, sorted by (rank, value), each
  /// name once: a plan value can carry several (folded aliases).
  struct PlanTarget {
    int64_t rank;
    Value value;
    StringRef name; // lives in the context
  };
  std::vector<PlanTarget> planTargets;
  std::set<std::string> assumedSpecs;
  /// Partly covered spec tensors the stage recomputes (name, value).
  std::vector<std::pair<std::string, Value>> recomputed;

  // What emit() writes, computed by prepare() (in parallel across stages).
  SmallVector<Attribute> assumes;
  SmallVector<Operation *> specOrder; // specOps in block order
  /// Ranks that run the same slice of the same program, with the same
  /// inputs and targets.
  struct Group {
    Operation *prog;
    SmallVector<int64_t> ranks;
    SmallVector<Operation *> ops; // in block order, no tv.input
    std::vector<std::pair<void *, StringRef>> inputs, targets;
  };
  std::vector<Group> groups;
};

class Partitioner {
public:
  Partitioner(ModuleOp module, int64_t sourceElements, bool writeMaps)
      : sourceElements(sourceElements), writeMaps(writeMaps), module(module) {}
  LogicalResult run();
  /// After a failed run: inferred lineages on a cycle of stages, reported
  /// here instead of as an error; the pass drops them and cuts again.
  std::vector<std::string> inferredOnCycle;

private:
  /// Keeps the whole program in a tv.source when it is small enough.
  void keepSource();
  int64_t sourceElements;
  /// Whether stages name a tensor's statements by the module's
  /// #tv.lineage_map (and #tv.lineage) attributes when they take all of
  /// them (decision 127).
  bool writeMaps;
  /// Per spec tensor, with writeMaps: the module's statements naming it as
  /// attributes, in module order (a map as its #tv.lineage_map). They expand
  /// (expandLineageList) to exactly the tensor's `lineages`.
  llvm::StringMap<SmallVector<Attribute, 2>> sourcesOf;
  /// The arrays the statements in `lineages` point into (views, no
  /// attribute per statement, decision 128).
  LineageStore lineageStore;
  LogicalResult collect();
  /// Drafts and prepares the stage of `target`: reads the module only, so
  /// stages are drafted in parallel.
  LogicalResult draft(StringRef target, StageDraft &d);
  void prepare(StageDraft &d);
  /// Writes the stage (sequential: it adds ops to the module).
  StageOp emit(StageDraft &d, unsigned index);
  const LineageRuns &lineagesOf(StringRef name) const {
    static const LineageRuns none;
    auto it = lineages.find(name);
    return it == lineages.end() ? none : it->second;
  }
  std::string specNameWithLineage(Value v) const;
  /// Whether the lineages of spec tensor `name` (of `shape`) cover all of
  /// it. A partly covered intermediate is no stage boundary: a stage reading
  /// it recomputes it, and binds the plan tensors assumed equal to its
  /// covered parts to the recomputed values (a cut there would leave the
  /// uncovered part free, and a counterexample could pick values no run of
  /// the program produces).
  bool fullyCovered(StringRef name, ArrayRef<int64_t> shape) const;
  /// fullyCovered of every lineage-carrying spec tensor, computed in
  /// collect() (drafts read it from several threads).
  llvm::StringMap<bool> coverage;
  /// Assumed spec tensors that are functions of the stage's other spec
  /// values are recomputed from them rather than left free (see
  /// docs/soundness.md, "Relations between assumed tensors").
  void relateAssumed(StageDraft &d);

  ModuleOp module;
  SpecOp spec;
  PlanOp plan;
  std::optional<PlanSchedule> schedule;
  NameTable specNames;
  DenseMap<Operation *, NameTable> progNames; // per rank program
  llvm::StringMap<LineageRuns> lineages;
  std::vector<std::string> lineageOrder;
  llvm::StringMap<size_t> lineagePos; // position in lineageOrder
  /// Plan values that carry a lineage, per value (a value lives in one
  /// program): the ranks of that program on which it does, sorted, each with
  /// its cut (an index into `cutTable`). Far smaller than a map keyed by
  /// (rank, value): millions of ranks x tensors on large plans.
  DenseMap<Value, std::vector<std::pair<int32_t, uint32_t>>> cutsOf;
  std::vector<PlanCut> cutTable;
  /// The schedule step that produces a communicated value on each rank:
  /// per (representative's) value, by class position, kNoStep where none.
  /// Read once per value of a stage, then by position (a map keyed by
  /// (rank, value) cost a cache miss per rank: millions of members).
  static constexpr size_t kNoStep = ~size_t(0);
  DenseMap<Value, std::vector<size_t>> producerOf;
  /// Each rank's position in its program's rank list.
  DenseMap<int64_t, unsigned> posOf;
  /// Programs that begin with the same ops as an earlier one (a phased
  /// plan joined: every data-parallel coordinate's program starts with the
  /// shared forward and backward, decision 124): for each op of such a
  /// program's common prefix, the representative's op it is a copy of
  /// (checked op by op, operands matched positionally, as
  /// mergeIdenticalPrograms checks whole programs).
  DenseMap<Operation *, Operation *> repOfOp;
  void findSharedPrefixes();
  /// A representative and the programs related to it form a class: their
  /// ranks one after the other (the representative's first) are the class's
  /// positions. The draft walks a shared prefix once, on the
  /// representative's ops and values, with a set of class positions; a
  /// program of no class is a class of its own, its positions its own.
  struct ProgramClass {
    SmallVector<Operation *> members; // the representative first
    SmallVector<int64_t> ranks;       // the members' ranks, in that order
  };
  std::vector<ProgramClass> classes;
  DenseMap<Operation *, unsigned> classIndex; // member -> its class
  DenseMap<Operation *, unsigned> offsetOf;   // member -> first position
  /// Each rank's position in its class (its program's when it has none).
  DenseMap<int64_t, unsigned> cposOf;
  /// A member's prefix ops in order, and each representative op's index.
  DenseMap<Operation *, std::vector<Operation *>> prefixOps;
  DenseMap<Operation *, unsigned> repIndex;
  Operation *classRepOf(Operation *prog) const {
    auto it = classIndex.find(prog);
    return it == classIndex.end() ? prog : classes[it->second].members[0];
  }
  /// True for a member of a class other than its representative.
  bool isCopy(Operation *prog) const {
    return classIndex.count(prog) && classRepOf(prog) != prog;
  }
  /// The positions of the class of `prog` (its ranks when it has none).
  ArrayRef<int64_t> classRanks(Operation *prog) const {
    auto it = classIndex.find(prog);
    return it == classIndex.end() ? cast<RankProgramOp>(prog).getRanks()
                                  : ArrayRef<int64_t>(classes[it->second].ranks);
  }
  /// The representative's copy of a prefix op or value (itself otherwise).
  Operation *canon(Operation *op) const {
    Operation *r = repOfOp.lookup(op);
    return r ? r : op;
  }
  Value canon(Value v) const {
    Operation *def = v ? v.getDefiningOp() : nullptr;
    Operation *r = def ? repOfOp.lookup(def) : nullptr;
    return r ? r->getResult(cast<OpResult>(v).getResultNumber()) : v;
  }
  /// Program `prog`'s own copy of `op`, an op of its class's representative
  /// within their shared prefix, or of `prog` itself.
  Operation *copyIn(Operation *prog, Operation *op) const {
    if (op->getParentOp() == prog)
      return op;
    // The draft only reaches a member's positions on the representative's
    // ops inside that member's prefix (docs/soundness.md); anything else is
    // a bug here, stopped rather than emitted as another op.
    auto own = prefixOps.find(prog);
    auto index = repIndex.find(op);
    if (own == prefixOps.end() || index == repIndex.end() ||
        index->second >= own->second.size())
      llvm::report_fatal_error("internal error: stage partition reached a "
                               "representative's op outside a member's "
                               "shared prefix");
    return own->second[index->second];
  }
  Value copyIn(Operation *prog, Value v) const {
    return copyIn(prog, v.getDefiningOp())
        ->getResult(cast<OpResult>(v).getResultNumber());
  }
  static RankProgramOp programOf(Operation *op) {
    return op->getParentOfType<RankProgramOp>();
  }
  static RankProgramOp programOf(Value v) {
    return v.getParentRegion()->getParentOfType<RankProgramOp>();
  }
};

} // namespace mlir::tv::partition

#endif

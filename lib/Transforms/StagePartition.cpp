//===- StagePartition.cpp - --tv-stage-partition --------------------------===//
//
// Cuts spec and plan at lineage-carrying tensors. For a computed spec tensor
// T with lineage, the stage holds the spec ops between T and the nearest
// lineage-carrying tensors above it, and the plan ops (on every rank) between
// T's plan tensors and the nearest plan tensors that carry a lineage. The
// stage assumes the lineages at its inputs and guarantees T's.
//
//===----------------------------------------------------------------------===//
#include "StagePartitionImpl.h"
#include "TrainVerify/Dialect/Lineage.h"
#include "TrainVerify/Transforms/Passes.h"
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
#include <deque>
#include <map>
#include <set>

namespace mlir::tv {
#define GEN_PASS_DEF_TVSTAGEPARTITION
#include "TrainVerify/Transforms/Passes.h.inc"
} // namespace mlir::tv

using namespace mlir;
using namespace mlir::tv;
using namespace mlir::tv::partition;

/// The ops of `ops` that are in `block`, in the block's order (a sort, not a
/// walk of the block: a stage holds a small part of a large program).
static SmallVector<Operation *> inBlockOrder(ArrayRef<Operation *> ops,
                                             Block &block) {
  SmallVector<Operation *> out;
  for (Operation *op : ops)
    if (op->getBlock() == &block)
      out.push_back(op);
  llvm::sort(out, [](Operation *a, Operation *b) {
    return a->isBeforeInBlock(b);
  });
  return out;
}

static std::string sanitize(StringRef name) {
  std::string s;
  for (char c : name)
    s += (isalnum(c) || c == '_') ? c : '_';
  return s;
}

void Partitioner::prepare(StageDraft &d) {
  // Assumptions: lineages of assumed tensors with a plan tensor in the stage
  // (or every statement when the plan side does not read the tensor).
  // Read references by (rank, name id): names are compared as strings
  // once per distinct storage (a statement's names point into the
  // context), then as integers (every reference of every assumed
  // statement is probed).
  // The ranks reading a name are a bit set over the mesh (a stage reads
  // few names; the mesh verifier caps meshes at 2^20 ranks).
  llvm::StringMap<uint32_t> readNames;
  std::vector<llvm::BitVector> readRanks; // by name id
  size_t numRanks = schedule->mesh.getNumRanks();
  for (const StageDraft::PlanInput &in : d.planInputs) {
    uint32_t id = readNames.try_emplace(in.cut.name, readNames.size())
                      .first->second;
    if (id == readRanks.size())
      readRanks.emplace_back(numRanks);
    readRanks[id].set(in.rank);
  }
  auto reads = [&](int64_t id, int64_t rank) {
    return id >= 0 && rank >= 0 && (size_t)rank < numRanks &&
           readRanks[id].test(rank);
  };
  DenseMap<std::pair<const char *, size_t>, int64_t> idOfStorage;
  auto nameId = [&](StringRef n) {
    auto [slot, fresh] = idOfStorage.try_emplace({n.data(), n.size()}, -1);
    if (fresh) {
      auto found = readNames.find(n);
      slot->second =
          found == readNames.end() ? int64_t(-1) : int64_t(found->second);
    }
    return slot->second;
  };
  SmallVector<StringRef> assumed(d.assumedSpecs.begin(), d.assumedSpecs.end());
  llvm::sort(assumed, [&](StringRef a, StringRef b) {
    return lineagePos.lookup(a) < lineagePos.lookup(b);
  });
  for (StringRef name : assumed) {
    auto it = lineages.find(name);
    if (it == lineages.end())
      continue;
    SmallVector<const LineageView *> taken;
    for (const LineageView &attr : it->second) {
      bool used = false;
      if (!attr.getNumExplicitGroups() && attr.getReplicaName()) {
        // A replicas list: one name (a tensor the stage does not read:
        // skipped whole).
        int64_t id = nameId(attr.getReplicaName().getValue());
        if (id < 0)
          continue;
        used = llvm::any_of(attr.getReplicaRanks(),
                            [&](int64_t r) { return reads(id, r); });
      } else {
        attr.walkRefs([&](size_t, PlanRefView ref) {
          used = used || reads(nameId(ref.name), ref.rank);
        });
      }
      if (used)
        taken.push_back(&attr);
    }
    // Every statement of the tensor taken: its maps say the same, and no
    // attribute is built for a statement (decision 128).
    auto sources = writeMaps && taken.size() == it->second.size()
                       ? sourcesOf.find(name)
                       : sourcesOf.end();
    if (sources != sourcesOf.end()) {
      d.assumes.append(sources->second.begin(), sources->second.end());
      continue;
    }
    for (const LineageView *attr : taken)
      d.assumes.push_back(attr->toAttr(module.getContext()));
  }
  d.specOrder = inBlockOrder(d.specOps.getArrayRef(), spec.getBody().front());

  // A rank's group is its program, the ops of the stage it runs, its inputs
  // and its targets. The draft is on classes (StagePartitionImpl.h): a
  // class's ranks that run only ops of the prefix they share stand for the
  // representative and group with its ranks that run the same copies; a
  // member that runs ops of its own there, or reads or writes a value of
  // its own, is split out with its own copies. Ops every taking-part rank
  // of a part runs are common to all its groups; only the others
  // (`partial`) tell ranks apart.
  struct Part {
    RankSet ranks;                    // taking part (the part's positions)
    std::vector<Operation *> common;  // run by all of them
    std::vector<std::pair<Operation *, const RankSet *>> partial;
    std::vector<std::pair<Operation *, const RankSet *>> entries;
  };
  // Keyed by program: a class's representative for its copied ranks (class
  // positions), a split member or a program of no class (its positions).
  llvm::MapVector<Operation *, Part> parts;
  std::deque<RankSet> owned; // sets restricted to a part
  auto partOf = [&](Operation *prog) -> Part & {
    auto [it, fresh] = parts.try_emplace(prog);
    if (fresh)
      it->second.ranks.resize(isCopy(prog) ? cast<RankProgramOp>(prog)
                                                 .getRanks()
                                                 .size()
                                           : classRanks(prog).size());
    return it->second;
  };
  DenseSet<Operation *> split;
  for (auto &[op, set] : d.planOps)
    if (Operation *prog = programOf(op); isCopy(prog))
      split.insert(prog);
  for (const StageDraft::PlanInput &in : d.planInputs)
    if (Operation *prog = programOf(in.value); isCopy(prog))
      split.insert(prog);
  for (const StageDraft::PlanTarget &t : d.planTargets)
    if (Operation *prog = programOf(canon(t.value)); isCopy(prog))
      split.insert(prog);
  // Each split member's range of class positions.
  DenseMap<Operation *, SmallVector<std::pair<Operation *, unsigned>>>
      splitOf; // representative -> (member, first position)
  for (Operation *prog : split)
    splitOf[classRepOf(prog)].push_back({prog, offsetOf.lookup(prog)});
  for (auto &[rep, members] : splitOf)
    llvm::sort(members, [](auto &a, auto &b) { return a.second < b.second; });
  auto sizeOf = [](Operation *prog) {
    return cast<RankProgramOp>(prog).getRanks().size();
  };
  for (auto &[op, set] : d.planOps) {
    Operation *rep = classRepOf(programOf(op));
    auto members = splitOf.find(rep);
    if (members == splitOf.end()) {
      partOf(rep).entries.push_back({op, &set});
      continue;
    }
    // The split members' positions go to their own parts.
    RankSet &rest = owned.emplace_back(set);
    for (auto [member, first] : members->second) {
      size_t size = sizeOf(member);
      int next = first == 0 ? set.find_first() : set.find_next(first - 1);
      if (next < 0 || (size_t)next >= first + size)
        continue;
      RankSet &own = owned.emplace_back(size);
      for (size_t i = 0; i < size; ++i)
        if (set.test(first + i))
          own.set(i);
      rest.reset(first, first + size);
      partOf(member).entries.push_back({copyIn(member, op), &own});
    }
    if (rest.any())
      partOf(rep).entries.push_back({op, &rest});
  }
  // Where a rank's inputs and targets live: its part and its position.
  auto placeOf = [&](int64_t rank) -> std::pair<Operation *, unsigned> {
    Operation *prog = schedule->programOf.lookup(rank);
    if (split.count(prog))
      return {prog, posOf.lookup(rank)};
    return {classRepOf(prog), cposOf.lookup(rank)};
  };
  for (auto &[prog, part] : parts)
    for (auto &[op, set] : part.entries)
      part.ranks |= *set;
  for (const StageDraft::PlanInput &in : d.planInputs) {
    auto [prog, pos] = placeOf(in.rank);
    partOf(prog).ranks.set(pos);
  }
  for (const StageDraft::PlanTarget &t : d.planTargets) {
    auto [prog, pos] = placeOf(t.rank);
    partOf(prog).ranks.set(pos);
  }
  for (auto &[prog, part] : parts)
    for (auto &[op, set] : part.entries) {
      if (*set == part.ranks)
        part.common.push_back(op);
      else
        part.partial.push_back({op, set});
    }
  // A rank's inputs and targets: a value and its name, the name also as
  // its place among the stage's names in string order (equal places, equal
  // strings), so that keys compare and sort by integers.
  struct Named {
    void *value;
    StringRef name;
    unsigned place;
  };
  struct Key {
    Operation *prog;
    std::vector<Operation *> ops; // the partial ones
    MutableArrayRef<Named> inputs, targets; // spans of the stage's arrays
    static bool less(const Named &a, const Named &b) {
      return std::tie(a.value, a.place) < std::tie(b.value, b.place);
    }
    static bool less(ArrayRef<Named> a, ArrayRef<Named> b) {
      return std::lexicographical_compare(
          a.begin(), a.end(), b.begin(), b.end(),
          [](const Named &x, const Named &y) { return less(x, y); });
    }
    bool operator<(const Key &o) const {
      if (prog != o.prog)
        return prog < o.prog;
      if (ops != o.ops)
        return ops < o.ops;
      if (less(inputs, o.inputs))
        return true;
      if (less(o.inputs, inputs))
        return false;
      return less(targets, o.targets);
    }
  };
  // The places: each distinct name storage once, sorted by its string.
  DenseMap<std::pair<const char *, size_t>, unsigned> nameOrder;
  {
    std::vector<StringRef> names;
    auto add = [&](StringRef n) {
      if (nameOrder.try_emplace({n.data(), n.size()}, 0).second)
        names.push_back(n);
    };
    for (const StageDraft::PlanInput &in : d.planInputs)
      add(in.cut.name);
    for (const StageDraft::PlanTarget &t : d.planTargets)
      add(t.name);
    llvm::sort(names);
    unsigned place = 0;
    for (auto [i, n] : llvm::enumerate(names)) {
      if (i && names[i - 1] != n)
        ++place;
      nameOrder[{n.data(), n.size()}] = place;
    }
  }
  auto named = [&](void *value, StringRef name) {
    return Named{value, name, nameOrder.lookup({name.data(), name.size()})};
  };
  // By rank: the keys in a list, sorted by rank once filled (the order
  // an ordered map by rank would give).
  std::vector<std::pair<int64_t, Key>> keys;
  DenseMap<int64_t, unsigned> keyIndex;
  auto keyIdx = [&](int64_t rank) -> unsigned {
    auto [it, fresh] = keyIndex.try_emplace(rank, keys.size());
    if (fresh)
      keys.emplace_back(rank, Key{});
    return it->second;
  };
  auto keyAt = [&](int64_t rank) -> Key & { return keys[keyIdx(rank)].second; };
  for (auto &[prog, part] : parts) {
    ArrayRef<int64_t> ranks = split.count(prog)
                                  ? cast<RankProgramOp>(prog).getRanks()
                                  : classRanks(prog);
    for (unsigned pos : part.ranks.set_bits())
      keyAt(ranks[pos]).prog = prog;
    for (auto &[op, set] : part.partial)
      for (unsigned pos : set->set_bits())
        keyAt(ranks[pos]).ops.push_back(op);
  }
  // A value as its part holds it: a split member's own copy.
  auto keyValue = [&](int64_t rank, Value v) -> void * {
    Operation *prog = schedule->programOf.lookup(rank);
    return (split.count(prog) ? copyIn(prog, v) : v).getAsOpaquePointer();
  };
  // Every rank's inputs (and targets) in one array, grouped by key:
  // counted, then placed in their order (no list per rank: millions of
  // references per stage on large plans).
  std::vector<Named> flatInputs(d.planInputs.size()),
      flatTargets(d.planTargets.size());
  auto spread = [&](auto &refs, std::vector<Named> &flat, auto namedOf,
                    MutableArrayRef<Named> Key::*field) {
    std::vector<unsigned> keyOfRef;
    keyOfRef.reserve(refs.size());
    for (auto &ref : refs)
      keyOfRef.push_back(keyIdx(ref.rank));
    std::vector<unsigned> start(keys.size() + 1, 0);
    for (unsigned k : keyOfRef)
      ++start[k + 1];
    for (size_t k = 0; k < keys.size(); ++k)
      start[k + 1] += start[k];
    std::vector<unsigned> next(start.begin(), start.end() - 1);
    for (auto [i, ref] : llvm::enumerate(refs))
      flat[next[keyOfRef[i]]++] = namedOf(ref);
    for (size_t k = 0; k < keys.size(); ++k)
      keys[k].second.*field =
          MutableArrayRef<Named>(flat).slice(start[k], start[k + 1] - start[k]);
  };
  spread(
      d.planInputs, flatInputs,
      [&](const StageDraft::PlanInput &in) {
        return named(keyValue(in.rank, in.value), in.cut.name);
      },
      &Key::inputs);
  spread(
      d.planTargets, flatTargets,
      [&](const StageDraft::PlanTarget &t) {
        return named(keyValue(t.rank, canon(t.value)), t.name);
      },
      &Key::targets);
  llvm::sort(keys, [](auto &a, auto &b) { return a.first < b.first; });
  std::map<Key, SmallVector<int64_t>> groups;
  std::vector<const Key *> order;
  for (auto &[rank, k] : keys) {
    llvm::sort(k.ops); // a canonical order: equal sets give equal keys
    llvm::sort(k.inputs, [](auto &a, auto &b) { return a.place < b.place; });
    llvm::sort(k.targets, [](auto &a, auto &b) { return a.place < b.place; });
    auto [it, inserted] = groups.try_emplace(std::move(k));
    if (inserted)
      order.push_back(&it->first);
    it->second.push_back(rank);
  }
  for (const Key *kp : order) {
    const Key &k = *kp;
    auto prog = cast<RankProgramOp>(k.prog);
    const std::vector<Operation *> &common = parts.find(k.prog)->second.common;
    SmallVector<Operation *> ops(common.begin(), common.end());
    ops.append(k.ops.begin(), k.ops.end());
    StageDraft::Group g{k.prog, groups[k], {}, {}, {}};
    for (const Named &n : k.inputs)
      g.inputs.push_back({n.value, n.name});
    for (const Named &n : k.targets)
      g.targets.push_back({n.value, n.name});
    for (Operation *op : inBlockOrder(ops, prog.getBody().front()))
      if (!isa<InputOp>(op))
        g.ops.push_back(op);
    d.groups.push_back(std::move(g));
  }
}

StageOp Partitioner::emit(StageDraft &d, unsigned index) {
  MLIRContext *ctx = module.getContext();
  OpBuilder b(ctx);
  b.setInsertionPointToEnd(module.getBody());
  Location loc = d.specValue.getLoc();

  SmallVector<Attribute> guarantees;
  auto sources = writeMaps ? sourcesOf.find(d.target) : sourcesOf.end();
  if (sources != sourcesOf.end())
    guarantees.append(sources->second.begin(), sources->second.end());
  else
    for (const LineageView &attr : lineagesOf(d.target))
      guarantees.push_back(attr.toAttr(ctx));

  std::string stageName = "stage" + std::to_string(index) + "_" +
                          sanitize(d.target);
  auto stage = StageOp::create(b, loc, stageName, b.getArrayAttr(d.assumes),
                               b.getArrayAttr(guarantees),
                               /*full_guarantees=*/ArrayAttr());
  Block *stageBody = new Block();
  stage.getBody().push_back(stageBody);
  b.setInsertionPointToStart(stageBody);

  // Spec side.
  auto newSpec = SpecOp::create(b, spec.getLoc(), "spec");
  Block *specBody = new Block();
  newSpec.getBody().push_back(specBody);
  {
    OpBuilder sb = OpBuilder::atBlockEnd(specBody);
    IRMapping map;
    SmallVector<std::pair<std::string, Value>> inputs;
    for (Value v : d.specInputs) {
      std::string n = specNameWithLineage(v);
      if (n.empty())
        n = specNames.namesOf.lookup(v).front();
      inputs.push_back({n, v});
    }
    llvm::sort(inputs, [](auto &a, auto &b) { return a.first < b.first; });
    for (auto &[n, v] : inputs) {
      Value in = InputOp::create(sb, v.getLoc(), v.getType(), n).getResult();
      map.map(v, in);
      // Other lineage-carrying names of the same value (copies folded away)
      // are aliases of the input: the assumptions about them bind to it.
      for (const std::string &alias : specNames.namesOf.lookup(v))
        if (alias != n && d.assumedSpecs.count(alias))
          TagOp::create(sb, v.getLoc(), alias, in);
    }
    DenseMap<Value, Value> inputOf;
    for (auto &[n, v] : inputs)
      inputOf[v] = map.lookup(v);
    for (Operation *op : d.specOrder) {
      sb.clone(*op, map);
      // A result the stage assumes stays the assumed input (see the plan
      // side below).
      for (Value r : op->getResults())
        if (Value in = inputOf.lookup(r))
          map.map(r, in);
    }
    // The recomputed tensors the plan side assumes parts of, by name.
    // (Not when the stage takes it as its input of that name already.)
    for (auto &[name, v] : d.recomputed) {
      Value value = map.lookupOrDefault(v);
      auto in = value.getDefiningOp<InputOp>();
      if (d.assumedSpecs.count(name) && !(in && in.getName() == name))
        TagOp::create(sb, v.getLoc(), name, value);
    }
    OutputOp::create(sb, loc, d.target, map.lookupOrDefault(d.specValue));
  }

  // Plan side: ranks that take part, grouped when they run the same slice
  // of the same program.
  auto newPlan = PlanOp::create(b, plan.getLoc(), b.getStringAttr("plan"),
                                plan.getMeshAttr(),
                                plan.getMicroBatchesAttr(),
                                /*folded=*/ArrayAttr(),
                                /*folded_micro_batches=*/UnitAttr());
  Block *planBody = new Block();
  newPlan.getBody().push_back(planBody);
  OpBuilder pb = OpBuilder::atBlockEnd(planBody);
  for (const StageDraft::Group &g : d.groups) {
    auto prog = cast<RankProgramOp>(g.prog);
    auto rp = RankProgramOp::create(pb, prog.getLoc(), g.ranks);
    Block *body = new Block();
    rp.getBody().push_back(body);
    OpBuilder rb = OpBuilder::atBlockEnd(body);
    IRMapping map;
    DenseMap<Value, Value> cutInputs;
    for (auto &[ptr, name] : g.inputs) {
      Value v = Value::getFromOpaquePointer(ptr);
      Value in = InputOp::create(rb, v.getLoc(), v.getType(), name).getResult();
      map.map(v, in);
      cutInputs[v] = in;
    }
    for (Operation *op : g.ops) {
      rb.clone(*op, map);
      // An op in the stage for one result whose other result is a cut: its
      // uses read the assumption, as when the op is outside the stage (a
      // recomputed copy would be unrelated to what the spec side assumes).
      for (Value r : op->getResults())
        if (Value in = cutInputs.lookup(r))
          map.map(r, in);
    }
    for (const auto &target : g.targets) {
      StringRef name = target.second;
      // An alias target that is also an input already carries its name.
      if (llvm::any_of(g.inputs, [&](auto &in) { return in.second == name; }))
        continue;
      Value v = Value::getFromOpaquePointer(target.first);
      OutputOp::create(rb, v.getLoc(), name, map.lookupOrDefault(v));
    }
  }
  return stage;
}

LogicalResult Partitioner::run() {
  beginPhase("partition", 0); // its stage count follows collect()
  if (failed(ssaCanonicalize(module)))
    return failure();
  readFlatBuffersPerParameter(module);
  if (failed(collect()))
    return failure();

  // One stage per computed spec tensor with a lineage, emitted as soon as
  // it is drafted (a draft holds every rank's ops: keeping all of them until
  // the stages are ordered cost more memory than the plan itself).
  struct Drafted {
    std::string target;
    Value specValue;
    std::set<std::string> assumedSpecs;
    StageOp stage;
  };
  std::vector<Drafted> drafts;
  std::vector<StringRef> targets;
  for (const std::string &name : lineageOrder) {
    Value v = specNames.valueOf.lookup(name);
    if (v && !isa<InputOp>(v.getDefiningOp()))
      targets.push_back(name);
  }
  // Drafts read the module only: a batch of them is drafted and prepared
  // in parallel, then emitted in order. Their diagnostics are held back; the
  // first failing target is drafted again alone, so that it reports as it
  // would in order.
  MLIRContext *ctx = module.getContext();
  constexpr size_t batchSize = 64;
  beginPhase("partition", targets.size());
  for (size_t start = 0; start < targets.size(); start += batchSize) {
    size_t end = std::min(targets.size(), start + batchSize);
    std::vector<StageDraft> batch(end - start);
    std::vector<char> failedDraft(end - start, 0);
    {
      ScopedDiagnosticHandler quiet(ctx, [](Diagnostic &) { return success(); });
      parallelFor(ctx, start, end, [&](size_t i) {
        StageDraft &d = batch[i - start];
        if (failed(draft(targets[i], d)))
          failedDraft[i - start] = 1;
        else
          prepare(d);
      });
    }
    for (size_t i = start; i < end; ++i) {
      StageDraft &d = batch[i - start];
      if (failedDraft[i - start]) {
        StageDraft again;
        (void)draft(targets[i], again);
        return failure();
      }
      StageOp stage = emit(d, drafts.size());
      drafts.push_back(
          {d.target, d.specValue, std::move(d.assumedSpecs), stage});
      d = StageDraft(); // its memory, now
    }
    advancePhase(end - start);
  }
  endPhase();
  if (drafts.empty())
    return module.emitError() << "nothing to verify: no computed spec tensor "
                                 "carries a lineage";

  // Well-foundedness: order stages so each assumption is an initial lineage
  // or the guarantee of an earlier stage.
  llvm::StringMap<size_t> stageOf;
  for (auto [i, d] : llvm::enumerate(drafts))
    stageOf[d.target] = i;
  std::vector<int> state(drafts.size(), 0); // 0 new, 1 active, 2 done
  std::vector<size_t> order;
  std::function<LogicalResult(size_t, SmallVector<std::string> &)> visit =
      [&](size_t i, SmallVector<std::string> &path) -> LogicalResult {
    if (state[i] == 2)
      return success();
    path.push_back(drafts[i].target);
    if (state[i] == 1) {
      if (auto inferred = module->getAttrOfType<ArrayAttr>(kInferredAttrName)) {
        auto first = llvm::find(path, drafts[i].target);
        for (auto it = first; it != path.end(); ++it)
          if (llvm::any_of(inferred, [&](Attribute a) {
                return cast<StringAttr>(a).getValue() == *it;
              }))
            inferredOnCycle.push_back(*it);
        if (!inferredOnCycle.empty())
          return failure();
      }
      InFlightDiagnostic diag = drafts[i].specValue.getDefiningOp()->emitError()
                                << "stages are not well founded: lineage cycle";
      for (const std::string &n : path)
        diag << " '" << n << "'";
      return diag;
    }
    state[i] = 1;
    for (const std::string &dep : drafts[i].assumedSpecs) {
      auto it = stageOf.find(dep);
      if (it != stageOf.end() && it->second != i &&
          failed(visit(it->second, path)))
        return failure();
    }
    state[i] = 2;
    path.pop_back();
    order.push_back(i);
    return success();
  };
  for (size_t i = 0; i < drafts.size(); ++i) {
    SmallVector<std::string> path;
    if (failed(visit(i, path)))
      return failure();
  }
  // Stages in that order, named by their position.
  for (auto [n, i] : llvm::enumerate(order)) {
    StageOp stage = drafts[i].stage;
    stage.setSymName("stage" + std::to_string(n) + "_" +
                     sanitize(drafts[i].target));
    stage->moveBefore(module.getBody(), module.getBody()->end());
  }

  // The stages replace the whole-program view; whether the spec had a
  // backward of its own (trusted unless this module checks it) is kept for
  // the verdict.
  if (!module->hasAttr("tv.checks") && specHasCotangents(module))
    module->setAttr("tv.spec_backward", StringAttr::get(module.getContext(),
                                                        "trusted"));
  keepSource();
  for (Operation &op : llvm::make_early_inc_range(*module.getBody()))
    if (isa<SpecOp, PlanOp, LineageOp, LineageMapOp>(op))
      op.erase();
  return success();
}

void Partitioner::keepSource() {
  if (sourceElements <= 0)
    return;
  // A module with inferred cuts keeps its source whatever its size:
  // --tv-verify cuts it again without an inferred lineage that does not
  // prove (decision 97).
  bool inferred = module->hasAttr(kInferredAttrName);
  int64_t elements = 0;
  auto count = [&](Operation *root, int64_t copies) {
    root->walk([&](Operation *op) {
      for (Type t : op->getResultTypes())
        if (auto rt = dyn_cast<RankedTensorType>(t))
          elements += rt.getNumElements() * copies;
      return elements > sourceElements ? WalkResult::interrupt()
                                       : WalkResult::advance();
    });
  };
  if (!inferred) {
    count(spec, 1);
    for (auto prog : plan.getBody().front().getOps<RankProgramOp>())
      if (elements <= sourceElements)
        count(prog, (int64_t)prog.getRanks().size());
    if (elements > sourceElements)
      return;
  }
  OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
  auto source = SourceOp::create(b, module.getLoc());
  Block *body = new Block();
  source.getBody().push_back(body);
  b.setInsertionPointToStart(body);
  // The stage's plan names its mesh; the nearest symbol table is the
  // source's.
  b.clone(*plan.getMeshOp());
  // The whole program's lists are attributes (the program is small; the
  // lineage ops are still there, collect() read them).
  FailureOr<std::vector<LineageEntry>> entries = collectLineages(module);
  if (failed(entries)) {
    source.erase();
    return;
  }
  buildWholeProgramStage(b, spec, plan, *entries, module.getLoc());
}

namespace {
struct StagePartitionPass
    : public tv::impl::TVStagePartitionBase<StagePartitionPass> {
  using TVStagePartitionBase::TVStagePartitionBase;
  void runOnOperation() override {
    PhaseTimer timer(getOperation(), "partition");
    ModuleOp module = getOperation();
    // Lineages on the inputs and outputs only (an importer derived them):
    // the intermediates are inferred first, as hypotheses (decision 102).
    if (module->hasAttr(kInferIntermediatesAttrName)) {
      module->removeAttr(kInferIntermediatesAttrName);
      llvm::errs() << "tv-stage-partition: the module's lineages cover its "
                      "inputs and outputs only: inferring the intermediates "
                      "first (--tv-infer-lineage)\n";
      OpPassManager infer(ModuleOp::getOperationName());
      infer.addPass(createTVInferLineage());
      if (failed(runPipeline(infer, module)))
        return signalPassFailure();
    }
    // Inferred lineages on a cycle of stages are hypotheses that cannot all
    // be cuts: they go, and the program is cut again (decision 97).
    while (true) {
      Partitioner p(module, sourceElements, lineageMaps);
      if (succeeded(p.run()))
        return;
      if (p.inferredOnCycle.empty())
        return signalPassFailure();
      for (StageOp s : llvm::make_early_inc_range(module.getOps<StageOp>()))
        s.erase();
      llvm::StringSet<> drop;
      for (const std::string &n : p.inferredOnCycle)
        drop.insert(n);
      for (auto l : llvm::make_early_inc_range(module.getOps<LineageOp>()))
        if (drop.contains(l.getLineage().getSpec().getValue()))
          l.erase();
      SmallVector<Attribute> kept;
      for (Attribute a :
           module->getAttrOfType<ArrayAttr>(kInferredAttrName))
        if (!drop.contains(cast<StringAttr>(a).getValue()))
          kept.push_back(a);
      module->setAttr(kInferredAttrName,
                      ArrayAttr::get(module.getContext(), kept));
    }
  }
};
} // namespace

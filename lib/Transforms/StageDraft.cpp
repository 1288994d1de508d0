//===- StageDraft.cpp - which ops each stage of the partition holds -------===//
//
// For a computed spec tensor with a lineage: the spec ops between it and
// the nearest lineage-carrying tensors above it, the plan ops between its
// plan tensors and the nearest plan tensors that carry a lineage, and the
// assumed lineages related to each other (--tv-stage-partition).
//
//===----------------------------------------------------------------------===//
#include "StagePartitionImpl.h"

using namespace mlir;
using namespace mlir::tv;
using namespace mlir::tv::partition;

bool Partitioner::fullyCovered(StringRef name,
                               ArrayRef<int64_t> shape) const {
  // checkLineages has passed (collect runs it first): a tensor's boxes lie
  // inside it and no two of them overlap, so they cover it exactly when
  // their volumes add up to its own (128-bit sums: no overflow).
  if (llvm::any_of(shape, [](int64_t n) { return n <= 0; }))
    return true; // no element to cover
  unsigned rank = shape.size();
  unsigned __int128 whole = 1, sum = 0;
  for (int64_t n : shape) {
    whole *= (uint64_t)n;
    if (whole >> 64)
      return true; // beyond any box list: keep the cut (as before)
  }
  for (const LineageView &l : lineagesOf(name)) {
    if (l.getRank() != rank)
      return true; // checkLineages reports it
    unsigned __int128 volume = 1;
    for (auto [lo, hi] : llvm::zip(l.getLower(), l.getUpper()))
      volume *= (uint64_t)std::max<int64_t>(hi - lo, 0);
    sum += volume; // each at most `whole`, fewer than 2^64 of them
  }
  return sum == whole;
}

std::string Partitioner::specNameWithLineage(Value v) const {
  // Of several lineage-carrying names of one value, the one whose lineage
  // comes first: the same rule the plan side uses, so that aliases point the
  // same way on both sides (never a cycle).
  auto it = specNames.namesOf.find(v);
  if (it == specNames.namesOf.end())
    return "";
  std::string best;
  size_t bestPos = SIZE_MAX;
  for (const std::string &n : it->second) {
    auto pos = lineagePos.find(n);
    if (pos != lineagePos.end() && pos->second < bestPos) {
      best = n;
      bestPos = pos->second;
    }
  }
  return best;
}

LogicalResult Partitioner::collect() {
  for (Operation &op : module.getBody()->getOperations()) {
    if (auto s = dyn_cast<SpecOp>(op)) {
      if (spec)
        return s.emitError() << "module holds more than one tv.spec";
      spec = s;
    } else if (auto p = dyn_cast<PlanOp>(op)) {
      if (plan)
        return p.emitError() << "module holds more than one tv.plan";
      plan = p;
    }
  }
  if (!spec || !plan) {
    if (!module.getOps<StageOp>().empty())
      return module.emitError()
             << "module is already partitioned into stages";
    return module.emitError() << "module needs a tv.spec and a tv.plan";
  }
  FailureOr<std::vector<LineageRun>> all =
      collectLineageRuns(module, lineageStore);
  if (failed(all) || failed(checkLineages(module, ArrayRef<LineageRun>(*all))))
    return failure();
  specNames.build(spec.getBody().front());
  // Each tensor's statements in order: the runs naming it (a map's
  // statements share its spec tensor, a plain run is one statement).
  for (const LineageRun &run : *all) {
    if (run.views.empty())
      continue;
    StringRef name = run.views.front().getSpec().getValue();
    auto [it, fresh] = lineages.try_emplace(name);
    if (fresh) {
      lineagePos[name] = lineageOrder.size();
      lineageOrder.push_back(name.str());
    }
    assert(llvm::all_of(run.views,
                        [&](const LineageView &v) {
                          return v.getSpec().getValue() == name;
                        }) &&
           "a run's statements share their spec tensor");
    it->second.append(run.views);
  }
  // (keepSource collects again, as attributes, for a program it keeps.)
  all->clear();
  if (writeMaps) {
    MLIRContext *ctx = module.getContext();
    for (Operation &op : *module.getBody()) {
      if (auto lin = dyn_cast<LineageOp>(op)) {
        sourcesOf[lin.getLineage().getSpec().getValue()].push_back(
            lin.getLineage());
      } else if (auto lmap = dyn_cast<LineageMapOp>(op)) {
        ArrayRef<int64_t> scale;
        if (std::optional<ArrayRef<int64_t>> s = lmap.getScale())
          scale = *s;
        sourcesOf[lmap.getSpec()].push_back(LineageMapAttr::get(
            ctx, lmap.getSpecAttr(), lmap.getBlocksAttr(), lmap.getShape(),
            scale, lmap.getPlanAttr(), lmap.getMeshAttr(), lmap.getWhere()));
      }
    }
  }
  {
    std::vector<char> covered(lineageOrder.size(), 1);
    parallelFor(module.getContext(), 0, lineageOrder.size(), [&](size_t i) {
      Value v = specNames.valueOf.lookup(lineageOrder[i]);
      if (auto ty = v ? dyn_cast<RankedTensorType>(v.getType())
                      : RankedTensorType())
        covered[i] = fullyCovered(lineageOrder[i], ty.getShape());
    });
    for (auto [i, name] : llvm::enumerate(lineageOrder))
      coverage[name] = covered[i];
  }
  auto sched = PlanSchedule::build(plan, /*localSteps=*/false);
  if (failed(sched)) {
    toolVerdict() = Verdict::Wrong; // deadlock or mismatched collectives
    return failure();
  }
  schedule = std::move(*sched);
  // Stages order their ops by the blocks' order indices, from several
  // threads: computed once here, read only from then on.
  spec.getBody().front().recomputeOpOrder();
  for (auto prog : plan.getBody().front().getOps<RankProgramOp>()) {
    prog.getBody().front().recomputeOpOrder();
    progNames[prog].build(prog.getBody().front());
    for (auto [pos, r] : llvm::enumerate(prog.getRanks()))
      posOf[r] = pos;
  }
  findSharedPrefixes();
  for (auto prog : plan.getBody().front().getOps<RankProgramOp>()) {
    unsigned offset = offsetOf.lookup(prog);
    for (int64_t r : prog.getRanks())
      cposOf[r] = offset + posOf.lookup(r);
  }
  // Cuts in lineage order; the first cut of a (rank, value) wins.
  // Consecutive references mostly name one tensor of one program: its value
  // and cut are looked up once per run of them.
  DenseMap<std::pair<const void *, StringRef>, uint32_t> cutIds;
  Operation *lastProg = nullptr;
  const void *lastSpec = nullptr;
  StringRef lastName;
  Value lastValue;
  uint32_t lastCut = 0;
  for (const std::string &name : lineageOrder)
    for (const LineageView &attr : lineages[name])
      attr.walkRefs([&](size_t, PlanRefView ref) {
        Operation *prog = schedule->programOf.lookup(ref.rank);
        const void *specKey = attr.getSpec().getAsOpaquePointer();
        if (prog != lastProg || ref.name.data() != lastName.data() ||
            ref.name.size() != lastName.size() || specKey != lastSpec) {
          // (A copied prefix's values are the representative's.)
          lastValue = canon(progNames[prog].valueOf.lookup(ref.name));
          auto [id, fresh] =
              cutIds.try_emplace({specKey, ref.name}, cutTable.size());
          if (fresh)
            cutTable.push_back({attr.getSpec().getValue(), ref.name});
          lastProg = prog;
          lastSpec = specKey;
          lastName = ref.name;
          lastCut = id->second;
        }
        cutsOf[lastValue].push_back({(int32_t)ref.rank, lastCut});
      });
  for (auto &[v, list] : cutsOf) {
    llvm::stable_sort(list, [](auto &a, auto &b) { return a.first < b.first; });
    list.erase(std::unique(list.begin(), list.end(),
                           [](auto &a, auto &b) { return a.first == b.first; }),
               list.end());
    list.shrink_to_fit();
  }
  // Consecutive members mostly share one value of a class representative.
  Value lastProduced;
  std::vector<size_t> *lastList = nullptr;
  auto record = [&](int64_t rank, Value result, size_t step) {
    Value v = canon(result);
    if (v != lastProduced) {
      lastProduced = v;
      lastList = &producerOf[v];
      if (lastList->empty())
        lastList->assign(classRanks(programOf(v)).size(), kNoStep);
    }
    unsigned pos = cposOf.lookup(rank);
    if (pos < lastList->size())
      (*lastList)[pos] = step;
  };
  for (auto [i, step] : llvm::enumerate(schedule->steps)) {
    switch (step.kind) {
    case PlanStep::Local: // not recorded: a local value's producer is its op
      break;
    case PlanStep::Collective:
      for (auto &[r, mop] : step.members)
        record(r, mop->getResult(0), i);
      break;
    case PlanStep::P2P:
      record(step.rank, step.op->getResult(0), i);
      break;
    }
  }
  return success();
}

void Partitioner::findSharedPrefixes() {
  SmallVector<RankProgramOp> progs(
      plan.getBody().front().getOps<RankProgramOp>());
  if (progs.size() < 2)
    return;
  // Candidates share their first ops: bucketed by a hash of them.
  constexpr size_t kHashedOps = 16, kCandidates = 8;
  // Copies: the same op at the same place of the listing (a joined phase's
  // copies keep its locations; programs written apart are not related, so
  // a counterexample's location is always the rank's own).
  auto sameOp = [](Operation &a, Operation &b) {
    return a.getLoc() == b.getLoc() && a.getName() == b.getName() &&
           a.getAttrDictionary() == b.getAttrDictionary() &&
           a.getResultTypes() == b.getResultTypes() &&
           a.getNumOperands() == b.getNumOperands() &&
           a.getNumRegions() == 0 && b.getNumRegions() == 0;
  };
  // The length of the prefix `p` shares with `r`: ops compared one by one,
  // operands matched positionally.
  auto sharedLen = [&](RankProgramOp p, RankProgramOp r) {
    DenseMap<Value, Value> map;
    size_t len = 0;
    for (auto [a, b] : llvm::zip(p.getBody().front(), r.getBody().front())) {
      if (!sameOp(a, b))
        break;
      bool same = true;
      for (auto [u, v] : llvm::zip(a.getOperands(), b.getOperands()))
        same = same && map.lookup(u) == v;
      if (!same)
        break;
      for (auto [u, v] : llvm::zip(a.getResults(), b.getResults()))
        map[u] = v;
      ++len;
    }
    return len;
  };
  // Buckets by a hash of the first ops; each program is compared with the
  // first of its bucket in parallel (a joined phase's copies all share
  // their prefix with it), the others in order below.
  std::vector<llvm::hash_code> hashOf(progs.size());
  std::vector<size_t> firstOf(progs.size());
  {
    DenseMap<llvm::hash_code, size_t> first;
    for (auto [i, p] : llvm::enumerate(progs)) {
      Block &block = p.getBody().front();
      // (At most a quarter of the program: a shared half reaches past it.)
      const size_t hashed =
          std::min(kHashedOps, block.getOperations().size() / 4);
      llvm::hash_code h = llvm::hash_value(0);
      size_t k = 0;
      for (Operation &op : block) {
        if (k++ == hashed)
          break;
        h = llvm::hash_combine(h, op.getName().getAsOpaquePointer(),
                               op.getAttrDictionary().getAsOpaquePointer());
      }
      hashOf[i] = h;
      firstOf[i] = first.try_emplace(h, i).first->second;
    }
  }
  std::vector<size_t> lenWithFirst(progs.size(), 0);
  parallelFor(plan.getContext(), 0, progs.size(), [&](size_t i) {
    if (firstOf[i] != i)
      lenWithFirst[i] = sharedLen(progs[i], progs[firstOf[i]]);
  });
  DenseMap<llvm::hash_code, SmallVector<RankProgramOp>> buckets;
  DenseMap<Operation *, size_t> longest; // per representative
  for (auto [i, p] : llvm::enumerate(progs)) {
    Block &block = p.getBody().front();
    SmallVector<RankProgramOp> &cands = buckets[hashOf[i]];
    // The bucket's first program when it shares at least half the program,
    // else the first other candidate, latest first, that does.
    const size_t half = (block.getOperations().size() + 1) / 2;
    RankProgramOp best;
    size_t bestLen = 0;
    if (firstOf[i] != i && lenWithFirst[i] > 0) {
      best = progs[firstOf[i]];
      bestLen = lenWithFirst[i];
    }
    for (size_t c = cands.size();
         bestLen < half && c-- > 0 && c + kCandidates >= cands.size();) {
      RankProgramOp r = cands[c];
      if (r == progs[firstOf[i]])
        continue; // compared above
      size_t len = sharedLen(p, r);
      if (len > bestLen) {
        best = r;
        bestLen = len;
      }
    }
    // Worth it when at least half the program is shared.
    if (!best || bestLen < half) {
      cands.push_back(p);
      continue;
    }
    // p joins the class of `best` (created with `best` first): classes
    // list their members in program order.
    auto [cls, fresh] = classIndex.try_emplace(best, classes.size());
    if (fresh) {
      classes.emplace_back();
      offsetOf[best] = 0;
      classes.back().members.push_back(best);
      llvm::append_range(classes.back().ranks, best.getRanks());
    }
    ProgramClass &c = classes[cls->second];
    classIndex[p] = cls->second;
    offsetOf[p] = c.ranks.size();
    c.members.push_back(p);
    llvm::append_range(c.ranks, p.getRanks());
    size_t &longestOfBest = longest[best];
    longestOfBest = std::max(longestOfBest, bestLen);
    std::vector<Operation *> &own = prefixOps[p];
    own.reserve(bestLen);
    for (auto [a, b] : llvm::zip(block, best.getBody().front())) {
      if (own.size() == bestLen)
        break;
      repOfOp[&a] = &b;
      own.push_back(&a);
    }
  }
  // Each representative op's index in the longest prefix it shares.
  for (auto [rep, len] : longest) {
    unsigned i = 0;
    for (Operation &op : cast<RankProgramOp>(rep).getBody().front()) {
      if (i == len)
        break;
      repIndex[&op] = i++;
    }
  }
}

LogicalResult Partitioner::draft(StringRef target, StageDraft &d) {
  d.target = target.str();
  d.specValue = specNames.valueOf.lookup(target);

  // Spec cone.
  SmallVector<Value> work{d.specValue};
  DenseSet<Value> seen;
  while (!work.empty()) {
    Value v = work.pop_back_val();
    if (!seen.insert(v).second)
      continue;
    // A value named by another lineage-carrying tensor is a boundary; so is
    // the target itself when an earlier lineage already names it (an alias:
    // the stage then proves the alias from that lineage).
    std::string name = specNameWithLineage(v);
    Operation *def = v.getDefiningOp();
    if (!name.empty() && (v != d.specValue || name != d.target)) {
      auto ty = dyn_cast<RankedTensorType>(v.getType());
      auto known = coverage.find(name);
      if (isa<InputOp>(def) || !ty ||
          (known != coverage.end() ? known->second
                                   : fullyCovered(name, ty.getShape()))) {
        d.specInputs.insert(v);
        d.assumedSpecs.insert(name);
        continue;
      }
      // Partly covered: recomputed here (see fullyCovered).
      d.recomputed.push_back({name, v});
    }
    if (isa<InputOp>(def)) {
      d.specInputs.insert(v);
      continue;
    }
    d.specOps.insert(def);
    for (Value operand : def->getOperands())
      work.push_back(operand);
  }

  // Plan cone, across ranks.
  {
    // Consecutive references mostly name one tensor of one program.
    Operation *lastProg = nullptr;
    const char *lastName = nullptr;
    Value lastValue;
    for (const LineageView &attr : lineagesOf(target))
      attr.walkRefs([&](size_t, PlanRefView ref) {
        Operation *prog = schedule->programOf.lookup(ref.rank);
        if (prog != lastProg || ref.name.data() != lastName) {
          lastProg = prog;
          lastName = ref.name.data();
          auto names = progNames.find(prog);
          lastValue = names == progNames.end()
                          ? Value()
                          : names->second.valueOf.lookup(ref.name);
        }
        d.planTargets.push_back({ref.rank, lastValue, ref.name});
      });
    auto key = [](const StageDraft::PlanTarget &t) {
      return std::make_tuple(t.rank, t.value.getAsOpaquePointer(), t.name);
    };
    llvm::sort(d.planTargets,
               [&](auto &a, auto &b) { return key(a) < key(b); });
    d.planTargets.erase(
        std::unique(d.planTargets.begin(), d.planTargets.end(),
                    [&](auto &a, auto &b) { return key(a) == key(b); }),
        d.planTargets.end());
  }
  // The cone is walked on classes (StagePartitionImpl.h): a value of a
  // shared prefix is the representative's, a set of ranks is a set of
  // class positions. Targets are compared in that form.
  std::vector<RankValue> targetKeys;
  for (const StageDraft::PlanTarget &t : d.planTargets)
    targetKeys.push_back({t.rank, canon(t.value)});
  llvm::sort(targetKeys, RankValueLess());
  auto isTarget = [&](int64_t rank, Value v) {
    return std::binary_search(targetKeys.begin(), targetKeys.end(),
                              RankValue{rank, v}, RankValueLess());
  };
  // The cone, walked per value with the set of ranks that reach it.
  DenseMap<Value, RankSet> pseen;
  SmallVector<std::pair<Value, RankSet>> pwork;
  auto sizeOf = [&](RankProgramOp prog) { return classRanks(prog).size(); };
  // Pushes of single ranks (communication), merged per value first.
  llvm::MapVector<Value, RankSet> pending;
  auto addPending = [&](Value v, int64_t rank) {
    v = canon(v);
    auto [it, fresh] = pending.try_emplace(v);
    if (fresh)
      it->second.resize(sizeOf(programOf(v)));
    it->second.set(cposOf.lookup(rank));
  };
  auto flushPending = [&] {
    for (auto &[v, set] : pending)
      pwork.push_back({v, std::move(set)});
    pending.clear();
  };
  auto markOp = [&](Operation *op, int64_t rank) {
    op = canon(op);
    auto [it, fresh] = d.planOps.try_emplace(op);
    if (fresh)
      it->second.resize(sizeOf(programOf(op)));
    it->second.set(cposOf.lookup(rank));
  };
  for (const StageDraft::PlanTarget &t : d.planTargets)
    addPending(t.value, t.rank);
  flushPending();
  DenseSet<size_t> steps;         // (indices never reach its two marker keys)
  DenseSet<uint32_t> assumedCuts; // cut ids whose spec name is assumed
  while (!pwork.empty()) {
    auto [v, fresh] = pwork.pop_back_val();
    RankProgramOp prog = programOf(v);
    ArrayRef<int64_t> ranks = classRanks(prog);
    {
      auto [it, first] = pseen.try_emplace(v);
      if (first)
        it->second.resize(ranks.size());
      fresh.reset(it->second);
      if (fresh.none())
        continue;
      it->second |= fresh;
    }
    if (auto it = cutsOf.find(v); it != cutsOf.end())
      for (auto [rank, id] : it->second) {
        unsigned pos = cposOf.lookup(rank);
        if (!fresh.test(pos))
          continue;
        const PlanCut &cut = cutTable[id];
        if (cut.spec == d.target && isTarget(rank, v))
          continue;
        d.planInputs.push_back({rank, v, cut});
        if (assumedCuts.insert(id).second) // a name once, not per rank
          d.assumedSpecs.insert(cut.spec.str());
        fresh.reset(pos);
      }
    if (fresh.none())
      continue;
    int64_t firstRank = ranks[fresh.find_first()];
    Operation *def = v.getDefiningOp();
    if (!def || isCollectiveOp(def) || isa<RecvOp, SendOp>(def)) {
      // Communication: each rank's step, its peers' operands merged.
      auto found = producerOf.find(v);
      const std::vector<size_t> *producers =
          found == producerOf.end() ? nullptr : &found->second;
      for (unsigned pos : fresh.set_bits()) {
        size_t prod =
            producers && pos < producers->size() ? (*producers)[pos] : kNoStep;
        if (prod == kNoStep)
          return prog->emitError()
                 << "internal error: no producer for a plan value on rank "
                 << ranks[pos];
        if (!steps.insert(prod).second)
          continue;
        const PlanStep &step = schedule->steps[prod];
        switch (step.kind) {
        case PlanStep::Local:
          break; // not recorded (see collect)
        case PlanStep::Collective:
          for (auto &[r, mop] : step.members) {
            markOp(mop, r);
            addPending(mop->getOperand(0), r);
          }
          break;
        case PlanStep::P2P:
          markOp(step.op, step.rank);
          markOp(step.sendOp, step.peer);
          addPending(step.sendOp->getOperand(0), step.peer);
          break;
        }
      }
      flushPending();
      continue;
    }
    if (auto in = dyn_cast<InputOp>(def)) {
      toolVerdict() = Verdict::Wrong;
      InFlightDiagnostic diag = in.emitError();
      diag << "unreachable lineage: spec tensor '" << target
           << "' is computed on the plan from plan input '" << in.getName()
           << "' on rank " << firstRank
           << ", which carries no lineage; plan targets:";
      for (const StageDraft::PlanTarget &t : d.planTargets)
        diag << " '" << t.name << "'@" << t.rank;
      diag << "; candidate sources (the spec computes '" << target
           << "' from):";
      bool any = false;
      for (Value sv : d.specInputs) {
        std::string n = specNameWithLineage(sv);
        if (n.empty())
          continue;
        any = true;
        diag << " '" << n << "' (plan";
        for (const LineageView &a : lineagesOf(n))
          a.walkRefs([&](size_t, PlanRefView ref) {
            diag << " '" << ref.name << "'@" << ref.rank;
          });
        diag << ")";
      }
      if (!any)
        diag << " none";
      return diag;
    }
    // A local op of the program, on the ranks that did not reach it yet.
    auto [it, first] = d.planOps.try_emplace(def);
    if (first)
      it->second.resize(ranks.size());
    RankSet add = fresh;
    add.reset(it->second);
    if (add.none())
      continue;
    it->second |= add;
    for (Value operand : def->getOperands())
      pwork.push_back({canon(operand), add});
  }
  relateAssumed(d);
  return success();
}

/// At most this many spec ops recompute one assumed tensor: a relation
/// deeper than that (a saved activation of a whole forward pass) stays an
/// assumption-free input, as before.
static constexpr size_t kMaxRelationOps = 32;

void Partitioner::relateAssumed(StageDraft &d) {
  DenseSet<Value> avail(d.specInputs.begin(), d.specInputs.end());
  for (Operation *op : d.specOps)
    for (Value r : op->getResults())
      avail.insert(r);
  DenseSet<Value> recomputed;
  for (auto &[name, v] : d.recomputed)
    recomputed.insert(v);
  for (const std::string &name : d.assumedSpecs) {
    Value v = specNames.valueOf.lookup(name);
    if (!v || name == d.target || recomputed.count(v))
      continue;
    Operation *def = v.getDefiningOp();
    if (!def || isa<InputOp>(def))
      continue;
    bool wasInput = d.specInputs.contains(v);
    if (avail.count(v) && !wasInput)
      continue; // computed by the stage already
    // The cone of `v` above the values the stage already has, if it needs
    // nothing else: a relation among the stage's own values. (Pulling in
    // program inputs would be sound too, but recomputes whole forward
    // passes inside backward stages.)
    llvm::SetVector<Operation *> cone;
    SmallVector<Value> work{v};
    DenseSet<Value> seen;
    bool ok = true;
    while (ok && !work.empty()) {
      Value u = work.pop_back_val();
      if (!seen.insert(u).second || (u != v && avail.count(u)))
        continue;
      Operation *op = u.getDefiningOp();
      if (!op || isa<InputOp>(op)) {
        ok = false;
      } else if (cone.insert(op)) {
        ok = cone.size() <= kMaxRelationOps;
        for (Value operand : op->getOperands())
          work.push_back(operand);
      }
    }
    if (!ok)
      continue;
    if (wasInput)
      d.specInputs.remove(v);
    for (Operation *op : cone) {
      d.specOps.insert(op);
      for (Value r : op->getResults()) {
        avail.insert(r);
        if (!recomputed.insert(r).second)
          continue;
        // Every assumed name of a recomputed value binds to it.
        for (const std::string &n : specNames.namesOf.lookup(r))
          if (d.assumedSpecs.count(n) && n != d.target)
            d.recomputed.push_back({n, r});
      }
    }
  }
}

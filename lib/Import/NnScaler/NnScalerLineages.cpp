//===- NnScalerLineages.cpp - VERDICT's lineages as tv.lineage ops --------===//
//
// The lineages of the nnScaler importer (NnScaler.h): VERDICT's lineages
// merged per spec tensor and slice, the finer of two overlapping statements
// of one tensor dropped, and each slice emitted as one tv.lineage (a pair
// for a complex tensor) after the lineage attribute's own checks.
//
//===----------------------------------------------------------------------===//
#include "NnScaler.h"
#include "TrainVerify/Dialect/Lineage.h"
#include "llvm/Support/ScopedPrinter.h"

using namespace mlir;
using namespace mlir::tv;
using namespace mlir::tv::nnscaler;

/// VERDICT may state one spec tensor twice at two granularities: the
/// shards before an all-gather and the gathered tensor after it. Both are
/// true; a tv lineage has one box per slice, so where the boxes of two
/// lineages of one tensor overlap without being equal, the finer one (more
/// slices; the earlier on a tie) is dropped. Dropping an intermediate
/// lineage only removes a cut point: its stage grows over the collective,
/// and the final lineages stay.
/// The boxes `walk` reads, from each parsed lineage.
static void jsonLineageBoxes(
    LineageWalk walk,
    llvm::function_ref<void(size_t, int64_t, LineageBoxes)> fn) {
  (void)walk([&](size_t li, const json::Value &lv) -> LogicalResult {
    const json::Object *l = lv.getAsObject();
    TRef ts;
    const json::Array *slices = l ? l->getArray("slices") : nullptr;
    if (!l || !parseTRef(l->get("Ts"), ts) || !slices)
      return success();
    LineageBoxes boxes;
    for (const json::Value &sv : *slices) {
      const json::Object *so = sv.getAsObject();
      const json::Array *box = so ? so->getArray("slice") : nullptr;
      std::vector<int64_t> b;
      if (box)
        for (const json::Value &dv : *box)
          if (const json::Array *r = dv.getAsArray())
            for (const json::Value &x : *r)
              b.push_back(x.getAsInteger().value_or(0));
      boxes.push_back(std::move(b));
    }
    fn(li, ts.tid, std::move(boxes));
    return success();
  });
}

static std::optional<std::set<size_t>> coarserLineages(LineageBoxWalk walk) {
  using Box = std::vector<int64_t>; // lo0, hi0, lo1, hi1, ...
  std::map<int64_t, std::vector<std::pair<size_t, std::vector<Box>>>> byTs;
  if (!walk([&](size_t li, int64_t tid, LineageBoxes boxes) {
        byTs[tid].push_back({li, std::move(boxes)});
      }))
    return std::nullopt;
  auto overlap = [](const Box &a, const Box &b) {
    if (a.size() != b.size() || a == b)
      return false;
    for (size_t d = 0; d + 1 < a.size(); d += 2)
      if (a[d + 1] <= b[d] || b[d + 1] <= a[d])
        return false;
    return true;
  };
  std::set<size_t> dropped;
  for (auto &[tid, ls] : byTs)
    for (size_t i = 0; i < ls.size(); ++i)
      for (size_t j = i + 1; j < ls.size(); ++j) {
        if (dropped.count(ls[i].first) || dropped.count(ls[j].first))
          continue;
        bool clash = false;
        for (const Box &a : ls[i].second)
          for (const Box &b : ls[j].second)
            clash |= overlap(a, b);
        if (clash)
          dropped.insert(ls[i].second.size() > ls[j].second.size()
                             ? ls[i].first
                             : ls[j].second.size() > ls[i].second.size()
                                   ? ls[j].first
                                   : ls[i].first);
      }
  return dropped;
}

LogicalResult Importer::emitLineages(LineageWalk walk, LineageBoxWalk boxes,
                                     LineageScanWalk scanned) {
  // Merge VERDICT's lineages per (spec tensor, slice); union the groups.
  struct Entry {
    std::string spec;
    SmallVector<int64_t> lo, hi;
    std::vector<std::vector<std::pair<std::string, int64_t>>> groups;
    bool complex = false;
    std::string path; // JSON path of the first slice that states it
  };
  std::vector<Entry> entries;
  std::map<std::pair<std::string, std::vector<int64_t>>, size_t> index;
  std::optional<std::set<size_t>> scannedDrops;
  if (boxes)
    scannedDrops = coarserLineages(boxes);
  std::set<size_t> dropped =
      scannedDrops ? std::move(*scannedDrops)
                   : *coarserLineages(
                         [&](llvm::function_ref<void(size_t, int64_t,
                                                     LineageBoxes)>
                                 fn) {
                           jsonLineageBoxes(walk, fn);
                           return true;
                         });
  // The statement of one slice: merged with those of the same box.
  auto entryFor = [&](const std::string &specName, const std::string &spath,
                      bool complex, ArrayRef<int64_t> lo,
                      ArrayRef<int64_t> hi) -> Entry & {
    std::vector<int64_t> keyBox;
    for (auto [l, h] : llvm::zip(lo, hi)) {
      keyBox.push_back(l);
      keyBox.push_back(h);
    }
    auto [it, inserted] = index.try_emplace({specName, keyBox}, entries.size());
    if (inserted) {
      Entry e;
      e.spec = specName;
      e.path = spath;
      e.complex = complex;
      e.lo.assign(lo.begin(), lo.end());
      e.hi.assign(hi.begin(), hi.end());
      entries.push_back(std::move(e));
    }
    return entries[it->second];
  };
  auto addGroup = [](Entry &dst,
                     std::vector<std::pair<std::string, int64_t>> refs) {
    llvm::sort(refs);
    if (llvm::find(dst.groups, refs) == dst.groups.end())
      dst.groups.push_back(std::move(refs));
  };
  auto fullShapeError = [&](const std::string &path, int64_t tid,
                            ArrayRef<int64_t> shape) {
    InFlightDiagnostic d = error(path + ".full_shape");
    d << "expected the shape of spec tensor " << tid << ", [";
    llvm::interleaveComma(shape, d);
    d << "]";
    return LogicalResult(d);
  };
  auto readParsed = [&](size_t li, const json::Value &lv) -> LogicalResult {
    std::string path = "$.lineages[" + std::to_string(li) + "]";
    const json::Object *l = lv.getAsObject();
    TRef ts;
    if (!l || !parseTRef(l->get("Ts"), ts))
      return error(path) << "lineage needs a Ts tensor reference";
    if (failed(onlyKeys(*l, path, kLineageKeys, kLineageInfo)))
      return failure();
    if (const json::Value *fv = l->get("full_shape")) {
      auto it = gs.shape.find(ts.tid);
      const json::Array *fa = fv->getAsArray();
      bool same = fa && it != gs.shape.end() && fa->size() == it->second.size();
      for (size_t d = 0; same && d < fa->size(); ++d)
        same = (*fa)[d].getAsInteger() == std::optional<int64_t>(it->second[d]);
      if (!same && it != gs.shape.end())
        return fullShapeError(path, ts.tid, it->second);
    }
    if (dropped.count(li))
      return success();
    if (gs.masks.count(ts.tid))
      return success(); // masks are constants in tv (docs/nnscaler-import.md)
    const json::Array *slices = l->getArray("slices");
    if (!slices)
      return error(path) << "lineage needs 'slices'";
    std::string specName = name(ts, true);
    for (auto [si, sv] : llvm::enumerate(*slices)) {
      std::string spath = path + ".slices[" + std::to_string(si) + "]";
      const json::Object *s = sv.getAsObject();
      const json::Array *box = s ? s->getArray("slice") : nullptr;
      const json::Array *eq = s ? s->getArray("eq_groups") : nullptr;
      if (!box || !eq)
        return error(spath) << "slice needs 'slice' and 'eq_groups'";
      if (failed(onlyKeys(*s, spath, {"slice", "eq_groups"}, {})))
        return failure();
      SmallVector<int64_t, 4> lo, hi;
      for (auto [d, dv] : llvm::enumerate(*box)) {
        const json::Array *r = dv.getAsArray();
        if (!r || r->size() != 2 || !(*r)[0].getAsInteger() ||
            !(*r)[1].getAsInteger())
          return error(spath + ".slice[" + std::to_string(d) + "]")
                 << "expected [start, end)";
        lo.push_back(*(*r)[0].getAsInteger());
        hi.push_back(*(*r)[1].getAsInteger());
      }
      Entry &dst =
          entryFor(specName, spath, gs.complexTids.count(ts.tid), lo, hi);
      for (auto [gi, gv] : llvm::enumerate(*eq)) {
        const json::Array *grp = gv.getAsArray();
        if (!grp || grp->empty())
          return error(spath + ".eq_groups[" + std::to_string(gi) + "]")
                 << "expected a non-empty list of tensor references";
        std::vector<std::pair<std::string, int64_t>> refs;
        for (auto [ti, tv] : llvm::enumerate(*grp)) {
          TRef tp;
          if (!parseTRef(&tv, tp) || tp.rank < 0)
            return error(spath + ".eq_groups[" + std::to_string(gi) + "][" +
                         std::to_string(ti) + "]")
                   << "expected a plan tensor [rank >= 0, mb, tid, v]";
          refs.push_back({name(tp, false), tp.rank});
        }
        addGroup(dst, std::move(refs));
      }
    }
    return success();
  };
  // A scanned lineage is complete and well-formed (scanLineage): the same
  // steps without the diagnostics that cannot fire.
  auto readScanned = [&](size_t li, const ScannedLineage &l) -> LogicalResult {
    std::string path = "$.lineages[" + std::to_string(li) + "]";
    if (l.fullShape) {
      auto it = gs.shape.find(l.ts.tid);
      if (it != gs.shape.end() &&
          ArrayRef<int64_t>(*l.fullShape) != ArrayRef<int64_t>(it->second))
        return fullShapeError(path, l.ts.tid, it->second);
    }
    if (dropped.count(li) || gs.masks.count(l.ts.tid))
      return success();
    std::string specName = name(l.ts, true);
    for (auto [si, sl] : llvm::enumerate(l.slices)) {
      Entry &dst = entryFor(specName,
                            path + ".slices[" + std::to_string(si) + "]",
                            gs.complexTids.count(l.ts.tid), sl.lo, sl.hi);
      for (const std::vector<TRef> &grp : sl.groups) {
        std::vector<std::pair<std::string, int64_t>> refs;
        for (const TRef &tp : grp)
          refs.push_back({name(tp, false), tp.rank});
        addGroup(dst, std::move(refs));
      }
    }
    return success();
  };
  LogicalResult read =
      scanned ? scanned(readParsed, readScanned) : walk(readParsed);
  if (failed(read))
    return failure();
  b.setInsertionPointToEnd(module.getBody());
  // A plan tensor that VERDICT's lineages give two spec tensors is a bug
  // signal (docs/nnscaler-import.md §7): a node read its inputs as the other
  // tensor (br11 swaps the q and k gradients into BW.apply_rotary_emb).
  // Claims of whole plan tensors only (partial sums are not claims of one).
  std::map<std::pair<std::string, int64_t>, std::set<std::string>> claims;
  for (Entry &e : entries)
    for (auto &g : e.groups)
      if (g.size() == 1)
        claims[g[0]].insert(e.spec);
  warnConflictingClaims(claims);
  for (Entry &e : entries) {
    // A slice stated both as whole plan tensors (the reduced gradient on
    // every replica) and as sums of partial ones (the micro-batch
    // accumulations of every data-parallel rank, before the reducer) keeps
    // the whole tensors: they are what the step produces, and their stage
    // folds over data parallelism, where the sum across ranks does not.
    if (llvm::any_of(e.groups, [](auto &g) { return g.size() == 1; }))
      llvm::erase_if(e.groups, [](auto &g) { return g.size() > 1; });
    // A spec input equals plan inputs; VERDICT also lists copies the plan
    // computes from them (a multiref of the tokens), which are checked where
    // they are computed. Keep the groups of plan inputs where there are any.
    if (!e.complex && inputNames[-1].count(e.spec)) {
      auto isInput = [&](const std::pair<std::string, int64_t> &ref) {
        return inputNames[ref.second].count(ref.first) != 0;
      };
      std::vector<std::vector<std::pair<std::string, int64_t>>> kept;
      for (auto &g : e.groups)
        if (llvm::all_of(g, isInput))
          kept.push_back(g);
      if (!kept.empty())
        e.groups = std::move(kept);
    }
    // The copies of one tensor on many ranks (data-parallel replicas) are
    // one replicas list, not a group each.
    std::map<std::string, SmallVector<int64_t>> copies;
    for (auto &g : e.groups)
      if (g.size() == 1)
        copies[g[0].first].push_back(g[0].second);
    std::string replicaName;
    SmallVector<int64_t> replicaRanks;
    for (auto &[n, ranks] : copies)
      if (ranks.size() >= 2 && ranks.size() > replicaRanks.size())
        replicaName = n, replicaRanks = ranks;
    if (!replicaName.empty())
      llvm::erase_if(e.groups, [&](auto &g) {
        return g.size() == 1 && g[0].first == replicaName;
      });
    llvm::sort(replicaRanks);
    for (int part = e.complex ? 1 : 0; part <= (e.complex ? 2 : 0); ++part) {
      std::string suffix = part == 1 ? ".re" : part == 2 ? ".im" : "";
      SmallVector<Attribute> groupAttrs;
      for (auto &g : e.groups) {
        SmallVector<Attribute> refs;
        for (auto &[n, r] : g)
          refs.push_back(PlanRefAttr::get(ctx, n + suffix, r));
        groupAttrs.push_back(b.getArrayAttr(refs));
      }
      StringAttr specName = StringAttr::get(ctx, e.spec + suffix);
      ArrayAttr groupList = b.getArrayAttr(groupAttrs);
      StringAttr replicas = replicaName.empty()
                                ? StringAttr()
                                : StringAttr::get(ctx, replicaName + suffix);
      if (failed(LineageAttr::verify([&] { return emitError(fileLoc); },
                                     specName, e.lo, e.hi, groupList,
                                     replicas, replicaRanks, {})))
        return failure();
      auto attr = LineageAttr::get(ctx, specName, ArrayRef<int64_t>(e.lo),
                                   ArrayRef<int64_t>(e.hi), groupList,
                                   replicas, replicaRanks);
      LineageOp::create(b, NameLoc::get(b.getStringAttr(e.path), fileLoc),
                        attr);
    }
  }
  return success();
}

void Importer::warnConflictingClaims(
    const std::map<std::pair<std::string, int64_t>, std::set<std::string>>
        &claims) {
  ProgramParts parts = getProgramParts(module);
  PlanOp plan = parts.plan;
  if (!plan || !parts.spec)
    return;
  // Spec tensors that are copies of one another (a multiref) are one value:
  // a plan tensor may stand for both.
  llvm::StringMap<Value> specRoot;
  parts.spec.walk([&](TagOp tag) {
    Value v = tag.getValue();
    while (auto c = v.getDefiningOp<CopyOp>())
      v = c.getInput();
    specRoot[tag.getName()] = v;
  });
  auto distinct = [&](const std::set<std::string> &specs) {
    std::set<const void *> roots;
    for (const std::string &s : specs) {
      auto it = specRoot.find(s);
      roots.insert(it == specRoot.end()
                       ? static_cast<const void *>(&s)
                       : static_cast<const void *>(
                             it->second.getAsOpaquePointer()));
    }
    return roots.size() > 1;
  };
  // The consumers of each conflicting plan tensor, by the node that reads it.
  std::map<std::string, std::vector<std::string>> byConsumer;
  std::map<std::string, Location> consumerLoc;
  for (const auto &claim : claims) {
    const std::pair<std::string, int64_t> &ref = claim.first;
    const std::set<std::string> &specs = claim.second;
    if (specs.size() < 2 || !distinct(specs))
      continue;
    std::string what = "'" + ref.first + "'@" + std::to_string(ref.second) +
                       " (claimed by";
    for (const std::string &s : specs)
      what += " '" + s + "'";
    what += ")";
    bool any = false;
    for (auto prog : plan.getBody().front().getOps<RankProgramOp>()) {
      if (!llvm::is_contained(prog.getRanks(), ref.second))
        continue;
      prog.walk([&](Operation *op) {
        auto tag = dyn_cast<TagOp>(op);
        if (!tag || tag.getName() != ref.first)
          return;
        for (Operation *u : tag.getValue().getUsers()) {
          if (isa<TagOp, OutputOp>(u))
            continue;
          std::string key = llvm::to_string(u->getLoc());
          consumerLoc.try_emplace(key, u->getLoc());
          auto &list = byConsumer[key];
          if (llvm::find(list, what) == list.end())
            list.push_back(what);
          any = true;
        }
      });
    }
    if (!any)
      byConsumer["<no consumer>"].push_back(what);
  }
  for (auto &[key, tensors] : byConsumer) {
    auto it = consumerLoc.find(key);
    InFlightDiagnostic w =
        emitWarning(it != consumerLoc.end() ? it->second : fileLoc)
        << "conflicting lineages: "
        << (it != consumerLoc.end() ? "this node reads"
                                    : "no node reads")
        << " plan tensor(s) that the lineages give two spec tensors:";
    for (const std::string &t : tensors)
      w << " " << t;
    w << "; inputs swapped or misrouted here make the stages of those spec "
         "tensors fail";
  }
}

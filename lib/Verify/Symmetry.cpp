//===- Symmetry.cpp - folding a stage along a symmetric mesh axis ---------===//
//
// Let A be a mesh axis of size n. The stage is folded along A when
//  (1) ranks differing only in their A coordinate run the same rank program,
//      and every A-orbit of ranks is complete;
//  (2) the lineages of coordinate c are those of coordinate 0 translated: a
//      spec tensor is either factored along one dimension d into n equal
//      blocks (coordinate c holds boxes inside block c, at the same offsets
//      as coordinate 0 inside block 0) or not factored (identical boxes);
//  (3) in the spec, every value is Rep (no factored input reaches it), Par(d)
//      (block c of it is f(block c of the inputs), the same f for all c) or
//      Red (a plain sum over c of f(block c)), and Red values reach the
//      outputs through linear ops only;
//  (4) in the plan, the only communication along A is a sum all-reduce of a
//      per-rank value (Red), Red values reach the outputs through linear
//      ops only, and a spec output is Red exactly where its plan tensors are.
// Then the claim at coordinate c is the claim at coordinate 0 with the
// inputs of block c renamed (Par, Rep), and a Red claim sum_c f(X_c) ==
// sum_c P(X_c) for all X holds iff f == P (take all X_c equal), which is the
// claim at coordinate 0 of the folded stage. docs/symmetry.md has the details.
//
//===----------------------------------------------------------------------===//
#include "TrainVerify/Verify/Symmetry.h"
#include "TrainVerify/Dialect/Lineage.h"
#include "Folder.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

#include <map>

using namespace mlir;
using namespace mlir::tv;
using namespace mlir::tv::symmetry;

//===----------------------------------------------------------------------===//
// Ranks and lineages
//===----------------------------------------------------------------------===//

bool Folder::checkRanks(std::string &why) {
  for (auto prog : stage.getPlan().getBody().front().getOps<RankProgramOp>())
    for (int64_t r : prog.getRanks())
      programOf[r] = prog;
  DenseMap<int64_t, int64_t> orbit;
  for (auto [r, prog] : programOf) {
    auto it = programOf.find(rank0(r));
    if (it == programOf.end() || it->second != prog) {
      why = "rank " + std::to_string(r) + " does not run the program of rank " +
            std::to_string(rank0(r));
      return false;
    }
    ++orbit[rank0(r)];
  }
  for (auto [r0, count] : orbit)
    if (count != n) {
      why = "only " + std::to_string(count) + " of the " + std::to_string(n) +
            " coordinates of rank " + std::to_string(r0) + " take part";
      return false;
    }
  return true;
}

std::optional<std::pair<int, int64_t>>
Folder::mapAlongAxis(AffineMap blocks, DictionaryAttr where) {
  // Each mesh dimension's range on the map's slice.
  FailureOr<SmallVector<std::pair<int64_t, int64_t>>> ranges =
      sliceRanges(mesh, where);
  if (failed(ranges))
    return std::nullopt;
  // Symbolically first: index = g + d_a * k with g the index at coordinate 0,
  // read off the expression; 0 <= g < k by intervals.
  MLIRContext *ctx = blocks.getContext();
  AffineExpr da = getAffineDimExpr(axisIdx, ctx);
  AffineExpr zero = getAffineConstantExpr(0, ctx);
  int j = -1;
  int64_t k = 0;
  bool symbolic = true;
  SmallVector<std::pair<int64_t, int64_t>> at0(*ranges);
  at0[axisIdx] = {0, 0};
  for (auto [dim, e] : llvm::enumerate(blocks.getResults())) {
    AffineExpr g = e.replace(da, zero);
    AffineExpr diff = simplifyAffineExpr(e - g, blocks.getNumDims(), 0);
    int64_t kd;
    if (auto c = dyn_cast<AffineConstantExpr>(diff); c && c.getValue() == 0)
      continue; // independent of the coordinate
    if (diff == da) {
      kd = 1;
    } else if (auto mul = dyn_cast<AffineBinaryOpExpr>(diff);
               mul && mul.getKind() == AffineExprKind::Mul &&
               mul.getLHS() == da && isa<AffineConstantExpr>(mul.getRHS())) {
      kd = cast<AffineConstantExpr>(mul.getRHS()).getValue();
    } else {
      symbolic = false;
      break;
    }
    auto gr = affineRangeOver(g, at0);
    if (j >= 0 || kd <= 0 || !gr || gr->first < 0 || gr->second >= kd) {
      symbolic = false;
      break;
    }
    j = dim;
    k = kd;
  }
  if (symbolic)
    return std::make_pair(j, k);
  // Otherwise by evaluation at every rank of the slice (exact).
  j = -1;
  k = 0;
  bool ok = true;
  SmallVector<int64_t> zeroed;
  auto walk = [&](bool settle) {
    return forEachRankWhere(
        mesh, where, [&](int64_t, ArrayRef<int64_t> coords) {
          if (!ok)
            return;
          int64_t c = coords[axisIdx];
          zeroed.assign(coords.begin(), coords.end());
          zeroed[axisIdx] = 0;
          for (auto [dim, e] : llvm::enumerate(blocks.getResults())) {
            std::optional<int64_t> v = evaluateAffineAt(e, coords);
            std::optional<int64_t> g = evaluateAffineAt(e, zeroed);
            if (!v || !g) {
              ok = false;
              return;
            }
            if (settle) {
              // Along j: g + c * k with 0 <= g < k; elsewhere constant.
              if ((int)dim == j ? (*g < 0 || *g >= k || *v != *g + c * k)
                                : *v != *g)
                ok = false;
              continue;
            }
            if (*v == *g)
              continue;
            if (c == 0 || (j >= 0 && j != (int)dim)) {
              ok = false;
              return;
            }
            if (j < 0) {
              if ((*v - *g) % c != 0) {
                ok = false;
                return;
              }
              j = dim;
              k = (*v - *g) / c;
            }
          }
        });
  };
  if (failed(walk(false)) || !ok)
    return std::nullopt;
  if (j >= 0 && (k <= 0 || failed(walk(true)) || !ok))
    return std::nullopt;
  return std::make_pair(j, k);
}

bool Folder::checkLineages(std::string &why) {
  // The spec tensors the lineages name, with their full extents: the
  // spec's type when it holds the tensor, else the largest upper bound a
  // lineage gives. Looked up by the lineage's spec attribute (uniqued), by
  // name only once per attribute.
  struct Tensor {
    StringRef name;
    SmallVector<int64_t> ext;
    bool held;
    SmallVector<uint32_t> subs; // indices in `subs`
  };
  std::vector<Tensor> tensors;
  llvm::StringMap<uint32_t> tensorByName;
  auto addHeld = [&](StringRef name, ArrayRef<int64_t> shape) {
    auto [it, fresh] = tensorByName.try_emplace(name, tensors.size());
    if (fresh)
      tensors.push_back({name, {}, true, {}});
    tensors[it->second].ext.assign(shape.begin(), shape.end());
  };
  for (Operation &op : stage.getSpec().getBody().front()) {
    if (auto in = dyn_cast<InputOp>(op))
      addHeld(in.getName(), shapeOf(in.getResult()));
    else if (auto out = dyn_cast<OutputOp>(op))
      addHeld(out.getName(), shapeOf(out.getValue()));
    else if (auto tag = dyn_cast<TagOp>(op))
      addHeld(tag.getName(), shapeOf(tag.getValue()));
  }
  DenseMap<Attribute, uint32_t> tensorOfSpec;
  auto tensorOf = [&](StringAttr spec) {
    auto [it, fresh] = tensorOfSpec.try_emplace(spec, 0);
    if (fresh) {
      auto [byName, newName] =
          tensorByName.try_emplace(spec.getValue(), tensors.size());
      if (newName)
        tensors.push_back({spec.getValue(), {}, false, {}});
      it->second = byName->second;
    }
    return it->second;
  };

  // Each lineage's groups by coordinate (a Sub: the lineage at one
  // coordinate), their references in one flat array.
  struct Sub {
    LineageAttr l;
    bool guarantee;
    int64_t coord;
    uint32_t tensor;
    uint32_t firstGroup, numGroups; // in `groupsOf`
  };
  std::vector<Sub> subs;
  std::vector<PlanRefView> refs;
  std::vector<std::pair<uint32_t, uint32_t>> groupsOf; // (first ref, size)
  struct Pending {
    int64_t coord;
    uint32_t firstRef, size;
  };
  SmallVector<Pending> pending;
  // Lineage maps are decided on the map (below), not on their statements.
  SmallVector<std::pair<LineageMapAttr, bool>> maps;
  for (bool guarantee : {false, true}) {
    ArrayAttr list = guarantee ? stage.getGuarantees() : stage.getAssumes();
    for (Attribute a : list) {
      if (auto m = dyn_cast<LineageMapAttr>(a)) {
        maps.push_back({m, guarantee});
        continue;
      }
      auto l = cast<LineageAttr>(a);
      bool mixed = false;
      // Groups that sum one tensor over the whole axis, and groups on one
      // coordinate (a lineage may not have both).
      size_t orbitGroups = 0, plainGroups = 0;
      bool untranslated = false;
      pending.clear();
      l.walkGroups([&](size_t, ArrayRef<PlanRefView> g) {
        if (g.empty() || mixed || untranslated)
          return;
        // References outside the stage (micro-batch folding only) have no
        // coordinate; the others must share one.
        int64_t c = -2;
        for (const PlanRefView &ref : g)
          if (int64_t rc = refCoord(ref); rc != -2 && c == -2)
            c = rc;
        if (c == -2)
          return;
        bool oneCoord = true;
        for (const PlanRefView &ref : g)
          if (int64_t rc = refCoord(ref); rc != -2 && rc != c)
            oneCoord = false;
        if (oneCoord) {
          ++plainGroups;
          pending.push_back({c, (uint32_t)refs.size(), (uint32_t)g.size()});
          refs.insert(refs.end(), g.begin(), g.end());
          return;
        }
        // A guarantee's group that sums a per-rank tensor over the axis
        // (the distributed optimizer's reduced gradient before its
        // reduce-scatter: sum over dp of grad.local): read as one group per
        // coordinate, each coordinate's terms; the translation check below
        // then asks every coordinate's terms to be coordinate 0's moved,
        // and checkRedMatch asks the spec output to be a sum over the axis
        // and the terms per-rank (docs/symmetry.md, "Sums in lineages").
        if (lanes || !guarantee) {
          mixed = true;
          return;
        }
        ++orbitGroups;
        SmallVector<SmallVector<PlanRefView>> byCoord(n);
        for (const PlanRefView &ref : g)
          byCoord[refCoord(ref)].push_back(ref);
        // Each coordinate's terms, moved to coordinate 0, are this group's
        // coordinate-0 terms (per group: pieces of two groups that match
        // each other crosswise would make the folded claim stronger than
        // the stage's).
        auto moved = [&](ArrayRef<PlanRefView> terms) {
          SmallVector<std::pair<StringRef, int64_t>> out;
          for (const PlanRefView &ref : terms)
            out.push_back(refAt0(ref));
          llvm::sort(out);
          return out;
        };
        auto at0 = moved(byCoord[0]);
        for (auto [k, terms] : llvm::enumerate(byCoord)) {
          if (terms.empty()) {
            mixed = true;
            return;
          }
          if (k > 0 && moved(terms) != at0) {
            untranslated = true;
            return;
          }
          pending.push_back(
              {(int64_t)k, (uint32_t)refs.size(), (uint32_t)terms.size()});
          refs.insert(refs.end(), terms.begin(), terms.end());
        }
      });
      if (orbitGroups && plainGroups)
        mixed = true;
      if (!mixed && orbitGroups)
        orbitSums.insert(l);
      if (untranslated) {
        why = "a lineage group of '" + l.getSpec().getValue().str() +
              "' sums over '" + axisName.str() +
              "' terms that are not its coordinate-0 terms translated";
        return false;
      }
      if (mixed) {
        why = "a lineage group of '" + l.getSpec().getValue().str() +
              "' sums tensors of different '" + axisName.str() +
              "' coordinates";
        return false;
      }
      if (pending.empty())
        continue;
      // One Sub per coordinate (a group's order within its Sub, and the
      // Subs' order, are not compared: keys sort them).
      llvm::stable_sort(pending, [](const Pending &x, const Pending &y) {
        return x.coord < y.coord;
      });
      uint32_t t = tensorOf(l.getSpec());
      for (size_t i = 0; i < pending.size();) {
        Sub s{l, guarantee, pending[i].coord, t, (uint32_t)groupsOf.size(), 0};
        for (; i < pending.size() && pending[i].coord == s.coord; ++i)
          groupsOf.push_back({pending[i].firstRef, pending[i].size});
        s.numGroups = groupsOf.size() - s.firstGroup;
        tensors[t].subs.push_back(subs.size());
        subs.push_back(s);
      }
    }
  }
  // Virtual extents for tensors the spec does not hold.
  for (const Sub &s : subs) {
    Tensor &t = tensors[s.tensor];
    if (t.held)
      continue;
    if (t.ext.empty())
      t.ext.assign(s.l.getRank(), 0);
    if (t.ext.size() != s.l.getRank()) {
      why = "lineages of '" + t.name.str() + "' disagree on its rank";
      return false;
    }
    for (unsigned d = 0; d < s.l.getRank(); ++d)
      t.ext[d] = std::max(t.ext[d], s.l.getUpper()[d]);
  }
  // Each map's statements are translates of its coordinate-0 ones when the
  // map leaves the axis free and each block index is either independent of
  // the axis's coordinate or, along one dimension j, g + c * k with
  // 0 <= g < k (g: the index at coordinate 0) and the tensor's extent along
  // j n * k * shape[j]: coordinate c's boxes then lie in block c of n
  // equal blocks at coordinate 0's offsets, on coordinate 0's ranks moved
  // (docs/symmetry.md, rule 2, on the map; decision 127). Checked by
  // evaluating the indices at every rank of the map's slice: integers,
  // no attribute per statement. A map this does not decide (another mesh,
  // a tensor the spec does not hold or that also has plain lineages here,
  // maps of one tensor factored differently) asks for the statements.
  DenseMap<uint32_t, std::pair<int, int64_t>> mapDimOf; // tensor -> (j, b)
  for (auto [m, guarantee] : maps) {
    auto asksStatements = [&](const Twine &w) {
      needsStatements = true;
      why = ("lineage map of '" + m.getSpec().getValue() + "': " + w).str();
      return false;
    };
    if (m.getMesh().getValue() != mesh.getSymName())
      return asksStatements("on another mesh");
    uint32_t ti = tensorOf(m.getSpec());
    const Tensor &t = tensors[ti];
    if (!t.held || !t.subs.empty())
      return asksStatements("not the stage's only lineages of its tensor");
    if (llvm::any_of(m.getWhere(), [&](NamedAttribute w) {
          return w.getName().getValue() == axisName;
        }))
      return asksStatements("holds one coordinate of the axis");
    AffineMap blocks = m.getBlocks().getValue();
    ArrayRef<int64_t> shape = m.getShape();
    if (t.ext.size() != shape.size())
      return asksStatements("its blocks and the tensor differ in rank");
    std::optional<std::pair<int, int64_t>> jk =
        mapAlongAxis(blocks, m.getWhere());
    if (!jk)
      return asksStatements("its block indices do not translate along '" +
                            axisName + "'");
    auto [j, k] = *jk;
    int64_t blockLen = 0, extent = 0;
    if (j >= 0 && (__builtin_mul_overflow(k, shape[j], &blockLen) ||
                   __builtin_mul_overflow(blockLen, n, &extent) ||
                   t.ext[j] != extent))
      return asksStatements("its blocks along dimension " +
                            std::to_string(j) + " are not in " +
                            std::to_string(n) + " equal parts");
    // Coordinate 0's boxes lie inside the tensor (its statements then lie
    // inside block 0 along j and inside the tensor elsewhere, so no
    // statement folded away could have been refused for its bounds).
    {
      // (mapAlongAxis read the slice: its ranges exist.)
      SmallVector<std::pair<int64_t, int64_t>> at0 =
          *sliceRanges(mesh, m.getWhere());
      at0[axisIdx] = {0, 0};
      for (auto [d, e] : llvm::enumerate(blocks.getResults())) {
        auto r = affineRangeOver(e, at0);
        int64_t top, lo, hi;
        if (!r || __builtin_add_overflow(r->second, 1, &top) ||
            __builtin_mul_overflow(r->first, shape[d], &lo) ||
            __builtin_mul_overflow(top, shape[d], &hi) || lo < 0 ||
            hi > ((int)d == j ? blockLen : t.ext[d]))
          return asksStatements("its boxes at coordinate 0 may lie outside "
                                "the tensor");
      }
    }
    std::pair<int, int64_t> dim{j, j >= 0 ? k * shape[j] : 0};
    auto [it, fresh] = mapDimOf.try_emplace(ti, dim);
    if (!fresh && it->second != dim)
      return asksStatements("maps of one tensor factored differently");
  }
  // The factored dimension of each tensor: every box of coordinate c lies in
  // block c along it.
  SmallVector<int> dimOf(tensors.size(), -1);
  for (auto [ti, t] : llvm::enumerate(tensors)) {
    if (auto it = mapDimOf.find(ti); it != mapDimOf.end()) {
      dimOf[ti] = it->second.first;
      factored[t.name] = it->second.first;
      if (it->second.first >= 0)
        blockSize[t.name] = it->second.second;
      continue;
    }
    ArrayRef<int64_t> ext = t.ext;
    int found = -1;
    for (int d = 0; d < (int)ext.size() && found < 0; ++d) {
      if (ext[d] % n != 0 || t.subs.empty())
        continue;
      int64_t b = ext[d] / n;
      bool inside = true;
      for (uint32_t si : t.subs) {
        const Sub &s = subs[si];
        if (s.l.getRank() != ext.size() ||
            s.l.getLower()[d] < s.coord * b ||
            s.l.getUpper()[d] > (s.coord + 1) * b) {
          inside = false;
          break;
        }
      }
      if (inside)
        found = d;
    }
    dimOf[ti] = found;
    factored[t.name] = found;
    if (found >= 0)
      blockSize[t.name] = ext[found] / n;
  }
  // Coordinate c's lineages, translated to block 0 and to the ranks of
  // coordinate 0, must be coordinate 0's.
  // Keys are integer sequences: (list, spec tensor id, shifted box, then
  // each group as its size and sorted (name id, rank at coordinate 0)
  // pairs, the groups sorted), kept in one array per coordinate. Names are
  // interned, so equal keys mean equal lineages.
  llvm::StringMap<int64_t> nameId;
  DenseMap<std::pair<const char *, size_t>, int64_t> idByStorage;
  auto idOf = [&](StringRef name) {
    auto [it, fresh] = idByStorage.try_emplace({name.data(), name.size()}, 0);
    if (fresh)
      it->second = nameId.try_emplace(name, nameId.size()).first->second;
    return it->second;
  };
  using Slice = std::pair<uint32_t, uint32_t>; // (offset, length)
  std::vector<std::vector<int64_t>> arena(n);
  std::vector<std::vector<Slice>> keys(n);
  std::vector<int64_t> scratch;
  std::vector<Slice> groupKeys;
  SmallVector<std::pair<int64_t, int64_t>, 4> pairs;
  auto less = [](ArrayRef<int64_t> x, ArrayRef<int64_t> y) {
    return std::lexicographical_compare(x.begin(), x.end(), y.begin(),
                                        y.end());
  };
  for (const Sub &s : subs) {
    if (s.coord < 0)
      continue; // owned by no micro-batch: compared as part of no lane
    const Tensor &t = tensors[s.tensor];
    int d = dimOf[s.tensor];
    std::vector<int64_t> &out = arena[s.coord];
    uint32_t start = out.size();
    out.push_back(s.guarantee);
    out.push_back(idOf(t.name));
    out.push_back(s.l.getRank());
    for (unsigned i = 0; i < s.l.getRank(); ++i) {
      int64_t shift = (int)i == d ? s.coord * (t.ext[i] / n) : 0;
      out.push_back(s.l.getLower()[i] - shift);
      out.push_back(s.l.getUpper()[i] - shift);
    }
    // The scale is part of the claim: two lineages that differ in it only
    // are not translates of each other.
    auto [num, den] = s.l.getScaleFraction();
    out.push_back(num);
    out.push_back(den);
    scratch.clear();
    groupKeys.clear();
    for (uint32_t gi = s.firstGroup; gi < s.firstGroup + s.numGroups; ++gi) {
      auto [first, size] = groupsOf[gi];
      pairs.clear();
      for (const PlanRefView &ref : ArrayRef(refs).slice(first, size)) {
        auto [name0, r0] = refAt0(ref);
        pairs.push_back({idOf(name0), r0});
      }
      llvm::sort(pairs);
      groupKeys.push_back({(uint32_t)scratch.size(), 1 + 2 * size});
      scratch.push_back(size);
      for (auto [a, b] : pairs)
        scratch.push_back(a), scratch.push_back(b);
    }
    auto slice = [&](const std::vector<int64_t> &v, Slice x) {
      return ArrayRef(v).slice(x.first, x.second);
    };
    llvm::sort(groupKeys, [&](Slice x, Slice y) {
      return less(slice(scratch, x), slice(scratch, y));
    });
    out.push_back(groupKeys.size());
    for (Slice g : groupKeys)
      out.insert(out.end(), scratch.begin() + g.first,
                 scratch.begin() + g.first + g.second);
    keys[s.coord].push_back({start, (uint32_t)(out.size() - start)});
  }
  for (int64_t c = 0; c < n; ++c) {
    const std::vector<int64_t> &v = arena[c];
    llvm::sort(keys[c], [&](Slice x, Slice y) {
      return less(ArrayRef(v).slice(x.first, x.second),
                  ArrayRef(v).slice(y.first, y.second));
    });
  }
  for (int64_t c = 1; c < n; ++c) {
    bool same = keys[c].size() == keys[0].size();
    for (size_t i = 0; same && i < keys[c].size(); ++i)
      same = ArrayRef(arena[c]).slice(keys[c][i].first, keys[c][i].second) ==
             ArrayRef(arena[0]).slice(keys[0][i].first, keys[0][i].second);
    if (!same) {
      why = "the lineages of '" + axisName.str() + "' coordinate " +
            std::to_string(c) + " are not those of coordinate 0 translated";
      return false;
    }
  }
  return true;
}

bool Folder::analyze(std::string &why) {
  if (lanes)
    return checkLanes(why) && checkLineages(why) && analyzeSpec(why) &&
           analyzeLanePlan(why);
  return checkRanks(why) && checkLineages(why) && analyzeSpec(why) &&
         analyzePlan(why);
}

//===----------------------------------------------------------------------===//
// Entry points
//===----------------------------------------------------------------------===//

bool mlir::tv::foldStageAlongAxis(StageOp stage, StringRef axis,
                                  std::string *whyNot) {
  std::string why;
  auto no = [&](std::string w) {
    if (whyNot)
      *whyNot = std::move(w);
    return false;
  };
  PlanOp plan = stage.getPlan();
  SpecOp spec = stage.getSpec();
  if (!plan || !spec)
    return no("stage has no spec or no plan");
  MeshOp mesh = plan.getMeshOp();
  if (!mesh)
    return no("plan refers to an unknown mesh");
  int64_t idx = mesh.getAxisIndex(axis);
  if (idx < 0)
    return no("'" + axis.str() + "' is not an axis of the mesh");
  if (ArrayAttr f = plan.getFoldedAttr())
    if (llvm::is_contained(f, StringAttr::get(stage.getContext(), axis)))
      return no("already folded along '" + axis.str() + "'");
  if (mesh.getSizes()[idx] < 2)
    return no("axis '" + axis.str() + "' has a single coordinate");
  {
    // Lineage maps are decided on the map where the map's form allows it
    // (Folder::checkLineages); otherwise on their statements.
    Folder folder(stage, mesh, idx);
    if (folder.analyze(why)) {
      folder.rewrite();
      return true;
    }
    if (!folder.needsStatements)
      return no(why);
  }
  if (failed(expandLineageMaps(stage)))
    return no("a lineage map of the stage does not expand");
  Folder folder(stage, mesh, idx);
  if (!folder.analyze(why))
    return no(why);
  folder.rewrite();
  return true;
}

unsigned mlir::tv::mergeIdenticalRankPrograms(StageOp stage) {
  PlanOp plan = stage.getPlan();
  return plan ? plan.mergeIdenticalPrograms() : 0;
}


bool mlir::tv::foldStageMicroBatches(StageOp stage, std::string *whyNot) {
  auto no = [&](std::string w) {
    if (whyNot)
      *whyNot = std::move(w);
    return false;
  };
  PlanOp plan = stage.getPlan();
  if (!plan || !stage.getSpec())
    return no("stage has no spec or no plan");
  if (plan.getFoldedMicroBatches())
    return no("micro-batches already folded");
  int64_t m = plan.getMicroBatches();
  if (m < 2)
    return no("a single micro-batch");
  if (failed(expandLineageMaps(stage)))
    return no("a lineage map of the stage does not expand");
  Folder folder(stage, m);
  std::string why;
  if (!folder.analyze(why))
    return no(why);
  folder.rewrite();
  return true;
}

FailureOr<StageFold>
mlir::tv::foldStage(StageOp stage, ArrayRef<std::string> axes,
                    bool microBatches,
                    function_ref<void(const Twine &)> explain) {
  StageFold result;
  PlanOp plan = stage.getPlan();
  MeshOp mesh = plan ? plan.getMeshOp() : MeshOp();
  if (!mesh) { // the stage verifier reports it
    if (failed(expandLineageMaps(stage)))
      return failure();
    return result;
  }
  SmallVector<std::string> order(axes.begin(), axes.end());
  if (order.empty())
    for (Attribute a : mesh.getAxes())
      order.push_back(cast<StringAttr>(a).getValue().str());
  mergeIdenticalRankPrograms(stage);
  for (const std::string &axis : order) {
    int64_t idx = mesh.getAxisIndex(axis);
    if (idx < 0)
      return stage.emitError() << "cannot fold along '" << axis
                               << "': not an axis of mesh @"
                               << mesh.getSymName();
    std::string why;
    if (foldStageAlongAxis(stage, axis, &why))
      result.coordinates *= mesh.getSizes()[idx];
    else if (explain && mesh.getSizes()[idx] > 1)
      explain("not folded along '" + axis + "': " + why);
  }
  if (microBatches && plan.getMicroBatches() > 1) {
    std::string why;
    if (foldStageMicroBatches(stage, &why)) {
      result.microBatches = true;
      result.coordinates *= plan.getMicroBatches();
    } else if (explain) {
      explain("micro-batches not folded: " + why);
    }
  }
  return result;
}

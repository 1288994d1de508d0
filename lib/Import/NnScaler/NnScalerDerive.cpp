//===- NnScalerDerive.cpp - input and output lineages from the graphs -----===//
//
// A file without lineages (the reference front end failed to infer them,
// as on br14) still says where every plan input sits in the spec: nnScaler
// gives each sub-tensor its index map and value map in its full tensor, and
// a plan node carries the cell id of the spec node it partitions. The
// lineages of the inputs and of the final weight gradients (the theorem)
// are derived from those; the intermediates are left to relation inference
// (--tv-infer-lineage). docs/nnscaler-import.md §8, decision 102.
//
//===----------------------------------------------------------------------===//
#include "NnScaler.h"

using namespace mlir;
using namespace mlir::tv;
using namespace mlir::tv::nnscaler;

namespace {
/// A node's identity across the graphs: cell id, IR name, direction.
using NodeKey = std::tuple<int64_t, std::string, int>;

NodeKey keyOf(const json::Object &n) {
  int fw = 2;
  if (const json::Value *f = n.get("fw"))
    if (auto b = f->getAsBoolean())
      fw = *b;
  return {n.getInteger("cid").value_or(-1),
          n.getString("irname").value_or("").str(), fw};
}

std::vector<TRef> refs(const json::Object &n, StringRef key) {
  std::vector<TRef> out;
  if (const json::Array *a = n.getArray(key))
    for (const json::Value &v : *a) {
      TRef t;
      out.push_back(parseTRef(&v, t) ? t : TRef{0, 0, -1, 0});
    }
  return out;
}

std::optional<std::vector<int64_t>> ints(const json::Value *v) {
  const json::Array *a = v ? v->getAsArray() : nullptr;
  if (!a)
    return std::nullopt;
  std::vector<int64_t> out;
  for (const json::Value &x : *a) {
    auto i = x.getAsInteger();
    if (!i)
      return std::nullopt;
    out.push_back(*i);
  }
  return out;
}

json::Array refJson(const TRef &t) {
  return json::Array{t.rank, t.mb, t.tid, t.v};
}
} // namespace

LogicalResult Importer::deriveLineages(const json::Array &specNodes,
                                       const json::Object &gsObj,
                                       const json::Object &gpObj,
                                       const std::map<int64_t, jsonscan::Span> &rankSpans,
                                       int64_t nmb, json::Array &out) {
  // Spec nodes by identity; a key two nodes share names neither.
  std::map<NodeKey, const json::Object *> specNode;
  std::set<NodeKey> shared;
  for (const json::Value &nv : specNodes)
    if (const json::Object *n = nv.getAsObject()) {
      NodeKey k = keyOf(*n);
      if (!specNode.emplace(k, n).second)
        shared.insert(k);
    }
  const json::Object *gpTensors = gpObj.getObject("tensors");
  if (!gpTensors)
    return error("$.Gp.tensors") << "deriving lineages needs the tensors' "
                                    "index maps";
  auto isInput = [&](int64_t rank, const TRef &t) {
    const std::set<std::string> &names = inputNames[rank];
    return names.count(name(t, rank < 0)) || names.count(name(t, rank < 0, 1));
  };
  // (spec tensor, box) -> plan tensors equal to it, each a group of one.
  std::map<std::pair<TRef, std::vector<int64_t>>, std::set<TRef>> boxes;
  // Plan weights by spec weight: for the gradients.
  std::map<TRef, std::vector<std::pair<TRef, std::vector<int64_t>>>> weights;
  auto place = [&](const TRef &ts, const TRef &tp) -> LogicalResult {
    std::string path = "$.Gp.tensors." + std::to_string(tp.tid);
    const json::Object *info = gpTensors->getObject(std::to_string(tp.tid));
    auto specShape = gs.shape.find(ts.tid);
    std::optional<std::vector<int64_t>> ft =
        info ? ints(info->get("ft_shape")) : std::nullopt;
    std::optional<std::vector<int64_t>> valmap =
        info ? ints(info->get("valmap")) : std::nullopt;
    const json::Array *indmap = info ? info->getArray("indmap") : nullptr;
    if (!ft || !valmap || valmap->size() != 2 || !indmap ||
        specShape == gs.shape.end() ||
        ft->size() != specShape->second.size() ||
        indmap->size() != ft->size())
      return error(path) << "deriving the lineage of plan tensor "
                         << name(tp, false) << "@" << tp.rank
                         << " needs its ft_shape, indmap and valmap, of the "
                            "rank of spec tensor "
                         << name(ts, true);
    if ((*valmap)[1] != 1)
      return error(path) << "plan input " << name(tp, false) << "@"
                         << tp.rank << " is value part " << (*valmap)[0]
                         << " of " << (*valmap)[1]
                         << " of spec tensor " << name(ts, true)
                         << ": a value-partitioned input has no derived "
                            "lineage; refusing";
    int64_t dp = tp.rank / planRanks;
    std::vector<int64_t> box;
    for (size_t d = 0; d < ft->size(); ++d) {
      std::optional<std::vector<int64_t>> r = ints(&(*indmap)[d]);
      if (!r || r->size() != 2)
        return error(path + ".indmap") << "expected [start, end) per dim";
      int64_t full = specShape->second[d], piece = (*ft)[d], off = 0;
      if (full != piece) {
        // The batch: split over data-parallel replicas, then micro-batches.
        if (tp.mb < 0 || full != piece * meshSizes[0] * nmb)
          return error(path) << "plan tensor " << name(tp, false) << "@"
                             << tp.rank << " is a piece of a full tensor of "
                             << piece << " along dimension " << d
                             << ", where spec tensor " << name(ts, true)
                             << " has " << full
                             << " (neither the same nor split over "
                                "data-parallel replicas and micro-batches); "
                                "refusing";
        off = (dp * nmb + tp.mb) * piece;
      }
      box.push_back(off + (*r)[0]);
      box.push_back(off + (*r)[1]);
    }
    boxes[{ts, box}].insert(tp);
    if (tp.mb < 0)
      weights[ts].push_back({tp, box});
    return success();
  };
  // A partitioned node has a cell id of its own. Its spec node is then the
  // node of the same IR name and direction at the same ordinal: on a rank,
  // among its micro-batch's nodes of that name, after those of the
  // pipeline stages before it for a forward node, after it for a backward
  // one (the same data-parallel and tensor-parallel index). Each placement is checked (shapes, one spec tensor per plan
  // tensor), so a wrong match is refused, not assumed.
  using Ordered = std::map<std::pair<std::string, int>,
                           std::vector<const json::Object *>>;
  Ordered specOrdered;
  for (const json::Value &nv : specNodes)
    if (const json::Object *n = nv.getAsObject())
      if (std::get<2>(keyOf(*n)) != 2)
        specOrdered[{std::get<1>(keyOf(*n)), std::get<2>(keyOf(*n))}]
            .push_back(n);
  std::map<int64_t, json::Array> rankNodes;
  auto nodesOf = [&](int64_t r) -> const json::Array * {
    auto have = rankNodes.find(r);
    if (have != rankNodes.end())
      return &have->second;
    auto it = rankSpans.find(r);
    if (it == rankSpans.end())
      return nullptr;
    std::optional<json::Value> nodes =
        parseSpan(it->second, "$.Gp.ranks." + std::to_string(r));
    json::Array *arr = nodes ? nodes->getAsArray() : nullptr;
    if (!arr)
      return nullptr;
    return &rankNodes.emplace(r, std::move(*arr)).first->second;
  };
  // Nodes by IR name and direction, in order, per micro-batch.
  auto orderedOf = [](const json::Array &nodes) {
    std::map<int64_t, Ordered> byMb;
    for (const json::Value &nv : nodes)
      if (const json::Object *n = nv.getAsObject()) {
        NodeKey k = keyOf(*n);
        if (std::get<2>(k) != 2)
          byMb[n->getInteger("mb").value_or(0)]
              [{std::get<1>(k), std::get<2>(k)}]
                  .push_back(n);
      }
    return byMb;
  };
  std::map<TRef, TRef> placedAs; // plan tensor -> spec tensor
  int64_t tpSize = meshSizes[2];
  for (int64_t r = 0; r < numRanks; ++r) {
    const json::Array *arr = nodesOf(r);
    if (!arr)
      return error("$.Gp.ranks." + std::to_string(r))
             << "expected a list of nodes";
    int64_t dpIdx = r / planRanks, local = r % planRanks;
    int64_t stage = local / tpSize, tpIdx = local % tpSize;
    std::map<std::pair<std::string, int>, size_t> offset;
    for (int64_t s = 0; s < meshSizes[1]; ++s)
      if (s != stage)
        if (const json::Array *other =
                nodesOf(dpIdx * planRanks + s * tpSize + tpIdx))
          if (auto byMb = orderedOf(*other); !byMb.empty())
            for (auto &[key, list] : byMb.begin()->second)
              if ((key.second == 1) == (s < stage))
                offset[key] += list.size();
    std::map<const json::Object *, const json::Object *> byOrdinal;
    for (auto &[mb, ordered] : orderedOf(*arr))
      for (auto &[key, list] : ordered) {
        auto sf = specOrdered.find(key);
        for (auto [i, n] : llvm::enumerate(list)) {
          size_t at = offset[key] + i;
          if (sf != specOrdered.end() && at < sf->second.size())
            byOrdinal[n] = sf->second[at];
        }
      }
    for (const json::Value &nv : *arr) {
      const json::Object *n = nv.getAsObject();
      if (!n)
        continue;
      NodeKey k = keyOf(*n);
      const json::Object *specSide = nullptr;
      if (auto sn = specNode.find(k); sn != specNode.end() && !shared.count(k))
        specSide = sn->second;
      else if (auto bo = byOrdinal.find(n); bo != byOrdinal.end())
        specSide = bo->second;
      if (!specSide)
        continue;
      for (StringRef side : {"in", "out"}) {
        // Outputs only of the data loader (they are program inputs).
        if (side == "out" && std::get<1>(k) != "IRDataOperation")
          continue;
        std::vector<TRef> ps = refs(*n, side), ss = refs(*specSide, side);
        for (size_t i = 0; i < ps.size() && i < ss.size(); ++i) {
          if (ps[i].rank != r || !isInput(r, ps[i]) || !isInput(-1, ss[i]))
            continue;
          auto [at, fresh] = placedAs.try_emplace(ps[i], ss[i]);
          if (!fresh && at->second == ss[i])
            continue;
          if (!fresh)
            return error("$.Gp.ranks." + std::to_string(r))
                   << "deriving lineages: plan input " << name(ps[i], false)
                   << "@" << r << " is read where the spec reads "
                   << name(at->second, true) << " and where it reads "
                   << name(ss[i], true) << "; refusing";
          if (failed(place(ss[i], ps[i])))
            return failure();
        }
      }
    }
  }
  // A spec input no plan input was placed in: the theorem would leave it
  // free on the spec side only.
  for (const std::string &n : inputNames[-1]) {
    bool placed = false;
    for (auto &[key, tps] : boxes)
      placed |= name(key.first, true) == n ||
                name(key.first, true, 1) == n || name(key.first, true, 2) == n;
    if (!placed)
      return error("$.Gp") << "deriving lineages: no plan input reaches spec "
                              "input '"
                           << n
                           << "' through a node of the same cell; refusing";
  }

  // Final weight gradients: the plan's gradient of each placed weight piece,
  // in the weight's box.
  auto inverse = [](const json::Object *g2w) {
    std::map<int64_t, int64_t> inv;
    if (g2w)
      for (auto &[k, v] : *g2w) {
        int64_t g;
        if (!StringRef(k).getAsInteger(10, g))
          if (auto w = v.getAsInteger())
            inv[*w] = g;
      }
    return inv;
  };
  std::map<int64_t, int64_t> specGrad = inverse(gsObj.getObject("grad_to_weight")),
                             planGrad = inverse(gpObj.getObject("grad_to_weight"));
  auto version = [](const json::Object &g, int64_t rank, int64_t tid) {
    const json::Object *mv = g.getObject("max_version");
    const json::Object *r = mv ? mv->getObject(std::to_string(rank)) : nullptr;
    return r ? r->getInteger(std::to_string(tid)) : std::nullopt;
  };
  std::map<std::pair<TRef, std::vector<int64_t>>, std::set<TRef>> grads;
  for (auto &[w, pieces] : weights) {
    auto sg = specGrad.find(w.tid);
    if (sg == specGrad.end())
      continue;
    std::optional<int64_t> sv = version(gsObj, 0, sg->second);
    TRef ts{0, -1, sg->second, sv.value_or(1)};
    if (!specOutputs.count(name(ts, true)))
      continue;
    for (auto &[tp, box] : pieces) {
      auto pg = planGrad.find(tp.tid);
      std::optional<int64_t> pv =
          pg == planGrad.end() ? std::nullopt
                               : version(gpObj, tp.rank, pg->second);
      if (!pv)
        return error("$.Gp.grad_to_weight")
               << "deriving lineages: plan weight " << name(tp, false) << "@"
               << tp.rank << " (a piece of spec weight " << name(w, true)
               << ") has no final gradient; refusing";
      grads[{ts, box}].insert(TRef{tp.rank, -1, pg->second, *pv});
    }
  }
  for (auto &[key, tps] : grads)
    boxes[key] = tps;

  // VERDICT's lineage format, one slice each.
  for (auto &[key, tps] : boxes) {
    json::Array box, groups;
    for (size_t d = 0; d + 1 < key.second.size(); d += 2)
      box.push_back(json::Array{key.second[d], key.second[d + 1]});
    for (const TRef &t : tps)
      groups.push_back(json::Array{refJson(t)});
    out.push_back(json::Object{
        {"Ts", refJson(key.first)},
        {"slices", json::Array{json::Object{{"slice", std::move(box)},
                                            {"eq_groups", std::move(groups)}}}}});
  }
  return success();
}

//===- ModelGenOptimizer.cpp - end of step: gradients, optimizer ----------===//
//
// The end of a rank program's step (ModelGen.h): the data-parallel
// reduction of the weight gradients and the optimizer step (SGD or Adam,
// ZeRO-1/2/3 shards), or under Megatron-LM's distributed optimizer the
// flat gradient buffers and the step on the range each rank owns.
//
//===----------------------------------------------------------------------===//
#include "ModelGen.h"

#include "llvm/ADT/SetVector.h"

#include <algorithm>
#include <numeric>
#include <optional>

using namespace mlir;
using namespace mlir::tv::modelgen;

void Gen::endOfStep(Prog &P) {
  if (p.distOpt)
    return flatStep(P);
  std::vector<std::string> dense = dpAxes(), expert = expertDpAxes();
  // A reduced gradient waiting for its step: with clipping, every one is
  // reduced before the norm, and the steps follow it.
  struct Reduced {
    const Buf *b;
    Val g;
    int64_t zDim;
  };
  std::vector<Reduced> reduced;
  NormParts norm = normParts();
  auto step = [&](const Buf &b, Val g, int64_t zDim,
                  const std::optional<Val> &factor) {
    bool isExpert = b.epDim >= 0;
    const std::vector<std::string> &axes = isExpert ? expert : dense;
    int64_t n = isExpert ? expertDpN() : dpN();
    std::string gn = b.name + ".grad";
    if (factor)
      g = clip(P, g, *factor, gn + "_clipped");
    // ZeRO-1/2: the optimizer step on this rank's shard, then an all-gather
    // of the updated parameter; Adam's moments exist only as that shard.
    Val w = weightsIn.at(b.name);
    Val gs = g, ws = w;
    if (zDim >= 0 && p.zero < 3) {
      ws = P.chunk(w, zDim, n, axes, b.name + "_shard");
      if (p.zero == 1)
        gs = P.chunk(g, zDim, n, axes, gn + "_shard");
    }
    auto stateRec = [&](const std::string &name) {
      Rec r{name, name, ws.s, -1, b.tpDim, curStage, -1};
      r.epDim = b.epDim;
      if (zDim >= 0) {
        r.zDim = zDim;
        r.zExpert = isExpert;
      }
      recs.push_back(r);
    };
    Val nw = optimizerStep(
        P, b.name, ws, gs,
        [&](const std::string &k) {
          stateRec(b.name + k);
          return P.input(b.name + k, ws.s);
        },
        [&](const std::string &k, const Val &v) {
          P.output(b.name + k + ".new", v);
          stateRec(b.name + k + ".new");
        });
    // ZeRO-1/2 all-gather the updated parameter; ZeRO-3 keeps the shard.
    if (zDim >= 0 && p.zero < 3)
      nw = P.allGather(nw, zDim, n, axes, b.name + "_new");
    P.output(b.name + ".new", nw);
    Rec wr{b.name + ".new", b.name + ".new", nw.s, -1, b.tpDim, curStage, -1};
    wr.epDim = b.epDim;
    if (zDim >= 0 && p.zero == 3) {
      wr.zDim = zDim;
      wr.zExpert = isExpert;
    }
    recs.push_back(wr);
  };
  const bool stepped = p.zero || p.adam || p.clipGrad > 0;
  for (const Buf &b : bufs) {
    bool isExpert = b.epDim >= 0;
    const std::vector<std::string> &axes = isExpert ? expert : dense;
    int64_t n = isExpert ? expertDpN() : dpN();
    std::string gn = b.name + ".grad";
    Val g = localGrad(P, b);
    int64_t zDim = p.zero >= 1 ? zeroDim(b.shape, n) : -1;
    Rec gr{gn, gn, b.shape, -1, b.tpDim, curStage, -1};
    gr.epDim = b.epDim;
    // Per-rank mean loss: a dense gradient is averaged over dp. An expert's
    // is summed over its expert-data-parallel group (dp / ep ranks) and
    // divided by the whole dp, as torchtitan sets its experts' gradient
    // divide factor: it already holds the tokens of its ep group.
    bool expertDivide = p.perRankLoss && isExpert && p.dp > 1;
    bool average = p.perRankLoss && !expertDivide;
    bool sharded = false;
    if (p.zero >= 2 && zDim >= 0) {
      // ZeRO-2/3: each rank keeps only its shard of the reduced gradient.
      g = P.reduceScatter(g, zDim, n, axes, gn, average);
      gr.shape = g.s;
      gr.zDim = zDim;
      gr.zExpert = isExpert;
      sharded = true;
    } else if (n > 1) {
      g = average ? P.allReduceAvg(g, axes, gn) : P.allReduce(g, axes, gn);
    }
    if (expertDivide)
      g = P.scale(g, 1.0 / (double)p.dp, gn + "_divide");
    // Tied embeddings over pipeline stages: the first stage's table and the
    // last stage's copy sum their gradients over the embedding group (each
    // pair of ranks with the same data- and tensor-parallel coordinates),
    // after the data-parallel reduction, as Megatron's
    // finalize_model_grads does; ZeRO shards are paired shard by shard.
    if (tiedCopy(b))
      g = P.allReduceGroups(g, embeddingGroups(), gn + "_embedding_group");
    g = unscale(P, g, gn + "_unscaled");
    P.output(gn, g);
    recs.push_back(gr);
    if (p.clipGrad > 0)
      addNormPart(P, norm, b, g, sharded, gn);
    if (!stepped)
      continue;
    if (p.clipGrad > 0)
      reduced.push_back({&b, g, zDim});
    else
      step(b, g, zDim, std::nullopt);
  }
  if (p.clipGrad > 0) {
    Val factor = clipFactor(P, planSquaredNorm(P, norm));
    for (const Reduced &r : reduced)
      step(*r.b, r.g, r.zDim, factor);
  }
}

/// The boxes of a row-major tensor of `shape` that its flat range [a, b)
/// covers, in flat order, as (lower corner, extents): a partial row, whole
/// rows, a partial row, recursively (at most 2 x rank - 1 boxes).
static void flatBoxes(ArrayRef<int64_t> shape, int64_t a, int64_t b,
                      Shape lower, std::vector<std::pair<Shape, Shape>> &out) {
  size_t k = lower.size();
  Shape ones(k, 1);
  if (k + 1 == shape.size()) {
    Shape lo = lower, ext = ones;
    lo.push_back(a);
    ext.push_back(b - a);
    out.push_back({lo, ext});
    return;
  }
  int64_t inner = 1;
  for (size_t i = k + 1; i < shape.size(); ++i)
    inner *= shape[i];
  int64_t i0 = a / inner, i1 = b / inner, r0 = a % inner, r1 = b % inner;
  auto at = [&](int64_t i) {
    Shape l = lower;
    l.push_back(i);
    return l;
  };
  if (i0 == i1)
    return flatBoxes(shape, r0, r1, at(i0), out);
  if (r0) {
    flatBoxes(shape, r0, inner, at(i0), out);
    ++i0;
  }
  if (i1 > i0) {
    Shape lo = at(i0), ext = ones;
    ext.push_back(i1 - i0);
    for (size_t i = k + 1; i < shape.size(); ++i) {
      lo.push_back(0);
      ext.push_back(shape[i]);
    }
    out.push_back({lo, ext});
  }
  if (r1)
    flatBoxes(shape, 0, r1, at(i1), out);
}

static int64_t volume(ArrayRef<int64_t> s) {
  int64_t v = 1;
  for (int64_t x : s)
    v *= x;
  return v;
}

void Gen::flatStep(Prog &P) {
  const int64_t dd = curZ / p.cp, c = curZ % p.cp;
  const int64_t edp = dd / p.ep;
  int64_t e = dd % p.ep;
  // Phase 0 of a distributed optimizer is shared by the data-parallel
  // group; phase 1 is this coordinate's step (decision 124).
  const bool shared = stepPhase == StepPhase::Shared,
             owned = stepPhase == StepPhase::Owned;
  // Megatron keeps two buffers: the dense parameters' over the data-parallel
  // group (dp x cp) and the experts' over the expert data-parallel group
  // (dp / ep x cp, the ranks holding the same experts). This rank's index
  // in each, its size and its mesh axes.
  struct Group {
    bool expert;
    int64_t n, z;
    std::vector<std::string> axes;
    std::vector<size_t> bufs;
  };
  Group groups[2] = {{false, dpN(), curZ, dpAxes(), {}},
                     {true, expertDpN(), edp * p.cp + c, expertDpAxes(), {}}};
  for (size_t i = 0; i < bufs.size(); ++i)
    groups[bufs[i].epDim >= 0].bufs.push_back(i);
  // The spec box of a (tp- and ep-local) box of buffer b on tp rank t:
  // its lower and upper bounds.
  auto specBox = [&](const Buf &b, const Shape &lower, const Shape &ext,
                     int64_t t) {
    std::pair<Shape, Shape> box;
    for (size_t i = 0; i < ext.size(); ++i) {
      int64_t lo = lower[i];
      if ((int64_t)i == b.tpDim)
        lo += t * b.shape[i];
      if ((int64_t)i == b.epDim)
        lo += e * b.shape[i];
      box.first.push_back(lo);
      box.second.push_back(lo + ext[i]);
    }
    return box;
  };

  // The gradients as the backward leaves them in the buffer (sequence- and
  // head-partial ones all-reduced over tp first, as Megatron does), tagged:
  // the spec's gradient is their sum over the buffer's group (and, for a
  // tied embedding, over the embedding group). That is the gradient's
  // lineage, and a cut: what follows is data movement and the elementwise
  // step, a stage of its own.
  std::vector<Val> grads;
  for (const Buf &b : bufs) {
    if (owned)
      break; // phase 1 reads the reduced shards
    std::string gn = b.name + ".grad";
    Val g = localGrad(P, b);
    P.tag(gn + ".local", g);
    grads.push_back(g);
    bool isExpert = b.epDim >= 0;
    bool tied = tiedCopy(b);
    // Recorded once per expert shard (the first coordinate holding it),
    // once per stage otherwise; a tied embedding's with the last stage.
    if ((isExpert ? edp * p.cp + c : curZ) != 0 ||
        (tied && curStage != p.pp - 1))
      continue;
    // The shared phase 0 stands for the expert shards of every ep
    // coordinate: the statements of each.
    const int64_t e0 = e;
    const bool everyE = shared && isExpert;
    for (int64_t ee = everyE ? 0 : e0; ee < (everyE ? p.ep : e0 + 1); ++ee) {
      e = ee;
      auto sumOver = [&](int64_t t) {
        std::vector<std::pair<std::string, int64_t>> terms;
        for (int64_t s : tied ? std::vector<int64_t>{0, p.pp - 1}
                                  : std::vector<int64_t>{curStage})
          for (int64_t d = 0; d < p.dp; ++d)
            for (int64_t cc = 0; cc < p.cp; ++cc)
              if (!isExpert || d % p.ep == e)
                terms.push_back({gn + ".local", rankOf(d, s, cc, t)});
        return terms;
      };
      // A per-rank mean: dense gradients are averaged over the group; an
      // expert's is summed over its group and divided by dp (decision 66).
      int64_t den = !p.perRankLoss ? 1 : isExpert ? p.dp : dpN();
      Shape zero(b.shape.size(), 0);
      for (int64_t t = 0; t < (b.tpDim >= 0 ? p.tp : 1); ++t) {
        auto [lower, upper] = specBox(b, zero, b.shape, t);
        // Under loss scaling the buffers hold the scaled gradients.
        FlatLineage l{p.lossScaled() ? b.name + ".grad_scaled" : gn, lower,
                      upper, {}, den};
        if (b.tpDim >= 0)
          l.groups.push_back(sumOver(t));
        else
          for (int64_t tt = 0; tt < p.tp; ++tt)
            l.groups.push_back(sumOver(tt));
        flatLines.push_back(std::move(l));
      }
    }
    e = e0;
  }

  // One lineage statement per owned box: its spec box on this coordinate's
  // ranks, one group per tp rank when the parameter is replicated over tp.
  auto line = [&](const Buf &b, const std::string &spec, const Shape &lower,
                  const Shape &ext, const std::string &plan) {
    auto stmt = [&](ArrayRef<int64_t> tps) {
      auto [lo, hi] = specBox(b, lower, ext, tps[0]);
      std::string key = spec;
      for (size_t i = 0; i < lo.size(); ++i)
        key += " " + std::to_string(lo[i]) + ":" + std::to_string(hi[i]);
      auto [it, fresh] = flatStmtIndex.try_emplace(key, flatStmts.size());
      if (fresh)
        flatStmts.push_back({spec, lo, hi, {}, 1});
      for (int64_t t : tps)
        flatStmts[it->second].groups.push_back(
            {{plan, rankOf(dd, curStage, c, t)}});
    };
    if (b.tpDim >= 0)
      for (int64_t t = 0; t < p.tp; ++t)
        stmt({t});
    else {
      std::vector<int64_t> all;
      for (int64_t t = 0; t < p.tp; ++t)
        all.push_back(t);
      stmt(all);
    }
  };

  auto pad = [](int64_t x, int64_t d) { return (x + d - 1) / d * d; };
  struct Slot {
    size_t buf;
    int64_t start, numel;
  };
  struct Bucket {
    int64_t start, end;
    std::vector<Slot> slots;
  };
  int64_t bucketId = 0;
  struct Pending {
    const Group *grp;
    Bucket bk;
    std::string name;
    bool embedding = false;
    std::optional<Val> gs, param;
  };
  std::vector<Pending> pending;
  NormParts norm = normParts();
  for (const Group &grp : groups) {
    if (grp.bufs.empty())
      continue;
    const int64_t n = grp.n;
    // Megatron-Core's _ParamAndGradBuffer: parameters in reverse order,
    // each start padded to 64 elements, a bucket closed once it holds
    // bucketSize elements (the tied embedding of a pipelined model in a
    // bucket of its own), each bucket's end padded to a multiple of
    // lcm(group size, 128).
    const int64_t align = std::lcm<int64_t>(n, 128);
    std::vector<Bucket> buckets;
    std::vector<Slot> open;
    int64_t bucketStart = 0, start = 0;
    auto close = [&](int64_t end) {
      int64_t e = pad(end, align);
      buckets.push_back({bucketStart, e, std::move(open)});
      open.clear();
      bucketStart = e;
      return e;
    };
    for (auto it = grp.bufs.rbegin(); it != grp.bufs.rend(); ++it) {
      const Buf &b = bufs[*it];
      bool own = tiedCopy(b);
      start = pad(start, 64);
      if (own && !open.empty())
        start = close(start);
      int64_t end = start + volume(b.shape);
      open.push_back({*it, start, volume(b.shape)});
      bool full = p.bucketSize > 0 && end - bucketStart >= p.bucketSize;
      start = full || own ? close(end) : end;
    }
    if (!open.empty())
      close(start);

    for (const Bucket &bk : buckets)
      pending.push_back({&grp, bk, "bucket" + std::to_string(bucketId++)});
  }

  // Each bucket's flat gradient buffer: each parameter's gradient at its
  // offset, zero in the padding; reduce-scattered over the bucket's group
  // (launched asynchronously under --overlap-grad-reduce).
  auto launch = [&](Pending &pb) {
    const Bucket &bk = pb.bk;
    const std::string &bn = pb.name;
    const int64_t size = bk.end - bk.start, n = pb.grp->n;
    std::optional<Val> flat;
    for (const Slot &sl : bk.slots) {
      const Buf &b = bufs[sl.buf];
      pb.embedding |= tiedCopy(b);
      Val f = P.reshape(grads[sl.buf], {sl.numel}, b.name + "_grad_flat");
      Val e = P.sliceGrad(f, {sl.start - bk.start}, {size}, bn + "_grad");
      flat = flat ? P.add(*flat, e, bn + "_grad") : e;
    }
    pb.gs = n > 1 ? P.reduceScatter(*flat, 0, n, pb.grp->axes,
                                    bn + "_grad_shard",
                                    p.perRankLoss && !pb.grp->expert,
                                    p.overlapGrad)
                  : *flat;
  };
  // Each parameter this rank owns part of in a bucket, with the boxes that
  // part is and its offset in the rank's shard.
  auto forOwned = [&](const Pending &pb,
                      llvm::function_ref<void(
                          const Buf &,
                          ArrayRef<std::pair<Shape, Shape>>, int64_t)>
                          fn) {
    const Bucket &bk = pb.bk;
    const int64_t shard = (bk.end - bk.start) / pb.grp->n;
    const int64_t own0 = bk.start + pb.grp->z * shard, own1 = own0 + shard;
    for (const Slot &sl : bk.slots) {
      int64_t lo = std::max(own0, sl.start),
              hi = std::min(own1, sl.start + sl.numel);
      if (lo >= hi)
        continue;
      const Buf &b = bufs[sl.buf];
      std::vector<std::pair<Shape, Shape>> boxes;
      flatBoxes(b.shape, lo - sl.start, hi - sl.start, {}, boxes);
      fn(b, boxes, lo - own0);
    }
  };
  // The reduced shard: waited for, divided, summed over the embedding
  // group, unscaled; its owned ranges counted in the gradient norm.
  auto reduce = [&](Pending &pb) {
    const std::string &bn = pb.name;
    const int64_t n = pb.grp->n;
    Val gs = *pb.gs;
    if (p.overlapGrad && n > 1)
      gs = P.wait(gs, bn + "_grad_shard");
    if (pb.grp->expert && p.perRankLoss && p.dp > 1)
      gs = P.scale(gs, 1.0 / (double)p.dp, bn + "_grad_divide");
    // The tied embedding's bucket: summed over the embedding group.
    if (pb.embedding)
      gs = P.allReduceGroups(gs, embeddingGroups(), bn + "_embedding_group");
    gs = unscale(P, gs, bn + "_grad_unscaled");
    pb.gs = gs;
  };
  // The owned ranges of a reduced shard counted in the gradient norm, box
  // by box, as the step reads them: each a box of its parameter's gradient,
  // which partition reads per parameter (decision 119).
  auto normOwned = [&](Pending &pb) {
    Val gs = *pb.gs;
    forOwned(pb, [&](const Buf &b, ArrayRef<std::pair<Shape, Shape>> boxes,
                     int64_t off) {
      // The tied embedding's copy on the last stage is not counted
      // (addNormPart).
      if (tiedCopy(b) && curStage == p.pp - 1)
        return;
      std::optional<Val> own;
      for (const auto &[lower, ext] : boxes) {
        int64_t vol = volume(ext);
        Val gp = P.reshape(P.slice(gs, {off}, {vol}, b.name + ".grad_own"),
                           ext, b.name + ".grad_own");
        Val s = sumSquares(P, gp, b.name + ".grad_own");
        own = own ? P.add(*own, s, b.name + ".grad_sqsum_own") : s;
        off += vol;
      }
      addNormSum(P, norm, b, *own, true, b.name + ".grad_own");
    });
  };
  // The optimizer step on each box of a parameter this rank owns; the
  // updated boxes go back to their places in the parameter buffer's shard,
  // which is all-gathered (launched asynchronously under
  // --overlap-param-gather).
  // The parameters the step reads: in phase 1, inputs of its own program
  // (the join reads them as phase 0's).
  auto weightOf = [&](const Buf &b) -> Val {
    if (!owned)
      return weightsIn.at(b.name);
    auto it = ownedWeights.find(b.name);
    if (it == ownedWeights.end())
      it = ownedWeights
               .emplace(b.name, P.input(b.name, weightsIn.at(b.name).s))
               .first;
    return it->second;
  };
  auto stepBucket = [&](Pending &pb, const std::optional<Val> &factor) {
    const Bucket &bk = pb.bk;
    const std::string &bn = pb.name;
    const int64_t size = bk.end - bk.start, n = pb.grp->n, shard = size / n;
    Val gs = *pb.gs;
    std::optional<Val> upd;
    forOwned(pb, [&](const Buf &b, ArrayRef<std::pair<Shape, Shape>> boxes,
                     int64_t off) {
      for (size_t j = 0; j < boxes.size(); ++j) {
        const auto &[lower, ext] = boxes[j];
        const std::string part = ".part" + std::to_string(j),
                          gn = b.name + ".grad";
        int64_t vol = volume(ext);
        Val gp = P.reshape(P.slice(gs, {off}, {vol}, gn + "_own"), ext,
                           gn + "_own");
        if (factor)
          gp = clip(P, gp, *factor, gn + "_clipped");
        Val wp = P.slice(weightOf(b), lower, ext, b.name + "_own");
        Val np = optimizerStep(
            P, b.name, wp, gp,
            [&](const std::string &key) {
              line(b, b.name + key, lower, ext, b.name + key + part);
              return P.input(b.name + key + part, ext);
            },
            [&](const std::string &key, const Val &v) {
              P.output(b.name + key + ".new" + part, v);
              line(b, b.name + key + ".new", lower, ext,
                   b.name + key + ".new" + part);
            });
        Val e = P.sliceGrad(P.reshape(np, {vol}, b.name + "_new_flat"),
                            {off}, {shard}, bn + "_param_shard");
        upd = upd ? P.add(*upd, e, bn + "_param_shard") : e;
        off += vol;
      }
    });
    // A rank whose range is all padding contributes nothing to a
    // parameter.
    if (!upd)
      upd = P.zeros({shard}, bn + "_param_shard");
    pb.param = n > 1 ? P.allGather(*upd, 0, n, pb.grp->axes, bn + "_param",
                                   p.overlapParam)
                     : *upd;
  };
  // The updated parameters, views of the gathered buffer (waited for
  // first under --overlap-param-gather).
  auto finish = [&](Pending &pb) {
    const Bucket &bk = pb.bk;
    Val full = *pb.param;
    if (p.overlapParam && pb.grp->n > 1)
      full = P.wait(full, pb.name + "_param");
    for (const Slot &sl : bk.slots) {
      const Buf &b = bufs[sl.buf];
      Val nw = P.reshape(P.slice(full, {sl.start - bk.start}, {sl.numel},
                                 b.name + "_view"),
                         b.shape, b.name + "_new");
      P.output(b.name + ".new", nw);
      Rec wr{b.name + ".new", b.name + ".new", nw.s, -1, b.tpDim, curStage,
             -1};
      wr.epDim = b.epDim;
      recs.push_back(wr);
    }
  };
  // Overlapped or clipped: every bucket's reduction is launched before any
  // is waited for; the norm needs every reduced shard before any step; the
  // parameters are waited for in the order the next forward uses them
  // (the buckets hold the parameters in reverse). Otherwise bucket by
  // bucket.
  const bool together = p.overlapGrad || p.overlapParam || p.clipGrad > 0;
  // Phase 1 reads the shards phase 0 reduced, by name.
  if (owned)
    for (Pending &pb : pending)
      pb.gs = P.input(pb.name + ".grad_shard",
                      {(pb.bk.end - pb.bk.start) / pb.grp->n});
  else if (together)
    for (Pending &pb : pending)
      launch(pb);
  for (Pending &pb : pending) {
    if (!owned) {
      if (!together)
        launch(pb);
      reduce(pb);
      if (shared) {
        P.output(pb.name + ".grad_shard", *pb.gs);
        continue;
      }
    }
    if (!together) {
      stepBucket(pb, std::nullopt);
      finish(pb);
    }
  }
  if (shared || !together)
    return;
  std::optional<Val> factor;
  if (p.clipGrad > 0) {
    for (Pending &pb : pending)
      normOwned(pb);
    factor = clipFactor(P, planSquaredNorm(P, norm));
  }
  for (Pending &pb : pending)
    stepBucket(pb, factor);
  for (auto it = pending.rbegin(); it != pending.rend(); ++it)
    finish(*it);
}

void Gen::launchWhenReady(Prog &P) {
  Block &body = P.body();
  SmallVector<Operation *> launches;
  std::map<std::string, Operation *> lastAccumulate;
  for (Operation &op : body) {
    if (isa<ReduceScatterOp>(op) && op.hasAttr(kAsyncAttrName))
      launches.push_back(&op);
    if (auto acc = dyn_cast<AccumulateOp>(op))
      lastAccumulate[acc.getBuffer().str()] = &op;
  }
  // Last bucket first, so that launches ready at one point keep their
  // bucket order.
  for (Operation *launch : llvm::reverse(launches)) {
    llvm::SetVector<Operation *> slice;
    SmallVector<Value> work{launch->getOperand(0)};
    while (!work.empty()) {
      Operation *d = work.pop_back_val().getDefiningOp();
      if (!d || d->getBlock() != &body || isa<InputOp>(d) ||
          !slice.insert(d))
        continue;
      for (Value v : d->getOperands())
        work.push_back(v);
    }
    // Ready after the last accumulation into a buffer it reads and after
    // every value it reads from outside.
    Operation *ready = nullptr;
    auto after = [&](Operation *o) {
      if (o && (!ready || ready->isBeforeInBlock(o)))
        ready = o;
    };
    for (Operation *d : slice) {
      if (auto read = dyn_cast<BufferReadOp>(d))
        after(lastAccumulate[read.getBuffer().str()]);
      for (Value v : d->getOperands())
        if (Operation *od = v.getDefiningOp();
            od && od->getBlock() == &body && !slice.contains(od))
          after(od);
    }
    if (!ready)
      continue;
    SmallVector<Operation *> ops(slice.begin(), slice.end());
    llvm::sort(ops, [](Operation *a, Operation *b) {
      return a->isBeforeInBlock(b);
    });
    ops.push_back(launch);
    P.moveAfter(ops, ready);
  }
}

//===- ModelGenPrograms.cpp - spec, rank programs, lineages ---------------===//
//
// The programs of the generated module (ModelGen.h): the single-device spec,
// one rank program per pipeline stage (the 1F1B schedule; the end-of-step
// data-parallel reduction and the sharded optimizer step are in
// ModelGenOptimizer.cpp), the tv.lineage_map statements, the mesh and the
// module that holds them, every op located where a listing of the module
// puts it (decision 108).
//
//===----------------------------------------------------------------------===//
#include "ModelGen.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::tv::modelgen;

void Gen::spec(OpBuilder &b, int64_t &line) {
  inPlan = false;
  weightsIn.clear();
  lossScaleV.reset();
  invLossScaleV.reset();
  Prog P(ctx, "  ");
  int64_t N = p.dp * p.mb * B;
  Dims d{N,       m.nh,       m.nkv, m.I, m.V, m.moeI, m.nShared * m.moeI,
         m.nExperts, false, false, S};
  Val tokens = P.input("tokens", {N, S}, "i64");
  Val labels = P.input("labels", {N, S}, "i64");
  Val dloss = P.input("dloss", {});
  int64_t dRot = m.deepseek ? m.dRope : hd;
  cosV = P.input("rope_cos", {S, dRot / 2});
  sinV = P.input("rope_sin", {S, dRot / 2});
  Val emb = weight(P, "tok_embeddings", {m.V, m.H}, 0);
  std::vector<Vals> ws;
  for (int64_t k = 0; k < L; ++k)
    ws.push_back(layerWeights(P, k, d));
  Val normW = weight(P, "norm", {m.H}, -1);
  Val outW = m.tied ? emb : weight(P, "output", {m.V, m.H}, 0);
  maskV = P.causalMask(S, "mask", m.window);
  if (m.localWindow) // Gemma 2's sliding-window layers
    maskW = P.causalMask(S, "mask_local", m.localWindow);
  if (p.cp > 1 && p.cpBalance) {
    // The load-balanced order (decision 75): the spec computes in it, a
    // permutation of the positions (every op but the mask and RoPE works
    // per position, and those read permuted tables), so that each rank's
    // two chunks are one block of the spec's tensors.
    tokens = balanced(P, tokens, 1, "tokens_lb");
    labels = balanced(P, labels, 1, "labels_lb");
    cosV = balanced(P, cosV, 0, "rope_cos_lb");
    sinV = balanced(P, sinV, 0, "rope_sin_lb");
    std::vector<int64_t> order = balancedOrder();
    maskV = P.chunkMask(order, order, S / (2 * p.cp), "mask_lb");
  }
  Val x = embedForward(P, d, tokens, emb);
  std::vector<Vals> acts;
  for (int64_t k = 0; k < L; ++k) {
    acts.push_back(layerForward(P, d, ws[k], k, x));
    x = acts.back()["out"];
  }
  Vals h = headForward(P, d, normW, outW, x, labels);
  P.output("loss", h["loss"]);
  Val dx = headBackward(P, d, normW, outW, h, scaleSeed(P, dloss));
  for (int64_t k = L - 1; k >= 0; --k)
    dx = layerBackward(P, d, ws[k], k, acts[k], dx);
  embedBackward(P, d, tokens, dx);
  // Mixed precision: the backward's gradients are the loss scale times the
  // unscaled ones (named, for the plan's buffers to equal), then unscaled.
  if (p.lossScaled())
    for (auto &[name, g] : specGrads) {
      P.tag(name + ".grad_scaled", g);
      g = unscale(P, g, name + "_grad_unscaled");
    }
  // Megatron's distributed optimizer keeps no whole gradient: its scaled
  // buffers equal the spec's scaled gradients (the lineage of its flat
  // buffers), the unscaled ones are only named.
  for (auto &[name, g] : specGrads)
    if (p.distOpt && p.lossScaled())
      P.tag(name + ".grad", g);
    else
      P.output(name + ".grad", g);
  std::optional<Val> factor;
  if (p.clipGrad > 0) {
    std::vector<Val> sq;
    for (auto &[name, g] : specGrads)
      sq.push_back(sumSquares(P, g, name + "_grad"));
    factor = clipFactor(P, sumTree(P, sq, "grad_sqsum"));
  }
  if (p.zero || p.adam || p.distOpt || factor) {
    P.comment(p.adam ? "optimizer step (Adam)" : "optimizer step (SGD)");
    for (auto &[name, g] : specGrads) {
      const Val &w = weightsIn.at(name);
      Val nw = optimizerStep(
          P, name, w, factor ? clip(P, g, *factor, name + "_grad_clipped") : g,
          [&](const std::string &k) { return P.input(name + k, w.s); },
          [&](const std::string &k, const Val &v) {
            P.output(name + k + ".new", v);
          });
      P.output(name + ".new", nw);
    }
  }
  // `tv.spec @spec {`, the body, `}`.
  auto op = SpecOp::create(b, at(line, 1), "spec");
  op.getBody().push_back(P.takeBlock().release());
  P.setLocations(file, line + 1);
  line += P.lines() + 2;
}

void Gen::stageProgram(int64_t s, OpBuilder &b, int64_t &line) {
  if (perZ()) {
    // Megatron's distributed optimizer: each data-parallel coordinate owns
    // different ranges of the flat buffers (and under ring attention its cp
    // coordinate is part of it). The forward, backward and reduce-scatters
    // are phase 0, shared (per cp coordinate under ring attention); each
    // coordinate's step is a phase-1 program of its own (decision 124).
    // Mesh-wide lineages are recorded once.
    for (curCp = 0; curCp < (p.cpRing ? p.cp : 1); ++curCp) {
      curZ = curCp;
      size_t before = recs.size();
      stepPhase = StepPhase::Shared;
      stageProgramOne(s, b, line);
      if (curCp > 0)
        recs.resize(before);
    }
    stepPhase = StepPhase::Owned;
    for (curZ = 0; curZ < dpN(); ++curZ) {
      curCp = p.cpRing ? curZ % p.cp : 0;
      size_t before = recs.size();
      ownedStepProgram(s, b, line);
      if (curZ > 0)
        recs.resize(before);
    }
    stepPhase = StepPhase::Whole;
    curZ = 0;
    curCp = 0;
    return;
  }
  if (p.cp == 1 || !p.cpRing)
    return stageProgramOne(s, b, line);
  // Ring attention: one program per cp coordinate (the ring's wrap-around
  // peer and the blocks each rank skips depend on it). Their lineages are
  // the same statements over the mesh: recorded once.
  for (curCp = 0; curCp < p.cp; ++curCp) {
    size_t before = recs.size();
    stageProgramOne(s, b, line);
    if (curCp > 0)
      recs.resize(before);
  }
  curCp = 0;
}

void Gen::stageProgramOne(int64_t s, OpBuilder &b, int64_t &line) {
  inPlan = true;
  curStage = s;
  curMb = -1;
  lossScaleV.reset();
  invLossScaleV.reset();
  bufs.clear();
  bufSeen.clear();
  weightsIn.clear();
  shards.clear();
  Prog P(ctx, "    ");
  // Context parallelism: this rank's programs see its chunk of the
  // sequence (the attention exchanges reach the whole of it).
  const int64_t Sfull = S;
  S /= p.cp;
  bool sp = p.sp && p.tp > 1;
  Dims d{B,
         m.nh / p.tp,
         m.nkv / p.tp,
         m.I / p.tp,
         m.V / p.tp,
         m.moeI / p.tp,
         m.nShared * m.moeI / p.tp,
         m.nExperts / p.ep,
         p.tp > 1,
         sp,
         sp ? S / p.tp : S};
  bool first = s == 0, last = s == p.pp - 1;
  auto in = [&](const std::string &spec, const std::string &name, Shape sh,
                int64_t batchDim, int64_t tpDim, int64_t mb,
                StringRef et = "f32") {
    Val v = P.input(name, sh, et);
    recs.push_back({spec, name, sh, batchDim, tpDim, s, mb});
    return v;
  };
  // A sequence-sharded input: this rank's block, or under the
  // load-balanced order its two chunks (r and 2cp - 1 - r) concatenated.
  auto seqIn = [&](const std::string &spec, const std::string &name, Shape sh,
                   int64_t dim, int64_t batchDim, int64_t mb,
                   StringRef et = "f32") {
    if (!(p.cp > 1 && p.cpBalance)) {
      Val v = in(spec, name, sh, batchDim, -1, mb, et);
      recs.back().cpDim = p.cp > 1 ? dim : -1;
      return v;
    }
    Shape half = sh;
    half[dim] /= 2;
    Val a = in(spec, name + ".c0", half, batchDim, -1, mb, et);
    recs.back().cpDim = dim;
    recs.back().cpChunk = 0;
    Val b = in(spec, name + ".c1", half, batchDim, -1, mb, et);
    recs.back().cpDim = dim;
    recs.back().cpChunk = 1;
    return P.concat(a, b, dim, name + "_lb");
  };
  int64_t dRot = m.deepseek ? m.dRope : hd;
  cosV = seqIn("rope_cos", "rope_cos", {S, dRot / 2}, 0, -1, -1);
  sinV = seqIn("rope_sin", "rope_sin", {S, dRot / 2}, 0, -1, -1);
  Val emb, normW, outW, dloss;
  std::vector<Val> tokens(p.mb), labels(p.mb);
  if (first) {
    emb = weight(P, "tok_embeddings", {d.V, m.H}, 0);
    for (int64_t i = 0; i < p.mb; ++i)
      tokens[i] =
          seqIn("tokens", "tokens.mb" + std::to_string(i), {B, S}, 1, 0, i,
                "i64");
  }
  std::map<int64_t, Vals> ws;
  for (int64_t c = 0; c < p.vpp; ++c) {
    auto [c0, c1] = chunkRange(s, c);
    for (int64_t k = c0; k < c1; ++k)
      ws[k] = layerWeights(P, k, d);
  }
  if (last) {
    normW = weight(P, "norm", {m.H}, -1);
    // Tied: the first stage's table, or the last stage's copy of it.
    outW = !m.tied ? weight(P, "output", {d.V, m.H}, 0)
           : first ? emb
                   : weight(P, "tok_embeddings", {d.V, m.H}, 0);
    dloss = in("dloss", "dloss", {}, -1, -1, -1);
    for (int64_t i = 0; i < p.mb; ++i)
      labels[i] =
          seqIn("labels", "labels.mb" + std::to_string(i), {B, S}, 1, 0, i,
                "i64");
  }
  ringMasks.clear();
  if (cpGather()) {
    maskV = P.causalMask(S, "mask", m.window, Sfull, "cp");
  } else if (cpRing() && p.cpBalance) {
    // The masks of this rank's chunks against each rank's chunks.
    for (int64_t src = 0; src < p.cp; ++src)
      ringMasks[src] =
          P.chunkMask({curCp, 2 * p.cp - 1 - curCp}, {src, 2 * p.cp - 1 - src},
                      S / 2, "mask_ring");
  } else if (cpRing()) {
    maskV = P.causalMask(S, "mask"); // the diagonal block
  } else {
    maskV = P.causalMask(ulysses() ? Sfull : S, "mask", m.window);
  }
  if (m.localWindow) // Gemma 2 (refused with context parallelism)
    maskW = P.causalMask(S, "mask_local", m.localWindow);

  std::map<int64_t, std::map<int64_t, Vals>> acts;
  std::map<int64_t, Vals> heads;
  std::vector<Val> losses;
  Shape resid{B, d.seqLocal, m.H};
  // The previous and next virtual stages of chunk c: the neighbouring
  // pipeline ranks, around the ring for the chunks of an interleaved
  // schedule (the last rank's chunk c feeds the first rank's chunk c + 1).
  const int64_t N = p.vpp;
  const int64_t toNext = s == p.pp - 1 ? -(p.pp - 1) : 1;
  const int64_t toPrev = s == 0 ? p.pp - 1 : -1;
  // With several chunks the backward messages between two ranks share the
  // pair with forward ones: a tag of their own keeps the channels apart.
  const int64_t backTag = N > 1 ? 1 : 0;
  auto forward = [&](int64_t i, int64_t c) {
    int64_t c0, c1;
    std::tie(c0, c1) = chunkRange(s, c);
    bool firstVs = first && c == 0, lastVs = last && c == N - 1;
    P.mb = curMb = i;
    Val x;
    if (firstVs) {
      x = embedForward(P, d, tokens[i], gathered(P, emb));
    } else {
      x = P.recv(resid, toPrev, "x_recv");
      std::string n = lname(c0 - 1, "out");
      T(P, n, x, 0, RES_TP, n + ".recv");
    }
    for (int64_t k = c0; k < c1; ++k) {
      if (!p.fsdpPrefetch) {
        acts[i][k] = layerForward(P, d, gathered(P, ws[k]), k, x);
      } else {
        // FSDP's forward prefetch: this layer's gathers waited for (or
        // launched now, the first layer's), the next layer's launched,
        // then this layer computes while they are in flight.
        prefetch(P, ws[k]);
        Vals w = arrived(P, ws[k]);
        if (k + 1 < c1)
          prefetch(P, ws[k + 1]);
        acts[i][k] = layerForward(P, d, w, k, x);
      }
      x = acts[i][k]["out"];
    }
    if (lastVs) {
      heads[i] = headForward(P, d, gathered(P, normW), gathered(P, outW), x,
                             labels[i]);
      losses.push_back(heads[i]["loss"]);
    } else {
      P.send(x, toNext);
    }
    P.mb = curMb = -1;
  };
  auto backward = [&](int64_t i, int64_t c) {
    int64_t c0, c1;
    std::tie(c0, c1) = chunkRange(s, c);
    bool firstVs = first && c == 0, lastVs = last && c == N - 1;
    P.mb = curMb = i;
    // Per-rank mean loss: this rank's gradients are dp times the spec's.
    tagScaleDen = p.perRankLoss ? p.dp : 1;
    Val dx;
    if (lastVs) {
      Val seed = dloss;
      int64_t n = p.perRankLoss ? p.mb : dpN() * p.mb;
      if (n > 1)
        seed = P.scale(dloss, 1.0 / (double)n, "dloss_mb");
      seed = scaleSeed(P, seed);
      dx = headBackward(P, d, gathered(P, normW), gathered(P, outW),
                        heads[i], seed);
    } else {
      dx = P.recv(resid, toNext, "dout_recv", backTag);
      std::string n = lname(c1, "d_x");
      T(P, n, dx, 0, RES_TP, n + ".recv");
    }
    // ZeRO-3 / FSDP gathers the parameters again for the backward.
    for (int64_t k = c1 - 1; k >= c0; --k) {
      if (!p.fsdpPrefetch) {
        dx = layerBackward(P, d, gathered(P, ws[k]), k, acts[i][k], dx);
        continue;
      }
      // FSDP's backward prefetch: the previous layer's gathers launched
      // before this layer's backward computes.
      prefetch(P, ws[k]);
      Vals w = arrived(P, ws[k]);
      if (k > c0)
        prefetch(P, ws[k - 1]);
      dx = layerBackward(P, d, w, k, acts[i][k], dx);
    }
    if (firstVs)
      embedBackward(P, d, tokens[i], dx);
    else
      P.send(dx, toPrev, backTag);
    P.mb = curMb = -1;
    tagScaleDen = 1;
  };
  if (N == 1) {
    // 1F1B: pp - s - 1 warm-up forwards, then one forward and one backward
    // alternately, then the remaining backwards.
    int64_t warm = std::min(p.pp - s - 1, p.mb);
    for (int64_t i = 0; i < warm; ++i)
      forward(i, 0);
    for (int64_t i = 0; i < p.mb - warm; ++i) {
      forward(warm + i, 0);
      backward(i, 0);
    }
    for (int64_t i = p.mb - warm; i < p.mb; ++i)
      backward(i, 0);
  } else {
    // Megatron's interleaved 1F1B: forwards go through the chunks in groups
    // of pp micro-batches (chunk 0 of micro-batches 0..pp-1, then chunk 1
    // of the same, ...), backwards through the chunks in reverse; (pp - s -
    // 1) * 2 + (vpp - 1) * pp warm-up forwards, then one forward and one
    // backward alternately, then the remaining backwards.
    auto nth = [&](int64_t k, bool back) {
      int64_t group = k / (p.pp * N), in = k % (p.pp * N);
      int64_t c = in / p.pp;
      return std::make_pair(group * p.pp + in % p.pp, back ? N - 1 - c : c);
    };
    int64_t total = p.mb * N;
    int64_t warm = std::min(total, (p.pp - s - 1) * 2 + (N - 1) * p.pp);
    auto fwd = [&](int64_t k) {
      auto [i, c] = nth(k, false);
      forward(i, c);
    };
    auto bwd = [&](int64_t k) {
      auto [i, c] = nth(k, true);
      backward(i, c);
    };
    for (int64_t k = 0; k < warm; ++k)
      fwd(k);
    for (int64_t k = 0; k < total - warm; ++k) {
      fwd(warm + k);
      bwd(k);
    }
    for (int64_t k = total - warm; k < total; ++k)
      bwd(k);
  }

  P.comment("end of step: loss, data-parallel reduction of the gradients" +
            std::string(p.zero ? ", sharded optimizer step (ZeRO-" +
                                     std::to_string(p.zero) + ")"
                        : p.adam ? ", optimizer step"
                                 : ""));
  if (last) {
    Val l = losses[0];
    for (size_t i = 1; i < losses.size(); ++i)
      l = P.add(l, losses[i], "loss_sum");
    if (p.perRankLoss) {
      // Each rank's mean over its micro-batches, averaged over dp.
      if (p.mb > 1)
        l = P.scale(l, 1.0 / (double)p.mb, "loss_local");
      if (p.dp > 1)
        l = P.allReduceAvg(l, dpAxes(), "loss_global");
    } else {
      if (dpN() * p.mb > 1)
        l = P.scale(l, 1.0 / (double)(dpN() * p.mb), "loss_local");
      if (dpN() > 1)
        l = P.allReduce(l, dpAxes(), "loss_global");
    }
    P.output("loss", l);
    recs.push_back({"loss", "loss", {}, -1, -1, s, -1});
  }
  endOfStep(P);
  if (p.overlapGrad)
    launchWhenReady(P);

  S = Sfull;
  SmallVector<int64_t> ranks;
  for (int64_t dd = 0; dd < p.dp; ++dd)
    for (int64_t c = 0; c < p.cp; ++c)
      for (int64_t t = 0; t < p.tp; ++t)
        if (!cpRing() || c == curCp)
          ranks.push_back(rankOf(dd, s, c, t));
  // A comment line (`// pipeline stage S: layers ...`), then
  // `tv.rank_program [ranks] {`, the body, `}`.
  line += 1;
  auto op = RankProgramOp::create(b, at(line, 3), ranks);
  op.getBody().push_back(P.takeBlock().release());
  P.setLocations(file, line + 1);
  line += P.lines() + 2;
}

void Gen::ownedStepProgram(int64_t s, OpBuilder &b, int64_t &line) {
  // What phase 0 left: this stage's buffers (bufs) and weights (weightsIn,
  // whose shapes the phase-1 inputs take).
  inPlan = true;
  curStage = s;
  curMb = -1;
  ownedWeights.clear();
  Prog P(ctx, "    ");
  P.comment("optimizer step on the ranges data-parallel coordinate " +
            std::to_string(curZ) + " owns");
  flatStep(P);
  SmallVector<int64_t> ranks;
  for (int64_t dd = 0; dd < p.dp; ++dd)
    for (int64_t c = 0; c < p.cp; ++c)
      for (int64_t t = 0; t < p.tp; ++t)
        if (dd * p.cp + c == curZ)
          ranks.push_back(rankOf(dd, s, c, t));
  // A comment line, then `tv.rank_program [ranks] phase 1 {`, the body,
  // `}`.
  line += 1;
  auto op = RankProgramOp::create(b, at(line, 3), ranks,
                                  b.getI64IntegerAttr(1));
  op.getBody().push_back(P.takeBlock().release());
  P.setLocations(file, line + 1);
  line += P.lines() + 2;
}

void Gen::lineages(OpBuilder &b, int64_t &line) {
  // One tv.lineage_map per plan tensor and pipeline stage: the block of the
  // spec tensor a rank holds is affine in its mesh coordinates (d0.. in the
  // mesh's axis order), so the statement does not grow with dp, tp or ep.
  const bool ep = p.ep > 1, cp = p.cp > 1;
  // Mesh axes [dp | edp, ep], pp, [cp], tp.
  const int nAxes = 3 + ep + cp;
  auto d = [&](unsigned i) { return getAffineDimExpr(i, ctx); };
  auto k = [&](int64_t x) { return getAffineConstantExpr(x, ctx); };
  // The data-parallel index dd = edp * ep + e, its parts, the cp and the
  // tp index; a ZeRO shard is over the data-parallel group times cp.
  const AffineExpr dd = ep ? d(0) * p.ep + d(1) : d(0);
  const AffineExpr e = ep ? d(1) : k(0), c = d(ep ? 3 : 2), t = d(nAxes - 1);
  const AffineExpr zdd = cp ? dd * p.cp + c : dd;
  const AffineExpr edp = cp ? d(0) * p.cp + c : d(0);
  for (const Rec &r : recs) {
    SmallVector<AffineExpr> blocks;
    for (size_t i = 0; i < r.shape.size(); ++i) {
      // Block index along this dimension: model-parallel (tp or ep) outer,
      // the ZeRO shard inner.
      AffineExpr idx = k(0);
      if ((int64_t)i == r.batchDim)
        idx = dd * p.mb + r.mb;
      if ((int64_t)i == r.tpDim)
        idx = t;
      // The cp chunk, split over tp within it under sequence parallelism.
      if ((int64_t)i == r.cpDim)
        idx = r.cpChunk == 1            ? k(2 * p.cp - 1) - c
              : (int64_t)i == r.tpDim ? c * p.tp + t
                                      : c;
      if ((int64_t)i == r.epDim)
        idx = e;
      if ((int64_t)i == r.zDim) {
        int64_t zn = r.zExpert ? expertDpN() : dpN();
        idx = idx * zn + (r.zExpert ? edp : zdd);
      }
      blocks.push_back(idx);
    }
    LineageMapOp::create(
        b, at(line++, 1), r.spec,
        AffineMap::get(nAxes, 0, blocks, ctx), r.shape, r.plan, "mesh",
        DictionaryAttr::get(
            ctx, {NamedAttribute(StringAttr::get(ctx, "pp"),
                                 IntegerAttr::get(IntegerType::get(ctx, 64),
                                                  r.stage))}),
        r.scaleDen > 1 ? DenseI64ArrayAttr::get(ctx, {1, r.scaleDen})
                       : DenseI64ArrayAttr());
  }
  auto statement = [&](const FlatLineage &l) {
    SmallVector<Attribute> groups;
    for (const auto &g : l.groups) {
      SmallVector<Attribute> refs;
      for (const auto &[name, rank] : g)
        refs.push_back(PlanRefAttr::get(ctx, name, rank));
      groups.push_back(ArrayAttr::get(ctx, refs));
    }
    SmallVector<int64_t> scale;
    if (l.den > 1)
      scale = {1, l.den};
    LineageOp::create(b, at(line++, 1),
                      LineageAttr::get(ctx, StringAttr::get(ctx, l.spec),
                                       l.lower, l.upper,
                                       ArrayAttr::get(ctx, groups),
                                       StringAttr(), {}, scale));
  };
  for (const FlatLineage &l : flatLines)
    statement(l);
  for (const FlatLineage &l : flatStmts)
    statement(l);
}

OwningOpRef<ModuleOp> Gen::run() {
  file = StringAttr::get(ctx, "model-config.mlir");
  OwningOpRef<ModuleOp> module = ModuleOp::create(at(0, 0));
  OpBuilder b = OpBuilder::atBlockEnd(module->getBody());
  // Every op is located where a listing of the module puts it (decision
  // 108): three lines of comments (four for DeepSeek: its MLA and MoE
  // sizes) first, then the mesh, the spec, the plan and the lineages.
  int64_t line = 1 + 3 + m.deepseek;
  SmallVector<StringRef> axes;
  SmallVector<int64_t> sizes;
  if (p.ep > 1) {
    axes = {"edp", "ep", "pp"};
    sizes = {p.dp / p.ep, p.ep, p.pp};
  } else {
    axes = {"dp", "pp"};
    sizes = {p.dp, p.pp};
  }
  if (p.cp > 1) {
    axes.push_back("cp");
    sizes.push_back(p.cp);
  }
  axes.push_back("tp");
  sizes.push_back(p.tp);
  MeshOp::create(b, at(line++, 1), "mesh", b.getStrArrayAttr(axes), sizes);
  spec(b, line);
  // `tv.plan @plan mesh @mesh micro_batches N {`, a rank program per
  // pipeline stage (per data-parallel or cp coordinate where they differ),
  // `}`.
  auto plan = PlanOp::create(b, at(line++, 1), "plan", "mesh",
                             (uint64_t)p.mb, ArrayAttr(), false);
  OpBuilder pb = OpBuilder::atBlockEnd(&plan.getBody().emplaceBlock());
  for (int64_t s = 0; s < p.pp; ++s)
    stageProgram(s, pb, line);
  ++line;
  lineages(b, line);
  return module;
}

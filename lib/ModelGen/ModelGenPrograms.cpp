//===- ModelGenPrograms.cpp - spec, rank programs, lineages ---------------===//
//
// The programs of the generated module (ModelGen.h): the single-device spec,
// one rank program per pipeline stage (the 1F1B schedule; the end-of-step
// data-parallel reduction and the sharded optimizer step are in
// ModelGenOptimizer.cpp), the tv.lineage_map statements, the mesh and the
// module text.
//
//===----------------------------------------------------------------------===//
#include "ModelGen.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::tv::modelgen;

std::string Gen::spec() {
  inPlan = false;
  weightsIn.clear();
  Prog P("  ");
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
  Val dx = headBackward(P, d, normW, outW, h, dloss);
  for (int64_t k = L - 1; k >= 0; --k)
    dx = layerBackward(P, d, ws[k], k, acts[k], dx);
  embedBackward(P, d, tokens, dx);
  for (auto &[name, g] : specGrads)
    P.output(name + ".grad", g);
  if (p.zero || p.adam || p.distOpt) {
    P.comment(p.adam ? "optimizer step (Adam)" : "optimizer step (SGD)");
    for (auto &[name, g] : specGrads) {
      const Val &w = weightsIn.at(name);
      Val nw = optimizerStep(
          P, name, w, g,
          [&](const std::string &k) { return P.input(name + k, w.s); },
          [&](const std::string &k, const Val &v) {
            P.output(name + k + ".new", v);
          });
      P.output(name + ".new", nw);
    }
  }
  return "tv.spec @spec {\n" + P.text() + "}\n";
}

std::string Gen::stageProgram(int64_t s) {
  if (perZ()) {
    // Megatron's distributed optimizer: each data-parallel coordinate owns
    // different ranges of the flat buffers (and under ring attention its cp
    // coordinate is part of it). Mesh-wide lineages are recorded once.
    std::string out;
    for (curZ = 0; curZ < dpN(); ++curZ) {
      curCp = p.cpRing ? curZ % p.cp : 0;
      size_t before = recs.size();
      out += stageProgramOne(s);
      if (curZ > 0)
        recs.resize(before);
    }
    curZ = 0;
    curCp = 0;
    return out;
  }
  if (p.cp == 1 || !p.cpRing)
    return stageProgramOne(s);
  // Ring attention: one program per cp coordinate (the ring's wrap-around
  // peer and the blocks each rank skips depend on it). Their lineages are
  // the same statements over the mesh: recorded once.
  std::string out;
  for (curCp = 0; curCp < p.cp; ++curCp) {
    size_t before = recs.size();
    out += stageProgramOne(s);
    if (curCp > 0)
      recs.resize(before);
  }
  curCp = 0;
  return out;
}

std::string Gen::stageProgramOne(int64_t s) {
  inPlan = true;
  curStage = s;
  curMb = -1;
  bufs.clear();
  bufSeen.clear();
  weightsIn.clear();
  shards.clear();
  Prog P("    ");
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
      acts[i][k] = layerForward(P, d, gathered(P, ws[k]), k, x);
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
      dx = headBackward(P, d, gathered(P, normW), gathered(P, outW),
                        heads[i], seed);
    } else {
      dx = P.recv(resid, toNext, "dout_recv", backTag);
      std::string n = lname(c1, "d_x");
      T(P, n, dx, 0, RES_TP, n + ".recv");
    }
    // ZeRO-3 / FSDP gathers the parameters again for the backward.
    for (int64_t k = c1 - 1; k >= c0; --k)
      dx = layerBackward(P, d, gathered(P, ws[k]), k, acts[i][k], dx);
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

  S = Sfull;
  std::string ranks;
  for (int64_t dd = 0; dd < p.dp; ++dd)
    for (int64_t c = 0; c < p.cp; ++c)
      for (int64_t t = 0; t < p.tp; ++t)
        if (perZ() ? dd * p.cp + c == curZ : !cpRing() || c == curCp)
          ranks += (ranks.empty() ? "" : ", ") +
                   std::to_string(rankOf(dd, s, c, t));
  std::string layers;
  for (int64_t c = 0; c < p.vpp; ++c) {
    auto [c0, c1] = chunkRange(s, c);
    layers += (c ? ", " : "") + std::to_string(c0) + ".." +
              std::to_string(c1 - 1);
  }
  return "  // pipeline stage " + std::to_string(s) + ": layers " + layers +
         (first ? ", embedding" : "") + (last ? ", final norm, head, loss" : "") +
         "\n  tv.rank_program [" + ranks + "] {\n" + P.text() + "  }\n";
}

std::string Gen::lineages() {
  // One tv.lineage_map per plan tensor and pipeline stage: the block of the
  // spec tensor a rank holds is affine in its mesh coordinates (d0.. in the
  // mesh's axis order), so the statement does not grow with dp, tp or ep.
  const bool ep = p.ep > 1, cp = p.cp > 1;
  // Mesh axes [dp | edp, ep], pp, [cp], tp.
  const int nAxes = 3 + ep + cp;
  std::string dims = "(";
  for (int i = 0; i < nAxes; ++i)
    dims += (i ? ", d" : "d") + std::to_string(i);
  dims += ")";
  // The data-parallel index dd = edp * ep + e, its parts, the cp and the
  // tp index; a ZeRO shard is over the data-parallel group times cp.
  const std::string dd = ep ? "(d0 * " + std::to_string(p.ep) + " + d1)" : "d0";
  const std::string e = ep ? "d1" : "0",
                    c = "d" + std::to_string(ep ? 3 : 2),
                    t = "d" + std::to_string(nAxes - 1);
  const std::string zdd =
      cp ? "(" + dd + " * " + std::to_string(p.cp) + " + " + c + ")" : dd;
  const std::string edp =
      cp ? "(d0 * " + std::to_string(p.cp) + " + " + c + ")" : "d0";
  std::string out;
  for (const Rec &r : recs) {
    std::string map = "affine_map<" + dims + " -> (";
    for (size_t i = 0; i < r.shape.size(); ++i) {
      // Block index along this dimension: model-parallel (tp or ep) outer,
      // the ZeRO shard inner.
      std::string idx = "0";
      if ((int64_t)i == r.batchDim)
        idx = dd + " * " + std::to_string(p.mb) + " + " + std::to_string(r.mb);
      if ((int64_t)i == r.tpDim)
        idx = t;
      // The cp chunk, split over tp within it under sequence parallelism.
      if ((int64_t)i == r.cpDim)
        idx = r.cpChunk == 1 ? std::to_string(2 * p.cp - 1) + " - " + c
              : (int64_t)i == r.tpDim
                  ? c + " * " + std::to_string(p.tp) + " + " + t
                  : c;
      if ((int64_t)i == r.epDim)
        idx = e;
      if ((int64_t)i == r.zDim) {
        int64_t zn = r.zExpert ? expertDpN() : dpN();
        idx = "(" + idx + ") * " + std::to_string(zn) + " + " +
              (r.zExpert ? edp : zdd);
      }
      map += (i ? ", " : "") + idx;
    }
    map += ")>";
    std::string shape = "[";
    for (size_t i = 0; i < r.shape.size(); ++i)
      shape += (i ? ", " : "") + std::to_string(r.shape[i]);
    shape += "]";
    std::string scaled =
        r.scaleDen > 1 ? " scaled [1, " + std::to_string(r.scaleDen) + "]" : "";
    out += "tv.lineage_map \"" + r.spec + "\" blocks " + map + " shape " +
           shape + scaled + " = \"" + r.plan + "\" on @mesh where {pp = " +
           std::to_string(r.stage) + " : i64}\n";
  }
  for (const std::string &l : flatLines)
    out += l;
  for (const auto &[key, groups] : flatStmts) {
    out += "tv.lineage #tv.lineage<" + key + " = ";
    for (size_t i = 0; i < groups.size(); ++i)
      out += (i ? " | " : "") + groups[i];
    out += ">\n";
  }
  return out;
}

std::string Gen::meshText() const {
  if (p.ep > 1 && p.cp > 1)
    return "tv.mesh @mesh axes [\"edp\", \"ep\", \"pp\", \"cp\", \"tp\"] "
           "sizes [" +
           std::to_string(p.dp / p.ep) + ", " + std::to_string(p.ep) + ", " +
           std::to_string(p.pp) + ", " + std::to_string(p.cp) + ", " +
           std::to_string(p.tp) + "]\n";
  if (p.ep > 1)
    return "tv.mesh @mesh axes [\"edp\", \"ep\", \"pp\", \"tp\"] sizes [" +
           std::to_string(p.dp / p.ep) + ", " + std::to_string(p.ep) + ", " +
           std::to_string(p.pp) + ", " + std::to_string(p.tp) + "]\n";
  if (p.cp > 1)
    return "tv.mesh @mesh axes [\"dp\", \"pp\", \"cp\", \"tp\"] sizes [" +
           std::to_string(p.dp) + ", " + std::to_string(p.pp) + ", " +
           std::to_string(p.cp) + ", " + std::to_string(p.tp) + "]\n";
  return "tv.mesh @mesh axes [\"dp\", \"pp\", \"tp\"] sizes [" +
         std::to_string(p.dp) + ", " + std::to_string(p.pp) + ", " +
         std::to_string(p.tp) + "]\n";
}

std::string Gen::run() {
  std::string out;
  out += std::string("// ") + (m.deepseek ? "DeepSeek-V3" : "Llama3") +
         " training step generated by tv-translate --import-model-config.\n";
  out += "// hidden " + std::to_string(m.H) + ", layers " + std::to_string(L) +
         ", heads " + std::to_string(m.nh) + ", kv heads " +
         std::to_string(m.nkv) + ", intermediate " + std::to_string(m.I) +
         ", vocab " + std::to_string(m.vocab) +
         (m.padded() ? " (padded to " + std::to_string(m.V) + ")" : "") +
         (m.tied ? " (tied embeddings)" : "") + ", rope_theta " +
         flt(m.theta) +
         " (cos/sin are inputs)\n";
  if (m.deepseek)
    out += "// MLA q_lora " + std::to_string(m.qLora) + ", kv_lora " +
           std::to_string(m.kvLora) + ", qk nope/rope " +
           std::to_string(m.dNope) + "/" + std::to_string(m.dRope) + ", v " +
           std::to_string(m.dV) + "; MoE " + std::to_string(m.nExperts) +
           " routed experts (top " + std::to_string(m.topK) + "), " +
           std::to_string(m.nShared) + " shared, expert intermediate " +
           std::to_string(m.moeI) + ", first " + std::to_string(m.firstDense) +
           " layers dense\n";
  out += "// seq " + std::to_string(S) + ", micro-batch size " +
         std::to_string(B) + "; dp=" + std::to_string(p.dp) +
         " tp=" + std::to_string(p.tp) + " pp=" + std::to_string(p.pp) +
         " mb=" + std::to_string(p.mb) + " ep=" + std::to_string(p.ep) +
         (p.sp ? " sp" : "") +
         (p.zero ? " zero=" + std::to_string(p.zero) : "") +
         (p.vpp > 1 ? " (interleaved 1F1B, vpp=" + std::to_string(p.vpp) + ")\n"
                    : " (1F1B)\n");
  out += meshText();
  out += spec();
  out += "tv.plan @plan mesh @mesh micro_batches " + std::to_string(p.mb) +
         " {\n";
  for (int64_t s = 0; s < p.pp; ++s)
    out += stageProgram(s);
  out += "}\n";
  out += lineages();
  return out;
}

//===- ModelGenLayers.cpp - layers' forward and backward ops --------------===//
//
// The generator code the spec and the rank programs share (ModelGen.h): the
// weights, tags and gradients of a layer, its forward and backward
// (attention, in ModelGenAttention.cpp; dense or mixture-of-experts
// feed-forward, the residual stream with or without sequence parallelism),
// the embedding and the LM head with the loss.
//
//===----------------------------------------------------------------------===//
#include "ModelGen.h"

#include <cmath>
#include <optional>

using namespace mlir;
using namespace mlir::tv::modelgen;

void Gen::T(Prog &P, const std::string &name, const Val &v, int64_t batchDim,
            int64_t tpDim, const std::string &planBase, int64_t epDim) {
  if (!inPlan) {
    P.tag(name, v);
    return;
  }
  std::string pn =
      (planBase.empty() ? name : planBase) + ".mb" + std::to_string(curMb);
  P.tag(pn, v);
  Rec r{name, pn, v.s, batchDim, tpDim, curStage, curMb};
  r.epDim = epDim;
  if (p.cp > 1)
    r.cpDim = tagCpDim;
  r.scaleDen = tagScaleDen;
  recs.push_back(r);
}

Val Gen::weight(Prog &P, const std::string &name, Shape s, int64_t tpDim,
                int64_t epDim) {
  if (inPlan && p.zero == 3) {
    // ZeRO-3 / FSDP: only this rank's data-parallel shard is held.
    bool expert = epDim >= 0;
    int64_t n = expert ? expertDpN() : dpN();
    int64_t z = zeroDim(s, n);
    if (z >= 0) {
      Shape sh = s;
      sh[z] /= n;
      Val v = P.input(name, sh);
      weightsIn[name] = v;
      shards[v.n] = {z, n, expert ? expertDpAxes() : dpAxes()};
      Rec r{name, name, sh, -1, tpDim, curStage, -1};
      r.epDim = epDim;
      r.zDim = z;
      r.zExpert = expert;
      recs.push_back(r);
      return v;
    }
  }
  Val v = P.input(name, s);
  weightsIn[name] = v;
  if (inPlan) {
    Rec r{name, name, s, -1, tpDim, curStage, -1};
    r.epDim = epDim;
    recs.push_back(r);
  }
  return v;
}

void Gen::grad(Prog &P, const std::string &name, const Val &g, int64_t tpDim,
               bool seqPartial, int64_t epDim, bool headPartial) {
  std::string gn = name + ".grad";
  if (!inPlan) {
    // A weight used twice (tied embeddings) gets the sum of its gradients.
    for (auto &[n, prev] : specGrads)
      if (n == name) {
        prev = P.add(prev, g, "d_" + name + "_sum");
        return;
      }
    specGrads.push_back({name, g});
    return;
  }
  P.accumulate(gn, g);
  if (bufSeen.insert(gn).second)
    bufs.push_back({name, g.s, tpDim, epDim, seqPartial && p.sp && p.tp > 1,
                    headPartial && p.tp > 1});
}

Vals Gen::layerWeights(Prog &P, int64_t k, const Dims &d) {
  Vals w;
  auto in = [&](StringRef n, Shape s, int64_t tpDim, int64_t epDim = -1) {
    w[n.str()] = weight(P, lname(k, n), std::move(s), tpDim, epDim);
  };
  in("attention_norm", {m.H}, -1);
  if (!m.deepseek) {
    in("wq", {d.nh * hd, m.H}, 0);
    in("wk", {d.nkv * hd, m.H}, 0);
    in("wv", {d.nkv * hd, m.H}, 0);
    if (m.qkvBias) {
      // Column-parallel like their weights' rows: sharded over the heads.
      in("bq", {d.nh * hd}, 0);
      in("bk", {d.nkv * hd}, 0);
      in("bv", {d.nkv * hd}, 0);
    }
    if (m.qkNorm) {
      // One weight per head dimension, shared by every head: replicated.
      in("q_norm", {hd}, -1);
      in("k_norm", {hd}, -1);
    }
    in("wo", {m.H, d.nh * hd}, 1);
    if (m.gemma2)
      in("post_attention_norm", {m.H}, -1);
  } else {
    // Multi-head latent attention (DeepSeek-V2/V3): low-rank query and
    // joint key/value compressions, replicated over tp; the up-projections
    // are column-parallel over the heads, the output projection is
    // row-parallel.
    int64_t dq = m.dNope + m.dRope;
    if (m.qLora) {
      in("q_a_proj", {m.qLora, m.H}, -1);
      in("q_a_layernorm", {m.qLora}, -1);
      in("q_b_proj", {d.nh * dq, m.qLora}, 0);
    } else {
      in("q_proj", {d.nh * dq, m.H}, 0);
    }
    in("kv_a_proj_with_mqa", {m.kvLora + m.dRope, m.H}, -1);
    in("kv_a_layernorm", {m.kvLora}, -1);
    in("kv_b_proj", {d.nh * (m.dNope + m.dV), m.kvLora}, 0);
    in("wo", {m.H, d.nh * m.dV}, 1);
  }
  in("ffn_norm", {m.H}, -1);
  if (!isMoE(k)) {
    in("w1", {d.I, m.H}, 0);
    in("w2", {m.H, d.I}, 1);
    in("w3", {d.I, m.H}, 0);
    if (m.gemma2)
      in("post_ffn_norm", {m.H}, -1);
  } else {
    in("gate", {m.nExperts, m.H}, -1);
    in("experts.w1", {d.experts, d.moeI, m.H}, 1, 0);
    in("experts.w2", {d.experts, m.H, d.moeI}, 2, 0);
    in("experts.w3", {d.experts, d.moeI, m.H}, 1, 0);
    if (m.nShared) {
      in("shared.w1", {d.shI, m.H}, 0);
      in("shared.w2", {m.H, d.shI}, 1);
      in("shared.w3", {d.shI, m.H}, 0);
    }
  }
  return w;
}

Val Gen::toResidual(Prog &P, const Dims &d, const Val *partial,
                    const Val *full, const Val *local, StringRef hint) {
  std::optional<Val> r;
  auto add = [&](const Val &v) { r = r ? P.add(*r, v, hint) : v; };
  if (partial) {
    if (!d.tp)
      add(*partial);
    else if (d.sp)
      add(P.reduceScatter(*partial, 1, p.tp, {"tp"}, hint));
    else
      add(P.allReduce(*partial, {"tp"}, hint));
  }
  if (full)
    add(d.sp ? P.chunk(*full, 1, p.tp, {"tp"}, hint) : *full);
  if (local)
    add(*local);
  return *r;
}

Val Gen::gatherSeq(Prog &P, const Dims &d, const Val &x, StringRef hint) {
  if (!d.sp)
    return x;
  return P.allGather(x, 1, p.tp, {"tp"}, hint);
}

Vals Gen::layerForward(Prog &P, const Dims &d, const Vals &w, int64_t k,
                       const Val &x) {
  Vals a;
  a["x"] = x;
  P.comment("layer " + std::to_string(k) + " forward" +
            (inPlan ? ", micro-batch " + std::to_string(curMb) : ""));
  a["xn"] = norm(P, x, normWeight(P, w.at("attention_norm")), "xn");
  T(P, lname(k, "xn"), a["xn"], 0, RES_TP);
  // MLA with a query compression under sp reads only the chunk.
  Val xg = m.deepseek && m.qLora && inPlan && d.sp
               ? a["xn"]
               : gatherSeq(P, d, a["xn"], "xn_full");
  a["xg"] = xg;
  attnForward(P, d, w, k, a, xg);
  Val ao = toResidual(P, d, &a["ao_part"], nullptr, nullptr, "attn_out");
  if (m.gemma2) // Gemma 2's post-attention norm
    ao = norm(P, a["ao"] = ao,
              normWeight(P, w.at("post_attention_norm")), "attn_out_norm");
  a["h"] = P.add(x, ao, "h");
  T(P, lname(k, "h"), a["h"], 0, RES_TP);
  a["hn"] = norm(P, a["h"], normWeight(P, w.at("ffn_norm")), "hn");
  T(P, lname(k, "hn"), a["hn"], 0, RES_TP);
  Val hg = gatherSeq(P, d, a["hn"], "hn_full");
  a["hg"] = hg;
  ffnForward(P, d, w, k, a, hg);
  Val mo = toResidual(P, d, a.count("fo_part") ? &a["fo_part"] : nullptr,
                      a.count("fo_full") ? &a["fo_full"] : nullptr,
                      a.count("fo_local") ? &a["fo_local"] : nullptr,
                      "ffn_out");
  if (m.gemma2) // Gemma 2's post-feedforward norm
    mo = norm(P, a["mo"] = mo, normWeight(P, w.at("post_ffn_norm")),
              "ffn_out_norm");
  a["out"] = P.add(a["h"], mo, "out");
  T(P, lname(k, "out"), a["out"], 0, RES_TP);
  return a;
}

void Gen::ffnForward(Prog &P, const Dims &d, const Vals &w, int64_t k,
                     Vals &a, const Val &hg) {
  auto swiglu = [&](StringRef pre, const Val &w1, const Val &w3,
                    const Val &w2) {
    std::string n = pre.str();
    a[n + "a"] = P.linear(hg, w1, n + "ffn_a");
    T(P, lname(k, n + "ffn_a"), a[n + "a"], 0, 2);
    a[n + "b"] = P.linear(hg, w3, n + "ffn_b");
    T(P, lname(k, n + "ffn_b"), a[n + "b"], 0, 2);
    a[n + "sa"] = m.gemma2 ? geluTanh(P, a[n + "a"], n + "ffn_gelu")
                           : P.silu(a[n + "a"], n + "ffn_silu");
    a[n + "g"] = P.mul(a[n + "sa"], a[n + "b"], n + "ffn_g");
    T(P, lname(k, n + "ffn_g"), a[n + "g"], 0, 2);
    return P.linear(a[n + "g"], w2, d.tp ? n + "ffn_out_part" : n + "ffn_out");
  };
  if (!isMoE(k)) {
    a["fo_part"] = swiglu("", w.at("w1"), w.at("w3"), w.at("w2"));
    return;
  }
  // Mixture of experts: top-k routing of every token, the routed experts
  // batched along dimension 0, with expert parallelism an all-to-all to the
  // ranks holding them and back; the shared experts as a dense SwiGLU.
  //
  // Under sequence parallelism (Megatron-LM, which requires it for MoE with
  // tp > 1) the router runs on this rank's sequence chunk, its weight
  // sequence-parallel (the gradient all-reduced over tp); the dispatcher
  // all-gathers the tp group's tokens for the tensor-parallel experts and
  // reduce-scatters their output back to the chunks. The flattened tokens
  // of a chunk are not one block of the spec's, so the routing tensors get
  // no lineage there, nor under context parallelism.
  bool local = inPlan && d.sp;
  int64_t R = d.rows, Tn = R * (local ? d.seqLocal : S);
  a["hf"] = P.reshape(local ? a["hn"] : hg, {Tn, m.H}, "moe_in");
  auto tag = [&](StringRef n, const Val &v, int64_t batchDim) {
    if (!local && p.cp == 1)
      T(P, lname(k, n), v, batchDim, -1);
  };
  a["logits"] = P.linear(a["hf"], w.at("gate"), "router_logits");
  tag("router_logits", a["logits"], 0);
  a["gates"] = P.topk(a["logits"], m.topK, "gates");
  tag("gates", a["gates"], 0);
  Val disp = P.dispatch(a["hf"], a["gates"], "dispatched");
  tag("dispatched", disp, 1);
  Val xe = disp;
  if (p.ep > 1 && inPlan)
    xe = P.allToAll(disp, 0, 1, p.ep, {"ep"}, "expert_in");
  if (local)
    xe = P.allGather(xe, 1, p.tp, {"tp"}, "expert_in_tp");
  a["xe"] = xe;
  a["ea"] = P.matmul(xe, w.at("experts.w1"), false, true, "expert_a");
  a["eb"] = P.matmul(xe, w.at("experts.w3"), false, true, "expert_b");
  a["esa"] = P.silu(a["ea"], "expert_silu");
  a["eg"] = P.mul(a["esa"], a["eb"], "expert_g");
  Val y = P.matmul(a["eg"], w.at("experts.w2"), false, true,
                   d.tp ? "expert_out_part" : "expert_out");
  if (d.tp)
    y = local ? P.reduceScatter(y, 1, p.tp, {"tp"}, "expert_out")
              : P.allReduce(y, {"tp"}, "expert_out");
  if (p.ep > 1 && inPlan)
    y = P.allToAll(y, 1, 0, p.ep, {"ep"}, "expert_out_back");
  a["ey"] = y;
  tag("expert_out", y, 1);
  Val r = P.combine(y, a["gates"], "routed");
  if (local)
    a["fo_local"] = P.reshape(r, {R, d.seqLocal, m.H}, "routed");
  else
    a["fo_full"] = P.reshape(r, {R, S, m.H}, "routed");
  if (m.nShared)
    a["fo_part"] = swiglu("shared_", w.at("shared.w1"), w.at("shared.w3"),
                          w.at("shared.w2"));
}

Val Gen::layerBackward(Prog &P, const Dims &d, const Vals &w, int64_t k,
                       Vals &a, const Val &dout) {
  P.comment("layer " + std::to_string(k) + " backward" +
            (inPlan ? ", micro-batch " + std::to_string(curMb) : ""));
  // Each residual block backward: gather the incoming gradient, run the
  // block's backward, reduce its input gradient into the residual layout,
  // back through the block's norm, and add to the residual gradient.
  auto block = [&](const Val &dIn, StringRef gatherHint, auto backwardFn,
                   StringRef dnName, StringRef normIn, StringRef normW,
                   StringRef hx, StringRef hw, StringRef outName,
                   StringRef postIn, StringRef postW) {
    Val dBr = dIn;
    if (m.gemma2) {
      // Back through Gemma 2's post-attention / post-feedforward norm.
      auto [db, dwp] = P.rmsnormGrad(a[postIn.str()],
                                     normWeight(P, w.at(postW.str())), dIn,
                                     m.eps, (hx + "_post").str(),
                                     ("d_" + postW).str());
      grad(P, lname(k, postW), dwp, -1, /*seqPartial=*/true);
      dBr = db;
    }
    a["d_in_local"] = dBr;
    auto [part, full] = backwardFn(gatherSeq(P, d, dBr, gatherHint));
    // Under sequence parallelism, the parts of the block that run on this
    // rank's sequence chunk (MLA's down-projections, the routed experts)
    // give their input's gradient there already.
    std::optional<Val> local;
    if (auto it = a.find("d_local"); it != a.end()) {
      local = it->second;
      a.erase(it);
    }
    Val dn = toResidual(P, d, part.n.empty() ? nullptr : &part,
                        full.n.empty() ? nullptr : &full,
                        local ? &*local : nullptr, dnName);
    T(P, lname(k, dnName), dn, 0, RES_TP);
    auto [dxn, dwn] =
        P.rmsnormGrad(a[normIn.str()], normWeight(P, w.at(normW.str())), dn,
                      m.eps, hx, hw);
    grad(P, lname(k, normW), dwn, -1, /*seqPartial=*/true);
    Val r = P.add(dIn, dxn, outName);
    T(P, lname(k, outName), r, 0, RES_TP);
    return r;
  };
  Val dh = block(
      dout, "d_ffn_out",
      [&](const Val &g) { return ffnBackward(P, d, w, k, a, g); }, "d_hn",
      "h", "ffn_norm", "d_h_norm", "d_ffn_norm", "d_h", "mo",
      "post_ffn_norm");
  Val dx = block(
      dh, "d_attn_out",
      [&](const Val &g) { return attnBackward(P, d, w, k, a, g); }, "d_xn",
      "x", "attention_norm", "d_x_norm", "d_attention_norm", "d_x", "ao",
      "post_attention_norm");
  return dx;
}

std::pair<Val, Val> Gen::ffnBackward(Prog &P, const Dims &d, const Vals &w,
                                     int64_t k, Vals &a, const Val &dfo) {
  const Val &hg = a["hg"];
  auto swiglu = [&](StringRef pre, StringRef wpre) {
    std::string n = pre.str(), wn = wpre.str();
    auto [dg, dw2] = P.linearGrad(a[n + "g"], w.at(wn + "w2"), dfo,
                                  "d_" + n + "ffn_g", "d_" + n + "w2");
    T(P, lname(k, "d_" + n + "ffn_g"), dg, 0, 2);
    grad(P, lname(k, wn + "w2"), dw2, 1);
    auto [dsa, db] = P.mulGrad(a[n + "sa"], a[n + "b"], dg,
                               "d_" + n + "ffn_silu", "d_" + n + "ffn_b");
    T(P, lname(k, "d_" + n + "ffn_b"), db, 0, 2);
    Val da = m.gemma2 ? geluTanhGrad(P, a[n + "a"], dsa, "d_" + n + "ffn_a")
                      : P.siluGrad(a[n + "a"], dsa, "d_" + n + "ffn_a");
    T(P, lname(k, "d_" + n + "ffn_a"), da, 0, 2);
    auto [dh1, dw1] = P.linearGrad(hg, w.at(wn + "w1"), da,
                                   "d_" + n + "hn_1", "d_" + n + "w1");
    auto [dh3, dw3] = P.linearGrad(hg, w.at(wn + "w3"), db,
                                   "d_" + n + "hn_3", "d_" + n + "w3");
    grad(P, lname(k, wn + "w1"), dw1, 0);
    grad(P, lname(k, wn + "w3"), dw3, 0);
    return P.add(dh1, dh3, d.tp ? "d_" + n + "hn_part" : "d_" + n + "hn");
  };
  if (!isMoE(k))
    return {swiglu("", ""), Val{}};
  // Under sequence parallelism: on this rank's sequence chunk (ffnForward).
  bool local = inPlan && d.sp;
  auto tag = [&](StringRef n, const Val &v, int64_t batchDim) {
    if (!local && p.cp == 1)
      T(P, lname(k, n), v, batchDim, -1);
  };
  int64_t R = d.rows, Tn = R * (local ? d.seqLocal : S);
  Val dr = P.reshape(local ? a["d_in_local"] : dfo, {Tn, m.H}, "d_routed");
  auto [dy, dgates] =
      P.combineGrad(a["ey"], a["gates"], dr, "d_expert_out", "d_gates");
  tag("d_expert_out", dy, 1);
  tag("d_gates", dgates, 0);
  Val dyl = dy;
  if (p.ep > 1 && inPlan)
    dyl = P.allToAll(dy, 0, 1, p.ep, {"ep"}, "d_expert_out_local");
  if (local)
    dyl = P.allGather(dyl, 1, p.tp, {"tp"}, "d_expert_out_tp");
  // y = g @ w2^T, g = silu(a) * b, a = x @ w1^T, b = x @ w3^T, batched.
  Val dg = P.matmul(dyl, w.at("experts.w2"), false, false, "d_expert_g");
  Val dw2 = P.matmul(dyl, a["eg"], true, false, "d_experts_w2");
  grad(P, lname(k, "experts.w2"), dw2, 2, false, 0);
  auto [dsa, db] =
      P.mulGrad(a["esa"], a["eb"], dg, "d_expert_silu", "d_expert_b");
  Val da = P.siluGrad(a["ea"], dsa, "d_expert_a");
  Val dx1 = P.matmul(da, w.at("experts.w1"), false, false, "d_expert_in_1");
  Val dw1 = P.matmul(da, a["xe"], true, false, "d_experts_w1");
  Val dx3 = P.matmul(db, w.at("experts.w3"), false, false, "d_expert_in_3");
  Val dw3 = P.matmul(db, a["xe"], true, false, "d_experts_w3");
  grad(P, lname(k, "experts.w1"), dw1, 1, false, 0);
  grad(P, lname(k, "experts.w3"), dw3, 1, false, 0);
  Val dxe = P.add(dx1, dx3, d.tp ? "d_expert_in_part" : "d_expert_in");
  if (d.tp)
    dxe = local ? P.reduceScatter(dxe, 1, p.tp, {"tp"}, "d_expert_in")
                : P.allReduce(dxe, {"tp"}, "d_expert_in");
  if (p.ep > 1 && inPlan)
    dxe = P.allToAll(dxe, 1, 0, p.ep, {"ep"}, "d_dispatched");
  tag("d_dispatched", dxe, 1);
  Val dhr = P.dispatchGrad(dxe, a["gates"], "d_moe_in_routed");
  Val dlog = P.topkGrad(a["logits"], dgates, m.topK, "d_router_logits");
  tag("d_router_logits", dlog, 0);
  auto [dhg, dwg] =
      P.linearGrad(a["hf"], w.at("gate"), dlog, "d_moe_in_gate", "d_gate");
  // The router weight is sequence-parallel: its gradient, from this rank's
  // chunk, is all-reduced over tp at the end of the step.
  grad(P, lname(k, "gate"), dwg, -1, /*seqPartial=*/local);
  Val full = P.reshape(P.add(dhr, dhg, "d_moe_in"),
                       {R, local ? d.seqLocal : S, m.H}, "d_moe_in");
  if (local) {
    a["d_local"] = full;
    full = Val{};
  }
  Val part;
  if (m.nShared)
    part = swiglu("shared_", "shared.");
  return {part, full};
}

Val Gen::embedForward(Prog &P, const Dims &d, const Val &tokens,
                      const Val &emb) {
  P.comment("embedding" +
            (inPlan ? ", micro-batch " + std::to_string(curMb) : ""));
  Val e = P.embedding(tokens, emb, d.tp, d.tp ? "embed_part" : "embed");
  if (m.gemma2) // Gemma: embeddings scaled by sqrt(hidden_size)
    e = P.scale(e, std::sqrt((double)m.H), "embed_scaled");
  e = toResidual(P, d, &e, nullptr, nullptr, "embed");
  T(P, "embed", e, 0, RES_TP);
  return e;
}

void Gen::embedBackward(Prog &P, const Dims &d, const Val &tokens,
                        const Val &dx) {
  P.comment("embedding backward" +
            (inPlan ? ", micro-batch " + std::to_string(curMb) : ""));
  Val dxg = gatherSeq(P, d, dx, "d_embed");
  if (m.gemma2)
    dxg = P.scale(dxg, std::sqrt((double)m.H), "d_embed_scaled");
  Val g = P.embeddingGrad(tokens, dxg, {d.V, m.H}, d.tp, "d_tok_embeddings");
  grad(P, "tok_embeddings", g, 0);
}

Val Gen::tagTokens(Prog &P, const std::string &name, const Val &v,
                   int64_t rows, int64_t tpDim) {
  // Under context parallelism a rank's tokens are a block of each row's
  // sequence, not of the flattened tokens: tagged as [rows, seq, ...], and
  // what follows reads the tagged tensor (flattened again), so that the
  // tag is a cut of the stages.
  if (p.cp == 1) {
    T(P, name, v, 0, tpDim);
    return v;
  }
  Shape s{rows, v.s[0] / rows};
  s.insert(s.end(), v.s.begin() + 1, v.s.end());
  Val r = P.reshape(v, s, name + "_rows");
  T(P, name, r, 0, tpDim < 0 ? -1 : tpDim + 1);
  return P.reshape(r, v.s, name + "_flat");
}

Vals Gen::headForward(Prog &P, const Dims &d, const Val &normW,
                      const Val &outW, const Val &x, const Val &labels) {
  Vals h;
  int64_t R = d.rows;
  P.comment("final norm, LM head, loss" +
            (inPlan ? ", micro-batch " + std::to_string(curMb) : ""));
  h["x"] = x;
  h["fn"] = norm(P, x, normWeight(P, normW), "final_xn");
  T(P, "final.xn", h["fn"], 0, RES_TP);
  h["fg"] = gatherSeq(P, d, h["fn"], "final_xn_full");
  Val lg = P.linear(h["fg"], outW, d.tp ? "logits_part" : "logits");
  if (m.finalCap) // Gemma 2: c * tanh(logits / c)
    lg = softcap(P, h["logits_pre_cap"] = lg, m.finalCap, "logits_capped");
  h["labels"] = P.reshape(labels, {R * S}, "labels_flat");
  // Megatron's vocabulary-parallel cross-entropy: the logits stay sharded
  // over tp (decision 59). The spec of such a plan computes the same loss
  // the same way on the whole vocabulary (what Megatron runs at tp = 1), so
  // that each micro-batch's per-token loss has a lineage: the loss stage is
  // then a mean of them, not every micro-batch's cross-entropy at once.
  if (!p.gatherLogits && (d.tp || (!inPlan && p.tp > 1))) {
    bool sharded = d.tp;
    Val lf = tagTokens(P, "logits", P.reshape(lg, {R * S, d.V}, "logits_flat"),
                       R, sharded ? 1 : -1);
    h["logits"] = lf;
    // The plan subtracts the row's max before exp, as Megatron does; the
    // spec does not (the two are equal by the exp and log rules, decision
    // 59), which keeps its backward derivable.
    Val xs = lf;
    // A padded vocabulary (decision 71): the spec takes the real columns,
    // each rank of the plan masks its padded ones to -inf.
    if (m.padded() && !sharded)
      xs = h["logits_real"] =
          P.slice(lf, {0, 0}, {R * S, m.vocab}, "logits_real");
    if (m.padded() && sharded) {
      h["vocab_mask"] = P.vocabMask({R * S, d.V}, m.vocab, "tp", "vocab_mask");
      xs = P.applyMask(lf, h["vocab_mask"], "logits_masked");
    }
    if (sharded) {
      Val mx = P.allReduceMax(P.maxKeep(xs, 1, "logits_max_local"), {"tp"},
                              "logits_max");
      xs = P.binary<SubOp>(xs, P.broadcast(mx, lf.s, "logits_max_b"),
                    "logits_shifted");
    }
    Val t = P.targetLogit(xs, h["labels"], sharded ? "tp" : "",
                          sharded ? "predicted_local" : "predicted_logits");
    if (sharded)
      t = P.allReduce(t, {"tp"}, "predicted_logits");
    Val e = P.unary<ExpOp>(xs, "exp_logits");
    Val se = P.sum(e, 1, sharded ? "sum_exp_local" : "sum_exp_logits");
    if (sharded)
      se = P.allReduce(se, {"tp"}, "sum_exp_logits");
    h["exp"] = e;
    h["sum_exp"] = se;
    Val li = P.binary<SubOp>(P.unary<LogOp>(se, "log_sum_exp"), t,
                      "token_loss");
    li = tagTokens(P, "token_loss", li, R, -1);
    h["loss"] = P.mean(li, 0, "loss");
    return h;
  }
  if (d.tp)
    lg = P.allGather(lg, 2, p.tp, {"tp"}, "logits");
  h["logits"] = tagTokens(P, "logits", P.reshape(lg, {R * S, m.V}, "logits_flat"),
                          R, -1);
  if (m.padded())
    h["logits_real"] =
        P.slice(h["logits"], {0, 0}, {R * S, m.vocab}, "logits_real");
  h["loss"] = P.crossEntropy(m.padded() ? h["logits_real"] : h["logits"],
                             h["labels"], "loss");
  return h;
}

Val Gen::headBackward(Prog &P, const Dims &d, const Val &normW,
                      const Val &outW, Vals &h, const Val &seed) {
  int64_t R = d.rows;
  P.comment("loss, LM head, final norm backward" +
            (inPlan ? ", micro-batch " + std::to_string(curMb) : ""));
  Val dlg;
  if (d.tp && !p.gatherLogits) {
    // (softmax - one-hot of the label on this shard) * dloss / tokens.
    int64_t N = R * S;
    Val g = P.meanGrad(seed, {N}, 0, "d_token_loss");
    Val gb = P.broadcast(P.reshape(g, {N, 1}, "d_token_loss_col"),
                         {N, d.V}, "d_token_loss_b");
    Val sb = P.broadcast(P.reshape(h["sum_exp"], {N, 1}, "sum_exp_col"),
                         {N, d.V}, "sum_exp_b");
    Val sm = P.binary<DivOp>(h["exp"], sb, "softmax_local");
    Val oh = P.targetLogitGrad(h["labels"], g, {N, d.V}, "tp", "d_predicted");
    Val dl = P.binary<SubOp>(P.mul(sm, gb, "d_softmax_part"), oh,
                      m.padded() ? "d_logits_masked" : "d_logits_flat");
    if (m.padded())
      dl = P.applyMask(dl, h["vocab_mask"], "d_logits_flat", /*grad=*/true);
    dl = tagTokens(P, "d_logits", dl, R, 1);
    dlg = P.reshape(dl, {R, S, d.V}, "d_logits");
  } else {
    Val dl = P.crossEntropyGrad(m.padded() ? h["logits_real"] : h["logits"],
                                h["labels"], seed, "d_logits_flat");
    if (m.padded())
      dl = P.sliceGrad(dl, {0, 0}, {R * S, m.V}, "d_logits_padded");
    dl = tagTokens(P, "d_logits", dl, R, -1);
    dlg = P.reshape(dl, {R, S, m.V}, "d_logits");
    if (d.tp)
      dlg = P.chunk(dlg, 2, p.tp, {"tp"}, "d_logits_chunk");
  }
  if (m.finalCap)
    dlg = softcapGrad(P, h["logits_pre_cap"], dlg, m.finalCap,
                      "d_logits_uncapped");
  auto [dfn, dout] = P.linearGrad(h["fg"], outW, dlg,
                                  d.tp ? "d_final_xn_part" : "d_final_xn",
                                  "d_output");
  grad(P, m.tied ? "tok_embeddings" : "output", dout, 0);
  dfn = toResidual(P, d, &dfn, nullptr, nullptr, "d_final_xn");
  T(P, "final.d_xn", dfn, 0, RES_TP);
  auto [dx, dn] =
      P.rmsnormGrad(h["x"], normWeight(P, normW), dfn, m.eps, "d_final_x",
                    "d_norm");
  grad(P, "norm", dn, -1, /*seqPartial=*/true);
  T(P, "final.d_x", dx, 0, RES_TP);
  return dx;
}

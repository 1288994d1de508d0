//===- ModelGenAttention.cpp - attention's forward and backward ops -------===//
//
// The attention of a layer, shared by the spec and the rank programs
// (ModelGen.h): its forward and backward (GQA or MLA, with tensor, context
// or ring parallelism), the repetition of key/value heads for grouped-query
// attention, and ring attention's forward and backward over cp.
//
//===----------------------------------------------------------------------===//
#include "ModelGen.h"

#include <cmath>
#include <optional>

using namespace mlir;
using namespace mlir::tv::modelgen;

void Gen::attnForward(Prog &P, const Dims &d, const Vals &w, int64_t k,
                      Vals &a, const Val &xg) {
  int64_t R = d.rows;
  if (!m.deepseek) {
    // q, k, v: [R, S, heads * hd] -> [R, S, heads, hd] -> [R, heads, S, hd].
    auto heads = [&](StringRef wName, int64_t nHeads, StringRef hint) {
      const Val &wt = w.at(wName.str());
      Val l = m.qkvBias ? P.linearBias(xg, wt, w.at("b" + wName.drop_front().str()),
                                       hint)
                        : P.linear(xg, wt, hint);
      Val r = P.reshape(l, {R, S, nHeads, hd}, hint);
      return P.transpose(r, {0, 2, 1, 3}, hint);
    };
    // Qwen3: each head normalized over the head dimension before RoPE.
    auto qkNormed = [&](const Val &t, StringRef wName, StringRef hint) {
      if (!m.qkNorm)
        return t;
      a[(hint + "_pre").str()] = t;
      return P.rmsnorm(t, w.at(wName.str()), m.eps, hint);
    };
    tagCpDim = 2;
    a["q"] = P.rotary(qkNormed(heads("wq", d.nh, "q"), "q_norm", "q_normed"),
                      cosV, sinV, "q_rot");
    T(P, lname(k, "q"), a["q"], 0, 1);
    a["k"] = P.rotary(qkNormed(heads("wk", d.nkv, "k"), "k_norm", "k_normed"),
                      cosV, sinV, "k_rot");
    T(P, lname(k, "k"), a["k"], 0, 1);
    a["v"] = heads("wv", d.nkv, "v");
    T(P, lname(k, "v"), a["v"], 0, 1);
    tagCpDim = 1;
  } else {
    // MLA. Queries: [R, S, nh * (nope + rope)]; the rope part is rotated.
    // Under sequence parallelism the down-projections and their norms run
    // on this rank's sequence chunk (their weights sequence-parallel) and
    // the compressed latents are all-gathered for the column-parallel
    // up-projections, as Megatron-Core's MLA does.
    bool local = inPlan && d.sp;
    const Val &xl = local ? a["xn"] : xg;
    auto gatherLatent = [&](const Val &v, StringRef hint) {
      return local ? P.allGather(v, 1, p.tp, {"tp"}, hint) : v;
    };
    int64_t dq = m.dNope + m.dRope;
    Val q;
    if (m.qLora) {
      a["cq"] = P.linear(xl, w.at("q_a_proj"), "q_a");
      a["cqn"] = gatherLatent(norm(P, a["cq"], w.at("q_a_layernorm"),
                                   "q_a_norm"),
                              "q_a_norm_full");
      T(P, lname(k, "q_a"), a["cqn"], 0, -1);
      q = P.linear(a["cqn"], w.at("q_b_proj"), "q");
    } else {
      q = P.linear(xg, w.at("q_proj"), "q");
    }
    Val q4 = P.transpose(P.reshape(q, {R, S, d.nh, dq}, "q"), {0, 2, 1, 3},
                         "q");
    Val qNope = P.slice(q4, {0, 0, 0, 0}, {R, d.nh, S, m.dNope}, "q_nope");
    Val qPe = P.slice(q4, {0, 0, 0, m.dNope}, {R, d.nh, S, m.dRope}, "q_pe");
    Val qRot = P.rotary(qPe, cosV, sinV, "q_pe_rot");
    a["q"] = P.concat(qNope, qRot, 3, "q_full");
    tagCpDim = 2;
    T(P, lname(k, "q"), a["q"], 0, 1);
    tagCpDim = 1;
    // Joint key/value compression and the shared rotary key.
    int64_t Sl = local ? d.seqLocal : S;
    a["ckv"] = P.linear(xl, w.at("kv_a_proj_with_mqa"), "kv_a");
    a["c"] = P.slice(a["ckv"], {0, 0, 0}, {R, Sl, m.kvLora}, "kv_c");
    Val kPe = gatherLatent(
        P.slice(a["ckv"], {0, 0, m.kvLora}, {R, Sl, m.dRope}, "k_pe"),
        "k_pe_full");
    Val kPe4 = P.transpose(P.reshape(kPe, {R, S, 1, m.dRope}, "k_pe"),
                           {0, 2, 1, 3}, "k_pe");
    Val kRot = P.rotary(kPe4, cosV, sinV, "k_pe_rot");
    tagCpDim = 2;
    T(P, lname(k, "k_pe"), kRot, 0, -1);
    tagCpDim = 1;
    a["cn"] = gatherLatent(norm(P, a["c"], w.at("kv_a_layernorm"),
                                "kv_a_norm"),
                           "kv_a_norm_full");
    T(P, lname(k, "kv_a"), a["cn"], 0, -1);
    Val kv = P.linear(a["cn"], w.at("kv_b_proj"), "kv");
    Val kv4 = P.transpose(
        P.reshape(kv, {R, S, d.nh, m.dNope + m.dV}, "kv"), {0, 2, 1, 3}, "kv");
    Val kNope = P.slice(kv4, {0, 0, 0, 0}, {R, d.nh, S, m.dNope}, "k_nope");
    a["v"] = P.slice(kv4, {0, 0, 0, m.dNope}, {R, d.nh, S, m.dV}, "v");
    tagCpDim = 2;
    T(P, lname(k, "v"), a["v"], 0, 1);
    Val kB = P.broadcast(kRot, {R, d.nh, S, m.dRope}, "k_pe_heads");
    a["k"] = P.concat(kNope, kB, 3, "k_full");
    T(P, lname(k, "k"), a["k"], 0, 1);
    tagCpDim = 1;
  }
  int64_t dqk = m.deepseek ? m.dNope + m.dRope : hd;
  int64_t dv = m.deepseek ? m.dV : hd;
  // Context parallelism as DeepSpeed-Ulysses: all-to-all from this rank's
  // sequence chunk of all its heads to the whole sequence of a cp-th of
  // them; the rotary embedding is already applied by position.
  if (ulysses()) {
    for (const char *n : {"q", "k", "v"})
      a[n] = P.allToAll(a[n], 1, 2, p.cp, {"cp"}, std::string(n) + "_heads");
  } else if (cpGather()) {
    // All-gathered keys and values (torchtitan, the Llama 3 paper): this
    // rank's queries against the whole sequence.
    a["k"] = P.allGather(a["k"], 2, p.cp, {"cp"}, "k_full");
    a["v"] = P.allGather(a["v"], 2, p.cp, {"cp"}, "v_full");
  }
  if (cpRing()) {
    // Ring attention: this rank's queries against every rank's key and
    // value blocks in turn, with an online softmax.
    ringForward(P, a, R, dqk);
    Val ot = P.transpose(a["o_heads"], {0, 2, 1, 3}, "attn");
    a["o"] = P.reshape(ot, {R, S, d.nh * dv}, "attn_o");
    T(P, lname(k, "attn_o"), a["o"], 0, 2);
    a["ao_part"] =
        P.linear(a["o"], w.at("wo"), d.tp ? "attn_out_part" : "attn_out");
    return;
  }
  a["kRep"] = repeatKv(P, a["k"], R, "k_rep");
  a["vRep"] = repeatKv(P, a["v"], R, "v_rep");
  Val sc = P.matmul(a["q"], a["kRep"], false, true, "scores");
  Val scs = P.scale(sc, attnScale(dqk), "scores_scaled");
  if (m.attnCap) // Gemma 2: c * tanh(scores / c)
    scs = softcap(P, a["scores_pre_cap"] = scs, m.attnCap, "scores_capped");
  Val msk = P.applyMask(scs, layerMask(k), "scores_masked");
  a["probs"] = P.softmax(msk, 3, "probs");
  // Under Ulysses the heads are split over tp and then cp: no lineage.
  tagCpDim = 2;
  if (!ulysses())
    T(P, lname(k, "probs"), a["probs"], 0, 1);
  tagCpDim = 1;
  Val o = P.matmul(a["probs"], a["vRep"], false, false, "attn");
  Val ot = P.transpose(o, {0, 2, 1, 3}, "attn");
  if (ulysses())
    ot = P.allToAll(ot, 1, 2, p.cp, {"cp"}, "attn_seq");
  a["o"] = P.reshape(ot, {R, S, d.nh * dv}, "attn_o");
  T(P, lname(k, "attn_o"), a["o"], 0, 2);
  a["ao_part"] =
      P.linear(a["o"], w.at("wo"), d.tp ? "attn_out_part" : "attn_out");
}

std::pair<Val, Val> Gen::attnBackward(Prog &P, const Dims &d, const Vals &w,
                                      int64_t k, Vals &a, const Val &dao) {
  int64_t R = d.rows;
  int64_t dqk = m.deepseek ? m.dNope + m.dRope : hd;
  int64_t dvh = m.deepseek ? m.dV : hd;
  auto [dof, dwo] = P.linearGrad(a["o"], w.at("wo"), dao, "d_attn_o", "d_wo");
  T(P, lname(k, "d_attn_o"), dof, 0, 2);
  grad(P, lname(k, "wo"), dwo, 1);
  Val do4 = P.reshape(dof, {R, S, d.nh, dvh}, "d_attn");
  if (ulysses())
    do4 = P.allToAll(do4, 2, 1, p.cp, {"cp"}, "d_attn_heads");
  Val dot = P.transpose(do4, {0, 2, 1, 3}, "d_attn");
  Val dq, dkRep, dvRep;
  std::optional<std::pair<Val, Val>> ringKv; // ring: dk, dv of own blocks
  if (cpRing()) {
    auto [q, kk, vv] = ringBackward(P, a, dot, R, dqk);
    dq = q;
    ringKv = {kk, vv};
  } else {
    Val dpr = P.matmul(dot, a["vRep"], false, true, "d_probs");
    tagCpDim = 2;
    if (!ulysses())
      T(P, lname(k, "d_probs"), dpr, 0, 1);
    dvRep = P.matmul(a["probs"], dot, true, false, "d_v_rep");
    Val dsm = P.softmaxGrad(a["probs"], dpr, 3, "d_scores_masked");
    Val dss = P.applyMask(dsm, layerMask(k), "d_scores_scaled",
                          /*grad=*/true);
    if (m.attnCap)
      dss = softcapGrad(P, a["scores_pre_cap"], dss, m.attnCap,
                        "d_scores_uncapped");
    Val ds = P.scale(dss, attnScale(dqk), "d_scores");
    if (!ulysses())
      T(P, lname(k, "d_scores"), ds, 0, 1);
    tagCpDim = 1;
    dq = P.matmul(ds, a["kRep"], false, false, "d_q_rot");
    dkRep = P.matmul(ds, a["q"], true, false, "d_k_rep");
  }
  const Val &xg = a["xg"];
  if (!m.deepseek) {
    auto unrepeat = [&](const Val &t, StringRef hint) {
      return unrepeatKv(P, t, R, hint);
    };
    // Ulysses: back from the whole sequence of a cp-th of the heads to
    // this rank's chunk of all of them. All-gathered keys and values: their
    // gradients over the whole sequence are summed over cp and scattered.
    auto toChunk = [&](const Val &t, StringRef hint) {
      if (ulysses())
        return P.allToAll(t, 2, 1, p.cp, {"cp"}, hint);
      if (cpGather())
        return P.reduceScatter(t, 2, p.cp, {"cp"}, hint);
      return t;
    };
    tagCpDim = 2;
    Val dv = ringKv ? ringKv->second
                    : toChunk(unrepeat(dvRep, "d_v"), "d_v_chunk");
    T(P, lname(k, "d_v"), dv, 0, 1);
    Val dk = ringKv ? ringKv->first
                    : toChunk(unrepeat(dkRep, "d_k_rot"), "d_k_rot_chunk");
    if (ulysses())
      dq = toChunk(dq, "d_q_rot_chunk");
    Val dqp = P.rotary(dq, cosV, sinV, "d_q", /*grad=*/true);
    T(P, lname(k, "d_q_heads"), dqp, 0, 1);
    Val dkp = P.rotary(dk, cosV, sinV, "d_k", /*grad=*/true);
    T(P, lname(k, "d_k_heads"), dkp, 0, 1);
    tagCpDim = 1;
    if (m.qkNorm) {
      // Back through the per-head norms; their weights' gradients are sums
      // over this rank's heads only: all-reduced over tp.
      auto [dqn, dwq] = P.rmsnormGrad(a.at("q_normed_pre"), w.at("q_norm"), dqp,
                                      m.eps, "d_q_pre", "d_q_norm");
      auto [dkn, dwk] = P.rmsnormGrad(a.at("k_normed_pre"), w.at("k_norm"), dkp,
                                      m.eps, "d_k_pre", "d_k_norm");
      grad(P, lname(k, "q_norm"), dwq, -1, false, -1, /*headPartial=*/true);
      grad(P, lname(k, "k_norm"), dwk, -1, false, -1, /*headPartial=*/true);
      dqp = dqn;
      dkp = dkn;
    }
    auto flat = [&](const Val &t, int64_t nHeads, StringRef hint) {
      Val tt = P.transpose(t, {0, 2, 1, 3}, hint);
      return P.reshape(tt, {R, S, nHeads * hd}, hint);
    };
    Val gq = flat(dqp, d.nh, "d_q_flat"), gk = flat(dkp, d.nkv, "d_k_flat"),
        gv = flat(dv, d.nkv, "d_v_flat");
    auto [dxq, dwq] = P.linearGrad(xg, w.at("wq"), gq, "d_xn_q", "d_wq");
    auto [dxk, dwk] = P.linearGrad(xg, w.at("wk"), gk, "d_xn_k", "d_wk");
    auto [dxv, dwv] = P.linearGrad(xg, w.at("wv"), gv, "d_xn_v", "d_wv");
    grad(P, lname(k, "wq"), dwq, 0);
    grad(P, lname(k, "wk"), dwk, 0);
    grad(P, lname(k, "wv"), dwv, 0);
    if (m.qkvBias) {
      // A bias's gradient: the output gradient summed over rows and
      // positions (the whole sequence: xg is gathered under sp).
      auto biasGrad = [&](const Val &g, StringRef hint) {
        return P.sum(P.sum(g, 0, hint), 0, hint);
      };
      grad(P, lname(k, "bq"), biasGrad(gq, "d_bq"), 0);
      grad(P, lname(k, "bk"), biasGrad(gk, "d_bk"), 0);
      grad(P, lname(k, "bv"), biasGrad(gv, "d_bv"), 0);
    }
    return {P.add(P.add(dxq, dxk, "d_xn_qk"), dxv,
                  d.tp ? "d_xn_part" : "d_xn"),
            Val{}};
  }
  // MLA backward: first back to this rank's sequence chunk under context
  // parallelism, as for Llama.
  if (ringKv) {
    dkRep = ringKv->first;
    dvRep = ringKv->second;
  } else if (ulysses()) {
    dq = P.allToAll(dq, 2, 1, p.cp, {"cp"}, "d_q_chunk");
    dkRep = P.allToAll(dkRep, 2, 1, p.cp, {"cp"}, "d_k_chunk");
    dvRep = P.allToAll(dvRep, 2, 1, p.cp, {"cp"}, "d_v_chunk");
  } else if (cpGather()) {
    dkRep = P.reduceScatter(dkRep, 2, p.cp, {"cp"}, "d_k_chunk");
    dvRep = P.reduceScatter(dvRep, 2, p.cp, {"cp"}, "d_v_chunk");
  }
  tagCpDim = 2;
  T(P, lname(k, "d_v"), dvRep, 0, 1);
  Val dqNope = P.slice(dq, {0, 0, 0, 0}, {R, d.nh, S, m.dNope}, "d_q_nope");
  Val dqRot = P.slice(dq, {0, 0, 0, m.dNope}, {R, d.nh, S, m.dRope},
                      "d_q_pe_rot");
  Val dqPe = P.rotary(dqRot, cosV, sinV, "d_q_pe", /*grad=*/true);
  Val dq4 = P.concat(dqNope, dqPe, 3, "d_q");
  T(P, lname(k, "d_q_heads"), dq4, 0, 1);
  tagCpDim = 1;
  Val dqf = P.reshape(P.transpose(dq4, {0, 2, 1, 3}, "d_q_flat"),
                      {R, S, d.nh * dqk}, "d_q_flat");
  Val dkNope = P.slice(dkRep, {0, 0, 0, 0}, {R, d.nh, S, m.dNope}, "d_k_nope");
  Val dkB = P.slice(dkRep, {0, 0, 0, m.dNope}, {R, d.nh, S, m.dRope},
                    "d_k_pe_heads");
  // The rotary key is shared by the heads: its gradient sums over them,
  // over this rank's heads only under tp. Under sequence parallelism the
  // down-projection's side is on this rank's chunk: the latents' gradients
  // are reduce-scattered there instead of all-reduced.
  bool local = inPlan && d.sp;
  const Val &xl = local ? a["xn"] : xg;
  Val dkRot = P.reshape(P.sum(dkB, 1, "d_k_pe_rot"), {R, 1, S, m.dRope},
                        "d_k_pe_rot");
  if (d.tp && !local)
    dkRot = P.allReduce(dkRot, {"tp"}, "d_k_pe_rot_sum");
  tagCpDim = 2;
  if (!local)
    T(P, lname(k, "d_k_pe"), dkRot, 0, -1);
  tagCpDim = 1;
  Val dkPe4 = P.rotary(dkRot, cosV, sinV, "d_k_pe", /*grad=*/true);
  Val dkPe = P.reshape(P.transpose(dkPe4, {0, 2, 1, 3}, "d_k_pe"),
                       {R, S, m.dRope}, "d_k_pe");
  auto toChunk = [&](const Val &partial, StringRef name, StringRef hint) {
    if (local) {
      Val r = P.reduceScatter(partial, 1, p.tp, {"tp"}, hint);
      T(P, lname(k, name), r, 0, RES_TP);
      return r;
    }
    Val r = d.tp ? P.allReduce(partial, {"tp"}, hint) : partial;
    T(P, lname(k, name), r, 0, -1);
    return r;
  };
  if (local)
    dkPe = P.reduceScatter(dkPe, 1, p.tp, {"tp"}, "d_k_pe_chunk");
  Val dkv4 = P.concat(dkNope, dvRep, 3, "d_kv");
  Val dkv = P.reshape(P.transpose(dkv4, {0, 2, 1, 3}, "d_kv_flat"),
                      {R, S, d.nh * (m.dNope + m.dV)}, "d_kv_flat");
  auto [dcn, dwkvb] = P.linearGrad(a["cn"], w.at("kv_b_proj"), dkv,
                                   d.tp ? "d_kv_a_norm_part" : "d_kv_a_norm",
                                   "d_kv_b_proj");
  grad(P, lname(k, "kv_b_proj"), dwkvb, 0);
  dcn = toChunk(dcn, "d_kv_a", "d_kv_a_norm");
  auto [dc, dkvn] = P.rmsnormGrad(a["c"], w.at("kv_a_layernorm"), dcn, m.eps,
                                  "d_kv_c", "d_kv_a_layernorm");
  grad(P, lname(k, "kv_a_layernorm"), dkvn, -1, /*seqPartial=*/local);
  Val dckv = P.concat(dc, dkPe, 2, "d_kv_a");
  auto [dxkv, dwkva] = P.linearGrad(xl, w.at("kv_a_proj_with_mqa"), dckv,
                                    "d_xn_kv", "d_kv_a_proj_with_mqa");
  grad(P, lname(k, "kv_a_proj_with_mqa"), dwkva, -1, /*seqPartial=*/local);
  if (m.qLora) {
    auto [dcqn, dwqb] = P.linearGrad(a["cqn"], w.at("q_b_proj"), dqf,
                                     d.tp ? "d_q_a_norm_part" : "d_q_a_norm",
                                     "d_q_b_proj");
    grad(P, lname(k, "q_b_proj"), dwqb, 0);
    dcqn = toChunk(dcqn, "d_q_a", "d_q_a_norm");
    auto [dcq, dqn] = P.rmsnormGrad(a["cq"], w.at("q_a_layernorm"), dcqn,
                                    m.eps, "d_q_a", "d_q_a_layernorm");
    grad(P, lname(k, "q_a_layernorm"), dqn, -1, /*seqPartial=*/local);
    auto [dxq, dwqa] =
        P.linearGrad(xl, w.at("q_a_proj"), dcq, "d_xn_q", "d_q_a_proj");
    grad(P, lname(k, "q_a_proj"), dwqa, -1, /*seqPartial=*/local);
    Val dx = P.add(dxq, dxkv, "d_xn_full");
    if (local) {
      a["d_local"] = dx;
      return {Val{}, Val{}};
    }
    return {Val{}, dx};
  }
  auto [dxq, dwq] = P.linearGrad(xg, w.at("q_proj"), dqf,
                                 d.tp ? "d_xn_q_part" : "d_xn_q", "d_q_proj");
  grad(P, lname(k, "q_proj"), dwq, 0);
  if (local) {
    a["d_local"] = dxkv;
    return {dxq, Val{}};
  }
  return {dxq, dxkv};
}

Val Gen::repeatKv(Prog &P, const Val &t, int64_t R, StringRef hint) {
  // Grouped-query attention: query head j reads key/value head j / rep.
  if (rep == 1)
    return t;
  int64_t n = t.s[1], sq = t.s[2], h = t.s[3];
  Val r = P.reshape(t, {R, n, 1, sq, h}, hint);
  Val b = P.broadcast(r, {R, n, rep, sq, h}, hint);
  return P.reshape(b, {R, n * rep, sq, h}, hint);
}

Val Gen::unrepeatKv(Prog &P, const Val &t, int64_t R, StringRef hint) {
  if (rep == 1)
    return t;
  Val r = P.reshape(t, {R, t.s[1] / rep, rep, t.s[2], t.s[3]}, hint);
  return P.sum(r, 2, hint);
}

void Gen::ringForward(Prog &P, Vals &a, int64_t R, int64_t dqk) {
  // Step i holds the key/value block of cp rank (c - i) mod cp, passed on
  // around the ring. Blocks of later positions are masked out entirely
  // and skipped (as Transformer Engine does); the diagonal block is the
  // first and gets the causal mask. The running max m, sum l and output o
  // are rescaled by exp(m_old - m_new) at each step (online softmax).
  const int64_t n = p.cp, c = curCp;
  const Val &q = a["q"];
  const double scale = 1.0 / std::sqrt((double)dqk);
  Val kb = a["k"], vb = a["v"], mx, l, o;
  // Overlapped (--cp-overlap): the next block is received while this one
  // computes.
  std::vector<Val> next;
  for (int64_t i = 0; i < n; ++i) {
    int64_t src = (c - i + n) % n;
    if (i > 0 && p.cpOverlap) {
      kb = P.wait(next[0], "kv_block");
      vb = P.wait(next[1], "kv_block");
    } else if (i > 0) {
      std::vector<Val> in = ringExchange(P, {kb, vb}, "kv_block");
      kb = in[0];
      vb = in[1];
    }
    if (p.cpOverlap && i + 1 < n)
      next = ringExchange(P, {kb, vb}, "kv_block", /*async=*/true);
    if (src > c && !p.cpBalance)
      continue;
    Val sc = P.scale(P.matmul(q, repeatKv(P, kb, R, "k_rep"), false, true,
                              "scores"),
                     scale, "scores_scaled");
    if (p.cpBalance)
      sc = P.applyMask(sc, ringMasks.at(src), "scores_masked");
    else if (src == c)
      sc = P.applyMask(sc, maskV, "scores_masked");
    Val bm = P.maxKeep(sc, 3, "block_max");
    Val mNew = i == 0 ? bm
                      : P.maxKeep(P.concat(mx, bm, 3, "max_pair"), 3,
                                  "running_max");
    Val pb = P.unary<ExpOp>(
        P.binary<SubOp>(sc, P.broadcast(mNew, sc.s, "running_max_b"),
                 "scores_shifted"),
        "block_exp");
    Val ps = P.reshape(P.sum(pb, 3, "block_sum"), mNew.s, "block_sum");
    Val pv = P.matmul(pb, repeatKv(P, vb, R, "v_rep"), false, false,
                      "block_out");
    if (i == 0) {
      l = ps;
      o = pv;
    } else {
      Val alpha =
          P.unary<ExpOp>(P.binary<SubOp>(mx, mNew, "max_delta"), "rescale");
      l = P.add(P.mul(alpha, l, "sum_rescaled"), ps, "running_sum");
      o = P.add(P.mul(P.broadcast(alpha, o.s, "rescale_b"), o,
                      "out_rescaled"),
                pv, "running_out");
    }
    mx = mNew;
  }
  a["o_heads"] =
      P.binary<DivOp>(o, P.broadcast(l, o.s, "running_sum_b"), "attn");
  a["lse"] = P.add(mx, P.unary<LogOp>(l, "log_sum"), "lse");
}

std::tuple<Val, Val, Val> Gen::ringBackward(Prog &P, Vals &a, const Val &dO,
                                            int64_t R, int64_t dqk) {
  // Flash-attention's backward, block by block around the ring again:
  // P = exp(s - lse), D = rowsum(dO o O), dS = P o (dO V^T - D). The key
  // and value gradients travel with their blocks and, after the last step,
  // go home to their owner (the next rank).
  const int64_t n = p.cp, c = curCp;
  const Val &q = a["q"], &lse = a["lse"];
  const double scale = 1.0 / std::sqrt((double)dqk);
  Val dsum = P.reshape(P.sum(P.mul(dO, a["o_heads"], "d_out_o"), 3, "d_rowsum"),
                       lse.s, "d_rowsum");
  Val kb = a["k"], vb = a["v"], dkb, dvb, dq;
  // Overlapped (--cp-overlap): the next key/value block is received while
  // this one computes; the gradients travel once they are computed.
  std::vector<Val> next;
  for (int64_t i = 0; i < n; ++i) {
    int64_t src = (c - i + n) % n;
    if (i > 0 && p.cpOverlap) {
      kb = P.wait(next[0], "kv_block");
      vb = P.wait(next[1], "kv_block");
      std::vector<Val> in = ringExchange(P, {dkb, dvb}, "kv_grad_block");
      dkb = in[0], dvb = in[1];
    } else if (i > 0) {
      std::vector<Val> in = ringExchange(P, {kb, vb, dkb, dvb}, "kv_grad_block");
      kb = in[0], vb = in[1], dkb = in[2], dvb = in[3];
    }
    if (p.cpOverlap && i + 1 < n)
      next = ringExchange(P, {kb, vb}, "kv_block", /*async=*/true);
    if (src > c && !p.cpBalance)
      continue;
    Val kr = repeatKv(P, kb, R, "k_rep"), vr = repeatKv(P, vb, R, "v_rep");
    Val sc = P.scale(P.matmul(q, kr, false, true, "scores"), scale,
                     "scores_scaled");
    if (p.cpBalance)
      sc = P.applyMask(sc, ringMasks.at(src), "scores_masked");
    else if (src == c)
      sc = P.applyMask(sc, maskV, "scores_masked");
    Val pb = P.unary<ExpOp>(
        P.binary<SubOp>(sc, P.broadcast(lse, sc.s, "lse_b"), "scores_lse"),
        "block_probs");
    Val dv = unrepeatKv(P, P.matmul(pb, dO, true, false, "d_v_rep"), R, "d_v");
    Val dp = P.matmul(dO, vr, false, true, "d_probs");
    Val ds = P.scale(
        P.mul(pb,
              P.binary<SubOp>(dp, P.broadcast(dsum, dp.s, "d_rowsum_b"),
                       "d_probs_centered"),
              "d_scores_unscaled"),
        scale, "d_scores");
    Val dqi = P.matmul(ds, kr, false, false, "d_q_block");
    Val dk = unrepeatKv(P, P.matmul(ds, q, true, false, "d_k_rep"), R, "d_k");
    dq = i == 0 ? dqi : P.add(dq, dqi, "d_q_rot");
    dkb = i == 0 ? dk : P.add(dkb, dk, "d_k_block");
    dvb = i == 0 ? dv : P.add(dvb, dv, "d_v_block");
  }
  std::vector<Val> home = ringExchange(P, {dkb, dvb}, "kv_grad_home");
  return {dq, home[0], home[1]};
}

//===- ModelGen.h - the model-config generator's state ----------*- C++ -*-===//
//
// Generates one tv module (mesh, spec, plan, lineages) for a full Llama3
// training step from a model config (Hugging Face `config.json` keys) and a
// parallel configuration (Megatron-LM style dp x pp x tp with micro-batches):
//
//   tv-translate --import-model-config MODEL.json \
//       --parallel "dp=2 tp=2 pp=2 mb=2" [--layers N] [--seq S] \
//       [--micro-batch-size B] -o plan.mlir
//
// The model follows Meta's reference model.py: token embedding, per layer
// RMSNorm -> GQA attention with rotary embeddings and a causal mask ->
// residual -> RMSNorm -> SwiGLU MLP -> residual; final RMSNorm, LM head,
// cross-entropy over every token. The spec is the single-device step
// (forward, the whole backward with the explicit VJP ops, the loss and every
// weight gradient); the plan is the Megatron-LM parallelization:
//
//   tp  column-parallel Wq/Wk/Wv/W1/W3 (heads and the intermediate dimension
//       sharded), row-parallel Wo/W2 followed by an all-reduce, all-reduce
//       of the input gradient of the column-parallel blocks; vocab-parallel
//       embedding (all-reduce) and LM head (all-gather of the logits along
//       the vocabulary, cross-entropy on the full vocabulary, the rank's
//       vocabulary chunk of the logit gradient); RMSNorm weights replicated.
//   dp  the global batch split over dp ranks, weight gradients all-reduced
//       over dp after accumulation over the micro-batches.
//   pp  layers split evenly over the stages, embedding on the first, final
//       norm, head and loss on the last; activations sent forward and their
//       gradients backward; micro-batches unrolled in the 1F1B order.
//
// The module is built with the ops' ODS builders (one SPMD rank program per
// pipeline stage) and verified, so the dialect's verifiers run on it; the
// lineage checks run in every consumer. Sizes live only in the types: nothing is materialized per element, and
// the only constants are 1/sqrt(head_dim) (the model's, on both sides) and
// 1/(dp * micro-batches) (docs/soundness.md, A3).
//
// Shared by the entry point (ModelConfig.cpp: the options, reading and
// checking the model and parallel configurations), the layers
// (ModelGenLayers.cpp: one layer's forward and backward, the embedding, the
// head; ModelGenAttention.cpp: the attention) and the programs
// (ModelGenPrograms.cpp: the spec, the rank programs, the lineages, the
// module's assembly; ModelGenOptimizer.cpp: the end of the step). The op
// builder is in ModelGenProg.h, the configurations in ModelGenConfig.h. Internal to
// lib/Translate.
//
//===----------------------------------------------------------------------===//
#ifndef TRAINVERIFY_TRANSLATE_MODELGEN_H
#define TRAINVERIFY_TRANSLATE_MODELGEN_H

#include "ModelGenConfig.h"
#include "ModelGenProg.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"
#include <cstdint>
#include <functional>
#include <tuple>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace mlir::tv::modelgen {

//===----------------------------------------------------------------------===//
// The generator
//===----------------------------------------------------------------------===//

/// One plan tensor that a lineage refers to, on every rank of one pipeline
/// stage. `batchDim`: this dimension holds this (dp rank, micro-batch)'s
/// rows of the spec tensor; `tpDim` / `epDim`: the dimension sharded over tp
/// (or, with sequence parallelism, the sequence dimension) / over ep;
/// `zDim`: the dimension a ZeRO-2 gradient is sharded along over the data
/// parallel group (`zExpert`: the expert-data-parallel group).
struct Rec {
  std::string spec, plan;
  Shape shape;
  int64_t batchDim, tpDim, stage, mb;
  int64_t epDim = -1, zDim = -1;
  /// The sequence dimension, sharded over cp (outer to tp when tpDim is
  /// the same dimension: sequence parallelism within the cp chunk).
  int64_t cpDim = -1;
  /// Load-balanced inputs: a rank's first (0: chunk r) or second (1:
  /// chunk 2 x cp - 1 - r) chunk of the sequence in its natural order.
  int64_t cpChunk = -1;
  bool zExpert = false;
  /// The lineage's factor 1/scaleDen (1: none).
  int64_t scaleDen = 1;
};

/// Weights and activations of one layer as seen by one program, by name.
using Vals = std::map<std::string, Val>;

class Gen {
public:
  Gen(MLIRContext *ctx, const ModelCfg &m, const ParCfg &p, int64_t layers,
      int64_t seq, int64_t mbs, bool tracedNorm)
      : ctx(ctx), m(m), p(p), L(layers), S(seq), B(mbs),
        tracedNorm(tracedNorm) {
    hd = m.headDim ? m.headDim : m.H / m.nh;
    rep = m.nh / m.nkv;
  }
  OwningOpRef<ModuleOp> run();

private:
  /// Dimensions of one program: full for the spec, per rank for the plan.
  struct Dims {
    int64_t rows, nh, nkv, I, V, moeI, shI, experts;
    bool tp;  // emit tp collectives
    bool sp;  // sequence parallel: the residual stream is sharded over tp
    int64_t seqLocal; // sequence length of the residual stream
  };

  // -- shared layer code (spec and plan) -----------------------------------
  void T(Prog &P, const std::string &name, const Val &v, int64_t batchDim,
         int64_t tpDim, const std::string &planBase = "", int64_t epDim = -1);
  Val weight(Prog &P, const std::string &name, Shape s, int64_t tpDim,
             int64_t epDim = -1);
  Vals layerWeights(Prog &P, int64_t k, const Dims &d);
  bool isMoE(int64_t k) const { return m.moe() && k >= m.firstDense; }
  Vals layerForward(Prog &P, const Dims &d, const Vals &w, int64_t k,
                    const Val &x);
  Val layerBackward(Prog &P, const Dims &d, const Vals &w, int64_t k,
                    Vals &a, const Val &dout);
  void attnForward(Prog &P, const Dims &d, const Vals &w, int64_t k, Vals &a,
                   const Val &xg);
  /// Returns the gradient of the attention input as (tp-partial, full).
  std::pair<Val, Val> attnBackward(Prog &P, const Dims &d, const Vals &w,
                                   int64_t k, Vals &a, const Val &dao);
  void ffnForward(Prog &P, const Dims &d, const Vals &w, int64_t k, Vals &a,
                  const Val &hg);
  std::pair<Val, Val> ffnBackward(Prog &P, const Dims &d, const Vals &w,
                                  int64_t k, Vals &a, const Val &dfo);
  /// The sum of a tp-partial and a full (replicated over tp) tensor of
  /// shape [rows, S, H], and of one already on this rank's sequence chunk,
  /// in the residual layout: full without sequence parallelism, the rank's
  /// sequence chunk with it.
  Val toResidual(Prog &P, const Dims &d, const Val *partial, const Val *full,
                 const Val *local, StringRef hint);
  /// The residual-layout tensor gathered to the full sequence.
  Val gatherSeq(Prog &P, const Dims &d, const Val &x, StringRef hint);
  void grad(Prog &P, const std::string &name, const Val &g, int64_t tpDim,
            bool seqPartial = false, int64_t epDim = -1,
            bool headPartial = false);
  Val embedForward(Prog &P, const Dims &d, const Val &tokens, const Val &emb);
  void embedBackward(Prog &P, const Dims &d, const Val &tokens,
                     const Val &dx);
  Vals headForward(Prog &P, const Dims &d, const Val &normW, const Val &outW,
                   const Val &x, const Val &labels);
  /// Tags a tensor whose first dimension is the flattened tokens of
  /// `rows` sequences; returns the value to read on.
  Val tagTokens(Prog &P, const std::string &name, const Val &v, int64_t rows,
                 int64_t tpDim);
  /// Attention exchanges by all-to-all (DeepSpeed-Ulysses) in this program.
  bool ulysses() const { return inPlan && p.cp > 1 && p.cpA2A; }
  /// Attention all-gathers keys and values over cp in this program.
  bool cpGather() const {
    return inPlan && p.cp > 1 && !p.cpA2A && !p.cpRing;
  }
  /// Ring attention over cp (Megatron-LM / Transformer Engine's p2p): the
  /// programs are per cp coordinate (`curCp`).
  bool cpRing() const { return inPlan && p.cp > 1 && p.cpRing; }
  int64_t curCp = 0;
  /// Load-balanced ring: the masks of this rank's queries against the key
  /// block of each cp rank.
  std::map<int64_t, Val> ringMasks;
  /// The load-balanced chunk order of the sequence (0, 2cp-1, 1, ...).
  std::vector<int64_t> balancedOrder() const {
    std::vector<int64_t> o;
    for (int64_t r = 0; r < p.cp; ++r) {
      o.push_back(r);
      o.push_back(2 * p.cp - 1 - r);
    }
    return o;
  }
  /// `x` with its dimension `dim` (the sequence) in the load-balanced
  /// order.
  Val balanced(Prog &P, const Val &x, int64_t dim, StringRef hint) {
    int64_t cs = x.s[dim] / (2 * p.cp);
    Val out;
    for (int64_t c : balancedOrder()) {
      Shape start(x.s.size(), 0), sh = x.s;
      start[dim] = c * cs;
      sh[dim] = cs;
      Val piece = P.slice(x, start, sh, hint);
      out = out.n.empty() ? piece : P.concat(out, piece, dim, hint);
    }
    return out;
  }
  /// One step of the cp ring: sends `out` to the next cp rank and returns
  /// what the previous one sent (even coordinates send first, odd ones
  /// receive first, so that blocking transfers complete).
  /// With `async`, the receives are launched only (an overlapped ring).
  std::vector<Val> ringExchange(Prog &P, const std::vector<Val> &out,
                                StringRef hint, bool async = false) {
    int64_t n = p.cp, c = curCp;
    int64_t toNext = (c + 1) % n - c, toPrev = (c + n - 1) % n - c;
    std::vector<Val> in;
    auto sendAll = [&] {
      for (const Val &v : out)
        P.send(v, toNext, 0, "cp");
    };
    if (c % 2 == 0)
      sendAll();
    for (const Val &v : out)
      in.push_back(P.recv(v.s, toPrev, hint, 0, "cp", async));
    if (c % 2 == 1)
      sendAll();
    return in;
  }
  /// Grouped-query attention: key/value heads repeated for their query
  /// heads ([rows, heads, seq, hd]), and the gradients summed back.
  Val repeatKv(Prog &P, const Val &t, int64_t R, StringRef hint);
  Val unrepeatKv(Prog &P, const Val &t, int64_t R, StringRef hint);
  /// Ring attention's forward on this rank's queries; fills a["o_heads"]
  /// (normalized output [rows, heads, seq, hd]) and a["lse"].
  void ringForward(Prog &P, Vals &a, int64_t R, int64_t dqk);
  /// Its backward from dO [rows, heads, seq, hd]: dq, and the gradients of
  /// this rank's own key and value blocks (unrepeated).
  std::tuple<Val, Val, Val> ringBackward(Prog &P, Vals &a, const Val &dO,
                                         int64_t R, int64_t dqk);
  Val headBackward(Prog &P, const Dims &d, const Val &normW, const Val &outW,
                   Vals &h, const Val &seed);

  /// The ZeRO dimension of a (tp-local) parameter or gradient of `shape`
  /// sharded n ways: its first dimension that n divides (-1: none, the
  /// tensor stays replicated).
  static int64_t zeroDim(ArrayRef<int64_t> shape, int64_t n) {
    if (n <= 1)
      return -1;
    for (size_t i = 0; i < shape.size(); ++i)
      if (shape[i] % n == 0)
        return i;
    return -1;
  }
  /// ZeRO-3 / FSDP: a parameter held as a data-parallel shard, all-gathered
  /// before each use (per micro-batch, in forward and again in backward).
  struct Shard {
    int64_t dim, n;
    std::vector<std::string> axes;
  };
  std::map<std::string, Shard> shards; // by the shard input's value name
  Val gathered(Prog &P, const Val &w) {
    auto it = shards.find(w.n);
    if (it == shards.end())
      return w;
    return P.allGather(w, it->second.dim, it->second.n, it->second.axes,
                       w.n + "_full");
  }
  Vals gathered(Prog &P, const Vals &ws) {
    Vals out;
    for (auto &[k, v] : ws)
      out[k] = gathered(P, v);
    return out;
  }
  /// FSDP's prefetch (--fsdp-prefetch): all-gathers launched ahead, by
  /// shard name, until their first use waits for them.
  std::map<std::string, Val> inFlight;
  void prefetch(Prog &P, const Vals &ws) {
    for (auto &[k, w] : ws)
      if (auto it = shards.find(w.n);
          it != shards.end() && !inFlight.count(w.n))
        inFlight[w.n] = P.allGather(w, it->second.dim, it->second.n,
                                    it->second.axes, w.n + "_full",
                                    /*async=*/true);
  }
  /// A layer's parameters for its compute: waited for when prefetched,
  /// gathered now otherwise.
  Vals arrived(Prog &P, const Vals &ws) {
    Vals out;
    for (auto &[k, v] : ws) {
      auto it = inFlight.find(v.n);
      if (it == inFlight.end()) {
        out[k] = gathered(P, v);
        continue;
      }
      out[k] = P.wait(it->second, v.n + "_ready");
      inFlight.erase(it);
    }
    return out;
  }

  /// The module's parts, each built at the end of `b`'s block; `line`
  /// is the line of the listing the part starts at, and is moved past it.
  void spec(OpBuilder &b, int64_t &line);
  void stageProgram(int64_t stage, OpBuilder &b, int64_t &line);
  void stageProgramOne(int64_t stage, OpBuilder &b, int64_t &line);
  void endOfStep(Prog &P);
  /// The end of the step under Megatron's distributed optimizer, in two
  /// phases (decision 124): phase 0, shared by the data-parallel group,
  /// ends with each bucket's reduce-scattered shard (`bucketK.grad_shard`);
  /// phase 1, one program per data-parallel coordinate `curZ`, steps the
  /// ranges it owns and all-gathers the parameters.
  void flatStep(Prog &P);
  /// The phase-1 program of coordinate `curZ` of pipeline stage `stage`.
  void ownedStepProgram(int64_t stage, OpBuilder &b, int64_t &line);
  /// Which part of a distributed optimizer's step is being built.
  enum class StepPhase { Whole, Shared, Owned };
  StepPhase stepPhase = StepPhase::Whole;
  /// Phase 1's parameters: inputs of the phase-1 program, by name.
  std::map<std::string, Val> ownedWeights;
  /// Megatron's --overlap-grad-reduce: each bucket's asynchronous
  /// reduce-scatter, and the reads and packing of its gradients, moved to
  /// just after the last accumulation into any of its gradient buffers
  /// (the backward of the bucket's first layer in the last micro-batch).
  void launchWhenReady(Prog &P);
  /// One program per data-parallel coordinate (dp x cp index `curZ`).
  bool perZ() const { return p.distOpt && dpN() > 1; }
  int64_t curZ = 0;
  /// One `tv.lineage` statement: a box of a spec tensor, its groups of
  /// plan tensors (name, rank) and the factor 1/den.
  struct FlatLineage {
    std::string spec;
    Shape lower, upper;
    std::vector<std::vector<std::pair<std::string, int64_t>>> groups;
    int64_t den = 1;
  };
  /// Lineage statements of the gradients in flat buffers, written out as
  /// boxes (they differ per data-parallel coordinate).
  std::vector<FlatLineage> flatLines;
  /// The parts of flat buffers a rank owns as statements by box (the key:
  /// the spec tensor and the box), whose groups are replicas (a tied
  /// embedding's copies on the first and last stage).
  std::vector<FlatLineage> flatStmts;
  std::map<std::string, size_t> flatStmtIndex;
  void lineages(OpBuilder &b, int64_t &line);

  int64_t rankOf(int64_t d, int64_t s, int64_t c, int64_t t) const {
    return ((d * p.pp + s) * p.cp + c) * p.tp + t;
  }
  /// Megatron's embedding group: each pair of ranks of the first and the
  /// last pipeline stage with the same data-, context- and tensor-parallel
  /// coordinates.
  std::vector<std::vector<int64_t>> embeddingGroups() const {
    std::vector<std::vector<int64_t>> groups;
    for (int64_t d = 0; d < p.dp; ++d)
      for (int64_t c = 0; c < p.cp; ++c)
        for (int64_t t = 0; t < p.tp; ++t)
          groups.push_back({rankOf(d, 0, c, t), rankOf(d, p.pp - 1, c, t)});
    return groups;
  }
  /// The ranks that reduce a dense gradient: data and context parallel.
  int64_t dpN() const { return p.dp * p.cp; }
  std::string lname(int64_t k, StringRef n) const {
    return "l" + std::to_string(k) + "." + n.str();
  }
  /// The data-parallel group of dense parameters, and of expert parameters
  /// (with expert parallelism, the ranks holding the same experts).
  std::vector<std::string> dpAxes() const {
    std::vector<std::string> a{"dp"};
    if (p.ep > 1)
      a = {"edp", "ep"};
    if (p.cp > 1)
      a.push_back("cp");
    return a;
  }
  /// With context parallelism the expert-data-parallel group spans cp too
  /// (each cp rank routes its own chunk of the sequence).
  std::vector<std::string> expertDpAxes() const {
    std::vector<std::string> a{p.ep > 1 ? "edp" : "dp"};
    if (p.cp > 1)
      a.push_back("cp");
    return a;
  }
  int64_t expertDpN() const { return p.dp / p.ep * p.cp; }
  std::pair<int64_t, int64_t> layerRange(int64_t s) const {
    return {s * L / p.pp, (s + 1) * L / p.pp};
  }
  /// The layers of chunk `c` of pipeline rank `s`: virtual stage c * pp + s
  /// of pp * vpp (chunk 0 of every rank first, then chunk 1, ...).
  std::pair<int64_t, int64_t> chunkRange(int64_t s, int64_t c) const {
    if (p.vpp == 1)
      return layerRange(s);
    int64_t vs = c * p.pp + s, n = p.pp * p.vpp;
    return {vs * L / n, (vs + 1) * L / n};
  }

  MLIRContext *ctx;
  /// "model-config.mlir": the file every op is located in.
  StringAttr file;
  Location at(int64_t line, unsigned col) const {
    return FileLineColLoc::get(file, (unsigned)line, col);
  }
  ModelCfg m;
  ParCfg p;
  int64_t L, S, B, hd, rep;
  /// The sequence dimension of tensors tagged now (the attention heads'
  /// layout [rows, heads, seq, hd]: 2), sharded over cp in the plan.
  int64_t tagCpDim = 1;
  /// Factor denominator of the lineages of tensors tagged now (the
  /// backward of a per-rank-mean plan: dp).
  int64_t tagScaleDen = 1;
  bool tracedNorm;
  static constexpr double kLr = 1e-3;
  /// Adam's hyperparameters (Llama 3's betas) at a step past the first, so
  /// that the bias corrections are not 1.
  static constexpr double kBeta1 = 0.9, kBeta2 = 0.95, kAdamEps = 1e-8;
  static constexpr int64_t kAdamStep = 10;
  /// The optimizer step on (a shard of) one parameter: its new value, and
  /// with Adam the new moments. `state` makes a moment input of the
  /// parameter's shape; `out` receives the new moments by name suffix.
  Val optimizerStep(Prog &P, const std::string &name, const Val &w,
                    const Val &g,
                    const std::function<Val(const std::string &)> &state,
                    const std::function<void(const std::string &, const Val &)>
                        &out) {
    if (!p.adam)
      return P.sgd(w, g, kLr, name + "_new");
    Val m = state(".exp_avg"), v = state(".exp_avg_sq");
    auto [nw, nm, nv] = P.adam(w, g, m, v, kLr, kBeta1, kBeta2, kAdamEps,
                               kAdamStep, name + "_new");
    out(".exp_avg", nm);
    out(".exp_avg_sq", nv);
    return nw;
  }

  /// RMSNorm forward: one op, or (traced) the ops PyTorch records for
  /// Hugging Face's LlamaRMSNorm: x * rsqrt(mean(x^2) + eps) * w.
  Val norm(Prog &P, const Val &x, const Val &w, StringRef hint) {
    if (!tracedNorm)
      return P.rmsnorm(x, w, m.eps, hint);
    int64_t last = x.s.size() - 1;
    Val sq = P.scalarOp<PowOp>(x, 2.0, (hint + "_sq").str());
    Val var = P.meanKeep(sq, last, (hint + "_var").str());
    Val ve = P.scalarOp<AddScalarOp>(var, m.eps, (hint + "_var_eps").str());
    Val r = P.unary<RsqrtOp>(ve, (hint + "_rstd").str());
    Val xr = P.mul(x, r, (hint + "_unit").str());
    return P.mul(xr, w, hint);
  }

  // State of the program being generated.
  bool inPlan = false;
  int64_t curStage = 0, curMb = 0;
  Val cosV, sinV, maskV;
  /// Gemma 2: the sliding-window mask of the even layers.
  Val maskW;
  const Val &layerMask(int64_t k) const {
    return m.localWindow && k % 2 == 0 ? maskW : maskV;
  }
  // Gemma 2's pieces (ModelGenGemma.cpp).
  Val normWeight(Prog &P, const Val &w);
  double attnScale(int64_t dqk) const;
  Val softcap(Prog &P, const Val &x, double c, StringRef hint);
  Val softcapGrad(Prog &P, const Val &x, const Val &g, double c,
                  StringRef hint);
  Val geluTanh(Prog &P, const Val &x, StringRef hint);
  Val geluTanhGrad(Prog &P, const Val &x, const Val &g, StringRef hint);
  std::vector<Rec> recs;
  /// Weight inputs of the program being generated, by name.
  std::map<std::string, Val> weightsIn;
  struct Buf {
    std::string name;
    Shape shape;
    int64_t tpDim, epDim;
    bool seqPartial;
    /// Summed over this rank's heads only (q/k norm weights): all-reduced
    /// over tp.
    bool headPartial = false;
  };
  // Spec: weight gradient outputs in order. Plan: accumulated buffers of the
  // current stage in order.
  std::vector<std::pair<std::string, Val>> specGrads;
  std::vector<Buf> bufs;
  std::set<std::string> bufSeen;
  /// The gradient buffer of `b` as the backward leaves it, with a
  /// sequence- or head-partial one (a norm weight's under sequence
  /// parallelism, q/k norms) all-reduced over tp first, as Megatron does.
  Val localGrad(Prog &P, const Buf &b) {
    std::string gn = b.name + ".grad";
    Val g = P.bufferRead(gn, b.shape);
    if (b.seqPartial)
      g = P.allReduce(g, {"tp"}, gn + "_sp");
    if (b.headPartial)
      g = P.allReduce(g, {"tp"}, gn + "_heads");
    return g;
  }
  /// A tied embedding under pipeline parallelism (a copy on the first and
  /// on the last stage, summed over Megatron's embedding group).
  bool tiedCopy(const Buf &b) const {
    return m.tied && p.pp > 1 && b.name == "tok_embeddings";
  }

  // Loss scaling and gradient clipping (ModelGenScaling.cpp).
  /// The backward's seed times the loss scale.
  Val scaleSeed(Prog &P, const Val &seed);
  /// A gradient divided by the loss scale (times its inverse, as Megatron's
  /// unscale does).
  Val unscale(Prog &P, const Val &g, const std::string &hint);
  /// The program's dynamic loss scale: an input of the spec, replicated
  /// on every rank of the plan.
  Val lossScaleIn(Prog &P);
  std::optional<Val> lossScaleV, invLossScaleV;
  /// The sum of the squares of `g`'s elements, a scalar.
  Val sumSquares(Prog &P, const Val &g, const std::string &hint);
  /// Given the gradients' squared norm: outputs `grad_norm` and returns the
  /// clipping factor min(1, C / (norm + eps)).
  Val clipFactor(Prog &P, const Val &sq);
  /// `g` times the clipping factor.
  Val clip(Prog &P, const Val &g, const Val &factor, const std::string &hint);
  /// A plan's squared gradient norm: the local squared sums of parameters
  /// (or shards) keyed by the mesh axes they are summed over, all-reduced
  /// over each group and added. A parameter replicated over tp (a
  /// tensor-parallel duplicate) counts 1/tp on each tp rank.
  struct NormParts {
    std::vector<std::pair<std::vector<std::string>, std::optional<Val>>>
        parts;
  };
  /// The sum of `xs` as a balanced tree of additions (a chain over hundreds
  /// of parameters would make each partial sum as large as the whole).
  Val sumTree(Prog &P, std::vector<Val> xs, const std::string &hint);
  NormParts normParts() const;
  std::vector<std::string> normGroup(bool expert, bool dpSharded) const;
  void addNormPart(Prog &P, NormParts &np, const Buf &b, const Val &g,
                   bool dpSharded, const std::string &hint);
  /// addNormPart of a squared sum already taken.
  void addNormSum(Prog &P, NormParts &np, const Buf &b, Val s,
                  bool dpSharded, const std::string &hint);
  Val planSquaredNorm(Prog &P, NormParts &np);
  /// The size of a mesh axis.
  int64_t axisSize(const std::string &axis) const;
};

// With sequence parallelism every tensor of the residual stream (layer
// inputs and outputs, norm outputs, their gradients) is sharded along the
// sequence (dimension 1) over tp: their lineages use tpDim = 1.
#define RES_TP (d.sp ? 1 : -1)

} // namespace mlir::tv::modelgen

#endif

//===- ModelGen.cpp - --import-model-config -------------------------------===//
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
// The module is built as MLIR text (one SPMD rank program per pipeline
// stage) and parsed, so the dialect's verifiers and the lineage checks run on
// it. Sizes live only in the types: nothing is materialized per element, and
// the only constants are 1/sqrt(head_dim) (the model's, on both sides) and
// 1/(dp * micro-batches) (docs/soundness.md, A3).
//
//===----------------------------------------------------------------------===//
#include "TrainVerify/Dialect/Lineage.h"
#include "TrainVerify/Dialect/TVOps.h"
#include "JsonInput.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"
#include <cmath>
#include <map>
#include <set>

using namespace mlir;
namespace json = llvm::json;

static llvm::cl::opt<std::string> clParallel(
    "parallel",
    llvm::cl::desc("--import-model-config: parallel configuration, e.g. "
                   "\"dp=2 tp=2 pp=2 mb=2\" (missing axes are 1)"),
    llvm::cl::init(""));
static llvm::cl::opt<int64_t> clLayers(
    "layers",
    llvm::cl::desc("--import-model-config: number of layers (default: the "
                   "config's num_hidden_layers)"),
    llvm::cl::init(-1));
static llvm::cl::opt<int64_t>
    clSeq("seq",
          llvm::cl::desc("--import-model-config: sequence length (default 8)"),
          llvm::cl::init(8));
static llvm::cl::opt<int64_t> clMicroBatchSize(
    "micro-batch-size",
    llvm::cl::desc("--import-model-config: sequences per micro-batch per "
                   "data-parallel rank (default 1)"),
    llvm::cl::init(1));

namespace {

using Shape = std::vector<int64_t>;

//===----------------------------------------------------------------------===//
// Text builder
//===----------------------------------------------------------------------===//

std::string tyOf(const Shape &s, StringRef et = "f32") {
  std::string r = "tensor<";
  for (int64_t d : s)
    r += std::to_string(d) + "x";
  return r + et.str() + ">";
}

std::string flt(double c) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << llvm::format("%.17e", c);
  return s;
}

std::string ints(ArrayRef<int64_t> xs) {
  std::string r = "[";
  for (size_t i = 0; i < xs.size(); ++i)
    r += (i ? ", " : "") + std::to_string(xs[i]);
  return r + "]";
}

struct Val {
  std::string n;
  Shape s;
  std::string et = "f32";
  std::string ty() const { return tyOf(s, et); }
  std::string ref() const { return "%" + n; }
};

/// The body of the spec or of one rank program. Every op method appends one
/// op; `mb` (>= 0) puts {mb = k : i64} on the ops emitted while it is set.
class Prog {
public:
  explicit Prog(std::string indent) : ind(std::move(indent)) {}
  std::string head, body;
  int64_t mb = -1;

  Val fresh(StringRef hint, Shape s, StringRef et = "f32") {
    std::string h;
    for (char c : hint)
      h += (std::isalnum((unsigned char)c) || c == '_') ? c : '_';
    std::string name = h;
    for (int i = 1; used.count(name); ++i)
      name = h + "_" + std::to_string(i);
    used.insert(name);
    return Val{name, std::move(s), et.str()};
  }
  std::string attrs(std::vector<std::string> items = {}) const {
    if (mb >= 0)
      items.push_back("mb = " + std::to_string(mb) + " : i64");
    if (items.empty())
      return "";
    std::string r = " {";
    for (size_t i = 0; i < items.size(); ++i)
      r += (i ? ", " : "") + items[i];
    return r + "}";
  }
  void line(const std::string &s) { body += ind + s + "\n"; }
  Val emit(StringRef hint, Shape s, const std::string &text,
           StringRef et = "f32") {
    Val v = fresh(hint, std::move(s), et);
    line(v.ref() + " = " + text);
    return v;
  }
  void comment(const std::string &s) { line("// " + s); }

  // -- structure -----------------------------------------------------------
  Val input(const std::string &name, Shape s, StringRef et = "f32") {
    Val v = fresh(name, std::move(s), et);
    head += ind + v.ref() + " = tv.input \"" + name + "\" : " + v.ty() + "\n";
    return v;
  }
  void tag(const std::string &name, const Val &v) {
    line("tv.tag \"" + name + "\", " + v.ref() + attrs() + " : " + v.ty());
  }
  void output(const std::string &name, const Val &v) {
    line("tv.output \"" + name + "\", " + v.ref() + attrs() + " : " + v.ty());
  }
  void accumulate(const std::string &buf, const Val &v) {
    line("tv.accumulate \"" + buf + "\", " + v.ref() + attrs() + " : " +
         v.ty());
  }
  Val bufferRead(const std::string &buf, const Shape &s) {
    return emit(buf + "_acc", s,
                "tv.buffer_read \"" + buf + "\"" + attrs() + " : " + tyOf(s));
  }

  // -- compute -------------------------------------------------------------
  Val linear(const Val &x, const Val &w, StringRef hint) {
    Shape s = x.s;
    s.back() = w.s[0];
    return emit(hint, s,
                "tv.linear " + x.ref() + ", " + w.ref() + attrs() + " : (" +
                    x.ty() + ", " + w.ty() + ") -> " + tyOf(s));
  }
  std::pair<Val, Val> linearGrad(const Val &x, const Val &w, const Val &g,
                                 StringRef hx, StringRef hw) {
    Val dx = fresh(hx, x.s), dw = fresh(hw, w.s);
    line(dx.ref() + ", " + dw.ref() + " = tv.linear_grad " + x.ref() + ", " +
         w.ref() + ", " + g.ref() + attrs() + " : " + x.ty() + ", " + w.ty() +
         ", " + g.ty());
    return {dx, dw};
  }
  Val rmsnorm(const Val &x, const Val &w, double eps, StringRef hint) {
    return emit(hint, x.s,
                "tv.rmsnorm " + x.ref() + ", " + w.ref() + " eps " + flt(eps) +
                    attrs() + " : " + x.ty() + ", " + w.ty() + " -> " + x.ty());
  }
  std::pair<Val, Val> rmsnormGrad(const Val &x, const Val &w, const Val &g,
                                  double eps, StringRef hx, StringRef hw) {
    Val dx = fresh(hx, x.s), dw = fresh(hw, w.s);
    line(dx.ref() + ", " + dw.ref() + " = tv.rmsnorm_grad " + x.ref() + ", " +
         w.ref() + ", " + g.ref() + " eps " + flt(eps) + attrs() + " : " +
         x.ty() + ", " + w.ty());
    return {dx, dw};
  }
  Val reshape(const Val &x, Shape s, StringRef hint) {
    std::string t = tyOf(s, x.et);
    return emit(hint, s,
                "tv.reshape " + x.ref() + attrs() + " : " + x.ty() + " -> " + t,
                x.et);
  }
  Val transpose(const Val &x, ArrayRef<int64_t> perm, StringRef hint) {
    Shape s;
    for (int64_t p : perm)
      s.push_back(x.s[p]);
    return emit(hint, s,
                "tv.transpose " + x.ref() + " perm " + ints(perm) + attrs() +
                    " : " + x.ty() + " -> " + tyOf(s));
  }
  Val rotary(const Val &x, const Val &c, const Val &s, StringRef hint,
             bool grad = false) {
    return emit(hint, x.s,
                std::string(grad ? "tv.rotary_grad " : "tv.rotary ") +
                    x.ref() + ", " + c.ref() + ", " + s.ref() + attrs() +
                    " : " + x.ty() + ", " + c.ty() + ", " + s.ty() + " -> " +
                    x.ty());
  }
  Val broadcast(const Val &x, Shape s, StringRef hint) {
    std::string t = tyOf(s);
    return emit(hint, s,
                "tv.broadcast " + x.ref() + attrs() + " : " + x.ty() + " -> " +
                    t);
  }
  Val sum(const Val &x, int64_t dim, StringRef hint) {
    Shape s = x.s;
    s.erase(s.begin() + dim);
    return emit(hint, s,
                "tv.sum " + x.ref() + " dims [" + std::to_string(dim) + "]" +
                    attrs() + " : " + x.ty() + " -> " + tyOf(s));
  }
  Val matmul(const Val &a, const Val &b, bool ta, bool tb, StringRef hint) {
    size_t r = a.s.size();
    Shape s = a.s;
    s[r - 2] = ta ? a.s[r - 1] : a.s[r - 2];
    s[r - 1] = tb ? b.s[r - 2] : b.s[r - 1];
    std::vector<std::string> at;
    if (ta)
      at.push_back("transpose_lhs");
    if (tb)
      at.push_back("transpose_rhs");
    return emit(hint, s,
                "tv.matmul " + a.ref() + ", " + b.ref() + attrs(at) + " : " +
                    a.ty() + ", " + b.ty() + " -> " + tyOf(s));
  }
  Val scale(const Val &x, double c, StringRef hint) {
    return emit(hint, x.s,
                "tv.scale " + x.ref() + ", " + flt(c) + attrs() + " : " +
                    x.ty());
  }
  Val causalMask(int64_t s, StringRef hint) {
    Shape sh{s, s};
    return emit(hint, sh, "tv.causal_mask" + attrs() + " : " + tyOf(sh, "i1"),
                "i1");
  }
  Val applyMask(const Val &x, const Val &m, StringRef hint, bool grad = false) {
    return emit(hint, x.s,
                std::string(grad ? "tv.apply_mask_grad " : "tv.apply_mask ") +
                    x.ref() + ", " + m.ref() + attrs() + " : " + x.ty() +
                    ", " + m.ty() + " -> " + x.ty());
  }
  Val softmax(const Val &x, int64_t dim, StringRef hint) {
    return emit(hint, x.s,
                "tv.softmax " + x.ref() + " dim " + std::to_string(dim) +
                    attrs() + " : " + x.ty());
  }
  Val softmaxGrad(const Val &y, const Val &g, int64_t dim, StringRef hint) {
    return emit(hint, y.s,
                "tv.softmax_grad " + y.ref() + ", " + g.ref() + " dim " +
                    std::to_string(dim) + attrs() + " : " + y.ty());
  }
  Val binary(StringRef op, const Val &a, const Val &b, StringRef hint) {
    return emit(hint, a.s,
                "tv." + op.str() + " " + a.ref() + ", " + b.ref() + attrs() +
                    " : " + a.ty() + ", " + b.ty() + " -> " + a.ty());
  }
  Val add(const Val &a, const Val &b, StringRef hint) {
    return binary("add", a, b, hint);
  }
  Val mul(const Val &a, const Val &b, StringRef hint) {
    return binary("mul", a, b, hint);
  }
  Val silu(const Val &x, StringRef hint) {
    return emit(hint, x.s, "tv.silu " + x.ref() + attrs() + " : " + x.ty());
  }
  Val siluGrad(const Val &x, const Val &g, StringRef hint) {
    return emit(hint, x.s,
                "tv.silu_grad " + x.ref() + ", " + g.ref() + attrs() + " : " +
                    x.ty());
  }
  Val embedding(const Val &ids, const Val &table, bool vocabPar,
                StringRef hint) {
    Shape s = ids.s;
    s.push_back(table.s[1]);
    std::vector<std::string> at;
    if (vocabPar)
      at.push_back("vocab_axis = \"tp\"");
    return emit(hint, s,
                "tv.embedding " + ids.ref() + ", " + table.ref() + attrs(at) +
                    " : " + ids.ty() + ", " + table.ty() + " -> " + tyOf(s));
  }
  Val embeddingGrad(const Val &ids, const Val &g, const Shape &table,
                    bool vocabPar, StringRef hint) {
    std::vector<std::string> at;
    if (vocabPar)
      at.push_back("vocab_axis = \"tp\"");
    return emit(hint, table,
                "tv.embedding_grad " + ids.ref() + ", " + g.ref() + attrs(at) +
                    " : " + ids.ty() + ", " + g.ty() + " -> " + tyOf(table));
  }
  Val crossEntropy(const Val &logits, const Val &labels, StringRef hint) {
    return emit(hint, {},
                "tv.cross_entropy " + logits.ref() + ", " + labels.ref() +
                    attrs() + " : " + logits.ty() + ", " + labels.ty() +
                    " -> " + tyOf({}));
  }
  Val crossEntropyGrad(const Val &logits, const Val &labels, const Val &g,
                       StringRef hint) {
    return emit(hint, logits.s,
                "tv.cross_entropy_grad " + logits.ref() + ", " + labels.ref() +
                    ", " + g.ref() + attrs() + " : " + logits.ty() + ", " +
                    labels.ty() + ", " + g.ty() + " -> " + logits.ty());
  }
  Val allReduce(const Val &x, StringRef axis, StringRef hint) {
    return emit(hint, x.s,
                "tv.all_reduce sum " + x.ref() +
                    attrs({"axes = [\"" + axis.str() + "\"]"}) + " : " +
                    x.ty() + " -> " + x.ty());
  }
  Val allGather(const Val &x, int64_t dim, int64_t n, StringRef hint) {
    Shape s = x.s;
    s[dim] *= n;
    return emit(hint, s,
                "tv.all_gather " + x.ref() + " dim " + std::to_string(dim) +
                    attrs({"axes = [\"tp\"]"}) + " : " + x.ty() + " -> " +
                    tyOf(s));
  }
  Val chunk(const Val &x, int64_t dim, int64_t n, StringRef hint) {
    Shape s = x.s;
    s[dim] /= n;
    return emit(hint, s,
                "tv.chunk " + x.ref() + " dim " + std::to_string(dim) +
                    attrs({"axes = [\"tp\"]"}) + " : " + x.ty() + " -> " +
                    tyOf(s));
  }
  void send(const Val &x, int64_t offset) {
    line("tv.send " + x.ref() +
         attrs({"peer_axis = \"pp\"",
                "peer_offset = " + std::to_string(offset) + " : i64"}) +
         " : " + x.ty());
  }
  Val recv(const Shape &s, int64_t offset, StringRef hint) {
    return emit(hint, s,
                "tv.recv" +
                    attrs({"peer_axis = \"pp\"",
                           "peer_offset = " + std::to_string(offset) +
                               " : i64"}) +
                    " : " + tyOf(s));
  }

  std::string text() const { return head + body; }

private:
  std::string ind;
  std::set<std::string> used;
};

//===----------------------------------------------------------------------===//
// Configuration
//===----------------------------------------------------------------------===//

struct ModelCfg {
  int64_t H = 0, L = 0, nh = 0, nkv = 0, I = 0, V = 0;
  double eps = 1e-5, theta = 500000.0;
  std::string type = "llama";
};

struct ParCfg {
  int64_t dp = 1, tp = 1, pp = 1, mb = 1;
};

/// One plan tensor that a lineage refers to, on every rank of one pipeline
/// stage. `batch`: dimension 0 is this (dp rank, micro-batch)'s rows of the
/// spec tensor; `tpDim`: the dimension sharded over tp (-1: replicated).
struct Rec {
  std::string spec, plan;
  Shape shape;
  bool batch;
  int64_t tpDim, stage, mb;
};

//===----------------------------------------------------------------------===//
// The generator
//===----------------------------------------------------------------------===//

/// Weights of one layer as seen by one program.
struct LayerW {
  Val attnNorm, wq, wk, wv, wo, ffnNorm, w1, w2, w3;
};

/// Forward values of one layer kept for its backward.
struct LayerAct {
  Val x, xn, q, k, v, kRep, vRep, probs, o, h, hn, a, b, sa, g, out;
};

class Gen {
public:
  Gen(const ModelCfg &m, const ParCfg &p, int64_t layers, int64_t seq,
      int64_t mbs)
      : m(m), p(p), L(layers), S(seq), B(mbs) {
    hd = m.H / m.nh;
    rep = m.nh / m.nkv;
  }
  std::string run();

private:
  /// Dimensions of one program: full for the spec, per rank for the plan.
  struct Dims {
    int64_t rows, nh, nkv, I, V;
    bool tp; // emit tp collectives
  };

  // -- shared layer code (spec and plan) -----------------------------------
  void T(Prog &P, const std::string &name, const Val &v, bool batch,
         int64_t tpDim, const std::string &planBase = "");
  LayerW layerWeights(Prog &P, int64_t k, const Dims &d);
  LayerAct layerForward(Prog &P, const Dims &d, const LayerW &w, int64_t k,
                        const Val &x);
  Val layerBackward(Prog &P, const Dims &d, const LayerW &w, int64_t k,
                    const LayerAct &a, const Val &dout);
  void grad(Prog &P, const std::string &name, const Val &g, int64_t tpDim);
  Val embedForward(Prog &P, const Dims &d, const Val &tokens, const Val &emb);
  void embedBackward(Prog &P, const Dims &d, const Val &tokens,
                     const Val &dx);
  struct HeadAct {
    Val x, fn, logits, labels, loss;
  };
  HeadAct headForward(Prog &P, const Dims &d, const Val &normW,
                      const Val &outW, const Val &x, const Val &labels);
  Val headBackward(Prog &P, const Dims &d, const Val &normW, const Val &outW,
                   const HeadAct &h, const Val &seed);

  std::string spec();
  std::string stageProgram(int64_t stage);
  std::string lineages();

  int64_t rankOf(int64_t d, int64_t s, int64_t t) const {
    return (d * p.pp + s) * p.tp + t;
  }
  std::string lname(int64_t k, StringRef n) const {
    return "l" + std::to_string(k) + "." + n.str();
  }

  ModelCfg m;
  ParCfg p;
  int64_t L, S, B, hd, rep;

  // State of the program being generated.
  bool inPlan = false;
  int64_t curStage = 0, curMb = 0;
  Val cosV, sinV, maskV;
  std::vector<Rec> recs;
  // Spec: weight gradient outputs in order. Plan: accumulated buffers of the
  // current stage in order, with their tp dimension.
  std::vector<std::pair<std::string, Val>> specGrads;
  std::vector<std::tuple<std::string, Shape, int64_t>> bufs;
  std::set<std::string> bufSeen;
};

void Gen::T(Prog &P, const std::string &name, const Val &v, bool batch,
            int64_t tpDim, const std::string &planBase) {
  if (!inPlan) {
    P.tag(name, v);
    return;
  }
  std::string pn =
      (planBase.empty() ? name : planBase) + ".mb" + std::to_string(curMb);
  P.tag(pn, v);
  recs.push_back({name, pn, v.s, batch, tpDim, curStage, curMb});
}

void Gen::grad(Prog &P, const std::string &name, const Val &g, int64_t tpDim) {
  std::string gn = name + ".grad";
  if (!inPlan) {
    specGrads.push_back({gn, g});
    return;
  }
  P.accumulate(gn, g);
  if (bufSeen.insert(gn).second)
    bufs.push_back({gn, g.s, tpDim});
}

LayerW Gen::layerWeights(Prog &P, int64_t k, const Dims &d) {
  LayerW w;
  auto in = [&](StringRef n, Shape s, int64_t tpDim) {
    std::string name = lname(k, n);
    Val v = P.input(name, s);
    if (inPlan)
      recs.push_back({name, name, s, false, tpDim, curStage, -1});
    return v;
  };
  w.attnNorm = in("attention_norm", {m.H}, -1);
  w.wq = in("wq", {d.nh * hd, m.H}, 0);
  w.wk = in("wk", {d.nkv * hd, m.H}, 0);
  w.wv = in("wv", {d.nkv * hd, m.H}, 0);
  w.wo = in("wo", {m.H, d.nh * hd}, 1);
  w.ffnNorm = in("ffn_norm", {m.H}, -1);
  w.w1 = in("w1", {d.I, m.H}, 0);
  w.w2 = in("w2", {m.H, d.I}, 1);
  w.w3 = in("w3", {d.I, m.H}, 0);
  return w;
}

LayerAct Gen::layerForward(Prog &P, const Dims &d, const LayerW &w, int64_t k,
                           const Val &x) {
  LayerAct a;
  int64_t R = d.rows;
  a.x = x;
  P.comment("layer " + std::to_string(k) + " forward" +
            (inPlan ? ", micro-batch " + std::to_string(curMb) : ""));
  a.xn = P.rmsnorm(x, w.attnNorm, m.eps, "xn");
  T(P, lname(k, "xn"), a.xn, true, -1);
  // q, k, v: [R, S, heads * hd] -> [R, S, heads, hd] -> [R, heads, S, hd].
  auto heads = [&](const Val &wt, int64_t nHeads, StringRef hint) {
    Val l = P.linear(a.xn, wt, hint);
    Val r = P.reshape(l, {R, S, nHeads, hd}, hint);
    return P.transpose(r, {0, 2, 1, 3}, hint);
  };
  a.q = P.rotary(heads(w.wq, d.nh, "q"), cosV, sinV, "q_rot");
  T(P, lname(k, "q"), a.q, true, 1);
  a.k = P.rotary(heads(w.wk, d.nkv, "k"), cosV, sinV, "k_rot");
  T(P, lname(k, "k"), a.k, true, 1);
  a.v = heads(w.wv, d.nkv, "v");
  T(P, lname(k, "v"), a.v, true, 1);
  // Grouped-query attention: query head j reads key/value head j / rep.
  auto repeat = [&](const Val &t, StringRef hint) {
    if (rep == 1)
      return t;
    Val r = P.reshape(t, {R, d.nkv, 1, S, hd}, hint);
    Val b = P.broadcast(r, {R, d.nkv, rep, S, hd}, hint);
    return P.reshape(b, {R, d.nh, S, hd}, hint);
  };
  a.kRep = repeat(a.k, "k_rep");
  a.vRep = repeat(a.v, "v_rep");
  Val sc = P.matmul(a.q, a.kRep, false, true, "scores");
  Val scs = P.scale(sc, 1.0 / std::sqrt((double)hd), "scores_scaled");
  Val msk = P.applyMask(scs, maskV, "scores_masked");
  a.probs = P.softmax(msk, 3, "probs");
  T(P, lname(k, "probs"), a.probs, true, 1);
  Val o = P.matmul(a.probs, a.vRep, false, false, "attn");
  Val ot = P.transpose(o, {0, 2, 1, 3}, "attn");
  a.o = P.reshape(ot, {R, S, d.nh * hd}, "attn_o");
  T(P, lname(k, "attn_o"), a.o, true, 2);
  Val ao = P.linear(a.o, w.wo, d.tp ? "attn_out_part" : "attn_out");
  if (d.tp)
    ao = P.allReduce(ao, "tp", "attn_out");
  a.h = P.add(x, ao, "h");
  T(P, lname(k, "h"), a.h, true, -1);
  a.hn = P.rmsnorm(a.h, w.ffnNorm, m.eps, "hn");
  T(P, lname(k, "hn"), a.hn, true, -1);
  a.a = P.linear(a.hn, w.w1, "ffn_a");
  T(P, lname(k, "ffn_a"), a.a, true, 2);
  a.b = P.linear(a.hn, w.w3, "ffn_b");
  T(P, lname(k, "ffn_b"), a.b, true, 2);
  a.sa = P.silu(a.a, "ffn_silu");
  a.g = P.mul(a.sa, a.b, "ffn_g");
  T(P, lname(k, "ffn_g"), a.g, true, 2);
  Val mo = P.linear(a.g, w.w2, d.tp ? "ffn_out_part" : "ffn_out");
  if (d.tp)
    mo = P.allReduce(mo, "tp", "ffn_out");
  a.out = P.add(a.h, mo, "out");
  T(P, lname(k, "out"), a.out, true, -1);
  return a;
}

Val Gen::layerBackward(Prog &P, const Dims &d, const LayerW &w, int64_t k,
                       const LayerAct &a, const Val &dout) {
  int64_t R = d.rows;
  P.comment("layer " + std::to_string(k) + " backward" +
            (inPlan ? ", micro-batch " + std::to_string(curMb) : ""));
  // MLP.
  auto [dg, dw2] = P.linearGrad(a.g, w.w2, dout, "d_ffn_g", "d_w2");
  T(P, lname(k, "d_ffn_g"), dg, true, 2);
  grad(P, lname(k, "w2"), dw2, 1);
  Val dsa = P.mul(dg, a.b, "d_ffn_silu");
  Val db = P.mul(dg, a.sa, "d_ffn_b");
  T(P, lname(k, "d_ffn_b"), db, true, 2);
  Val da = P.siluGrad(a.a, dsa, "d_ffn_a");
  T(P, lname(k, "d_ffn_a"), da, true, 2);
  auto [dhn1, dw1] = P.linearGrad(a.hn, w.w1, da, "d_hn_1", "d_w1");
  auto [dhn3, dw3] = P.linearGrad(a.hn, w.w3, db, "d_hn_3", "d_w3");
  grad(P, lname(k, "w1"), dw1, 0);
  grad(P, lname(k, "w3"), dw3, 0);
  Val dhn = P.add(dhn1, dhn3, d.tp ? "d_hn_part" : "d_hn");
  if (d.tp)
    dhn = P.allReduce(dhn, "tp", "d_hn");
  T(P, lname(k, "d_hn"), dhn, true, -1);
  auto [dhx, dffn] =
      P.rmsnormGrad(a.h, w.ffnNorm, dhn, m.eps, "d_h_norm", "d_ffn_norm");
  grad(P, lname(k, "ffn_norm"), dffn, -1);
  Val dh = P.add(dout, dhx, "d_h");
  T(P, lname(k, "d_h"), dh, true, -1);
  // Attention.
  auto [dof, dwo] = P.linearGrad(a.o, w.wo, dh, "d_attn_o", "d_wo");
  T(P, lname(k, "d_attn_o"), dof, true, 2);
  grad(P, lname(k, "wo"), dwo, 1);
  Val do4 = P.reshape(dof, {R, S, d.nh, hd}, "d_attn");
  Val dot = P.transpose(do4, {0, 2, 1, 3}, "d_attn");
  Val dpr = P.matmul(dot, a.vRep, false, true, "d_probs");
  T(P, lname(k, "d_probs"), dpr, true, 1);
  Val dvRep = P.matmul(a.probs, dot, true, false, "d_v_rep");
  Val dsm = P.softmaxGrad(a.probs, dpr, 3, "d_scores_masked");
  Val dss = P.applyMask(dsm, maskV, "d_scores_scaled", /*grad=*/true);
  Val ds = P.scale(dss, 1.0 / std::sqrt((double)hd), "d_scores");
  T(P, lname(k, "d_scores"), ds, true, 1);
  Val dq = P.matmul(ds, a.kRep, false, false, "d_q_rot");
  Val dkRep = P.matmul(ds, a.q, true, false, "d_k_rep");
  auto unrepeat = [&](const Val &t, StringRef hint) {
    if (rep == 1)
      return t;
    Val r = P.reshape(t, {R, d.nkv, rep, S, hd}, hint);
    return P.sum(r, 2, hint);
  };
  Val dv = unrepeat(dvRep, "d_v");
  T(P, lname(k, "d_v"), dv, true, 1);
  Val dk = unrepeat(dkRep, "d_k_rot");
  Val dqp = P.rotary(dq, cosV, sinV, "d_q", /*grad=*/true);
  T(P, lname(k, "d_q"), dqp, true, 1);
  Val dkp = P.rotary(dk, cosV, sinV, "d_k", /*grad=*/true);
  T(P, lname(k, "d_k"), dkp, true, 1);
  auto flat = [&](const Val &t, int64_t nHeads, StringRef hint) {
    Val tt = P.transpose(t, {0, 2, 1, 3}, hint);
    return P.reshape(tt, {R, S, nHeads * hd}, hint);
  };
  auto [dxq, dwq] =
      P.linearGrad(a.xn, w.wq, flat(dqp, d.nh, "d_q_flat"), "d_xn_q", "d_wq");
  auto [dxk, dwk] =
      P.linearGrad(a.xn, w.wk, flat(dkp, d.nkv, "d_k_flat"), "d_xn_k", "d_wk");
  auto [dxv, dwv] =
      P.linearGrad(a.xn, w.wv, flat(dv, d.nkv, "d_v_flat"), "d_xn_v", "d_wv");
  grad(P, lname(k, "wq"), dwq, 0);
  grad(P, lname(k, "wk"), dwk, 0);
  grad(P, lname(k, "wv"), dwv, 0);
  Val dxn = P.add(P.add(dxq, dxk, "d_xn_qk"), dxv, d.tp ? "d_xn_part" : "d_xn");
  if (d.tp)
    dxn = P.allReduce(dxn, "tp", "d_xn");
  T(P, lname(k, "d_xn"), dxn, true, -1);
  auto [dxx, dan] = P.rmsnormGrad(a.x, w.attnNorm, dxn, m.eps, "d_x_norm",
                                  "d_attention_norm");
  grad(P, lname(k, "attention_norm"), dan, -1);
  Val dx = P.add(dh, dxx, "d_x");
  T(P, lname(k, "d_x"), dx, true, -1);
  return dx;
}

Val Gen::embedForward(Prog &P, const Dims &d, const Val &tokens,
                      const Val &emb) {
  P.comment("embedding" +
            (inPlan ? ", micro-batch " + std::to_string(curMb) : ""));
  Val e = P.embedding(tokens, emb, d.tp, d.tp ? "embed_part" : "embed");
  if (d.tp)
    e = P.allReduce(e, "tp", "embed");
  T(P, "embed", e, true, -1);
  return e;
}

void Gen::embedBackward(Prog &P, const Dims &d, const Val &tokens,
                        const Val &dx) {
  P.comment("embedding backward" +
            (inPlan ? ", micro-batch " + std::to_string(curMb) : ""));
  Val g = P.embeddingGrad(tokens, dx, {d.V, m.H}, d.tp, "d_tok_embeddings");
  grad(P, "tok_embeddings", g, 0);
}

Gen::HeadAct Gen::headForward(Prog &P, const Dims &d, const Val &normW,
                              const Val &outW, const Val &x,
                              const Val &labels) {
  HeadAct h;
  int64_t R = d.rows;
  P.comment("final norm, LM head, loss" +
            (inPlan ? ", micro-batch " + std::to_string(curMb) : ""));
  h.x = x;
  h.fn = P.rmsnorm(x, normW, m.eps, "final_xn");
  T(P, "final.xn", h.fn, true, -1);
  Val lg = P.linear(h.fn, outW, d.tp ? "logits_part" : "logits");
  if (d.tp)
    lg = P.allGather(lg, 2, p.tp, "logits");
  h.logits = P.reshape(lg, {R * S, m.V}, "logits_flat");
  T(P, "logits", h.logits, true, -1);
  h.labels = P.reshape(labels, {R * S}, "labels_flat");
  h.loss = P.crossEntropy(h.logits, h.labels, "loss");
  return h;
}

Val Gen::headBackward(Prog &P, const Dims &d, const Val &normW,
                      const Val &outW, const HeadAct &h, const Val &seed) {
  int64_t R = d.rows;
  P.comment("loss, LM head, final norm backward" +
            (inPlan ? ", micro-batch " + std::to_string(curMb) : ""));
  Val dl = P.crossEntropyGrad(h.logits, h.labels, seed, "d_logits_flat");
  T(P, "d_logits", dl, true, -1);
  Val dlg = P.reshape(dl, {R, S, m.V}, "d_logits");
  if (d.tp)
    dlg = P.chunk(dlg, 2, p.tp, "d_logits_chunk");
  auto [dfn, dout] = P.linearGrad(h.fn, outW, dlg,
                                  d.tp ? "d_final_xn_part" : "d_final_xn",
                                  "d_output");
  grad(P, "output", dout, 0);
  if (d.tp)
    dfn = P.allReduce(dfn, "tp", "d_final_xn");
  T(P, "final.d_xn", dfn, true, -1);
  auto [dx, dn] = P.rmsnormGrad(h.x, normW, dfn, m.eps, "d_final_x", "d_norm");
  grad(P, "norm", dn, -1);
  T(P, "final.d_x", dx, true, -1);
  return dx;
}

std::string Gen::spec() {
  inPlan = false;
  Prog P("  ");
  int64_t N = p.dp * p.mb * B;
  Dims d{N, m.nh, m.nkv, m.I, m.V, false};
  Val tokens = P.input("tokens", {N, S}, "i64");
  Val labels = P.input("labels", {N, S}, "i64");
  Val dloss = P.input("dloss", {});
  cosV = P.input("rope_cos", {S, hd / 2});
  sinV = P.input("rope_sin", {S, hd / 2});
  Val emb = P.input("tok_embeddings", {m.V, m.H});
  std::vector<LayerW> ws;
  for (int64_t k = 0; k < L; ++k)
    ws.push_back(layerWeights(P, k, d));
  Val normW = P.input("norm", {m.H});
  Val outW = P.input("output", {m.V, m.H});
  maskV = P.causalMask(S, "mask");
  Val x = embedForward(P, d, tokens, emb);
  std::vector<LayerAct> acts;
  for (int64_t k = 0; k < L; ++k) {
    acts.push_back(layerForward(P, d, ws[k], k, x));
    x = acts.back().out;
  }
  HeadAct h = headForward(P, d, normW, outW, x, labels);
  P.output("loss", h.loss);
  Val dx = headBackward(P, d, normW, outW, h, dloss);
  for (int64_t k = L - 1; k >= 0; --k)
    dx = layerBackward(P, d, ws[k], k, acts[k], dx);
  embedBackward(P, d, tokens, dx);
  for (auto &[name, g] : specGrads)
    P.output(name, g);
  return "tv.spec @spec {\n" + P.text() + "}\n";
}

std::string Gen::stageProgram(int64_t s) {
  inPlan = true;
  curStage = s;
  curMb = -1;
  bufs.clear();
  bufSeen.clear();
  Prog P("    ");
  Dims d{B, m.nh / p.tp, m.nkv / p.tp, m.I / p.tp, m.V / p.tp, p.tp > 1};
  int64_t k0 = s * (L / p.pp), k1 = (s + 1) * (L / p.pp);
  bool first = s == 0, last = s == p.pp - 1;
  auto in = [&](const std::string &spec, const std::string &name, Shape sh,
                bool batch, int64_t tpDim, int64_t mb, StringRef et = "f32") {
    Val v = P.input(name, sh, et);
    recs.push_back({spec, name, sh, batch, tpDim, s, mb});
    return v;
  };
  cosV = in("rope_cos", "rope_cos", {S, hd / 2}, false, -1, -1);
  sinV = in("rope_sin", "rope_sin", {S, hd / 2}, false, -1, -1);
  Val emb, normW, outW, dloss;
  std::vector<Val> tokens(p.mb), labels(p.mb);
  if (first) {
    emb = in("tok_embeddings", "tok_embeddings", {d.V, m.H}, false, 0, -1);
    for (int64_t i = 0; i < p.mb; ++i)
      tokens[i] = in("tokens", "tokens.mb" + std::to_string(i), {B, S}, true,
                     -1, i, "i64");
  }
  std::map<int64_t, LayerW> ws;
  for (int64_t k = k0; k < k1; ++k)
    ws[k] = layerWeights(P, k, d);
  if (last) {
    normW = in("norm", "norm", {m.H}, false, -1, -1);
    outW = in("output", "output", {d.V, m.H}, false, 0, -1);
    dloss = in("dloss", "dloss", {}, false, -1, -1);
    for (int64_t i = 0; i < p.mb; ++i)
      labels[i] = in("labels", "labels.mb" + std::to_string(i), {B, S}, true,
                     -1, i, "i64");
  }
  maskV = P.causalMask(S, "mask");

  std::map<int64_t, std::map<int64_t, LayerAct>> acts;
  std::map<int64_t, HeadAct> heads;
  std::vector<Val> losses;
  auto forward = [&](int64_t i) {
    P.mb = curMb = i;
    Val x;
    if (first) {
      x = embedForward(P, d, tokens[i], emb);
    } else {
      x = P.recv({B, S, m.H}, -1, "x_recv");
      std::string n = lname(k0 - 1, "out");
      T(P, n, x, true, -1, n + ".recv");
    }
    for (int64_t k = k0; k < k1; ++k) {
      acts[i][k] = layerForward(P, d, ws[k], k, x);
      x = acts[i][k].out;
    }
    if (last) {
      heads[i] = headForward(P, d, normW, outW, x, labels[i]);
      losses.push_back(heads[i].loss);
    } else {
      P.send(x, 1);
    }
    P.mb = curMb = -1;
  };
  auto backward = [&](int64_t i) {
    P.mb = curMb = i;
    Val dx;
    if (last) {
      Val seed = dloss;
      if (p.dp * p.mb > 1)
        seed = P.scale(dloss, 1.0 / (double)(p.dp * p.mb), "dloss_mb");
      dx = headBackward(P, d, normW, outW, heads[i], seed);
    } else {
      dx = P.recv({B, S, m.H}, 1, "dout_recv");
      std::string n = lname(k1, "d_x");
      T(P, n, dx, true, -1, n + ".recv");
    }
    for (int64_t k = k1 - 1; k >= k0; --k)
      dx = layerBackward(P, d, ws[k], k, acts[i][k], dx);
    if (first)
      embedBackward(P, d, tokens[i], dx);
    else
      P.send(dx, -1);
    P.mb = curMb = -1;
  };
  // 1F1B: pp - s - 1 warm-up forwards, then one forward and one backward
  // alternately, then the remaining backwards.
  int64_t warm = std::min(p.pp - s - 1, p.mb);
  for (int64_t i = 0; i < warm; ++i)
    forward(i);
  for (int64_t i = 0; i < p.mb - warm; ++i) {
    forward(warm + i);
    backward(i);
  }
  for (int64_t i = p.mb - warm; i < p.mb; ++i)
    backward(i);

  P.comment("end of step: loss, data-parallel reduction of the gradients");
  if (last) {
    Val l = losses[0];
    for (size_t i = 1; i < losses.size(); ++i)
      l = P.add(l, losses[i], "loss_sum");
    if (p.dp * p.mb > 1)
      l = P.scale(l, 1.0 / (double)(p.dp * p.mb), "loss_local");
    if (p.dp > 1)
      l = P.allReduce(l, "dp", "loss_global");
    P.output("loss", l);
    recs.push_back({"loss", "loss", {}, false, -1, s, -1});
  }
  for (auto &[name, shape, tpDim] : bufs) {
    Val g = P.bufferRead(name, shape);
    if (p.dp > 1)
      g = P.allReduce(g, "dp", name);
    P.output(name, g);
    recs.push_back({name, name, shape, false, tpDim, s, -1});
  }

  std::string ranks;
  for (int64_t dd = 0; dd < p.dp; ++dd)
    for (int64_t t = 0; t < p.tp; ++t)
      ranks += (ranks.empty() ? "" : ", ") + std::to_string(rankOf(dd, s, t));
  return "  // pipeline stage " + std::to_string(s) + ": layers " +
         std::to_string(k0) + ".." + std::to_string(k1 - 1) +
         (first ? ", embedding" : "") + (last ? ", final norm, head, loss" : "") +
         "\n  tv.rank_program [" + ranks + "] {\n" + P.text() + "  }\n";
}

std::string Gen::lineages() {
  struct Lin {
    std::string spec, box;
    std::vector<std::string> groups;
  };
  std::vector<Lin> lins;
  llvm::StringMap<size_t> index;
  for (const Rec &r : recs) {
    for (int64_t dd = 0; dd < p.dp; ++dd) {
      for (int64_t t = 0; t < p.tp; ++t) {
        std::string box = "[";
        for (size_t i = 0; i < r.shape.size(); ++i) {
          int64_t n = r.shape[i], lo = 0;
          if (r.batch && i == 0)
            lo = (dd * p.mb + r.mb) * n;
          else if ((int64_t)i == r.tpDim)
            lo = t * n;
          box += (i ? ", " : "") + std::to_string(lo) + ":" +
                 std::to_string(lo + n);
        }
        box += "]";
        std::string key = r.spec + "\x01" + box;
        auto it = index.find(key);
        if (it == index.end()) {
          index[key] = lins.size();
          lins.push_back({r.spec, box, {}});
          it = index.find(key);
        }
        lins[it->second].groups.push_back(
            "[\"" + r.plan + "\":" + std::to_string(rankOf(dd, r.stage, t)) +
            "]");
      }
    }
  }
  std::string out;
  for (const Lin &l : lins) {
    out += "tv.lineage #tv.lineage<\"" + l.spec + "\"" + l.box + " = ";
    for (size_t i = 0; i < l.groups.size(); ++i)
      out += (i ? " | " : "") + l.groups[i];
    out += ">\n";
  }
  return out;
}

std::string Gen::run() {
  std::string out;
  out += "// Llama3 training step generated by tv-translate "
         "--import-model-config.\n";
  out += "// hidden " + std::to_string(m.H) + ", layers " + std::to_string(L) +
         ", heads " + std::to_string(m.nh) + ", kv heads " +
         std::to_string(m.nkv) + ", intermediate " + std::to_string(m.I) +
         ", vocab " + std::to_string(m.V) + ", rope_theta " + flt(m.theta) +
         " (cos/sin are inputs)\n";
  out += "// seq " + std::to_string(S) + ", micro-batch size " +
         std::to_string(B) + "; dp=" + std::to_string(p.dp) +
         " tp=" + std::to_string(p.tp) + " pp=" + std::to_string(p.pp) +
         " mb=" + std::to_string(p.mb) + " (1F1B)\n";
  out += "tv.mesh @mesh axes [\"dp\", \"pp\", \"tp\"] sizes [" +
         std::to_string(p.dp) + ", " + std::to_string(p.pp) + ", " +
         std::to_string(p.tp) + "]\n";
  out += spec();
  out += "tv.plan @plan mesh @mesh micro_batches " + std::to_string(p.mb) +
         " {\n";
  for (int64_t s = 0; s < p.pp; ++s)
    out += stageProgram(s);
  out += "}\n";
  out += lineages();
  return out;
}

//===----------------------------------------------------------------------===//
// Parsing the configuration
//===----------------------------------------------------------------------===//

LogicalResult parseModel(const json::Object &o, ModelCfg &c,
                         std::string &err) {
  auto getInt = [&](StringRef key, int64_t &dst, bool required) -> bool {
    const json::Value *v = o.get(key);
    if (!v) {
      if (required)
        err = "missing key '" + key.str() + "'";
      return !required;
    }
    std::optional<int64_t> i = v->getAsInteger();
    if (!i || *i <= 0) {
      err = "key '" + key.str() + "' must be a positive integer";
      return false;
    }
    dst = *i;
    return true;
  };
  auto getNum = [&](StringRef key, double &dst) -> bool {
    const json::Value *v = o.get(key);
    if (!v)
      return true;
    std::optional<double> d = v->getAsNumber();
    if (!d || *d < 0) {
      err = "key '" + key.str() + "' must be a non-negative number";
      return false;
    }
    dst = *d;
    return true;
  };
  if (const json::Value *t = o.get("model_type")) {
    std::optional<StringRef> s = t->getAsString();
    if (!s || *s != "llama") {
      err = "unsupported model_type" +
            (s ? " '" + s->str() + "'" : std::string()) +
            " (only \"llama\" is supported)";
      return failure();
    }
  }
  if (std::optional<bool> tie = o.getBoolean("tie_word_embeddings");
      tie && *tie) {
    err = "tie_word_embeddings = true is not supported";
    return failure();
  }
  if (o.get("dim")) {
    // Meta's params.json.
    int64_t multipleOf = 256;
    double mult = 1.0;
    if (!getInt("dim", c.H, true) || !getInt("n_layers", c.L, true) ||
        !getInt("n_heads", c.nh, true) || !getInt("vocab_size", c.V, true) ||
        !getInt("multiple_of", multipleOf, false) ||
        !getNum("ffn_dim_multiplier", mult) || !getNum("norm_eps", c.eps) ||
        !getNum("rope_theta", c.theta))
      return failure();
    c.nkv = c.nh;
    if (!getInt("n_kv_heads", c.nkv, false))
      return failure();
    int64_t hidden = 2 * (4 * c.H) / 3;
    hidden = (int64_t)(mult * (double)hidden);
    c.I = multipleOf * ((hidden + multipleOf - 1) / multipleOf);
    return success();
  }
  if (!getInt("hidden_size", c.H, true) ||
      !getInt("num_hidden_layers", c.L, true) ||
      !getInt("num_attention_heads", c.nh, true) ||
      !getInt("intermediate_size", c.I, true) ||
      !getInt("vocab_size", c.V, true) || !getNum("rms_norm_eps", c.eps) ||
      !getNum("rope_theta", c.theta))
    return failure();
  c.nkv = c.nh;
  if (!getInt("num_key_value_heads", c.nkv, false))
    return failure();
  return success();
}

LogicalResult parseParallel(StringRef text, ParCfg &p, std::string &err) {
  SmallVector<StringRef> items;
  std::string norm = text.str();
  for (char &c : norm)
    if (c == ',' || c == '\t')
      c = ' ';
  StringRef(norm).split(items, ' ', -1, /*KeepEmpty=*/false);
  std::set<std::string> seen;
  for (StringRef it : items) {
    auto [key, val] = it.split('=');
    int64_t v = 0;
    if (!it.contains('=') || val.getAsInteger(10, v) || v <= 0) {
      err = "bad --parallel item '" + it.str() +
            "': expected AXIS=N with N a positive integer";
      return failure();
    }
    if (!seen.insert(key.str()).second) {
      err = "--parallel gives '" + key.str() + "' twice";
      return failure();
    }
    if (key == "dp")
      p.dp = v;
    else if (key == "tp")
      p.tp = v;
    else if (key == "pp")
      p.pp = v;
    else if (key == "mb")
      p.mb = v;
    else {
      err = "unsupported --parallel axis '" + key.str() +
            "' (supported: dp, tp, pp, mb)";
      return failure();
    }
  }
  return success();
}

} // namespace

namespace mlir::tv {
OwningOpRef<Operation *> importModelConfig(llvm::SourceMgr &sourceMgr,
                                          MLIRContext *ctx) {
  ctx->loadDialect<TVDialect>();
  std::optional<JsonInput> in = readJsonObject(sourceMgr, ctx, "model config");
  if (!in)
    return {};
  Location loc = in->loc;
  auto fail = [&](const Twine &msg) -> OwningOpRef<Operation *> {
    emitError(loc) << "model config: " << msg;
    return {};
  };
  const json::Object *root = &in->root();
  ModelCfg mc;
  std::string err;
  if (failed(parseModel(*root, mc, err)))
    return fail(err);
  ParCfg pc;
  if (failed(parseParallel(clParallel, pc, err)))
    return fail(err);
  int64_t layers = clLayers < 0 ? mc.L : (int64_t)clLayers;
  int64_t seq = clSeq, mbs = clMicroBatchSize;
  auto check = [&](bool ok, const Twine &msg) {
    if (!ok && err.empty())
      err = msg.str();
  };
  check(layers >= 1, "--layers must be at least 1");
  check(layers <= mc.L, "--layers " + Twine(layers) + " exceeds the model's " +
                            Twine(mc.L) + " layers");
  check(seq >= 1, "--seq must be at least 1");
  check(mbs >= 1, "--micro-batch-size must be at least 1");
  check(mc.H % mc.nh == 0, "hidden_size " + Twine(mc.H) +
                               " is not divisible by num_attention_heads " +
                               Twine(mc.nh));
  check(mc.H % mc.nh != 0 || (mc.H / mc.nh) % 2 == 0,
        "head dimension " + Twine(mc.H / mc.nh) +
            " is odd (rotary embeddings rotate pairs)");
  check(mc.nh % mc.nkv == 0, "num_attention_heads " + Twine(mc.nh) +
                                 " is not divisible by num_key_value_heads " +
                                 Twine(mc.nkv));
  check(mc.nh % pc.tp == 0, "tp=" + Twine(pc.tp) +
                                " does not divide num_attention_heads " +
                                Twine(mc.nh));
  check(mc.nkv % pc.tp == 0, "tp=" + Twine(pc.tp) +
                                 " does not divide num_key_value_heads " +
                                 Twine(mc.nkv));
  check(mc.I % pc.tp == 0, "tp=" + Twine(pc.tp) +
                               " does not divide intermediate_size " +
                               Twine(mc.I));
  check(mc.V % pc.tp == 0,
        "tp=" + Twine(pc.tp) + " does not divide vocab_size " + Twine(mc.V));
  check(layers % pc.pp == 0, "pp=" + Twine(pc.pp) +
                                 " does not divide the number of layers " +
                                 Twine(layers));
  if (!err.empty())
    return fail(err);

  Gen gen(mc, pc, layers, seq, mbs);
  std::string text = gen.run();
  ParserConfig config(ctx);
  OwningOpRef<ModuleOp> module =
      parseSourceString<ModuleOp>(text, config, "model-config.mlir");
  if (!module) {
    llvm::errs() << text;
    return fail("internal error: the generated module does not parse");
  }
  if (failed(verify(*module)) || failed(checkLineages(*module)))
    return fail("internal error: the generated module is not valid");
  return OwningOpRef<Operation *>(module.release());
}
} // namespace mlir::tv

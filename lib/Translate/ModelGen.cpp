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

static llvm::cl::opt<bool> clTracedNorm(
    "traced-norm",
    llvm::cl::desc("--import-model-config: emit RMSNorm forward as the ops "
                   "PyTorch traces for Hugging Face's LlamaRMSNorm (pow, mean, "
                   "add, rsqrt, mul), as nnScaler plans have it"),
    llvm::cl::init(false));
static llvm::cl::opt<bool> clSp(
    "sp",
    llvm::cl::desc("--import-model-config: Megatron-LM sequence parallelism "
                   "(the residual stream sharded along the sequence over tp)"),
    llvm::cl::init(false));
static llvm::cl::opt<int64_t> clEp(
    "ep",
    llvm::cl::desc("--import-model-config: expert-parallel size (routed "
                   "experts sharded over ep ranks carved from dp)"),
    llvm::cl::init(0));
static llvm::cl::opt<int64_t> clZero(
    "zero",
    llvm::cl::desc("--import-model-config: ZeRO stage 1 or 2 (sharded "
                   "optimizer step; stage 2 also shards the gradients)"),
    llvm::cl::init(0));

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
  std::pair<Val, Val> mulGrad(const Val &a, const Val &b, const Val &g,
                              StringRef ha, StringRef hb) {
    Val da = fresh(ha, a.s), db = fresh(hb, b.s);
    line(da.ref() + ", " + db.ref() + " = tv.mul_grad " + a.ref() + ", " +
         b.ref() + ", " + g.ref() + attrs() + " : " + a.ty());
    return {da, db};
  }
  Val unary(StringRef op, const Val &x, StringRef hint) {
    return emit(hint, x.s,
                "tv." + op.str() + " " + x.ref() + attrs() + " : " + x.ty());
  }
  Val scalarOp(StringRef op, const Val &x, double c, StringRef hint) {
    return emit(hint, x.s,
                "tv." + op.str() + " " + x.ref() + ", " + flt(c) + attrs() +
                    " : " + x.ty());
  }
  Val meanKeep(const Val &x, int64_t dim, StringRef hint) {
    Shape s = x.s;
    s[dim] = 1;
    return emit(hint, s,
                "tv.mean " + x.ref() + " dims [" + std::to_string(dim) + "]" +
                    attrs({"keepdim"}) + " : " + x.ty() + " -> " + tyOf(s));
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
  static std::string axesAttr(ArrayRef<std::string> axes) {
    std::string r = "axes = [";
    for (size_t i = 0; i < axes.size(); ++i)
      r += (i ? ", \"" : "\"") + axes[i] + "\"";
    return r + "]";
  }
  Val allReduce(const Val &x, ArrayRef<std::string> axes, StringRef hint) {
    return emit(hint, x.s,
                "tv.all_reduce sum " + x.ref() + attrs({axesAttr(axes)}) +
                    " : " + x.ty() + " -> " + x.ty());
  }
  Val allGather(const Val &x, int64_t dim, int64_t n,
                ArrayRef<std::string> axes, StringRef hint) {
    Shape s = x.s;
    s[dim] *= n;
    return emit(hint, s,
                "tv.all_gather " + x.ref() + " dim " + std::to_string(dim) +
                    attrs({axesAttr(axes)}) + " : " + x.ty() + " -> " +
                    tyOf(s));
  }
  Val chunk(const Val &x, int64_t dim, int64_t n, ArrayRef<std::string> axes,
            StringRef hint) {
    Shape s = x.s;
    s[dim] /= n;
    return emit(hint, s,
                "tv.chunk " + x.ref() + " dim " + std::to_string(dim) +
                    attrs({axesAttr(axes)}) + " : " + x.ty() + " -> " +
                    tyOf(s, x.et),
                x.et);
  }
  Val reduceScatter(const Val &x, int64_t dim, int64_t n,
                    ArrayRef<std::string> axes, StringRef hint) {
    Shape s = x.s;
    s[dim] /= n;
    return emit(hint, s,
                "tv.reduce_scatter " + x.ref() + " dim " +
                    std::to_string(dim) + attrs({axesAttr(axes)}) + " : " +
                    x.ty() + " -> " + tyOf(s));
  }
  Val allToAll(const Val &x, int64_t split, int64_t concat, int64_t n,
               ArrayRef<std::string> axes, StringRef hint) {
    Shape s = x.s;
    s[split] /= n;
    s[concat] *= n;
    return emit(hint, s,
                "tv.all_to_all " + x.ref() + " split " + std::to_string(split) +
                    " concat " + std::to_string(concat) +
                    attrs({axesAttr(axes)}) + " : " + x.ty() + " -> " +
                    tyOf(s));
  }
  Val slice(const Val &x, Shape start, Shape s, StringRef hint) {
    return emit(hint, s,
                "tv.slice " + x.ref() + " start " + ints(start) + attrs() +
                    " : " + x.ty() + " -> " + tyOf(s, x.et),
                x.et);
  }
  Val concat(const Val &a, const Val &b, int64_t dim, StringRef hint) {
    Shape s = a.s;
    s[dim] += b.s[dim];
    return emit(hint, s,
                "tv.concat " + a.ref() + ", " + b.ref() + " dim " +
                    std::to_string(dim) + attrs() + " : (" + a.ty() + ", " +
                    b.ty() + ") -> " + tyOf(s));
  }
  Val topk(const Val &x, int64_t k, StringRef hint) {
    return emit(hint, x.s,
                "tv.topk_gate " + x.ref() + " k " + std::to_string(k) +
                    attrs() + " : " + x.ty());
  }
  Val topkGrad(const Val &x, const Val &g, int64_t k, StringRef hint) {
    return emit(hint, x.s,
                "tv.topk_gate_grad " + x.ref() + ", " + g.ref() + " k " +
                    std::to_string(k) + attrs() + " : " + x.ty());
  }
  Val dispatch(const Val &x, const Val &g, StringRef hint) {
    Shape s{g.s[1], x.s[0], x.s[1]};
    return emit(hint, s,
                "tv.dispatch " + x.ref() + ", " + g.ref() + attrs() + " : " +
                    x.ty() + ", " + g.ty() + " -> " + tyOf(s));
  }
  Val dispatchGrad(const Val &dy, const Val &g, StringRef hint) {
    Shape s{dy.s[1], dy.s[2]};
    return emit(hint, s,
                "tv.dispatch_grad " + dy.ref() + ", " + g.ref() + attrs() +
                    " : " + dy.ty() + ", " + g.ty() + " -> " + tyOf(s));
  }
  Val combine(const Val &y, const Val &g, StringRef hint) {
    Shape s{y.s[1], y.s[2]};
    return emit(hint, s,
                "tv.combine " + y.ref() + ", " + g.ref() + attrs() + " : " +
                    y.ty() + ", " + g.ty() + " -> " + tyOf(s));
  }
  std::pair<Val, Val> combineGrad(const Val &y, const Val &g, const Val &dout,
                                  StringRef hy, StringRef hg) {
    Val dy = fresh(hy, y.s), dg = fresh(hg, g.s);
    line(dy.ref() + ", " + dg.ref() + " = tv.combine_grad " + y.ref() + ", " +
         g.ref() + ", " + dout.ref() + attrs() + " : " + y.ty() + ", " +
         g.ty() + ", " + dout.ty());
    return {dy, dg};
  }
  Val sgd(const Val &w, const Val &g, double lr, StringRef hint) {
    return emit(hint, w.s,
                "tv.sgd " + w.ref() + ", " + g.ref() + " lr " + flt(lr) +
                    attrs() + " : " + w.ty());
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
  /// "llama" or "deepseek_v3" (MLA attention, MoE feed-forward).
  bool deepseek = false;
  // DeepSeek-V3: MLA and MoE.
  int64_t qLora = 0, kvLora = 0, dRope = 0, dNope = 0, dV = 0;
  int64_t nExperts = 0, topK = 0, nShared = 0, moeI = 0, firstDense = 0;
};

struct ParCfg {
  int64_t dp = 1, tp = 1, pp = 1, mb = 1, ep = 1;
  bool sp = false;
  int64_t zero = 0;
};

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
  bool zExpert = false;
};

//===----------------------------------------------------------------------===//
// The generator
//===----------------------------------------------------------------------===//

/// Weights and activations of one layer as seen by one program, by name.
using Vals = std::map<std::string, Val>;

class Gen {
public:
  Gen(const ModelCfg &m, const ParCfg &p, int64_t layers, int64_t seq,
      int64_t mbs, bool tracedNorm)
      : m(m), p(p), L(layers), S(seq), B(mbs), tracedNorm(tracedNorm) {
    hd = m.H / m.nh;
    rep = m.nh / m.nkv;
  }
  std::string run();

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
  bool isMoE(int64_t k) const { return m.deepseek && k >= m.firstDense; }
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
  /// shape [rows, S, H], in the residual layout: full without sequence
  /// parallelism, the rank's sequence chunk with it.
  Val toResidual(Prog &P, const Dims &d, const Val *partial, const Val *full,
                 StringRef hint);
  /// The residual-layout tensor gathered to the full sequence.
  Val gatherSeq(Prog &P, const Dims &d, const Val &x, StringRef hint);
  void grad(Prog &P, const std::string &name, const Val &g, int64_t tpDim,
            bool seqPartial = false, int64_t epDim = -1);
  Val embedForward(Prog &P, const Dims &d, const Val &tokens, const Val &emb);
  void embedBackward(Prog &P, const Dims &d, const Val &tokens,
                     const Val &dx);
  Vals headForward(Prog &P, const Dims &d, const Val &normW, const Val &outW,
                   const Val &x, const Val &labels);
  Val headBackward(Prog &P, const Dims &d, const Val &normW, const Val &outW,
                   Vals &h, const Val &seed);

  std::string spec();
  std::string stageProgram(int64_t stage);
  void endOfStep(Prog &P);
  std::string lineages();
  std::string meshText() const;

  int64_t rankOf(int64_t d, int64_t s, int64_t t) const {
    return (d * p.pp + s) * p.tp + t;
  }
  std::string lname(int64_t k, StringRef n) const {
    return "l" + std::to_string(k) + "." + n.str();
  }
  /// The data-parallel group of dense parameters, and of expert parameters
  /// (with expert parallelism, the ranks holding the same experts).
  std::vector<std::string> dpAxes() const {
    if (p.ep > 1)
      return {"edp", "ep"};
    return {"dp"};
  }
  std::vector<std::string> expertDpAxes() const {
    if (p.ep > 1)
      return {"edp"};
    return {"dp"};
  }
  std::pair<int64_t, int64_t> layerRange(int64_t s) const {
    return {s * L / p.pp, (s + 1) * L / p.pp};
  }

  ModelCfg m;
  ParCfg p;
  int64_t L, S, B, hd, rep;
  bool tracedNorm;
  static constexpr double kLr = 1e-3;

  /// RMSNorm forward: one op, or (traced) the ops PyTorch records for
  /// Hugging Face's LlamaRMSNorm: x * rsqrt(mean(x^2) + eps) * w.
  Val norm(Prog &P, const Val &x, const Val &w, StringRef hint) {
    if (!tracedNorm)
      return P.rmsnorm(x, w, m.eps, hint);
    int64_t last = x.s.size() - 1;
    Val sq = P.scalarOp("pow", x, 2.0, (hint + "_sq").str());
    Val var = P.meanKeep(sq, last, (hint + "_var").str());
    Val ve = P.scalarOp("add_scalar", var, m.eps, (hint + "_var_eps").str());
    Val r = P.unary("rsqrt", ve, (hint + "_rstd").str());
    Val xr = P.mul(x, r, (hint + "_unit").str());
    return P.mul(xr, w, hint);
  }

  // State of the program being generated.
  bool inPlan = false;
  int64_t curStage = 0, curMb = 0;
  Val cosV, sinV, maskV;
  std::vector<Rec> recs;
  /// Weight inputs of the program being generated, by name.
  std::map<std::string, Val> weightsIn;
  struct Buf {
    std::string name;
    Shape shape;
    int64_t tpDim, epDim;
    bool seqPartial;
  };
  // Spec: weight gradient outputs in order. Plan: accumulated buffers of the
  // current stage in order.
  std::vector<std::pair<std::string, Val>> specGrads;
  std::vector<Buf> bufs;
  std::set<std::string> bufSeen;
};

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
  recs.push_back(r);
}

Val Gen::weight(Prog &P, const std::string &name, Shape s, int64_t tpDim,
                int64_t epDim) {
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
               bool seqPartial, int64_t epDim) {
  std::string gn = name + ".grad";
  if (!inPlan) {
    specGrads.push_back({name, g});
    return;
  }
  P.accumulate(gn, g);
  if (bufSeen.insert(gn).second)
    bufs.push_back({name, g.s, tpDim, epDim, seqPartial && p.sp && p.tp > 1});
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
    in("wo", {m.H, d.nh * hd}, 1);
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
                    const Val *full, StringRef hint) {
  std::optional<Val> r;
  if (partial) {
    if (!d.tp)
      r = *partial;
    else if (d.sp)
      r = P.reduceScatter(*partial, 1, p.tp, {"tp"}, hint);
    else
      r = P.allReduce(*partial, {"tp"}, hint);
  }
  if (full) {
    Val f = *full;
    if (d.sp)
      f = P.chunk(f, 1, p.tp, {"tp"}, hint);
    r = r ? P.add(*r, f, hint) : f;
  }
  return *r;
}

Val Gen::gatherSeq(Prog &P, const Dims &d, const Val &x, StringRef hint) {
  if (!d.sp)
    return x;
  return P.allGather(x, 1, p.tp, {"tp"}, hint);
}

// With sequence parallelism every tensor of the residual stream (layer
// inputs and outputs, norm outputs, their gradients) is sharded along the
// sequence (dimension 1) over tp: their lineages use tpDim = 1.
#define RES_TP (d.sp ? 1 : -1)

Vals Gen::layerForward(Prog &P, const Dims &d, const Vals &w, int64_t k,
                       const Val &x) {
  Vals a;
  a["x"] = x;
  P.comment("layer " + std::to_string(k) + " forward" +
            (inPlan ? ", micro-batch " + std::to_string(curMb) : ""));
  a["xn"] = norm(P, x, w.at("attention_norm"), "xn");
  T(P, lname(k, "xn"), a["xn"], 0, RES_TP);
  Val xg = gatherSeq(P, d, a["xn"], "xn_full");
  a["xg"] = xg;
  attnForward(P, d, w, k, a, xg);
  Val ao = toResidual(P, d, &a["ao_part"], nullptr, "attn_out");
  a["h"] = P.add(x, ao, "h");
  T(P, lname(k, "h"), a["h"], 0, RES_TP);
  a["hn"] = norm(P, a["h"], w.at("ffn_norm"), "hn");
  T(P, lname(k, "hn"), a["hn"], 0, RES_TP);
  Val hg = gatherSeq(P, d, a["hn"], "hn_full");
  a["hg"] = hg;
  ffnForward(P, d, w, k, a, hg);
  Val mo = toResidual(P, d, a.count("fo_part") ? &a["fo_part"] : nullptr,
                      a.count("fo_full") ? &a["fo_full"] : nullptr, "ffn_out");
  a["out"] = P.add(a["h"], mo, "out");
  T(P, lname(k, "out"), a["out"], 0, RES_TP);
  return a;
}

void Gen::attnForward(Prog &P, const Dims &d, const Vals &w, int64_t k,
                      Vals &a, const Val &xg) {
  int64_t R = d.rows;
  if (!m.deepseek) {
    // q, k, v: [R, S, heads * hd] -> [R, S, heads, hd] -> [R, heads, S, hd].
    auto heads = [&](const Val &wt, int64_t nHeads, StringRef hint) {
      Val l = P.linear(xg, wt, hint);
      Val r = P.reshape(l, {R, S, nHeads, hd}, hint);
      return P.transpose(r, {0, 2, 1, 3}, hint);
    };
    a["q"] = P.rotary(heads(w.at("wq"), d.nh, "q"), cosV, sinV, "q_rot");
    T(P, lname(k, "q"), a["q"], 0, 1);
    a["k"] = P.rotary(heads(w.at("wk"), d.nkv, "k"), cosV, sinV, "k_rot");
    T(P, lname(k, "k"), a["k"], 0, 1);
    a["v"] = heads(w.at("wv"), d.nkv, "v");
    T(P, lname(k, "v"), a["v"], 0, 1);
    // Grouped-query attention: query head j reads key/value head j / rep.
    auto repeat = [&](const Val &t, StringRef hint) {
      if (rep == 1)
        return t;
      Val r = P.reshape(t, {R, d.nkv, 1, S, hd}, hint);
      Val b = P.broadcast(r, {R, d.nkv, rep, S, hd}, hint);
      return P.reshape(b, {R, d.nh, S, hd}, hint);
    };
    a["kRep"] = repeat(a["k"], "k_rep");
    a["vRep"] = repeat(a["v"], "v_rep");
  } else {
    // MLA. Queries: [R, S, nh * (nope + rope)]; the rope part is rotated.
    int64_t dq = m.dNope + m.dRope;
    Val q;
    if (m.qLora) {
      a["cq"] = P.linear(xg, w.at("q_a_proj"), "q_a");
      a["cqn"] = norm(P, a["cq"], w.at("q_a_layernorm"), "q_a_norm");
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
    T(P, lname(k, "q"), a["q"], 0, 1);
    // Joint key/value compression and the shared rotary key.
    a["ckv"] = P.linear(xg, w.at("kv_a_proj_with_mqa"), "kv_a");
    a["c"] = P.slice(a["ckv"], {0, 0, 0}, {R, S, m.kvLora}, "kv_c");
    Val kPe = P.slice(a["ckv"], {0, 0, m.kvLora}, {R, S, m.dRope}, "k_pe");
    Val kPe4 = P.transpose(P.reshape(kPe, {R, S, 1, m.dRope}, "k_pe"),
                           {0, 2, 1, 3}, "k_pe");
    Val kRot = P.rotary(kPe4, cosV, sinV, "k_pe_rot");
    T(P, lname(k, "k_pe"), kRot, 0, -1);
    a["cn"] = norm(P, a["c"], w.at("kv_a_layernorm"), "kv_a_norm");
    T(P, lname(k, "kv_a"), a["cn"], 0, -1);
    Val kv = P.linear(a["cn"], w.at("kv_b_proj"), "kv");
    Val kv4 = P.transpose(
        P.reshape(kv, {R, S, d.nh, m.dNope + m.dV}, "kv"), {0, 2, 1, 3}, "kv");
    Val kNope = P.slice(kv4, {0, 0, 0, 0}, {R, d.nh, S, m.dNope}, "k_nope");
    a["v"] = P.slice(kv4, {0, 0, 0, m.dNope}, {R, d.nh, S, m.dV}, "v");
    T(P, lname(k, "v"), a["v"], 0, 1);
    Val kB = P.broadcast(kRot, {R, d.nh, S, m.dRope}, "k_pe_heads");
    a["k"] = P.concat(kNope, kB, 3, "k_full");
    T(P, lname(k, "k"), a["k"], 0, 1);
    a["kRep"] = a["k"];
    a["vRep"] = a["v"];
  }
  int64_t dqk = m.deepseek ? m.dNope + m.dRope : hd;
  int64_t dv = m.deepseek ? m.dV : hd;
  Val sc = P.matmul(a["q"], a["kRep"], false, true, "scores");
  Val scs = P.scale(sc, 1.0 / std::sqrt((double)dqk), "scores_scaled");
  Val msk = P.applyMask(scs, maskV, "scores_masked");
  a["probs"] = P.softmax(msk, 3, "probs");
  T(P, lname(k, "probs"), a["probs"], 0, 1);
  Val o = P.matmul(a["probs"], a["vRep"], false, false, "attn");
  Val ot = P.transpose(o, {0, 2, 1, 3}, "attn");
  a["o"] = P.reshape(ot, {R, S, d.nh * dv}, "attn_o");
  T(P, lname(k, "attn_o"), a["o"], 0, 2);
  a["ao_part"] =
      P.linear(a["o"], w.at("wo"), d.tp ? "attn_out_part" : "attn_out");
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
    a[n + "sa"] = P.silu(a[n + "a"], n + "ffn_silu");
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
  int64_t R = d.rows, Tn = R * S;
  a["hf"] = P.reshape(hg, {Tn, m.H}, "moe_in");
  a["logits"] = P.linear(a["hf"], w.at("gate"), "router_logits");
  T(P, lname(k, "router_logits"), a["logits"], 0, -1);
  a["gates"] = P.topk(a["logits"], m.topK, "gates");
  T(P, lname(k, "gates"), a["gates"], 0, -1);
  Val disp = P.dispatch(a["hf"], a["gates"], "dispatched");
  T(P, lname(k, "dispatched"), disp, 1, -1);
  Val xe = disp;
  if (p.ep > 1 && inPlan)
    xe = P.allToAll(disp, 0, 1, p.ep, {"ep"}, "expert_in");
  a["xe"] = xe;
  a["ea"] = P.matmul(xe, w.at("experts.w1"), false, true, "expert_a");
  a["eb"] = P.matmul(xe, w.at("experts.w3"), false, true, "expert_b");
  a["esa"] = P.silu(a["ea"], "expert_silu");
  a["eg"] = P.mul(a["esa"], a["eb"], "expert_g");
  Val y = P.matmul(a["eg"], w.at("experts.w2"), false, true,
                   d.tp ? "expert_out_part" : "expert_out");
  if (d.tp)
    y = P.allReduce(y, {"tp"}, "expert_out");
  if (p.ep > 1 && inPlan)
    y = P.allToAll(y, 1, 0, p.ep, {"ep"}, "expert_out_back");
  a["ey"] = y;
  T(P, lname(k, "expert_out"), y, 1, -1);
  Val r = P.combine(y, a["gates"], "routed");
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
                   StringRef hx, StringRef hw, StringRef outName) {
    auto [part, full] = backwardFn(gatherSeq(P, d, dIn, gatherHint));
    Val dn = toResidual(P, d, part.n.empty() ? nullptr : &part,
                        full.n.empty() ? nullptr : &full, dnName);
    T(P, lname(k, dnName), dn, 0, RES_TP);
    auto [dxn, dwn] =
        P.rmsnormGrad(a[normIn.str()], w.at(normW.str()), dn, m.eps, hx, hw);
    grad(P, lname(k, normW), dwn, -1, /*seqPartial=*/true);
    Val r = P.add(dIn, dxn, outName);
    T(P, lname(k, outName), r, 0, RES_TP);
    return r;
  };
  Val dh = block(
      dout, "d_ffn_out",
      [&](const Val &g) { return ffnBackward(P, d, w, k, a, g); }, "d_hn",
      "h", "ffn_norm", "d_h_norm", "d_ffn_norm", "d_h");
  Val dx = block(
      dh, "d_attn_out",
      [&](const Val &g) { return attnBackward(P, d, w, k, a, g); }, "d_xn",
      "x", "attention_norm", "d_x_norm", "d_attention_norm", "d_x");
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
    Val da = P.siluGrad(a[n + "a"], dsa, "d_" + n + "ffn_a");
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
  int64_t R = d.rows, Tn = R * S;
  Val dr = P.reshape(dfo, {Tn, m.H}, "d_routed");
  auto [dy, dgates] =
      P.combineGrad(a["ey"], a["gates"], dr, "d_expert_out", "d_gates");
  T(P, lname(k, "d_expert_out"), dy, 1, -1);
  T(P, lname(k, "d_gates"), dgates, 0, -1);
  Val dyl = dy;
  if (p.ep > 1 && inPlan)
    dyl = P.allToAll(dy, 0, 1, p.ep, {"ep"}, "d_expert_out_local");
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
    dxe = P.allReduce(dxe, {"tp"}, "d_expert_in");
  if (p.ep > 1 && inPlan)
    dxe = P.allToAll(dxe, 1, 0, p.ep, {"ep"}, "d_dispatched");
  T(P, lname(k, "d_dispatched"), dxe, 1, -1);
  Val dhr = P.dispatchGrad(dxe, a["gates"], "d_moe_in_routed");
  Val dlog = P.topkGrad(a["logits"], dgates, m.topK, "d_router_logits");
  T(P, lname(k, "d_router_logits"), dlog, 0, -1);
  auto [dhg, dwg] =
      P.linearGrad(a["hf"], w.at("gate"), dlog, "d_moe_in_gate", "d_gate");
  grad(P, lname(k, "gate"), dwg, -1);
  Val full = P.reshape(P.add(dhr, dhg, "d_moe_in"), {R, S, m.H}, "d_moe_in");
  Val part;
  if (m.nShared)
    part = swiglu("shared_", "shared.");
  return {part, full};
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
  Val dot = P.transpose(do4, {0, 2, 1, 3}, "d_attn");
  Val dpr = P.matmul(dot, a["vRep"], false, true, "d_probs");
  T(P, lname(k, "d_probs"), dpr, 0, 1);
  Val dvRep = P.matmul(a["probs"], dot, true, false, "d_v_rep");
  Val dsm = P.softmaxGrad(a["probs"], dpr, 3, "d_scores_masked");
  Val dss = P.applyMask(dsm, maskV, "d_scores_scaled", /*grad=*/true);
  Val ds = P.scale(dss, 1.0 / std::sqrt((double)dqk), "d_scores");
  T(P, lname(k, "d_scores"), ds, 0, 1);
  Val dq = P.matmul(ds, a["kRep"], false, false, "d_q_rot");
  Val dkRep = P.matmul(ds, a["q"], true, false, "d_k_rep");
  const Val &xg = a["xg"];
  if (!m.deepseek) {
    auto unrepeat = [&](const Val &t, StringRef hint) {
      if (rep == 1)
        return t;
      Val r = P.reshape(t, {R, d.nkv, rep, S, hd}, hint);
      return P.sum(r, 2, hint);
    };
    Val dv = unrepeat(dvRep, "d_v");
    T(P, lname(k, "d_v"), dv, 0, 1);
    Val dk = unrepeat(dkRep, "d_k_rot");
    Val dqp = P.rotary(dq, cosV, sinV, "d_q", /*grad=*/true);
    T(P, lname(k, "d_q"), dqp, 0, 1);
    Val dkp = P.rotary(dk, cosV, sinV, "d_k", /*grad=*/true);
    T(P, lname(k, "d_k"), dkp, 0, 1);
    auto flat = [&](const Val &t, int64_t nHeads, StringRef hint) {
      Val tt = P.transpose(t, {0, 2, 1, 3}, hint);
      return P.reshape(tt, {R, S, nHeads * hd}, hint);
    };
    auto [dxq, dwq] = P.linearGrad(xg, w.at("wq"), flat(dqp, d.nh, "d_q_flat"),
                                   "d_xn_q", "d_wq");
    auto [dxk, dwk] = P.linearGrad(
        xg, w.at("wk"), flat(dkp, d.nkv, "d_k_flat"), "d_xn_k", "d_wk");
    auto [dxv, dwv] = P.linearGrad(xg, w.at("wv"), flat(dv, d.nkv, "d_v_flat"),
                                   "d_xn_v", "d_wv");
    grad(P, lname(k, "wq"), dwq, 0);
    grad(P, lname(k, "wk"), dwk, 0);
    grad(P, lname(k, "wv"), dwv, 0);
    return {P.add(P.add(dxq, dxk, "d_xn_qk"), dxv,
                  d.tp ? "d_xn_part" : "d_xn"),
            Val{}};
  }
  // MLA backward.
  T(P, lname(k, "d_v"), dvRep, 0, 1);
  Val dqNope = P.slice(dq, {0, 0, 0, 0}, {R, d.nh, S, m.dNope}, "d_q_nope");
  Val dqRot = P.slice(dq, {0, 0, 0, m.dNope}, {R, d.nh, S, m.dRope},
                      "d_q_pe_rot");
  Val dqPe = P.rotary(dqRot, cosV, sinV, "d_q_pe", /*grad=*/true);
  Val dq4 = P.concat(dqNope, dqPe, 3, "d_q");
  T(P, lname(k, "d_q"), dq4, 0, 1);
  Val dqf = P.reshape(P.transpose(dq4, {0, 2, 1, 3}, "d_q_flat"),
                      {R, S, d.nh * dqk}, "d_q_flat");
  Val dkNope = P.slice(dkRep, {0, 0, 0, 0}, {R, d.nh, S, m.dNope}, "d_k_nope");
  Val dkB = P.slice(dkRep, {0, 0, 0, m.dNope}, {R, d.nh, S, m.dRope},
                    "d_k_pe_heads");
  // The rotary key is shared by the heads: its gradient sums over them,
  // over this rank's heads only under tp.
  Val dkRot = P.reshape(P.sum(dkB, 1, "d_k_pe_rot"), {R, 1, S, m.dRope},
                        "d_k_pe_rot");
  if (d.tp)
    dkRot = P.allReduce(dkRot, {"tp"}, "d_k_pe_rot_sum");
  T(P, lname(k, "d_k_pe"), dkRot, 0, -1);
  Val dkPe4 = P.rotary(dkRot, cosV, sinV, "d_k_pe", /*grad=*/true);
  Val dkPe = P.reshape(P.transpose(dkPe4, {0, 2, 1, 3}, "d_k_pe"),
                       {R, S, m.dRope}, "d_k_pe");
  Val dkv4 = P.concat(dkNope, dvRep, 3, "d_kv");
  Val dkv = P.reshape(P.transpose(dkv4, {0, 2, 1, 3}, "d_kv_flat"),
                      {R, S, d.nh * (m.dNope + m.dV)}, "d_kv_flat");
  auto [dcn, dwkvb] = P.linearGrad(a["cn"], w.at("kv_b_proj"), dkv,
                                   d.tp ? "d_kv_a_norm_part" : "d_kv_a_norm",
                                   "d_kv_b_proj");
  grad(P, lname(k, "kv_b_proj"), dwkvb, 0);
  if (d.tp)
    dcn = P.allReduce(dcn, {"tp"}, "d_kv_a_norm");
  T(P, lname(k, "d_kv_a"), dcn, 0, -1);
  auto [dc, dkvn] = P.rmsnormGrad(a["c"], w.at("kv_a_layernorm"), dcn, m.eps,
                                  "d_kv_c", "d_kv_a_layernorm");
  grad(P, lname(k, "kv_a_layernorm"), dkvn, -1);
  Val dckv = P.concat(dc, dkPe, 2, "d_kv_a");
  auto [dxkv, dwkva] = P.linearGrad(xg, w.at("kv_a_proj_with_mqa"), dckv,
                                    "d_xn_kv", "d_kv_a_proj_with_mqa");
  grad(P, lname(k, "kv_a_proj_with_mqa"), dwkva, -1);
  if (m.qLora) {
    auto [dcqn, dwqb] = P.linearGrad(a["cqn"], w.at("q_b_proj"), dqf,
                                     d.tp ? "d_q_a_norm_part" : "d_q_a_norm",
                                     "d_q_b_proj");
    grad(P, lname(k, "q_b_proj"), dwqb, 0);
    if (d.tp)
      dcqn = P.allReduce(dcqn, {"tp"}, "d_q_a_norm");
    T(P, lname(k, "d_q_a"), dcqn, 0, -1);
    auto [dcq, dqn] = P.rmsnormGrad(a["cq"], w.at("q_a_layernorm"), dcqn,
                                    m.eps, "d_q_a", "d_q_a_layernorm");
    grad(P, lname(k, "q_a_layernorm"), dqn, -1);
    auto [dxq, dwqa] =
        P.linearGrad(xg, w.at("q_a_proj"), dcq, "d_xn_q", "d_q_a_proj");
    grad(P, lname(k, "q_a_proj"), dwqa, -1);
    return {Val{}, P.add(dxq, dxkv, "d_xn_full")};
  }
  auto [dxq, dwq] = P.linearGrad(xg, w.at("q_proj"), dqf,
                                 d.tp ? "d_xn_q_part" : "d_xn_q", "d_q_proj");
  grad(P, lname(k, "q_proj"), dwq, 0);
  return {dxq, dxkv};
}

Val Gen::embedForward(Prog &P, const Dims &d, const Val &tokens,
                      const Val &emb) {
  P.comment("embedding" +
            (inPlan ? ", micro-batch " + std::to_string(curMb) : ""));
  Val e = P.embedding(tokens, emb, d.tp, d.tp ? "embed_part" : "embed");
  e = toResidual(P, d, &e, nullptr, "embed");
  T(P, "embed", e, 0, RES_TP);
  return e;
}

void Gen::embedBackward(Prog &P, const Dims &d, const Val &tokens,
                        const Val &dx) {
  P.comment("embedding backward" +
            (inPlan ? ", micro-batch " + std::to_string(curMb) : ""));
  Val dxg = gatherSeq(P, d, dx, "d_embed");
  Val g = P.embeddingGrad(tokens, dxg, {d.V, m.H}, d.tp, "d_tok_embeddings");
  grad(P, "tok_embeddings", g, 0);
}

Vals Gen::headForward(Prog &P, const Dims &d, const Val &normW,
                      const Val &outW, const Val &x, const Val &labels) {
  Vals h;
  int64_t R = d.rows;
  P.comment("final norm, LM head, loss" +
            (inPlan ? ", micro-batch " + std::to_string(curMb) : ""));
  h["x"] = x;
  h["fn"] = norm(P, x, normW, "final_xn");
  T(P, "final.xn", h["fn"], 0, RES_TP);
  h["fg"] = gatherSeq(P, d, h["fn"], "final_xn_full");
  Val lg = P.linear(h["fg"], outW, d.tp ? "logits_part" : "logits");
  if (d.tp)
    lg = P.allGather(lg, 2, p.tp, {"tp"}, "logits");
  h["logits"] = P.reshape(lg, {R * S, m.V}, "logits_flat");
  T(P, "logits", h["logits"], 0, -1);
  h["labels"] = P.reshape(labels, {R * S}, "labels_flat");
  h["loss"] = P.crossEntropy(h["logits"], h["labels"], "loss");
  return h;
}

Val Gen::headBackward(Prog &P, const Dims &d, const Val &normW,
                      const Val &outW, Vals &h, const Val &seed) {
  int64_t R = d.rows;
  P.comment("loss, LM head, final norm backward" +
            (inPlan ? ", micro-batch " + std::to_string(curMb) : ""));
  Val dl = P.crossEntropyGrad(h["logits"], h["labels"], seed, "d_logits_flat");
  T(P, "d_logits", dl, 0, -1);
  Val dlg = P.reshape(dl, {R, S, m.V}, "d_logits");
  if (d.tp)
    dlg = P.chunk(dlg, 2, p.tp, {"tp"}, "d_logits_chunk");
  auto [dfn, dout] = P.linearGrad(h["fg"], outW, dlg,
                                  d.tp ? "d_final_xn_part" : "d_final_xn",
                                  "d_output");
  grad(P, "output", dout, 0);
  dfn = toResidual(P, d, &dfn, nullptr, "d_final_xn");
  T(P, "final.d_xn", dfn, 0, RES_TP);
  auto [dx, dn] =
      P.rmsnormGrad(h["x"], normW, dfn, m.eps, "d_final_x", "d_norm");
  grad(P, "norm", dn, -1, /*seqPartial=*/true);
  T(P, "final.d_x", dx, 0, RES_TP);
  return dx;
}

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
  Val outW = weight(P, "output", {m.V, m.H}, 0);
  maskV = P.causalMask(S, "mask");
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
  if (p.zero) {
    P.comment("optimizer step (SGD)");
    for (auto &[name, g] : specGrads)
      P.output(name + ".new",
               P.sgd(weightsIn.at(name), g, kLr, name + "_new"));
  }
  return "tv.spec @spec {\n" + P.text() + "}\n";
}

void Gen::endOfStep(Prog &P) {
  std::vector<std::string> dense = dpAxes(), expert = expertDpAxes();
  for (const Buf &b : bufs) {
    bool isExpert = b.epDim >= 0;
    const std::vector<std::string> &axes = isExpert ? expert : dense;
    int64_t n = isExpert ? p.dp / p.ep : p.dp;
    std::string gn = b.name + ".grad";
    Val g = P.bufferRead(gn, b.shape);
    // Sequence parallelism: a norm weight's gradient was computed on this
    // rank's sequence chunk; Megatron all-reduces it over tp.
    if (b.seqPartial)
      g = P.allReduce(g, {"tp"}, gn + "_sp");
    int64_t zDim = -1;
    if (p.zero >= 1 && n > 1)
      for (size_t i = 0; i < b.shape.size() && zDim < 0; ++i)
        if (b.shape[i] % n == 0)
          zDim = i;
    Rec gr{gn, gn, b.shape, -1, b.tpDim, curStage, -1};
    gr.epDim = b.epDim;
    if (p.zero == 2 && zDim >= 0) {
      // ZeRO-2: each rank keeps only its shard of the reduced gradient.
      g = P.reduceScatter(g, zDim, n, axes, gn);
      gr.shape = g.s;
      gr.zDim = zDim;
      gr.zExpert = isExpert;
    } else if (n > 1) {
      g = P.allReduce(g, axes, gn);
    }
    P.output(gn, g);
    recs.push_back(gr);
    if (!p.zero)
      continue;
    // ZeRO-1/2: the optimizer step on this rank's shard, then an all-gather
    // of the updated parameter.
    Val w = weightsIn.at(b.name);
    Val gs = g, ws = w;
    if (zDim >= 0) {
      ws = P.chunk(w, zDim, n, axes, b.name + "_shard");
      if (p.zero == 1)
        gs = P.chunk(g, zDim, n, axes, gn + "_shard");
    }
    Val nw = P.sgd(ws, gs, kLr, b.name + "_new");
    if (zDim >= 0)
      nw = P.allGather(nw, zDim, n, axes, b.name + "_new");
    P.output(b.name + ".new", nw);
    Rec wr{b.name + ".new", b.name + ".new", b.shape, -1, b.tpDim, curStage,
           -1};
    wr.epDim = b.epDim;
    recs.push_back(wr);
  }
}

std::string Gen::stageProgram(int64_t s) {
  inPlan = true;
  curStage = s;
  curMb = -1;
  bufs.clear();
  bufSeen.clear();
  weightsIn.clear();
  Prog P("    ");
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
  auto [k0, k1] = layerRange(s);
  bool first = s == 0, last = s == p.pp - 1;
  auto in = [&](const std::string &spec, const std::string &name, Shape sh,
                int64_t batchDim, int64_t tpDim, int64_t mb,
                StringRef et = "f32") {
    Val v = P.input(name, sh, et);
    recs.push_back({spec, name, sh, batchDim, tpDim, s, mb});
    return v;
  };
  int64_t dRot = m.deepseek ? m.dRope : hd;
  cosV = in("rope_cos", "rope_cos", {S, dRot / 2}, -1, -1, -1);
  sinV = in("rope_sin", "rope_sin", {S, dRot / 2}, -1, -1, -1);
  Val emb, normW, outW, dloss;
  std::vector<Val> tokens(p.mb), labels(p.mb);
  if (first) {
    emb = weight(P, "tok_embeddings", {d.V, m.H}, 0);
    for (int64_t i = 0; i < p.mb; ++i)
      tokens[i] = in("tokens", "tokens.mb" + std::to_string(i), {B, S}, 0, -1,
                     i, "i64");
  }
  std::map<int64_t, Vals> ws;
  for (int64_t k = k0; k < k1; ++k)
    ws[k] = layerWeights(P, k, d);
  if (last) {
    normW = weight(P, "norm", {m.H}, -1);
    outW = weight(P, "output", {d.V, m.H}, 0);
    dloss = in("dloss", "dloss", {}, -1, -1, -1);
    for (int64_t i = 0; i < p.mb; ++i)
      labels[i] = in("labels", "labels.mb" + std::to_string(i), {B, S}, 0, -1,
                     i, "i64");
  }
  maskV = P.causalMask(S, "mask");

  std::map<int64_t, std::map<int64_t, Vals>> acts;
  std::map<int64_t, Vals> heads;
  std::vector<Val> losses;
  Shape resid{B, d.seqLocal, m.H};
  auto forward = [&](int64_t i) {
    P.mb = curMb = i;
    Val x;
    if (first) {
      x = embedForward(P, d, tokens[i], emb);
    } else {
      x = P.recv(resid, -1, "x_recv");
      std::string n = lname(k0 - 1, "out");
      T(P, n, x, 0, RES_TP, n + ".recv");
    }
    for (int64_t k = k0; k < k1; ++k) {
      acts[i][k] = layerForward(P, d, ws[k], k, x);
      x = acts[i][k]["out"];
    }
    if (last) {
      heads[i] = headForward(P, d, normW, outW, x, labels[i]);
      losses.push_back(heads[i]["loss"]);
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
      dx = P.recv(resid, 1, "dout_recv");
      std::string n = lname(k1, "d_x");
      T(P, n, dx, 0, RES_TP, n + ".recv");
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

  P.comment("end of step: loss, data-parallel reduction of the gradients" +
            std::string(p.zero ? ", sharded optimizer step (ZeRO-" +
                                     std::to_string(p.zero) + ")"
                               : ""));
  if (last) {
    Val l = losses[0];
    for (size_t i = 1; i < losses.size(); ++i)
      l = P.add(l, losses[i], "loss_sum");
    if (p.dp * p.mb > 1)
      l = P.scale(l, 1.0 / (double)(p.dp * p.mb), "loss_local");
    if (p.dp > 1)
      l = P.allReduce(l, dpAxes(), "loss_global");
    P.output("loss", l);
    recs.push_back({"loss", "loss", {}, -1, -1, s, -1});
  }
  endOfStep(P);

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
  // One tv.lineage_map per plan tensor and pipeline stage: the block of the
  // spec tensor a rank holds is affine in its mesh coordinates (d0.. in the
  // mesh's axis order), so the statement does not grow with dp, tp or ep.
  const bool ep = p.ep > 1;
  const std::string dims = ep ? "(d0, d1, d2, d3)" : "(d0, d1, d2)";
  // The data-parallel index dd = edp * ep + e, its parts, and the tp index.
  const std::string dd = ep ? "(d0 * " + std::to_string(p.ep) + " + d1)" : "d0";
  const std::string edp = "d0", e = ep ? "d1" : "0", t = ep ? "d3" : "d2";
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
      if ((int64_t)i == r.epDim)
        idx = e;
      if ((int64_t)i == r.zDim) {
        int64_t zn = r.zExpert ? p.dp / p.ep : p.dp;
        idx = "(" + idx + ") * " + std::to_string(zn) + " + " +
              (r.zExpert ? edp : dd);
      }
      map += (i ? ", " : "") + idx;
    }
    map += ")>";
    std::string shape = "[";
    for (size_t i = 0; i < r.shape.size(); ++i)
      shape += (i ? ", " : "") + std::to_string(r.shape[i]);
    shape += "]";
    out += "tv.lineage_map \"" + r.spec + "\" blocks " + map + " shape " +
           shape + " = \"" + r.plan + "\" on @mesh where {pp = " +
           std::to_string(r.stage) + " : i64}\n";
  }
  return out;
}

std::string Gen::meshText() const {
  if (p.ep > 1)
    return "tv.mesh @mesh axes [\"edp\", \"ep\", \"pp\", \"tp\"] sizes [" +
           std::to_string(p.dp / p.ep) + ", " + std::to_string(p.ep) + ", " +
           std::to_string(p.pp) + ", " + std::to_string(p.tp) + "]\n";
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
         ", vocab " + std::to_string(m.V) + ", rope_theta " + flt(m.theta) +
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
         (p.zero ? " zero=" + std::to_string(p.zero) : "") + " (1F1B)\n";
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
    // Real models stay far below 2^31 in every size; beyond, element counts
    // of the generated tensors overflow.
    if (*i > (int64_t(1) << 31)) {
      err = "key '" + key.str() + "' is " + std::to_string(*i) +
            ", above the 2^31 that tv accepts for a model size";
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
    if (s && (*s == "deepseek_v3" || *s == "deepseek_v2")) {
      c.deepseek = true;
    } else if (!s || *s != "llama") {
      err = "unsupported model_type" +
            (s ? " '" + s->str() + "'" : std::string()) +
            " (supported: \"llama\", \"deepseek_v3\", \"deepseek_v2\")";
      return failure();
    }
  }
  if (std::optional<bool> tie = o.getBoolean("tie_word_embeddings");
      tie && *tie) {
    err = "tie_word_embeddings = true is not supported";
    return failure();
  }
  if (o.get("dim")) {
    if (c.deepseek) {
      err = "a DeepSeek config needs Hugging Face keys (hidden_size, ...), "
            "not Meta's params.json keys (dim, ...)";
      return failure();
    }
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
  if (!c.deepseek)
    return success();
  // MLA and MoE. q_lora_rank may be null (no query compression).
  c.nkv = c.nh;
  if (const json::Value *q = o.get("q_lora_rank"); q && !q->getAsNull())
    if (!getInt("q_lora_rank", c.qLora, true))
      return failure();
  auto getNonNeg = [&](StringRef key, int64_t &dst) -> bool {
    const json::Value *v = o.get(key);
    std::optional<int64_t> i = v ? v->getAsInteger() : std::nullopt;
    if (!v || !i || *i < 0) {
      err = v ? "key '" + key.str() + "' must be a non-negative integer"
              : "missing key '" + key.str() + "'";
      return false;
    }
    dst = *i;
    return true;
  };
  if (!getInt("kv_lora_rank", c.kvLora, true) ||
      !getInt("qk_rope_head_dim", c.dRope, true) ||
      !getInt("qk_nope_head_dim", c.dNope, true) ||
      !getInt("v_head_dim", c.dV, true) ||
      !getInt("n_routed_experts", c.nExperts, true) ||
      !getInt("num_experts_per_tok", c.topK, true) ||
      !getNonNeg("n_shared_experts", c.nShared) ||
      !getInt("moe_intermediate_size", c.moeI, true) ||
      !getNonNeg("first_k_dense_replace", c.firstDense))
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
    else if (key == "ep")
      p.ep = v;
    else {
      err = "unsupported --parallel axis '" + key.str() +
            "' (supported: dp, tp, pp, mb, ep)";
      return failure();
    }
  }
  return success();
}

} // namespace

namespace mlir::tv {
LogicalResult refuseModelConfigOptions(Location loc, StringRef translation) {
  // Only --import-model-config reads these: given with another
  // translation they would be ignored without a word.
  for (const llvm::cl::Option *o :
       std::initializer_list<const llvm::cl::Option *>{
           &clParallel, &clLayers, &clSeq, &clMicroBatchSize, &clTracedNorm,
           &clSp, &clEp, &clZero})
    if (o->getNumOccurrences())
      return emitError(loc) << "--" << o->ArgStr
                            << " applies to --import-model-config only, not "
                               "to --"
                            << translation;
  return success();
}

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
  if (clLayers.getNumOccurrences() && clLayers < 1)
    return fail("--layers must be at least 1 (omit it for all " +
                Twine(mc.L) + " layers)");
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
  if (clEp > 0) {
    check(pc.ep == 1 || pc.ep == clEp,
          "--ep " + Twine((int64_t)clEp) + " contradicts ep=" + Twine(pc.ep) +
              " in --parallel");
    pc.ep = clEp;
  }
  pc.sp = clSp;
  pc.zero = clZero;
  check(pc.zero >= 0 && pc.zero <= 2,
        "--zero must be 1 or 2 (ZeRO stage), got " + Twine(pc.zero));
  check(mc.nh % pc.tp == 0, "tp=" + Twine(pc.tp) +
                                " does not divide num_attention_heads " +
                                Twine(mc.nh));
  if (!mc.deepseek) {
    check(mc.H % mc.nh == 0, "hidden_size " + Twine(mc.H) +
                                 " is not divisible by num_attention_heads " +
                                 Twine(mc.nh));
    check(mc.H % mc.nh != 0 || (mc.H / mc.nh) % 2 == 0,
          "head dimension " + Twine(mc.H / mc.nh) +
              " is odd (rotary embeddings rotate pairs)");
    check(mc.nh % mc.nkv == 0, "num_attention_heads " + Twine(mc.nh) +
                                   " is not divisible by num_key_value_heads " +
                                   Twine(mc.nkv));
    check(mc.nkv % pc.tp == 0, "tp=" + Twine(pc.tp) +
                                   " does not divide num_key_value_heads " +
                                   Twine(mc.nkv));
    check(pc.ep == 1, "ep=" + Twine(pc.ep) +
                          " needs a mixture-of-experts model (this one is "
                          "dense)");
  } else {
    check(mc.dRope % 2 == 0, "qk_rope_head_dim " + Twine(mc.dRope) +
                                 " is odd (rotary embeddings rotate pairs)");
    check(mc.topK <= mc.nExperts,
          "num_experts_per_tok " + Twine(mc.topK) + " exceeds n_routed_experts " +
              Twine(mc.nExperts));
    check(mc.nExperts % pc.ep == 0, "ep=" + Twine(pc.ep) +
                                        " does not divide n_routed_experts " +
                                        Twine(mc.nExperts));
    check(pc.dp % pc.ep == 0, "ep=" + Twine(pc.ep) +
                                  " does not divide dp=" + Twine(pc.dp) +
                                  " (expert-parallel ranks are carved from "
                                  "the data-parallel ranks)");
    check(mc.moeI % pc.tp == 0, "tp=" + Twine(pc.tp) +
                                    " does not divide moe_intermediate_size " +
                                    Twine(mc.moeI));
    // A shallow model keeps at least one MoE layer.
    mc.firstDense = std::min(mc.firstDense, std::max<int64_t>(0, layers - 1));
  }
  check(mc.I % pc.tp == 0, "tp=" + Twine(pc.tp) +
                               " does not divide intermediate_size " +
                               Twine(mc.I));
  check(mc.V % pc.tp == 0,
        "tp=" + Twine(pc.tp) + " does not divide vocab_size " + Twine(mc.V));
  // Sizes the verifier accepts, checked before anything is built.
  check((__int128)pc.dp * pc.tp * pc.pp <= (1 << 20),
        "dp*tp*pp = " + Twine((int64_t)std::min<__int128>(
                            (__int128)pc.dp * pc.tp * pc.pp, INT64_MAX)) +
            " ranks exceed the mesh limit of 2^20");
  check((__int128)pc.dp * pc.mb * mbs * seq <= ((__int128)1 << 40),
        "dp*mb*micro-batch-size*seq exceeds 2^40 tokens");
  check(clEp >= 0, "--ep must be positive");
  check(layers >= pc.pp, "pp=" + Twine(pc.pp) +
                             " exceeds the number of layers " + Twine(layers));
  check(!pc.sp || seq % pc.tp == 0,
        "sequence parallelism: tp=" + Twine(pc.tp) +
            " does not divide the sequence length " + Twine(seq));
  if (!err.empty())
    return fail(err);

  Gen gen(mc, pc, layers, seq, mbs, clTracedNorm);
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

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
// The module is built as MLIR text (one SPMD rank program per pipeline
// stage) and parsed, so the dialect's verifiers and the lineage checks run on
// it. Sizes live only in the types: nothing is materialized per element, and
// the only constants are 1/sqrt(head_dim) (the model's, on both sides) and
// 1/(dp * micro-batches) (docs/soundness.md, A3).
//
// Shared by the entry point (ModelConfig.cpp: the options, reading and
// checking the model and parallel configurations), the layers
// (ModelGenLayers.cpp: one layer's forward and backward, the embedding, the
// head) and the programs (ModelGenPrograms.cpp: the spec, the rank programs,
// the lineages, the module text). Internal to lib/Translate.
//
//===----------------------------------------------------------------------===//
#ifndef TRAINVERIFY_TRANSLATE_MODELGEN_H
#define TRAINVERIFY_TRANSLATE_MODELGEN_H

#include "mlir/Support/LLVM.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"
#include <cctype>
#include <cstdint>
#include <functional>
#include <tuple>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace llvm::json {
class Object;
} // namespace llvm::json

namespace mlir::tv::modelgen {

using Shape = std::vector<int64_t>;

//===----------------------------------------------------------------------===//
// Text builder
//===----------------------------------------------------------------------===//

inline std::string tyOf(const Shape &s, StringRef et = "f32") {
  std::string r = "tensor<";
  for (int64_t d : s)
    r += std::to_string(d) + "x";
  return r + et.str() + ">";
}

inline std::string flt(double c) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << llvm::format("%.17e", c);
  return s;
}

inline std::string ints(ArrayRef<int64_t> xs) {
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
    // Each hint resumes its suffixes where it stopped: linear probing from
    // 1 made a hint used k times cost k^2 (mb=4096 ran for minutes).
    std::string name = h;
    int &next = nextSuffix[h];
    while (used.count(name))
      name = h + "_" + std::to_string(++next);
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
  Val linearBias(const Val &x, const Val &w, const Val &bias, StringRef hint) {
    Shape s = x.s;
    s.back() = w.s[0];
    return emit(hint, s,
                "tv.linear " + x.ref() + ", " + w.ref() + ", " + bias.ref() +
                    attrs() + " : (" + x.ty() + ", " + w.ty() + ", " +
                    bias.ty() + ") -> " + tyOf(s));
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
    return reduceDim("sum", x, dim, false, hint);
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
  /// `sq` queries against `sk` keys; with `queryAxis` the queries are the
  /// rank's block along that mesh axis of the `sk` positions.
  Val causalMask(int64_t s, StringRef hint, int64_t window = 0,
                 int64_t sk = 0, StringRef queryAxis = "") {
    Shape sh{s, sk ? sk : s};
    std::vector<std::string> items;
    if (window)
      items.push_back("window = " + std::to_string(window) + " : i64");
    if (!queryAxis.empty())
      items.push_back("query_axis = \"" + queryAxis.str() + "\"");
    return emit(hint, sh,
                "tv.causal_mask" + attrs(items) + " : " + tyOf(sh, "i1"),
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
  /// `tv.<op>` over one dimension, dropped or (`keep`) kept as size 1.
  Val reduceDim(StringRef op, const Val &x, int64_t dim, bool keep,
                StringRef hint) {
    Shape s = x.s;
    if (keep)
      s[dim] = 1;
    else
      s.erase(s.begin() + dim);
    std::vector<std::string> items;
    if (keep)
      items.push_back("keepdim");
    return emit(hint, s,
                "tv." + op.str() + " " + x.ref() + " dims [" +
                    std::to_string(dim) + "]" + attrs(items) + " : " + x.ty() +
                    " -> " + tyOf(s));
  }
  Val meanKeep(const Val &x, int64_t dim, StringRef hint) {
    return reduceDim("mean", x, dim, true, hint);
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
  /// Max over `dim`, kept as a dimension of 1.
  Val maxKeep(const Val &x, int64_t dim, StringRef hint) {
    return reduceDim("max", x, dim, true, hint);
  }
  Val allReduceMax(const Val &x, ArrayRef<std::string> axes, StringRef hint) {
    return emit(hint, x.s,
                "tv.all_reduce max " + x.ref() + attrs({axesAttr(axes)}) +
                    " : " + x.ty() + " -> " + x.ty());
  }
  Val mean(const Val &x, int64_t dim, StringRef hint) {
    return reduceDim("mean", x, dim, false, hint);
  }
  Val meanGrad(const Val &g, Shape s, int64_t dim, StringRef hint) {
    return emit(hint, s,
                "tv.mean_grad " + g.ref() + " dims [" + std::to_string(dim) +
                    "]" + attrs() + " : " + g.ty() + " -> " + tyOf(s));
  }
  /// Each row's logit at its label on this rank's vocabulary shard (over
  /// `axis`), zero when another shard holds the label.
  Val targetLogit(const Val &logits, const Val &labels, StringRef axis,
                  StringRef hint) {
    return emit(hint, {logits.s[0]},
                "tv.target_logit " + logits.ref() + ", " + labels.ref() +
                    attrs(axis.empty()
                              ? std::vector<std::string>{}
                              : std::vector<std::string>{
                                    "vocab_axis = \"" + axis.str() + "\""}) +
                    " : " +
                    logits.ty() + ", " + labels.ty() + " -> " +
                    tyOf({logits.s[0]}));
  }
  Val targetLogitGrad(const Val &labels, const Val &g, Shape s,
                      StringRef axis, StringRef hint) {
    return emit(hint, s,
                "tv.target_logit_grad " + labels.ref() + ", " + g.ref() +
                    attrs({"vocab_axis = \"" + axis.str() + "\""}) + " : " +
                    labels.ty() + ", " + g.ty() + " -> " + tyOf(s));
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
  /// An all-reduce over explicit rank groups (each a list of ranks).
  Val allReduceGroups(const Val &x,
                      const std::vector<std::vector<int64_t>> &groups,
                      StringRef hint) {
    std::string g = "rank_groups = [";
    for (size_t i = 0; i < groups.size(); ++i) {
      g += i ? ", array<i64: " : "array<i64: ";
      for (size_t j = 0; j < groups[i].size(); ++j)
        g += (j ? ", " : "") + std::to_string(groups[i][j]);
      g += ">";
    }
    return emit(hint, x.s,
                "tv.all_reduce sum " + x.ref() + attrs({g + "]"}) + " : " +
                    x.ty() + " -> " + x.ty());
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
                    ArrayRef<std::string> axes, StringRef hint,
                    bool average = false) {
    Shape s = x.s;
    s[dim] /= n;
    std::vector<std::string> items{axesAttr(axes)};
    if (average)
      items.push_back("kind = #tv<reduce_kind avg>");
    return emit(hint, s,
                "tv.reduce_scatter " + x.ref() + " dim " +
                    std::to_string(dim) + attrs(items) + " : " + x.ty() +
                    " -> " + tyOf(s));
  }
  Val allReduceAvg(const Val &x, ArrayRef<std::string> axes, StringRef hint) {
    return emit(hint, x.s,
                "tv.all_reduce avg " + x.ref() + attrs({axesAttr(axes)}) +
                    " : " + x.ty() + " -> " + x.ty());
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
  Val sliceGrad(const Val &g, Shape start, Shape s, StringRef hint) {
    return emit(hint, s,
                "tv.slice_grad " + g.ref() + " start " + ints(start) +
                    attrs() + " : " + g.ty() + " -> " + tyOf(s));
  }
  /// Which of `s`'s columns are real vocabulary entries (`vocab` of them
  /// over all shards of `axis`, or in this unsharded vocabulary).
  Val vocabMask(Shape s, int64_t vocab, StringRef axis, StringRef hint) {
    std::vector<std::string> items{"vocab_size = " + std::to_string(vocab) +
                                   " : i64"};
    if (!axis.empty())
      items.push_back("vocab_axis = \"" + axis.str() + "\"");
    return emit(hint, s, "tv.vocab_mask" + attrs(items) + " : " + tyOf(s, "i1"),
                "i1");
  }
  Val concat(const Val &a, const Val &b, int64_t dim, StringRef hint) {
    Shape s = a.s;
    s[dim] += b.s[dim];
    return emit(hint, s,
                "tv.concat " + a.ref() + ", " + b.ref() + " dim " +
                    std::to_string(dim) + attrs() + " : (" + a.ty() + ", " +
                    b.ty() + ") -> " + tyOf(s, a.et),
                a.et);
  }
  /// The causal mask between chunks of `cs` positions, queries and keys in
  /// the chunk orders given (a load-balanced sequence).
  Val chunkMask(ArrayRef<int64_t> qc, ArrayRef<int64_t> kc, int64_t cs,
                StringRef hint) {
    Shape sh{(int64_t)qc.size() * cs, (int64_t)kc.size() * cs};
    return emit(hint, sh,
                "tv.causal_mask" +
                    attrs({"query_chunks = array<i64: " + join(qc) + ">",
                           "key_chunks = array<i64: " + join(kc) + ">",
                           "chunk_size = " + std::to_string(cs) + " : i64"}) +
                    " : " + tyOf(sh, "i1"),
                "i1");
  }
  static std::string join(ArrayRef<int64_t> v) {
    std::string out;
    for (int64_t x : v)
      out += (out.empty() ? "" : ", ") + std::to_string(x);
    return out;
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
  std::tuple<Val, Val, Val> adam(const Val &w, const Val &g, const Val &m,
                                 const Val &v, double lr, double b1, double b2,
                                 double eps, int64_t step, StringRef hint) {
    Val nw = fresh(hint, w.s), nm = fresh(hint.str() + "_exp_avg", w.s),
        nv = fresh(hint.str() + "_exp_avg_sq", w.s);
    line(nw.ref() + ", " + nm.ref() + ", " + nv.ref() + " = tv.adam " +
         w.ref() + ", " + g.ref() + ", " + m.ref() + ", " + v.ref() +
         attrs({"lr = " + flt(lr) + " : f64", "beta1 = " + flt(b1) + " : f64",
                "beta2 = " + flt(b2) + " : f64", "eps = " + flt(eps) + " : f64",
                "step = " + std::to_string(step) + " : i64"}) +
         " : " + w.ty());
    return {nw, nm, nv};
  }
  Val sgd(const Val &w, const Val &g, double lr, StringRef hint) {
    return emit(hint, w.s,
                "tv.sgd " + w.ref() + ", " + g.ref() + " lr " + flt(lr) +
                    attrs() + " : " + w.ty());
  }
  /// A point-to-point message along pp; `tag` separates the channels of
  /// one pair of ranks (0: written out never).
  void send(const Val &x, int64_t offset, int64_t tag = 0,
            StringRef axis = "pp") {
    std::vector<std::string> items{
        "peer_axis = \"" + axis.str() + "\"",
        "peer_offset = " + std::to_string(offset) + " : i64"};
    if (tag)
      items.push_back("tag = " + std::to_string(tag) + " : i64");
    line("tv.send " + x.ref() + attrs(items) + " : " + x.ty());
  }
  Val recv(const Shape &s, int64_t offset, StringRef hint, int64_t tag = 0,
           StringRef axis = "pp") {
    std::vector<std::string> items{
        "peer_axis = \"" + axis.str() + "\"",
        "peer_offset = " + std::to_string(offset) + " : i64"};
    if (tag)
      items.push_back("tag = " + std::to_string(tag) + " : i64");
    return emit(hint, s, "tv.recv" + attrs(items) + " : " + tyOf(s));
  }

  std::string text() const { return head + body; }

private:
  std::string ind;
  std::set<std::string> used;
  std::map<std::string, int> nextSuffix;
};

//===----------------------------------------------------------------------===//
// Configuration
//===----------------------------------------------------------------------===//

struct ModelCfg {
  /// `V` is the vocabulary as the tables hold it, padded as Megatron-LM
  /// pads it; `vocab` the config's vocab_size (the real entries, V when
  /// nothing is padded).
  int64_t H = 0, L = 0, nh = 0, nkv = 0, I = 0, V = 0, vocab = 0;
  bool padded() const { return vocab && vocab < V; }
  double eps = 1e-5, theta = 500000.0;
  /// "llama" or "deepseek_v3" (MLA attention, MoE feed-forward).
  bool deepseek = false;
  // DeepSeek-V3: MLA and MoE.
  int64_t qLora = 0, kvLora = 0, dRope = 0, dNope = 0, dV = 0;
  int64_t nExperts = 0, topK = 0, nShared = 0, moeI = 0, firstDense = 0;
  /// Qwen2 / Qwen2.5 (model_type "qwen2"): the Llama architecture with a
  /// bias on the q, k and v projections.
  bool qkvBias = false;
  /// Mistral (model_type "mistral"): the Llama architecture; its
  /// `sliding_window` (0: none) limits every query to that many keys.
  bool mistral = false;
  int64_t window = 0;
  /// Phi-3 (model_type "phi3"): Mistral's model under another name.
  bool phi3 = false;
  /// Qwen3 (model_type "qwen3"): RMSNorm of every query and key head over
  /// the head dimension (`q_norm`, `k_norm`) before RoPE, and `head_dim`
  /// (0: hidden / heads), which may differ from hidden / heads.
  bool qkNorm = false;
  int64_t headDim = 0;
  /// Mixtral (model_type "mixtral"): Mistral's attention and, in every
  /// layer, a mixture of `nExperts` SwiGLU experts of `moeI` =
  /// intermediate_size, `topK` of them per token (softmax, top-k,
  /// renormalized), no shared expert.
  bool mixtral = false;
  bool moe() const { return deepseek || mixtral; }
  /// Gemma 2 (model_type "gemma2", ModelGenGemma.cpp): GeGLU (tanh GELU),
  /// (1 + w) RMSNorms and post-attention / post-feedforward norms,
  /// embeddings scaled by sqrt(hidden), scores scaled by `qScalar`^-0.5 and
  /// soft-capped by `attnCap`, logits soft-capped by `finalCap` (0: none),
  /// a `localWindow` on even layers (0: none), global odd layers.
  bool gemma2 = false;
  double qScalar = 0, attnCap = 0, finalCap = 0;
  int64_t localWindow = 0;
  /// The config's `rope_scaling` (JSON), empty if none: it changes the
  /// values of the RoPE tables, which are inputs of the step.
  std::string ropeScaling;
  /// `tie_word_embeddings`: the LM head is the token embedding. Under
  /// pipeline parallelism the last stage holds a copy whose gradient is
  /// all-reduced with the first stage's (Megatron's embedding group).
  bool tied = false;
};

/// Audits every key of a model config (ModelConfigKeys.cpp): each refused
/// key is appended to `errs` as (key, message); `meta`: Meta's params.json.
void auditModelKeys(const llvm::json::Object &o, ModelCfg &c, bool meta,
                    std::vector<std::pair<std::string, std::string>> &errs);

struct ParCfg {
  int64_t dp = 1, tp = 1, pp = 1, mb = 1, ep = 1;
  bool sp = false;
  int64_t zero = 0;
  /// All-gather the logits instead of the vocabulary-parallel loss.
  bool gatherLogits = false;
  /// DeepSpeed / torchtitan: each rank's backward starts from the mean of
  /// its own loss (activation gradients dp times the spec's, lineages
  /// scaled 1/dp); gradients and the reported loss are averaged over dp.
  bool perRankLoss = false;
  /// The optimizer step: Adam (moments exp_avg / exp_avg_sq, sharded with
  /// the parameter under ZeRO as Megatron's distributed optimizer shards
  /// them) instead of SGD. With Adam the step is generated without ZeRO too.
  bool adam = false;
  /// Interleaved 1F1B (Megatron's virtual pipeline): each pipeline rank
  /// holds `vpp` non-contiguous chunks of layers (1: plain 1F1B).
  int64_t vpp = 1;
  /// Context parallelism: the sequence split over `cp` ranks (contiguous
  /// chunks); attention exchanges with an all-to-all from sequence- to
  /// head-sharded and back (`cpA2A`: DeepSpeed-Ulysses, Transformer
  /// Engine's "a2a") or all-gathers keys and values (torchtitan, the
  /// Llama 3 paper; Transformer Engine's "all_gather").
  int64_t cp = 1;
  bool cpA2A = false, cpRing = false;
  /// The load-balanced sequence order of the ring (Megatron-LM's
  /// get_batch_on_this_cp_rank, ring-flash-attention's zigzag): 2 x cp
  /// chunks, rank r holding chunks r and 2 x cp - 1 - r.
  bool cpBalance = false;
  /// Megatron-LM's distributed optimizer (--use-distributed-optimizer): the
  /// gradients of a bucket of parameters live in one flat buffer (reverse
  /// parameter order, each start aligned to 64 elements, the bucket padded
  /// to a multiple of lcm(dp x cp, 128)); each rank of the data-parallel
  /// group owns one contiguous 1/(dp x cp) of it, whatever parameter
  /// boundaries fall inside. `bucketSize`: --ddp-bucket-size, in elements.
  bool distOpt = false;
  int64_t bucketSize = 0;
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
    hd = m.headDim ? m.headDim : m.H / m.nh;
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
  std::vector<Val> ringExchange(Prog &P, const std::vector<Val> &out,
                                StringRef hint) {
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
      in.push_back(P.recv(v.s, toPrev, hint, 0, "cp"));
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

  std::string spec();
  std::string stageProgram(int64_t stage);
  std::string stageProgramOne(int64_t stage);
  void endOfStep(Prog &P);
  /// The end of the step under Megatron's distributed optimizer (one
  /// program per data-parallel coordinate `curZ`: the ranges it owns).
  void flatStep(Prog &P);
  /// One program per data-parallel coordinate (dp x cp index `curZ`).
  bool perZ() const { return p.distOpt && dpN() > 1; }
  int64_t curZ = 0;
  /// Lineage statements of the parts of flat buffers a rank owns, written
  /// out as boxes (they differ per data-parallel coordinate).
  std::vector<std::string> flatLines;
  /// The same as statements by box (`"spec"[box]`), whose groups are
  /// replicas (a tied embedding's copies on the first and last stage).
  std::vector<std::pair<std::string, std::vector<std::string>>> flatStmts;
  std::map<std::string, size_t> flatStmtIndex;
  std::string lineages();
  std::string meshText() const;

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
};

// With sequence parallelism every tensor of the residual stream (layer
// inputs and outputs, norm outputs, their gradients) is sharded along the
// sequence (dimension 1) over tp: their lineages use tpDim = 1.
#define RES_TP (d.sp ? 1 : -1)

} // namespace mlir::tv::modelgen

#endif

//===- ModelGenProg.h - the text builder of tv programs ---------*- C++ -*-===//
//
// The text builder of the model-config generator (ModelGen.h): the tensor
// shapes and types, `Val` (one SSA value and its type) and `Prog` (the body
// of the spec or of one rank program, one method per tv op it appends).
//
//===----------------------------------------------------------------------===//
#ifndef TRAINVERIFY_TRANSLATE_MODELGENPROG_H
#define TRAINVERIFY_TRANSLATE_MODELGENPROG_H

#include "mlir/Support/LLVM.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"
#include <cctype>
#include <cstdint>
#include <tuple>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

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

} // namespace mlir::tv::modelgen

#endif

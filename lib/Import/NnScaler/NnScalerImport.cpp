//===- NnScalerImport.cpp - --import-nnscaler-json ------------------------===//
//
// Translates a `verdict-plan-json/1` file (nnScaler plans as VERDICT's front
// end sees them) into one tv module: Gs becomes the spec, Gp one rank
// program per rank, the lineages tv.lineage ops. The mapping is specified in
// docs/nnscaler-import.md; every operator has its exact semantics, an
// unknown one is an error naming the node.
//
//===----------------------------------------------------------------------===//
#include "TrainVerify/Import/JsonInput.h"
#include "NnScaler.h"
#include "TrainVerify/Dialect/LongLineDiagnostics.h"
#include "llvm/ADT/ScopeExit.h"
#include "TrainVerify/Dialect/Lineage.h"

#include "mlir/IR/Verifier.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include <cctype>
#include <cstring>
#include <unordered_map>

using namespace mlir;
using namespace mlir::tv;
using namespace mlir::tv::nnscaler;

// The format's keys (docs/nnscaler-import.md, "Keys"). "Modeled" keys are
// read or checked against what is read; "descriptive" ones restate what the
// graph and the lineages already say, or name and time the extraction.
namespace keys {
static const StringRef top[] = {"format", "Gs", "Gp", "lineages", "errors"};
static const StringRef topInfo[] = {"case", "note", "source", "generator",
                                    "extract_seconds"};
static const StringRef graph[] = {"ranks",       "tensors",
                                  "world",       "collective_groups",
                                  "grad_to_weight", "max_version",
                                  "rank_coords", "wtype"};
static const StringRef graphInfo[] = {"id", "num_nodes", "num_tensor_versions"};
static const StringRef world[] = {"num_dp",     "num_pp",        "num_tp",
                                  "num_mb",     "plan_ndevs",    "runtime_ndevs",
                                  "wtype"};
static const StringRef worldInfo[] = {
    "model_name", "gbs",     "num_layers",          "num_heads",
    "hidden_size", "seqlen", "n_activated_experts", "n_routed_experts"};
static const StringRef tensor[] = {"shape", "initialized", "is_attr"};
static const StringRef tensorInfo[] = {"ft_shape", "indmap", "valmap",
                                       "is_grad", "is_loss"};
static const StringRef group[] = {"nodes"};
static const StringRef groupInfo[] = {"key", "tensors"};
static const StringRef coords[] = {"dp", "pp", "tp"};
} // namespace keys

/// Checks what a graph says about itself (its keys are checked apart) against the mesh tv models: its
/// weight type (`s` spec, `p` plan), the world's device counts and the
/// coordinates of each rank (row-major over dp, pp, tp). Each of these is
/// redundant with what the importer reads; a file where they disagree is
/// not the plan tv would verify.
LogicalResult Importer::checkGraphHeader(const json::Object &g,
                                         const std::string &path, bool spec,
                                         ArrayRef<int64_t> dpPpTp,
                                         int64_t nmb) {
  StringRef wantType = spec ? "s" : "p";
  auto checkType = [&](const json::Object &o,
                       const std::string &at) -> LogicalResult {
    if (const json::Value *w = o.get("wtype"))
      if (w->getAsString() != std::optional<StringRef>(wantType))
        return error(at + ".wtype")
               << "expected \"" << wantType << "\" for the "
               << (spec ? "spec" : "plan") << " graph";
    return success();
  };
  if (failed(checkType(g, path)))
    return failure();
  int64_t dp = dpPpTp[0], pp = dpPpTp[1], tp = dpPpTp[2];
  if (const json::Value *wv = g.get("world")) {
    const json::Object *w = wv->getAsObject();
    if (!w)
      return error(path + ".world") << "expected an object";
    if (failed(onlyKeys(*w, path + ".world", keys::world, keys::worldInfo)) ||
        failed(checkType(*w, path + ".world")))
      return failure();
    std::pair<StringRef, int64_t> expected[] = {
        {"num_dp", dp},          {"num_pp", pp},       {"num_tp", tp},
        {"num_mb", nmb},         {"plan_ndevs", pp * tp},
        {"runtime_ndevs", dp * pp * tp}};
    for (auto [k, want] : expected)
      if (const json::Value *v = w->get(k))
        if (v->getAsInteger() != std::optional<int64_t>(want))
          return error(path + ".world." + k.str())
                 << "expected " << want << " (the "
                 << (spec ? "spec is one device, one micro-batch"
                          : "plan's mesh is dp x pp x tp, plan_ndevs one "
                            "replica")
                 << ")";
  }
  if (const json::Value *cv = g.get("rank_coords")) {
    const json::Object *c = cv->getAsObject();
    if (!c || c->size() != size_t(dp * pp * tp))
      return error(path + ".rank_coords")
             << "expected the coordinates of each of the " << dp * pp * tp
             << " ranks";
    for (int64_t r = 0; r < dp * pp * tp; ++r) {
      std::string at = path + ".rank_coords." + std::to_string(r);
      const json::Object *rc = c->getObject(std::to_string(r));
      if (!rc)
        return error(at) << "rank " << r << " has no coordinates";
      if (failed(onlyKeys(*rc, at, keys::coords, {})))
        return failure();
      int64_t want[] = {r / (pp * tp), (r / tp) % pp, r % tp};
      for (auto [k, w] : llvm::zip(keys::coords, want))
        if (rc->getInteger(k) != std::optional<int64_t>(w))
          return error(at + "." + k.str())
                 << "expected " << w << ": tv numbers ranks row-major over "
                                        "(dp, pp, tp)";
    }
  }
  if (const json::Value *gv = g.get("collective_groups")) {
    const json::Array *ga = gv->getAsArray();
    if (!ga)
      return error(path + ".collective_groups") << "expected a list";
    for (auto [i, e] : llvm::enumerate(*ga)) {
      std::string at = path + ".collective_groups[" + std::to_string(i) + "]";
      const json::Object *o = e.getAsObject();
      if (!o)
        return error(at) << "expected an object";
      if (failed(onlyKeys(*o, at, keys::group, keys::groupInfo)))
        return failure();
    }
  }
  return success();
}

LogicalResult Importer::loadTensors(const json::Object &g, GraphInfo &info,
                                    StringRef path) {
  info.graph = &g;
  const json::Object *tensors = g.getObject("tensors");
  if (!tensors)
    return error(path.str()) << "graph needs a 'tensors' object";
  for (auto &[k, v] : *tensors) {
    int64_t tid;
    if (StringRef(k).getAsInteger(10, tid))
      return error(path.str() + ".tensors") << "tensor id '" << k.str()
                                            << "' is not an integer";
    const json::Object *t = v.getAsObject();
    if (!t)
      return error(path.str() + ".tensors." + k.str()) << "expected an object";
    if (failed(onlyKeys(*t, path.str() + ".tensors." + k.str(), keys::tensor,
                        keys::tensorInfo)))
      return failure();
    if (const json::Array *shape = t->getArray("shape")) {
      SmallVector<int64_t> s;
      for (const json::Value &d : *shape) {
        auto n = d.getAsInteger();
        if (!n || *n < 0)
          return error(path.str() + ".tensors." + k.str() + ".shape")
                 << "dimension is not a non-negative integer";
        s.push_back(*n);
      }
      info.shape[tid] = s;
    }
    if (t->getBoolean("initialized").value_or(false) ||
        t->getBoolean("is_attr").value_or(false))
      info.initial.insert(tid);
  }
  return success();
}

/// Element types: ids from the data loader and the router's indices; masks
/// from create_mask; both through every pure copy or move. Complex tensors:
/// rotary frequencies. `collectFlow` records what each node contributes (a
/// rank at a time, so that no rank's nodes stay in memory), `propagate`
/// closes it.
void Importer::collectFlow(const json::Array &nodes, GraphInfo &info) {
  static const std::set<std::string> moves = {
      "ChunkPrim", "MovePrim", "AllGatherPrim", "FW_identity", "IdentityPrim",
      "FW_multiref", "FW_float", "FW_to", "FW_contiguous"};
  for (const json::Value &nv : nodes) {
    const json::Object *n = nv.getAsObject();
    if (!n)
      continue;
    std::string op = opName(*n);
    const json::Array *in = n->getArray("in"), *out = n->getArray("out");
    if (!in || !out)
      continue;
    TypeFlow f;
    auto tids = [](const json::Array &refs, SmallVectorImpl<int64_t> &into) {
      for (const json::Value &r : refs) {
        TRef t;
        if (parseTRef(&r, t))
          into.push_back(t.tid);
      }
    };
    TRef t;
    if (op == "DATALOADER") {
      f.kind = TypeFlow::Ids;
      tids(*out, f.out);
    } else if (op == "FW_create_mask") {
      f.kind = TypeFlow::Mask;
      tids(*out, f.out);
    } else if (op == "FW_nns_moe_gate" && out->size() == 2) {
      // (weights, indices): the expert indices are integers.
      if (parseTRef(&(*out)[1], t))
        f.out.push_back(t.tid);
      f.kind = TypeFlow::Ids;
    } else if (moves.count(op)) {
      f.kind = TypeFlow::Move;
      tids(*in, f.in);
      tids(*out, f.out);
    }
    if (op == "FW_apply_rotary_emb" && in->size() == 3 &&
        parseTRef(&(*in)[2], t))
      info.complexTids.insert(t.tid);
    if (op == "BW_apply_rotary_emb" && in->size() == 5 &&
        parseTRef(&(*in)[4], t))
      info.complexTids.insert(t.tid);
    if (f.kind != TypeFlow::None)
      info.flow.push_back(std::move(f));
  }
}

void Importer::propagate(GraphInfo &info) {
  bool changed = true;
  while (changed) {
    changed = false;
    for (const TypeFlow &f : info.flow) {
      auto mark = [&](std::set<int64_t> &set) {
        for (int64_t t : f.out)
          changed |= set.insert(t).second;
      };
      if (f.kind == TypeFlow::Ids)
        mark(info.ids);
      else if (f.kind == TypeFlow::Mask)
        mark(info.masks);
      else if (llvm::any_of(f.in, [&](int64_t t) { return info.masks.count(t); }))
        mark(info.masks);
      else if (llvm::any_of(f.in, [&](int64_t t) { return info.ids.count(t); }))
        mark(info.ids);
    }
  }
  info.flow.clear();
}

/// The groups of a collective whose group on the program's first rank is
/// `members`: on each rank of the program, its translate.
ArrayAttr Importer::classGroups(const Prog &p, ArrayRef<int64_t> members) {
  std::set<std::vector<int64_t>> sets;
  for (int64_t m : p.ranks.empty() ? ArrayRef<int64_t>(p.rank)
                                   : ArrayRef<int64_t>(p.ranks)) {
    std::vector<int64_t> g;
    for (int64_t x : members)
      g.push_back(((x + m - p.rank) % numRanks + numRanks) % numRanks);
    llvm::sort(g);
    sets.insert(std::move(g));
  }
  SmallVector<Attribute> attrs;
  for (const std::vector<int64_t> &g : sets)
    attrs.push_back(b.getDenseI64ArrayAttr(g));
  return b.getArrayAttr(attrs);
}

Location Importer::locationAt(size_t offset) {
  if (lineStarts.empty()) {
    lineStarts.push_back(0);
    for (size_t i = 0; i < buffer.size(); ++i)
      if (buffer[i] == '\n')
        lineStarts.push_back(i + 1);
  }
  auto it = std::upper_bound(lineStarts.begin(), lineStarts.end(), offset);
  size_t line = it - lineStarts.begin();
  size_t col = offset - lineStarts[line - 1] + 1;
  // A file written as one long line (as the reference's exporter writes
  // them) keeps its line and column; addLongLineDiagnostics prints them
  // without quoting the line.
  return FileLineColLoc::get(ctx, file, line, col);
}

std::vector<jsonscan::Span> Importer::nodeSpans(jsonscan::Span list) {
  std::vector<jsonscan::Span> spans;
  std::string err;
  if (!jsonscan::elements(
          buffer, list,
          [&](size_t, jsonscan::Span v) {
            spans.push_back(v);
            return true;
          },
          err))
    spans.clear();
  return spans;
}

/// Nesting deeper than this is refused before llvm::json (which recurses)
/// reads it; the format nests 7 levels.
static constexpr unsigned kMaxJsonDepth = 64;

std::optional<json::Value> Importer::parseSpan(jsonscan::Span span,
                                               const std::string &path) {
  std::string err;
  jsonscan::Span v;
  unsigned depth = 0;
  if (!jsonscan::value(buffer, span.begin, v, depth, err)) {
    error(path) << "malformed JSON: " << err;
    return std::nullopt;
  }
  if (depth > kMaxJsonDepth) {
    error(path) << "JSON nested " << depth << " levels deep (at most "
                << kMaxJsonDepth << " are read)";
    return std::nullopt;
  }
  llvm::Expected<json::Value> parsed = json::parse(span.in(buffer));
  if (!parsed) {
    auto [offset, msg] = splitJsonError(llvm::toString(parsed.takeError()));
    if (offset)
      emitError(locationAt(span.begin + *offset))
          << "nnscaler import: at " << path << ": malformed JSON: " << msg;
    else
      error(path) << "malformed JSON: " << msg;
    return std::nullopt;
  }
  return std::move(*parsed);
}

/// The rank `x` seen from `base`'s data-parallel replica: ranks of the plan
/// are renumbered cyclically, in-flight ones (-1 - sender) through their
/// sender. Two ranks whose nodes agree after this are translates.
static int64_t relRank(int64_t x, int64_t base, int64_t n) {
  if (x < 0)
    return -1 - relRank(-1 - x, base, n);
  return ((x - base) % n + n) % n;
}

/// A collective group by its members (renumbered from `base`), not by its
/// index in the file.
const std::string &Importer::groupKey(int64_t index, int64_t base) {
  auto [it, fresh] = groupMembers.try_emplace({index, base});
  if (!fresh)
    return it->second;
  const json::Object *grp =
      groups && index >= 0 && index < (int64_t)groups->size()
          ? (*groups)[index].getAsObject()
          : nullptr;
  std::vector<int64_t> members;
  if (const json::Array *ns = grp ? grp->getArray("nodes") : nullptr)
    for (const json::Value &m : *ns)
      if (const json::Array *pair = m.getAsArray())
        if (!pair->empty() && (*pair)[0].getAsInteger())
          members.push_back(relRank(*(*pair)[0].getAsInteger(), base, numRanks));
  llvm::sort(members);
  llvm::raw_string_ostream os(it->second);
  for (int64_t m : members)
    os << m << ",";
  return it->second;
}

void Importer::writeRanks(llvm::raw_ostream &os, SmallVectorImpl<int64_t> &xs,
                          int64_t rank) {
  int64_t base = rank / planRanks * planRanks;
  // As the importer reads kwargs.ranks: the first replica's ranks stand
  // for the node's own replica.
  if (!llvm::is_contained(xs, rank))
    for (int64_t &x : xs)
      if (x >= 0 && x < planRanks)
        x += base;
  os << "[";
  for (int64_t x : xs)
    os << (x == kNoRank ? x : relRank(x, base, numRanks)) << ",";
  os << "]";
}

std::string Importer::signature(const json::Array &nodes, int64_t rank) {
  int64_t n = numRanks, base = rank / planRanks * planRanks;
  std::string sig;
  llvm::raw_string_ostream os(sig);
  auto refs = [&](const json::Array *a, bool sorted) {
    std::vector<std::array<int64_t, 4>> v;
    for (const json::Value &x : a ? *a : json::Array()) {
      TRef t;
      if (!parseTRef(&x, t)) {
        os << "?" << x;
        continue;
      }
      v.push_back({relRank(t.rank, base, n), t.mb, t.tid, t.v});
    }
    if (sorted)
      llvm::sort(v);
    for (auto &t : v)
      os << "[" << t[0] << "," << t[1] << "," << t[2] << "," << t[3] << "]";
  };
  auto ranksOf = [&](const json::Value &v) {
    if (const json::Array *a = v.getAsArray()) {
      SmallVector<int64_t> xs;
      for (const json::Value &x : *a)
        xs.push_back(x.getAsInteger().value_or(kNoRank));
      writeRanks(os, xs, rank);
    } else if (std::optional<int64_t> x = v.getAsInteger()) {
      os << relRank(*x, base, n);
    } else {
      os << v;
    }
  };
  for (const json::Value &nv : nodes) {
    const json::Object *node = nv.getAsObject();
    if (!node) {
      os << "?" << nv << ";";
      continue;
    }
    std::string op = opName(*node);
    // A sum does not depend on the order of its inputs.
    bool sum = op == "AllReducePrim" || op == "CROSS_DP_WRED";
    for (auto &[k, v] : *node) {
      StringRef key(k);
      // Keys length first: a key holding "=" or ";" writes no other keys.
      os << key.size() << ":" << key << "=";
      if (key == "in" || key == "out") {
        refs(v.getAsArray(), sum && key == "in");
      } else if (key == "group") {
        os << groupKey(v.getAsInteger().value_or(-1), base);
      } else if (key == "p2p" || key == "kwargs") {
        const json::Object *o = v.getAsObject();
        if (!o) {
          os << v;
        } else {
          // Keys in a fixed order; rank-valued ones renumbered.
          std::vector<std::pair<std::string, const json::Value *>> kv;
          for (auto &[kk, vv] : *o)
            kv.push_back({std::string(StringRef(kk)), &vv});
          llvm::sort(kv, [](auto &x, auto &y) { return x.first < y.first; });
          for (auto &[kk, vv] : kv) {
            os << kk.size() << ":" << kk << ":";
            if (kk == "src" || kk == "dst" || kk == "ranks")
              ranksOf(*vv);
            else
              os << *vv;
            os << ",";
          }
        }
      } else {
        os << v;
      }
      os << ";";
    }
    os << "\n";
  }
  return sig;
}

/// A JSON integer as written (`-`, then `0` or a digit 1-9 and digits).
static bool jsonInt(StringRef s, int64_t &x) {
  StringRef d = s.starts_with("-") ? s.drop_front() : s;
  if (d.empty() || (d[0] == '0' && d.size() > 1) ||
      !llvm::all_of(d, [](char c) { return c >= '0' && c <= '9'; }))
    return false;
  return !s.getAsInteger(10, x);
}

/// The elements of the array `v`, if every one is a plainly written JSON
/// integer (jsonInt).
static bool plainInts(StringRef buf, jsonscan::Span v,
                      SmallVectorImpl<int64_t> &out) {
  std::string ignored;
  return jsonscan::opens(buf, v, '[') &&
         jsonscan::elements(
             buf, v,
             [&](size_t, jsonscan::Span e) {
               int64_t x;
               if (!jsonInt(e.in(buf), x))
                 return false;
               out.push_back(x);
               return true;
             },
             ignored);
}

/// A JSON value's integer as llvm::json reads it (an integral number).
static std::optional<int64_t> intOf(StringRef raw) {
  int64_t x;
  if (jsonInt(raw, x))
    return x;
  llvm::Expected<json::Value> v = json::parse(raw);
  if (!v) {
    llvm::consumeError(v.takeError());
    return std::nullopt;
  }
  return v->getAsInteger();
}

/// A string at `p` of printable ASCII and the escapes other than \u, moved
/// past; `key`, when asked for, gets its content, which may then hold no
/// escape at all (so that equal bytes are equal keys).
static bool plainString(StringRef s, size_t &p, size_t end,
                        StringRef *key = nullptr) {
  if (p >= end || s[p] != '"')
    return false;
  size_t begin = ++p;
  for (; p < end; ++p) {
    unsigned char c = s[p];
    if (c == '"') {
      if (key)
        *key = s.slice(begin, p);
      ++p;
      return true;
    }
    if (c < 0x20 || c >= 0x80)
      return false;
    if (c == '\\') {
      if (key || p + 1 >= end)
        return false;
      char e = s[++p];
      if (e == 0 || !std::strchr("\"\\/bfnrt", e))
        return false;
    }
  }
  return false;
}

/// Whether the value at `p` is JSON in a plain subset that `llvm::json`
/// reads with no diagnostic and no choice: integers written plainly,
/// plainString strings, literals, arrays, objects without a repeated or
/// escaped key, nested at most 64 deep (parseSpan's bound). Moves past it.
static bool plainJson(StringRef s, size_t &p, size_t end, unsigned depth) {
  p = jsonscan::skipSpace(s, p);
  if (p >= end || depth > 64)
    return false;
  char c = s[p];
  if (c == '"')
    return plainString(s, p, end);
  if (c == '[' || c == '{') {
    char close = c == '[' ? ']' : '}';
    SmallVector<StringRef, 8> keys;
    p = jsonscan::skipSpace(s, p + 1);
    if (p < end && s[p] == close) {
      ++p;
      return true;
    }
    for (;;) {
      if (c == '{') {
        StringRef k;
        p = jsonscan::skipSpace(s, p);
        if (!plainString(s, p, end, &k) || llvm::is_contained(keys, k))
          return false;
        keys.push_back(k);
        p = jsonscan::skipSpace(s, p);
        if (p >= end || s[p] != ':')
          return false;
        ++p;
      }
      if (!plainJson(s, p, end, depth + 1))
        return false;
      p = jsonscan::skipSpace(s, p);
      if (p < end && s[p] == ',') {
        ++p;
        continue;
      }
      if (p < end && s[p] == close) {
        ++p;
        return true;
      }
      return false;
    }
  }
  size_t q = p;
  while (q < end && (std::isalnum((unsigned char)s[q]) || s[q] == '-'))
    ++q;
  StringRef token = s.slice(p, q);
  int64_t x;
  if (token == "true" || token == "false" || token == "null" ||
      jsonInt(token, x)) {
    p = q;
    return true;
  }
  return false;
}

std::optional<ScannedLineage> Importer::scanLineage(jsonscan::Span span) {
  using jsonscan::Span;
  StringRef buf = buffer;
  size_t p = span.begin;
  if (!plainJson(buf, p, span.end, 1) ||
      jsonscan::skipSpace(buf, p) != span.end || buf[span.begin] != '{')
    return std::nullopt;
  // Plain JSON from here on: the scans below cannot fail on its syntax.
  std::string ignored;
  auto tref = [&](Span v, TRef &t) {
    SmallVector<int64_t, 4> x;
    if (!plainInts(buf, v, x) || x.size() != 4)
      return false;
    t = {x[0], x[1], x[2], x[3]};
    return true;
  };
  ScannedLineage out;
  bool haveTs = false, haveSlices = false, ok = true;
  auto known = [](StringRef k) {
    return llvm::is_contained(kLineageKeys, k) ||
           llvm::is_contained(kLineageInfo, k);
  };
  jsonscan::members(
      buf, span,
      [&](StringRef key, Span v) {
        if (!known(key))
          return ok = false;
        if (key == "Ts")
          return ok = haveTs = tref(v, out.ts);
        if (key == "full_shape")
          return ok = plainInts(buf, v, out.fullShape.emplace());
        if (key != "slices")
          return true;
        haveSlices = true;
        return ok = jsonscan::opens(buf, v, '[') &&
                    jsonscan::elements(
                        buf, v,
                        [&](size_t, Span sv) {
                          ScannedLineage::Slice sl;
                          int seen = 0;
                          bool good =
                              jsonscan::opens(buf, sv, '{') &&
                              jsonscan::members(
                                  buf, sv,
                                  [&](StringRef k, Span x) {
                                    if (k == "slice") {
                                      ++seen;
                                      return jsonscan::opens(buf, x, '[') &&
                                             jsonscan::elements(
                                                 buf, x,
                                                 [&](size_t, Span r) {
                                                   SmallVector<int64_t, 2> b;
                                                   if (!plainInts(buf, r, b) ||
                                                       b.size() != 2)
                                                     return false;
                                                   sl.lo.push_back(b[0]);
                                                   sl.hi.push_back(b[1]);
                                                   return true;
                                                 },
                                                 ignored);
                                    }
                                    if (k != "eq_groups")
                                      return false;
                                    ++seen;
                                    return jsonscan::opens(buf, x, '[') &&
                                           jsonscan::elements(
                                               buf, x,
                                               [&](size_t, Span g) {
                                                 std::vector<TRef> grp;
                                                 bool refs =
                                                     jsonscan::opens(buf, g, '[') &&
                                                     jsonscan::elements(
                                                         buf, g,
                                                         [&](size_t, Span t) {
                                                           TRef r;
                                                           if (!tref(t, r) ||
                                                               r.rank < 0)
                                                             return false;
                                                           grp.push_back(r);
                                                           return true;
                                                         },
                                                         ignored);
                                                 if (!refs || grp.empty())
                                                   return false;
                                                 sl.groups.push_back(
                                                     std::move(grp));
                                                 return true;
                                               },
                                               ignored);
                                  },
                                  ignored);
                          if (!good || seen != 2)
                            return false;
                          out.slices.push_back(std::move(sl));
                          return true;
                        },
                        ignored);
      },
      ignored);
  if (!ok || !haveTs || !haveSlices)
    return std::nullopt;
  return out;
}

bool Importer::scanLineageBoxes(
    llvm::function_ref<void(size_t, int64_t, LineageBoxes)> fn) {
  using jsonscan::Span;
  StringRef buf = buffer;
  std::string ignored;
  auto isA = [&](Span v, char c) { return jsonscan::opens(buf, v, c); };
  // An escaped key may name a key the parser reads: the boxes are then
  // read parsed instead.
  bool plain = true;
  // The members of an object by key (the last of a repeated key, as the
  // parser keeps it).
  auto membersOf = [&](Span obj, std::map<StringRef, Span> &into) {
    return isA(obj, '{') && jsonscan::members(
                                buf, obj,
                                [&](StringRef k, Span v) {
                                  if (k.contains('\\'))
                                    plain = false;
                                  into[k] = v;
                                  return true;
                                },
                                ignored);
  };
  auto elementsOf = [&](Span arr, llvm::function_ref<void(Span)> each) {
    return isA(arr, '[') && jsonscan::elements(
                                buf, arr,
                                [&](size_t, Span v) {
                                  each(v);
                                  return true;
                                },
                                ignored);
  };
  (void)jsonscan::elements(
      buf, lineagesSpan,
      [&](size_t li, Span l) {
        // As jsonLineageBoxes reads a parsed lineage.
        std::map<StringRef, Span> keys;
        if (!membersOf(l, keys) || !keys.count("Ts") ||
            !keys.count("slices") || !isA(keys["slices"], '['))
          return true;
        SmallVector<std::optional<int64_t>, 4> ts;
        if (!elementsOf(keys["Ts"], [&](Span x) {
              ts.push_back(intOf(x.in(buf)));
            }) ||
            ts.size() != 4 || llvm::is_contained(ts, std::nullopt))
          return true;
        LineageBoxes boxes;
        elementsOf(keys["slices"], [&](Span sv) {
          std::vector<int64_t> b;
          std::map<StringRef, Span> slice;
          if (membersOf(sv, slice) && slice.count("slice"))
            elementsOf(slice["slice"], [&](Span dv) {
              elementsOf(dv, [&](Span x) {
                b.push_back(intOf(x.in(buf)).value_or(0));
              });
            });
          boxes.push_back(std::move(b));
        });
        fn(li, *ts[2], std::move(boxes));
        return true;
      },
      ignored);
  return plain;
}

bool Importer::scanSignature(jsonscan::Span nodes, int64_t rank,
                             std::string &sig, std::string &err) {
  using jsonscan::Span;
  const int64_t n = numRanks, base = rank / planRanks * planRanks;
  StringRef buf = buffer;
  llvm::raw_string_ostream os(sig);
  std::string ignored;
  // Cleared where the bytes are not plain enough to stand for their parse:
  // a value `signature` renumbers not written as a plain integer, or an
  // escaped key (the rank is then parsed).
  bool plain = true;
  auto raw = [&](Span v) { return v.in(buf); };
  auto isA = [&](Span v, char c) { return jsonscan::opens(buf, v, c); };
  // Bytes compared as they are, length first: no two sequences of them
  // write the same text.
  auto bytes = [&](StringRef b) { os << b.size() << ':' << b; };
  // A token the parser may read as an integer (renumbered), unless it is
  // written plainly.
  auto numeric = [&](Span v) {
    return isA(v, '-') || (v.begin < v.end && std::isdigit(buf[v.begin]));
  };
  // A list of tensor references: [rank, mb, tid, version] renumbered; an
  // element that is no list is written as it is.
  auto refs = [&](Span arr, bool sorted) {
    if (!isA(arr, '[')) {
      bytes(raw(arr));
      return;
    }
    std::vector<std::array<int64_t, 4>> v;
    plain = plain &&
            jsonscan::elements(
                buf, arr,
                [&](size_t, Span x) {
                  if (!isA(x, '[')) {
                    os << "?";
                    bytes(raw(x));
                    return true;
                  }
                  SmallVector<int64_t, 4> t;
                  if (!plainInts(buf, x, t) || t.size() != 4)
                    return false;
                  v.push_back({relRank(t[0], base, n), t[1], t[2], t[3]});
                  return true;
                },
                ignored);
    if (sorted)
      llvm::sort(v);
    for (auto &t : v)
      os << "[" << t[0] << "," << t[1] << "," << t[2] << "," << t[3] << "]";
  };
  // Rank-valued keys, as `signature` reads them.
  auto ranksOf = [&](Span v) {
    int64_t x;
    if (jsonInt(raw(v), x)) {
      os << relRank(x, base, n);
      return;
    }
    if (!isA(v, '[')) {
      if (numeric(v))
        plain = false;
      bytes(raw(v));
      return;
    }
    SmallVector<int64_t> xs;
    if (!plainInts(buf, v, xs)) {
      plain = false;
      return;
    }
    writeRanks(os, xs, rank);
  };
  auto membersOf = [&](Span obj,
                       SmallVectorImpl<std::pair<StringRef, Span>> &kv) {
    return isA(obj, '{') && jsonscan::members(
                                buf, obj,
                                [&](StringRef k, Span v) {
                                  if (k.contains('\\'))
                                    plain = false;
                                  kv.push_back({k, v});
                                  return true;
                                },
                                ignored);
  };
  bool ok = isA(nodes, '[') && jsonscan::elements(
      buf, nodes,
      [&](size_t, Span node) {
        SmallVector<std::pair<StringRef, Span>, 16> kv;
        if (!membersOf(node, kv)) {
          os << "?";
          bytes(raw(node));
          os << "\n";
          return true;
        }
        StringRef op;
        for (auto &[k, v] : kv)
          if (k == "opname")
            op = raw(v);
        // A sum does not depend on the order of its inputs.
        bool sum = op == "\"AllReducePrim\"" || op == "\"CROSS_DP_WRED\"";
        for (auto &[key, v] : kv) {
          bytes(key);
          os << "=";
          int64_t g;
          SmallVector<std::pair<StringRef, Span>, 8> o;
          if (key == "in" || key == "out") {
            refs(v, sum && key == "in");
          } else if (key == "group") {
            if (jsonInt(raw(v), g))
              os << groupKey(g, base);
            else if (numeric(v))
              plain = false;
            else
              bytes(raw(v));
          } else if ((key == "p2p" || key == "kwargs") && membersOf(v, o)) {
            llvm::stable_sort(
                o, [](auto &x, auto &y) { return x.first < y.first; });
            for (auto &[kk, vv] : o) {
              bytes(kk);
              os << ":";
              if (kk == "src" || kk == "dst" || kk == "ranks")
                ranksOf(vv);
              else
                bytes(raw(vv));
              os << ",";
            }
          } else {
            bytes(raw(v));
          }
          os << ";";
        }
        os << "\n";
        return true;
      },
      err);
  return ok && plain;
}

/// Appends " (key: message)" for each error the reference front end wrote.
static void quoteErrors(InFlightDiagnostic &d, const json::Object &errors) {
  for (auto &[k, v] : errors)
    if (auto s = v.getAsString())
      d << " (" << k.str() << ": " << *s << ")";
}

OwningOpRef<ModuleOp> Importer::run() {
  DiagnosticEngine::HandlerID longLines = addLongLineDiagnostics(ctx, file, buffer);
  llvm::scope_exit unregister(
      [&] { ctx->getDiagEngine().eraseHandler(longLines); });
  using jsonscan::Span;
  std::string err;
  Span root{0, buffer.size()};
  std::map<std::string, Span> top, gpTop;
  auto scanObject = [&](Span obj, std::map<std::string, Span> &into,
                        StringRef path) {
    bool ok = jsonscan::members(
        buffer, obj,
        [&](StringRef key, Span v) {
          into[key.str()] = v;
          return true;
        },
        err);
    if (!ok)
      error(path.str()) << "malformed JSON: " << err;
    return ok;
  };
  if (!scanObject(root, top, "$"))
    return {};
  {
    json::Object topKeys;
    for (auto &kv : top)
      topKeys[kv.first] = nullptr;
    if (failed(onlyKeys(topKeys, "$", keys::top, keys::topInfo)))
      return {};
  }
  std::optional<json::Value> format;
  if (top.count("format"))
    format = parseSpan(top["format"], "$.format");
  if (!format || format->getAsString() != std::optional<StringRef>(
                                              "verdict-plan-json/1")) {
    error("$.format") << "expected \"verdict-plan-json/1\"";
    return {};
  }
  if (!top.count("Gs") || !top.count("Gp")) {
    error("$") << "file needs the graphs 'Gs' and 'Gp'";
    return {};
  }
  // Without lineages, those of the inputs and outputs are derived from the
  // graphs (NnScalerDerive.cpp) when the only front-end error is about
  // lineages; the intermediates are then left to relation inference.
  bool derive = !top.count("lineages");
  if (derive) {
    std::optional<json::Value> errs;
    if (top.count("errors"))
      errs = parseSpan(top["errors"], "$.errors");
    const json::Object *eo = errs ? errs->getAsObject() : nullptr;
    bool onlyLineages = eo && llvm::all_of(*eo, [](const auto &kv) {
      return kv.first == "lineages";
    });
    InFlightDiagnostic d =
        onlyLineages ? emitWarning(fileLoc) : emitError(fileLoc);
    d << "nnscaler import: at $.lineages: the file has no lineages";
    if (eo)
      quoteErrors(d, *eo);
    if (!onlyLineages) {
      d << "; tv does not verify a plan without lineages when the reference "
           "front end reported other errors: refusing";
      return {};
    }
    d << "; tv derives the lineages of the inputs and the final weight "
         "gradients from the tensors' index maps and the nodes' cell ids "
         "(the theorem); --tv-stage-partition infers the intermediates";
  }
  if (top.count("errors") && !derive) {
    // The reference front end's own errors: any at all means its lineages
    // may be partial, and tv would verify less than the file claims.
    std::optional<json::Value> errs = parseSpan(top["errors"], "$.errors");
    if (!errs)
      return {};
    const json::Object *eo = errs->getAsObject();
    if (!eo) {
      error("$.errors") << "expected an object";
      return {};
    }
    if (!eo->empty()) {
      InFlightDiagnostic d = error("$.errors");
      d << "the reference front end reported errors";
      quoteErrors(d, *eo);
      d << "; its lineages may be partial: refusing";
      return {};
    }
  }
  std::optional<json::Value> gsVal = parseSpan(top["Gs"], "$.Gs");
  if (!gsVal)
    return {};
  const json::Object *gsObj = gsVal->getAsObject();
  if (!gsObj) {
    error("$.Gs") << "expected a graph object";
    return {};
  }
  // Gp: everything but its ranks is read whole; each rank's node list is
  // read when needed and dropped after.
  if (!scanObject(top["Gp"], gpTop, "$.Gp"))
    return {};
  json::Object gpObject;
  for (auto &[k, span] : gpTop) {
    if (k == "ranks")
      continue;
    std::optional<json::Value> v = parseSpan(span, "$.Gp." + k);
    if (!v)
      return {};
    gpObject[k] = std::move(*v);
  }
  const json::Object *gpObj = &gpObject;
  std::map<int64_t, Span> rankSpans;
  if (!gpTop.count("ranks")) {
    error("$.Gp") << "graph needs a 'ranks' object";
    return {};
  }
  {
    bool bad = false;
    bool ok = jsonscan::members(
        buffer, gpTop["ranks"],
        [&](StringRef key, Span v) {
          int64_t r;
          if (key.getAsInteger(10, r)) {
            error("$.Gp.ranks") << "rank '" << key << "' is not an integer";
            bad = true;
            return false;
          }
          rankSpans[r] = v;
          return true;
        },
        err);
    if (!ok && !bad)
      error("$.Gp.ranks") << "malformed JSON: " << err;
    if (!ok)
      return {};
  }

  const json::Object *world = gpObj->getObject("world");
  int64_t dp = world ? world->getInteger("num_dp").value_or(0) : 0;
  int64_t pp = world ? world->getInteger("num_pp").value_or(0) : 0;
  int64_t tp = world ? world->getInteger("num_tp").value_or(0) : 0;
  int64_t nmb = world ? world->getInteger("num_mb").value_or(0) : 0;
  if (dp < 1 || pp < 1 || tp < 1 || nmb < 1 || dp > (1 << 20) ||
      pp > (1 << 20) || tp > (1 << 20) || dp * pp * tp > (1 << 20)) {
    error("$.Gp.world") << "needs positive num_dp, num_pp, num_tp, num_mb "
                           "(at most 2^20 ranks)";
    return {};
  }
  {
    // Gp's ranks are read a rank at a time; its header is checked whole.
    json::Object gpKeys;
    for (auto &kv : gpTop)
      gpKeys[kv.first] = nullptr;
    if (failed(onlyKeys(gpKeys, "$.Gp", keys::graph, keys::graphInfo)) ||
        failed(onlyKeys(*gsObj, "$.Gs", keys::graph, keys::graphInfo)) ||
        failed(checkGraphHeader(*gpObj, "$.Gp", /*spec=*/false, {dp, pp, tp},
                                nmb)) ||
        failed(checkGraphHeader(*gsObj, "$.Gs", /*spec=*/true, {1, 1, 1}, 1)))
      return {};
  }
  groups = gpObj->getArray("collective_groups");
  planRanks = pp * tp;
  numRanks = dp * pp * tp;
  meshSizes = {dp, pp, tp};

  if (failed(loadTensors(*gsObj, gs, "$.Gs")) ||
      failed(loadTensors(*gpObj, gp, "$.Gp")))
    return {};
  const json::Object *gsRanks = gsObj->getObject("ranks");
  const json::Array *specNodes = gsRanks ? gsRanks->getArray("0") : nullptr;
  if (!specNodes) {
    error("$.Gs.ranks") << "the spec needs rank \"0\"";
    return {};
  }
  collectFlow(*specNodes, gs);
  propagate(gs);

  // Each rank's nodes, once: its element-type flow and its signature.
  // Ranks with equal signatures are translates of one another (data-parallel
  // replicas) and become one program.
  std::map<std::string, SmallVector<int64_t>> classOf;
  std::vector<std::string> classOrder;
  // Scanned signature -> the parsed signature of its first rank.
  std::unordered_map<std::string, std::string> scanClass;
  for (int64_t r = 0; r < numRanks; ++r) {
    auto it = rankSpans.find(r);
    if (it == rankSpans.end()) {
      error("$.Gp.ranks") << "rank " << r << " of the " << numRanks
                          << "-rank mesh has no node list";
      return {};
    }
    std::string path = "$.Gp.ranks." + std::to_string(r);
    // The signature from the bytes; the nodes are parsed only for the
    // first rank of each class (or where the bytes do not scan, so that
    // the parser says what is wrong with them).
    std::string sig, scanError;
    bool scanned = scanSignature(it->second, r, sig, scanError);
    if (scanned) {
      auto found = scanClass.find(sig);
      if (found != scanClass.end()) {
        classOf[found->second].push_back(r);
        continue;
      }
    }
    std::optional<json::Value> nodes = parseSpan(it->second, path);
    if (!nodes)
      return {};
    const json::Array *arr = nodes->getAsArray();
    if (!arr) {
      error(path) << "expected a list of nodes";
      return {};
    }
    collectFlow(*arr, gp);
    std::string full = signature(*arr, r);
    if (scanned)
      scanClass.try_emplace(std::move(sig), full);
    auto [c, fresh] = classOf.try_emplace(std::move(full));
    if (fresh)
      classOrder.push_back(c->first);
    c->second.push_back(r);
  }
  propagate(gp);

  // Owned here: every error path below frees it (ASan's leak check).
  OwningOpRef<ModuleOp> owned = ModuleOp::create(fileLoc);
  module = *owned;
  b.setInsertionPointToEnd(module.getBody());
  MeshOp::create(b, fileLoc, "mesh", b.getStrArrayAttr({"dp", "pp", "tp"}),
                 b.getDenseI64ArrayAttr({dp, pp, tp}));

  // Spec outputs: the final versions of the weight gradients.
  if (const json::Object *g2w = gsObj->getObject("grad_to_weight")) {
    const json::Object *maxv = gsObj->getObject("max_version");
    const json::Object *maxv0 = maxv ? maxv->getObject("0") : nullptr;
    for (auto &[k, v] : *g2w) {
      int64_t tid;
      if (StringRef(k).getAsInteger(10, tid))
        continue;
      int64_t ver = maxv0 ? maxv0->getInteger(k).value_or(1) : 1;
      specOutputs.insert(name(TRef{0, -1, tid, ver}, true));
    }
  }

  // Spec.
  auto spec = SpecOp::create(b, fileLoc, "spec");
  Prog sp;
  sp.block = new Block();
  spec.getBody().push_back(sp.block);
  sp.rank = -1;
  // Node locations: the spec's node list inside Gs.ranks."0".
  std::vector<jsonscan::Span> specSpans;
  {
    std::map<std::string, Span> gsTop, gsRanks;
    std::string ignored;
    auto collect = [&](Span obj, std::map<std::string, Span> &into) {
      return jsonscan::members(
          buffer, obj,
          [&](StringRef key, Span v) {
            into[key.str()] = v;
            return true;
          },
          ignored);
    };
    if (collect(top["Gs"], gsTop) && gsTop.count("ranks") &&
        collect(gsTop["ranks"], gsRanks) && gsRanks.count("0"))
      specSpans = nodeSpans(gsRanks["0"]);
  }
  for (auto [i, nv] : llvm::enumerate(*specNodes)) {
    const json::Object *node = nv.getAsObject();
    std::string path = "$.Gs.ranks.0[" + std::to_string(i) + "]";
    nodeFileLoc = i < specSpans.size()
                      ? locationAt(specSpans[i].begin)
                      : UnknownLoc::get(ctx);
    if (!node) {
      error(path) << "expected a node object";
      return {};
    }
    if (failed(emitNode(sp, gs, *node, path)))
      return {};
  }

  // Plan: one program per class of translated ranks, in execution order.
  b.setInsertionPointToEnd(module.getBody());
  auto plan = PlanOp::create(b, fileLoc, b.getStringAttr("plan"),
                             FlatSymbolRefAttr::get(ctx, "mesh"),
                             b.getI64IntegerAttr(nmb), /*folded=*/ArrayAttr(),
                             /*folded_micro_batches=*/UnitAttr());
  Block *planBody = new Block();
  plan.getBody().push_back(planBody);
  for (const std::string &sig : classOrder) {
    SmallVector<int64_t> &ranks = classOf[sig];
    int64_t r = ranks.front();
    std::string path = "$.Gp.ranks." + std::to_string(r);
    std::optional<json::Value> nodes = parseSpan(rankSpans[r], path);
    if (!nodes)
      return {};
    OpBuilder pb = OpBuilder::atBlockEnd(planBody);
    auto prog = RankProgramOp::create(pb, fileLoc, ranks);
    Prog pr;
    pr.block = new Block();
    prog.getBody().push_back(pr.block);
    pr.rank = r;
    pr.ranks = ranks;
    std::vector<jsonscan::Span> spans = nodeSpans(rankSpans[r]);
    for (auto [i, nv] : llvm::enumerate(*nodes->getAsArray())) {
      const json::Object *node = nv.getAsObject();
      std::string npath = path + "[" + std::to_string(i) + "]";
      nodeFileLoc =
          i < spans.size() ? locationAt(spans[i].begin) : UnknownLoc::get(ctx);
      if (!node) {
        error(npath) << "expected a node object";
        return {};
      }
      if (failed(emitNode(pr, gp, *node, npath)))
        return {};
    }
    for (int64_t m : ArrayRef<int64_t>(ranks).drop_front()) {
      namesByRank[m] = namesByRank[r];
      inputNames[m] = inputNames[r];
    }
  }
  // The file's lineages: with `fast`, scanned where their bytes are plain;
  // the others parsed (the parser's diagnostic for what is wrong with them).
  auto scannedWalk =
      [&](llvm::function_ref<LogicalResult(size_t, const json::Value &)> parsed,
          llvm::function_ref<LogicalResult(size_t, const ScannedLineage &)>
              fast) -> LogicalResult {
    std::string err;
    bool failedInside = false;
    bool ok = jsonscan::elements(
        buffer, top["lineages"],
        [&](size_t i, Span v) {
          if (std::optional<ScannedLineage> l =
                  fast ? scanLineage(v) : std::nullopt) {
            if (succeeded(fast(i, *l)))
              return true;
            failedInside = true;
            return false;
          }
          std::optional<json::Value> l =
              parseSpan(v, "$.lineages[" + std::to_string(i) + "]");
          if (!l || failed(parsed(i, *l))) {
            failedInside = true;
            return false;
          }
          return true;
        },
        err);
    if (!ok && !failedInside)
      error("$.lineages") << "malformed JSON: " << err;
    return success(ok);
  };
  auto walk = [&](llvm::function_ref<LogicalResult(size_t, const json::Value &)>
                      fn) { return scannedWalk(fn, {}); };
  json::Array derived;
  if (derive) {
    module->setAttr(kInferIntermediatesAttrName, UnitAttr::get(ctx));
    if (failed(deriveLineages(*specNodes, *gsObj, *gpObj, rankSpans, nmb,
                              derived)))
      return {};
    if (failed(emitLineages(
            [&](llvm::function_ref<LogicalResult(size_t, const json::Value &)>
                    fn) -> LogicalResult {
              for (auto [i, l] : llvm::enumerate(derived))
                if (failed(fn(i, l)))
                  return failure();
              return success();
            })))
      return {};
  } else if (lineagesSpan = top["lineages"];
             failed(emitLineages(
                 walk,
                 [&](llvm::function_ref<void(size_t, int64_t, LineageBoxes)>
                         fn) { return scanLineageBoxes(fn); },
                 scannedWalk))) {
    return {};
  }
  if (failed(verify(module)) || failed(checkLineages(module)))
    return {};
  return owned;
}

namespace mlir::tv {
OwningOpRef<Operation *> importNnScalerJson(llvm::SourceMgr &sourceMgr,
                                           MLIRContext *ctx) {
  ctx->loadDialect<TVDialect>();
  const llvm::MemoryBuffer *buf =
      sourceMgr.getMemoryBuffer(sourceMgr.getMainFileID());
  Importer importer(ctx, buf->getBufferIdentifier(), buf->getBuffer());
  OwningOpRef<ModuleOp> m = importer.run();
  if (!m)
    return {};
  return OwningOpRef<Operation *>(m.release());
}
} // namespace mlir::tv


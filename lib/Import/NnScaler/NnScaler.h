//===- NnScaler.h - the nnScaler plan importer's state ----------*- C++ -*-===//
//
// Shared by the reader (NnScalerImport.cpp: the file and ranks;
// NnScalerLineages.cpp: lineages), the
// tensors (NnScalerValues.cpp: names, types, reading and defining values)
// and the node translation (NnScalerNodes.cpp: one tv op sequence per node).
// Internal to lib/Translate.
//
//===----------------------------------------------------------------------===//
#ifndef TRAINVERIFY_TRANSLATE_NNSCALER_H
#define TRAINVERIFY_TRANSLATE_NNSCALER_H

#include "TrainVerify/Import/JsonInput.h"
#include "TrainVerify/Dialect/TVOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/JSON.h"
#include <map>
#include <set>

namespace mlir::tv::nnscaler {
namespace json = llvm::json;


struct TRef {
  int64_t rank = 0, mb = 0, tid = 0, v = 0;
  bool operator<(const TRef &o) const {
    return std::tie(rank, mb, tid, v) < std::tie(o.rank, o.mb, o.tid, o.v);
  }
  bool operator==(const TRef &o) const {
    return rank == o.rank && mb == o.mb && tid == o.tid && v == o.v;
  }
};

/// A tensor key within one program (rank implied); part 1/2 are the real and
/// imaginary halves of a complex tensor.
using Key = std::tuple<int64_t, int64_t, int64_t, int>;

/// What one node says about element types (see Importer::collectFlow).
struct TypeFlow {
  enum Kind : uint8_t { None, Ids, Mask, Move } kind = None;
  SmallVector<int64_t, 2> in, out;
};

/// Calls its argument for each lineage, in order, with its index.
using LineageWalk = llvm::function_ref<LogicalResult(
    llvm::function_ref<LogicalResult(size_t, const json::Value &)>)>;
/// A lineage's keys. `Tps` restates the members of `eq_groups`; `src`,
/// `stage_known`, `snodes`, `pnodes` and `depends_on` are VERDICT's
/// stage-cutting hints (tv cuts its own stages); `id` names the lineage.
inline constexpr llvm::StringRef kLineageKeys[] = {"Ts", "slices",
                                                   "full_shape"};
inline constexpr llvm::StringRef kLineageInfo[] = {
    "id", "src", "Tps", "stage_known", "snodes", "pnodes", "depends_on"};

/// A lineage read by the scanner: what its statements need, from bytes
/// that `llvm::json` would read alike (Importer::scanLineage).
struct ScannedLineage {
  TRef ts;
  std::optional<SmallVector<int64_t, 4>> fullShape;
  struct Slice {
    SmallVector<int64_t, 4> lo, hi;
    std::vector<std::vector<TRef>> groups;
  };
  std::vector<Slice> slices;
};
/// Calls the first function with each lineage the scanner cannot read
/// (parsed), the second with each it can, in order, with its index.
using LineageScanWalk = llvm::function_ref<LogicalResult(
    llvm::function_ref<LogicalResult(size_t, const json::Value &)>,
    llvm::function_ref<LogicalResult(size_t, const ScannedLineage &)>)>;
/// A lineage's slices as boxes: lo0, hi0, lo1, hi1, ... each.
using LineageBoxes = std::vector<std::vector<int64_t>>;
/// Calls its argument, in order, with each lineage's index, its spec
/// tensor id and its slices' boxes (lineages without them are skipped);
/// false when it could not read them all as a parser would (the caller
/// then reads them parsed).
using LineageBoxWalk = llvm::function_ref<bool(
    llvm::function_ref<void(size_t, int64_t, LineageBoxes)>)>;

struct GraphInfo {
  const json::Object *graph = nullptr;
  std::map<int64_t, SmallVector<int64_t>> shape;
  std::set<int64_t> initial, ids, masks, complexTids;
  std::vector<TypeFlow> flow;
};

struct Prog {
  Block *block = nullptr;
  int64_t rank = -1; // -1: the spec; else the program's first rank
  SmallVector<int64_t> ranks; // every rank that runs the program
  std::map<Key, Value> values;
  Operation *lastInput = nullptr;
};

class Importer {
public:
  Importer(MLIRContext *ctx, StringRef file, StringRef buffer)
      : ctx(ctx), file(file.str()), buffer(buffer),
        fileLoc(FileLineColLoc::get(ctx, file, 0, 0)), b(ctx) {}
  OwningOpRef<ModuleOp> run();

private:
  InFlightDiagnostic error(const std::string &path) {
    InFlightDiagnostic d = emitError(fileLoc);
    d << "nnscaler import: at " << path << ": ";
    return d;
  }
  /// Refuses a key of `o` that is neither modeled nor descriptive (the
  /// format's keys that do not change the math: docs/nnscaler-import.md,
  /// "Keys").
  LogicalResult onlyKeys(const json::Object &o, const std::string &path,
                         ArrayRef<StringRef> modeled,
                         ArrayRef<StringRef> descriptive,
                         std::optional<Location> at = std::nullopt) {
    std::optional<std::string> k = unknownKey(o, modeled, descriptive);
    if (!k)
      return success();
    InFlightDiagnostic d = emitError(at ? *at : fileLoc);
    d << "nnscaler import: at " << path << "." << *k << ": unknown key '"
      << *k << "' (" << knownKeysText(modeled, descriptive) << "); refusing";
    return failure();
  }
  LogicalResult checkGraphHeader(const json::Object &g, const std::string &path,
                                 bool spec, ArrayRef<int64_t> dpPpTp,
                                 int64_t nmb);
  LogicalResult loadTensors(const json::Object &g, GraphInfo &info,
                            StringRef path);
  void collectFlow(const json::Array &nodes, GraphInfo &info);
  void propagate(GraphInfo &info);
  std::string name(const TRef &t, bool spec, int part = 0) const;
  RankedTensorType typeOf(const GraphInfo &g, const TRef &t) const;
  FailureOr<Value> get(Prog &p, GraphInfo &g, const TRef &t, int part,
                       const std::string &path, Location loc);
  void define(Prog &p, const TRef &t, Value v, int part = 0);
  LogicalResult emitNode(Prog &p, GraphInfo &g, const json::Object &node,
                         const std::string &path);
  /// A MovePrim or BroadcastPrim node (`op`) as sends and receives
  /// (NnScalerTransfers.cpp); `in` reads input i.
  LogicalResult emitTransfer(Prog &p, GraphInfo &g, const json::Object &n,
                             StringRef op, const std::string &path,
                             Location loc, ArrayRef<TRef> ins,
                             ArrayRef<TRef> outs,
                             llvm::function_ref<FailureOr<Value>(size_t)> in);
  /// Warns at the nodes that read a plan tensor claimed by two spec tensors.
  void warnConflictingClaims(
      const std::map<std::pair<std::string, int64_t>, std::set<std::string>>
          &claims);
  /// `boxes`, when given, reads the same boxes as `walk` does, faster.
  LogicalResult emitLineages(LineageWalk walk, LineageBoxWalk boxes = {},
                             LineageScanWalk scanned = {});
  /// The lineage at `span` when its bytes are plain and complete (every
  /// key known, every reference and bound a plain integer); otherwise
  /// nothing, and the caller parses it.
  std::optional<ScannedLineage> scanLineage(jsonscan::Span span);
  /// The boxes of the lineages in the file, scanned without a document.
  bool scanLineageBoxes(
      llvm::function_ref<void(size_t, int64_t, LineageBoxes)> fn);
  jsonscan::Span lineagesSpan;
  /// The lineages of the inputs and final weight gradients, in VERDICT's
  /// format, from the tensors' index maps and the nodes' cell ids (a file
  /// without lineages); after the programs are emitted.
  LogicalResult deriveLineages(const json::Array &specNodes,
                               const json::Object &gsObj,
                               const json::Object &gpObj,
                               const std::map<int64_t, jsonscan::Span> &rankSpans,
                               int64_t nmb, json::Array &out);
  /// The gradient `g` summed over the dimensions along which an operand of
  /// shape `target` was broadcast; refused (at `path`) unless `target`
  /// broadcasts to g's shape.
  FailureOr<Value> unbroadcast(Location loc, Value g, ArrayRef<int64_t> target,
                               const std::string &path);

  std::optional<json::Value> parseSpan(jsonscan::Span span,
                                       const std::string &path);
  /// The file location of a byte offset (line and column, 1-based), or
  /// unknown on a line too long to quote in a diagnostic.
  Location locationAt(size_t offset);
  /// The element spans of the node list at `list` (empty if it is not one).
  std::vector<jsonscan::Span> nodeSpans(jsonscan::Span list);
  std::string signature(const json::Array &nodes, int64_t rank);
  /// Ranks as `signature` writes them (kNoRank for a value that is none):
  /// the first replica's shifted to `rank`'s, then renumbered from it.
  static constexpr int64_t kNoRank = -999;
  void writeRanks(llvm::raw_ostream &os, SmallVectorImpl<int64_t> &xs,
                  int64_t rank);
  /// The same classes of ranks from the node list's bytes, without a
  /// document: every value it does not renumber is compared as written,
  /// so ranks with equal scanned signatures parse to equal signatures.
  /// Fails (with `error` set) where the bytes are not a list of objects.
  bool scanSignature(jsonscan::Span nodes, int64_t rank, std::string &sig,
                     std::string &error);
  /// A group's members as `signature` writes them, by (index, base).
  const std::string &groupKey(int64_t index, int64_t base);
  std::map<std::pair<int64_t, int64_t>, std::string> groupMembers;
  ArrayAttr classGroups(const Prog &p, ArrayRef<int64_t> members);

  MLIRContext *ctx;
  std::string file;
  StringRef buffer;
  std::vector<size_t> lineStarts; // byte offset of each line, built lazily
  Location fileLoc;
  /// Where the node being translated is in the file (unknown if it cannot
  /// be quoted); its label names it either way.
  Location nodeFileLoc = fileLoc;
  OpBuilder b;
  ModuleOp module;
  GraphInfo gs, gp;
  std::set<std::string> specOutputs;
  std::set<std::string> specNames;
  std::map<int64_t, std::set<std::string>> namesByRank;
  /// Program inputs by rank (-1: the spec).
  std::map<int64_t, std::set<std::string>> inputNames;
  const json::Array *groups = nullptr;
  int64_t planRanks = 0; // ranks of one data-parallel replica (pp * tp)
  int64_t numRanks = 0;
  SmallVector<int64_t> meshSizes; // dp, pp, tp
};


inline bool parseTRef(const json::Value *v, TRef &t) {
  const json::Array *a = v ? v->getAsArray() : nullptr;
  if (!a || a->size() != 4)
    return false;
  std::optional<int64_t> x[4];
  for (int i = 0; i < 4; ++i)
    if (!(x[i] = (*a)[i].getAsInteger()))
      return false;
  t = {*x[0], *x[1], *x[2], *x[3]};
  return true;
}

inline std::string opName(const json::Object &n) {
  if (auto s = n.getString("opname"))
    return s->str();
  return "";
}

inline std::string nodeLabel(const json::Object &n, int64_t rank) {
  std::string s = rank < 0 ? "spec" : "r" + std::to_string(rank);
  s += ":mb" + std::to_string(n.getInteger("mb").value_or(0));
  s += ":cid" + std::to_string(n.getInteger("cid").value_or(-1));
  if (auto ir = n.getString("irname"))
    s += ":" + ir->str();
  return s;
}

/// The node as an attribute: without the rank, so that symmetric ranks stay
/// identical (diagnostics print the rank separately).
inline std::string nodeAttr(const json::Object &n) {
  std::string s = "cid" + std::to_string(n.getInteger("cid").value_or(-1));
  if (auto ir = n.getString("irname"))
    s += ":" + ir->str();
  return s;
}

} // namespace mlir::tv::nnscaler

#endif

//===- TVDialect.cpp - tv dialect and attributes --------------------------===//
#include "TrainVerify/Dialect/TVOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"
#include <numeric>

using namespace mlir;
using namespace mlir::tv;

#include "TrainVerify/Dialect/TVOpsDialect.cpp.inc"
#include "TrainVerify/Dialect/TVOpsEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "TrainVerify/Dialect/TVAttrs.cpp.inc"

void TVDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "TrainVerify/Dialect/TVOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "TrainVerify/Dialect/TVAttrs.cpp.inc"
      >();
}

void PhaseClock::record(StringRef phase, TimePoint start, TimePoint end) {
  std::lock_guard<std::mutex> lock(mutex);
  auto [it, inserted] = spans.try_emplace(phase, Span{start, end, 0});
  if (inserted)
    return;
  Span &s = it->second;
  if (start <= s.end) { // overlaps the current span: extend it
    s.start = std::min(s.start, start);
    s.end = std::max(s.end, end);
    return;
  }
  s.earlier += std::chrono::duration<double>(s.end - s.start).count();
  s.start = start;
  s.end = end;
}

double PhaseClock::seconds(StringRef phase) const {
  std::lock_guard<std::mutex> lock(mutex);
  auto it = spans.find(phase);
  if (it == spans.end())
    return 0;
  const Span &s = it->second;
  return s.earlier + std::chrono::duration<double>(s.end - s.start).count();
}

bool PhaseClock::has(StringRef phase) const {
  std::lock_guard<std::mutex> lock(mutex);
  return spans.count(phase);
}

//===----------------------------------------------------------------------===//
// LineageAttr
//===----------------------------------------------------------------------===//

// Syntax: <"spec"[l0:u0, l1:u1] = ["p":0 + "p":1] | ["p":2]>
Attribute LineageAttr::parse(AsmParser &parser, Type) {
  MLIRContext *ctx = parser.getContext();
  std::string spec;
  SmallVector<int64_t> lower, upper;
  if (parser.parseLess() || parser.parseString(&spec) || parser.parseLSquare())
    return {};
  if (failed(parser.parseOptionalRSquare())) {
    do {
      int64_t lo, hi;
      if (parser.parseInteger(lo) || parser.parseColon() ||
          parser.parseInteger(hi))
        return {};
      lower.push_back(lo);
      upper.push_back(hi);
    } while (succeeded(parser.parseOptionalComma()));
    if (parser.parseRSquare())
      return {};
  }
  if (parser.parseEqual())
    return {};
  SmallVector<Attribute> groups;
  std::string replicaName;
  SmallVector<int64_t> replicaRanks;
  bool replicas = false;
  do {
    if (replicas) // a replicas list ends the groups
      return parser.emitError(parser.getCurrentLocation(),
                              "a replicas list must be the last group"),
             Attribute();
    // `"x":[0, 4]`: replicas of one tensor, a group per rank.
    if (failed(parser.parseOptionalLSquare())) {
      replicas = true;
      if (parser.parseString(&replicaName) || parser.parseColon() ||
          parser.parseCommaSeparatedList(AsmParser::Delimiter::Square, [&] {
            return parser.parseInteger(replicaRanks.emplace_back());
          }))
        return {};
      continue;
    }
    SmallVector<Attribute> refs;
    do {
      std::string name;
      int64_t rank;
      if (parser.parseString(&name) || parser.parseColon() ||
          parser.parseInteger(rank))
        return {};
      refs.push_back(PlanRefAttr::get(ctx, name, rank));
    } while (succeeded(parser.parseOptionalPlus()));
    if (parser.parseRSquare())
      return {};
    groups.push_back(ArrayAttr::get(ctx, refs));
  } while (succeeded(parser.parseOptionalVerticalBar()));
  SmallVector<int64_t> scale;
  if (succeeded(parser.parseOptionalKeyword("scaled"))) {
    int64_t num, den = 1;
    if (parser.parseInteger(num))
      return {};
    if (succeeded(parser.parseOptionalSlash()) && parser.parseInteger(den))
      return {};
    if (num != 1 || den != 1) // a factor of 1 is no factor
      scale = {num, den};
  }
  if (parser.parseGreater())
    return {};
  return parser.getChecked<LineageAttr>(
      ctx, StringAttr::get(ctx, spec), lower, upper, ArrayAttr::get(ctx, groups),
      replicas ? StringAttr::get(ctx, replicaName) : StringAttr(),
      replicaRanks, scale);
}

void LineageAttr::print(AsmPrinter &printer) const {
  printer << "<";
  printer.printString(getSpec().getValue());
  printer << "[";
  for (unsigned i = 0, e = getRank(); i < e; ++i) {
    if (i)
      printer << ", ";
    printer << getLower()[i] << ":" << getUpper()[i];
  }
  printer << "] = ";
  llvm::interleave(
      getGroups(), printer,
      [&](Attribute group) {
        printer << "[";
        llvm::interleave(
            cast<ArrayAttr>(group), printer,
            [&](Attribute ref) {
              auto r = cast<PlanRefAttr>(ref);
              printer.printString(r.getName());
              printer << ":" << r.getRank();
            },
            " + ");
        printer << "]";
      },
      " | ");
  if (getReplicaName()) {
    if (!getGroups().empty())
      printer << " | ";
    printer.printString(getReplicaName().getValue());
    printer << ":[";
    llvm::interleaveComma(getReplicaRanks(), printer);
    printer << "]";
  }
  if (isScaled()) {
    auto [n, d] = getScaleFraction();
    printer << " scaled " << n;
    if (d != 1)
      printer << "/" << d;
  }
  printer << ">";
}

LogicalResult
LineageAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                    StringAttr spec, ArrayRef<int64_t> lower,
                    ArrayRef<int64_t> upper, ArrayAttr groups,
                    StringAttr replicaName, ArrayRef<int64_t> replicaRanks,
                    ArrayRef<int64_t> scale) {
  if (!spec || spec.getValue().empty())
    return emitError() << "lineage needs a spec tensor name";
  if (!scale.empty()) {
    if (scale.size() != 2)
      return emitError() << "lineage scale must be a numerator and a "
                            "denominator";
    if (scale[0] == 0 || scale[1] <= 0)
      return emitError() << "lineage scale " << scale[0] << "/" << scale[1]
                         << " must be a non-zero fraction with a positive "
                            "denominator";
    if (std::gcd(scale[0], scale[1]) != 1)
      return emitError() << "lineage scale " << scale[0] << "/" << scale[1]
                         << " is not in lowest terms";
  }
  if (lower.size() != upper.size())
    return emitError() << "lineage slice bounds have different ranks";
  for (unsigned i = 0; i < lower.size(); ++i)
    if (lower[i] < 0 || lower[i] >= upper[i])
      return emitError() << "lineage slice dimension " << i << " is empty or "
                         << "negative: " << lower[i] << ":" << upper[i];
  if (replicaName) {
    if (replicaName.getValue().empty())
      return emitError() << "replicas need a plan tensor name";
    if (replicaRanks.empty())
      return emitError() << "replicas of '" << replicaName.getValue()
                         << "' name no rank";
    for (int64_t r : replicaRanks)
      if (r < 0)
        return emitError() << "plan reference to negative rank " << r;
  } else if (!replicaRanks.empty()) {
    return emitError() << "replica ranks without a plan tensor name";
  }
  if (groups.empty() && !replicaName)
    return emitError() << "lineage of '" << spec.getValue()
                       << "' has no plan tensor group";
  for (Attribute group : groups) {
    auto refs = dyn_cast<ArrayAttr>(group);
    if (!refs || refs.empty())
      return emitError() << "lineage group must be a non-empty list of plan "
                            "references";
    for (Attribute ref : refs) {
      auto r = dyn_cast<PlanRefAttr>(ref);
      if (!r)
        return emitError() << "lineage group holds a non-reference " << ref;
      if (r.getRank() < 0)
        return emitError() << "plan reference to negative rank "
                           << r.getRank();
      if (r.getName().empty())
        return emitError() << "plan reference needs a tensor name";
    }
  }
  return success();
}

SmallVector<int64_t> LineageAttr::getSliceShape() const {
  SmallVector<int64_t> shape;
  for (unsigned i = 0; i < getRank(); ++i)
    shape.push_back(getUpper()[i] - getLower()[i]);
  return shape;
}

SmallVector<SmallVector<PlanRefAttr>> LineageAttr::getGroupRefs() const {
  SmallVector<SmallVector<PlanRefAttr>> result;
  MLIRContext *ctx = getContext();
  walkGroups([&](size_t, ArrayRef<PlanRefView> refs) {
    auto &out = result.emplace_back();
    for (const PlanRefView &r : refs)
      out.push_back(PlanRefAttr::get(ctx, r.name, r.rank));
  });
  return result;
}

size_t LineageAttr::getNumGroups() const {
  return getGroups().size() + getReplicaRanks().size();
}

LineageAttr LineageAttr::withBox(ArrayRef<int64_t> lower,
                                 ArrayRef<int64_t> upper) const {
  return LineageAttr::get(getContext(), getSpec(), lower, upper, getGroups(),
                          getReplicaName(), getReplicaRanks(), getScale());
}

void LineageAttr::walkGroups(
    function_ref<void(size_t, ArrayRef<PlanRefView>)> fn) const {
  LineageView(*this).walkGroups(fn);
}

void LineageAttr::walkRefs(function_ref<void(size_t, PlanRefView)> fn) const {
  LineageView(*this).walkRefs(fn);
}

void LineageView::walkGroups(
    function_ref<void(size_t, ArrayRef<PlanRefView>)> fn) const {
  size_t index = 0;
  SmallVector<PlanRefView, 4> refs;
  if (groups)
    for (Attribute group : groups) {
      refs.clear();
      for (Attribute a : cast<ArrayAttr>(group)) {
        auto ref = cast<PlanRefAttr>(a);
        refs.push_back({ref.getName(), ref.getRank()});
      }
      fn(index++, refs);
    }
  if (replicaName)
    for (int64_t rank : getReplicaRanks()) {
      PlanRefView one{replicaName.getValue(), rank};
      fn(index++, one);
    }
}

void LineageView::walkRefs(function_ref<void(size_t, PlanRefView)> fn) const {
  walkGroups([&](size_t g, ArrayRef<PlanRefView> refs) {
    for (const PlanRefView &r : refs)
      fn(g, r);
  });
}

LineageAttr LineageView::toAttr(MLIRContext *ctx) const {
  return LineageAttr::get(ctx, spec, getLower(), getUpper(),
                          groups ? groups : ArrayAttr::get(ctx, {}),
                          replicaName, getReplicaRanks(), getScale());
}

/// The reduction kind of `tv.all_reduce` as a bare keyword (`sum`).
static ParseResult parseReduceKindKeyword(OpAsmParser &parser,
                                          ReduceKindAttr &kind) {
  StringRef word;
  SMLoc loc = parser.getCurrentLocation();
  if (parser.parseKeyword(&word))
    return failure();
  std::optional<ReduceKind> k = symbolizeReduceKind(word);
  if (!k)
    return parser.emitError(loc) << "expected a reduction kind (sum, avg, "
                                    "max, min, band, bor or bxor), got '"
                                 << word << "'";
  kind = ReduceKindAttr::get(parser.getContext(), *k);
  return success();
}
static void printReduceKindKeyword(OpAsmPrinter &printer, Operation *,
                                   ReduceKindAttr kind) {
  printer << stringifyReduceKind(kind.getValue());
}

static ParseResult parseIntFnKeyword(OpAsmParser &parser, IntFnAttr &fn) {
  StringRef word;
  SMLoc loc = parser.getCurrentLocation();
  if (parser.parseKeyword(&word))
    return failure();
  std::optional<IntFn> f = symbolizeIntFn(word);
  if (!f)
    return parser.emitError(loc)
           << "expected an integer operation (andi, ori, xori, maxsi, minsi, "
              "maxui, minui, shli, shrsi or shrui), got '"
           << word << "'";
  fn = IntFnAttr::get(parser.getContext(), *f);
  return success();
}
static void printIntFnKeyword(OpAsmPrinter &printer, Operation *,
                              IntFnAttr fn) {
  printer << stringifyIntFn(fn.getValue());
}

#define GET_OP_CLASSES
#include "TrainVerify/Dialect/TVOps.cpp.inc"

//===----------------------------------------------------------------------===//
// LineageMapAttr
//===----------------------------------------------------------------------===//

LogicalResult
LineageMapAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                       StringAttr spec, AffineMapAttr blocks,
                       ArrayRef<int64_t> shape, ArrayRef<int64_t> scale,
                       StringAttr plan, FlatSymbolRefAttr mesh,
                       DictionaryAttr where) {
  if (!spec || spec.getValue().empty())
    return emitError() << "lineage map needs a spec tensor name";
  if (!plan || plan.getValue().empty())
    return emitError() << "lineage map needs a plan tensor name";
  if (!blocks || !mesh || !where)
    return emitError() << "lineage map needs blocks, a mesh and where";
  AffineMap map = blocks.getValue();
  if (map.getNumSymbols() != 0)
    return emitError() << "lineage map's blocks map must not have symbols";
  if (map.getNumResults() != shape.size())
    return emitError() << "lineage map's blocks map has "
                       << map.getNumResults() << " results but the shape has "
                       << shape.size() << " dimensions";
  for (int64_t n : shape)
    if (n < 1)
      return emitError() << "lineage map's block shape must be positive, got "
                         << n;
  if (!scale.empty() &&
      failed(LineageAttr::verify(emitError, spec, {}, {},
                                 ArrayAttr::get(spec.getContext(), {}), plan,
                                 {0}, scale)))
    return failure();
  for (NamedAttribute w : where) {
    auto v = dyn_cast<IntegerAttr>(w.getValue());
    // (A coordinate wider than 64 bits would be read truncated.)
    if (!v || v.getValue().getSignificantBits() > 64 || v.getInt() < 0)
      return emitError() << "lineage map's where: coordinate of axis '"
                         << w.getName().getValue()
                         << "' must be a non-negative integer";
  }
  return success();
}

static ParseResult parseIntList(AsmParser &parser,
                                SmallVectorImpl<int64_t> &out) {
  return parser.parseCommaSeparatedList(
      AsmParser::Delimiter::Square, [&]() -> ParseResult {
        int64_t v;
        if (parser.parseInteger(v))
          return failure();
        out.push_back(v);
        return success();
      });
}

// Syntax: <"spec" blocks MAP shape [a, b] (scaled [p, q])? = "plan" on @mesh
//          where {axis = c}>
Attribute LineageMapAttr::parse(AsmParser &parser, Type) {
  std::string spec, plan;
  AffineMapAttr blocks;
  SmallVector<int64_t> shape, scale;
  FlatSymbolRefAttr mesh;
  DictionaryAttr where;
  if (parser.parseLess() || parser.parseString(&spec) ||
      parser.parseKeyword("blocks") || parser.parseAttribute(blocks) ||
      parser.parseKeyword("shape") || parseIntList(parser, shape))
    return {};
  if (succeeded(parser.parseOptionalKeyword("scaled")) &&
      parseIntList(parser, scale))
    return {};
  if (parser.parseEqual() || parser.parseString(&plan) ||
      parser.parseKeyword("on") || parser.parseAttribute(mesh) ||
      parser.parseKeyword("where") || parser.parseAttribute(where) ||
      parser.parseGreater())
    return {};
  MLIRContext *ctx = parser.getContext();
  return parser.getChecked<LineageMapAttr>(
      ctx, StringAttr::get(ctx, spec), blocks, shape, scale,
      StringAttr::get(ctx, plan), mesh, where);
}

void LineageMapAttr::print(AsmPrinter &printer) const {
  auto list = [&](ArrayRef<int64_t> v) {
    printer << "[";
    llvm::interleaveComma(v, printer);
    printer << "]";
  };
  printer << "<";
  printer.printString(getSpec().getValue());
  printer << " blocks ";
  printer.printAttribute(getBlocks());
  printer << " shape ";
  list(getShape());
  if (!getScale().empty()) {
    printer << " scaled ";
    list(getScale());
  }
  printer << " = ";
  printer.printString(getPlan().getValue());
  printer << " on ";
  printer.printAttribute(getMesh());
  printer << " where ";
  printer.printAttribute(getWhere());
  printer << ">";
}

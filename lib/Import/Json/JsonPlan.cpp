//===- JsonPlan.cpp - --import-json-plan / --export-json-plan -------------===//
//
// The JSON interchange of docs/json-plan.md: a framework lists its mesh, the
// spec's ops, each rank program's ops (per rank or per class of ranks) and
// the lineages. Ops are generic: name, operand ids, result ids and types,
// attributes as MLIR attribute text, so every tv op round-trips exactly.
//
//===----------------------------------------------------------------------===//
#include "TrainVerify/Dialect/Lineage.h"
#include "TrainVerify/Dialect/TVOps.h"
#include "TrainVerify/Import/JsonInput.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Verifier.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::tv;
namespace json = llvm::json;

static constexpr llvm::StringLiteral kFormat = "tv-plan-json/1";

//===----------------------------------------------------------------------===//
// Export
//===----------------------------------------------------------------------===//

static std::string printed(Attribute a) {
  std::string s;
  llvm::raw_string_ostream os(s);
  a.print(os);
  return s;
}
static std::string printed(Type t) {
  std::string s;
  llvm::raw_string_ostream os(s);
  t.print(os);
  return s;
}

static json::Array exportOps(Block &block) {
  DenseMap<Value, std::string> ids;
  json::Array ops;
  for (Operation &op : block) {
    json::Object o;
    o["op"] = op.getName().getStringRef().str();
    json::Array operands, results;
    for (Value v : op.getOperands())
      operands.push_back(ids.lookup(v));
    for (Value r : op.getResults()) {
      std::string id = "%" + std::to_string(ids.size());
      ids[r] = id;
      results.push_back(json::Object{{"id", id}, {"type", printed(r.getType())}});
    }
    json::Object attrs;
    for (NamedAttribute a : op.getAttrs())
      attrs[a.getName().str()] = printed(a.getValue());
    o["operands"] = std::move(operands);
    o["results"] = std::move(results);
    o["attrs"] = std::move(attrs);
    ops.push_back(std::move(o));
  }
  return ops;
}

namespace mlir::tv {
LogicalResult exportJsonPlan(ModuleOp module, llvm::raw_ostream &os) {
  auto [mesh, spec, plan] = getProgramParts(module);
  if (!mesh || !spec || !plan)
    return module.emitError()
           << "export-json-plan needs a module with a tv.mesh, a tv.spec and "
              "a tv.plan (not a partitioned module)";
  json::Object root;
  root["format"] = kFormat.str();
  json::Array axes, sizes;
  for (auto [a, s] : llvm::zip(mesh.getAxes(), mesh.getSizes())) {
    axes.push_back(cast<StringAttr>(a).getValue().str());
    sizes.push_back(s);
  }
  root["mesh"] = json::Object{{"name", mesh.getSymName().str()},
                              {"axes", std::move(axes)},
                              {"sizes", std::move(sizes)}};
  root["micro_batches"] = plan.getMicroBatches();
  root["spec"] = json::Object{{"ops", exportOps(spec.getBody().front())}};
  json::Array programs;
  for (auto prog : plan.getBody().front().getOps<RankProgramOp>()) {
    json::Array ranks;
    for (int64_t r : prog.getRanks())
      ranks.push_back(r);
    json::Object po{{"ranks", std::move(ranks)},
                    {"ops", exportOps(prog.getBody().front())}};
    if (prog.getPhaseOrZero())
      po["phase"] = prog.getPhaseOrZero();
    programs.push_back(std::move(po));
  }
  root["programs"] = std::move(programs);
  json::Array lineages;
  // Lineage maps are written out as the statements they stand for.
  FailureOr<std::vector<LineageEntry>> all = collectLineages(module);
  if (failed(all))
    return failure();
  for (const LineageEntry &lin : *all) {
    LineageAttr l = lin.attr;
    json::Array box, groups;
    for (unsigned d = 0; d < l.getRank(); ++d)
      box.push_back(json::Array{l.getLower()[d], l.getUpper()[d]});
    for (auto &g : l.getGroupRefs()) {
      json::Array refs;
      for (PlanRefAttr r : g)
        refs.push_back(json::Array{r.getName().str(), r.getRank()});
      groups.push_back(std::move(refs));
    }
    json::Object entry{{"spec", l.getSpec().str()},
                       {"slice", std::move(box)},
                       {"groups", std::move(groups)}};
    if (l.isScaled())
      entry["scale"] = json::Array{l.getScaleFraction().first,
                                   l.getScaleFraction().second};
    lineages.push_back(std::move(entry));
  }
  root["lineages"] = std::move(lineages);
  os << llvm::formatv("{0:1}", json::Value(std::move(root))) << "\n";
  return success();
}
} // namespace mlir::tv

//===----------------------------------------------------------------------===//
// Import
//===----------------------------------------------------------------------===//

namespace {
class JsonPlanImporter {
public:
  JsonPlanImporter(MLIRContext *ctx, StringRef file, StringRef buffer)
      : ctx(ctx), loc(FileLineColLoc::get(ctx, file, 0, 0)), file(file.str()),
        buffer(buffer) {}

  /// Where the value at `path` starts in the input.
  Location at(const std::string &path) {
    return jsonLocationAt(ctx, file, buffer, jsonPathOffset(buffer, path));
  }

  InFlightDiagnostic error(const std::string &path) {
    InFlightDiagnostic d = emitError(at(path));
    d << "json plan: at " << path << ": ";
    return d;
  }

  /// Refuses, by name, a key of `o` outside `keys`: a key tv ignored could
  /// change what the plan means.
  bool onlyKeys(const json::Object &o, const std::string &path,
                ArrayRef<StringRef> keys) {
    std::optional<std::string> k = unknownKey(o, keys);
    if (!k)
      return true;
    error(path + "." + *k) << "unknown key '" << *k << "' ("
                           << knownKeysText(keys, {}) << ")";
    return false;
  }

  LogicalResult importOps(const json::Array &ops, Block *block,
                          const std::string &path) {
    llvm::StringMap<Value> values;
    OpBuilder b = OpBuilder::atBlockEnd(block);
    for (auto [i, ov] : llvm::enumerate(ops)) {
      std::string opath = path + "[" + std::to_string(i) + "]";
      const json::Object *o = ov.getAsObject();
      std::optional<StringRef> name = o ? o->getString("op") : std::nullopt;
      if (!name)
        return error(opath + ".op") << "expected the op name as a string";
      if (!onlyKeys(*o, opath, {"op", "operands", "results", "attrs"}))
        return failure();
      auto opName = RegisteredOperationName::lookup(*name, ctx);
      if (!opName || opName->getDialectNamespace() != "tv")
        return error(opath + ".op") << "unknown op '" << *name
                                    << "' (only tv ops are allowed)";
      OperationState state(NameLoc::get(StringAttr::get(ctx, opath), at(opath)),
                           *opName);
      if (const json::Array *operands = o->getArray("operands")) {
        for (auto [k, v] : llvm::enumerate(*operands)) {
          auto id = v.getAsString();
          Value val = id ? values.lookup(*id) : Value();
          if (!val)
            return error(opath + ".operands[" + std::to_string(k) + "]")
                   << "'" << (id ? *id : StringRef("?"))
                   << "' is not the id of an earlier result in this program";
          state.addOperands(val);
        }
      }
      SmallVector<std::string> resultIds;
      if (const json::Array *results = o->getArray("results")) {
        for (auto [k, v] : llvm::enumerate(*results)) {
          std::string rpath = opath + ".results[" + std::to_string(k) + "]";
          const json::Object *r = v.getAsObject();
          auto id = r ? r->getString("id") : std::nullopt;
          auto ty = r ? r->getString("type") : std::nullopt;
          if (!id || !ty)
            return error(rpath) << "expected {\"id\": ..., \"type\": ...}";
          if (!onlyKeys(*r, rpath, {"id", "type"}))
            return failure();
          Type t = parseType(*ty, ctx);
          if (!t)
            return error(rpath + ".type") << "cannot parse type '" << *ty << "'";
          if (values.count(*id))
            return error(rpath + ".id") << "'" << *id << "' is defined twice";
          state.addTypes(t);
          resultIds.push_back(id->str());
        }
      }
      if (const json::Object *attrs = o->getObject("attrs")) {
        for (auto &[k, v] : *attrs) {
          auto text = v.getAsString();
          Attribute a = text ? parseAttribute(*text, ctx) : Attribute();
          if (!a)
            return error(opath + ".attrs." + k.str())
                   << "cannot parse attribute '" << (text ? *text : "?") << "'";
          state.addAttribute(k, a);
        }
      }
      // Structure ops carry regions; program bodies hold region-less ops.
      if (opName->hasTrait<OpTrait::SingleBlock>())
        return error(opath + ".op") << "'" << *name
                                    << "' cannot appear in a program";
      Operation *op = b.create(state);
      for (auto [id, r] : llvm::zip(resultIds, op->getResults()))
        values[id] = r;
    }
    return success();
  }

  OwningOpRef<ModuleOp> run(const json::Object &root) {
    if (root.getString("format") != std::optional<StringRef>(kFormat)) {
      error("$.format") << "expected \"" << kFormat << "\"";
      return {};
    }
    if (!onlyKeys(root, "$", {"format", "mesh", "spec", "micro_batches",
                              "programs", "lineages"}))
      return {};
    if (const json::Value *mb = root.get("micro_batches");
        mb && (!mb->getAsInteger() || *mb->getAsInteger() < 1)) {
      error("$.micro_batches") << "expected a positive integer";
      return {};
    }
    const json::Object *mesh = root.getObject("mesh");
    const json::Array *axes = mesh ? mesh->getArray("axes") : nullptr;
    const json::Array *sizes = mesh ? mesh->getArray("sizes") : nullptr;
    if (!axes || !sizes) {
      error("$.mesh") << "expected {\"axes\": [...], \"sizes\": [...]}";
      return {};
    }
    if (!onlyKeys(*mesh, "$.mesh", {"name", "axes", "sizes"}))
      return {};
    SmallVector<StringRef> axisNames;
    SmallVector<int64_t> axisSizes;
    for (auto [i, a] : llvm::enumerate(*axes)) {
      auto s = a.getAsString();
      if (!s) {
        error("$.mesh.axes[" + std::to_string(i) + "]") << "expected a string";
        return {};
      }
      axisNames.push_back(*s);
    }
    for (auto [i, a] : llvm::enumerate(*sizes)) {
      auto s = a.getAsInteger();
      if (!s) {
        error("$.mesh.sizes[" + std::to_string(i) + "]") << "expected an integer";
        return {};
      }
      axisSizes.push_back(*s);
    }
    std::string meshName = mesh->getString("name").value_or("mesh").str();
    OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
    OpBuilder b = OpBuilder::atBlockEnd(module->getBody());
    MeshOp::create(b, loc, meshName, b.getStrArrayAttr(axisNames),
                   b.getDenseI64ArrayAttr(axisSizes));

    const json::Object *spec = root.getObject("spec");
    const json::Array *specOps = spec ? spec->getArray("ops") : nullptr;
    if (!specOps) {
      error("$.spec") << "expected {\"ops\": [...]}";
      return {};
    }
    if (!onlyKeys(*spec, "$.spec", {"ops"}))
      return {};
    auto specOp = SpecOp::create(b, loc, "spec");
    specOp.getBody().push_back(new Block());
    if (failed(importOps(*specOps, &specOp.getBody().front(), "$.spec.ops")))
      return {};

    auto plan = PlanOp::create(
        b, loc, b.getStringAttr("plan"), FlatSymbolRefAttr::get(ctx, meshName),
        b.getI64IntegerAttr(root.getInteger("micro_batches").value_or(1)),
        /*folded=*/ArrayAttr(),
                                /*folded_micro_batches=*/UnitAttr());
    plan.getBody().push_back(new Block());
    const json::Array *programs = root.getArray("programs");
    if (!programs) {
      error("$.programs") << "expected a list of {\"ranks\", \"ops\"}";
      return {};
    }
    OpBuilder pb = OpBuilder::atBlockEnd(&plan.getBody().front());
    for (auto [i, pv] : llvm::enumerate(*programs)) {
      std::string ppath = "$.programs[" + std::to_string(i) + "]";
      const json::Object *p = pv.getAsObject();
      const json::Array *ranks = p ? p->getArray("ranks") : nullptr;
      const json::Array *ops = p ? p->getArray("ops") : nullptr;
      if (!ranks || !ops) {
        error(ppath) << "expected {\"ranks\": [...], \"ops\": [...]}";
        return {};
      }
      if (!onlyKeys(*p, ppath, {"ranks", "ops", "phase"}))
        return {};
      // Rank programs in phases (decision 124); absent: phase 0.
      IntegerAttr phase;
      if (const json::Value *ph = p->get("phase")) {
        std::optional<int64_t> k = ph->getAsInteger();
        if (!k || *k < 0) {
          error(ppath + ".phase") << "expected a phase number >= 0";
          return {};
        }
        if (*k)
          phase = b.getI64IntegerAttr(*k);
      }
      SmallVector<int64_t> rs;
      for (auto [k, r] : llvm::enumerate(*ranks)) {
        auto v = r.getAsInteger();
        if (!v) {
          error(ppath + ".ranks[" + std::to_string(k) + "]")
              << "expected an integer";
          return {};
        }
        rs.push_back(*v);
      }
      auto prog = RankProgramOp::create(pb, loc, rs, phase);
      prog.getBody().push_back(new Block());
      if (failed(importOps(*ops, &prog.getBody().front(), ppath + ".ops")))
        return {};
    }

    const json::Array *lineages = root.getArray("lineages");
    if (!lineages) {
      error("$.lineages") << "expected a list of lineages";
      return {};
    }
    b.setInsertionPointToEnd(module->getBody());
    for (auto [i, lv] : llvm::enumerate(*lineages)) {
      std::string lpath = "$.lineages[" + std::to_string(i) + "]";
      const json::Object *l = lv.getAsObject();
      auto specName = l ? l->getString("spec") : std::nullopt;
      const json::Array *slice = l ? l->getArray("slice") : nullptr;
      const json::Array *groups = l ? l->getArray("groups") : nullptr;
      if (!specName || !slice || !groups) {
        error(lpath) << "expected {\"spec\", \"slice\", \"groups\"}";
        return {};
      }
      if (!onlyKeys(*l, lpath, {"spec", "slice", "groups", "scale"}))
        return {};
      SmallVector<int64_t> scale;
      if (const json::Value *sv = l->get("scale")) {
        const json::Array *sa = sv->getAsArray();
        if (!sa || sa->size() != 2 || !(*sa)[0].getAsInteger() ||
            !(*sa)[1].getAsInteger()) {
          error(lpath + ".scale") << "expected [numerator, denominator]";
          return {};
        }
        scale = {*(*sa)[0].getAsInteger(), *(*sa)[1].getAsInteger()};
        if (scale[0] == 1 && scale[1] == 1)
          scale.clear();
      }
      SmallVector<int64_t> lo, hi;
      for (auto [d, dv] : llvm::enumerate(*slice)) {
        const json::Array *r = dv.getAsArray();
        if (!r || r->size() != 2 || !(*r)[0].getAsInteger() ||
            !(*r)[1].getAsInteger()) {
          error(lpath + ".slice[" + std::to_string(d) + "]")
              << "expected [start, end)";
          return {};
        }
        lo.push_back(*(*r)[0].getAsInteger());
        hi.push_back(*(*r)[1].getAsInteger());
      }
      SmallVector<Attribute> groupAttrs;
      for (auto [g, gv] : llvm::enumerate(*groups)) {
        const json::Array *refs = gv.getAsArray();
        SmallVector<Attribute> refAttrs;
        for (auto [k, rv] : llvm::enumerate(refs ? *refs : json::Array())) {
          const json::Array *ref = rv.getAsArray();
          if (!ref || ref->size() != 2 || !(*ref)[0].getAsString() ||
              !(*ref)[1].getAsInteger()) {
            error(lpath + ".groups[" + std::to_string(g) + "][" +
                  std::to_string(k) + "]")
                << "expected [\"name\", rank]";
            return {};
          }
          refAttrs.push_back(PlanRefAttr::get(ctx, *(*ref)[0].getAsString(),
                                              *(*ref)[1].getAsInteger()));
        }
        groupAttrs.push_back(b.getArrayAttr(refAttrs));
      }
      StringAttr s = b.getStringAttr(*specName);
      ArrayAttr gl = b.getArrayAttr(groupAttrs);
      if (failed(LineageAttr::verify([&] { return error(lpath); }, s, lo, hi,
                                     gl, StringAttr(), {}, scale)))
        return {};
      LineageOp::create(b, NameLoc::get(b.getStringAttr(lpath), loc),
                        LineageAttr::get(ctx, s, ArrayRef<int64_t>(lo),
                                         ArrayRef<int64_t>(hi), gl,
                                         StringAttr(), ArrayRef<int64_t>(),
                                         scale));
    }
    if (failed(verify(*module)) || failed(checkLineages(*module)))
      return {};
    return module;
  }

private:
  MLIRContext *ctx;
  Location loc;
  std::string file;
  StringRef buffer;
};
} // namespace

namespace mlir::tv {
OwningOpRef<Operation *> importJsonPlan(llvm::SourceMgr &sourceMgr,
                                        MLIRContext *ctx) {
  ctx->loadDialect<TVDialect>();
  std::optional<JsonInput> in = readJsonObject(sourceMgr, ctx, "json plan");
  if (!in)
    return {};
  JsonPlanImporter importer(
      ctx, in->file,
      sourceMgr.getMemoryBuffer(sourceMgr.getMainFileID())->getBuffer());
  OwningOpRef<ModuleOp> m = importer.run(in->root());
  if (!m)
    return {};
  return OwningOpRef<Operation *>(m.release());
}
} // namespace mlir::tv

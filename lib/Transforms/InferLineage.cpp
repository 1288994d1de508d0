//===- InferLineage.cpp - --tv-infer-lineage, --tv-suggest-lineage --------===//
//
// Relations found on exact values (Verify/RelationInference.h) become
// `tv.lineage` statements: tags name the related spec and plan values, and
// each inferred statement is marked so that --tv-verify keeps its cut only
// when its stage proves it (docs/decisions.md 97).
//
//===----------------------------------------------------------------------===//
#include "TrainVerify/Dialect/Lineage.h"
#include "TrainVerify/Transforms/Passes.h"
#include "TrainVerify/Transforms/Utils.h"
#include "TrainVerify/Verify/RelationInference.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

namespace mlir::tv {
#define GEN_PASS_DEF_TVINFERLINEAGE
#define GEN_PASS_DEF_TVSUGGESTLINEAGE
#include "TrainVerify/Transforms/Passes.h.inc"
} // namespace mlir::tv

using namespace mlir;
using namespace mlir::tv;

namespace {
/// A tag the inference adds: its name, the value and the op it follows.
struct NewTag {
  std::string name;
  Value value;
  bool spec;
};

/// What one inference adds to a module.
struct Inferred {
  std::vector<LineageAttr> lineages;
  std::vector<NewTag> tags;
};

/// The names tv.input / tv.tag / tv.output give to values of one block.
DenseMap<Value, std::string> namesIn(Block &block, llvm::StringSet<> &used) {
  DenseMap<Value, std::string> names;
  for (Operation &op : block) {
    auto name = op.getAttrOfType<StringAttr>("name");
    if (!name || !isa<InputOp, TagOp, OutputOp>(op))
      continue;
    Value v = isa<InputOp>(op) ? op.getResult(0) : op.getOperand(0);
    names.try_emplace(v, name.str());
    used.insert(name.getValue());
  }
  return names;
}

StringRef opBase(Operation *op) {
  StringRef n = op->getName().getStringRef();
  return n.starts_with("tv.") ? n.drop_front(3) : n;
}

std::string fresh(StringRef base, llvm::StringSet<> &used) {
  std::string name = base.str();
  for (unsigned k = 1; used.contains(name); ++k)
    name = (base + "_" + Twine(k)).str();
  used.insert(name);
  return name;
}

/// Removes the given lineages of tensors that are neither spec inputs nor
/// spec outputs.
void dropIntermediateLineages(ModuleOp module, SpecOp spec) {
  llvm::StringSet<> ends;
  for (Operation &op : spec.getBody().front())
    if (isa<InputOp, OutputOp>(op))
      ends.insert(op.getAttrOfType<StringAttr>("name").getValue());
  for (Operation &op : llvm::make_early_inc_range(*module.getBody())) {
    if (auto l = dyn_cast<LineageOp>(op);
        l && !ends.contains(l.getLineage().getSpec().getValue()))
      op.erase();
    else if (auto m = dyn_cast<LineageMapOp>(op);
             m && !ends.contains(m.getSpec()))
      op.erase();
  }
}

/// Infers the lineages of `module`'s intermediate tensors (after removing
/// the given ones, with `dropIntermediate`) and names the values they
/// relate (the tags are added to the module).
FailureOr<Inferred> infer(ModuleOp module, uint64_t seed,
                          bool dropIntermediate) {
  if (failed(ssaCanonicalize(module)))
    return failure();
  auto [mesh, spec, plan] = getProgramParts(module);
  if (!spec || !plan)
    return module.emitError() << "module needs a tv.spec and a tv.plan";
  if (dropIntermediate)
    dropIntermediateLineages(module, spec);
  FailureOr<std::vector<LineageEntry>> given = collectLineages(module);
  if (failed(given))
    return failure();
  llvm::StringSet<> withLineage, planNamesWithLineage;
  SmallVector<LineageAttr> givenAttrs;
  for (const LineageEntry &e : *given) {
    withLineage.insert(e.attr.getSpec().getValue());
    e.attr.walkRefs([&](size_t, PlanRefView ref) {
      planNamesWithLineage.insert(ref.name);
    });
    givenAttrs.push_back(e.attr);
  }
  llvm::StringSet<> specUsed;
  DenseMap<Value, std::string> specNames =
      namesIn(spec.getBody().front(), specUsed);
  DenseMap<Operation *, DenseMap<Value, std::string>> planNames;
  DenseMap<Operation *, llvm::StringSet<>> planUsed;
  for (auto prog : plan.getBody().front().getOps<RankProgramOp>())
    planNames[prog] = namesIn(prog.getBody().front(), planUsed[prog]);
  // Plan values are defined at the top of their rank program.
  auto programOf = [](Value v) { return v.getParentBlock()->getParentOp(); };

  InferenceOptions options;
  options.seed = seed;
  auto skipSpec = [&](Value v) {
    auto it = specNames.find(v);
    return it != specNames.end() && withLineage.contains(it->second);
  };
  auto skipPlan = [&](int64_t, Value v) {
    auto &names = planNames[programOf(v)];
    auto it = names.find(v);
    return it != names.end() && planNamesWithLineage.contains(it->second);
  };
  options.skipSpec = skipSpec;
  options.skipPlan = skipPlan;
  std::string why;
  FailureOr<std::vector<InferredRelation>> relations =
      inferRelations(spec, plan, givenAttrs, options, why);
  if (failed(relations)) {
    // Nothing is inferred; the verification that follows reports what
    // keeps the program from running (a deadlock, an uncovered input) with
    // its own verdict.
    module.emitWarning() << "no lineage inferred: " << why;
    return Inferred();
  }

  Inferred result;
  MLIRContext *ctx = module.getContext();
  OpBuilder b(ctx);
  auto nameOf = [&](Value v, bool isSpec, StringRef base) -> std::string {
    DenseMap<Value, std::string> &names =
        isSpec ? specNames : planNames[programOf(v)];
    auto it = names.find(v);
    if (it != names.end())
      return it->second;
    std::string name =
        fresh(base, isSpec ? specUsed : planUsed[programOf(v)]);
    names[v] = name;
    Operation *def = v.getDefiningOp();
    b.setInsertionPointAfter(def);
    TagOp::create(b, def->getLoc(), name, v);
    result.tags.push_back({name, v, isSpec});
    return name;
  };
  for (InferredRelation &rel : *relations) {
    std::string specName =
        nameOf(rel.spec, true,
               ("inferred_" + opBase(rel.spec.getDefiningOp())).str());
    SmallVector<Attribute> groups;
    for (auto &group : rel.groups) {
      SmallVector<Attribute> refs;
      for (auto [rank, v] : group)
        refs.push_back(PlanRefAttr::get(ctx, nameOf(v, false, specName), rank));
      groups.push_back(ArrayAttr::get(ctx, refs));
    }
    SmallVector<int64_t, 2> scale;
    if (rel.scaleNum != rel.scaleDen)
      scale = {rel.scaleNum, rel.scaleDen};
    result.lineages.push_back(LineageAttr::get(
        ctx, StringAttr::get(ctx, specName), rel.lower, rel.upper,
        ArrayAttr::get(ctx, groups), StringAttr(), ArrayRef<int64_t>(),
        scale));
  }
  return result;
}

/// Adds the lineages after the module's last op, marked `inferred`.
void addHypotheses(ModuleOp module, ArrayRef<LineageAttr> lineages) {
  OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
  for (LineageAttr l : lineages)
    LineageOp::create(b, module.getLoc(), l)
        ->setAttr("inferred", b.getUnitAttr());
}

struct InferLineagePass
    : public tv::impl::TVInferLineageBase<InferLineagePass> {
  using TVInferLineageBase::TVInferLineageBase;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<Inferred> inferred = infer(module, seed, dropIntermediate);
    if (failed(inferred))
      return signalPassFailure();
    // Inferred: partition need not infer them again.
    module->removeAttr(kInferIntermediatesAttrName);
    addHypotheses(module, inferred->lineages);
    SmallVector<Attribute> names;
    if (auto old = module->getAttrOfType<ArrayAttr>(kInferredAttrName))
      names.append(old.begin(), old.end());
    llvm::StringSet<> seen;
    for (LineageAttr l : inferred->lineages)
      if (seen.insert(l.getSpec().getValue()).second)
        names.push_back(l.getSpec());
    module->setAttr(kInferredAttrName,
                    ArrayAttr::get(module.getContext(), names));
    if (failed(checkLineages(module))) {
      module.emitError() << "the inferred lineages do not check (a defect of "
                            "--tv-infer-lineage)";
      return signalPassFailure();
    }
    llvm::errs() << "tv-infer-lineage: " << seen.size()
                 << " intermediate tensor(s) related ("
                 << inferred->lineages.size()
                 << " lineage(s)); each is a cut only if its stage proves it\n";
  }
};

struct SuggestLineagePass
    : public tv::impl::TVSuggestLineageBase<SuggestLineagePass> {
  using TVSuggestLineageBase::TVSuggestLineageBase;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<Inferred> inferred = infer(module, seed, dropIntermediate);
    if (failed(inferred))
      return signalPassFailure();
    std::error_code ec;
    std::unique_ptr<llvm::raw_fd_ostream> file;
    if (output != "-") {
      file = std::make_unique<llvm::raw_fd_ostream>(output, ec);
      if (ec) {
        module.emitError() << "cannot write '" << output
                           << "': " << ec.message();
        return signalPassFailure();
      }
    }
    llvm::raw_ostream &os = file ? *file : llvm::errs();
    os << "// tv-suggest-lineage: " << inferred->lineages.size()
       << " lineage(s) found on random inputs; review before pasting: a "
          "pasted lineage is part of the theorem\n";
    for (const NewTag &t : inferred->tags) {
      Operation *def = t.value.getDefiningOp();
      os << "// " << (t.spec ? "spec" : "plan") << ": tv.tag \"" << t.name
         << "\" after '" << def->getName() << "' at " << def->getLoc()
         << "\n";
    }
    for (LineageAttr l : inferred->lineages)
      os << "tv.lineage " << l << "\n";
  }
};
} // namespace

//===- PlanSummary.cpp - --export-plan-summary ----------------------------===//
// A JSON summary of a tv module: mesh, programs, op counts, lineages. Meant
// for dashboards and for checking what an importer produced.
#include "TrainVerify/Dialect/TVOps.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/JSON.h"

using namespace mlir;
using namespace mlir::tv;

namespace mlir::tv {
LogicalResult exportPlanSummary(ModuleOp module, llvm::raw_ostream &os);
}

static llvm::json::Object opCounts(Block &block) {
  std::map<std::string, int64_t> counts;
  block.walk([&](Operation *op) { ++counts[op->getName().getStringRef().str()]; });
  llvm::json::Object obj;
  for (auto &[name, n] : counts)
    obj[name] = n;
  return obj;
}

LogicalResult mlir::tv::exportPlanSummary(ModuleOp module,
                                          llvm::raw_ostream &os) {
  llvm::json::Object root;
  llvm::json::Array meshes, specs, plans;
  int64_t lineages = 0, lineageMaps = 0, stages = 0;
  for (Operation &op : module.getBody()->getOperations()) {
    if (auto mesh = dyn_cast<MeshOp>(op)) {
      llvm::json::Object m;
      m["name"] = mesh.getSymName().str();
      llvm::json::Array axes;
      for (auto [a, s] : llvm::zip(mesh.getAxes(), mesh.getSizes()))
        axes.push_back(llvm::json::Object{
            {"axis", cast<StringAttr>(a).getValue().str()}, {"size", s}});
      m["axes"] = std::move(axes);
      m["ranks"] = mesh.getNumRanks();
      meshes.push_back(std::move(m));
    } else if (auto spec = dyn_cast<SpecOp>(op)) {
      specs.push_back(llvm::json::Object{
          {"name", spec.getSymName().str()},
          {"ops", opCounts(spec.getBody().front())}});
    } else if (auto plan = dyn_cast<PlanOp>(op)) {
      llvm::json::Array progs;
      for (auto prog : plan.getBody().front().getOps<RankProgramOp>()) {
        llvm::json::Array ranks;
        for (int64_t r : prog.getRanks())
          ranks.push_back(r);
        llvm::json::Object po{{"ranks", std::move(ranks)},
                              {"ops", opCounts(prog.getBody().front())}};
        if (prog.getPhaseOrZero())
          po["phase"] = prog.getPhaseOrZero();
        progs.push_back(std::move(po));
      }
      plans.push_back(llvm::json::Object{
          {"name", plan.getSymName().str()},
          {"mesh", plan.getMesh().str()},
          {"micro_batches", plan.getMicroBatches()},
          {"programs", std::move(progs)}});
    } else if (isa<LineageOp>(op)) {
      ++lineages;
    } else if (isa<LineageMapOp>(op)) {
      ++lineageMaps;
    } else if (isa<StageOp>(op)) {
      ++stages;
    }
  }
  root["meshes"] = std::move(meshes);
  root["specs"] = std::move(specs);
  root["plans"] = std::move(plans);
  root["lineages"] = lineages;
  root["lineage_maps"] = lineageMaps;
  root["stages"] = stages;
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(root))) << "\n";
  return success();
}

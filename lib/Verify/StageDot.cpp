//===- StageDot.cpp - a stage as a Graphviz picture -----------------------===//
//
// --tv-verify=dot-dir=DIR: the spec and the failing rank's program of a
// stage, each edge labelled with the value it carried in the replay, the
// diverging op filled red and the reported op orange.
//
//===----------------------------------------------------------------------===//
#include "TrainVerify/Verify/StageVerifier.h"

#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::tv;

void mlir::tv::writeStageDot(StageOp stage, const StageResult &result,
                             llvm::raw_ostream &os) {
  auto esc = [](std::string s) {
    std::string o;
    for (char c : s)
      o += c == '"' ? std::string("\\\"") : std::string(1, c);
    return o;
  };
  DenseMap<Operation *, unsigned> ids;
  auto label = [](Operation *op) {
    std::string s = op->getName().getStringRef().str();
    if (auto in = dyn_cast<InputOp>(op))
      s += " \"" + in.getName().str() + "\"";
    if (auto outOp = dyn_cast<OutputOp>(op))
      s += " \"" + outOp.getName().str() + "\"";
    if (std::string loc = fileLineOf(op->getLoc()); !loc.empty())
      s += "\\n" + llvm::sys::path::filename(loc).str();
    return s;
  };
  os << "digraph \"" << stage.getSymName() << "\" {\n"
     << "  rankdir=TB; node [shape=box, fontname=\"monospace\"];\n";
  auto cluster = [&](StringRef name, StringRef title, Block &body,
                     const std::map<void *, std::string> &values) {
    os << "  subgraph cluster_" << name << " {\n    label=\"" << esc(title.str())
       << "\";\n";
    body.walk([&](Operation *op) {
      if (isa<RankProgramOp>(op))
        return;
      unsigned id = ids.size();
      ids[op] = id;
      std::string style;
      if (op == result.diverging)
        style = ", style=filled, fillcolor=\"#ff8080\"";
      else if (op == result.reported)
        style = ", style=filled, fillcolor=\"#ffd080\"";
      os << "    n" << id << " [label=\"" << esc(label(op)) << "\"" << style
         << "];\n";
      for (Value v : op->getOperands()) {
        Operation *def = v.getDefiningOp();
        if (!def || !ids.count(def))
          continue;
        auto it = values.find(v.getAsOpaquePointer());
        os << "    n" << ids[def] << " -> n" << id << " [label=\""
           << esc(it != values.end() ? it->second : "") << "\"];\n";
      }
    });
    os << "  }\n";
  };
  cluster("spec", "spec", stage.getSpec().getBody().front(),
          result.specValues);
  for (auto prog :
       stage.getPlan().getBody().front().getOps<RankProgramOp>())
    if (llvm::is_contained(prog.getRanks(), result.rank))
      cluster("plan", "plan, rank " + std::to_string(result.rank),
              prog.getBody().front(), result.planValues);
  // The blamed op in another rank's program (the sender of a received
  // value, a member of a collective): that program too, without values.
  if (result.diverging)
    if (auto prog = result.diverging->getParentOfType<RankProgramOp>();
        prog && !llvm::is_contained(prog.getRanks(), result.rank))
      cluster("blamed", "plan, rank " + std::to_string(prog.getRanks().front()),
              prog.getBody().front(), {});
  os << "}\n";
}

//===- Folder.h - folding a stage: the analysis's state ---------*- C++ -*-===//
//
// The state of folding one stage along a mesh axis or its micro-batches
// (Symmetry.h), shared by the ranks and lineages checks and the entry points
// (Symmetry.cpp), the spec and plan dataflow (SymmetryDataflow.cpp) and the
// micro-batch lanes and the rewrite (SymmetryLanes.cpp). Internal to
// lib/Verify.
//
//===----------------------------------------------------------------------===//
#ifndef TRAINVERIFY_VERIFY_FOLDER_H
#define TRAINVERIFY_VERIFY_FOLDER_H

#include "TrainVerify/Dialect/TVOps.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

#include <map>
#include <string>

namespace mlir::tv::symmetry {

using Fact = FoldFact;

inline ArrayRef<int64_t> shapeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}

class Folder {
public:
  Folder(StageOp stage, MeshOp mesh, int64_t axisIdx)
      : stage(stage), mesh(mesh), axisIdx(axisIdx) {
    n = mesh.getSizes()[axisIdx];
    stride = 1;
    for (int64_t i = axisIdx + 1; i < (int64_t)mesh.getSizes().size(); ++i)
      stride *= mesh.getSizes()[i];
    axisName = cast<StringAttr>(mesh.getAxes()[axisIdx]).getValue();
  }

  /// Folding the micro-batches of `stage` (the lanes of its programs).
  Folder(StageOp stage, int64_t microBatches)
      : stage(stage), axisIdx(-1), n(microBatches), stride(1),
        lanes(true) {
    axisName = "micro-batch";
  }

  bool analyze(std::string &why);
  void rewrite();
  /// Set by a failed analyze when a #tv.lineage_map of the stage could not
  /// be decided on the map: the caller expands the maps and analyzes again
  /// (decision 127).
  bool needsStatements = false;

private:
  int64_t coordOf(int64_t r) const { return (r / stride) % n; }
  int64_t rank0(int64_t r) const { return r - coordOf(r) * stride; }
  /// The coordinate a lineage reference belongs to: its rank's along the
  /// axis, or its tensor's micro-batch (-1: no micro-batch owns it; -2: its
  /// rank is not in the stage).
  int64_t refCoord(PlanRefView ref) const;
  /// The reference moved to coordinate 0: (name, rank).
  std::pair<StringRef, int64_t> refAt0(PlanRefView ref) const;

  // Micro-batch lanes.
  bool checkLanes(std::string &why);
  bool analyzeLanePlan(std::string &why);
  void rewriteLanes();
  bool checkRedMatch(std::string &why);

  bool checkRanks(std::string &why);
  bool checkLineages(std::string &why);
  /// How a map's block indices move along the axis on its slice (`where`):
  /// (-1, 0) when none depends on the coordinate, (j, k) when only index j
  /// does, as g + c * k with 0 <= g < k (g: the index at coordinate 0);
  /// nullopt otherwise.
  std::optional<std::pair<int, int64_t>> mapAlongAxis(AffineMap blocks,
                                                      DictionaryAttr where);
  bool analyzeSpec(std::string &why);
  bool analyzePlan(std::string &why);

  Fact specRule(Operation *op, unsigned result, std::string &why);

public:
  /// Ops linear in a sum over ranks: a partial sum stays one through them.
  static bool linearOfRed(Operation *op);

private:
  bool groupCrossesAxis(Operation *op);

  StageOp stage;
  MeshOp mesh;
  int64_t axisIdx, n, stride;
  StringRef axisName;
  bool lanes = false;
  /// Per (program, tensor name): its micro-batch (-1: none) and the name of
  /// the micro-batch-0 tensor it corresponds to.
  std::map<std::pair<Operation *, std::string>, std::pair<int64_t, std::string>>
      laneOfName;
  /// Per program: the micro-batch of each op (-1: none) and, for a lane op,
  /// its position in its lane.
  DenseMap<Operation *, std::pair<int64_t, unsigned>> laneOfOp;
  /// Per program: lane 0's ops in order.
  DenseMap<Operation *, SmallVector<Operation *>> lane0Ops;

  DenseMap<int64_t, RankProgramOp> programOf;
  /// Factored dimension of each spec tensor named by a lineage (-1: none),
  /// and the size of its blocks along it.
  llvm::StringMap<int> factored;
  llvm::StringMap<int64_t> blockSize;
  DenseMap<Value, Fact> facts;
  /// Spec tensors with a Red value.
  llvm::StringSet<> specRed;
  /// Guarantees whose groups each sum a per-rank tensor over the axis:
  /// their spec tensor is Red and their plan terms are not; the fold keeps
  /// each group's coordinate-0 terms.
  DenseSet<Attribute> orbitSums;
  /// Plan values that are Red, per program: (program, name) -> Red?
  std::map<std::pair<Operation *, std::string>, bool> planRed;
};

} // namespace mlir::tv::symmetry

#endif

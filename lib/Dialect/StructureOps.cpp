//===- StructureOps.cpp - mesh, spec, plan, rank programs, stages ---------===//
#include "TrainVerify/Dialect/TVOps.h"
#include "TrainVerify/Dialect/Lineage.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringSet.h"
#include <map>

using namespace mlir;
using namespace mlir::tv;

static constexpr int64_t kMaxMeshRanks = int64_t(1) << 20;

//===----------------------------------------------------------------------===//
// MeshOp
//===----------------------------------------------------------------------===//

LogicalResult MeshOp::verify() {
  if (getAxes().size() != getSizes().size())
    return emitOpError() << "has " << getAxes().size() << " axes but "
                         << getSizes().size() << " sizes";
  if (getAxes().empty())
    return emitOpError() << "needs at least one axis";
  llvm::StringSet<> seen;
  int64_t ranks = 1;
  for (auto [axis, size] : llvm::zip(getAxes(), getSizes())) {
    StringRef name = cast<StringAttr>(axis).getValue();
    if (name.empty())
      return emitOpError() << "axis names must not be empty";
    if (!seen.insert(name).second)
      return emitOpError() << "axis '" << name << "' is declared twice";
    if (size < 1)
      return emitOpError() << "axis '" << name << "' has size " << size
                           << ", expected at least 1";
    // Plans are verified rank by rank: keep the mesh within what a real
    // cluster has (and within 64-bit arithmetic).
    if (size > kMaxMeshRanks || (ranks *= size) > kMaxMeshRanks)
      return emitOpError() << "has more than " << kMaxMeshRanks << " ranks";
  }
  return success();
}

int64_t MeshOp::getNumRanks() {
  int64_t n = 1;
  for (int64_t s : getSizes())
    n *= s;
  return n;
}

int64_t MeshOp::getAxisIndex(StringRef name) {
  for (auto [i, axis] : llvm::enumerate(getAxes()))
    if (cast<StringAttr>(axis).getValue() == name)
      return i;
  return -1;
}

SmallVector<int64_t> MeshOp::getCoords(int64_t rank) {
  ArrayRef<int64_t> sizes = getSizes();
  SmallVector<int64_t> coords(sizes.size());
  for (int64_t i = sizes.size() - 1; i >= 0; --i) {
    coords[i] = rank % sizes[i];
    rank /= sizes[i];
  }
  return coords;
}

int64_t MeshOp::getRank(ArrayRef<int64_t> coords) {
  int64_t rank = 0;
  for (auto [c, s] : llvm::zip(coords, getSizes()))
    rank = rank * s + c;
  return rank;
}

SmallVector<int64_t> MeshOp::getAxisGroup(int64_t rank,
                                          ArrayRef<StringRef> axes) {
  SmallVector<int64_t> coords = getCoords(rank);
  SmallVector<int64_t> axisIdx;
  for (StringRef a : axes)
    axisIdx.push_back(getAxisIndex(a));
  // Enumerate all coordinate combinations on `axes`, in row-major order of
  // the mesh so that the group is sorted by rank.
  SmallVector<int64_t> group;
  int64_t total = 1;
  for (int64_t i : axisIdx)
    total *= getSizes()[i];
  SmallVector<int64_t> sortedIdx(axisIdx);
  llvm::sort(sortedIdx);
  for (int64_t k = 0; k < total; ++k) {
    int64_t rem = k;
    SmallVector<int64_t> c = coords;
    for (int64_t j = sortedIdx.size() - 1; j >= 0; --j) {
      int64_t size = getSizes()[sortedIdx[j]];
      c[sortedIdx[j]] = rem % size;
      rem /= size;
    }
    group.push_back(getRank(c));
  }
  return group;
}

//===----------------------------------------------------------------------===//
// Programs
//===----------------------------------------------------------------------===//

/// Names defined by tv.input / tv.tag / tv.output are unique in one program.
/// The tensor name an input, tag or output defines (null for other ops).
/// Read defensively: this may run before the op's own verifier, which
/// reports a missing or mistyped name.
static StringAttr tensorNameOf(Operation &op) {
  if (!isa<InputOp, TagOp, OutputOp>(op))
    return {};
  return op.getAttrOfType<StringAttr>("name");
}

/// The names of a phased plan (decision 124): on each rank, a name is
/// defined once over all its phases (an output or a tag; an input of a later
/// phase that reads an earlier definition defines nothing), a later phase
/// reads an earlier definition with the type it was defined with, and a
/// buffer lives in one phase.
static LogicalResult verifyPhaseNames(PlanOp plan) {
  // Each program's names and buffers, read once (a phase-0 program is
  // shared by many ranks whose later phases differ).
  struct Names {
    llvm::StringMap<Operation *> names, buffers; // first definition / use
    SmallVector<std::pair<StringRef, Operation *>> ops; // in order
  };
  DenseMap<Operation *, Names> names;
  auto namesOf = [&](RankProgramOp prog) -> Names & {
    auto [it, fresh] = names.try_emplace(prog);
    if (fresh)
      for (Operation &op : prog.getBody().front()) {
        StringAttr name = tensorNameOf(op);
        if (isa<AccumulateOp, BufferReadOp>(op))
          name = op.getAttrOfType<StringAttr>("buffer");
        if (!name)
          continue;
        auto &table = isa<AccumulateOp, BufferReadOp>(op) ? it->second.buffers
                                                           : it->second.names;
        table.try_emplace(name.getValue(), &op);
        it->second.ops.push_back({name.getValue(), &op});
      }
    return it->second;
  };
  // Ranks that run the same programs are checked once, as their first.
  for (auto &[progs, ranks] : plan.phaseGroups()) {
    const int64_t rank = ranks.front();
    for (size_t i = 1; i < progs.size(); ++i) {
      auto prog = cast<RankProgramOp>(progs[i]);
      for (auto [name, op] : namesOf(prog).ops) {
        bool buffer = isa<AccumulateOp, BufferReadOp>(op);
        Operation *earlier = nullptr;
        for (size_t j = 0; j < i && !earlier; ++j) {
          Names &e = namesOf(cast<RankProgramOp>(progs[j]));
          earlier = (buffer ? e.buffers : e.names).lookup(name);
        }
        if (!earlier)
          continue;
        // A buffer lives in one phase: what crosses phases is named.
        if (buffer) {
          InFlightDiagnostic d =
              op->emitOpError()
              << "uses buffer '" << name << "' on rank " << rank
              << " in phase " << prog.getPhaseOrZero()
              << ", which an earlier phase of the rank uses; a buffer "
                 "lives in one phase (pass its value with tv.output and "
                 "tv.input)";
          d.attachNote(earlier->getLoc()) << "used here";
          return d;
        }
        if (!isa<InputOp>(op)) {
          InFlightDiagnostic d =
              op->emitOpError()
              << "defines tensor name '" << name << "' on rank " << rank
              << " in phase " << prog.getPhaseOrZero()
              << ", which an earlier phase of the rank already defines";
          d.attachNote(earlier->getLoc()) << "defined here";
          return d;
        }
        // An asynchronous op's result is in flight until its wait, which
        // is in the same phase: a handle never crosses a phase.
        if (!earlier->getNumResults())
          if (Operation *def = earlier->getOperand(0).getDefiningOp();
              def && def->hasAttr(kAsyncAttrName)) {
            InFlightDiagnostic d =
                op->emitOpError()
                << "reads tensor '" << name << "' on rank " << rank
                << " in phase " << prog.getPhaseOrZero()
                << ", the in-flight result of an asynchronous '"
                << def->getName() << "' of an earlier phase; a start and its "
                << "wait are in one phase";
            d.attachNote(def->getLoc()) << "started here";
            return d;
          }
        Type want = earlier->getNumResults()
                        ? earlier->getResult(0).getType()
                        : earlier->getOperand(0).getType();
        if (op->getResult(0).getType() != want) {
          InFlightDiagnostic d =
              op->emitOpError()
              << "reads tensor '" << name << "' of an earlier phase on rank "
              << rank << " as " << op->getResult(0).getType()
              << ", but it is defined as " << want;
          d.attachNote(earlier->getLoc()) << "defined here";
          return d;
        }
      }
    }
  }
  return success();
}

static LogicalResult verifyUniqueNames(Block &block) {
  llvm::StringMap<Operation *> names;
  for (Operation &op : block) {
    StringAttr nameAttr = tensorNameOf(op);
    if (!nameAttr)
      continue;
    StringRef name = nameAttr.getValue();
    auto [it, inserted] = names.try_emplace(name, &op);
    if (!inserted)
      return op.emitOpError() << "defines tensor name '" << name
                              << "' that is already defined in this program";
  }
  return success();
}

LogicalResult SpecOp::verifyRegions() {
  for (Operation &op : getBody().front()) {
    if (isa<SendOp, RecvOp, AllReduceOp, AllGatherOp, ReduceScatterOp,
            AllToAllOp, BroadcastCommOp, ReduceOp, ChunkOp>(op))
      return op.emitOpError() << "is a communication op; a spec runs on one "
                                 "device";
    if (isa<RankProgramOp, SpecOp, PlanOp, StageOp, MeshOp, LineageOp,
            LineageMapOp>(op))
      return op.emitOpError() << "cannot appear inside a spec";
  }
  return verifyUniqueNames(getBody().front());
}

MeshOp PlanOp::getMeshOp() {
  return SymbolTable::lookupNearestSymbolFrom<MeshOp>(*this, getMeshAttr());
}

// Rank programs that are structurally identical (same ops, operands,
/// attributes and types; locations aside) are folded into one program that
/// lists all their ranks. This is the check that symmetric ranks really run
/// the same code: a rank that differs keeps its own program.
unsigned PlanOp::mergeIdenticalPrograms() {
  SmallVector<RankProgramOp> progs(getBody().front().getOps<RankProgramOp>());
  unsigned removed = 0;
  llvm::DenseMap<llvm::hash_code, SmallVector<RankProgramOp>> buckets;
  SmallVector<llvm::hash_code> order;
  for (RankProgramOp p : progs) {
    // Hash the body only: the rank list is not part of what it computes.
    // Programs of different phases are never one program (decision 124).
    llvm::hash_code h = llvm::hash_combine(
        p.getBody().front().getOperations().size(), p.getPhaseOrZero());
    for (Operation &op : p.getBody().front())
      h = llvm::hash_combine(
          h, OperationEquivalence::computeHash(
                 &op, OperationEquivalence::ignoreHashValue,
                 OperationEquivalence::ignoreHashValue,
                 OperationEquivalence::IgnoreLocations));
    auto &bucket = buckets[h];
    if (bucket.empty())
      order.push_back(h);
    bucket.push_back(p);
  }
  for (llvm::hash_code h : order) {
    SmallVector<RankProgramOp> &bucket = buckets[h];
    std::vector<bool> merged(bucket.size(), false);
    for (size_t i = 0; i < bucket.size(); ++i) {
      if (merged[i])
        continue;
      SmallVector<int64_t> ranks(bucket[i].getRanks());
      for (size_t j = i + 1; j < bucket.size(); ++j) {
        if (merged[j])
          continue;
        Block &x = bucket[i].getBody().front(), &y = bucket[j].getBody().front();
        if (x.getOperations().size() != y.getOperations().size() ||
            bucket[i].getPhaseOrZero() != bucket[j].getPhaseOrZero())
          continue;
        // Values correspond positionally: ops are compared in order, and
        // operands must map to the corresponding earlier results.
        DenseMap<Value, Value> map;
        bool same = true;
        for (auto [a, c] : llvm::zip(x, y)) {
          if (a.getName() != c.getName() ||
              a.getAttrDictionary() != c.getAttrDictionary() ||
              a.getResultTypes() != c.getResultTypes() ||
              a.getNumOperands() != c.getNumOperands()) {
            same = false;
            break;
          }
          for (auto [u, v] : llvm::zip(a.getOperands(), c.getOperands()))
            if (map.lookup(u) != v) {
              same = false;
              break;
            }
          if (!same)
            break;
          for (auto [u, v] : llvm::zip(a.getResults(), c.getResults()))
            map[u] = v;
        }
        if (!same)
          continue;
        llvm::append_range(ranks, bucket[j].getRanks());
        merged[j] = true;
      }
      if (ranks.size() != bucket[i].getRanks().size()) {
        llvm::sort(ranks);
        bucket[i].setRanks(ranks);
      }
    }
    for (size_t j = 0; j < bucket.size(); ++j)
      if (merged[j]) {
        bucket[j]->erase();
        ++removed;
      }
  }
  return removed;
}

LogicalResult PlanOp::verifyRegions() {
  if ((int64_t)getMicroBatches() < 1)
    return emitOpError() << "needs at least one micro-batch, got "
                         << getMicroBatches();
  // Schedules and folds keep per-micro-batch state: an absurd count would
  // exhaust memory before any diagnostic (model configs stop at 4096).
  constexpr int64_t kMaxMicroBatches = 1 << 16;
  if ((int64_t)getMicroBatches() > kMaxMicroBatches)
    return emitOpError() << "has " << getMicroBatches()
                         << " micro-batches; tv verifies at most "
                         << kMaxMicroBatches;
  if (getFoldedMicroBatches() && !(*this)->getParentOfType<StageOp>())
    return emitOpError() << "can be folded only inside a tv.stage";
  if (getFoldedAttr() && !(*this)->getParentOfType<StageOp>())
    return emitOpError() << "can be folded only inside a tv.stage";
  for (Operation &op : getBody().front())
    if (!isa<RankProgramOp>(op))
      return op.emitOpError() << "cannot appear directly in a plan; wrap it "
                                 "in tv.rank_program";
  return success();
}

// What depends on the mesh is checked with the module's symbol table (one
// lookup per plan, not one per op).
LogicalResult PlanOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  auto mesh = symbolTable.lookupNearestSymbolFrom<MeshOp>(*this, getMeshAttr());
  if (!mesh)
    return emitOpError() << "refers to unknown mesh " << getMeshAttr();
  if (ArrayAttr folded = getFoldedAttr()) {
    llvm::SmallDenseSet<int64_t> seen;
    for (Attribute a : folded) {
      StringRef axis = cast<StringAttr>(a).getValue();
      int64_t idx = mesh.getAxisIndex(axis);
      if (idx < 0)
        return emitOpError() << "folded axis '" << axis
                             << "' is not an axis of mesh " << getMeshAttr();
      if (!seen.insert(idx).second)
        return emitOpError() << "folded axis '" << axis << "' is repeated";
    }
  }
  int64_t numRanks = mesh.getNumRanks();
  std::vector<Operation *> owner(numRanks, nullptr);
  // Phases (decision 124): a rank runs at most one program per phase.
  std::map<std::pair<int64_t, int64_t>, Operation *> phaseOwner;
  const bool phased = hasPhases();
  for (auto prog : getBody().front().getOps<RankProgramOp>()) {
    int64_t phase = prog.getPhaseOrZero();
    if (phase < 0)
      return prog.emitOpError() << "has phase " << phase
                                << "; phases are numbered from 0";
    for (int64_t r : prog.getRanks()) {
      if (r < 0 || r >= numRanks)
        return prog.emitOpError()
               << "lists rank " << r << " but mesh " << getMeshAttr() << " has "
               << numRanks << " ranks";
      auto [it, fresh] = phaseOwner.try_emplace({r, phase}, prog);
      if (!fresh) {
        InFlightDiagnostic d = prog.emitOpError()
                               << "lists rank " << r
                               << " that another rank program already runs";
        if (phased)
          d << " in phase " << phase;
        d.attachNote(it->second->getLoc()) << "first program of rank " << r;
        return d;
      }
      owner[r] = prog;
    }
  }
  if (phased) {
    if ((*this)->getParentOfType<StageOp>())
      return emitOpError() << "of a stage has rank programs in phases; a "
                              "stage's plan is joined";
    if (failed(verifyPhaseNames(*this)))
      return failure();
  }
  // A stage's plan holds only the ranks that take part in the stage.
  if (!(*this)->getParentOfType<StageOp>())
    for (int64_t r = 0; r < numRanks; ++r)
      if (!owner[r])
        return emitOpError() << "gives no program to rank " << r;
  return success();
}

LogicalResult RankProgramOp::verify() {
  if (getRanks().empty())
    return emitOpError() << "must list at least one rank";
  llvm::DenseSet<int64_t> seen;
  for (int64_t r : getRanks())
    if (!seen.insert(r).second)
      return emitOpError() << "lists rank " << r << " twice";
  for (Operation &op : getBody().front())
    if (isa<RankProgramOp, SpecOp, PlanOp, StageOp, MeshOp, LineageOp,
            LineageMapOp>(op))
      return op.emitOpError() << "cannot appear inside a rank program";
  return verifyUniqueNames(getBody().front());
}

//===----------------------------------------------------------------------===//
// StageOp
//===----------------------------------------------------------------------===//

SpecOp StageOp::getSpec() {
  for (Operation &op : getBody().front())
    if (auto s = dyn_cast<SpecOp>(op))
      return s;
  return {};
}

PlanOp StageOp::getPlan() {
  for (Operation &op : getBody().front())
    if (auto p = dyn_cast<PlanOp>(op))
      return p;
  return {};
}

LogicalResult StageOp::verifyRegions() {
  unsigned specs = 0, plans = 0;
  for (Operation &op : getBody().front()) {
    if (isa<SpecOp>(op))
      ++specs;
    else if (isa<PlanOp>(op))
      ++plans;
    else
      return op.emitOpError() << "cannot appear in a stage; a stage holds "
                                 "one tv.spec and one tv.plan";
  }
  if (specs != 1 || plans != 1)
    return emitOpError() << "must hold exactly one tv.spec and one tv.plan, "
                            "found "
                         << specs << " and " << plans;
  if (getGuarantees().empty())
    return emitOpError() << "guarantees nothing";
  return success();
}

LogicalResult StageOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  for (ArrayAttr list : {getAssumes(), getGuarantees()})
    for (Attribute a : list) {
      auto map = dyn_cast<LineageMapAttr>(a);
      if (!map)
        continue;
      auto mesh =
          symbolTable.lookupNearestSymbolFrom<MeshOp>(*this, map.getMesh());
      if (!mesh)
        return emitOpError() << "lineage map of '" << map.getSpec().getValue()
                             << "' refers to unknown mesh " << map.getMesh();
      if (failed(verifyLineageMapOnMesh(map, mesh,
                                        [&] { return emitOpError(); })))
        return failure();
    }
  return success();
}

//===----------------------------------------------------------------------===//
// LineageMapOp
//===----------------------------------------------------------------------===//

LogicalResult LineageMapOp::verify() {
  AffineMap map = getBlocks();
  if (map.getNumSymbols() != 0)
    return emitOpError() << "blocks map must not have symbols";
  if (map.getNumResults() != getShape().size())
    return emitOpError() << "blocks map has " << map.getNumResults()
                         << " results but the shape has " << getShape().size()
                         << " dimensions";
  for (int64_t n : getShape())
    if (n < 1)
      return emitOpError() << "block shape must be positive, got " << n;
  if (std::optional<ArrayRef<int64_t>> s = getScale())
    if (failed(LineageAttr::verify([&] { return emitOpError(); }, getSpecAttr(),
                                   {}, {}, ArrayAttr::get(getContext(), {}),
                                   getPlanAttr(), {0},
                                   *s)))
      return failure();
  for (NamedAttribute w : getWhere()) {
    auto v = dyn_cast<IntegerAttr>(w.getValue());
    // (A coordinate wider than 64 bits would be read truncated.)
    if (!v || v.getValue().getSignificantBits() > 64 || v.getInt() < 0)
      return emitOpError() << "where: coordinate of axis '" << w.getName().getValue()
                           << "' must be a non-negative integer";
  }
  return success();
}

LogicalResult
LineageMapOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  auto mesh = symbolTable.lookupNearestSymbolFrom<MeshOp>(*this, getMeshAttr());
  if (!mesh)
    return emitOpError() << "refers to unknown mesh " << getMeshAttr();
  if (getBlocks().getNumDims() != mesh.getAxes().size())
    return emitOpError() << "blocks map has " << getBlocks().getNumDims()
                         << " dimensions but mesh " << getMeshAttr() << " has "
                         << mesh.getAxes().size() << " axes";
  for (NamedAttribute w : getWhere()) {
    int64_t idx = mesh.getAxisIndex(w.getName().getValue());
    if (idx < 0)
      return emitOpError() << "where: mesh " << getMeshAttr()
                           << " has no axis '" << w.getName().getValue() << "'";
    int64_t c = cast<IntegerAttr>(w.getValue()).getInt();
    if (c >= mesh.getSizes()[idx])
      return emitOpError() << "where: coordinate " << c << " of axis '"
                           << w.getName().getValue() << "' is outside its size "
                           << mesh.getSizes()[idx];
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Program-op annotations (mb, src)
//===----------------------------------------------------------------------===//

std::optional<int64_t> mlir::tv::getMicroBatch(Operation *op) {
  if (auto mb = op->getAttrOfType<IntegerAttr>(kMicroBatchAttrName))
    return mb.getInt();
  return std::nullopt;
}

void mlir::tv::setMicroBatch(Operation *op, int64_t microBatch) {
  op->setAttr(kMicroBatchAttrName,
              IntegerAttr::get(IntegerType::get(op->getContext(), 64),
                               microBatch));
}

void mlir::tv::clearMicroBatch(Operation *op) {
  op->removeAttr(kMicroBatchAttrName);
}

std::optional<StringRef> mlir::tv::getSourceOp(Operation *op) {
  if (auto src = op->getAttrOfType<StringAttr>(kSourceAttrName))
    return src.getValue();
  return std::nullopt;
}

void mlir::tv::setSourceOp(Operation *op, StringRef source) {
  op->setAttr(kSourceAttrName, StringAttr::get(op->getContext(), source));
}

/// A folded op's record: a name location "folded <kind>" around the op's
/// own location, fused into the reader's under this metadata.
static constexpr StringLiteral kFoldedMark = "tv.folded";
static constexpr StringLiteral kFoldedPrefix = "folded ";

/// The op's own location and what it records, as a list.
static SmallVector<Location> recordOf(Operation *op) {
  SmallVector<Location> locs;
  if (auto f = dyn_cast<FusedLoc>(op->getLoc());
      f && f.getMetadata() == StringAttr::get(op->getContext(), kFoldedMark))
    llvm::append_range(locs, f.getLocations());
  else
    locs.push_back(op->getLoc());
  return locs;
}

void mlir::tv::foldInto(Operation *reader, Operation *folded) {
  MLIRContext *ctx = reader->getContext();
  Location mark = NameLoc::get(
      StringAttr::get(ctx, kFoldedPrefix + folded->getName().getStringRef()),
      folded->getLoc());
  SmallVector<Location> locs = recordOf(reader);
  if (llvm::is_contained(locs, mark))
    return;
  locs.push_back(mark);
  reader->setLoc(FusedLoc::get(ctx, locs, StringAttr::get(ctx, kFoldedMark)));
}

void mlir::tv::inheritFolds(Operation *reader, Operation *from) {
  MLIRContext *ctx = reader->getContext();
  auto fromLoc = dyn_cast<FusedLoc>(from->getLoc());
  if (!fromLoc || fromLoc.getMetadata() != StringAttr::get(ctx, kFoldedMark))
    return;
  SmallVector<Location> locs = recordOf(reader);
  for (Location l : fromLoc.getLocations()) {
    auto n = dyn_cast<NameLoc>(l);
    if (n && n.getName().getValue().starts_with(kFoldedPrefix) &&
        !llvm::is_contained(locs, l))
      locs.push_back(l);
  }
  reader->setLoc(FusedLoc::get(ctx, locs, StringAttr::get(ctx, kFoldedMark)));
}

/// The record `loc` is, if it is one: the folded op's kind.
static std::optional<StringRef> foldedKind(Location loc) {
  auto n = dyn_cast<NameLoc>(loc);
  if (!n || !n.getName().getValue().starts_with(kFoldedPrefix))
    return std::nullopt;
  return n.getName().getValue().drop_front(kFoldedPrefix.size());
}

SmallVector<std::pair<StringRef, Location>>
mlir::tv::foldedInto(Operation *op) {
  SmallVector<std::pair<StringRef, Location>> out;
  if (auto f = dyn_cast<FusedLoc>(op->getLoc()))
    for (Location l : f.getLocations())
      if (std::optional<StringRef> kind = foldedKind(l))
        out.emplace_back(*kind, cast<NameLoc>(l).getChildLoc());
  return out;
}

std::string mlir::tv::fileLineOf(Location loc) {
  if (auto fl = dyn_cast<FileLineColLoc>(loc))
    return fl.getFilename().str() + ":" + std::to_string(fl.getLine());
  if (auto f = dyn_cast<FusedLoc>(loc)) {
    for (Location l : f.getLocations())
      if (!foldedKind(l))
        if (std::string s = fileLineOf(l); !s.empty())
          return s;
    return "";
  }
  if (foldedKind(loc))
    return "";
  if (auto n = dyn_cast<NameLoc>(loc))
    return fileLineOf(n.getChildLoc());
  if (auto c = dyn_cast<CallSiteLoc>(loc))
    return fileLineOf(c.getCallee());
  return "";
}

bool mlir::tv::isProgramAnnotation(StringRef attrName) {
  return attrName == kMicroBatchAttrName || attrName == kSourceAttrName;
}

LogicalResult mlir::tv::verifyProgramAttrs(Operation *op) {
  if (Attribute mb = op->getAttr(kMicroBatchAttrName)) {
    auto i = dyn_cast<IntegerAttr>(mb);
    if (!i || !i.getType().isSignlessInteger(64) || i.getInt() < 0)
      return op->emitOpError()
             << "'mb' must be a non-negative i64 micro-batch index";
  }
  if (Attribute src = op->getAttr(kSourceAttrName))
    if (!isa<StringAttr>(src))
      return op->emitOpError() << "'src' must be a string";
  return success();
}

LogicalResult SourceOp::verifyRegions() {
  unsigned meshes = 0, stages = 0;
  for (Operation &op : getBody().front()) {
    if (isa<MeshOp>(op))
      ++meshes;
    else if (isa<StageOp>(op))
      ++stages;
    else
      return op.emitOpError() << "cannot appear in a tv.source";
  }
  if (meshes != 1 || stages != 1)
    return emitOpError() << "must hold one tv.mesh and one tv.stage";
  return success();
}

StageOp SourceOp::getStage() {
  return *getBody().front().getOps<StageOp>().begin();
}


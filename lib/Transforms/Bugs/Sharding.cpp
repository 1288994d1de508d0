//===- Sharding.cpp - bugs of sharded data parallelism and optimizers -----===//
#include "BugClass.h"

using namespace mlir;
using namespace mlir::tv;
using namespace mlir::tv::bugs;

/// The gradient reduce-scatter of ZeRO-2/3 and FSDP (a sum: the backward
/// already divided by the data-parallel size); for the wrong group, one
/// over axes only.
static bool shardedGradReduce(Operation *op, bool overAxes) {
  auto rs = dyn_cast<ReduceScatterOp>(op);
  if (!rs || rs.getKind() != ReduceKind::sum ||
      !reachesOutput(rs.getResult(),
                     [](StringRef n) { return n.ends_with(".grad"); }))
    return false;
  return !overAxes || (rs.getAxes() && !rs.getRankGroups());
}

/// Megatron's distributed optimizer: a parameter's view into the
/// all-gathered parameter buffer (`view`), or a rank's owned range of the
/// reduce-scattered gradient buffer.
static bool flatSlice(Operation *op, bool view) {
  auto sl = dyn_cast<SliceOp>(op);
  if (!sl || cast<RankedTensorType>(sl.getType()).getRank() != 1)
    return false;
  Operation *def = sl.getInput().getDefiningOp();
  if (view)
    return isa_and_nonnull<AllGatherOp>(def);
  // The owned range is read after the wait of an overlapped reduction, the
  // expert divide, the embedding group's all-reduce and the unscale.
  while (def && isa<WaitOp, ScaleOp, DivScalarOp, MulOp, AllReduceOp>(def)) {
    Value flat;
    for (Value in : def->getOperands())
      if (auto ty = dyn_cast<RankedTensorType>(in.getType());
          ty && ty.getRank() == 1)
        flat = in;
    def = flat ? flat.getDefiningOp() : nullptr;
  }
  return isa_and_nonnull<ReduceScatterOp>(def);
}

/// The slice taken one element off (an offset computed without the padding
/// or alignment the buffer has).
static LogicalResult offByOne(BugSite &s) {
  auto sl = cast<SliceOp>(s.target);
  int64_t start = sl.getStart()[0],
          n = cast<RankedTensorType>(sl.getType()).getDimSize(0),
          whole = cast<RankedTensorType>(sl.getInput().getType()).getDimSize(0);
  int64_t moved = start + n < whole ? start + 1 : start - 1;
  if (moved < 0)
    return sl.emitError() << s.name << ": the slice covers its whole buffer";
  sl->setAttr("start", OpBuilder(sl).getDenseI64ArrayAttr({moved}));
  s.tag(sl);
  return success();
}

void mlir::tv::bugs::addShardingBugs(std::vector<BugClass> &out) {
  const char *family = "Sharded data parallelism and optimizers";
  out.push_back(
      {"zero-wrong-shard", family,
       "A ZeRO-2 gradient reduce-scatter runs along another dimension, its "
       "result viewed as the expected shard.",
       [](const BugSite &) -> Candidates {
         return [](Operation *op) {
           auto rs = dyn_cast<ReduceScatterOp>(op);
           return rs && cast<RankedTensorType>(rs.getType()).getRank() >= 2 &&
                  reachesOutput(rs.getResult(), [](StringRef n) {
                    return n.ends_with(".grad");
                  });
         };
       },
       [](BugSite &s) -> LogicalResult {
         auto rs = cast<ReduceScatterOp>(s.target);
         auto inTy = cast<RankedTensorType>(rs.getInput().getType());
         auto outTy = cast<RankedTensorType>(rs.getType());
         int64_t dim = rs.getDim();
         if (outTy.getDimSize(dim) == 0)
           return rs.emitError() << "zero-wrong-shard: empty shard";
         int64_t n = inTy.getDimSize(dim) / outTy.getDimSize(dim);
         int64_t wrong = -1;
         for (int64_t i = 1; i < inTy.getRank() && wrong < 0; ++i) {
           int64_t d = (dim + i) % inTy.getRank();
           if (inTy.getDimSize(d) % n == 0)
             wrong = d;
         }
         if (wrong < 0)
           return rs.emitError()
                  << "zero-wrong-shard: no other dimension divisible by " << n;
         SmallVector<int64_t> shape(inTy.getShape());
         shape[wrong] /= n;
         OpBuilder bld(rs);
         auto bad = ReduceScatterOp::create(
             bld, rs.getLoc(),
             RankedTensorType::get(shape, inTy.getElementType()), rs.getInput(),
             wrong, rs.getKind(), rs.getAxesAttr(), rs.getRankGroupsAttr());
         auto view =
             ReshapeOp::create(bld, rs.getLoc(), outTy, bad.getResult());
         s.tag(bad);
         rs.getResult().replaceAllUsesWith(view.getResult());
         rs->erase();
         return success();
       }});
  out.push_back(
      {"sharded-grad-wrong-factor", family,
       "The gradient reduce-scatter of ZeRO-2/3 or FSDP averages where the "
       "backward already divided by dp.",
       [](const BugSite &) -> Candidates {
         return [](Operation *op) { return shardedGradReduce(op, false); };
       },
       [](BugSite &s) {
         auto rs = cast<ReduceScatterOp>(s.target);
         rs.setKind(ReduceKind::avg);
         s.tag(rs);
         return success();
       }});
  out.push_back(
      {"sharded-grad-wrong-group", family,
       "That reduce-scatter runs over another mesh axis of the same size "
       "(the tensor-parallel group for the data-parallel one, say).",
       [](const BugSite &s) -> Candidates {
         bool mesh = (bool)s.mesh;
         return [mesh](Operation *op) {
           return mesh && shardedGradReduce(op, true);
         };
       },
       [](BugSite &s) -> LogicalResult {
         auto rs = cast<ReduceScatterOp>(s.target);
         ArrayAttr axes = *rs.getAxes();
         int64_t size = 1;
         SmallVector<int64_t> sizes(s.mesh.getSizes());
         for (Attribute a : axes)
           size *= sizes[s.mesh.getAxisIndex(cast<StringAttr>(a).getValue())];
         Attribute other;
         for (auto [i, a] : llvm::enumerate(s.mesh.getAxes()))
           if (!llvm::is_contained(axes, a) && sizes[i] == size)
             other = a;
         if (!other)
           return rs.emitError()
                  << "sharded-grad-wrong-group: no other mesh axis of size "
                  << size;
         rs.setAxesAttr(OpBuilder(rs).getArrayAttr({other}));
         s.tag(rs);
         return success();
       }});
  out.push_back(
      {"adam-moments-swapped", family,
       "An Adam step reads exp_avg and exp_avg_sq in each other's place (a "
       "fused optimizer kernel called with its moments swapped).",
       [](const BugSite &) -> Candidates {
         return [](Operation *op) { return isa<AdamOp>(op); };
       },
       [](BugSite &s) {
         auto adam = cast<AdamOp>(s.target);
         Value m = adam.getM(), v = adam.getV();
         adam->setOperand(2, v);
         adam->setOperand(3, m);
         s.tag(adam);
         return success();
       }});
  out.push_back(
      {"flat-param-view-offset", family,
       "Megatron's distributed optimizer: a parameter's view into the "
       "all-gathered parameter buffer is taken one element off.",
       [](const BugSite &) -> Candidates {
         return [](Operation *op) { return flatSlice(op, true); };
       },
       offByOne});
  out.push_back(
      {"flat-shard-misowned", family,
       "Megatron's distributed optimizer: a rank reads its owned range of "
       "the reduce-scattered gradient buffer one element off.",
       [](const BugSite &) -> Candidates {
         return [](Operation *op) { return flatSlice(op, false); };
       },
       offByOne});
}

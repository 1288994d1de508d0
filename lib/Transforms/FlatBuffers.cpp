//===- FlatBuffers.cpp - a flat buffer's collectives read per parameter ---===//
//
// Megatron's distributed optimizer (decision 77) packs a bucket's gradients
// into one flat buffer, reduce-scatters it, steps each rank's owned range
// and all-gathers the parameter buffer, of which each parameter is a view.
// As written, every parameter's stage holds the whole bucket: tens of
// millions of elements at real size, in one flat dimension that shape
// reduction cannot shrink. Partition first states the same program per
// parameter (decision 119), exactly:
//
//  * A reduce-scatter of sum_k place(g_k, o_k) (tv.slice_grad of 1-D values
//    at disjoint offsets) gives the member of group index z the chunk
//    [zS, zS + S). Its read [a, a + L) (through elementwise ops with a
//    scalar) is, when [zS + a, zS + a + L) lies inside one g_k's range, the
//    all-reduce of g_k read there: a box of g_k when the run is one.
//  * An all-gather of sum_k place(b_k, q_k) read at [v, v + n) is the
//    all-reduce of every member's pieces inside [v, v + n), placed where
//    they land (zeros from a member with none).
//
// The first needs every member to pack the same layout; the second, every
// piece inside or outside each range read. Members are the collective's
// members in the schedule (the k-th collective on a group), and one op of
// a program can stand for several: all ops linked that way are rewritten
// together or not at all. Where anything differs (a bug of offsets, an
// unknown reader), the collective stays as written: the rewrite changes
// how a plan is cut, never what it means (docs/soundness.md).
//
//===----------------------------------------------------------------------===//
#include "TrainVerify/Analysis/PlanSchedule.h"
#include "TrainVerify/Transforms/Utils.h"

#include "mlir/Dialect/Utils/IndexingUtils.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/EquivalenceClasses.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringSet.h"
#include <map>
#include <set>

using namespace mlir;
using namespace mlir::tv;

namespace {

/// A 1-D value placed into a flat buffer at `offset`; `source` is the value
/// flattened into it (the placed value itself when it is not a reshape).
struct Piece {
  int64_t offset, length;
  Value flat, source;
};

/// A row-major run as a box: start and shape.
struct Box {
  SmallVector<int64_t> start, shape;
};

/// `v` as a sum of 1-D values placed into zeros at disjoint ranges (and
/// zeros), in order of offset.
std::optional<SmallVector<Piece>> packing(Value v) {
  auto ty = dyn_cast<RankedTensorType>(v.getType());
  if (!ty || ty.getRank() != 1)
    return std::nullopt;
  SmallVector<Piece> out;
  SmallVector<Value> stack{v};
  while (!stack.empty()) {
    Value cur = stack.pop_back_val();
    Operation *def = cur.getDefiningOp();
    if (auto add = dyn_cast_or_null<AddOp>(def)) {
      if (add.getLhs().getType() != ty || add.getRhs().getType() != ty)
        return std::nullopt;
      stack.push_back(add.getRhs());
      stack.push_back(add.getLhs());
      continue;
    }
    // Zeros place nothing (a rank whose range is all padding).
    if (isa_and_nonnull<ZerosOp>(def) && cur.getType() == ty)
      continue;
    auto sg = dyn_cast_or_null<SliceGradOp>(def);
    if (!sg) {
      // Any other value is one piece over the whole buffer (a bucket that
      // is one parameter, its identity placement folded away).
      if (cur.getType() != ty)
        return std::nullopt;
      Value source = cur;
      if (auto r = cur.getDefiningOp<ReshapeOp>())
        source = r.getInput();
      out.push_back({0, ty.getDimSize(0), cur, source});
      continue;
    }
    if (sg.getType() != ty)
      return std::nullopt;
    auto inTy = cast<RankedTensorType>(sg.getGrad().getType());
    if (inTy.getRank() != 1)
      return std::nullopt;
    Value source = sg.getGrad();
    if (auto r = source.getDefiningOp<ReshapeOp>())
      source = r.getInput();
    out.push_back({sg.getStart()[0], inTy.getDimSize(0), sg.getGrad(), source});
  }
  llvm::sort(out, [](const Piece &a, const Piece &b) {
    return a.offset < b.offset;
  });
  for (size_t i = 1; i < out.size(); ++i)
    if (out[i - 1].offset + out[i - 1].length > out[i].offset)
      return std::nullopt;
  return out;
}

/// The box that the row-major run [off, off + len) of a tensor of shape
/// `dims` is, if it is one (leading ones, one partial dimension, whole
/// trailing dimensions).
std::optional<Box> runAsBox(ArrayRef<int64_t> dims, int64_t off, int64_t len) {
  int64_t total = 1;
  for (int64_t d : dims)
    total *= d;
  if (dims.empty() || len <= 0 || off < 0 || off + len > total)
    return std::nullopt;
  SmallVector<int64_t> strides = computeSuffixProduct(dims);
  SmallVector<int64_t> start = delinearize(off, strides);
  for (size_t p = 0; p < dims.size(); ++p) {
    if (len % strides[p])
      continue;
    bool ok = start[p] + len / strides[p] <= dims[p];
    for (size_t j = p + 1; j < dims.size() && ok; ++j)
      ok = start[j] == 0;
    if (!ok)
      continue;
    Box box{start, SmallVector<int64_t>(dims.size(), 1)};
    box.shape[p] = len / strides[p];
    for (size_t j = p + 1; j < dims.size(); ++j)
      box.shape[j] = dims[j];
    return box;
  }
  return std::nullopt;
}

/// An elementwise op of `x` and scalars only, of x's type.
bool scalarElementwise(Operation *op, Value x) {
  if (op->getNumResults() != 1 || op->getResult(0).getType() != x.getType())
    return false;
  if (isa<ScaleOp, DivScalarOp, AddScalarOp, SubScalarOp, RSubScalarOp,
          PowOp, NegOp, CopyOp>(op))
    return op->getNumOperands() == 1;
  auto isScalar = [](Value v) {
    return cast<RankedTensorType>(v.getType()).getRank() == 0;
  };
  if (auto mul = dyn_cast<MulOp>(op))
    return (mul.getLhs() == x && mul.getRhs() != x && isScalar(mul.getRhs())) ||
           (mul.getRhs() == x && mul.getLhs() != x && isScalar(mul.getLhs()));
  if (auto div = dyn_cast<DivOp>(op))
    return div.getLhs() == x && div.getRhs() != x && isScalar(div.getRhs());
  return false;
}

/// A read of a collective's result, reached through `chain` (elementwise
/// ops with scalars, nearest the collective first): a 1-D slice of it, or
/// a reshape of all of it (a full slice, folded away).
struct Read {
  Operation *reader;
  int64_t start, length;
  SmallVector<Operation *> chain;
  Location loc() const { return reader->getLoc(); }
  RankedTensorType type() const {
    return cast<RankedTensorType>(reader->getResult(0).getType());
  }
};

/// An all-reduce of `x` alone (a tied embedding's shard summed over the
/// embedding group): a slice commutes with it when every member slices the
/// same range (checked by the caller).
bool allReduceOf(Operation *op, Value x) {
  auto ar = dyn_cast<AllReduceOp>(op);
  return ar && ar.getInput() == x && ar.getType() == x.getType();
}

/// Every reader of `v`, or nothing when one is not a read.
std::optional<SmallVector<Read>> readsOf(Value v, bool throughScalars) {
  SmallVector<Read> out;
  SmallVector<std::pair<Value, SmallVector<Operation *>>> work{{v, {}}};
  while (!work.empty()) {
    auto [cur, chain] = work.pop_back_val();
    for (Operation *user : cur.getUsers()) {
      if (auto sl = dyn_cast<SliceOp>(user)) {
        auto ty = cast<RankedTensorType>(sl.getType());
        if (sl.getInput() != cur || ty.getRank() != 1)
          return std::nullopt;
        out.push_back({sl, sl.getStart()[0], ty.getDimSize(0), chain});
      } else if (auto reshape = dyn_cast<ReshapeOp>(user)) {
        out.push_back({reshape, 0,
                       cast<RankedTensorType>(cur.getType()).getDimSize(0),
                       chain});
      } else if (throughScalars && (scalarElementwise(user, cur) ||
                                    allReduceOf(user, cur))) {
        SmallVector<Operation *> next = chain;
        next.push_back(user);
        work.push_back({user->getResult(0), std::move(next)});
      } else {
        return std::nullopt;
      }
    }
  }
  return out;
}

/// A program's op as a member of collectives: its group index, which must
/// be the same for every rank the op stands for.
struct Member {
  Operation *op;
  int64_t index = -1;
  bool consistent = true;
};

/// `chain` (elementwise ops with scalars, the first reading `old`) applied
/// to `base` instead, at the builder's point.
Value cloneChain(OpBuilder &b, ArrayRef<Operation *> chain, Value old,
                 Value base) {
  Value cur = base;
  for (Operation *op : chain) {
    IRMapping map;
    map.map(old, cur);
    Operation *copy = b.clone(*op, map);
    copy->getResult(0).setType(cur.getType());
    old = op->getResult(0);
    cur = copy->getResult(0);
  }
  return cur;
}

/// The value a rewritten read gives, in place of the slice: `base` (a box
/// or a 1-D run of the per-parameter collective) through copies of the
/// read's chain; the slice's readers that reshape it to that box read the
/// box itself.
void replaceRead(OpBuilder &b, const Read &read, Value base, Value old,
                 SmallVectorImpl<Operation *> &dead) {
  b.setInsertionPoint(read.reader);
  Value cur = cloneChain(b, read.chain, old, base);
  dead.push_back(read.reader);
  // A reshape of the whole result: its readers read the reshaped value.
  if (isa<ReshapeOp>(read.reader)) {
    Value v = cur.getType() == read.type()
                  ? cur
                  : ReshapeOp::create(b, read.loc(), read.type(), cur)
                        .getResult();
    read.reader->getResult(0).replaceAllUsesWith(v);
    return;
  }
  Value flat;
  for (OpOperand &use :
       llvm::make_early_inc_range(read.reader->getResult(0).getUses())) {
    auto reshape = dyn_cast<ReshapeOp>(use.getOwner());
    if (reshape && reshape.getType() == cur.getType()) {
      reshape.getResult().replaceAllUsesWith(cur);
      dead.push_back(reshape);
      continue;
    }
    if (!flat)
      flat = cur.getType() == read.type()
                 ? cur
                 : ReshapeOp::create(b, read.loc(), read.type(), cur)
                       .getResult();
    use.set(flat);
  }
}

/// A term of a squared norm: the sum of squares of a box of a
/// per-parameter all-reduce, read through elementwise ops with scalars,
/// added (times its `factors`) into the input of the all-reduce `target`.
struct Term {
  Value read; // the slice
  SmallVector<Operation *> chain;
  Operation *square = nullptr, *sum = nullptr, *target = nullptr;
  /// The constant factors on the way, in order (compared as sequences, not
  /// as floating-point products).
  std::vector<double> factors;
  mlir::tv::Box box;
};

/// The one op reading `v` (possibly as several operands), or null.
Operation *soleUser(Value v) {
  Operation *user = nullptr;
  for (Operation *u : v.getUsers()) {
    if (user && u != user)
      return nullptr;
    user = u;
  }
  return user;
}

/// The term that starts at `sl`, if it is one: every value on its way to
/// the all-reduce is read once, so the term reaches it exactly once.
std::optional<Term> termAt(SliceOp sl) {
  auto inTy = cast<RankedTensorType>(sl.getInput().getType());
  auto ty = cast<RankedTensorType>(sl.getType());
  if (ty.getRank() != inTy.getRank())
    return std::nullopt;
  Term t;
  t.read = sl.getResult();
  Value cur = sl.getResult();
  while (Operation *u = soleUser(cur)) {
    auto mul = dyn_cast<MulOp>(u);
    if (mul && mul.getLhs() == cur && mul.getRhs() == cur) {
      t.square = u;
      break;
    }
    if (!cur.hasOneUse() || !scalarElementwise(u, cur))
      return std::nullopt;
    t.chain.push_back(u);
    cur = u->getResult(0);
  }
  if (!t.square || !t.square->getResult(0).hasOneUse())
    return std::nullopt;
  cur = t.square->getResult(0);
  Operation *u = *cur.getUsers().begin();
  if (auto r = dyn_cast<ReshapeOp>(u)) {
    if (!r.getResult().hasOneUse())
      return std::nullopt;
    cur = r.getResult();
    u = *cur.getUsers().begin();
  }
  auto sum = dyn_cast<SumOp>(u);
  if (!sum || cast<RankedTensorType>(cur.getType()).getRank() != 1 ||
      cast<RankedTensorType>(sum.getType()).getRank() != 0)
    return std::nullopt;
  t.sum = sum;
  cur = sum.getResult();
  for (;;) {
    if (!cur.hasOneUse())
      return std::nullopt;
    u = *cur.getUsers().begin();
    if (auto sc = dyn_cast<ScaleOp>(u)) {
      t.factors.push_back(sc.getScalarAttr().getValueAsDouble());
      cur = sc.getResult();
      continue;
    }
    if (auto add = dyn_cast<AddOp>(u); add && add.getType() == cur.getType()) {
      cur = add.getResult();
      continue;
    }
    auto ar = dyn_cast<AllReduceOp>(u);
    if (!ar || ar.getKind() != ReduceKind::sum || ar.getType() != cur.getType())
      return std::nullopt;
    t.target = ar;
    break;
  }
  for (auto [lo, n] : llvm::zip(sl.getStart(), ty.getShape())) {
    t.box.lower.push_back(lo);
    t.box.upper.push_back(lo + n);
  }
  return t;
}

class Rewriter {
public:
  explicit Rewriter(const PlanSchedule &s) : schedule(s) {}
  void run();

private:
  /// Ops linked by membership in one collective, of one kind.
  std::vector<std::vector<Member>> components(StringRef kind);
  bool reduceScatter(ArrayRef<Member> members);
  bool allGather(ArrayRef<Member> members);
  void normTerms();
  void erase();

  /// Scalar plan inputs that lineage maps state equal to one spec tensor
  /// on every rank of the mesh.
  const llvm::StringSet<> &sharedInputs();
  /// Whether `a` and `b` are the same value on every rank running them:
  /// the same pure ops, without collectives, over shared inputs.
  bool sameEverywhere(Value a, Value b, unsigned depth = 0);
  /// Whether two terms' chains are the same function on every rank.
  bool sameChain(const Term &a, const Term &b);

  /// Whether the all-reduces that `reads` (of one component's
  /// reduce-scatters) pass through can each become one all-reduce per read.
  bool chainedAllReducesAgree(
      ArrayRef<std::pair<Operation *, const Read *>> reads);

  const PlanSchedule &schedule;
  /// Ops whose results are no longer read, to erase with what only they
  /// read; collectives only when `rewritten` holds them (all their
  /// members are rewritten).
  SmallVector<Operation *> dead;
  llvm::DenseSet<Operation *> rewritten;
  /// The members of each all-reduce step, by op.
  llvm::DenseMap<Operation *, SmallVector<Operation *>> peersOf;
  /// Each reduce-scatter's reads, taken once.
  llvm::DenseMap<Operation *, std::optional<SmallVector<Read>>> scatterReads;
  /// Each rewritten reduce-scatter: its group index, its component, and
  /// the all-reduce of each piece it packs (null where nothing reads it).
  struct Scattered {
    int64_t index;
    size_t component;
    SmallVector<Operation *> pieceReduce;
  };
  llvm::MapVector<Operation *, Scattered> scattered;
  size_t numComponents = 0;
  std::optional<llvm::StringSet<>> shared;
};

std::vector<std::vector<Member>> Rewriter::components(StringRef kind) {
  llvm::EquivalenceClasses<Operation *> linked;
  llvm::MapVector<Operation *, Member> members;
  for (const PlanStep &step : schedule.steps) {
    if (step.kind != PlanStep::Collective || step.members.empty() ||
        step.members.front().second->getName().getStringRef() != kind)
      continue;
    Operation *first = step.members.front().second;
    for (auto [index, member] : llvm::enumerate(step.members)) {
      Operation *op = member.second;
      linked.unionSets(first, op);
      auto [it, fresh] = members.try_emplace(op, Member{op, int64_t(index)});
      if (!fresh && it->second.index != int64_t(index))
        it->second.consistent = false;
    }
  }
  // Reduce-scatters whose reads pass through members of one all-reduce
  // (a tied embedding's bucket on the first and the last stage) are
  // rewritten together.
  if (kind == ReduceScatterOp::getOperationName()) {
    DenseMap<Operation *, Operation *> rootOf;
    for (auto &[op, m] : members)
      if (auto &reads = scatterReads[op] =
              readsOf(op->getResult(0), /*throughScalars=*/true))
        for (const Read &r : *reads)
          for (Operation *c : r.chain)
            if (isa<AllReduceOp>(c))
              rootOf[c] = op;
    for (auto &[ar, root] : rootOf)
      for (Operation *peer : peersOf.lookup(ar))
        if (Operation *other = rootOf.lookup(peer))
          linked.unionSets(root, other);
  }
  std::map<Operation *, std::vector<Member>> byLeader;
  std::vector<Operation *> order;
  for (auto &[op, m] : members) {
    Operation *leader = linked.getLeaderValue(op);
    auto &list = byLeader[leader];
    if (list.empty())
      order.push_back(leader);
    list.push_back(m);
  }
  std::vector<std::vector<Member>> out;
  for (Operation *leader : order)
    out.push_back(std::move(byLeader[leader]));
  return out;
}

bool Rewriter::reduceScatter(ArrayRef<Member> members) {
  struct Plan {
    ReduceScatterOp op;
    int64_t index, chunk;
    SmallVector<Piece> pieces;
    SmallVector<Read> reads;
    SmallVector<size_t> pieceOf; // per read
  };
  std::vector<Plan> plans;
  for (const Member &m : members) {
    auto rs = cast<ReduceScatterOp>(m.op);
    auto outTy = cast<RankedTensorType>(rs.getType());
    if (!m.consistent || rs.getDim() != 0 || outTy.getRank() != 1)
      return false;
    auto pieces = packing(rs.getInput());
    // Taken when the components were (reads of reduce-scatters only).
    std::optional<SmallVector<Read>> reads = scatterReads.lookup(rs);
    if (!pieces || !reads)
      return false;
    plans.push_back({rs, m.index, outTy.getDimSize(0), std::move(*pieces),
                     std::move(*reads), {}});
  }
  // One layout: the same ranges of the same shapes on every member.
  const SmallVector<Piece> &layout = plans.front().pieces;
  for (const Plan &p : plans) {
    if (p.pieces.size() != layout.size())
      return false;
    for (auto [a, b] : llvm::zip(p.pieces, layout))
      if (a.offset != b.offset || a.length != b.length ||
          a.source.getType() != b.source.getType())
        return false;
  }
  // Each read inside one piece; a piece read as boxes of its source, or
  // flat when one of its reads is not a box.
  std::vector<char> read(layout.size(), 0), boxed(layout.size(), 1);
  for (Plan &p : plans)
    for (const Read &r : p.reads) {
      int64_t at = p.index * p.chunk + r.start;
      auto it = llvm::upper_bound(layout, at, [](int64_t x, const Piece &pc) {
        return x < pc.offset;
      });
      if (it == layout.begin())
        return false;
      size_t k = std::prev(it) - layout.begin();
      if (at + r.length > layout[k].offset + layout[k].length)
        return false;
      p.pieceOf.push_back(k);
      read[k] = 1;
      auto srcTy = cast<RankedTensorType>(layout[k].source.getType());
      if (!runAsBox(srcTy.getShape(), at - layout[k].offset, r.length))
        boxed[k] = 0;
    }

  SmallVector<std::pair<Operation *, const Read *>> all;
  for (const Plan &p : plans)
    for (const Read &r : p.reads)
      all.push_back({p.op, &r});
  if (!chainedAllReducesAgree(all))
    return false;

  for (Plan &p : plans) {
    rewritten.insert(p.op);
    for (const Read &r : p.reads)
      for (Operation *c : r.chain)
        if (isa<AllReduceOp>(c))
          rewritten.insert(c);
  }
  const size_t component = numComponents++;
  for (Plan &p : plans) {
    OpBuilder b(p.op);
    SmallVector<Value> reduced(layout.size());
    for (size_t k = 0; k < layout.size(); ++k) {
      if (!read[k])
        continue;
      Value in = boxed[k] ? p.pieces[k].source : p.pieces[k].flat;
      reduced[k] = AllReduceOp::create(b, p.op.getLoc(), in.getType(), in,
                                       p.op.getKind(), p.op.getAxesAttr(),
                                       p.op.getRankGroupsAttr());
    }
    Scattered &sc = scattered[p.op];
    sc.index = p.index;
    sc.component = component;
    for (Value v : reduced)
      sc.pieceReduce.push_back(v ? v.getDefiningOp() : nullptr);
    for (auto [r, k] : llvm::zip(p.reads, p.pieceOf)) {
      int64_t off = p.index * p.chunk + r.start - layout[k].offset;
      auto inTy = cast<RankedTensorType>(reduced[k].getType());
      b.setInsertionPoint(r.reader);
      Value base;
      if (boxed[k]) {
        Box box = *runAsBox(inTy.getShape(), off, r.length);
        base = SliceOp::create(b, r.loc(),
                               RankedTensorType::get(box.shape,
                                                     inTy.getElementType()),
                               reduced[k], b.getDenseI64ArrayAttr(box.start));
      } else {
        base = SliceOp::create(
            b, r.loc(),
            RankedTensorType::get({r.length}, inTy.getElementType()),
            reduced[k], b.getDenseI64ArrayAttr({off}));
      }
      replaceRead(b, r, base, p.op.getResult(), dead);
      llvm::append_range(dead, r.chain);
    }
    dead.push_back(p.op);
  }
  return true;
}

bool Rewriter::allGather(ArrayRef<Member> members) {
  struct Plan {
    AllGatherOp op;
    int64_t index, chunk;
    SmallVector<Piece> pieces;
    SmallVector<Read> reads;
  };
  std::vector<Plan> plans;
  // Every range read by any member, with the shape its readers give it.
  std::map<std::pair<int64_t, int64_t>, SmallVector<int64_t>> views;
  for (const Member &m : members) {
    auto ag = cast<AllGatherOp>(m.op);
    auto inTy = cast<RankedTensorType>(ag.getInput().getType());
    if (!m.consistent || ag.getDim() != 0 || inTy.getRank() != 1)
      return false;
    if (auto order = ag.getOrder())
      for (auto [i, o] : llvm::enumerate(*order))
        if (o != int64_t(i))
          return false;
    auto pieces = packing(ag.getInput());
    auto reads = readsOf(ag.getResult(), /*throughScalars=*/false);
    if (!pieces || !reads)
      return false;
    for (const Read &r : *reads) {
      SmallVector<int64_t> &shape = views[{r.start, r.length}];
      if (isa<ReshapeOp>(r.reader) && shape.empty())
        shape.assign(r.type().getShape().begin(), r.type().getShape().end());
      for (Operation *user : r.reader->getUsers())
        if (auto reshape = dyn_cast<ReshapeOp>(user); reshape && shape.empty())
          shape.assign(cast<RankedTensorType>(reshape.getType())
                           .getShape()
                           .begin(),
                       cast<RankedTensorType>(reshape.getType())
                           .getShape()
                           .end());
    }
    plans.push_back({ag, m.index, inTy.getDimSize(0), std::move(*pieces),
                     std::move(*reads)});
  }
  // Each member's pieces inside or outside each range; a range read as its
  // readers' shape when every piece in it is a box of that shape.
  for (auto &[range, shape] : views) {
    auto [v, n] = range;
    if (shape.empty())
      shape.push_back(n);
    bool boxes = true;
    for (const Plan &p : plans)
      for (const Piece &pc : p.pieces) {
        int64_t at = p.index * p.chunk + pc.offset;
        if (at + pc.length <= v || at >= v + n)
          continue;
        if (at < v || at + pc.length > v + n)
          return false;
        boxes = boxes && runAsBox(shape, at - v, pc.length).has_value();
      }
    if (!boxes)
      shape.assign({n});
  }

  for (Plan &p : plans)
    rewritten.insert(p.op);
  for (Plan &p : plans) {
    OpBuilder b(p.op);
    Location loc = p.op.getLoc();
    Type elem = cast<RankedTensorType>(p.op.getType()).getElementType();
    std::map<std::pair<int64_t, int64_t>, Value> gathered;
    for (auto &[range, shape] : views) {
      auto [v, n] = range;
      auto ty = RankedTensorType::get(shape, elem);
      Value sum;
      for (const Piece &pc : p.pieces) {
        int64_t at = p.index * p.chunk + pc.offset;
        if (at < v || at + pc.length > v + n)
          continue;
        Box box = *runAsBox(shape, at - v, pc.length);
        auto boxTy = RankedTensorType::get(box.shape, elem);
        Value val = pc.source.getType() == boxTy
                        ? pc.source
                        : ReshapeOp::create(b, loc, boxTy, pc.flat).getResult();
        Value placed = SliceGradOp::create(b, loc, ty, val,
                                           b.getDenseI64ArrayAttr(box.start));
        sum = sum ? AddOp::create(b, loc, ty, sum, placed).getResult() : placed;
      }
      if (!sum)
        sum = ZerosOp::create(b, loc, ty);
      gathered[range] = AllReduceOp::create(b, loc, ty, sum, ReduceKind::sum,
                                            p.op.getAxesAttr(),
                                            p.op.getRankGroupsAttr());
    }
    for (const Read &r : p.reads) {
      replaceRead(b, r, gathered.at({r.start, r.length}), p.op.getResult(),
                  dead);
    }
    dead.push_back(p.op);
  }
  return true;
}

bool Rewriter::chainedAllReducesAgree(
    ArrayRef<std::pair<Operation *, const Read *>> reads) {
  // Each chained all-reduce: the ranges read through it, in program order.
  llvm::MapVector<Operation *, SmallVector<const Read *>> through;
  for (auto [root, r] : reads)
    for (Operation *c : r->chain)
      if (isa<AllReduceOp>(c))
        through[c].push_back(r);
  for (auto &[ar, rs] : through) {
    llvm::sort(rs, [](const Read *a, const Read *b) {
      return a->reader->isBeforeInBlock(b->reader);
    });
    // A read's all-reduce becomes one per read where the read stands: no
    // other collective on the same group may stand between the first and
    // the last of them, or the k-th on the group would meet another.
    Operation *last = rs.back()->reader;
    for (Operation *op = ar->getNextNode(); op && op != last;
         op = op->getNextNode())
      if (op != ar && isa<CollectiveOpInterface>(op) &&
          op->getAttr("axes") == ar->getAttr("axes") &&
          op->getAttr("rank_groups") == ar->getAttr("rank_groups"))
        return false;
    if (llvm::any_of(rs, [&](const Read *r) {
          return r->reader->getBlock() != ar->getBlock();
        }))
      return false;
  }
  // Every member of each such all-reduce is one of them, reading the same
  // ranges in the same order.
  for (auto &[ar, rs] : through)
    for (Operation *peer : peersOf.lookup(ar)) {
      auto it = through.find(peer);
      if (it == through.end() || it->second.size() != rs.size())
        return false;
      for (auto [a, b] : llvm::zip(rs, it->second))
        if (a->start != b->start || a->length != b->length)
          return false;
    }
  return true;
}

const llvm::StringSet<> &Rewriter::sharedInputs() {
  if (shared)
    return *shared;
  shared.emplace();
  MeshOp mesh = schedule.mesh;
  auto module = mesh->getParentOfType<ModuleOp>();
  if (!module)
    return *shared;
  int64_t ranks = 1;
  for (int64_t n : mesh.getSizes())
    ranks *= n;
  // Per plan tensor: the spec tensor its maps name and the ranks covered.
  llvm::StringMap<std::pair<StringAttr, std::vector<char>>> cover;
  llvm::StringSet<> bad;
  for (Operation &op : *module.getBody()) {
    auto lm = dyn_cast<LineageMapOp>(op);
    if (!lm)
      continue;
    StringRef name = lm.getPlan();
    std::optional<ArrayRef<int64_t>> scale = lm.getScale();
    auto [it, fresh] = cover.try_emplace(
        name, lm.getSpecAttr(), std::vector<char>(ranks, 0));
    if (lm.getMesh() != mesh.getSymName() || !lm.getShape().empty() ||
        (scale && (scale->size() != 2 || (*scale)[0] != (*scale)[1])) ||
        it->second.first != lm.getSpecAttr()) {
      bad.insert(name);
      continue;
    }
    SmallVector<std::pair<int64_t, int64_t>> fixed;
    for (NamedAttribute w : lm.getWhere()) {
      int64_t axis = mesh.getAxisIndex(w.getName().getValue());
      auto v = dyn_cast<IntegerAttr>(w.getValue());
      if (axis < 0 || !v) {
        bad.insert(name);
        break;
      }
      fixed.push_back({axis, v.getInt()});
    }
    for (int64_t r = 0; r < ranks; ++r) {
      SmallVector<int64_t> c = mesh.getCoords(r);
      if (llvm::all_of(fixed, [&](auto f) { return c[f.first] == f.second; }))
        it->second.second[r] = 1;
    }
  }
  for (auto &entry : cover)
    if (!bad.contains(entry.getKey()) &&
        llvm::all_of(entry.getValue().second, [](char c) { return c; }))
      shared->insert(entry.getKey());
  return *shared;
}

bool Rewriter::sameEverywhere(Value a, Value b, unsigned depth) {
  Operation *da = a.getDefiningOp(), *db = b.getDefiningOp();
  if (!da || !db || depth > 16 || a.getType() != b.getType() ||
      da->getName() != db->getName() ||
      da->getAttrDictionary() != db->getAttrDictionary() ||
      da->getNumOperands() != db->getNumOperands() ||
      cast<OpResult>(a).getResultNumber() !=
          cast<OpResult>(b).getResultNumber())
    return false;
  if (auto in = dyn_cast<InputOp>(da))
    return cast<RankedTensorType>(a.getType()).getRank() == 0 &&
           sharedInputs().contains(in.getName());
  // Only ops whose value is a function of their operands and attributes
  // alone: not those that read the rank's mesh coordinate (an embedding,
  // a target logit or a mask along a `vocab_axis` or `query_axis`).
  if (!isa<ScaleOp, DivScalarOp, AddScalarOp, SubScalarOp, RSubScalarOp,
           PowOp, NegOp, CopyOp, SqrtOp, MulOp, DivOp, AddOp, SubOp,
           ReshapeOp, ZerosOp>(da))
    return false;
  for (auto [x, y] : llvm::zip(da->getOperands(), db->getOperands()))
    if (!sameEverywhere(x, y, depth + 1))
      return false;
  return true;
}

bool Rewriter::sameChain(const Term &a, const Term &b) {
  if (a.chain.size() != b.chain.size())
    return false;
  Value pa = a.read, pb = b.read;
  for (auto [x, y] : llvm::zip(a.chain, b.chain)) {
    if (x->getName() != y->getName() ||
        x->getAttrDictionary() != y->getAttrDictionary() ||
        x->getNumOperands() != y->getNumOperands())
      return false;
    for (auto [u, v] : llvm::zip(x->getOperands(), y->getOperands())) {
      if ((u == pa) != (v == pb))
        return false;
      if (u != pa && !sameEverywhere(u, v))
        return false;
    }
    pa = x->getResult(0);
    pb = y->getResult(0);
  }
  return true;
}

void Rewriter::normTerms() {
  // Each piece's terms on each rewritten reduce-scatter's program.
  struct PieceTerms {
    SmallVector<std::pair<Operation *, std::vector<Term>>> byOp;
  };
  std::map<std::pair<size_t, size_t>, PieceTerms> pieces;
  llvm::DenseSet<Operation *> targets;
  for (auto &[rs, sc] : scattered)
    for (auto [k, ar] : llvm::enumerate(sc.pieceReduce)) {
      if (!ar)
        continue;
      std::vector<Term> terms;
      for (Operation *u : ar->getResult(0).getUsers())
        if (auto sl = dyn_cast<SliceOp>(u))
          if (std::optional<Term> t = termAt(sl)) {
            targets.insert(t->target);
            terms.push_back(std::move(*t));
          }
      pieces[{sc.component, k}].byOp.push_back({rs, std::move(terms)});
    }
  if (targets.empty())
    return;
  // The schedule's steps of each component, and the step of each rank's
  // target all-reduce.
  std::vector<SmallVector<const PlanStep *>> instances(numComponents);
  llvm::DenseMap<std::pair<int64_t, Operation *>, size_t> stepOf;
  for (auto [i, step] : llvm::enumerate(schedule.steps)) {
    if (step.kind != PlanStep::Collective || step.members.empty())
      continue;
    Operation *first = step.members.front().second;
    if (auto it = scattered.find(first); it != scattered.end())
      instances[it->second.component].push_back(&step);
    if (isa<AllReduceOp>(first))
      for (auto &[rank, op] : step.members)
        if (targets.contains(op))
          stepOf[{rank, op}] = i;
  }

  for (auto &[key, pt] : pieces) {
    auto [component, k] = key;
    const Term *ref = nullptr;
    for (auto &[rs, terms] : pt.byOp)
      if (!terms.empty() && !ref)
        ref = &terms.front();
    if (!ref)
      continue;
    // One function of the all-reduced piece, one factor, everywhere.
    bool ok = true;
    for (auto &[rs, terms] : pt.byOp)
      for (const Term &t : terms)
        ok = ok && t.factors == ref->factors && sameChain(t, *ref);
    // The member that counts the whole piece: the lowest group index with
    // a term, which every program at that index must have.
    std::optional<int64_t> z0;
    llvm::DenseMap<Operation *, const std::vector<Term> *> termsOf;
    for (auto &[rs, terms] : pt.byOp) {
      termsOf[rs] = &terms;
      int64_t z = scattered.lookup(rs).index;
      if (!terms.empty() && (!z0 || z < *z0))
        z0 = z;
    }
    for (auto &[rs, terms] : pt.byOp)
      ok = ok && (scattered.lookup(rs).index != *z0 || !terms.empty());
    // In every group, the members' boxes tile the piece, and every term
    // reaches one all-reduce step.
    auto shape = cast<RankedTensorType>(
                     scattered.lookup(pt.byOp.front().first)
                         .pieceReduce[k]
                         ->getResult(0)
                         .getType())
                     .getShape();
    for (const PlanStep *step : instances[component]) {
      if (!ok)
        break;
      SmallVector<mlir::tv::Box> boxes;
      std::optional<size_t> at;
      for (auto &[rank, op] : step->members) {
        const std::vector<Term> *terms = termsOf.lookup(op);
        if (!terms) {
          ok = false;
          break;
        }
        for (const Term &t : *terms) {
          auto it = stepOf.find({rank, t.target});
          if (it == stepOf.end() || (at && *at != it->second))
            ok = false;
          else
            at = it->second;
          boxes.push_back(t.box);
        }
      }
      ok = ok && tilesExactly(mlir::tv::Box::full(shape), boxes);
    }
    if (!ok)
      continue;

    // The member at z0 counts the whole piece, the others nothing.
    for (auto &[rs, terms] : pt.byOp) {
      const Scattered &sc = scattered.lookup(rs);
      for (auto [i, t] : llvm::enumerate(terms)) {
        OpBuilder b(t.square);
        Location loc = t.sum->getLoc();
        Value repl;
        if (sc.index == *z0 && i == 0) {
          Value cur =
              cloneChain(b, t.chain, t.read, sc.pieceReduce[k]->getResult(0));
          auto ty = cast<RankedTensorType>(cur.getType());
          auto square = MulOp::create(b, t.square->getLoc(), ty, cur, cur);
          // What was folded into the dropped slice (a copy), the square
          // now reads: a counterexample still names it.
          inheritFolds(square, t.read.getDefiningOp());
          Value sq = square;
          if (ty.getRank() != 1)
            sq = ReshapeOp::create(
                b, loc,
                RankedTensorType::get({ty.getNumElements()},
                                      ty.getElementType()),
                sq);
          IRMapping map;
          map.map(t.sum->getOperand(0), sq);
          repl = b.clone(*t.sum, map)->getResult(0);
        } else {
          repl = ZerosOp::create(b, loc, t.sum->getResult(0).getType());
        }
        t.sum->getResult(0).replaceAllUsesWith(repl);
        dead.push_back(t.sum);
      }
    }
  }
}

void Rewriter::erase() {
  SmallVector<Operation *> work(dead.rbegin(), dead.rend());
  llvm::DenseSet<Operation *> erased;
  while (!work.empty()) {
    Operation *op = work.pop_back_val();
    if (erased.contains(op) || !op->use_empty())
      continue;
    if (!isPure(op) && !rewritten.contains(op))
      continue;
    for (Value in : op->getOperands())
      if (Operation *def = in.getDefiningOp())
        work.push_back(def);
    erased.insert(op);
    op->erase();
  }
}

void Rewriter::run() {
  for (const PlanStep &step : schedule.steps)
    if (step.kind == PlanStep::Collective && !step.members.empty() &&
        isa<AllReduceOp>(step.members.front().second))
      for (auto &[rank, op] : step.members)
        for (auto &[r2, peer] : step.members)
          if (peer != op && !llvm::is_contained(peersOf[op], peer))
            peersOf[op].push_back(peer);
  for (auto &component : components(ReduceScatterOp::getOperationName()))
    (void)reduceScatter(component);
  for (auto &component : components(AllGatherOp::getOperationName()))
    (void)allGather(component);
  normTerms();
  erase();
}

} // namespace

void mlir::tv::readFlatBuffersPerParameter(ModuleOp module) {
  // Most plans have no flat buffer: nothing to schedule.
  auto packed = [](Value v) {
    return cast<RankedTensorType>(v.getType()).getRank() == 1;
  };
  bool any = false;
  module.walk([&](Operation *op) {
    if (isa<ReduceScatterOp, AllGatherOp>(op) && packed(op->getOperand(0)))
      any = true;
  });
  if (!any)
    return;
  module.walk([&](PlanOp plan) {
    // A plan that cannot be scheduled is diagnosed by partition itself.
    FailureOr<PlanSchedule> schedule = [&] {
      ScopedDiagnosticHandler quiet(module.getContext(),
                                    [](Diagnostic &) { return success(); });
      return PlanSchedule::build(plan, /*localSteps=*/false);
    }();
    if (succeeded(schedule))
      Rewriter(*schedule).run();
  });
}

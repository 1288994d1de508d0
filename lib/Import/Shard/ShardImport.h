//===- ShardImport.h - the shard-partition importer's emitter ---*- C++ -*-===//
//
// Shared by ShardImport.cpp (the pair, the grid, the lineages) and
// ShardEmitter.cpp / ShardStructured.cpp (one function body translated into
// a tv program). Internal to lib/Translate.
//
//===----------------------------------------------------------------------===//
#ifndef TRAINVERIFY_LIB_TRANSLATE_SHARDIMPORT_H
#define TRAINVERIFY_LIB_TRANSLATE_SHARDIMPORT_H

#include "TrainVerify/Dialect/TVDialect.h"
#include "TrainVerify/Translate/Translations.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tosa/IR/TosaOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Operation.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/Support/ScopedPrinter.h"

#include <functional>
#include <set>
#include <map>
#include <vector>
#include <string>

namespace mlir::tv::shardimport {

/// The grid: axis sizes, and the coordinates of a process (row-major, the
/// last axis fastest, as shard numbers processes).
struct Grid {
  std::string name;
  SmallVector<int64_t> sizes;
  int64_t numProcesses() const {
    int64_t n = 1;
    for (int64_t s : sizes)
      n *= s;
    return n;
  }
  SmallVector<int64_t> coords(int64_t p) const {
    SmallVector<int64_t> c(sizes.size());
    for (int64_t i = sizes.size() - 1; i >= 0; --i) {
      c[i] = p % sizes[i];
      p /= sizes[i];
    }
    return c;
  }
  int64_t linear(ArrayRef<int64_t> c) const {
    int64_t p = 0;
    for (auto [ci, s] : llvm::zip(c, sizes))
      p = p * s + ci;
    return p;
  }
  static std::string axis(int64_t i) { return "g" + std::to_string(i); }
};

/// A type in the tv module: integer tensors become f32 tensors, proven as
/// polynomials over the reals (docs/shard-validation.md, "Integers").
/// A scalar of data (a float, an integer other than `index`): read as a
/// 0-d tensor.
inline bool isDataScalar(Type t) {
  return isa<FloatType>(t) || t.isSignlessInteger();
}

/// A value of data tv models: a static tensor or a data scalar.
inline bool isDataType(Type t) {
  if (auto ty = dyn_cast<RankedTensorType>(t))
    return ty.hasStaticShape();
  return isDataScalar(t);
}

/// The shape of a data value (a scalar: none).
inline ArrayRef<int64_t> dataShape(Type t) {
  if (auto ty = dyn_cast<RankedTensorType>(t))
    return ty.getShape();
  return {};
}

inline RankedTensorType tvType(Type t) {
  if (isDataScalar(t))
    t = RankedTensorType::get({}, t);
  // Integers keep their type: n-bit values modulo 2^n (docs/integers.md).
  return cast<RankedTensorType>(t);
}

/// Static result types for `f` after its arguments were given static
/// types: upstream's tosa-infer-shapes and canonicalize, and the shard
/// collectives' own shape rules, to a fixpoint; the function's result
/// types become its returned values' (casts to dynamic types dropped).
LogicalResult refineStaticShapes(func::FuncOp f);

/// `process`'s constants for the process queries of `f`
/// (process_multi_index, process_linear_index) and for `shard.shard_shape`
/// of a static shape on a constant device, so that upstream's folding can
/// make the local types static.
void foldProcessQueries(func::FuncOp f, int64_t process);

/// The dynamic grid axes of `input` (and the same grids of `part`) and the
/// dynamic dimensions of `spec`'s arguments given static sizes, each
/// choice stated in a remark (ShardSpecialize.cpp).
LogicalResult specializeSizes(ModuleOp input, ModuleOp part,
                              func::FuncOp spec, const ShardSizes &sizes,
                              Location loc);

/// tv's elementwise op `name` (exp, tanh, log, sqrt, rsqrt, abs, neg,
/// sigmoid; add, sub, mul, div) on `operands`, of type `type`; failure for
/// another name.
FailureOr<Value> buildElementwise(OpBuilder &b, Location loc, StringRef name,
                                  ArrayRef<Value> operands,
                                  RankedTensorType type);

/// Whether `v` is a tensor of floats.
/// The tv integer operation of an arith op (andi, ..., shrui), if any.
inline std::optional<::mlir::tv::IntFn> intFnOf(Operation *op) {
  if (isa<arith::AndIOp>(op))
    return ::mlir::tv::IntFn::andi;
  if (isa<arith::OrIOp>(op))
    return ::mlir::tv::IntFn::ori;
  if (isa<arith::XOrIOp>(op))
    return ::mlir::tv::IntFn::xori;
  if (isa<arith::MaxSIOp>(op))
    return ::mlir::tv::IntFn::maxsi;
  if (isa<arith::MinSIOp>(op))
    return ::mlir::tv::IntFn::minsi;
  if (isa<arith::MaxUIOp>(op))
    return ::mlir::tv::IntFn::maxui;
  if (isa<arith::MinUIOp>(op))
    return ::mlir::tv::IntFn::minui;
  if (isa<arith::ShLIOp>(op))
    return ::mlir::tv::IntFn::shli;
  if (isa<arith::ShRSIOp>(op))
    return ::mlir::tv::IntFn::shrsi;
  if (isa<arith::ShRUIOp>(op))
    return ::mlir::tv::IntFn::shrui;
  return std::nullopt;
}

inline bool isFloatTensor(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  return t && isa<FloatType>(t.getElementType());
}

/// A value's halos on one process (a sharding with `halo_sizes`): per
/// dimension, the halo rows before and after the core block (0 where the
/// dimension is not split) and the core block's global bounds.
struct HaloLayout {
  SmallVector<int64_t> before, after, coreLo, coreHi, global;
  /// Per dimension, the global positions where some process's core or
  /// halo starts or ends: tiles are cut there, so that the tiles of all
  /// processes have equal or disjoint global boxes (one lineage per box).
  SmallVector<SmallVector<int64_t>> cuts;
  bool empty() const { return before.empty(); }
  /// The local shape: core plus halos.
  SmallVector<int64_t> localShape() const {
    SmallVector<int64_t> s;
    for (size_t d = 0; d < before.size(); ++d)
      s.push_back(before[d] + coreHi[d] - coreLo[d] + after[d]);
    return s;
  }
};

/// One tile of a value with halos: `offs[d]` is -1 (in the halo before),
/// 0 (in the core) or 1 (in the halo after) along each dimension. Its local
/// and global boxes; `defined` when the global box lies inside the tensor
/// (a halo cell is its neighbour's core cell, and there is none at the
/// grid's edge). `suffix` names the tile's plan tensor: "" for the whole
/// core, ".box[lo:hi,...]" (its global box) otherwise.
struct HaloTile {
  SmallVector<int64_t> offs, localLo, localHi, globalLo, globalHi;
  bool defined = true;
  std::string suffix;
  SmallVector<int64_t> shape() const {
    SmallVector<int64_t> s;
    for (auto [lo, hi] : llvm::zip(localLo, localHi))
      s.push_back(hi - lo);
    return s;
  }
};

/// The tiles of `h`: the product of each dimension's ranges (halo before,
/// core, halo after, each cut at `h.cuts`), the last dimension fastest.
std::vector<HaloTile> haloTiles(const HaloLayout &h);

// ShardLineages.cpp: the blocks and lineages the annotations give.
/// Marks the translation as having found a wrong partition (exit 1).
void markWrongPartition();
/// The block of `process` along one dimension with split axes `axes`:
/// (index, count), the first listed axis major.
std::pair<int64_t, int64_t> blockOf(const Grid &grid, ArrayRef<int16_t> axes,
                                    int64_t process);
/// The lineages of the module, each at the annotation it comes from.
using Lineages = SmallVector<std::pair<Location, LineageAttr>>;
/// Lineages of one spec tensor (`tensor`, full `shape`) with `sharding`:
/// one per distinct block (with halos: per tile), naming every process that
/// holds it, or with `witness` the first process that holds it and for
/// which `witness` holds. With `local`, each process's block is checked
/// against that partitioned value's type (a mismatch is a wrong
/// partition); `shapesOut` / `halosOut` receive each process's local shape
/// and halo layout.
LogicalResult
lineagesOf(Operation *where, StringRef tensor, ArrayRef<int64_t> shape,
           shard::ShardingOp sharding, const Grid &grid, Lineages &out,
           llvm::function_ref<bool(int64_t)> witness = nullptr,
           Value local = nullptr,
           std::vector<SmallVector<int64_t>> *shapesOut = nullptr,
           std::vector<HaloLayout> *halosOut = nullptr);
/// The sharding an argument is annotated with (its own shard.shard, else
/// the first for its users).
shard::ShardingOp argSharding(Value arg);
/// The shard.sharding a !shard.sharding value is (through
/// shard.get_sharding); null when it is neither.
shard::ShardingOp resolvedSharding(Value v);
/// The sharding of a result: the outermost shard.shard producing it.
shard::ShardingOp resultSharding(Value v);

/// The dense tensor constants of the spec and of every process: a name
/// per distinct value, and who reads it (process -1: the spec).
struct DenseConstants {
  DenseMap<Attribute, std::string> names;
  std::set<std::pair<std::string, int64_t>> used;
  std::map<std::string, RankedTensorType> types;
  std::map<std::string, Location> locs;
};

/// Translates one function body into the ops of a tv program (spec, or the
/// program of one process), built with the tv ops' generated builders at
/// the end of the program's block (`b`), each at the location of the
/// upstream op it comes from.
class Emitter {
public:
  Emitter(const Grid &grid, int64_t process, OpBuilder &b)
      : grid(grid), process(process), b(b) {}

  LogicalResult function(func::FuncOp f);

  /// The tv value of a translated upstream value (null if none).
  Value lookup(Value v) const { return name.lookup(v); }

  /// The halos of the function's arguments and results on this process
  /// (by position; absent: none).
  void setHalos(std::map<unsigned, HaloLayout> args,
                std::map<unsigned, HaloLayout> results) {
    argHalos = std::move(args);
    resultHalos = std::move(results);
  }

  /// Where the plan inputs that hold undefined halo cells are recorded
  /// (name, type): the importer ties each to a spec input of its own that
  /// nothing in the spec reads, so it is a free variable of every stage
  /// that reaches it (a result that depends on it fails with a
  /// counterexample; one that does not is proven).
  void setFreeInputs(std::vector<std::pair<std::string, RankedTensorType>> *f) {
    freeInputs = f;
  }
  /// Where dense constants are registered (none: refused).
  void setConstants(DenseConstants *c) { constants = c; }

  /// The `tensor.empty` ops whose values the function reads (by ordinal in
  /// program order), each an input "empty<K>" of the translated program.
  const std::map<unsigned, Value> &readEmpties() const { return emptyRead; }

private:
  LogicalResult checkTensor(Operation *op, Type t);

  FailureOr<Value> use(Operation *op, Value v);
  /// Attributes of the built ops.
  FloatAttr num(double c) { return b.getF64FloatAttr(c); }
  DenseI64ArrayAttr ints(ArrayRef<int64_t> v) {
    return b.getDenseI64ArrayAttr(v);
  }
  IntegerAttr i64(int64_t v) { return b.getI64IntegerAttr(v); }
  /// A plan input of the given name (an argument, an undefined value).
  Value input(Location loc, Type t, const Twine &inputName);
  LogicalResult unsupported(Operation *op);

  /// The single scalar op of an elementwise linalg.generic's body applied to
  /// its inputs, as a tv op name (unary or binary).
  static std::optional<std::pair<StringRef, unsigned>> scalarOp(Operation *op);

  LogicalResult unaryOrBinary(Operation *op, StringRef tvName,
                              ArrayRef<Value> ins, Value result);

  /// A structured op (linalg.generic, linalg.reduce) over its iteration
  /// space: every input is brought to the space's shape (transposed into
  /// loop order, unit dimensions for the loops it does not index,
  /// broadcast), the body's scalar ops become tv's elementwise ops on those
  /// tensors, and a reduction's combiner (`addf` / `maximumf` of the
  /// accumulator and a term) becomes tv.sum / tv.max over the reduction
  /// loops; the result is then transposed into the output's order.
  LogicalResult structured(Operation *op, ArrayRef<Value> ins, Value init,
                           ArrayRef<AffineMap> inMaps, AffineMap outMap,
                           ArrayRef<bool> reduction, Block &body, Value result,
                           unsigned output = 0);

  LogicalResult generic(linalg::GenericOp g);

  LogicalResult reduce(linalg::ReduceOp r);

  LogicalResult matmul(linalg::MatmulOp m);
  /// A float tosa.matmul (batched), read directly.
  LogicalResult tosaMatmul(tosa::MatMulOp m);
  /// A data scalar computed outside a structured op (a 0-d tensor):
  /// constants folded, the rest tv's elementwise ops.
  LogicalResult scalarData(Operation *op, StringRef tvName);
  /// A data scalar operand as a 0-d tensor: a constant materialized, else
  /// its translation.
  FailureOr<Value> scalarOperand(Operation *op, Value v);
  /// `c` as a tensor of `type` (positions times 0, plus c).
  Value constantTensor(Location loc, RankedTensorType type, double c);
  /// The element of `type` that constant `indices` name (refused if one
  /// is not a process constant or lies outside).
  FailureOr<SmallVector<int64_t>> elementIndex(Operation *op,
                                               ValueRange indices,
                                               RankedTensorType type);
  LogicalResult extract(tensor::ExtractOp op);
  LogicalResult insert(tensor::InsertOp op);
  LogicalResult pad(tensor::PadOp op);

  /// Group axes of a collective as tv mesh axes (in grid order only: tv
  /// orders a group by rank, shard by the listed axes, first major).
  FailureOr<ArrayAttr> groupAxes(Operation *op, ArrayRef<int16_t> axes);

  /// Builds one tv collective on a translated input over the group `axes`:
  /// `make(groupAxes)` creates it.
  using MakeCollective = llvm::function_ref<Value(ArrayAttr)>;
  FailureOr<Value> collectiveOf(Operation *op, ArrayRef<int16_t> axes,
                                MakeCollective make);
  /// The same on an upstream input, defining `result`.
  LogicalResult collective(Operation *op, Value input, ArrayRef<int16_t> axes,
                           Value result,
                           llvm::function_ref<Value(Value, ArrayAttr)> make);

  // ShardComm.cpp: communication with a root or a peer, and insert_slice.
  /// The process of this one's group (over `axes`) whose in-group
  /// multi-index is `index` (an operand of `op` on failure: named there).
  FailureOr<int64_t> peerAt(Operation *op, ArrayRef<int16_t> axes,
                            ArrayRef<int64_t> index);
  /// Whether this process's in-group multi-index over `axes` is `index`.
  bool isAt(ArrayRef<int16_t> axes, ArrayRef<int64_t> index) const;
  /// `v` holds values the op leaves undefined (`why`): read, it becomes a
  /// plan input of its own that no lineage names.
  void undefined(Value v, StringRef why) { undefs[v] = why.str(); }
  /// `shard.broadcast` / `shard.reduce` with a static root.
  LogicalResult rootCollective(Operation *op);
  LogicalResult gather(shard::GatherOp op);
  LogicalResult scatter(shard::ScatterOp op);
  LogicalResult send(shard::SendOp op);
  LogicalResult recv(shard::RecvOp op);
  LogicalResult shift(shard::ShiftOp op);
  LogicalResult allReduceMin(shard::AllReduceOp op);
  LogicalResult insertSlice(tensor::InsertSliceOp op);
  /// `src` (of shape `srcShape`) placed at `offsets` in `dest` (`destShape`),
  /// from dimension `d` on: slices of `dest` around it concatenated.
  Value insertAt(Operation *op, Value dest, Value src,
                 ArrayRef<int64_t> offsets, unsigned d);
  /// A spec (process -1) has no process: communication there is refused.
  LogicalResult needsProcess(Operation *op);

  LogicalResult block(Block &b, SmallVectorImpl<Value> *yielded);

  // ShardHalo.cpp: values with halos.
  /// A tensor of `type` assembled from its tiles along `h`: `tile(t)` gives
  /// tile t's value (concatenated dimension by dimension).
  Value assemble(Location loc, RankedTensorType type, const HaloLayout &h,
                 llvm::function_ref<Value(const HaloTile &)> tile);
  /// An argument with halos: an input per tile, assembled.
  Value haloArgument(Location loc, unsigned i, Type type, const HaloLayout &h);
  /// A result with halos: the core and every defined halo tile output on
  /// their own (an undefined tile is claimed by nothing).
  void haloResult(Location loc, unsigned i, Value v, const HaloLayout &h);
  /// `shard.update_halo`: each halo tile received from the neighbour that
  /// holds it as core, undefined where there is none.
  LogicalResult updateHalo(shard::UpdateHaloOp op);

  const Grid &grid;
  int64_t process;
  OpBuilder &b;
  /// The tv value of each translated upstream value.
  DenseMap<Value, Value> name;
  DenseMap<Value, double> scalar;
  DenseMap<Value, int64_t> index;
  DenseSet<Value> zeros;
  /// Undefined values: a `tensor.empty` (or an annotation of one) and the
  /// ordinal of that op in the function.
  DenseMap<Value, unsigned> empties;
  std::map<unsigned, Value> emptyRead;
  SmallVector<Value> emptyOf;
  DenseMap<unsigned, Value> emptyName;
  DenseMap<Value, double> fills;
  std::map<unsigned, HaloLayout> argHalos, resultHalos;
  std::vector<std::pair<std::string, RankedTensorType>> *freeInputs = nullptr;
  DenseConstants *constants = nullptr;
  /// A plan input of undefined cells, recorded as free (setFreeInputs).
  Value freeInput(Location loc, RankedTensorType type, const std::string &n);
  /// Values an op leaves undefined, and why (see undefined()).
  DenseMap<Value, std::string> undefs;
  unsigned undefCount = 0;
};

} // namespace mlir::tv::shardimport

#endif

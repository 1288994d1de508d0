//===- ShardImport.h - the shard-partition importer's emitter ---*- C++ -*-===//
//
// Shared by ShardImport.cpp (the pair, the grid, the lineages) and
// ShardEmitter.cpp / ShardStructured.cpp (one function body translated into
// a tv program). Internal to lib/Translate.
//
//===----------------------------------------------------------------------===//
#ifndef TRAINVERIFY_LIB_TRANSLATE_SHARDIMPORT_H
#define TRAINVERIFY_LIB_TRANSLATE_SHARDIMPORT_H

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

#include <map>
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
inline RankedTensorType tvType(Type t) {
  auto ty = cast<RankedTensorType>(t);
  if (isa<IntegerType>(ty.getElementType()))
    return RankedTensorType::get(ty.getShape(),
                                 Float32Type::get(t.getContext()));
  return ty;
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
inline bool isFloatTensor(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  return t && isa<FloatType>(t.getElementType());
}

/// Translates one function body into the ops of a tv program (spec, or the
/// program of one process), built with the tv ops' generated builders at
/// the end of the program's block (`b`), each at the location of the
/// upstream op it comes from.
class Emitter {
public:
  Emitter(const Grid &grid, int64_t process, OpBuilder &b)
      : grid(grid), process(process), b(b) {}

  LogicalResult function(func::FuncOp f);

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
  /// Values an op leaves undefined, and why (see undefined()).
  DenseMap<Value, std::string> undefs;
  unsigned undefCount = 0;
};

} // namespace mlir::tv::shardimport

#endif

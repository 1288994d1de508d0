//===- TVCommOps.td - collectives and point-to-point -----*- tablegen -*-===//
#ifndef TV_COMM_OPS_TD
#define TV_COMM_OPS_TD

include "TrainVerify/Dialect/TVBase.td"
include "TrainVerify/Dialect/TVAttrs.td"
include "TrainVerify/Interfaces/TVOpInterfaces.td"
include "mlir/IR/SymbolInterfaces.td"

// Every collective names its group either by mesh axes (`axes = ["tp"]`: the
// ranks that share all other coordinates) or by explicit rank sets
// (`rank_groups = [array<i64: 0, 1>, array<i64: 2, 3>]`: the set holding the
// executing rank). A rank's index in its group is its position in the set
// sorted by rank.
class TV_CollectiveOp<string mnemonic, dag extraArgs, string desc,
                      Type tensor = TV_FloatTensor>
    : TV_ProgramOp<mnemonic, [
        DeclareOpInterfaceMethods<TV_CollectiveOpInterface>,
        DeclareOpInterfaceMethods<TV_ShapeRuleOpInterface>,
        DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let description = desc # [{

    Members of one collective are matched in program order: the k-th
    collective on a group in one rank meets the k-th on the same group in
    every other member.
  }];
  let arguments = !con((ins tensor:$input), extraArgs,
                       (ins OptionalAttr<StrArrayAttr>:$axes,
                            OptionalAttr<ArrayAttr>:$rank_groups));
  let results = (outs tensor:$result);
}

def TV_AllReduceOp : TV_CollectiveOp<"all_reduce",
    (ins TV_ReduceKindAttr:$kind),
    "Every member receives the reduction of all inputs: `sum`, `avg` or `max`; "
    "on integer tensors also `min`, `band`, `bor` and `bxor`. `max` and `min` "
    "of n-bit integers compare them as signed (MLIR's shard-to-MPI lowering "
    "gives a signless integer a signed MPI type).", TV_AnyTensor> {
  let summary = "All-reduce over a group";
  let assemblyFormat = [{
    custom<ReduceKindKeyword>($kind) $input attr-dict `:` type($input) `->`
    type($result)
  }];
  let hasVerifier = 1;
}

def TV_AllGatherOp : TV_CollectiveOp<"all_gather",
    (ins I64Attr:$dim, OptionalAttr<DenseI64ArrayAttr>:$order),
    "Concatenates the members' inputs along `dim`: piece p of the result is "
    "the input of the member with group index `order[p]` (group-index order "
    "when `order` is absent). `order` is a permutation of the group indices; "
    "frameworks that place shards on ranks out of rank order (nnScaler) "
    "gather in the order of the shards' positions, not of the ranks.",
    TV_AnyTensor> {
  let summary = "All-gather over a group";
  let assemblyFormat = [{
    $input `dim` $dim attr-dict `:` type($input) `->` type($result)
  }];
}

def TV_ReduceScatterOp : TV_CollectiveOp<"reduce_scatter",
    (ins I64Attr:$dim, DefaultValuedAttr<TV_ReduceKindAttr,
         "::mlir::tv::ReduceKind::sum">:$kind),
    "Sums the inputs and gives member i the i-th chunk along `dim`.",
    TV_AnyTensor> {
  let summary = "Reduce-scatter over a group";
  let assemblyFormat = [{
    $input `dim` $dim attr-dict `:` type($input) `->` type($result)
  }];
}

def TV_AllToAllOp : TV_CollectiveOp<"all_to_all",
    (ins I64Attr:$split_dim, I64Attr:$concat_dim),
    "Member i splits its input in n chunks along `split_dim`, sends chunk j "
    "to member j, and concatenates what it receives along `concat_dim` in "
    "group-index order.", TV_AnyTensor> {
  let summary = "All-to-all over a group";
  let assemblyFormat = [{
    $input `split` $split_dim `concat` $concat_dim attr-dict `:` type($input)
    `->` type($result)
  }];
}

def TV_BroadcastCommOp : TV_CollectiveOp<"bcast", (ins I64Attr:$root),
    "Every member receives the input of the member with group index `root`.",
    TV_AnyTensor> {
  let summary = "Broadcast from a root over a group";
  let assemblyFormat = [{
    $input `root` $root attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

def TV_ReduceOp : TV_CollectiveOp<"reduce", (ins I64Attr:$root),
    "The member with group index `root` receives the sum of all inputs; the "
    "result on other members is undefined (any use of it is a bug).",
    TV_AnyTensor> {
  let summary = "Reduce to a root over a group";
  let assemblyFormat = [{
    $input `root` $root attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

def TV_ChunkOp : TV_CollectiveOp<"chunk",
    (ins I64Attr:$dim, OptionalAttr<I64Attr>:$index),
    "Member i keeps the i-th of n equal chunks of its input along `dim` "
    "(local: no data moves); with `index`, every rank running the op keeps "
    "chunk `index` instead (nnScaler's ChunkPrim states the chunk per rank).",
    TV_AnyTensor> {
  let summary = "Takes this rank's chunk along a dimension";
  let assemblyFormat = [{
    $input `dim` $dim attr-dict `:` type($input) `->` type($result)
  }];
}

def TV_SendOp : TV_ProgramOp<"send", []> {
  let summary = "Point-to-point send to a peer rank";
  let description = [{
    The peer is an explicit rank (`peer = 5`), a shift along a mesh axis
    (`peer_axis = "pp", peer_offset = 1`), or a shift of the coordinates
    along several axes at once (`peer_shift = array<i64: 0, 1, -1>`, one
    offset per mesh axis: the next pipeline stage's tensor-parallel rank
    one lower, as nnScaler pairs ranks whose shards sit out of rank order).
    The k-th send from rank a to rank b with a given `tag` meets the k-th
    recv on b from a with that tag.
  }];
  let arguments = (ins TV_AnyTensor:$input, OptionalAttr<I64Attr>:$peer,
                       OptionalAttr<StrAttr>:$peer_axis,
                       OptionalAttr<I64Attr>:$peer_offset,
                       DefaultValuedAttr<I64Attr, "0">:$tag,
                       OptionalAttr<DenseI64ArrayAttr>:$peer_shift);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The peer of `rank`, or -1 if it falls off the mesh.
    int64_t getPeerOf(int64_t rank);
  }];
}

def TV_RecvOp : TV_ProgramOp<"recv", []> {
  let summary = "Point-to-point receive from a peer rank";
  let description = [{
    The peer is named as for `tv.send`; the k-th recv on b from a with a
    given `tag` meets the k-th send from a to b with that tag.
  }];
  let arguments = (ins OptionalAttr<I64Attr>:$peer,
                       OptionalAttr<StrAttr>:$peer_axis,
                       OptionalAttr<I64Attr>:$peer_offset,
                       DefaultValuedAttr<I64Attr, "0">:$tag,
                       OptionalAttr<DenseI64ArrayAttr>:$peer_shift);
  let results = (outs TV_AnyTensor:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    int64_t getPeerOf(int64_t rank);
  }];
}

def TV_WaitOp : TV_ProgramOp<"wait", [SameOperandsAndResultType]> {
  let summary = "Waits for an asynchronous collective or receive";
  let description = [{
    A collective or a `tv.recv` with the unit attribute `async` is launched
    where it stands (its place in program order is the one the members
    match by) and is in flight until its `tv.wait`: `%r = tv.all_reduce sum
    %g {async, axes = ["dp"]}` then, later, `%s = tv.wait %r`. Its result
    is the in-flight buffer: read by anything but its wait before the wait,
    it is a race (the value is not there yet), as Megatron-LM's
    `--overlap-grad-reduce` and `--overlap-param-gather`, FSDP's prefetch
    and ring attention's overlapped exchange would race without their
    waits. `--tv-ssa-canonicalize` (which partition, the pipeline and the
    interpreter run first) checks every asynchronous op over its rank's
    program order and refuses, as a wrong plan, a result read before its
    wait, an op never waited (an orphaned handle), a result waited twice,
    and a named buffer accumulated into while a collective of it is in
    flight (a bucket written in flight). A plan without races then means
    what its synchronous form means: the wait's result is the op's.
  }];
  let arguments = (ins TV_AnyTensor:$handle);
  let results = (outs TV_AnyTensor:$result);
  let assemblyFormat = "$handle attr-dict `:` type($result)";
  let hasVerifier = 1;
}

#endif // TV_COMM_OPS_TD

//===- TVAttrs.td - tv attributes -------------------------*- tablegen -*-===//
#ifndef TV_ATTRS_TD
#define TV_ATTRS_TD

include "TrainVerify/Dialect/TVBase.td"
include "mlir/IR/EnumAttr.td"

class TV_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<TV_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

def TV_PlanRefAttr : TV_Attr<"PlanRef", "ref"> {
  let summary = "A named plan tensor on one rank";
  let description = [{
    `#tv.ref<"name" : 3>` names the plan tensor `name` (defined by `tv.input`,
    `tv.tag` or `tv.output`) as computed on rank 3.
  }];
  let parameters = (ins StringRefParameter<"tensor name">:$name, "int64_t":$rank);
  let assemblyFormat = "`<` $name `:` $rank `>`";
}

def TV_LineageAttr : TV_Attr<"Lineage", "lineage"> {
  let summary = "Where a slice of a spec tensor lives in the plan";
  let description = [{
    `#tv.lineage<"y"[0:4, 0:8] = ["y":0 + "y":1] | ["y":2 + "y":3]>` states
    that the box `[0,4) x [0,8)` of spec tensor `y` equals `y@0 + y@1` and,
    as a replica, also equals `y@2 + y@3`. A group of one is a plain copy.
    Every plan tensor of a group has the shape of the slice.
    A trailing `scaled P/Q` (or `scaled P`) states the slice equals `P/Q`
    times each group's sum instead: a framework that averages the loss per
    rank holds activation gradients `dp` times the single-device ones,
    `#tv.lineage<"dx"[0:4] = ["dx":0] | ["dx":1] scaled 1/2>`.
    A replicas list `"x":[0, 4, 8]` as the last alternative stands for the
    three groups `["x":0] | ["x":4] | ["x":8]`: the form lineage maps expand
    to, stored in the lineage itself as a name and ranks (eight bytes a
    replica instead of three attributes).
  }];
  let parameters = (ins "StringAttr":$spec,
                        ArrayRefParameter<"int64_t">:$lower,
                        ArrayRefParameter<"int64_t">:$upper,
                        "ArrayAttr":$groups,
                        OptionalParameter<"StringAttr">:$replicaName,
                        OptionalArrayRefParameter<"int64_t">:$replicaRanks,
                        OptionalArrayRefParameter<"int64_t">:$scale);
  let builders = [
    AttrBuilder<(ins "StringAttr":$spec, "llvm::ArrayRef<int64_t>":$lower,
                     "llvm::ArrayRef<int64_t>":$upper, "ArrayAttr":$groups), [{
      return $_get($_ctxt, spec, lower, upper, groups, StringAttr(),
                   llvm::ArrayRef<int64_t>(), llvm::ArrayRef<int64_t>());
    }]>,
    AttrBuilder<(ins "StringAttr":$spec, "llvm::ArrayRef<int64_t>":$lower,
                     "llvm::ArrayRef<int64_t>":$upper, "ArrayAttr":$groups,
                     "StringAttr":$replicaName,
                     "llvm::ArrayRef<int64_t>":$replicaRanks), [{
      return $_get($_ctxt, spec, lower, upper, groups, replicaName,
                   replicaRanks, llvm::ArrayRef<int64_t>());
    }]>
  ];
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Number of dimensions of the slice.
    unsigned getRank() const { return getLower().size(); }
    /// Shape of the slice (upper - lower per dimension).
    llvm::SmallVector<int64_t> getSliceShape() const;
    /// The groups as lists of plan references (builds an attribute per
    /// reference: prefer walkGroups or walkRefs on large lineages).
    llvm::SmallVector<llvm::SmallVector<PlanRefAttr>> getGroupRefs() const;
    /// Number of groups (the replicas list counts once per rank).
    size_t getNumGroups() const;
    /// The same lineage (groups, replicas and scale) of another box.
    LineageAttr withBox(llvm::ArrayRef<int64_t> lower,
                        llvm::ArrayRef<int64_t> upper) const;
    /// The factor c of `slice = c * group sum` as numerator and positive
    /// denominator (1/1 when the lineage is not scaled).
    std::pair<int64_t, int64_t> getScaleFraction() const {
      if (getScale().size() != 2)
        return {1, 1};
      return {getScale()[0], getScale()[1]};
    }
    bool isScaled() const {
      auto [n, d] = getScaleFraction();
      return n != d;
    }
    /// Calls `fn(group index, references)` for every group, in order.
    void walkGroups(llvm::function_ref<void(size_t,
        llvm::ArrayRef<PlanRefView>)> fn) const;
    /// Calls `fn(group index, reference)` for every plan reference.
    void walkRefs(llvm::function_ref<void(size_t, PlanRefView)> fn) const;
  }];
}

def TV_LineageMapAttr : TV_Attr<"LineageMap", "lineage_map"> {
  let summary = "The lineage statements of one plan tensor over a mesh slice";
  let description = [{
    The attribute form of `tv.lineage_map`, held in a stage's `assumes` and
    `guarantees` beside `#tv.lineage`:

    ```mlir
    #tv.lineage_map<"h" blocks affine_map<(d0, d1, d2) -> (d0 * 2 + 1, d2)>
        shape [4, 64] = "h_mb1" on @mesh where {pp = 0 : i64}>
    ```

    stands for exactly the statements the op of the same operands stands
    for: on every rank of mesh `@mesh` whose coordinates match `where`,
    `#tv.lineage<"h"[box] = ["h_mb1":rank]>`, the box being block
    `blocks(coordinates)` of shape `shape`. Within one list, the statements
    of all maps that name one box of one spec tensor are one lineage (its
    groups in list order, then rank order) at the position of the first map
    naming it, as `collectLineages` merges the module's maps. A stage list
    holding maps is read through `expandLineageMaps` (Lineage.h), which
    every pass that reads a stage's lineages calls first
    (docs/decisions.md 127).
  }];
  let parameters = (ins "StringAttr":$spec, "AffineMapAttr":$blocks,
                        ArrayRefParameter<"int64_t">:$shape,
                        OptionalArrayRefParameter<"int64_t">:$scale,
                        "StringAttr":$plan, "FlatSymbolRefAttr":$mesh,
                        "DictionaryAttr":$where);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The factor p/q as numerator and positive denominator (1/1 when the
    /// map is not scaled).
    std::pair<int64_t, int64_t> getScaleFraction() const {
      if (getScale().size() != 2)
        return {1, 1};
      return {getScale()[0], getScale()[1]};
    }
  }];
}

def TV_ReduceKind : I32EnumAttr<"ReduceKind", "reduction of a collective", [
    I32EnumAttrCase<"sum", 0>, I32EnumAttrCase<"avg", 1>,
    I32EnumAttrCase<"max", 2>, I32EnumAttrCase<"min", 3>,
    I32EnumAttrCase<"band", 4>, I32EnumAttrCase<"bor", 5>,
    I32EnumAttrCase<"bxor", 6>]> {
  let cppNamespace = "::mlir::tv";
  let genSpecializedAttr = 0;
}
def TV_ReduceKindAttr : EnumAttr<TV_Dialect, TV_ReduceKind, "reduce_kind">;

def TV_IntFn : I32EnumAttr<"IntFn", "an operation on n-bit integers", [
    I32EnumAttrCase<"andi", 0>, I32EnumAttrCase<"ori", 1>,
    I32EnumAttrCase<"xori", 2>, I32EnumAttrCase<"maxsi", 3>,
    I32EnumAttrCase<"minsi", 4>, I32EnumAttrCase<"maxui", 5>,
    I32EnumAttrCase<"minui", 6>, I32EnumAttrCase<"shli", 7>,
    I32EnumAttrCase<"shrsi", 8>, I32EnumAttrCase<"shrui", 9>]> {
  let cppNamespace = "::mlir::tv";
  let genSpecializedAttr = 0;
}
def TV_IntFnAttr : EnumAttr<TV_Dialect, TV_IntFn, "int_fn">;

def TV_ScoreFunc : I32EnumAttr<"ScoreFunc", "router score function", [
    I32EnumAttrCase<"sigmoid", 0>, I32EnumAttrCase<"softmax", 1>]> {
  let cppNamespace = "::mlir::tv";
  let genSpecializedAttr = 0;
}
def TV_ScoreFuncAttr : EnumAttr<TV_Dialect, TV_ScoreFunc, "score_func">;

#endif // TV_ATTRS_TD

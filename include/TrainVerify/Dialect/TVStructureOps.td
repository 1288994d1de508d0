//===- TVStructureOps.td - mesh, spec, plan, stage --------*- tablegen -*-===//
#ifndef TV_STRUCTURE_OPS_TD
#define TV_STRUCTURE_OPS_TD

include "TrainVerify/Dialect/TVBase.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/IR/RegionKindInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def TV_MeshOp : TV_Op<"mesh", [Symbol]> {
  let summary = "A device mesh with named axes";
  let description = [{
    `tv.mesh @m axes ["dp", "pp", "tp"] sizes [2, 2, 2]` declares a mesh of
    8 ranks. Ranks are numbered row-major over the axes: the last axis varies
    fastest, so rank = ((dp * |pp|) + pp) * |tp| + tp.
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, StrArrayAttr:$axes,
                       DenseI64ArrayAttr:$sizes);
  let assemblyFormat = "$sym_name `axes` $axes `sizes` $sizes attr-dict";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    int64_t getNumRanks();
    /// Index of a named axis, or -1.
    int64_t getAxisIndex(llvm::StringRef name);
    llvm::SmallVector<int64_t> getCoords(int64_t rank);
    int64_t getRank(llvm::ArrayRef<int64_t> coords);
    /// Ranks sharing all coordinates of `rank` except those on `axes`, in
    /// increasing order; the position of `rank` in it is its group index.
    llvm::SmallVector<int64_t> getAxisGroup(int64_t rank,
                                            llvm::ArrayRef<llvm::StringRef> axes);
  }];
}

def TV_SpecOp : TV_Op<"spec", [SingleBlock, NoTerminator,
    IsolatedFromAbove]> {
  let summary = "The single-device training step over full shapes";
  let arguments = (ins SymbolNameAttr:$sym_name);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "$sym_name attr-dict-with-keyword $body";
  let hasRegionVerifier = 1;
}

def TV_PlanOp : TV_Op<"plan", [SingleBlock, NoTerminator,
    IsolatedFromAbove, DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "The parallel training step: rank programs over a mesh";
  let description = [{
    Holds `tv.rank_program` ops. Every rank of the mesh runs exactly one of
    them. `micro_batches` records the number of micro-batches the step is cut
    into (the programs are unrolled over them; ops may carry `mb` for
    diagnostics).

    `folded` (only in a `tv.stage`) lists mesh axes the stage was folded
    along by `--tv-fold-symmetry`: the plan keeps the ranks at coordinate 0 of
    those axes, and a collective's group along a folded axis is the rank
    alone. The proof of the folded stage implies the stage's claim for every
    coordinate of the axis (docs/symmetry.md).

    `folded_micro_batches` (only in a `tv.stage`) says the stage was folded
    to micro-batch 0: the plan keeps the ops of micro-batch 0 and the ops no
    micro-batch owns, a sum over the micro-batches is its micro-batch-0 term,
    and the proof implies the claim for every micro-batch.
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, FlatSymbolRefAttr:$mesh,
                       I64Attr:$micro_batches,
                       OptionalAttr<StrArrayAttr>:$folded,
                       UnitAttr:$folded_micro_batches);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $sym_name `mesh` $mesh `micro_batches` $micro_batches
    (`folded` $folded^)? (`folded_micro_batches` $folded_micro_batches^)?
    attr-dict-with-keyword $body
  }];
  let hasRegionVerifier = 1;
  let extraClassDeclaration = [{
    /// The mesh this plan runs on (null if the symbol does not resolve).
    MeshOp getMeshOp();
    /// Folds rank programs that are structurally identical (same ops,
    /// operands, attributes and types; locations aside) into one program
    /// listing all their ranks: the check that symmetric ranks really run the
    /// same code. Returns the number of programs removed.
    unsigned mergeIdenticalPrograms();
    /// Whether a rank program has a phase other than 0 (decision 124).
    bool hasPhases();
    /// The ranks grouped by the programs they run (tv.rank_program ops),
    /// each group's programs in phase order, the groups in order of their
    /// first rank.
    SmallVector<std::pair<SmallVector<Operation *>, SmallVector<int64_t>>>
    phaseGroups();
    /// Joins a verified phased plan: each set of ranks that runs the same
    /// programs gets one program, their bodies in phase order, a later
    /// phase's input of an earlier definition replaced by its value and an
    /// earlier `tv.output` that a later phase reads removed (a link, not a
    /// plan tensor). Returns whether anything changed.
    bool joinPhases();
  }];
}

def TV_RankProgramOp : TV_Op<"rank_program", [SingleBlock, NoTerminator,
    HasParent<"PlanOp">]> {
  let summary = "The program run by a set of ranks";
  let description = [{
    One program shared by all listed ranks (SPMD): ops that depend on the
    rank (collective groups, chunk index, relative peers) are resolved per
    rank. A plan that is irregular everywhere lists one rank per program.

    `tv.rank_program [ranks] phase k { ... }`: a rank may run several
    programs, one per phase, in increasing phase order (decision 124). A
    later phase reads what an earlier one defined (`tv.output`, `tv.tag`,
    `tv.input`) by name with `tv.input`; any other input is a plan input.
    So a data-parallel group can share one forward and backward (phase 0)
    and differ only in its optimizer step (phase 1). Every pass reads a
    phased plan joined (`--tv-ssa-canonicalize` prints it): each rank's
    phases become one program, the name links SSA values. An earlier
    phase's `tv.output` that a later phase reads is such a link, not a plan
    tensor (a tensor that needs a lineage is named with `tv.tag`). A buffer
    lives in one phase, and an asynchronous op is waited in its own phase.
    Without `phase`, a program is phase 0.
  }];
  let arguments = (ins DenseI64ArrayAttr:$ranks, OptionalAttr<I64Attr>:$phase);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "$ranks (`phase` $phase^)? attr-dict-with-keyword $body";
  let builders = [
    OpBuilder<(ins "::llvm::ArrayRef<int64_t>":$ranks), [{
      build($_builder, $_state, ranks, ::mlir::IntegerAttr());
    }]>
  ];
  let extraClassDeclaration = [{
    /// The phase this program runs in (0 when not given).
    int64_t getPhaseOrZero() {
      return getPhase() ? static_cast<int64_t>(*getPhase()) : 0;
    }
  }];
  let hasVerifier = 1;
}

def TV_InputOp : TV_ProgramOp<"input", []> {
  let summary = "A named input of a spec, plan or stage program";
  let arguments = (ins StrAttr:$name);
  let results = (outs TV_AnyTensor:$result);
  let assemblyFormat = "$name attr-dict `:` type($result)";
}

def TV_TagOp : TV_ProgramOp<"tag", []> {
  let summary = "Names an intermediate tensor so that lineages can refer to it";
  let arguments = (ins StrAttr:$name, TV_AnyTensor:$value);
  let assemblyFormat = "$name `,` $value attr-dict `:` type($value)";
}

def TV_OutputOp : TV_ProgramOp<"output", []> {
  let summary = "A named output of a program (loss, gradients, new weights)";
  let arguments = (ins StrAttr:$name, TV_AnyTensor:$value);
  let assemblyFormat = "$name `,` $value attr-dict `:` type($value)";
}

def TV_AccumulateOp : TV_ProgramOp<"accumulate", []> {
  let summary = "In-place accumulation into a named buffer";
  let description = [{
    `tv.accumulate "dw", %g` adds `%g` into the buffer `dw` (created at zero on
    first use), as gradient accumulation does across micro-batches.
    `tv.buffer_read "dw"` reads the buffer's current value.
    `--tv-ssa-canonicalize` rewrites buffers into explicit versions.
  }];
  let arguments = (ins StrAttr:$buffer, TV_FloatTensor:$value);
  let assemblyFormat = "$buffer `,` $value attr-dict `:` type($value)";
}

def TV_BufferReadOp : TV_ProgramOp<"buffer_read", []> {
  let summary = "Reads the current value of an accumulation buffer";
  let arguments = (ins StrAttr:$buffer);
  let results = (outs TV_FloatTensor:$result);
  let assemblyFormat = "$buffer attr-dict `:` type($result)";
}

def TV_LineageOp : TV_Op<"lineage", []> {
  let summary = "A lineage statement between the spec and the plan";
  let arguments = (ins TV_LineageAttr:$lineage);
  let assemblyFormat = "$lineage attr-dict";
}

def TV_LineageMapOp : TV_Op<"lineage_map", [
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "The lineage statements of one plan tensor over a mesh slice";
  let description = [{
    One statement for a plan tensor that every rank of a slice of the mesh
    holds, each rank a different (or a replicated) block of the spec tensor:

    ```mlir
    tv.lineage_map "h" blocks affine_map<(d0, d1, d2) -> (d0 * 2 + 1, d2)>
        shape [4, 64] = "h_mb1" on @mesh where {pp = 0 : i64}
    ```

    stands for, on every rank `r` of mesh `@mesh` whose coordinates match
    `where` (here pp = 0), the lineage `"h"[box] = ["h_mb1":r]`, where
    `blocks` maps r's mesh coordinates (one dimension per mesh axis, in the
    mesh's order) to a block index per tensor dimension and the box is
    `[index * shape, (index + 1) * shape)`. The statements of all
    `tv.lineage_map` ops of a module that name the same box of the same spec
    tensor are one lineage whose groups are the replicas, in module order and
    then rank order. It says exactly what those `tv.lineage` statements say
    (docs/decisions.md #32), in one line instead of one per block: a plan of
    thousands of ranks and tens of micro-batches stays small. `scaled [p,
    q]` gives every statement the factor `p/q` of `#tv.lineage<...
    scaled p/q>`; statements of one box with different factors are not one
    lineage.
  }];
  let arguments = (ins StrAttr:$spec, AffineMapAttr:$blocks,
                       DenseI64ArrayAttr:$shape, StrAttr:$plan,
                       FlatSymbolRefAttr:$mesh, DictionaryAttr:$where,
                       OptionalAttr<DenseI64ArrayAttr>:$scale);
  let assemblyFormat = [{
    $spec `blocks` $blocks `shape` $shape (`scaled` $scale^)? `=` $plan `on`
    $mesh `where` $where attr-dict
  }];
  let hasVerifier = 1;
}

def TV_StageLineage : AnyAttrOf<[TV_LineageAttr, TV_LineageMapAttr]>;

def TV_StageOp : TV_Op<"stage", [Symbol, SingleBlock, NoTerminator,
    IsolatedFromAbove, DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "One verification stage: spec and plan sub-programs";
  let description = [{
    Holds one `tv.spec` and one `tv.plan` whose `tv.input`s are the stage's
    assumed tensors and whose `tv.output`s are its guaranteed tensors.
    `assumes` and `guarantees` are lineage attributes: `#tv.lineage`, or
    `#tv.lineage_map` standing for the statements of a map (partition writes
    a map when the stage takes all of its statements, with `lineage-maps`;
    `expandLineageMaps` gives the statements). Stage partition emits
    these; shape reduction and verification work on them one by one. Shape
    reduction records the guarantees' boxes before it shrinks them in
    `full_guarantees`, so that a counterexample in the reduced stage names
    the full-size slice it stands for.
  }];
  let arguments = (ins SymbolNameAttr:$sym_name,
                       TypedArrayAttrBase<TV_StageLineage, "lineages">:$assumes,
                       TypedArrayAttrBase<TV_StageLineage, "lineages">:$guarantees,
                       OptionalAttr<TypedArrayAttrBase<TV_LineageAttr, "lineages">>:$full_guarantees);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $sym_name `assumes` $assumes `guarantees` $guarantees attr-dict-with-keyword
    $body
  }];
  let hasRegionVerifier = 1;
  let extraClassDeclaration = [{
    SpecOp getSpec();
    PlanOp getPlan();
  }];
}

def TV_SourceOp : TV_Op<"source", [SingleBlock, NoTerminator, SymbolTable]> {
  let summary = "The whole program a partitioned module was cut from";
  let description = [{
    `--tv-stage-partition` keeps the whole program it cut, as one
    `tv.stage @whole_program` (assuming the lineages of the spec's inputs
    and guaranteeing every other lineage) beside a copy of its `tv.mesh`
    inside a `tv.source`, when the
    program holds at most `source-elements` tensor elements. Stage
    verification is blind to what lies outside a stage: a stage takes its
    assumed tensors as free values, and so can find a counterexample that
    no run produces when those tensors are related through values outside
    it. `--tv-verify` replays such a counterexample's lineage on the whole
    program, from random program inputs, before it reports it, and removes
    the `tv.source` (docs/decisions.md 68). No other pass reads it.
  }];
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "attr-dict-with-keyword $body";
  let hasRegionVerifier = 1;
  let extraClassDeclaration = [{
    /// The whole-program stage it holds.
    StageOp getStage();
  }];
}

#endif // TV_STRUCTURE_OPS_TD

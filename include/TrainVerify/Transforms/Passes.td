//===- Passes.td - tv passes ------------------------------*- tablegen -*-===//
#ifndef TV_PASSES_TD
#define TV_PASSES_TD

include "mlir/Pass/PassBase.td"

def TVCheckLineage : Pass<"tv-check-lineage", "::mlir::ModuleOp"> {
  let summary = "Checks every lineage against the spec and the plan";
  // Every tv pass reads tv ops and the dialect's phase clock, also on a
  // module that has none yet.
  let dependentDialects = ["::mlir::tv::TVDialect"];
  let description = [{
    Each lineage must name a spec tensor that holds its slice and plan tensors
    that exist on their ranks with the slice's shape; slices of one tensor
    must not overlap, and the slices of every spec output must tile it.
  }];
}

def TVExpandLineageMaps : Pass<"tv-expand-lineage-maps", "::mlir::ModuleOp"> {
  let summary = "Writes every stage's lineage maps as the statements they "
                "stand for";
  let dependentDialects = ["::mlir::tv::TVDialect"];
  let description = [{
    Rewrites each `#tv.lineage_map` in a `tv.stage`'s `assumes` and
    `guarantees` into the `#tv.lineage` statements it stands for, merged
    per box as `collectLineages` merges the module's maps (decision 127).
    Every pass that reads a stage's lineages does this first; the pass
    shows the statements a stage of `--tv-stage-partition=lineage-maps=true`
    holds, one by one.
  }];
}

def TVSSACanonicalize : Pass<"tv-ssa-canonicalize", "::mlir::ModuleOp"> {
  let summary = "Puts spec and plan programs into canonical SSA form";
  // Every tv pass reads tv ops and the dialect's phase clock, also on a
  // module that has none yet.
  let dependentDialects = ["::mlir::tv::TVDialect"];
  let description = [{
    In-place accumulation buffers (`tv.accumulate` / `tv.buffer_read`) become
    explicit versions (chains of `tv.add`); identities and redundant copies
    fold away; collective groups given as explicit rank sets that coincide
    with a mesh-axis grouping are rewritten to that axis form, so all members
    of one collective name the same group; rank programs are ordered by their
    first rank. Idempotent: the module is marked `tv.canonical`, and
    `--tv-stage-partition` and `--tv-inject-bug`, which need this form,
    canonicalize only a module without the mark (so the pipeline does it
    once).
  }];
}

def TVStagePartition : Pass<"tv-stage-partition", "::mlir::ModuleOp"> {
  let summary = "Cuts spec and plan into stages at lineage-carrying tensors";
  // Every tv pass reads tv ops and the dialect's phase clock, also on a
  // module that has none yet.
  let dependentDialects = ["::mlir::tv::TVDialect"];
  let description = [{
    For every spec tensor with a lineage that is computed (not an input),
    outlines a `tv.stage` holding the smallest spec and plan sub-programs that
    compute it from tensors with established lineages. Checks that every plan
    tensor the stage needs is reachable from assumed lineages (a broken
    dataflow or a wrong pipeline peer is reported here, naming the target
    plan tensor, the spec tensor and the candidate sources) and that stages
    are well founded (no cycle). Replaces the spec, the plan and the lineage
    ops by the stages; keeps the whole program in a `tv.source` when it
    holds at most `source-elements` tensor elements (counted over every
    rank), for `--tv-verify` to confirm counterexamples from program inputs.
  }];
  let options = [
    Option<"sourceElements", "source-elements", "int64_t", "4000000",
           "Keep the whole program in a tv.source up to this many tensor "
           "elements (0: never)">,
    Option<"lineageMaps", "lineage-maps", "bool", "true",
           "Write a stage's lineages of a spec tensor as the module's "
           "#tv.lineage_map attributes (and #tv.lineage ones) naming it when "
           "the stage takes all of that tensor's statements (decision 127)">,
  ];
}

def TVFoldSymmetry : Pass<"tv-fold-symmetry", "::mlir::tv::StageOp"> {
  let summary = "Proves each stage once per symmetric mesh axis, not once per "
                "coordinate";
  let description = [{
    Per stage and mesh axis, folds the stage to coordinate 0 of the axis when
    that is sound: ranks along the axis run the same program, the lineages of
    every coordinate are those of coordinate 0 translated by one block of a
    factored spec dimension, and a dataflow analysis of both programs shows
    each value is replicated, blockwise (block c computed from block c by the
    same function) or a plain sum over the blocks that reaches the outputs
    through linear ops only, matched by a sum all-reduce along the axis in the
    plan. The folded stage keeps the ranks of coordinate 0, their lineages and
    block 0 of the spec; its plan is marked `folded`. A stage where one rank
    runs a different program (a single-rank bug) is not folded.

    Then, with `micro-batches` (the default), the micro-batches of the stage
    are folded the same way: each micro-batch's ops (its lane) must be those
    of micro-batch 0 reading its own inputs, its lineages micro-batch 0's
    translated, and lanes must meet only in sums over every micro-batch (the
    gradient accumulation); the stage keeps micro-batch 0, a sum over the
    micro-batches becomes its micro-batch-0 term, and the plan is marked
    `folded_micro_batches`. A stage where one micro-batch differs is not
    folded. See docs/symmetry.md.
  }];
  let options = [
    ListOption<"axes", "axes", "std::string",
               "Mesh axes to fold along, in order (default: every axis in "
               "mesh order)">,
    Option<"microBatches", "micro-batches", "bool", "true",
           "Fold the micro-batches too, after the mesh axes">,
    Option<"explain", "explain", "bool", "false",
           "Emit a remark for each stage and axis that is not folded, saying "
           "why">,
  ];
  // Debian's LLVM is built without LLVM_ENABLE_STATS: these counters stay
  // zero and --mlir-pass-statistics prints an empty report there. The same
  // counts are in --tv-verify's stats file (stages_folded,
  // coordinates_discharged), which does not depend on the build.
  let statistics = [
    Statistic<"numFolded", "stages-folded",
              "Stages folded along at least one axis">,
    Statistic<"numCoordinates", "coordinates-discharged",
              "Coordinates proven by symmetry instead of on their own">,
    Statistic<"numLaneFolded", "stages-micro-batches-folded",
              "Stages folded to micro-batch 0">,
  ];
}

def TVShapeReduce : Pass<"tv-shape-reduce", "::mlir::ModuleOp"> {
  let summary = "Shrinks each stage's tensor shapes, keeping its structure";
  // Every tv pass reads tv ops and the dialect's phase clock, also on a
  // module that has none yet.
  let dependentDialects = ["::mlir::tv::TVDialect"];
  let description = [{
    Per stage, an integer program solved with Z3's optimizer picks the
    smallest dimension sizes that keep every op well typed, keep shard
    boundaries at the same ratios (lineage slices, gathers, scatters, chunks,
    slices), keep contracted, reduced and normalized dimensions at two or more
    elements and size-1 (broadcast) dimensions at 1. Rewrites the stage's types
    and lineage slices. See docs/soundness.md.
  }];
  let options = [
    Option<"timeoutMs", "timeout-ms", "unsigned", "10000",
           "Z3 optimize timeout per stage in milliseconds">,
    Option<"fold", "fold", "bool", "true",
           "First fold each stage by symmetry along every mesh axis and over "
           "the micro-batches, as far as it is sound (what --tv-fold-symmetry "
           "does; folding a folded stage changes nothing), so that "
           "`--tv-stage-partition --tv-shape-reduce --tv-verify` is as fast as "
           "the pipeline; fold=false reduces the stages as partitioned">,
  ];
}

def TVVerify : Pass<"tv-verify", "::mlir::ModuleOp"> {
  let summary = "Proves every stage with normalization and Z3";
  // Every tv pass reads tv ops and the dialect's phase clock, also on a
  // module that has none yet.
  let dependentDialects = ["::mlir::tv::TVDialect"];
  let description = [{
    Symbolically executes both sides of every stage over the reals, proves
    guarantees by normalization where the normal forms coincide and asks Z3
    otherwise. Outcomes: proven, counterexample (replayed on the concrete
    interpreter before it is reported), unknown. Prints one summary line on
    stderr and fails on anything but proven.
  }];
  let options = [
    Option<"threads", "threads", "unsigned", "0",
           "Worker threads (0: all cores)">,
    Option<"stageTimeoutMs", "stage-timeout-ms", "unsigned", "60000",
           "Solver timeout per stage in milliseconds">,
    Option<"stageMemoryMb", "stage-memory-mb", "unsigned", "4096",
           "Memory a stage's symbolic terms may take (MB); beyond, the stage "
           "is unknown">,
    Option<"statsFile", "stats-file", "std::string", "\"\"",
           "Write run statistics as JSON to this file">,
    Option<"smtlibDir", "smtlib-dir", "std::string", "\"\"",
           "Write each stage's solver query as SMT-LIB 2 into this directory">,
    Option<"extractDir", "extract-dir", "std::string", "\"\"",
           "Write each stage that is not proven into this directory: "
           "STAGE.mlir, a module that re-verifies alone (tv-opt STAGE.mlir "
           "--tv-verify), and STAGE.dot / STAGE.svg, a picture of it with "
           "the counterexample's values and the diverging op marked">,
    Option<"onlyStage", "only-stage", "std::string", "\"\"",
           "Verify only this stage, by index (3) or by name (stage3_y or "
           "@stage3_y); the verdict then covers that stage alone">,
    Option<"dropStages", "drop-stages", "bool", "false",
           "Erase the proven stages (the verdict is the result); "
           "--tv-verify-pipeline does unless keep-stages is set">,
  ];
}

def TVDeriveSpecBackward : Pass<"tv-derive-spec-backward", "::mlir::ModuleOp"> {
  let summary = "Replaces the module by the check that the spec's backward "
                "is the vector-Jacobian product of its forward";
  let dependentDialects = ["::mlir::tv::TVDialect"];
  let description = [{
    A spec input named `dY` is the cotangent of the spec output `Y`; a spec
    output (or tag) named `dX` claims to be the gradient of the input (or
    tag) `X`: the sum over the seeded outputs of <dY, Y> differentiated with
    respect to X. The pass derives that gradient from the forward ops by
    reverse-mode differentiation with tv's own backward ops, and replaces the
    module by one whose spec is the forward and the derived backward and
    whose plan is the written spec on one rank, every tensor of one name
    tied to the same tensor. `--tv-verify-pipeline` on the result proves the
    written backward equal to the derived one, or names the first op where
    they part, as for any plan. Forward ops without a rule are refused by
    name (docs/guide.md, "Checking the spec's backward").
  }];
}

def TVInterpret : Pass<"tv-interpret", "::mlir::ModuleOp"> {
  let summary = "Runs spec and plan on random inputs and checks every lineage";
  // Every tv pass reads tv ops and the dialect's phase clock, also on a
  // module that has none yet.
  let dependentDialects = ["::mlir::tv::TVDialect"];
  let description = [{
    Concrete double-precision (or, with `exact`, rational) interpreter:
    draws the spec inputs from a seed,
    derives the plan inputs from their lineages, runs both programs and checks
    every lineage numerically. Works on a module with spec and plan, or on
    every stage of a partitioned module.
  }];
  let options = [
    Option<"seed", "seed", "unsigned", "1", "Random seed">,
    Option<"tolerance", "tolerance", "double", "1e-9",
           "Relative tolerance of the comparison">,
    Option<"exact", "exact", "bool", "false",
           "Exact rational arithmetic where the op allows it (sums, "
           "products, quotients, max, selections); elements computed by a "
           "transcendental op are compared within the tolerance">,
  ];
}

def TVInferLineage : Pass<"tv-infer-lineage", "::mlir::ModuleOp"> {
  let summary = "Infers lineages of intermediate tensors as stage cuts";
  let dependentDialects = ["::mlir::tv::TVDialect"];
  let description = [{
    Runs spec and plan once in the exact interpreter on random program
    inputs (drawn through the lineages of the spec's inputs) and relates
    every plan value to the spec's computed values: an aligned block of a
    spec tensor, or a sum over one mesh axis' group of such blocks (a partial
    sum), each up to a constant factor; several ranks holding the same block
    are replicas. For every spec tensor whose blocks tile it, the pass tags
    the spec and plan values (reusing their names) and adds `tv.lineage`
    statements marked `inferred`; the module lists their spec tensors in
    `tv.inferred`.

    An inferred lineage is a hypothesis: `--tv-stage-partition` cuts at it,
    and `--tv-verify` keeps the cut only if the stage that guarantees it is
    proven. A stage that fails under an inferred cut is verified again
    without the cut; an inferred lineage is never a counterexample and never
    part of the theorem (docs/soundness.md, decision 97). Spec tensors that
    carry a given lineage and plan tensors named in one are left as they are.

    With `drop-intermediate`, the given lineages of intermediate tensors
    (neither spec inputs nor spec outputs) are removed first: what a plan
    with lineages on its inputs and outputs only would give.
  }];
  let options = [
    Option<"seed", "seed", "unsigned", "1", "Random seed of the inputs">,
    Option<"dropIntermediate", "drop-intermediate", "bool", "false",
           "Remove the given lineages of intermediate spec tensors first">,
  ];
}

def TVSuggestLineage : Pass<"tv-suggest-lineage", "::mlir::ModuleOp"> {
  let summary = "Writes the lineages tv infers as text to paste";
  let dependentDialects = ["::mlir::tv::TVDialect"];
  let description = [{
    Infers relations as `--tv-infer-lineage` does and writes them as
    `tv.lineage` statements, each preceded by the `tv.tag` lines it needs
    (with the op they follow and its location). The module gets the tags,
    not the lineages: pasting a lineage makes it part of the theorem, so a
    user reviews it first.
  }];
  let options = [
    Option<"seed", "seed", "unsigned", "1", "Random seed of the inputs">,
    Option<"output", "output", "std::string", "\"-\"",
           "File for the suggestions (- for standard error)">,
    Option<"dropIntermediate", "drop-intermediate", "bool", "false",
           "Remove the given lineages of intermediate spec tensors first">,
  ];
}

def TVInjectBug : Pass<"tv-inject-bug", "::mlir::ModuleOp"> {
  let summary = "Injects one of the known bug classes into a correct plan (testing)";
  // Every tv pass reads tv ops and the dialect's phase clock, also on a
  // module that has none yet.
  let dependentDialects = ["::mlir::tv::TVDialect"];
  let description = [{
    Mutates the plan deterministically, for checking that tv catches each
    class of real distributed-training bug. `bug` names one of the classes
    of its registry, grouped by family (collectives and point-to-point, a
    rank's own computation, gradient reduction and scaling, sequence/expert/
    vocabulary parallelism, sharded data parallelism and optimizers,
    context parallelism): docs/reference/BugClasses.md lists them with what
    each does (generated by `tv-opt --tv-list-bug-classes`), `tv-opt --help`
    names them, and an unknown `bug` is refused with the list. The op the
    mutation edits carries `injected_bug`.
    `rank` chooses the rank (default: the first rank that has a candidate
    op); `layer` restricts candidates to the ops of one decoder layer (an op
    belongs to the layer named by the first `lK.` tag or output after it);
    `index` the candidate op in program order.
    Single-rank bugs split that rank out of its shared program first.
  }];
  let options = [
    Option<"bug", "bug", "std::string", "\"\"", "Bug class to inject">,
    Option<"rank", "rank", "int", "-1", "Rank to mutate (-1: first candidate)">,
    Option<"index", "index", "int", "0", "Which candidate op, in program order">,
    Option<"layer", "layer", "int", "-1",
           "Decoder layer whose ops are candidates (-1: any)">,
  ];
}

def TVValidateShardPartition
    : Pass<"tv-validate-shard-partition", "::mlir::ModuleOp"> {
  let summary = "Partitions each shard-annotated function with MLIR's own "
                "partitioner and proves the result equal to the function";
  let description = [{
    For every function with `shard.shard` annotations: clones the module,
    runs `pipeline` (by default upstream's `sharding-propagation`,
    `shard-partition`, `canonicalize`, `cse`) on the clone, builds the tv
    module that states the partitioned function as a plan for the annotated
    one (as `tv-translate --import-shard-partition` does), and proves it with
    `--tv-verify-pipeline`. A compiler puts this pass where it partitions;
    the module itself is left unchanged. Fails, with the counterexample or
    the construct that is not modeled, unless every function is proven.
  }];
  let options = [
    Option<"pipeline", "pipeline", "std::string",
           "\"builtin.module(func.func(sharding-propagation,shard-partition,"
           "canonicalize,cse))\"",
           "The partitioning pipeline to validate">,
    Option<"gridShape", "grid-shape", "std::string", "\"\"",
           "The shape to validate a grid of dynamic shape for, "
           "NAME=AxB[,NAME=...] (default: the smallest size from 2 that "
           "splits the function's dimensions evenly)">,
    Option<"intermediateCuts", "intermediate-cuts", "bool", "true",
           "First validate with every annotated intermediate as a stage cut "
           "(matched by location; small stages), then, if that does not "
           "prove the function, end to end">,
    Option<"dimSize", "dim-size", "int64_t", "0",
           "The size to validate every dynamic tensor dimension of a "
           "function for (default: twice the grid's processes)">,
  ];
}

#endif // TV_PASSES_TD

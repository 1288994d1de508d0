//===- TVBase.td - tv dialect definition ------------------*- tablegen -*-===//
#ifndef TV_BASE_TD
#define TV_BASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"

def TV_Dialect : Dialect {
  let name = "tv";
  let cppNamespace = "::mlir::tv";
  let summary = "Training-plan verification: spec, plan, mesh, lineage, stages";
  let description = [{
    The `tv` dialect describes a single-device training step (the *spec*), its
    parallel execution over a device mesh (the *plan*), and *lineages* that say
    which slices of spec tensors equal which sums of plan tensors. Passes cut the
    pair into stages, reduce their shapes and prove each stage with Z3. All
    arithmetic is over the reals: the tool proves mathematical equivalence, not
    bit-identical floating point.
  }];
  let useDefaultAttributePrinterParser = 1;
  let extraClassDeclaration = [{
    /// The wall time of the tool's phases in this context (the stats file's
    /// fields; --mlir-timing reports every pass through MLIR's timing).
    PhaseClock &getPhaseClock() { return *phaseClock; }

  private:
    std::unique_ptr<PhaseClock> phaseClock = std::make_unique<PhaseClock>();

  public:
  }];
}

class TV_Op<string mnemonic, list<Trait> traits = []>
    : Op<TV_Dialect, mnemonic, traits>;

// The discardable attributes an op of a program may carry, declared once:
// `mb` (i64 >= 0), the micro-batch whose computation the op belongs to
// (set by generators and importers; folding by micro-batch and diagnostics
// read it), and `src` (string), the op of the imported plan it comes from
// (diagnostics name it). Neither changes what the op computes. Read and
// written with tv::getMicroBatch / setMicroBatch / getSourceOp.
def TV_ProgramAttrs : NativeOpTrait<"ProgramAttrs"> {
  let cppNamespace = "::mlir::tv";
}

// Ops of spec and rank programs (everything but the structure around them).
class TV_ProgramOp<string mnemonic, list<Trait> traits = []>
    : TV_Op<mnemonic, !listconcat(traits,
                                  [ParentOneOf<["SpecOp", "RankProgramOp"]>,
                                   TV_ProgramAttrs])>;

def TV_FloatTensor : RankedTensorOf<[AnyFloat]>;
def TV_IdTensor : RankedTensorOf<[AnySignlessInteger]>;
def TV_AnyTensor : RankedTensorOf<[AnyFloat, AnySignlessInteger]>;

#endif // TV_BASE_TD

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
}

class TV_Op<string mnemonic, list<Trait> traits = []>
    : Op<TV_Dialect, mnemonic, traits>;

// Ops of spec and rank programs (everything but the structure around them).
class TV_ProgramOp<string mnemonic, list<Trait> traits = []>
    : TV_Op<mnemonic, !listconcat(traits,
                                  [ParentOneOf<["SpecOp", "RankProgramOp"]>])>;

def TV_FloatTensor : RankedTensorOf<[AnyFloat]>;
def TV_IdTensor : RankedTensorOf<[AnySignlessInteger]>;
def TV_AnyTensor : RankedTensorOf<[AnyFloat, AnySignlessInteger]>;

#endif // TV_BASE_TD

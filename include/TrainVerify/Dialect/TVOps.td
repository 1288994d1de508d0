//===- TVOps.td - tv operations ---------------------------*- tablegen -*-===//
#ifndef TV_OPS_TD
#define TV_OPS_TD

include "TrainVerify/Dialect/TVBase.td"
include "TrainVerify/Dialect/TVAttrs.td"
include "TrainVerify/Dialect/TVStructureOps.td"
include "TrainVerify/Dialect/Ops/TVElementwiseOps.td"
include "TrainVerify/Dialect/Ops/TVContractionOps.td"
include "TrainVerify/Dialect/Ops/TVReductionOps.td"
include "TrainVerify/Dialect/Ops/TVNormOps.td"
include "TrainVerify/Dialect/Ops/TVAttentionOps.td"
include "TrainVerify/Dialect/Ops/TVVocabularyOps.td"
include "TrainVerify/Dialect/Ops/TVMovementOps.td"
include "TrainVerify/Dialect/Ops/TVMoEOps.td"
include "TrainVerify/Dialect/Ops/TVOptimizerOps.td"
include "TrainVerify/Dialect/TVCommOps.td"

#endif // TV_OPS_TD

//===- TVOps.td - tv operations ---------------------------*- tablegen -*-===//
#ifndef TV_OPS_TD
#define TV_OPS_TD

include "TrainVerify/Dialect/TVBase.td"
include "TrainVerify/Dialect/TVAttrs.td"
include "TrainVerify/Dialect/TVStructureOps.td"
include "TrainVerify/Dialect/TVComputeOps.td"
include "TrainVerify/Dialect/TVGradOps.td"
include "TrainVerify/Dialect/TVCommOps.td"

#endif // TV_OPS_TD

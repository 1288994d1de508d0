//===- TVDialect.td - documentation entry for the dialect -*- tablegen -*-===//
#ifndef TV_DIALECT_DOC_TD
#define TV_DIALECT_DOC_TD
include "TrainVerify/Dialect/TVOps.td"
#endif

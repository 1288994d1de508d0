//===- TVOps.h - tv operations ----------------------------------*- C++ -*-===//
#ifndef TRAINVERIFY_DIALECT_TVOPS_H
#define TRAINVERIFY_DIALECT_TVOPS_H

#include "TrainVerify/Dialect/TVDialect.h"
#include "TrainVerify/Interfaces/TVOpInterfaces.h"

#define GET_OP_CLASSES
#include "TrainVerify/Dialect/TVOps.h.inc"

#endif // TRAINVERIFY_DIALECT_TVOPS_H

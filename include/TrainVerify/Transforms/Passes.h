//===- Passes.h - tv passes -------------------------------------*- C++ -*-===//
#ifndef TRAINVERIFY_TRANSFORMS_PASSES_H
#define TRAINVERIFY_TRANSFORMS_PASSES_H

#include "TrainVerify/Dialect/TVOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"

namespace mlir::tv {

#define GEN_PASS_DECL
#include "TrainVerify/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "TrainVerify/Transforms/Passes.h.inc"

/// The whole verification: canonicalize, partition, reduce, verify.
void buildVerifyPipeline(OpPassManager &pm, const TVVerifyOptions &options,
                         bool fold = true);
/// Registers --tv-verify-pipeline.
void registerTVPipelines();
/// The classes of --tv-inject-bug, from its registry: a Markdown page
/// (docs/reference/BugClasses.md) and a plain list (tv-opt --help).
std::string bugClassesMarkdown();
std::string bugClassesText();

} // namespace mlir::tv

#endif

//===- LongLineDiagnostics.h - diagnostics on megabyte-long lines -*- C++ -*-===//
#ifndef TRAINVERIFY_DIALECT_LONGLINEDIAGNOSTICS_H
#define TRAINVERIFY_DIALECT_LONGLINEDIAGNOSTICS_H

#include "mlir/IR/Diagnostics.h"

namespace mlir::tv {

/// Source lines longer than this are not quoted under a diagnostic.
constexpr size_t kQuotedLineLimit = 4096;

/// Registers a handler on `ctx` for diagnostics located on a source line
/// longer than kQuotedLineLimit (the reference's JSON exporter writes a
/// whole plan on one line): they are printed as
/// `file:line:col: severity: [name] message` (the name of an enclosing
/// NameLoc, e.g. an nnScaler node's label), notes likewise, without quoting
/// the line; any other diagnostic goes on to the tool's own handler.
/// Registered after the tool's handler, it is asked first. Files are read
/// from disk when a diagnostic points into them; `name` / `text` give one
/// that is already in memory (an input read from stdin).
DiagnosticEngine::HandlerID addLongLineDiagnostics(MLIRContext *ctx,
                                                   StringRef name = {},
                                                   StringRef text = {});

} // namespace mlir::tv

#endif

//===- Z3Session.h - exception-safe access to Z3 ----------------*- C++ -*-===//
#ifndef TRAINVERIFY_VERIFY_Z3SESSION_H
#define TRAINVERIFY_VERIFY_Z3SESSION_H

#include <string>

namespace mlir::tv {

/// Outcome of a solver query.
enum class SolverResult { Unsat, Sat, Unknown, Error };

const char *toString(SolverResult r);

/// Checks an SMT-LIB 2 script (declarations and assertions) with a fresh Z3
/// context. Z3 errors are caught here (this library is built with C++
/// exceptions) and turned into `Error` with the message in `error`.
SolverResult checkSmtLib(const std::string &script, unsigned timeoutMs,
                         std::string *error = nullptr);

} // namespace mlir::tv

#endif

//===- Z3Session.cpp - exception-safe access to Z3 ------------------------===//
#include "TrainVerify/Verify/Z3Session.h"

#include <z3++.h>

using namespace mlir::tv;

const char *mlir::tv::toString(SolverResult r) {
  switch (r) {
  case SolverResult::Unsat:
    return "unsat";
  case SolverResult::Sat:
    return "sat";
  case SolverResult::Unknown:
    return "unknown";
  case SolverResult::Error:
    return "error";
  }
  return "error";
}

SolverResult mlir::tv::checkSmtLib(const std::string &script,
                                   unsigned timeoutMs, std::string *error) {
  try {
    z3::context ctx;
    z3::solver solver(ctx);
    if (timeoutMs) {
      z3::params p(ctx);
      p.set("timeout", timeoutMs);
      solver.set(p);
    }
    solver.from_string(script.c_str());
    switch (solver.check()) {
    case z3::unsat:
      return SolverResult::Unsat;
    case z3::sat:
      return SolverResult::Sat;
    case z3::unknown:
      if (error)
        *error = solver.reason_unknown();
      return SolverResult::Unknown;
    }
  } catch (const z3::exception &e) {
    if (error)
      *error = e.msg();
  }
  return SolverResult::Error;
}

//===- Z3Test.cpp - Z3 smoke tests ----------------------------------------===//
#include "TrainVerify/Verify/Z3Session.h"

#include "gtest/gtest.h"

using namespace mlir::tv;

TEST(Z3, ProvesDistributivity) {
  // (a + b) * c == a*c + b*c for all reals: the negation is unsat.
  const char *q = "(declare-const a Real)(declare-const b Real)"
                  "(declare-const c Real)"
                  "(assert (not (= (* (+ a b) c) (+ (* a c) (* b c)))))";
  EXPECT_EQ(checkSmtLib(q, 5000), SolverResult::Unsat);
}

TEST(Z3, FindsCounterexample) {
  const char *q = "(declare-const a Real)(assert (not (= (* 2 a) a)))";
  EXPECT_EQ(checkSmtLib(q, 5000), SolverResult::Sat);
}

TEST(Z3, ErrorsSurface) {
  // An undeclared symbol is a Z3 error; it must surface, not vanish.
  std::string err;
  EXPECT_EQ(checkSmtLib("(assert (> x 0))", 5000, &err), SolverResult::Error);
  EXPECT_FALSE(err.empty());
}

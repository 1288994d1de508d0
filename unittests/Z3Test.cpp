//===- Z3Test.cpp - exported queries are what Z3 decides ------------------===//
//
// The SMT-LIB a stage exports (--export-smtlib, smtlib-dir=) is built
// without solving; Z3 itself must read it and decide it as tv did: unsat
// (proven) for a correct stage, sat for a wrong one.
//
//===----------------------------------------------------------------------===//
#include "TestStages.h"
#include "TrainVerify/Verify/StageVerifier.h"

#include "gtest/gtest.h"
#include <z3++.h>

using namespace mlir;
using namespace mlir::tv;
using tvtest::stageText;

namespace {
/// Z3's answer to an SMT-LIB script, run command by command as the z3
/// binary runs a file ((reset), (echo ...), (check-sat)), or its error.
std::string decide(const std::string &script) {
  try {
    z3::context c;
    std::string out = Z3_eval_smtlib2_string(c, script.c_str());
    c.check_error();
    // The last line is the answer of the last (check-sat).
    llvm::StringRef text = llvm::StringRef(out).rtrim();
    if (text.contains("error"))
      return "error: " + out;
    return text.rsplit('\n').second.empty() ? text.str()
                                             : text.rsplit('\n').second.str();
  } catch (const z3::exception &e) {
    return std::string("error: ") + e.msg();
  }
}

std::string exportedQuery(StageOp s) {
  StageOptions opts;
  opts.wantSmtLib = true;
  opts.queryOnly = true;
  StageResult r = verifyStage(s, opts);
  EXPECT_EQ(r.outcome, StageResult::Unknown) << "a query-only run decides nothing";
  return r.smtlib;
}

struct ExportFixture : tvtest::StageFixture {};
} // namespace

TEST_F(ExportFixture, ExportedQueryOfACorrectStageIsUnsat) {
  StageOp s = load(stageText("%y = tv.all_reduce sum %p {axes = [\"tp\"]} : "
                             "tensor<4x6xf32> -> tensor<4x6xf32>"));
  ASSERT_TRUE(s);
  std::string q = exportedQuery(s);
  ASSERT_FALSE(q.empty());
  EXPECT_EQ(decide(q), "unsat");
}

TEST_F(ExportFixture, ExportedQueryOfAWrongStageIsSat) {
  // The partial sums are averaged instead of summed.
  StageOp s = load(stageText("%y = tv.all_reduce avg %p {axes = [\"tp\"]} : "
                             "tensor<4x6xf32> -> tensor<4x6xf32>"));
  ASSERT_TRUE(s);
  std::string q = exportedQuery(s);
  ASSERT_FALSE(q.empty());
  EXPECT_EQ(decide(q), "sat");
}

TEST(Z3, ErrorsSurface) {
  // An undeclared symbol is a Z3 error; it must surface, not vanish.
  EXPECT_EQ(decide("(assert (> x 0))").rfind("error: ", 0), 0u);
}

//===- Z3Test.cpp - exported queries are what Z3 decides ------------------===//
//
// The SMT-LIB a stage exports (--export-smtlib, smtlib-dir=) is built
// without solving; Z3 itself must read it and decide it as tv did: unsat
// (proven) for a correct stage, sat for a wrong one.
//
//===----------------------------------------------------------------------===//
#include "TestStages.h"
#include "TrainVerify/Verify/StageVerifier.h"
#include "TrainVerify/Verify/Z3Lowering.h"

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

// Integer terms as bit-vectors (docs/integers.md): identities that hold
// modulo 2^n but not as polynomials are proven by the solver, and the
// operations are the bit-vector ones (signed and unsigned order differ).
TEST(Z3Lowering, IntegersAreBitVectors) {
  using namespace mlir::tv::sym;
  TermContext t;
  TermId p = t.var("p", true), q = t.var("q", true);
  auto holds = [&](TermId a, TermId b, unsigned width) {
    z3::context ctx;
    z3::solver s(ctx);
    Z3Lowering lower(ctx, t);
    s.add(lower.bv(a, width) != lower.bv(b, width));
    return s.check() == z3::unsat;
  };
  // (p & q) + (p | q) = p + q, and p ^ q = (p | q) - (p & q).
  EXPECT_TRUE(holds(t.add(t.intOp(Fn::IAnd, 8, {p, q}),
                          t.intOp(Fn::IOr, 8, {p, q})),
                    t.add(p, q), 8));
  EXPECT_TRUE(holds(t.intOp(Fn::IXor, 16, {p, q}),
                    t.sub(t.intOp(Fn::IOr, 16, {p, q}),
                          t.intOp(Fn::IAnd, 16, {p, q})),
                    16));
  // 2^8 * p is 0 in 8 bits, not in 16.
  EXPECT_TRUE(holds(t.scale(p, Rat(256)), t.zero(), 8));
  EXPECT_FALSE(holds(t.scale(p, Rat(256)), t.zero(), 16));
  // p << 1 = 2p; but a sum is not an and, nor a signed max an unsigned one.
  EXPECT_TRUE(holds(t.intOp(Fn::IShl, 32, {p, t.one()}), t.scale(p, Rat(2)),
                    32));
  EXPECT_FALSE(holds(t.add(p, q), t.intOp(Fn::IAnd, 32, {p, q}), 32));
  EXPECT_FALSE(holds(t.intOp(Fn::IMaxS, 8, {p, q}),
                     t.intOp(Fn::IMaxU, 8, {p, q}), 8));
  // An integer operation inside a real term reads its signed value.
  {
    z3::context ctx;
    z3::solver s(ctx);
    Z3Lowering lower(ctx, t);
    s.add(lower.term(t.intOp(Fn::IAnd, 8, {p, q})) > ctx.real_val(127));
    EXPECT_EQ(s.check(), z3::unsat);
  }
}

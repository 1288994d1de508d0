//===- StageVerifierTest.cpp - stage proofs, counterexamples, shapes ------===//
#include "TrainVerify/Dialect/TVOps.h"
#include "TrainVerify/Verify/ShapeProgram.h"
#include "TrainVerify/Verify/StageVerifier.h"
#include "TestStages.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "gtest/gtest.h"

using namespace mlir;
using namespace mlir::tv;

using tvtest::StageFixture;
using tvtest::stageText;

TEST_F(StageFixture, ProvesByNormalization) {
  StageOp s = load(stageText(
      "%y = tv.all_reduce sum %p {axes = [\"tp\"]} : tensor<4x6xf32> -> "
      "tensor<4x6xf32>"));
  ASSERT_TRUE(s);
  StageResult r = verifyStage(s, StageOptions());
  EXPECT_EQ(r.outcome, StageResult::Proven) << r.headline;
  EXPECT_TRUE(r.byNormalization);
}

TEST_F(StageFixture, CounterexampleIsConcreteAndReplayed) {
  StageOp s = load(stageText(
      "%y = tv.all_reduce avg %p {axes = [\"tp\"]} : tensor<4x6xf32> -> "
      "tensor<4x6xf32>"));
  ASSERT_TRUE(s);
  StageResult r = verifyStage(s, StageOptions());
  ASSERT_EQ(r.outcome, StageResult::Counterexample) << r.headline;
  EXPECT_NE(r.headline.find("lineage 'y'[0:4, 0:6] = 'y'@0 does not hold"),
            std::string::npos)
      << r.headline;
  bool marked = false;
  for (const std::string &d : r.details)
    marked |= d.find("<-- mismatch") != std::string::npos;
  EXPECT_TRUE(marked);
  // The reported location is the plan op that computes the tensor.
  auto loc = dyn_cast<FileLineColLoc>(r.loc);
  ASSERT_TRUE(loc);
  EXPECT_EQ(loc.getLine(), 15u); // the all_reduce
}

TEST_F(StageFixture, StagesReplayRandomPointsBeforeTheSolver) {
  // By default (replayFirstBytes = 0) every unsettled stage replays random
  // points before the solver: the counterexample comes from a random point
  // (its inputs are not the solver model's), and it is still replayed and
  // marked. With the replay-first threshold above the stage's size, the
  // solver's model is replayed instead.
  StageOp s = load(stageText(
      "%y = tv.all_reduce avg %p {axes = [\"tp\"]} : tensor<4x6xf32> -> "
      "tensor<4x6xf32>"));
  StageOptions opts;
  opts.replayFirstBytes = 0;
  StageResult early = verifyStage(s, opts);
  ASSERT_EQ(early.outcome, StageResult::Counterexample) << early.headline;
  StageOptions solverFirst;
  solverFirst.replayFirstBytes = SIZE_MAX;
  StageResult solver = verifyStage(s, solverFirst);
  ASSERT_EQ(solver.outcome, StageResult::Counterexample);
  EXPECT_EQ(early.headline, solver.headline);
  EXPECT_NE(early.details, solver.details); // other inputs, other values
  // A correct stage is never a counterexample, large or not.
  tvtest::OwnStage correct(
      stageText("%y = tv.all_reduce sum %p {axes = [\"tp\"]} : "
                "tensor<4x6xf32> -> tensor<4x6xf32>"));
  EXPECT_EQ(verifyStage(correct.get(), opts).outcome,
            StageResult::Proven);
}

TEST_F(StageFixture, SmtLibQueryIsProduced) {
  StageOp s = load(stageText(
      "%y = tv.all_reduce sum %p {axes = [\"tp\"]} : tensor<4x6xf32> -> "
      "tensor<4x6xf32>"));
  StageOptions opts;
  opts.wantSmtLib = true;
  StageResult r = verifyStage(s, opts);
  EXPECT_EQ(r.outcome, StageResult::Proven);
  EXPECT_NE(r.smtlib.find("(declare-fun"), std::string::npos);
  EXPECT_NE(r.smtlib.find("(assert"), std::string::npos);
}

TEST_F(StageFixture, ShapeReductionKeepsRatiosAndProof) {
  StageOp s = load(stageText(
      "%y = tv.all_reduce sum %p {axes = [\"tp\"]} : tensor<4x6xf32> -> "
      "tensor<4x6xf32>"));
  ASSERT_TRUE(succeeded(reduceStageShapes(s, 10000)));
  // Every dimension keeps 2 elements; the contracted one keeps 2 per shard.
  auto input = *s.getSpec().getBody().front().getOps<InputOp>().begin();
  EXPECT_EQ(cast<RankedTensorType>(input.getType()).getShape(),
            (ArrayRef<int64_t>{2, 4}));
  auto a0 = cast<LineageAttr>(s.getAssumes()[0]);
  EXPECT_EQ(a0.getUpper()[1], 2);
  auto a1 = cast<LineageAttr>(s.getAssumes()[1]);
  EXPECT_EQ(a1.getLower()[1], 2);
  EXPECT_EQ(a1.getUpper()[1], 4);
  EXPECT_EQ(verifyStage(s, StageOptions()).outcome, StageResult::Proven);
}

TEST_F(StageFixture, CanonicalKeyIgnoresNames) {
  std::string a = stageText("%y = tv.all_reduce sum %p {axes = [\"tp\"]} : "
                            "tensor<4x6xf32> -> tensor<4x6xf32>");
  std::string b = a;
  for (size_t pos; (pos = b.find("\"w\"")) != std::string::npos;)
    b.replace(pos, 3, "\"layer7.w\"");
  StageOp s1 = load(a);
  std::string k1 = canonicalStageKey(s1);
  tvtest::OwnStage renamed(b);
  ASSERT_TRUE(renamed.get());
  std::string k2 = canonicalStageKey(renamed.get());
  EXPECT_EQ(k1, k2);
  // A different collective is a different stage.
  tvtest::OwnStage other(
      stageText("%y = tv.all_reduce avg %p {axes = [\"tp\"]} : "
                "tensor<4x6xf32> -> tensor<4x6xf32>"));
  EXPECT_NE(k1, canonicalStageKey(other.get()));
}

TEST_F(StageFixture, ShapeReductionSolvesConcatenations) {
  // MLA builds its query from two independently sized parts: the reduced
  // concatenation must be the sum of the reduced parts, and small.
  StageOp s = load(R"(
  tv.mesh @mesh axes ["tp"] sizes [2]
  tv.stage @s assumes [#tv.lineage<"a"[0:4, 0:96] = ["a":0] | ["a":1]>, #tv.lineage<"b"[0:4, 0:32] = ["b":0] | ["b":1]>] guarantees [#tv.lineage<"y"[0:4, 0:128] = ["y":0] | ["y":1]>] {
    tv.spec @spec {
      %a = tv.input "a" : tensor<4x96xf32>
      %b = tv.input "b" : tensor<4x32xf32>
      %y = tv.concat %a, %b dim 1 : (tensor<4x96xf32>, tensor<4x32xf32>) -> tensor<4x128xf32>
      tv.output "y", %y : tensor<4x128xf32>
    }
    tv.plan @plan mesh @mesh micro_batches 1 {
      tv.rank_program [0, 1] {
        %a = tv.input "a" : tensor<4x96xf32>
        %b = tv.input "b" : tensor<4x32xf32>
        %y = tv.concat %a, %b dim 1 : (tensor<4x96xf32>, tensor<4x32xf32>) -> tensor<4x128xf32>
        tv.output "y", %y : tensor<4x128xf32>
      }
    }
  })");
  ASSERT_TRUE(s);
  ASSERT_TRUE(succeeded(reduceStageShapes(s, 10000)));
  auto concat = *s.getSpec().getBody().front().getOps<ConcatOp>().begin();
  ArrayRef<int64_t> a = cast<RankedTensorType>(concat.getInputs()[0].getType())
                            .getShape(),
                    b = cast<RankedTensorType>(concat.getInputs()[1].getType())
                            .getShape(),
                    y = cast<RankedTensorType>(concat.getType()).getShape();
  EXPECT_EQ(y[1], a[1] + b[1]);
  EXPECT_EQ(a[1], 2);
  EXPECT_EQ(b[1], 2);
  auto g = cast<LineageAttr>(s.getGuarantees()[0]);
  EXPECT_EQ(g.getUpper()[1], 4);
  EXPECT_EQ(verifyStage(s, StageOptions()).outcome, StageResult::Proven);
}

namespace {
/// A one-rank gelu stage on pipeline rank `rank` of a (pp 4, tp 2) mesh,
/// with `extra` ops added to its program.
std::string pipelineStage(int rank, const std::string &extra = "") {
  std::string r = std::to_string(rank);
  return R"(
  tv.mesh @mesh axes ["pp", "tp"] sizes [4, 2]
  tv.stage @s assumes [#tv.lineage<"h"[0:4, 0:8] = ["h":)" + r +
         R"(]>] guarantees [#tv.lineage<"a"[0:4, 0:8] = ["a":)" + r + R"(]>] {
    tv.spec @spec {
      %h = tv.input "h" : tensor<4x8xf32>
      %a = tv.gelu %h : tensor<4x8xf32>
      tv.output "a", %a : tensor<4x8xf32>
    }
    tv.plan @plan mesh @mesh micro_batches 1 {
      tv.rank_program [)" + r + R"(] {
        %h = tv.input "h" : tensor<4x8xf32>
        %a = tv.gelu %h : tensor<4x8xf32>
        )" + extra + R"(
        tv.output "a", %a : tensor<4x8xf32>
      }
    }
  })";
}

std::string keyOf(const std::string &text, int64_t rank, int64_t *canon) {
  tvtest::OwnStage parsed(text);
  StageOp s = parsed.get();
  if (!s)
    return "<parse error>";
  *canon = canonicalRank(s, rank);
  return canonicalStageKey(s);
}
} // namespace

TEST(CanonicalKey, SameLayerOnAnotherPipelineStageIsTranslated) {
  // Rank 6 is (pp 3, tp 0): translated along pp to rank 0.
  int64_t c0, c6;
  std::string k0 = keyOf(pipelineStage(0), 0, &c0);
  std::string k6 = keyOf(pipelineStage(6), 6, &c6);
  EXPECT_EQ(c6, 0);
  EXPECT_EQ(k0, k6);
  // Rank 7 is (pp 3, tp 1): tp is translated too.
  int64_t c7;
  EXPECT_EQ(keyOf(pipelineStage(7), 7, &c7), k0);
  EXPECT_EQ(c7, 0);
}

TEST(CanonicalKey, AxisReadByAnOpIsNotTranslated) {
  // An embedding sharded along pp reads the rank's pp coordinate: the stage
  // on pp 3 computes another vocabulary shard than the one on pp 0.
  std::string emb = "%ids = tv.input \"ids\" : tensor<4xi64>\n"
                    "%t = tv.input \"t\" : tensor<4x8xf32>\n"
                    "%e = tv.embedding %ids, %t {vocab_axis = \"pp\"} : "
                    "tensor<4xi64>, tensor<4x8xf32> -> tensor<4x8xf32>";
  int64_t c0, c6;
  std::string k0 = keyOf(pipelineStage(0, emb), 0, &c0);
  std::string k6 = keyOf(pipelineStage(6, emb), 6, &c6);
  ASSERT_NE(k0, "<parse error>");
  EXPECT_EQ(c6, 6);
  EXPECT_NE(k0, k6);
}

TEST(CanonicalKey, PeerOutsideTheStageIsNotTranslated) {
  // A send to pp - 1 whose receiver is not in the stage: from pp 1 and from
  // pp 3 it reaches different ranks, and translated to pp 0 it would fall
  // off the mesh. A peer outside the stage pins the axis.
  std::string send = "tv.send %a {peer_axis = \"pp\", peer_offset = -1 : i64} "
                     ": tensor<4x8xf32>";
  int64_t c2, c6;
  std::string k2 = keyOf(pipelineStage(2, send), 2, &c2);
  std::string k6 = keyOf(pipelineStage(6, send), 6, &c6);
  ASSERT_NE(k2, "<parse error>");
  EXPECT_EQ(c2, 2);
  EXPECT_EQ(c6, 6);
  EXPECT_NE(k2, k6);
}

namespace {
/// A stage whose rank program reduces two partial products and adds them;
/// `swapped` lists the two reductions in the other order, `split` runs the
/// two ranks as two programs.
std::string twoReductions(bool swapped, bool split) {
  std::string x = "%x = tv.all_reduce sum %px {axes = [\"tp\"]} : "
                  "tensor<4x6xf32> -> tensor<4x6xf32>\n";
  std::string y = "%y = tv.all_reduce sum %py {axes = [\"tp\"]} : "
                  "tensor<4x6xf32> -> tensor<4x6xf32>\n";
  std::string body = R"(
        %a = tv.input "a" : tensor<4x8xf32>
        %w = tv.input "w" : tensor<6x8xf32>
        %v = tv.input "v" : tensor<6x8xf32>
        %px = tv.linear %a, %w : (tensor<4x8xf32>, tensor<6x8xf32>) -> tensor<4x6xf32>
        %py = tv.linear %a, %v : (tensor<4x8xf32>, tensor<6x8xf32>) -> tensor<4x6xf32>
        )" + (swapped ? y + x : x + y) + R"(
        %s = tv.add %x, %y : tensor<4x6xf32>, tensor<4x6xf32> -> tensor<4x6xf32>
        tv.output "s", %s : tensor<4x6xf32>)";
  std::string programs =
      split ? "tv.rank_program [0] {" + body + "\n      }\n      tv.rank_program [1] {" + body + "\n      }"
            : "tv.rank_program [0, 1] {" + body + "\n      }";
  return R"(
  tv.mesh @mesh axes ["tp"] sizes [2]
  tv.stage @s assumes [#tv.lineage<"a"[0:4, 0:8] = ["a":0]>, #tv.lineage<"a"[0:4, 8:16] = ["a":1]>, #tv.lineage<"w"[0:6, 0:8] = ["w":0]>, #tv.lineage<"w"[0:6, 8:16] = ["w":1]>, #tv.lineage<"v"[0:6, 0:8] = ["v":0]>, #tv.lineage<"v"[0:6, 8:16] = ["v":1]>] guarantees [#tv.lineage<"s"[0:4, 0:6] = ["s":0] | ["s":1]>] {
    tv.spec @spec {
      %a = tv.input "a" : tensor<4x16xf32>
      %w = tv.input "w" : tensor<6x16xf32>
      %v = tv.input "v" : tensor<6x16xf32>
      %x = tv.linear %a, %w : (tensor<4x16xf32>, tensor<6x16xf32>) -> tensor<4x6xf32>
      %y = tv.linear %a, %v : (tensor<4x16xf32>, tensor<6x16xf32>) -> tensor<4x6xf32>
      %s = tv.add %x, %y : tensor<4x6xf32>, tensor<4x6xf32> -> tensor<4x6xf32>
      tv.output "s", %s : tensor<4x6xf32>
    }
    tv.plan @plan mesh @mesh micro_batches 1 {
      )" + programs + R"(
    }
  })";
}
} // namespace

TEST(CanonicalKey, DataflowOrderMatchesReorderedSingleProgram) {
  // Another pipeline stage's schedule lists the same graph in another
  // order: the verifier's key (dataflow order) is equal, shape reduction's
  // (op by op) is not.
  tvtest::OwnStage a(twoReductions(false, false)), b(twoReductions(true, false));
  ASSERT_TRUE(a.get() && b.get());
  EXPECT_EQ(verifyStage(a.get(), StageOptions()).outcome, StageResult::Proven);
  EXPECT_EQ(verifyStage(b.get(), StageOptions()).outcome, StageResult::Proven);
  EXPECT_EQ(canonicalStageKey(a.get(), true), canonicalStageKey(b.get(), true));
  EXPECT_NE(canonicalStageKey(a.get()), canonicalStageKey(b.get()));
  // Two programs: the order of collectives decides how they match between
  // programs, so it stays in the key.
  tvtest::OwnStage c(twoReductions(false, true)), d(twoReductions(true, true));
  ASSERT_TRUE(c.get() && d.get());
  EXPECT_NE(canonicalStageKey(c.get(), true), canonicalStageKey(d.get(), true));
}

namespace {
/// Two spec tensors assumed equal to one plan tensor (a framework's
/// aliases, as nnScaler's multiref copies give): `extra` assumptions and
/// the plan's `body` (which reads %p and defines %y).
std::string aliasStage(const std::string &extra, const std::string &body) {
  return R"(
  tv.mesh @mesh axes ["dp"] sizes [1]
  tv.stage @s assumes [#tv.lineage<"a"[0:2, 0:2] = ["p":0]>, )" + extra +
         R"(#tv.lineage<"b"[0:2, 0:2] = ["p":0]>] guarantees [#tv.lineage<"y"[0:2, 0:2] = ["y":0]>] {
    tv.spec @spec {
      %a = tv.input "a" : tensor<2x2xf32>
      %b = tv.input "b" : tensor<2x2xf32>
      %y = tv.exp %b : tensor<2x2xf32>
      tv.output "y", %y : tensor<2x2xf32>
    }
    tv.plan @plan mesh @mesh micro_batches 1 {
      tv.rank_program [0] {
        %p = tv.input "p" : tensor<2x2xf32>
        )" + body + R"(
        tv.output "y", %y : tensor<2x2xf32>
      }
    }
  })";
}
} // namespace

TEST(Aliases, SubstitutedAndDecidedByNormalization) {
  // b = p and a = p: b's variables are p's, so exp(b) and exp(p) are one
  // term.
  tvtest::OwnStage s(aliasStage("", "%y = tv.exp %p : tensor<2x2xf32>"));
  ASSERT_TRUE(s.get());
  StageResult r = verifyStage(s.get(), StageOptions());
  EXPECT_EQ(r.outcome, StageResult::Proven) << r.headline;
  EXPECT_TRUE(r.byNormalization);
  // A wrong plan is still wrong, and its counterexample replays.
  tvtest::OwnStage wrong(
      aliasStage("", "%e = tv.exp %p : tensor<2x2xf32>\n"
                     "        %y = tv.scale %e, 2.0 : tensor<2x2xf32>"));
  ASSERT_TRUE(wrong.get());
  StageResult w = verifyStage(wrong.get(), StageOptions());
  EXPECT_EQ(w.outcome, StageResult::Counterexample) << w.headline;
  // Its inputs are a's: b's own variables were replaced, and are not listed.
  bool listed = false, aListed = false;
  for (const std::string &d : w.details)
    if (d.rfind("inputs:", 0) == 0) {
      listed |= d.find(" b[") != std::string::npos;
      aListed |= d.find(" a[") != std::string::npos;
    }
  EXPECT_FALSE(listed);
  EXPECT_TRUE(aListed);
}

TEST(Aliases, ReadBoxKeepsTheEquality) {
  // b's first row is bound to q first: its variables stand in q's binding,
  // so b = p stays an equality for the solver, which proves the stage.
  tvtest::OwnStage s(aliasStage(R"(#tv.lineage<"b"[0:1, 0:2] = ["q":0]>, )",
                                "%y = tv.exp %p : tensor<2x2xf32>"));
  ASSERT_TRUE(s.get());
  StageResult r = verifyStage(s.get(), StageOptions());
  EXPECT_EQ(r.outcome, StageResult::Proven) << r.headline;
  EXPECT_FALSE(r.byNormalization);
}

TEST(Aliases, MaskIsNeverSubstitutedByReals) {
  // b is a mask (0 or 1) and a = b as reals: b's domain must not move onto
  // a's values (b * b = b holds for masks only), so the equality stays
  // for the solver, which proves the stage.
  tvtest::OwnStage s(R"(
  tv.mesh @mesh axes ["dp"] sizes [1]
  tv.stage @s assumes [#tv.lineage<"a"[0:2, 0:2] = ["p":0]>, #tv.lineage<"g"[0:2, 0:2] = ["g":0]>, #tv.lineage<"b"[0:2, 0:2] = ["p":0]>] guarantees [#tv.lineage<"y"[0:2, 0:2] = ["y":0]>] {
    tv.spec @spec {
      %a = tv.input "a" : tensor<2x2xf32>
      %b = tv.input "b" : tensor<2x2xi1>
      %g = tv.input "g" : tensor<2x2xf32>
      %m = tv.apply_mask_grad %g, %b : tensor<2x2xf32>, tensor<2x2xi1> -> tensor<2x2xf32>
      %y = tv.apply_mask_grad %m, %b : tensor<2x2xf32>, tensor<2x2xi1> -> tensor<2x2xf32>
      tv.output "y", %y : tensor<2x2xf32>
    }
    tv.plan @plan mesh @mesh micro_batches 1 {
      tv.rank_program [0] {
        %p = tv.input "p" : tensor<2x2xi1>
        %g = tv.input "g" : tensor<2x2xf32>
        %y = tv.apply_mask_grad %g, %p : tensor<2x2xf32>, tensor<2x2xi1> -> tensor<2x2xf32>
        tv.output "y", %y : tensor<2x2xf32>
      }
    }
  })");
  ASSERT_TRUE(s.get());
  StageResult r = verifyStage(s.get(), StageOptions());
  EXPECT_EQ(r.outcome, StageResult::Proven) << r.headline;
}

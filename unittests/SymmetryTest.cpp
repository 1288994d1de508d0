//===- SymmetryTest.cpp - folding stages along symmetric mesh axes --------===//
#include "TrainVerify/Dialect/TVOps.h"
#include "TrainVerify/Verify/StageVerifier.h"
#include "TrainVerify/Verify/Symmetry.h"
#include "TestStages.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "gtest/gtest.h"

using namespace mlir;
using namespace mlir::tv;

using tvtest::stageText;

namespace {
struct SymmetryFixture : tvtest::StageFixture {
  static SmallVector<int64_t> ranksOf(StageOp s) {
    SmallVector<int64_t> ranks;
    for (auto p : s.getPlan().getBody().front().getOps<RankProgramOp>())
      ranks.append(p.getRanks().begin(), p.getRanks().end());
    return ranks;
  }
  static Type specInputType(StageOp s, StringRef name) {
    for (auto in : s.getSpec().getBody().front().getOps<InputOp>())
      if (in.getName() == name)
        return in.getType();
    return Type();
  }
};
} // namespace

TEST_F(SymmetryFixture, RowParallelSumFoldsAndProves) {
  StageOp s = load(stageText("%y = tv.all_reduce sum %p {axes = [\"tp\"]} : "
                               "tensor<4x6xf32> -> tensor<4x6xf32>"));
  ASSERT_TRUE(s);
  std::string why;
  ASSERT_TRUE(foldStageAlongAxis(s, "tp", &why)) << why;
  EXPECT_EQ(ranksOf(s), SmallVector<int64_t>({0}));
  // The spec keeps block 0 of the contracted dimension.
  auto a = cast<RankedTensorType>(specInputType(s, "a"));
  EXPECT_EQ(a.getShape(), ArrayRef<int64_t>({4, 8}));
  ASSERT_TRUE(s.getPlan().getFoldedAttr());
  EXPECT_EQ(s.getGuarantees().size(), 1u);
  StageResult r = verifyStage(s, StageOptions());
  EXPECT_EQ(r.outcome, StageResult::Proven) << r.headline;
  // Folding twice along one axis is refused.
  EXPECT_FALSE(foldStageAlongAxis(s, "tp", &why));
  EXPECT_NE(why.find("already folded"), std::string::npos) << why;
}

TEST_F(SymmetryFixture, MissingReduceIsNotFolded) {
  // Each rank holds a partial sum: folding would prove a_0 w_0 == a_0 w_0.
  StageOp s = load(stageText("%y = tv.copy %p : tensor<4x6xf32>"));
  ASSERT_TRUE(s);
  std::string why;
  EXPECT_FALSE(foldStageAlongAxis(s, "tp", &why));
  EXPECT_NE(why.find("is a sum over the axis in the spec"), std::string::npos)
      << why;
  EXPECT_FALSE(s.getPlan().getFoldedAttr());
  EXPECT_EQ(ranksOf(s), SmallVector<int64_t>({0, 1}));
  StageResult r = verifyStage(s, StageOptions());
  EXPECT_EQ(r.outcome, StageResult::Counterexample) << r.headline;
}

TEST_F(SymmetryFixture, MaxReduceIsNotFolded) {
  StageOp s = load(stageText("%y = tv.all_reduce max %p {axes = [\"tp\"]} : "
                               "tensor<4x6xf32> -> tensor<4x6xf32>"));
  ASSERT_TRUE(s);
  std::string why;
  EXPECT_FALSE(foldStageAlongAxis(s, "tp", &why));
  EXPECT_NE(why.find("not a sum"), std::string::npos) << why;
}

// Rank c adds row 0 of a replicated bias where the spec adds row c. A fold
// that treated the bias as replicated would prove it at rank 0 (row 0 ==
// row 0); the elementwise rule refuses a replicated operand that spans the
// factored dimension.
TEST_F(SymmetryFixture, ReplicatedOperandAlongFactorIsNotFolded) {
  StageOp s = load(R"(
  tv.mesh @mesh axes ["dp"] sizes [2]
  tv.stage @s assumes [#tv.lineage<"x"[0:1, 0:2] = ["x":0]>, #tv.lineage<"x"[1:2, 0:2] = ["x":1]>, #tv.lineage<"b"[0:2, 0:2] = ["b":0] | ["b":1]>] guarantees [#tv.lineage<"y"[0:1, 0:2] = ["y":0]>, #tv.lineage<"y"[1:2, 0:2] = ["y":1]>] {
    tv.spec @spec {
      %x = tv.input "x" : tensor<2x2xf32>
      %b = tv.input "b" : tensor<2x2xf32>
      %y = tv.add %x, %b : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x2xf32>
      tv.output "y", %y : tensor<2x2xf32>
    }
    tv.plan @plan mesh @mesh micro_batches 1 {
      tv.rank_program [0, 1] {
        %x = tv.input "x" : tensor<1x2xf32>
        %b = tv.input "b" : tensor<2x2xf32>
        %r = tv.slice %b start [0, 0] : tensor<2x2xf32> -> tensor<1x2xf32>
        %y = tv.add %x, %r : tensor<1x2xf32>, tensor<1x2xf32> -> tensor<1x2xf32>
        tv.output "y", %y : tensor<1x2xf32>
      }
    }
  })");
  ASSERT_TRUE(s);
  std::string why;
  EXPECT_FALSE(foldStageAlongAxis(s, "dp", &why));
  EXPECT_NE(why.find("replicated operand spans the factored dimension"),
            std::string::npos)
      << why;
  StageResult r = verifyStage(s, StageOptions());
  EXPECT_EQ(r.outcome, StageResult::Counterexample) << r.headline;
}

// Column blocks of x flattened row-major are not contiguous: a reshape that
// merges them with the rows has no block structure to keep.
TEST_F(SymmetryFixture, ReshapeAcrossBlocksIsNotFolded) {
  StageOp s = load(R"(
  tv.mesh @mesh axes ["tp"] sizes [2]
  tv.stage @s assumes [#tv.lineage<"x"[0:2, 0:2] = ["x":0]>, #tv.lineage<"x"[0:2, 2:4] = ["x":1]>] guarantees [#tv.lineage<"y"[0:8] = ["y":0] | ["y":1]>] {
    tv.spec @spec {
      %x = tv.input "x" : tensor<2x4xf32>
      %y = tv.reshape %x : tensor<2x4xf32> -> tensor<8xf32>
      tv.output "y", %y : tensor<8xf32>
    }
    tv.plan @plan mesh @mesh micro_batches 1 {
      tv.rank_program [0, 1] {
        %x = tv.input "x" : tensor<2x2xf32>
        %g = tv.all_gather %x dim 1 {axes = ["tp"]} : tensor<2x2xf32> -> tensor<2x4xf32>
        %y = tv.reshape %g : tensor<2x4xf32> -> tensor<8xf32>
        tv.output "y", %y : tensor<8xf32>
      }
    }
  })");
  ASSERT_TRUE(s);
  std::string why;
  EXPECT_FALSE(foldStageAlongAxis(s, "tp", &why));
  EXPECT_NE(why.find("reshape splits the factored blocks"), std::string::npos)
      << why;
}

// Data and tensor parallelism together: the stage folds along both axes to
// a single rank, and the folded stage is proven.
TEST_F(SymmetryFixture, FoldsAlongTwoAxes) {
  StageOp s = load(R"(
  tv.mesh @mesh axes ["dp", "tp"] sizes [2, 2]
  tv.stage @s assumes [#tv.lineage<"x"[0:2, 0:4] = ["x":0] | ["x":1]>, #tv.lineage<"x"[2:4, 0:4] = ["x":2] | ["x":3]>, #tv.lineage<"w"[0:3, 0:4] = ["w":0] | ["w":2]>, #tv.lineage<"w"[3:6, 0:4] = ["w":1] | ["w":3]>] guarantees [#tv.lineage<"y"[0:2, 0:3] = ["y":0]>, #tv.lineage<"y"[0:2, 3:6] = ["y":1]>, #tv.lineage<"y"[2:4, 0:3] = ["y":2]>, #tv.lineage<"y"[2:4, 3:6] = ["y":3]>] {
    tv.spec @spec {
      %x = tv.input "x" : tensor<4x4xf32>
      %w = tv.input "w" : tensor<6x4xf32>
      %y = tv.linear %x, %w : (tensor<4x4xf32>, tensor<6x4xf32>) -> tensor<4x6xf32>
      tv.output "y", %y : tensor<4x6xf32>
    }
    tv.plan @plan mesh @mesh micro_batches 1 {
      tv.rank_program [0, 1, 2, 3] {
        %x = tv.input "x" : tensor<2x4xf32>
        %w = tv.input "w" : tensor<3x4xf32>
        %y = tv.linear %x, %w : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
        tv.output "y", %y : tensor<2x3xf32>
      }
    }
  })");
  ASSERT_TRUE(s);
  std::string why;
  ASSERT_TRUE(foldStageAlongAxis(s, "dp", &why)) << why;
  ASSERT_TRUE(foldStageAlongAxis(s, "tp", &why)) << why;
  EXPECT_EQ(ranksOf(s), SmallVector<int64_t>({0}));
  auto x = cast<RankedTensorType>(specInputType(s, "x"));
  auto w = cast<RankedTensorType>(specInputType(s, "w"));
  EXPECT_EQ(x.getShape(), ArrayRef<int64_t>({2, 4}));
  EXPECT_EQ(w.getShape(), ArrayRef<int64_t>({3, 4}));
  StageResult r = verifyStage(s, StageOptions());
  EXPECT_EQ(r.outcome, StageResult::Proven) << r.headline;
}

namespace {
/// A weight-gradient stage over two micro-batches; `accumulate` is the plan's
/// sum of the two micro-batches' gradients (or what replaces it).
std::string laneStage(const std::string &accumulate) {
  return R"(
tv.mesh @mesh axes ["dp"] sizes [1]
tv.stage @s assumes [#tv.lineage<"w"[0:3, 0:2] = ["w":0]>, #tv.lineage<"x"[0:2, 0:2] = ["x_mb0":0]>, #tv.lineage<"x"[2:4, 0:2] = ["x_mb1":0]>, #tv.lineage<"g"[0:2, 0:3] = ["g_mb0":0]>, #tv.lineage<"g"[2:4, 0:3] = ["g_mb1":0]>]
    guarantees [#tv.lineage<"dw"[0:3, 0:2] = ["dw":0]>] {
  tv.spec @spec {
    %x = tv.input "x" : tensor<4x2xf32>
    %w = tv.input "w" : tensor<3x2xf32>
    %g = tv.input "g" : tensor<4x3xf32>
    %dx, %dw = tv.linear_grad %x, %w, %g : tensor<4x2xf32>, tensor<3x2xf32>, tensor<4x3xf32>
    tv.output "dw", %dw : tensor<3x2xf32>
  }
  tv.plan @plan mesh @mesh micro_batches 2 {
    tv.rank_program [0] {
      %x0 = tv.input "x_mb0" : tensor<2x2xf32>
      %x1 = tv.input "x_mb1" : tensor<2x2xf32>
      %w = tv.input "w" : tensor<3x2xf32>
      %g0 = tv.input "g_mb0" : tensor<2x3xf32>
      %g1 = tv.input "g_mb1" : tensor<2x3xf32>
      %dx0, %dw0 = tv.linear_grad %x0, %w, %g0 {mb = 0 : i64} : tensor<2x2xf32>, tensor<3x2xf32>, tensor<2x3xf32>
      %dx1, %dw1 = tv.linear_grad %x1, %w, %g1 {mb = 1 : i64} : tensor<2x2xf32>, tensor<3x2xf32>, tensor<2x3xf32>
      )" + accumulate + R"(
      tv.output "dw", %s : tensor<3x2xf32>
    }
  }
}
)";
}
} // namespace

TEST_F(SymmetryFixture, MicroBatchSumFoldsToMicroBatchZeroAndProves) {
  StageOp s = load(laneStage("%s = tv.add %dw0, %dw1 : tensor<3x2xf32>, "
                             "tensor<3x2xf32> -> tensor<3x2xf32>"));
  ASSERT_TRUE(s);
  std::string why;
  ASSERT_TRUE(foldStageMicroBatches(s, &why)) << why;
  EXPECT_TRUE(s.getPlan().getFoldedMicroBatches());
  // The spec keeps micro-batch 0's rows; the plan its lane and no sum.
  auto x = cast<RankedTensorType>(specInputType(s, "x"));
  EXPECT_EQ(x.getShape(), ArrayRef<int64_t>({2, 2}));
  unsigned ops = 0, adds = 0;
  s.getPlan().walk([&](Operation *op) {
    ops += isa<LinearGradOp>(op);
    adds += isa<AddOp>(op);
  });
  EXPECT_EQ(ops, 1u);
  EXPECT_EQ(adds, 0u);
  EXPECT_EQ(s.getAssumes().size(), 3u); // w, x and g of micro-batch 0
  StageResult r = verifyStage(s, StageOptions());
  EXPECT_EQ(r.outcome, StageResult::Proven) << r.headline;
  EXPECT_FALSE(foldStageMicroBatches(s, &why));
  EXPECT_NE(why.find("already folded"), std::string::npos) << why;
}

TEST_F(SymmetryFixture, WrongMicroBatchSumsAreNotFolded) {
  // One term twice, a scaled sum, one term only: each refused, and the
  // stage, verified in full, is not proven.
  for (const char *acc :
       {"%s = tv.add %dw0, %dw0 : tensor<3x2xf32>, tensor<3x2xf32> -> "
        "tensor<3x2xf32>",
        "%t = tv.add %dw0, %dw1 : tensor<3x2xf32>, tensor<3x2xf32> -> "
        "tensor<3x2xf32>\n %s = tv.exp %t : tensor<3x2xf32>",
        "%s = tv.copy %dw1 : tensor<3x2xf32>"}) {
    StageOp s = load(laneStage(acc));
    ASSERT_TRUE(s) << acc;
    std::string why;
    EXPECT_FALSE(foldStageMicroBatches(s, &why)) << acc;
    EXPECT_FALSE(s.getPlan().getFoldedMicroBatches());
    StageResult r = verifyStage(s, StageOptions());
    EXPECT_NE(r.outcome, StageResult::Proven) << acc;
  }
}

TEST_F(SymmetryFixture, StageOverItsMemoryBudgetIsUnknownNotProven) {
  StageOp s = load(stageText("%y = tv.all_reduce sum %p {axes = [\"tp\"]} : "
                               "tensor<4x6xf32> -> tensor<4x6xf32>"));
  ASSERT_TRUE(s);
  StageOptions tight;
  tight.maxTermBytes = 1024;
  StageResult r = verifyStage(s, tight);
  EXPECT_EQ(r.outcome, StageResult::Unknown) << r.headline;
  EXPECT_NE(r.headline.find("memory budget"), std::string::npos) << r.headline;
  EXPECT_EQ(verifyStage(s, StageOptions()).outcome, StageResult::Proven);
}

namespace {
/// stageText with one lineage replaced (the text must occur).
std::string withLineage(const std::string &from, const std::string &to) {
  std::string text = stageText("%y = tv.all_reduce sum %p {axes = [\"tp\"]} : "
                               "tensor<4x6xf32> -> tensor<4x6xf32>");
  size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return at == std::string::npos ? text : text.replace(at, from.size(), to);
}
} // namespace

TEST_F(SymmetryFixture, SwappedShardIsNotFoldedAndIsCaught) {
  // Rank 1 holds block 0 of `a` and rank 0 block 1, while `w` is not
  // swapped: coordinate 1's lineages are not coordinate 0's translated, and
  // folding would hide the wrong pairing.
  StageOp s = load(withLineage(
      R"(#tv.lineage<"a"[0:4, 0:8] = ["a":0]>, #tv.lineage<"a"[0:4, 8:16] = ["a":1]>)",
      R"(#tv.lineage<"a"[0:4, 0:8] = ["a":1]>, #tv.lineage<"a"[0:4, 8:16] = ["a":0]>)"));
  ASSERT_TRUE(s);
  std::string why;
  EXPECT_FALSE(foldStageAlongAxis(s, "tp", &why));
  EXPECT_NE(why.find("the lineages of 'tp' coordinate 1 are not those of "
                     "coordinate 0 translated"),
            std::string::npos)
      << why;
  EXPECT_EQ(ranksOf(s), SmallVector<int64_t>({0, 1}));
  StageResult r = verifyStage(s, StageOptions());
  EXPECT_EQ(r.outcome, StageResult::Counterexample) << r.headline;
}

TEST_F(SymmetryFixture, GroupAcrossCoordinatesIsNotFolded) {
  // A group summing the tensors of both coordinates is a sum over the axis
  // (decision 125); here its terms are already sums over it (the plan
  // all-reduces y), so the lineage counts them twice and is not folded.
  StageOp s = load(withLineage(R"(["y":0] | ["y":1])", R"(["y":0 + "y":1])"));
  ASSERT_TRUE(s);
  std::string why;
  EXPECT_FALSE(foldStageAlongAxis(s, "tp", &why));
  EXPECT_NE(why.find("'y' sums over the axis in its lineage a term that is "
                     "already a sum over it"),
            std::string::npos)
      << why;
  EXPECT_FALSE(s.getPlan().getFoldedAttr());
}

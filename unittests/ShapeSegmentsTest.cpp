//===- ShapeSegmentsTest.cpp - reduction by segments against full size ----===//
//
// Decision 122: a position-wise dimension cut anywhere is reduced to at most
// two positions per segment. Random owned layouts of a parameter over two
// ranks (a distributed optimizer's step), correct or with one real bug,
// are verified at full size (small enough to be exact) and after shape
// reduction: the verdicts must agree, and the rows must have shrunk to at
// most two a segment.
//
//===----------------------------------------------------------------------===//
#include "TrainVerify/Dialect/TVOps.h"
#include "TrainVerify/Verify/ShapeProgram.h"
#include "TrainVerify/Verify/StageVerifier.h"
#include "TestStages.h"

#include "gtest/gtest.h"

#include <random>

using namespace mlir;
using namespace mlir::tv;

namespace {
enum class Bug { None, WrongRate, ShiftedRead, Gap, Twice };

struct Piece {
  int64_t begin, end;
  int owner;
};

std::string ty(int64_t rows) {
  return "tensor<" + std::to_string(rows) + "x2xf32>";
}

/// Rank `rank`'s program: the gradient summed over dp, its pieces stepped
/// and placed, the placed pieces summed over dp.
std::string program(int rank, int64_t n, const std::vector<Piece> &pieces,
                    Bug bug, size_t buggy) {
  std::string full = ty(n), body;
  body += "    tv.rank_program [" + std::to_string(rank) + "] {\n";
  body += "      %w = tv.input \"w\" : " + full + "\n";
  body += "      %gl = tv.input \"g.local\" : " + full + "\n";
  body += "      %g = tv.all_reduce sum %gl {axes = [\"dp\"]} : " + full +
          " -> " + full + "\n";
  std::vector<std::string> placed;
  for (size_t i = 0; i < pieces.size(); ++i) {
    const Piece &p = pieces[i];
    bool mine = p.owner == rank || (bug == Bug::Twice && i == buggy);
    if (!mine || (bug == Bug::Gap && i == buggy))
      continue;
    int64_t len = p.end - p.begin, read = p.begin;
    if (bug == Bug::ShiftedRead && i == buggy)
      read = p.begin + 1 <= n - len ? p.begin + 1 : p.begin - 1;
    std::string k = std::to_string(i), piece = ty(len);
    std::string lr =
        bug == Bug::WrongRate && i == buggy ? "2.0e-03" : "1.0e-03";
    body += "      %g" + k + " = tv.slice %g start [" + std::to_string(read) +
            ", 0] : " + full + " -> " + piece + "\n";
    body += "      %w" + k + " = tv.slice %w start [" + std::to_string(read) +
            ", 0] : " + full + " -> " + piece + "\n";
    body += "      %n" + k + " = tv.sgd %w" + k + ", %g" + k + " lr " + lr +
            " : " + piece + "\n";
    body += "      %p" + k + " = tv.slice_grad %n" + k + " start [" +
            std::to_string(p.begin) + ", 0] : " + piece + " -> " + full + "\n";
    placed.push_back("%p" + k);
  }
  std::string sum;
  if (placed.empty()) {
    body += "      %z = tv.zeros : " + full + "\n";
    sum = "%z";
  } else {
    sum = placed[0];
    for (size_t i = 1; i < placed.size(); ++i) {
      std::string s = "%s" + std::to_string(i);
      body += "      " + s + " = tv.add " + sum + ", " + placed[i] + " : " +
              full + ", " + full + " -> " + full + "\n";
      sum = s;
    }
  }
  body += "      %new = tv.all_reduce sum " + sum +
          " {axes = [\"dp\"]} : " + full + " -> " + full + "\n";
  body += "      tv.output \"w.new\", %new : " + full + "\n    }\n";
  return body;
}

std::string stage(int64_t n, const std::vector<Piece> &pieces, Bug bug,
                  size_t buggy) {
  std::string N = std::to_string(n), full = ty(n);
  return R"(
  tv.mesh @mesh axes ["dp"] sizes [2]
  tv.stage @s assumes [#tv.lineage<"w"[0:)" +
         N + R"(, 0:2] = ["w":0] | ["w":1]>, #tv.lineage<"g"[0:)" + N +
         R"(, 0:2] = ["g.local":0 + "g.local":1]>] guarantees [#tv.lineage<"w.new"[0:)" +
         N + R"(, 0:2] = ["w.new":0] | ["w.new":1]>] {
    tv.spec @spec {
      %w = tv.input "w" : )" +
         full + R"(
      %g = tv.input "g" : )" +
         full + R"(
      %n = tv.sgd %w, %g lr 1.0e-03 : )" +
         full + R"(
      tv.output "w.new", %n : )" +
         full + R"(
    }
    tv.plan @plan mesh @mesh micro_batches 1 {
)" + program(0, n, pieces, bug, buggy) +
         program(1, n, pieces, bug, buggy) + R"(    }
  })";
}

int64_t rowsOf(StageOp s) {
  auto in = *s.getSpec().getBody().front().getOps<InputOp>().begin();
  return cast<RankedTensorType>(in.getType()).getShape()[0];
}
} // namespace

TEST(ShapeSegments, ReducedVerdictIsTheFullSizeVerdict) {
  std::mt19937 rng(122);
  int reduced = 0, wrong = 0;
  for (int trial = 0; trial < 60; ++trial) {
    int64_t n = std::uniform_int_distribution<int64_t>(9, 47)(rng);
    // Cuts at random rows, pieces owned by random ranks.
    int cuts = std::uniform_int_distribution<int>(1, 4)(rng);
    std::vector<int64_t> at{0, n};
    for (int c = 0; c < cuts; ++c)
      at.push_back(std::uniform_int_distribution<int64_t>(1, n - 1)(rng));
    llvm::sort(at);
    at.erase(std::unique(at.begin(), at.end()), at.end());
    std::vector<Piece> pieces;
    for (size_t i = 0; i + 1 < at.size(); ++i)
      pieces.push_back(
          {at[i], at[i + 1], std::uniform_int_distribution<int>(0, 1)(rng)});
    Bug bug = static_cast<Bug>(std::uniform_int_distribution<int>(0, 4)(rng));
    size_t buggy =
        std::uniform_int_distribution<size_t>(0, pieces.size() - 1)(rng);
    std::string text = stage(n, pieces, bug, buggy);
    SCOPED_TRACE(text);

    tvtest::OwnStage full(text);
    ASSERT_TRUE(full.get());
    StageResult atFull = verifyStage(full.get(), StageOptions());
    ASSERT_NE(atFull.outcome, StageResult::Unknown) << atFull.headline;
    // Every bug here changes some updated element.
    EXPECT_EQ(atFull.outcome == StageResult::Proven, bug == Bug::None)
        << atFull.headline;

    tvtest::OwnStage small(text);
    ASSERT_TRUE(succeeded(reduceStageShapes(small.get(), 10000)));
    StageResult atReduced = verifyStage(small.get(), StageOptions());
    EXPECT_EQ(atReduced.outcome, atFull.outcome) << atReduced.headline;
    // At most two rows a segment. A read one row off relates two rows of
    // the gradient to one of the update: no single axis holds both, and the
    // rows keep the ratio rules.
    if (bug != Bug::ShiftedRead) {
      EXPECT_LE(rowsOf(small.get()), 2 * (int64_t)(at.size() - 1));
      reduced += rowsOf(small.get()) < n;
    }
    wrong += bug != Bug::None;
  }
  EXPECT_GT(reduced, 30);
  EXPECT_GT(wrong, 20);
}

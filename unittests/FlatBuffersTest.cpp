//===- FlatBuffersTest.cpp - flat buffers read per parameter ----------------===//
//
// Partition reads Megatron's flat buffers per parameter (decision 119). The
// rewrite must never change what a plan computes: on a correct plan and on
// plans with the distributed optimizer's bugs, every rank's outputs after
// it are the concrete interpreter's outputs before it, on random inputs.
//
//===----------------------------------------------------------------------===//
#include "TrainVerify/Transforms/Utils.h"
#include "TrainVerify/Verify/Executor.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "gtest/gtest.h"

#include <random>
#include <string>

using namespace mlir;
using namespace mlir::tv;

namespace {

/// Two data-parallel ranks; a 3x4 parameter `a` at [0, 12) and a 5-element
/// `b` at [12, 17) of a 20-element bucket, 10 elements a rank. Rank 0 owns
/// rows 0-1 of `a` and the first 2 columns of row 2; rank 1 the rest of
/// row 2 and `b` (then 3 elements of padding). The gradient is scaled on
/// the shard, as a loss scale is undone; rank 1 also reads b's owned
/// gradient flat (a squared norm).
std::string planText(const std::string &bOffset, const std::string &own0,
                     const std::string &viewB) {
  std::string pack = R"(
      %ga = tv.input "ga" : tensor<3x4xf32>
      %gb = tv.input "gb" : tensor<5xf32>
      %a = tv.input "a" : tensor<3x4xf32>
      %b = tv.input "b" : tensor<5xf32>
      %fa = tv.reshape %ga : tensor<3x4xf32> -> tensor<12xf32>
      %pa = tv.slice_grad %fa start [0] : tensor<12xf32> -> tensor<20xf32>
      %pb = tv.slice_grad %gb start [)";
  std::string packEnd = R"(] : tensor<5xf32> -> tensor<20xf32>
      %buf = tv.add %pa, %pb : tensor<20xf32>, tensor<20xf32> -> tensor<20xf32>
      %rs = tv.reduce_scatter %buf dim 0 {axes = ["dp"]} : tensor<20xf32> -> tensor<10xf32>
      %s = tv.scale %rs, 5.000000e-01 : tensor<10xf32>
)";
  std::string gather = R"(
      %ag = tv.all_gather %shard dim 0 {axes = ["dp"]} : tensor<10xf32> -> tensor<20xf32>
      %va = tv.slice %ag start [0] : tensor<20xf32> -> tensor<12xf32>
      %na = tv.reshape %va : tensor<12xf32> -> tensor<3x4xf32>
      tv.output "a.new", %na : tensor<3x4xf32>
      %vb = tv.slice %ag start [)" + viewB + R"(] : tensor<20xf32> -> tensor<5xf32>
      tv.output "b.new", %vb : tensor<5xf32>
)";
  return R"(
  tv.mesh @mesh axes ["dp"] sizes [2]
  tv.plan @plan mesh @mesh micro_batches 1 {
    tv.rank_program [0] {)" +
         pack + "12" + packEnd + R"(
      %o1 = tv.slice %s start [)" + own0 + R"(] : tensor<10xf32> -> tensor<8xf32>
      %g1 = tv.reshape %o1 : tensor<8xf32> -> tensor<2x4xf32>
      %w1 = tv.slice %a start [0, 0] : tensor<3x4xf32> -> tensor<2x4xf32>
      %n1 = tv.sgd %w1, %g1 lr 1.000000e-01 : tensor<2x4xf32>
      %f1 = tv.reshape %n1 : tensor<2x4xf32> -> tensor<8xf32>
      %q1 = tv.slice_grad %f1 start [0] : tensor<8xf32> -> tensor<10xf32>
      %o2 = tv.slice %s start [8] : tensor<10xf32> -> tensor<2xf32>
      %g2 = tv.reshape %o2 : tensor<2xf32> -> tensor<1x2xf32>
      %w2 = tv.slice %a start [2, 0] : tensor<3x4xf32> -> tensor<1x2xf32>
      %n2 = tv.sgd %w2, %g2 lr 1.000000e-01 : tensor<1x2xf32>
      %f2 = tv.reshape %n2 : tensor<1x2xf32> -> tensor<2xf32>
      %q2 = tv.slice_grad %f2 start [8] : tensor<2xf32> -> tensor<10xf32>
      %shard = tv.add %q1, %q2 : tensor<10xf32>, tensor<10xf32> -> tensor<10xf32>
)" + gather + R"(
    }
    tv.rank_program [1] {)" +
         pack + bOffset + packEnd + R"(
      %o1 = tv.slice %s start [0] : tensor<10xf32> -> tensor<2xf32>
      %g1 = tv.reshape %o1 : tensor<2xf32> -> tensor<1x2xf32>
      %w1 = tv.slice %a start [2, 2] : tensor<3x4xf32> -> tensor<1x2xf32>
      %n1 = tv.sgd %w1, %g1 lr 1.000000e-01 : tensor<1x2xf32>
      %f1 = tv.reshape %n1 : tensor<1x2xf32> -> tensor<2xf32>
      %q1 = tv.slice_grad %f1 start [0] : tensor<2xf32> -> tensor<10xf32>
      %o2 = tv.slice %s start [2] : tensor<10xf32> -> tensor<5xf32>
      %sq = tv.mul %o2, %o2 : tensor<5xf32>, tensor<5xf32> -> tensor<5xf32>
      %nrm = tv.sum %sq dims [0] : tensor<5xf32> -> tensor<f32>
      tv.output "norm", %nrm : tensor<f32>
      %n2 = tv.sgd %b, %o2 lr 1.000000e-01 : tensor<5xf32>
      %q2 = tv.slice_grad %n2 start [2] : tensor<5xf32> -> tensor<10xf32>
      %shard = tv.add %q1, %q2 : tensor<10xf32>, tensor<10xf32> -> tensor<10xf32>
)" + gather + R"(
    }
  })";
}

using Outputs = std::map<std::pair<int64_t, std::string>, std::vector<double>>;

/// Every rank's outputs, on inputs drawn from `seed` by (rank, name); an
/// input named `loss_scale` is drawn the same on every rank, as its
/// lineage states.
Outputs run(ModuleOp module, uint64_t seed) {
  PlanOp plan = *module.getOps<PlanOp>().begin();
  FailureOr<PlanSchedule> schedule = PlanSchedule::build(plan);
  EXPECT_TRUE(succeeded(schedule));
  if (failed(schedule))
    return {};
  ConcreteDomain d;
  RunState<double> state;
  auto inputs = [&](int64_t rank, StringRef name,
                    RankedTensorType ty) -> FailureOr<Tensor<double>> {
    uint64_t r = name == "loss_scale" ? 0 : uint64_t(rank) << 40;
    std::mt19937_64 rng(seed ^ r ^ std::hash<std::string>()(name.str()));
    Tensor<double> t;
    t.shape.assign(ty.getShape().begin(), ty.getShape().end());
    for (int64_t i = 0; i < ty.getNumElements(); ++i)
      t.data.push_back(std::uniform_real_distribution<double>(-2, 2)(rng));
    return t;
  };
  EXPECT_TRUE(succeeded(runPlan(d, *schedule, inputs, state)));
  Outputs out;
  for (auto prog : plan.getBody().front().getOps<RankProgramOp>())
    for (auto o : prog.getBody().front().getOps<OutputOp>())
      for (int64_t rank : prog.getRanks())
        if (const Tensor<double> *t = state.lookupNamed(rank, o.getName()))
          out[{rank, o.getName().str()}] = t->data;
  return out;
}

size_t count(ModuleOp module, StringRef opName) {
  size_t n = 0;
  module.walk([&](Operation *op) { n += op->getName().getStringRef() == opName; });
  return n;
}

struct FlatBuffers : ::testing::Test {
  MLIRContext ctx;
  /// Parses `text` twice, rewrites one copy and checks that both compute
  /// the same `outputs` on every rank (5 for planText: a.new and b.new on
  /// each rank, norm on rank 1); returns the rewritten module.
  OwningOpRef<ModuleOp> check(const std::string &text, size_t outputs = 5) {
    ctx.loadDialect<TVDialect>();
    OwningOpRef<ModuleOp> before = parseSourceString<ModuleOp>(text, &ctx);
    OwningOpRef<ModuleOp> after = parseSourceString<ModuleOp>(text, &ctx);
    EXPECT_TRUE(before && after);
    if (!before || !after)
      return after;
    readFlatBuffersPerParameter(*after);
    EXPECT_TRUE(succeeded(mlir::verify(*after)));
    for (uint64_t seed : {1u, 2u, 3u}) {
      Outputs x = run(*before, seed), y = run(*after, seed);
      EXPECT_EQ(x.size(), outputs);
      EXPECT_EQ(x.size(), y.size());
      for (auto &[key, values] : x) {
        EXPECT_TRUE(y.count(key)) << key.second << " on rank " << key.first;
        EXPECT_EQ(values.size(), y[key].size());
        if (!y.count(key) || values.size() != y[key].size())
          continue;
        for (size_t i = 0; i < values.size(); ++i)
          EXPECT_NEAR(values[i], y[key][i], 1e-12)
              << key.second << "[" << i << "] on rank " << key.first;
      }
    }
    return after;
  }
};

TEST_F(FlatBuffers, CorrectPlanIsReadPerParameter) {
  auto m = check(planText("12", "0", "12"));
  // Both collectives became per-parameter all-reduces: a's and b's
  // gradients, then a's and b's gathered views; b lies wholly in rank 1's
  // range, so rank 0 adds zeros to b's view.
  EXPECT_EQ(count(*m, "tv.reduce_scatter"), 0u);
  EXPECT_EQ(count(*m, "tv.all_gather"), 0u);
  EXPECT_EQ(count(*m, "tv.all_reduce"), 8u);
  EXPECT_EQ(count(*m, "tv.zeros"), 1u);
}

TEST_F(FlatBuffers, ViewOneElementOffStaysFlat) {
  // flat-param-view-offset: b's view reaches into the padding.
  auto m = check(planText("12", "0", "13"));
  EXPECT_EQ(count(*m, "tv.all_gather"), 2u);
  EXPECT_EQ(count(*m, "tv.reduce_scatter"), 0u);
}

TEST_F(FlatBuffers, OwnedRangeOneElementOffIsReadFlat) {
  // flat-shard-misowned: rank 0 reads [1, 9), not a box of `a`: the read
  // stays exact as a run of a's flattened gradient.
  auto m = check(planText("12", "1", "12"));
  EXPECT_EQ(count(*m, "tv.reduce_scatter"), 0u);
}

TEST_F(FlatBuffers, LayoutsThatDifferStayFlat) {
  // Rank 1 packs b one element later than rank 0: no per-parameter
  // reading is the same program.
  auto m = check(planText("13", "0", "12"));
  EXPECT_EQ(count(*m, "tv.reduce_scatter"), 2u);
}

/// A tied embedding's bucket: a 3x4 parameter `e` in a 16-element bucket
/// on two pipeline stages (mesh dp x pp), reduce-scattered over dp, then
/// summed over pp (the embedding group) before the owned ranges are read:
/// dp rank 0 owns rows 0-1, dp rank 1 row 2. `read10` is what rank 1
/// (dp 0, pp 1) reads instead of rank 0's range.
std::string tiedText(const std::string &read10) {
  auto prog = [](int rank, const std::string &read) {
    return "    tv.rank_program [" + std::to_string(rank) + R"(] {
      %g = tv.input "g" : tensor<3x4xf32>
      %f = tv.reshape %g : tensor<3x4xf32> -> tensor<12xf32>
      %p = tv.slice_grad %f start [0] : tensor<12xf32> -> tensor<16xf32>
      %rs = tv.reduce_scatter %p dim 0 {axes = ["dp"]} : tensor<16xf32> -> tensor<8xf32>
      %e = tv.all_reduce sum %rs {axes = ["pp"]} : tensor<8xf32> -> tensor<8xf32>
)" + read + R"(
    }
)";
  };
  std::string own0 = R"(
      %o = tv.slice %e start [0] : tensor<8xf32> -> tensor<8xf32>
      %b = tv.reshape %o : tensor<8xf32> -> tensor<2x4xf32>
      tv.output "own", %b : tensor<2x4xf32>)";
  std::string own1 = R"(
      %o = tv.slice %e start [0] : tensor<8xf32> -> tensor<4xf32>
      %b = tv.reshape %o : tensor<4xf32> -> tensor<1x4xf32>
      tv.output "own", %b : tensor<1x4xf32>)";
  return R"(
  tv.mesh @mesh axes ["dp", "pp"] sizes [2, 2]
  tv.plan @plan mesh @mesh micro_batches 1 {
)" + prog(0, own0) +
         prog(1, read10.empty() ? own0 : read10) + prog(2, own1) +
         prog(3, own1) + "  }";
}

TEST_F(FlatBuffers, TiedEmbeddingReadsTheSameRangesOnBothStages) {
  auto m = check(tiedText(""), 4);
  // Each read became the per-parameter all-reduce over dp, then its box
  // summed over pp.
  EXPECT_EQ(count(*m, "tv.reduce_scatter"), 0u);
  EXPECT_EQ(count(*m, "tv.all_reduce"), 8u);
}

TEST_F(FlatBuffers, TiedEmbeddingReadDifferentlyStaysFlat) {
  // Rank 1 reads another range than its embedding-group peer, rank 0: a
  // slice does not commute with their all-reduce.
  auto m = check(tiedText(R"(
      %o = tv.slice %e start [1] : tensor<8xf32> -> tensor<4xf32>
      %b = tv.reshape %o : tensor<4xf32> -> tensor<1x4xf32>
      tv.output "own", %b : tensor<1x4xf32>)"),
                 4);
  EXPECT_EQ(count(*m, "tv.reduce_scatter"), 4u);
}

/// A squared gradient norm under the distributed optimizer: a 3x4
/// parameter `a` alone in a 12-element bucket, 6 elements a rank; each rank
/// unscales its shard by a loss scale, sums the squares of the boxes it
/// owns (rank 0: row 0 and 2 columns of row 1; rank 1: the rest) and
/// all-reduces the sum over dp. `lineage` states the loss scale on every
/// rank; `reads1` and `chain1` are rank 1's reads and unscale.
std::string normText(bool lineage, const std::string &reads1,
                     const std::string &chain1 = "tv.mul %rs, %inv",
                     const std::string &inv =
                         "%inv = tv.pow %ls, -1.000000e+00 : tensor<f32>") {
  auto term = [](const std::string &id, int64_t start, int64_t cols) {
    std::string n = std::to_string(cols), ty = "tensor<" + n + "xf32>",
                box = "tensor<1x" + n + "xf32>";
    return "      %o" + id + " = tv.slice %s start [" +
           std::to_string(start) + "] : tensor<6xf32> -> " + ty +
           "\n      %b" + id + " = tv.reshape %o" + id + " : " + ty +
           " -> " + box + "\n      %q" + id + " = tv.mul %b" + id + ", %b" +
           id + " : " + box + ", " + box + " -> " + box + "\n      %r" + id +
           " = tv.reshape %q" + id + " : " + box + " -> " + ty +
           "\n      %t" + id + " = tv.sum %r" + id + " dims [0] : " + ty +
           " -> tensor<f32>\n";
  };
  auto prog = [&](int rank, const std::string &chain,
                  const std::string &reads) {
    return "    tv.rank_program [" + std::to_string(rank) + R"(] {
      %ga = tv.input "ga" : tensor<3x4xf32>
      %ls = tv.input "loss_scale" : tensor<f32>
      )" + inv + R"(
      %fa = tv.reshape %ga : tensor<3x4xf32> -> tensor<12xf32>
      %rs = tv.reduce_scatter %fa dim 0 {axes = ["dp"]} : tensor<12xf32> -> tensor<6xf32>
      %s = )" + chain + R"( : tensor<6xf32>, tensor<f32> -> tensor<6xf32>
)" + reads + R"(      %l = tv.add %t1, %t2 : tensor<f32>, tensor<f32> -> tensor<f32>
      %n = tv.all_reduce sum %l {axes = ["dp"]} : tensor<f32> -> tensor<f32>
      tv.output "norm", %n : tensor<f32>
    }
)";
  };
  std::string reads0 = term("1", 0, 4) + term("2", 4, 2);
  return R"(
  tv.mesh @mesh axes ["dp"] sizes [2]
)" + std::string(lineage ? R"(  tv.lineage_map "loss_scale" blocks affine_map<(d0) -> ()> shape [] = "loss_scale" on @mesh where {}
)"
                          : "") +
         R"(  tv.plan @plan mesh @mesh micro_batches 1 {
)" + prog(0, "tv.mul %rs, %inv", reads0) +
         prog(1, chain1, reads1.empty() ? term("1", 0, 2) + term("2", 2, 4)
                                        : reads1) +
         "  }";
}

TEST_F(FlatBuffers, NormCountsEachParameterOnceWhole) {
  // Rank 0 (the lowest group index) counts all of `a`; its other term and
  // rank 1's are zeros.
  auto m = check(normText(true, ""), 2);
  EXPECT_EQ(count(*m, "tv.reduce_scatter"), 0u);
  EXPECT_EQ(count(*m, "tv.zeros"), 3u);
  EXPECT_EQ(count(*m, "tv.slice"), 0u);
}

TEST_F(FlatBuffers, NormWithoutSharedLossScaleKeepsItsBoxes) {
  // Without a lineage the ranks' loss scales may differ: the terms stay.
  auto m = check(normText(false, ""), 2);
  EXPECT_EQ(count(*m, "tv.reduce_scatter"), 0u);
  EXPECT_EQ(count(*m, "tv.zeros"), 0u);
  EXPECT_EQ(count(*m, "tv.slice"), 4u);
}

TEST_F(FlatBuffers, NormCountingABoxTwiceKeepsItsBoxes) {
  // Rank 1 counts row 2 twice, not the end of row 1: the boxes do not
  // tile `a`.
  std::string twice;
  for (const char *id : {"1", "2"})
    twice += std::string("      %o") + id +
             " = tv.slice %s start [2] : tensor<6xf32> -> tensor<4xf32>\n"
             "      %b" + id + " = tv.reshape %o" + id +
             " : tensor<4xf32> -> tensor<1x4xf32>\n"
             "      %q" + id + " = tv.mul %b" + id + ", %b" + id +
             " : tensor<1x4xf32>, tensor<1x4xf32> -> tensor<1x4xf32>\n"
             "      %r" + id + " = tv.reshape %q" + id +
             " : tensor<1x4xf32> -> tensor<4xf32>\n"
             "      %t" + id + " = tv.sum %r" + id +
             " dims [0] : tensor<4xf32> -> tensor<f32>\n";
  auto m = check(normText(true, twice), 2);
  EXPECT_EQ(count(*m, "tv.zeros"), 0u);
}

TEST_F(FlatBuffers, NormUnscaledDifferentlyKeepsItsBoxes) {
  // Rank 1 multiplies by the loss scale where rank 0 divides by it: the
  // ranks' terms are different functions of the piece.
  auto m = check(normText(true, "", "tv.mul %rs, %ls"), 2);
  EXPECT_EQ(count(*m, "tv.zeros"), 0u);
}

TEST_F(FlatBuffers, NormScaledByTheRanksCoordinateKeepsItsBoxes) {
  // The unscale's scalar reads the rank's coordinate: exp of a vocabulary
  // mask along dp is 1 on rank 0 and 0 on rank 1. The ops are the same on
  // both ranks, the values are not: the terms stay (an allow-list of ops
  // whose value depends on their operands alone).
  auto m = check(normText(true, "", "tv.mul %rs, %inv", R"(%z = tv.zeros : tensor<1x1xf32>
      %vm = tv.vocab_mask {vocab_axis = "dp", vocab_size = 1 : i64} : tensor<1x1xi1>
      %am = tv.apply_mask %z, %vm : tensor<1x1xf32>, tensor<1x1xi1> -> tensor<1x1xf32>
      %ex = tv.exp %am : tensor<1x1xf32>
      %inv = tv.reshape %ex : tensor<1x1xf32> -> tensor<f32>)"),
                 2);
  EXPECT_EQ(count(*m, "tv.zeros"), 2u);
}

} // namespace

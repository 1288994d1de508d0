//===- RelationInferenceTest.cpp - relations found on exact values --------===//
//
// inferRelations against plans whose relations are known: row shards of a
// column-parallel linear, the partial sums of a row-parallel one, a value
// scaled by a constant, and a value that relates to nothing.
//
//===----------------------------------------------------------------------===//
#include "TrainVerify/Dialect/Lineage.h"
#include "TrainVerify/Verify/RelationInference.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "gtest/gtest.h"

using namespace mlir;
using namespace mlir::tv;

namespace {
// Spec: h = x w1ᵀ (4x8), g = gelu(h), o = g w2ᵀ (4x8), y = 2 o.
// Plan (tp = 2): h and g are column shards (h copied on its way, as a
// multiref does: the copy is the same tensor, left out); o_part a partial sum over tp;
// o its all-reduce; d = o * 3 relates to o with the factor 1/3 (box = 1/3
// d); bad = o + 1 relates to nothing.
constexpr const char *kModule = R"mlir(
tv.mesh @mesh axes ["tp"] sizes [2]
tv.spec @spec {
  %x = tv.input "x" : tensor<4x8xf32>
  %w1 = tv.input "w1" : tensor<8x8xf32>
  %w2 = tv.input "w2" : tensor<8x8xf32>
  %h = tv.linear %x, %w1 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %g = tv.gelu %h : tensor<4x8xf32>
  %o = tv.linear %g, %w2 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %y = tv.scale %o, 2.0 : tensor<4x8xf32>
  tv.output "y", %y : tensor<4x8xf32>
}
tv.plan @plan mesh @mesh micro_batches 1 {
  tv.rank_program [0, 1] {
    %x = tv.input "x" : tensor<4x8xf32>
    %w1 = tv.input "w1" : tensor<4x8xf32>
    %w2 = tv.input "w2" : tensor<8x4xf32>
    %h = tv.linear %x, %w1 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x4xf32>
    %hc = tv.copy %h : tensor<4x4xf32>
    %g = tv.gelu %hc : tensor<4x4xf32>
    %p = tv.linear %g, %w2 : (tensor<4x4xf32>, tensor<8x4xf32>) -> tensor<4x8xf32>
    %o = tv.all_reduce sum %p {axes = ["tp"]} : tensor<4x8xf32> -> tensor<4x8xf32>
    %d = tv.scale %o, 3.0 : tensor<4x8xf32>
    %bad = tv.add_scalar %o, 1.0 : tensor<4x8xf32>
    %y = tv.scale %o, 2.0 : tensor<4x8xf32>
    tv.output "y", %y : tensor<4x8xf32>
  }
}
tv.lineage #tv.lineage<"x"[0:4, 0:8] = ["x":0] | ["x":1]>
tv.lineage #tv.lineage<"w1"[0:4, 0:8] = ["w1":0]>
tv.lineage #tv.lineage<"w1"[4:8, 0:8] = ["w1":1]>
tv.lineage #tv.lineage<"w2"[0:8, 0:4] = ["w2":0]>
tv.lineage #tv.lineage<"w2"[0:8, 4:8] = ["w2":1]>
tv.lineage #tv.lineage<"y"[0:4, 0:8] = ["y":0] | ["y":1]>
)mlir";

struct Inference : ::testing::Test {
  MLIRContext ctx;
  OwningOpRef<ModuleOp> module;
  std::vector<InferredRelation> relations;
  SpecOp spec;
  PlanOp plan;
  void SetUp() override {
    ctx.loadDialect<TVDialect>();
    module = parseSourceString<ModuleOp>(kModule, &ctx);
    ASSERT_TRUE(module);
    auto parts = getProgramParts(*module);
    spec = parts.spec;
    plan = parts.plan;
    FailureOr<std::vector<LineageEntry>> given = collectLineages(*module);
    ASSERT_TRUE(succeeded(given));
    SmallVector<LineageAttr> lineages;
    for (const LineageEntry &e : *given)
      lineages.push_back(e.attr);
    std::string why;
    auto found = inferRelations(spec, plan, lineages, InferenceOptions(), why);
    ASSERT_TRUE(succeeded(found)) << why;
    relations = std::move(*found);
  }
  /// The op of the spec or plan (first rank program) defining the n-th
  /// value of kind `name`.
  Operation *specOp(StringRef name, unsigned n = 0) {
    for (Operation &op : spec.getBody().front())
      if (op.getName().getStringRef() == name && n-- == 0)
        return &op;
    return nullptr;
  }
  Operation *planOp(StringRef name, unsigned n = 0) {
    auto prog = *plan.getBody().front().getOps<RankProgramOp>().begin();
    for (Operation &op : prog.getBody().front())
      if (op.getName().getStringRef() == name && n-- == 0)
        return &op;
    return nullptr;
  }
  std::vector<const InferredRelation *> of(Operation *specDef) {
    std::vector<const InferredRelation *> out;
    for (const InferredRelation &r : relations)
      if (r.spec == specDef->getResult(0))
        out.push_back(&r);
    return out;
  }
};
} // namespace

TEST_F(Inference, ColumnShards) {
  auto h = of(specOp("tv.linear", 0));
  ASSERT_EQ(h.size(), 2u);
  EXPECT_EQ(h[0]->lower, (SmallVector<int64_t>{0, 0}));
  EXPECT_EQ(h[0]->upper, (SmallVector<int64_t>{4, 4}));
  EXPECT_EQ(h[1]->lower, (SmallVector<int64_t>{0, 4}));
  ASSERT_EQ(h[0]->groups.size(), 1u);
  EXPECT_EQ(h[0]->groups[0][0].first, 0);
  EXPECT_EQ(h[1]->groups[0][0].first, 1);
  // The linear's result, not its copy (the copy does not count as a second
  // value of the rank equal to the block, which would void both).
  EXPECT_EQ(h[0]->groups[0][0].second, planOp("tv.linear", 0)->getResult(0));
  EXPECT_EQ(h[0]->scaleNum, 1);
  EXPECT_EQ(h[0]->scaleDen, 1);
}

TEST_F(Inference, PartialSumReplicasAndFactor) {
  auto o = of(specOp("tv.linear", 1));
  ASSERT_EQ(o.size(), 1u); // the whole of o, no factor
  const InferredRelation &r = *o[0];
  EXPECT_EQ(r.upper, (SmallVector<int64_t>{4, 8}));
  EXPECT_EQ(r.scaleNum, 1);
  Value part = planOp("tv.linear", 1)->getResult(0);
  Value reduced = planOp("tv.all_reduce")->getResult(0);
  bool partial = false, replica0 = false, replica1 = false;
  for (auto &g : r.groups) {
    if (g.size() == 2 && g[0] == std::make_pair(int64_t(0), part) &&
        g[1] == std::make_pair(int64_t(1), part))
      partial = true;
    if (g.size() == 1 && g[0].second == reduced)
      (g[0].first == 0 ? replica0 : replica1) = true;
  }
  EXPECT_TRUE(partial);
  EXPECT_TRUE(replica0);
  EXPECT_TRUE(replica1);
  // d = 3 o is not a group of o's lineage: its factor differs (the
  // lineage keeps the first group's factor), and nothing relates `bad`.
  Value d = planOp("tv.scale", 0)->getResult(0);
  Value bad = planOp("tv.add_scalar")->getResult(0);
  for (const InferredRelation &rel : relations)
    for (auto &g : rel.groups)
      for (auto &[rank, v] : g) {
        EXPECT_NE(v, bad);
        EXPECT_NE(v, d);
      }
}

TEST_F(Inference, NothingForInputsOrOutputsOrSkipped) {
  // y carries a given lineage: skipped through the option, it is a target
  // otherwise; inputs never are.
  for (const InferredRelation &r : relations)
    EXPECT_FALSE(isa<InputOp>(r.spec.getDefiningOp()));
  std::string why;
  FailureOr<std::vector<LineageEntry>> given = collectLineages(*module);
  SmallVector<LineageAttr> lineages;
  for (const LineageEntry &e : *given)
    lineages.push_back(e.attr);
  InferenceOptions options;
  Value h = specOp("tv.linear", 0)->getResult(0);
  auto skip = [&](Value v) { return v == h; };
  options.skipSpec = skip;
  auto found = inferRelations(spec, plan, lineages, options, why);
  ASSERT_TRUE(succeeded(found));
  for (const InferredRelation &r : *found)
    EXPECT_NE(r.spec, h);
}

//===- LineageTest.cpp - slice arithmetic and coverage --------------------===//
#include "TrainVerify/Dialect/Lineage.h"
#include "TrainVerify/Dialect/TVOps.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/AsmParser/AsmParser.h"
#include "mlir/Parser/Parser.h"
#include "gtest/gtest.h"

using namespace mlir;
using namespace mlir::tv;

static Box box(std::initializer_list<int64_t> lo,
               std::initializer_list<int64_t> hi) {
  return Box{SmallVector<int64_t>(lo), SmallVector<int64_t>(hi)};
}

TEST(Box, VolumeAndShape) {
  Box b = box({0, 2}, {4, 8});
  EXPECT_EQ(b.volume(), 24);
  EXPECT_EQ(b.shape(), (SmallVector<int64_t>{4, 6}));
  EXPECT_TRUE(Box::full({4, 8}).contains(b));
  EXPECT_FALSE(b.contains(Box::full({4, 8})));
}

TEST(Box, Intersect) {
  auto i = box({0, 0}, {4, 4}).intersect(box({2, 3}, {6, 8}));
  ASSERT_TRUE(i.has_value());
  EXPECT_EQ(*i, box({2, 3}, {4, 4}));
  EXPECT_FALSE(box({0}, {4}).intersect(box({4}, {8})).has_value());
}

TEST(Box, TilesExactly) {
  Box whole = Box::full({4, 8});
  std::string why;
  EXPECT_TRUE(tilesExactly(whole, {box({0, 0}, {4, 4}), box({0, 4}, {4, 8})}));
  EXPECT_FALSE(tilesExactly(whole, {box({0, 0}, {4, 4})}, &why));
  EXPECT_EQ(why, "slices cover 16 of 32 elements");
  EXPECT_FALSE(tilesExactly(
      whole, {box({0, 0}, {4, 5}), box({0, 4}, {4, 8})}, &why));
  EXPECT_EQ(why, "slices 0 and 1 overlap");
  EXPECT_FALSE(tilesExactly(whole, {box({0, 0}, {4, 9})}, &why));
  EXPECT_EQ(why, "slice 0 is outside the tensor");
}

TEST(LineageAttr, ParsePrintRoundTrip) {
  MLIRContext ctx;
  ctx.loadDialect<TVDialect>();
  const char *text = "#tv.lineage<\"y\"[0:4, 8:16] = [\"y\":0 + \"y\":1] | "
                     "[\"y\":2]>";
  Attribute attr = parseAttribute(text, &ctx);
  auto lin = dyn_cast_or_null<LineageAttr>(attr);
  ASSERT_TRUE(lin);
  EXPECT_EQ(lin.getSpec().getValue(), "y");
  EXPECT_EQ(lin.getSliceShape(), (SmallVector<int64_t>{4, 8}));
  auto groups = lin.getGroupRefs();
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0].size(), 2u);
  EXPECT_EQ(groups[0][1].getRank(), 1);
  std::string printed;
  llvm::raw_string_ostream os(printed);
  attr.print(os);
  EXPECT_EQ(parseAttribute(printed, &ctx), attr);
}

TEST(LineageAttr, ReplicasStandForOneGroupPerRank) {
  MLIRContext ctx;
  ctx.loadDialect<TVDialect>();
  const char *text =
      "#tv.lineage<\"y\"[0:4] = [\"z\":0 + \"z\":1] | \"y\":[3, 5, 7]>";
  auto lin = dyn_cast_or_null<LineageAttr>(parseAttribute(text, &ctx));
  ASSERT_TRUE(lin);
  // One explicit group and three replicas: z@0 + z@1, y@3, y@5, y@7.
  EXPECT_EQ(lin.getGroups().size(), 1u);
  EXPECT_EQ(lin.getReplicaRanks().size(), 3u);
  EXPECT_EQ(lin.getNumGroups(), 4u);
  std::vector<std::string> seen;
  lin.walkGroups([&](size_t g, ArrayRef<PlanRefView> refs) {
    std::string s = std::to_string(g) + ":";
    for (const PlanRefView &r : refs)
      s += r.name.str() + "@" + std::to_string(r.rank) + " ";
    seen.push_back(s);
  });
  EXPECT_EQ(seen, (std::vector<std::string>{"0:z@0 z@1 ", "1:y@3 ", "2:y@5 ",
                                            "3:y@7 "}));
  auto refs = lin.getGroupRefs();
  ASSERT_EQ(refs.size(), 4u);
  EXPECT_EQ(refs[2][0].getName(), "y");
  EXPECT_EQ(refs[2][0].getRank(), 5);
  EXPECT_EQ(refs[0].size(), 2u);
  size_t count = 0;
  lin.walkRefs([&](size_t, PlanRefView) { ++count; });
  EXPECT_EQ(count, 5u);
  std::string printed;
  llvm::raw_string_ostream os(printed);
  Attribute(lin).print(os);
  EXPECT_EQ(printed, text);
  EXPECT_EQ(parseAttribute(printed, &ctx), lin);
  // Moving the box keeps every group.
  LineageAttr moved = lin.withBox({4}, {8});
  EXPECT_EQ(moved.getLower()[0], 4);
  EXPECT_EQ(moved.getNumGroups(), 4u);
  EXPECT_EQ(moved.getReplicaName(), lin.getReplicaName());
}

TEST(LineageAttr, RejectsEmptySlice) {
  MLIRContext ctx;
  ctx.loadDialect<TVDialect>();
  ctx.getDiagEngine().registerHandler([](Diagnostic &) { return success(); });
  EXPECT_FALSE(parseAttribute("#tv.lineage<\"y\"[4:4] = [\"y\":0]>", &ctx));
}

TEST(CheckLineages, DetectsMissingCoverage) {
  MLIRContext ctx;
  ctx.loadDialect<TVDialect>();
  std::string diag;
  ctx.getDiagEngine().registerHandler([&](Diagnostic &d) {
    diag = d.str();
    return success();
  });
  const char *text = R"(
    tv.mesh @m axes ["tp"] sizes [2]
    tv.spec @s {
      %x = tv.input "x" : tensor<4xf32>
      tv.output "y", %x : tensor<4xf32>
    }
    tv.plan @p mesh @m micro_batches 1 {
      tv.rank_program [0, 1] {
        %x = tv.input "x" : tensor<2xf32>
        tv.output "y", %x : tensor<2xf32>
      }
    }
    tv.lineage #tv.lineage<"x"[0:2] = ["x":0]>
    tv.lineage #tv.lineage<"x"[2:4] = ["x":1]>
    tv.lineage #tv.lineage<"y"[0:2] = ["y":0]>
  )";
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(text, &ctx);
  ASSERT_TRUE(module);
  EXPECT_TRUE(failed(checkLineages(*module)));
  EXPECT_EQ(diag, "lineages of spec output 'y' do not cover it: slices cover 2 "
                  "of 4 elements");
}

TEST(LineageView, ReadsAsItsAttributeAndBuildsIt) {
  MLIRContext ctx;
  ctx.loadDialect<TVDialect>();
  auto lin = dyn_cast_or_null<LineageAttr>(parseAttribute(
      "#tv.lineage<\"y\"[0:4, 2:6] = [\"z\":0 + \"z\":1] | \"y\":[3, 5] "
      "scaled 1/2>",
      &ctx));
  ASSERT_TRUE(lin);
  LineageView v(lin);
  EXPECT_EQ(v.getRank(), 2u);
  EXPECT_EQ(v.getLower(), lin.getLower());
  EXPECT_EQ(v.getUpper(), lin.getUpper());
  EXPECT_EQ(v.getNumGroups(), lin.getNumGroups());
  EXPECT_EQ(v.getScaleFraction(), lin.getScaleFraction());
  std::vector<std::string> fromView, fromAttr;
  v.walkRefs([&](size_t g, PlanRefView r) {
    fromView.push_back(std::to_string(g) + r.name.str() + std::to_string(r.rank));
  });
  lin.walkRefs([&](size_t g, PlanRefView r) {
    fromAttr.push_back(std::to_string(g) + r.name.str() + std::to_string(r.rank));
  });
  EXPECT_EQ(fromView, fromAttr);
  EXPECT_EQ(v.toAttr(&ctx), lin);
}

/// A 2x2 mesh whose four ranks hold x's and y's row halves, for the
/// lineage statements a test appends.
static const char *kTwoByTwo = R"(
    tv.mesh @mesh axes ["dp", "tp"] sizes [2, 2]
    tv.spec @s {
      %x = tv.input "x" : tensor<8x8xf32>
      tv.output "y", %x : tensor<8x8xf32>
    }
    tv.plan @p mesh @mesh micro_batches 1 {
      tv.rank_program [0, 1, 2, 3] {
        %x = tv.input "x" : tensor<4x8xf32>
        tv.output "y", %x : tensor<4x8xf32>
      }
    }
)";

// The statements of lineage maps as views (decision 128) are, made
// attributes, the module's statements: boxes merged across maps, in module
// order, plain statements in place.
TEST(CollectLineageViews, AreTheStatementsOfCollectLineages) {
  MLIRContext ctx;
  ctx.loadDialect<TVDialect>();
  std::string text = kTwoByTwo + std::string(R"(
    tv.lineage_map "x" blocks affine_map<(d0, d1) -> (d0, 0)> shape [4, 8] = "x" on @mesh where {tp = 0 : i64}
    tv.lineage #tv.lineage<"y"[0:4, 0:8] = ["y":0] | ["y":1]>
    tv.lineage_map "x" blocks affine_map<(d0, d1) -> (d0, 0)> shape [4, 8] scaled [1, 2] = "x" on @mesh where {tp = 1 : i64}
    tv.lineage #tv.lineage<"y"[4:8, 0:8] = ["y":2] | ["y":3]>
  )");
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(text, &ctx);
  ASSERT_TRUE(module);
  FailureOr<std::vector<LineageEntry>> attrs = collectLineages(*module);
  LineageStore store;
  FailureOr<std::vector<LineageStatement>> views =
      collectLineageViews(*module, store);
  ASSERT_TRUE(succeeded(attrs) && succeeded(views));
  // x: two boxes, unscaled (tp = 0) and scaled (tp = 1) apart; y: two.
  ASSERT_EQ(attrs->size(), 6u);
  ASSERT_EQ(views->size(), attrs->size());
  for (size_t i = 0; i < attrs->size(); ++i) {
    EXPECT_EQ((*views)[i].view.toAttr(&ctx), (*attrs)[i].attr) << i;
    EXPECT_EQ((*views)[i].op, (*attrs)[i].op) << i;
  }
  EXPECT_EQ((*views)[0].view.getReplicaRanks(), ArrayRef<int64_t>({0}));
  EXPECT_EQ((*views)[3].view.getScaleFraction(),
            (std::pair<int64_t, int64_t>(1, 2)));
}

// The same statements as runs, one per lineage op in module order (what
// partition reads, no copy per statement): a map's run is the boxes it names
// first, all of its spec tensor.
TEST(CollectLineageRuns, AreTheViewsByOp) {
  MLIRContext ctx;
  ctx.loadDialect<TVDialect>();
  std::string text = kTwoByTwo + std::string(R"(
    tv.lineage_map "x" blocks affine_map<(d0, d1) -> (d0, 0)> shape [4, 8] = "x" on @mesh where {}
    tv.lineage #tv.lineage<"y"[0:4, 0:8] = ["y":0] | ["y":1]>
    tv.lineage_map "x" blocks affine_map<(d0, d1) -> (d0, 0)> shape [4, 8] = "x" on @mesh where {tp = 1 : i64}
    tv.lineage #tv.lineage<"y"[4:8, 0:8] = ["y":2] | ["y":3]>
  )");
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(text, &ctx);
  ASSERT_TRUE(module);
  LineageStore viewStore, runStore;
  FailureOr<std::vector<LineageStatement>> views =
      collectLineageViews(*module, viewStore);
  FailureOr<std::vector<LineageRun>> runs =
      collectLineageRuns(*module, runStore);
  ASSERT_TRUE(succeeded(views) && succeeded(runs));
  SmallVector<Operation *> ops;
  for (Operation &op : *module->getBody())
    if (isa<LineageOp, LineageMapOp>(op))
      ops.push_back(&op);
  ASSERT_EQ(runs->size(), ops.size());
  // The first map names both boxes of x (each on both tp ranks); the
  // second names only boxes already named: its run is empty.
  std::vector<size_t> sizes;
  for (auto [run, op] : llvm::zip(*runs, ops)) {
    EXPECT_EQ(run.op, op);
    sizes.push_back(run.views.size());
  }
  EXPECT_EQ(sizes, (std::vector<size_t>{2, 1, 0, 1}));
  for (const LineageView &v : (*runs)[0].views)
    EXPECT_EQ(v.getSpec().getValue(), "x");
  size_t i = 0;
  for (const LineageRun &run : *runs)
    for (const LineageView &v : run.views) {
      ASSERT_LT(i, views->size());
      EXPECT_EQ(v.toAttr(&ctx), (*views)[i].view.toAttr(&ctx)) << i;
      EXPECT_EQ(run.op, (*views)[i].op) << i;
      ++i;
    }
  EXPECT_EQ(i, views->size());
  EXPECT_TRUE(succeeded(checkLineages(*module, ArrayRef<LineageRun>(*runs))));
}

// A linear block index is expanded as a dot product, others as
// expressions: the same index either way gives the same statements.
TEST(CollectLineages, LinearAndOtherIndicesAgree) {
  MLIRContext ctx;
  ctx.loadDialect<TVDialect>();
  auto statements = [&](StringRef blocks) {
    std::string text =
        kTwoByTwo + ("tv.lineage_map \"x\" blocks affine_map<" + blocks +
                     "> shape [4, 8] = \"x\" on @mesh where {}")
                        .str();
    OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(text, &ctx);
    std::vector<Attribute> out;
    if (!module)
      return out;
    FailureOr<std::vector<LineageEntry>> all = collectLineages(*module);
    if (succeeded(all))
      for (const LineageEntry &e : *all)
        out.push_back(e.attr);
    return out;
  };
  // 1 - d0 (a constant and a coefficient) written linearly and as
  // expressions.
  std::vector<Attribute> linear = statements("(d0, d1) -> (1 - d0, d1 * 0)");
  ASSERT_EQ(linear.size(), 2u); // each on two ranks
  EXPECT_EQ(linear, statements("(d0, d1) -> ((d0 + 1) mod 2, 0)"));
  EXPECT_EQ(linear,
            statements("(d0, d1) -> ((3 - d0 * 2 - d1) floordiv 2, 0)"));
  // A different index, different statements (the comparison can fail).
  EXPECT_NE(linear, statements("(d0, d1) -> (d0, 0)"));
}

TEST(AffineRangeOver, BoundsEveryValueAndRefusesOverflow) {
  MLIRContext ctx;
  AffineExpr d0 = getAffineDimExpr(0, &ctx), d1 = getAffineDimExpr(1, &ctx);
  std::pair<int64_t, int64_t> ranges[] = {{0, 3}, {0, 7}};
  auto r = affineRangeOver(d0 * 2 + d1 % 4, ranges);
  ASSERT_TRUE(r);
  EXPECT_EQ(*r, (std::pair<int64_t, int64_t>(0, 9)));
  r = affineRangeOver(d1.floorDiv(2) - d0, ranges);
  ASSERT_TRUE(r);
  EXPECT_EQ(*r, (std::pair<int64_t, int64_t>(-3, 3)));
  // Interval bounds hold every value the expression takes there.
  for (int64_t a = 0; a <= 3; ++a)
    for (int64_t b = 0; b <= 7; ++b) {
      int64_t v = *evaluateAffineAt((d0 + 5) * 3 - d1.ceilDiv(3), {a, b});
      auto rr = affineRangeOver((d0 + 5) * 3 - d1.ceilDiv(3), ranges);
      ASSERT_TRUE(rr);
      EXPECT_LE(rr->first, v);
      EXPECT_GE(rr->second, v);
    }
  // 3 times 2^62 + 1 overflows: no bound.
  EXPECT_FALSE(affineRangeOver(d0 * ((int64_t(1) << 62) + 1), ranges));
}

//===- MeshTest.cpp - rank <-> coordinate mapping -------------------------===//
#include "TrainVerify/Dialect/TVOps.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "gtest/gtest.h"

using namespace mlir;
using namespace mlir::tv;

namespace {
struct MeshFixture : ::testing::Test {
  MLIRContext ctx;
  OwningOpRef<ModuleOp> module;
  MeshOp mesh;
  void SetUp() override {
    ctx.loadDialect<TVDialect>();
    module = parseSourceString<ModuleOp>(
        "tv.mesh @m axes [\"dp\", \"pp\", \"tp\"] sizes [2, 3, 4]", &ctx);
    ASSERT_TRUE(module);
    mesh = *module->getOps<MeshOp>().begin();
  }
};
} // namespace

TEST_F(MeshFixture, RowMajorCoordinates) {
  EXPECT_EQ(mesh.getNumRanks(), 24);
  EXPECT_EQ(mesh.getCoords(0), (SmallVector<int64_t>{0, 0, 0}));
  EXPECT_EQ(mesh.getCoords(5), (SmallVector<int64_t>{0, 1, 1}));
  EXPECT_EQ(mesh.getCoords(23), (SmallVector<int64_t>{1, 2, 3}));
  for (int64_t r = 0; r < 24; ++r)
    EXPECT_EQ(mesh.getRank(mesh.getCoords(r)), r);
}

TEST_F(MeshFixture, AxisGroups) {
  EXPECT_EQ(mesh.getAxisGroup(5, {"tp"}), (SmallVector<int64_t>{4, 5, 6, 7}));
  EXPECT_EQ(mesh.getAxisGroup(5, {"dp"}), (SmallVector<int64_t>{5, 17}));
  EXPECT_EQ(mesh.getAxisGroup(5, {"pp"}), (SmallVector<int64_t>{1, 5, 9}));
  EXPECT_EQ(mesh.getAxisGroup(0, {"dp", "tp"}),
            (SmallVector<int64_t>{0, 1, 2, 3, 12, 13, 14, 15}));
  EXPECT_EQ(mesh.getAxisIndex("pp"), 1);
  EXPECT_EQ(mesh.getAxisIndex("ep"), -1);
}

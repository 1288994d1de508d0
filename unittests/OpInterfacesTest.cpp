//===- OpInterfacesTest.cpp - every op answers what the verifier asks -----===//
#include "TrainVerify/Dialect/TVOps.h"
#include "TrainVerify/Interfaces/TVOpInterfaces.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "gtest/gtest.h"

using namespace mlir;
using namespace mlir::tv;

namespace {

// Ops that carry structure, not values: the executors handle them.
const char *kStructureOps[] = {
    "tv.mesh",        "tv.spec",    "tv.plan",        "tv.rank_program",
    "tv.input",       "tv.tag",     "tv.output",      "tv.accumulate",
    "tv.buffer_read", "tv.lineage", "tv.lineage_map", "tv.stage",
    "tv.send",        "tv.recv",  "tv.source",
    // Given its meaning (the asynchronous op's result) by
    // --tv-ssa-canonicalize before anything evaluates (decision 111).
    "tv.wait"};

struct OpsFixture : ::testing::Test {
  MLIRContext ctx;
  OpsFixture() { ctx.loadDialect<TVDialect>(); }
  SmallVector<RegisteredOperationName> tvOps() {
    SmallVector<RegisteredOperationName> ops;
    for (RegisteredOperationName name : ctx.getRegisteredOperations())
      if (name.getDialectNamespace() == "tv")
        ops.push_back(name);
    return ops;
  }
  /// The op of `body` (one line of a spec) named `name`.
  Operation *parseOp(OwningOpRef<ModuleOp> &m, StringRef body, StringRef name) {
    std::string text = "tv.spec @spec {\n" + body.str() + "\n}";
    m = parseSourceString<ModuleOp>(text, &ctx);
    if (!m)
      return nullptr;
    Operation *found = nullptr;
    m->walk([&](Operation *op) {
      if (op->getName().getStringRef() == name)
        found = op;
    });
    return found;
  }
};

/// Records what an op asks of the shape program.
struct Recorder : ShapeConstraints {
  std::vector<std::pair<std::pair<Value, unsigned>, std::pair<Value, unsigned>>>
      equalities;
  std::vector<std::pair<Value, unsigned>> floors, fixed;
  void equal(Operation *, DimRef a, DimRef b) override {
    equalities.push_back({{a.value, a.dim}, {b.value, b.dim}});
  }
  void linear(Operation *, ArrayRef<std::pair<int64_t, DimRef>>,
              ArrayRef<std::pair<int64_t, DimRef>>) override {}
  void product(Operation *, ArrayRef<DimRef>, ArrayRef<DimRef>) override {}
  void atLeast(DimRef d, int64_t) override {
    floors.push_back({d.value, d.dim});
  }
  void fixDim(DimRef d) override { fixed.push_back({d.value, d.dim}); }
  void sliceStart(Operation *, unsigned, int64_t, DimRef) override {}
  void vocabOffset(Operation *, int64_t, Value) override {}
  void position(Operation *, StringRef, int64_t, DimRef) override {}
  bool related(Value a, unsigned da, Value b, unsigned db) const {
    for (auto &[x, y] : equalities)
      if ((x == std::make_pair(a, da) && y == std::make_pair(b, db)) ||
          (y == std::make_pair(a, da) && x == std::make_pair(b, db)))
        return true;
    return false;
  }
};

} // namespace

TEST_F(OpsFixture, EveryProgramOpHasAMeaning) {
  for (RegisteredOperationName name : tvOps()) {
    if (llvm::is_contained(kStructureOps, name.getStringRef()))
      continue;
    EXPECT_TRUE(name.hasInterface<EvaluableOpInterface>() ||
                name.hasInterface<CollectiveOpInterface>())
        << name.getStringRef().str() << " has no evaluation";
  }
}

TEST_F(OpsFixture, EveryComputeOpHasAShapeRule) {
  for (RegisteredOperationName name : tvOps()) {
    if (!name.hasInterface<EvaluableOpInterface>())
      continue;
    EXPECT_TRUE(name.hasInterface<StructuredOpInterface>() ||
                name.hasInterface<ShapeRuleOpInterface>())
        << name.getStringRef().str() << " has neither structure nor rule";
  }
}

TEST_F(OpsFixture, EveryBackwardOpNamesItsCotangent) {
  for (RegisteredOperationName name : tvOps()) {
    if (!name.getStringRef().ends_with("_grad"))
      continue;
    EXPECT_TRUE(name.hasInterface<GradOpInterface>())
        << name.getStringRef().str();
  }
}

TEST_F(OpsFixture, CotangentIsTheIncomingGradient) {
  OwningOpRef<ModuleOp> m;
  Operation *op =
      parseOp(m,
              "%x = tv.input \"x\" : tensor<4x8xf32>\n"
              "%w = tv.input \"w\" : tensor<6x8xf32>\n"
              "%g = tv.input \"g\" : tensor<4x6xf32>\n"
              "%dx, %dw = tv.linear_grad %x, %w, %g : tensor<4x8xf32>, "
              "tensor<6x8xf32>, tensor<4x6xf32>",
              "tv.linear_grad");
  ASSERT_TRUE(op);
  unsigned i = cast<GradOpInterface>(op).getCotangentIndex();
  EXPECT_EQ(cast<InputOp>(op->getOperand(i).getDefiningOp()).getName(), "g");
}

TEST_F(OpsFixture, MatmulStructureGivesEqualitiesAndTheContractionFloor) {
  OwningOpRef<ModuleOp> m;
  Operation *op = parseOp(m,
                          "%a = tv.input \"a\" : tensor<2x4x8xf32>\n"
                          "%b = tv.input \"b\" : tensor<8x6xf32>\n"
                          "%c = tv.matmul %a, %b : tensor<2x4x8xf32>, "
                          "tensor<8x6xf32> -> tensor<2x4x6xf32>",
                          "tv.matmul");
  ASSERT_TRUE(op);
  Recorder r;
  addShapeConstraints(op, r);
  Value a = op->getOperand(0), b = op->getOperand(1), c = op->getResult(0);
  EXPECT_TRUE(r.related(a, 0, c, 0)); // batch
  EXPECT_TRUE(r.related(a, 1, c, 1)); // m
  EXPECT_TRUE(r.related(b, 1, c, 2)); // n
  EXPECT_TRUE(r.related(a, 2, b, 0)); // k
  EXPECT_FALSE(r.related(a, 1, b, 1));
  ASSERT_EQ(r.floors.size(), 1u);
  EXPECT_EQ(r.floors[0], std::make_pair(a, 2u)); // k keeps >= 2
}

TEST_F(OpsFixture, MatmulFoldFacts) {
  OwningOpRef<ModuleOp> m;
  Operation *op = parseOp(m,
                          "%a = tv.input \"a\" : tensor<4x8xf32>\n"
                          "%b = tv.input \"b\" : tensor<8x6xf32>\n"
                          "%c = tv.matmul %a, %b : tensor<4x8xf32>, "
                          "tensor<8x6xf32> -> tensor<4x6xf32>",
                          "tv.matmul");
  ASSERT_TRUE(op);
  std::string why;
  auto fact = [&](FoldFact a, FoldFact b) {
    why.clear();
    return getFoldFact(op, {a, b}, 0, 2, why);
  };
  // Rows of a: rows of c. Columns of b: columns of c.
  EXPECT_EQ(fact(FoldFact::par(0), FoldFact::rep()), FoldFact::par(0));
  EXPECT_EQ(fact(FoldFact::rep(), FoldFact::par(1)), FoldFact::par(1));
  // Both along k: a sum of block products.
  EXPECT_EQ(fact(FoldFact::par(1), FoldFact::par(0)), FoldFact::red());
  // k of a only: block c would read all of b's rows.
  EXPECT_EQ(fact(FoldFact::par(1), FoldFact::rep()).kind, FoldFact::Bad);
  EXPECT_EQ(why, "a replicated operand spans the factored dimension");
  // Two different loops.
  EXPECT_EQ(fact(FoldFact::par(0), FoldFact::par(1)).kind, FoldFact::Bad);
}

TEST_F(OpsFixture, LinearBiasStandsOutsideTheSum) {
  OwningOpRef<ModuleOp> m;
  Operation *op = parseOp(m,
                          "%x = tv.input \"x\" : tensor<4x8xf32>\n"
                          "%w = tv.input \"w\" : tensor<6x8xf32>\n"
                          "%b = tv.input \"b\" : tensor<6xf32>\n"
                          "%y = tv.linear %x, %w, %b : (tensor<4x8xf32>, "
                          "tensor<6x8xf32>, tensor<6xf32>) -> tensor<4x6xf32>",
                          "tv.linear");
  ASSERT_TRUE(op);
  std::string why;
  FoldFact f = getFoldFact(
      op, {FoldFact::par(1), FoldFact::par(1), FoldFact::rep()}, 0, 2, why);
  EXPECT_EQ(f.kind, FoldFact::Bad);
  EXPECT_EQ(why, "a term outside the sum over the factored dimension");
}

TEST_F(OpsFixture, NormParameterGradientAccumulatesTheRows) {
  OwningOpRef<ModuleOp> m;
  Operation *op = parseOp(
      m,
      "%x = tv.input \"x\" : tensor<4x8xf32>\n"
      "%w = tv.input \"w\" : tensor<8xf32>\n"
      "%g = tv.input \"g\" : tensor<4x8xf32>\n"
      "%dx, %dw = tv.rmsnorm_grad %x, %w, %g eps 1.0e-05 : tensor<4x8xf32>, "
      "tensor<8xf32>",
      "tv.rmsnorm_grad");
  ASSERT_TRUE(op) << "parse";
  std::string why;
  SmallVector<FoldFact> rows = {FoldFact::par(0), FoldFact::rep(),
                                FoldFact::par(0)};
  EXPECT_EQ(getFoldFact(op, rows, 0, 2, why), FoldFact::par(0));
  EXPECT_EQ(getFoldFact(op, rows, 1, 2, why), FoldFact::red());
  SmallVector<FoldFact> hidden = {FoldFact::par(1), FoldFact::par(0),
                                  FoldFact::par(1)};
  EXPECT_EQ(getFoldFact(op, hidden, 0, 2, why).kind, FoldFact::Bad);
  EXPECT_EQ(why, "normalizes along the factored dimension");
}

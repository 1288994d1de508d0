//===- SemanticsTest.cpp - symbolic vs concrete semantics, and VJPs -------===//
//
// Two properties for every op:
//  * its symbolic semantics (normalized terms, evaluated at a random point)
//    equals its concrete semantics at that point;
//  * its backward op is the vector-Jacobian product of its forward op
//    (checked against central finite differences).
//
//===----------------------------------------------------------------------===//
#include "TrainVerify/Dialect/TVOps.h"
#include "TrainVerify/Verify/Executor.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "gtest/gtest.h"
#include <cmath>
#include <random>

using namespace mlir;
using namespace mlir::tv;

namespace {

struct Program {
  MLIRContext ctx;
  OwningOpRef<ModuleOp> module;
  SpecOp spec;
  explicit Program(const std::string &body) {
    ctx.loadDialect<TVDialect>();
    module = parseSourceString<ModuleOp>("tv.spec @s {\n" + body + "\n}", &ctx);
    if (module)
      spec = *module->getOps<SpecOp>().begin();
  }
};

using Inputs = std::map<std::string, Tensor<double>>;

/// Random inputs for every tv.input of the spec (ids in [0, 4)).
Inputs randomInputs(SpecOp spec, std::mt19937_64 &rng) {
  Inputs in;
  for (auto op : spec.getBody().front().getOps<InputOp>()) {
    auto ty = cast<RankedTensorType>(op.getType());
    Tensor<double> t;
    t.shape.assign(ty.getShape().begin(), ty.getShape().end());
    for (int64_t i = 0; i < ty.getNumElements(); ++i)
      t.data.push_back(isa<IntegerType>(ty.getElementType())
                           ? (double)(rng() % 4)
                           : std::uniform_real_distribution<double>(-1.5, 1.5)(rng));
    in[op.getName().str()] = t;
  }
  return in;
}

RunState<double> runConcrete(SpecOp spec, const Inputs &in) {
  ConcreteDomain d;
  RunState<double> st;
  auto fn = [&](int64_t, StringRef name, RankedTensorType) -> FailureOr<Tensor<double>> {
    return in.at(name.str());
  };
  EXPECT_TRUE(succeeded(runSpec(d, spec, fn, st)));
  return st;
}

/// Symbolic run with one variable per input element, evaluated at `in`.
std::map<std::string, std::vector<double>> runSymbolic(SpecOp spec,
                                                       const Inputs &in) {
  sym::TermContext terms;
  SymDomain d{terms};
  std::vector<double> values;
  RunState<sym::TermId> st;
  auto fn = [&](int64_t, StringRef name,
                RankedTensorType ty) -> FailureOr<Tensor<sym::TermId>> {
    Tensor<sym::TermId> t;
    t.shape.assign(ty.getShape().begin(), ty.getShape().end());
    for (double v : in.at(name.str()).data) {
      t.data.push_back(terms.var(name, isa<IntegerType>(ty.getElementType())));
      values.push_back(v);
    }
    return t;
  };
  EXPECT_TRUE(succeeded(runSpec(d, spec, fn, st)));
  sym::TermEvaluator ev(terms, values);
  std::map<std::string, std::vector<double>> out;
  for (auto &[key, t] : st.named) {
    auto &vals = out[key.second];
    for (sym::TermId id : t.data)
      vals.push_back(ev.eval(id));
  }
  return out;
}

double inf() { return std::numeric_limits<double>::infinity(); }

bool near(double a, double b, double tol) {
  return std::fabs(a - b) <= tol * (1 + std::fabs(a) + std::fabs(b));
}

struct OpCase {
  const char *name;
  const char *body;
};

// clang-format off
const OpCase kOps[] = {
  {"add_broadcast", R"(%a = tv.input "a" : tensor<2x3xf32>
    %b = tv.input "b" : tensor<3xf32>
    %r = tv.add %a, %b : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
    tv.output "r", %r : tensor<2x3xf32>)"},
  {"sub_mul_div", R"(%a = tv.input "a" : tensor<2x3xf32>
    %b = tv.input "b" : tensor<2x1xf32>
    %s = tv.sub %a, %b : tensor<2x3xf32>, tensor<2x1xf32> -> tensor<2x3xf32>
    %m = tv.mul %s, %a : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
    %e = tv.exp %b : tensor<2x1xf32>
    %r = tv.div %m, %e : tensor<2x3xf32>, tensor<2x1xf32> -> tensor<2x3xf32>
    tv.output "r", %r : tensor<2x3xf32>)"},
  {"int_ops", R"(%a = tv.input "a" : tensor<2x3xi8>
    %b = tv.input "b" : tensor<3xi8>
    %s = tv.scale %a, 100.0 : tensor<2x3xi8>
    %t = tv.add %s, %b : tensor<2x3xi8>, tensor<3xi8> -> tensor<2x3xi8>
    %c = tv.int_binary andi %t, %b : tensor<2x3xi8>, tensor<3xi8> -> tensor<2x3xi8>
    %d = tv.int_binary maxui %t, %c : tensor<2x3xi8>, tensor<2x3xi8> -> tensor<2x3xi8>
    %e = tv.int_binary minsi %d, %t : tensor<2x3xi8>, tensor<2x3xi8> -> tensor<2x3xi8>
    %f = tv.int_binary shli %e, %b : tensor<2x3xi8>, tensor<3xi8> -> tensor<2x3xi8>
    %g = tv.int_binary shrsi %t, %b : tensor<2x3xi8>, tensor<3xi8> -> tensor<2x3xi8>
    %h = tv.int_binary xori %f, %g : tensor<2x3xi8>, tensor<2x3xi8> -> tensor<2x3xi8>
    %i = tv.int_reduce ori %h dims [1] : tensor<2x3xi8> -> tensor<2xi8>
    %j = tv.int_reduce maxsi %t dims [0] : tensor<2x3xi8> -> tensor<3xi8>
    %k = tv.int_binary shrui %t, %b : tensor<2x3xi8>, tensor<3xi8> -> tensor<2x3xi8>
    tv.output "h", %h : tensor<2x3xi8>
    tv.output "i", %i : tensor<2xi8>
    tv.output "j", %j : tensor<3xi8>
    tv.output "k", %k : tensor<2x3xi8>)"},
  {"abs", R"(%a = tv.input "a" : tensor<6xf32>
    %n = tv.neg %a : tensor<6xf32>
    %r = tv.abs %n : tensor<6xf32>
    tv.output "r", %r : tensor<6xf32>)"},
  {"iota", R"(%a = tv.input "a" : tensor<2x3xf32>
    %i = tv.iota dim 1 offset 5 : tensor<2x3xf32>
    %j = tv.iota dim 0 offset 0 : tensor<2x3xf32>
    %s = tv.add %a, %i : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
    %r = tv.mul %s, %j : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
    tv.output "r", %r : tensor<2x3xf32>)"},
  {"zeros", R"(%a = tv.input "a" : tensor<2x3xf32>
    %z = tv.zeros : tensor<2x3xf32>
    %r = tv.add %a, %z : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
    tv.output "r", %r : tensor<2x3xf32>)"},
  {"mul_grad", R"(%a = tv.input "a" : tensor<2x3xf32>
    %b = tv.input "b" : tensor<2x3xf32>
    %g = tv.input "g" : tensor<2x3xf32>
    %da, %db = tv.mul_grad %a, %b, %g : tensor<2x3xf32>
    tv.output "r", %da : tensor<2x3xf32>
    tv.output "s", %db : tensor<2x3xf32>)"},
  {"scalars", R"(%a = tv.input "a" : tensor<4xf32>
    %b = tv.add_scalar %a, 0.5 : tensor<4xf32>
    %c = tv.sub_scalar %b, 0.25 : tensor<4xf32>
    %d = tv.rsub_scalar %c, 2.0 : tensor<4xf32>
    %e = tv.div_scalar %d, 3.0 : tensor<4xf32>
    %f = tv.scale %e, -1.5 : tensor<4xf32>
    %g = tv.pow %f, 3.0 : tensor<4xf32>
    %h = tv.neg %g : tensor<4xf32>
    tv.output "r", %h : tensor<4xf32>)"},
  {"unary", R"(%a = tv.input "a" : tensor<5xf32>
    %b = tv.sigmoid %a : tensor<5xf32>
    %c = tv.silu %a : tensor<5xf32>
    %d = tv.gelu %a : tensor<5xf32>
    %e = tv.relu %a : tensor<5xf32>
    %f = tv.tanh %a : tensor<5xf32>
    %x = tv.exp %a : tensor<5xf32>
    %g = tv.sqrt %x : tensor<5xf32>
    %h = tv.rsqrt %x : tensor<5xf32>
    %i = tv.log %x : tensor<5xf32>
    %s1 = tv.add %b, %c : tensor<5xf32>, tensor<5xf32> -> tensor<5xf32>
    %s2 = tv.add %d, %e : tensor<5xf32>, tensor<5xf32> -> tensor<5xf32>
    %s3 = tv.add %f, %g : tensor<5xf32>, tensor<5xf32> -> tensor<5xf32>
    %s4 = tv.mul %h, %i : tensor<5xf32>, tensor<5xf32> -> tensor<5xf32>
    tv.output "r1", %s1 : tensor<5xf32>
    tv.output "r2", %s2 : tensor<5xf32>
    tv.output "r3", %s3 : tensor<5xf32>
    tv.output "r4", %s4 : tensor<5xf32>)"},
  {"matmul_linear", R"(%a = tv.input "a" : tensor<2x3x4xf32>
    %b = tv.input "b" : tensor<2x5x4xf32>
    %w = tv.input "w" : tensor<3x4xf32>
    %bias = tv.input "bias" : tensor<3xf32>
    %m = tv.matmul %a, %b {transpose_rhs} : tensor<2x3x4xf32>, tensor<2x5x4xf32> -> tensor<2x3x5xf32>
    %n = tv.matmul %a, %a {transpose_lhs} : tensor<2x3x4xf32>, tensor<2x3x4xf32> -> tensor<2x4x4xf32>
    %l = tv.linear %a, %w, %bias : (tensor<2x3x4xf32>, tensor<3x4xf32>, tensor<3xf32>) -> tensor<2x3x3xf32>
    tv.output "m", %m : tensor<2x3x5xf32>
    tv.output "n", %n : tensor<2x4x4xf32>
    tv.output "l", %l : tensor<2x3x3xf32>)"},
  {"reductions", R"(%a = tv.input "a" : tensor<2x3x4xf32>
    %s = tv.sum %a dims [0, 2] : tensor<2x3x4xf32> -> tensor<3xf32>
    %m = tv.mean %a dims [1] {keepdim} : tensor<2x3x4xf32> -> tensor<2x1x4xf32>
    %x = tv.max %a dims [2] : tensor<2x3x4xf32> -> tensor<2x3xf32>
    %l = tv.logsumexp %a dims [0, 2] {keepdim} : tensor<2x3x4xf32> -> tensor<1x3x1xf32>
    tv.output "s", %s : tensor<3xf32>
    tv.output "m", %m : tensor<2x1x4xf32>
    tv.output "x", %x : tensor<2x3xf32>
    tv.output "l", %l : tensor<1x3x1xf32>)"},
  {"norms_softmax", R"(%a = tv.input "a" : tensor<2x4xf32>
    %g = tv.input "g" : tensor<4xf32>
    %b = tv.input "b" : tensor<4xf32>
    %l = tv.layernorm %a, %g, %b eps 1.0e-05 : tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<2x4xf32>
    %r = tv.rmsnorm %a, %g eps 1.0e-05 : tensor<2x4xf32>, tensor<4xf32> -> tensor<2x4xf32>
    %s = tv.softmax %a dim 0 : tensor<2x4xf32>
    tv.output "l", %l : tensor<2x4xf32>
    tv.output "r", %r : tensor<2x4xf32>
    tv.output "s", %s : tensor<2x4xf32>)"},
  {"rotary_mask_ce", R"(%x = tv.input "x" : tensor<2x3x4xf32>
    %c = tv.input "c" : tensor<3x2xf32>
    %s = tv.input "s" : tensor<3x2xf32>
    %r = tv.rotary %x, %c, %s : tensor<2x3x4xf32>, tensor<3x2xf32>, tensor<3x2xf32> -> tensor<2x3x4xf32>
    %q = tv.input "q" : tensor<2x3x3xf32>
    %m = tv.causal_mask : tensor<3x3xi1>
    %am = tv.apply_mask %q, %m : tensor<2x3x3xf32>, tensor<3x3xi1> -> tensor<2x3x3xf32>
    %p = tv.softmax %am dim 2 : tensor<2x3x3xf32>
    %logits = tv.input "logits" : tensor<3x4xf32>
    %labels = tv.input "labels" : tensor<3xi64>
    %ce = tv.cross_entropy %logits, %labels : tensor<3x4xf32>, tensor<3xi64> -> tensor<f32>
    tv.output "r", %r : tensor<2x3x4xf32>
    tv.output "p", %p : tensor<2x3x3xf32>
    tv.output "ce", %ce : tensor<f32>)"},
  {"sliding_window_mask", R"(%q = tv.input "q" : tensor<2x4x4xf32>
    %m = tv.causal_mask {window = 2} : tensor<4x4xi1>
    %am = tv.apply_mask %q, %m : tensor<2x4x4xf32>, tensor<4x4xi1> -> tensor<2x4x4xf32>
    %p = tv.softmax %am dim 2 : tensor<2x4x4xf32>
    tv.output "p", %p : tensor<2x4x4xf32>)"},
  {"target_logit", R"(%l = tv.input "l" : tensor<3x4xf32>
    %lab = tv.input "lab" : tensor<3xi64>
    %g = tv.input "g" : tensor<3xf32>
    %y = tv.target_logit %l, %lab : tensor<3x4xf32>, tensor<3xi64> -> tensor<3xf32>
    %z = tv.target_logit %l, %lab {vocab_offset = 2} : tensor<3x4xf32>, tensor<3xi64> -> tensor<3xf32>
    %d = tv.target_logit_grad %lab, %g {vocab_offset = 2} : tensor<3xi64>, tensor<3xf32> -> tensor<3x4xf32>
    tv.output "y", %y : tensor<3xf32>
    tv.output "z", %z : tensor<3xf32>
    tv.output "d", %d : tensor<3x4xf32>)"},
  {"embedding_movement", R"(%ids = tv.input "ids" : tensor<2x3xi64>
    %t = tv.input "t" : tensor<4x2xf32>
    %e = tv.embedding %ids, %t : tensor<2x3xi64>, tensor<4x2xf32> -> tensor<2x3x2xf32>
    %v = tv.reshape %e : tensor<2x3x2xf32> -> tensor<6x2xf32>
    %tr = tv.transpose %e perm [2, 0, 1] : tensor<2x3x2xf32> -> tensor<2x2x3xf32>
    %sl = tv.slice %tr start [0, 1, 1] : tensor<2x2x3xf32> -> tensor<2x1x2xf32>
    %cc = tv.concat %v, %v dim 1 : (tensor<6x2xf32>, tensor<6x2xf32>) -> tensor<6x4xf32>
    %bc = tv.broadcast %sl : tensor<2x1x2xf32> -> tensor<3x2x4x2xf32>
    tv.output "cc", %cc : tensor<6x4xf32>
    tv.output "bc", %bc : tensor<3x2x4x2xf32>)"},
  {"moe", R"(%x = tv.input "x" : tensor<3x2xf32>
    %l = tv.input "l" : tensor<3x4xf32>
    %g = tv.topk_gate %l k 2 : tensor<3x4xf32>
    %d = tv.dispatch %x, %g : tensor<3x2xf32>, tensor<3x4xf32> -> tensor<4x3x2xf32>
    %y = tv.exp %d : tensor<4x3x2xf32>
    %c = tv.combine %y, %g : tensor<4x3x2xf32>, tensor<3x4xf32> -> tensor<3x2xf32>
    tv.output "c", %c : tensor<3x2xf32>)"},
  {"moe_gate_gmm", R"(%x = tv.input "x" : tensor<3x4xf32>
    %r = tv.input "r" : tensor<8x4xf32>
    %w1 = tv.input "w1" : tensor<4x2x4xf32>
    %w3 = tv.input "w3" : tensor<4x2x4xf32>
    %w2 = tv.input "w2" : tensor<4x4x2xf32>
    %g = tv.input "g" : tensor<3x4xf32>
    %wt, %idx = tv.moe_gate %x, %r sigmoid k 2 groups 4 keep 2 scale 2.5 : tensor<3x4xf32>, tensor<8x4xf32> -> tensor<3x2xf32>, tensor<3x2xi64>
    %ws, %is = tv.moe_gate %x, %r softmax k 3 groups 1 keep 1 scale 1.0 : tensor<3x4xf32>, tensor<8x4xf32> -> tensor<3x3xf32>, tensor<3x3xi64>
    %y = tv.moe_gmm %x, %idx, %wt, %w1, %w3, %w2 experts from 2 : tensor<3x4xf32>, tensor<3x2xi64>, tensor<3x2xf32>, tensor<4x2x4xf32>, tensor<4x2x4xf32>, tensor<4x4x2xf32> -> tensor<3x4xf32>
    %dx, %dwt, %dw1, %dw3, %dw2 = tv.moe_gmm_grad %g, %x, %idx, %wt, %w1, %w3, %w2 experts from 2 : tensor<3x4xf32>, tensor<3x2xi64>, tensor<3x2xf32>, tensor<4x2x4xf32>, tensor<4x2x4xf32>, tensor<4x4x2xf32>
    %gx, %gr = tv.moe_gate_grad %x, %r, %ws softmax k 3 groups 1 keep 1 scale 1.0 : tensor<3x4xf32>, tensor<8x4xf32>, tensor<3x3xf32>
    tv.output "wt", %wt : tensor<3x2xf32>
    tv.output "ws", %ws : tensor<3x3xf32>
    tv.output "y", %y : tensor<3x4xf32>
    tv.output "dx", %dx : tensor<3x4xf32>
    tv.output "dwt", %dwt : tensor<3x2xf32>
    tv.output "dw2", %dw2 : tensor<4x4x2xf32>
    tv.output "gr", %gr : tensor<8x4xf32>)"},
  {"optimizer", R"(%w = tv.input "w" : tensor<3xf32>
    %g = tv.input "g" : tensor<3xf32>
    %m = tv.input "m" : tensor<3xf32>
    %v0 = tv.input "v" : tensor<3xf32>
    %v = tv.mul %v0, %v0 : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
    %s = tv.sgd %w, %g lr 1.0e-01 : tensor<3xf32>
    %a:3 = tv.adam %w, %g, %m, %v {lr = 1.0e-03 : f64, beta1 = 9.0e-01 : f64, beta2 = 9.99e-01 : f64, eps = 1.0e-08 : f64, step = 3 : i64} : tensor<3xf32>
    tv.output "s", %s : tensor<3xf32>
    tv.output "w2", %a#0 : tensor<3xf32>
    tv.output "m2", %a#1 : tensor<3xf32>
    tv.output "v2", %a#2 : tensor<3xf32>)"},
};
// clang-format on

} // namespace

class SymbolicMatchesConcrete : public ::testing::TestWithParam<OpCase> {};

TEST_P(SymbolicMatchesConcrete, OnRandomPoints) {
  Program p(GetParam().body);
  ASSERT_TRUE(p.module) << "does not parse";
  std::mt19937_64 rng(42);
  for (int trial = 0; trial < 5; ++trial) {
    Inputs in = randomInputs(p.spec, rng);
    RunState<double> conc = runConcrete(p.spec, in);
    auto sym = runSymbolic(p.spec, in);
    for (auto &[key, t] : conc.named) {
      auto &s = sym[key.second];
      ASSERT_EQ(s.size(), t.data.size()) << key.second;
      for (size_t i = 0; i < s.size(); ++i)
        EXPECT_TRUE(near(s[i], t.data[i], 1e-9))
            << GetParam().name << ": '" << key.second << "'[" << i
            << "] symbolic " << s[i] << " concrete " << t.data[i];
    }
  }
}

// Scores past exp's range (attention over wide heads with random weights):
// the interpreter's reals are the softmax and log-sum-exp themselves, not
// inf / inf; a replay that read NaN there compared nothing.
TEST(Softmax, RealsDoNotOverflow) {
  Program p(R"(%x = tv.input "x" : tensor<1x3xf32>
    %y = tv.input "y" : tensor<1xi64>
    %s = tv.softmax %x dim 1 : tensor<1x3xf32>
    %l = tv.logsumexp %x dims [1] : tensor<1x3xf32> -> tensor<1xf32>
    %c = tv.cross_entropy %x, %y : tensor<1x3xf32>, tensor<1xi64> -> tensor<f32>
    tv.output "s", %s : tensor<1x3xf32>
    tv.output "l", %l : tensor<1xf32>
    tv.output "c", %c : tensor<f32>)");
  ASSERT_TRUE(p.module);
  Inputs in;
  in["x"] = Tensor<double>{{1, 3}, {800, 799, -inf()}};
  in["y"] = Tensor<double>{{1}, {1}};
  RunState<double> conc = runConcrete(p.spec, in);
  std::map<std::string, std::vector<double>> got;
  for (auto &[key, t] : conc.named)
    got[key.second] = t.data;
  double e = std::exp(-1.0), z = 1 + e;
  EXPECT_NEAR(got["s"][0], 1 / z, 1e-12);
  EXPECT_NEAR(got["s"][1], e / z, 1e-12);
  EXPECT_EQ(got["s"][2], 0.0);
  EXPECT_NEAR(got["l"][0], 800 + std::log(z), 1e-9);
  EXPECT_NEAR(got["c"][0], 800 + std::log(z) - 799, 1e-9);
}

// tv.iota's values are positions (what linalg.index gives), not merely the
// same on both sides.
TEST(Iota, CountsAlongItsDimensionFromTheOffset) {
  Program p(R"(%i = tv.iota dim 1 offset 5 : tensor<2x3xf32>
    %j = tv.iota dim 0 offset 2 : tensor<2x3xf32>
    tv.output "i", %i : tensor<2x3xf32>
    tv.output "j", %j : tensor<2x3xf32>)");
  ASSERT_TRUE(p.module);
  RunState<double> conc = runConcrete(p.spec, Inputs());
  std::map<std::string, std::vector<double>> got;
  for (auto &[key, t] : conc.named)
    got[key.second] = t.data;
  EXPECT_EQ(got["i"], (std::vector<double>{5, 6, 7, 5, 6, 7}));
  EXPECT_EQ(got["j"], (std::vector<double>{2, 2, 2, 3, 3, 3}));
}

INSTANTIATE_TEST_SUITE_P(AllOps, SymbolicMatchesConcrete,
                         ::testing::ValuesIn(kOps),
                         [](const auto &info) { return info.param.name; });

// The exact interpreter's real reading is the concrete semantics, op by op;
// its modular reading is exact where no uninterpreted function is applied.
class ExactMatchesConcrete : public ::testing::TestWithParam<OpCase> {};

TEST_P(ExactMatchesConcrete, RealReadingOnRandomPoints) {
  Program p(GetParam().body);
  ASSERT_TRUE(p.module) << "does not parse";
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 5; ++trial) {
    Inputs in = randomInputs(p.spec, rng);
    RunState<double> conc = runConcrete(p.spec, in);
    ExactDomain d;
    RunState<ExactValue> st;
    auto fn = [&](int64_t, StringRef name,
                  RankedTensorType) -> FailureOr<Tensor<ExactValue>> {
      const Tensor<double> &t = in.at(name.str());
      Tensor<ExactValue> x;
      x.shape = t.shape;
      for (double v : t.data)
        x.data.push_back(
            ExactDomain::ofRat(sym::Rat::fromDouble(v), v)); // exact input
      return x;
    };
    ASSERT_TRUE(succeeded(runSpec(d, p.spec, fn, st)));
    for (auto &[key, t] : conc.named) {
      const Tensor<ExactValue> *e = st.lookupNamed(key.first, key.second);
      ASSERT_TRUE(e) << key.second;
      ASSERT_EQ(e->data.size(), t.data.size()) << key.second;
      for (size_t i = 0; i < t.data.size(); ++i) {
        double x = e->data[i].d, y = t.data[i];
        EXPECT_TRUE((std::isnan(x) && std::isnan(y)) || x == y ||
                    near(x, y, 1e-12))
            << GetParam().name << ": '" << key.second << "'[" << i
            << "] exact interpreter " << x << " concrete " << y;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllOps, ExactMatchesConcrete, ::testing::ValuesIn(kOps),
                         [](const auto &info) { return info.param.name; });

TEST(ExactDomain, FieldArithmeticIsExact) {
  ExactDomain d;
  ExactValue third = d.cstFrac(1, 3), x = d.cstFrac(-7, 5);
  // (x / 3) * 3 == x, and 0.1 (the constant 1/10) times 10 is 1, exactly.
  EXPECT_EQ(d.mul(d.mul(x, third), d.cstFrac(3, 1)), x);
  EXPECT_EQ(d.mul(d.cst(0.1), d.cst(10.0)), d.one());
  // A change of one part in 10^13 is a different value.
  EXPECT_FALSE(d.scale(x, 0.5) == d.scale(x, 0.5000000000001));
  EXPECT_EQ(d.div(x, x), d.one());
  EXPECT_TRUE(d.mul(x, x).pure);
  // Addition is associative and commutative exactly.
  ExactValue a = d.cstFrac(5, 7), b = d.cstFrac(-2, 9);
  EXPECT_EQ(d.add(d.add(a, b), x), d.add(a, d.add(x, b)));
}

TEST(ExactDomain, UninterpretedFunctionsAreCongruentOnly) {
  ExactDomain d;
  ExactValue a = d.cstFrac(1, 2), b = d.cstFrac(1, 3);
  ExactValue sum = d.add(a, b), again = d.add(b, a);
  // A function of equal arguments is equal (congruence) ...
  EXPECT_EQ(d.exp(sum), d.exp(again));
  EXPECT_FALSE(d.exp(sum).pure);
  // ... but no identity of exp holds in the modular reading, while it holds
  // in the real one.
  ExactValue prod = d.mul(d.exp(a), d.exp(b));
  EXPECT_FALSE(prod == d.exp(sum));
  EXPECT_NEAR(prod.d, d.exp(sum).d, 1e-12);
  // Different functions of one argument differ.
  EXPECT_FALSE(d.gelu(a) == d.sigmoid(a));
  // rsqrt is sqrt's inverse, as the prover reads it.
  EXPECT_EQ(d.mul(d.rsqrt(a), d.sqrt(a)), d.one());
}

TEST(ExactDomain, MasksAndMaxima) {
  ExactDomain d;
  ExactValue x = d.cstFrac(3, 4), y = d.cstFrac(-1, 2);
  // A masked entry: exp(-inf - m) is exactly 0, and max skips it.
  ExactValue masked = d.sub(d.negInf(), x);
  EXPECT_EQ(masked.kind, ExactValue::NegInf);
  EXPECT_EQ(d.exp(masked), d.zero());
  EXPECT_EQ(d.max({masked, y, x}), x);
  EXPECT_EQ(d.relu(y), d.zero());
  EXPECT_EQ(d.abs(y), d.neg(y));
  EXPECT_EQ(d.select(d.cstFrac(1, 1), 0, {x, y}), y);
}

//===----------------------------------------------------------------------===//
// Backward ops are vector-Jacobian products
//===----------------------------------------------------------------------===//

namespace {
struct VjpCase {
  const char *name;
  const char *body;     // computes "y" from inputs and "d_<x>" from "dy"
  const char *wrt;      // comma-separated inputs to differentiate
};

// clang-format off
const VjpCase kVjps[] = {
  {"exp", R"(%x = tv.input "x" : tensor<3xf32>
    %dy = tv.input "dy" : tensor<3xf32>
    %y = tv.exp %x : tensor<3xf32>
    %d = tv.exp_grad %x, %dy : tensor<3xf32>
    tv.output "y", %y : tensor<3xf32>
    tv.output "d_x", %d : tensor<3xf32>)", "x"},
  {"unary_chain", R"(%x0 = tv.input "x" : tensor<4xf32>
    %dy = tv.input "dy" : tensor<4xf32>
    %x = tv.exp %x0 : tensor<4xf32>
    %a = tv.log %x : tensor<4xf32>
    %b = tv.sqrt %x : tensor<4xf32>
    %c = tv.rsqrt %x : tensor<4xf32>
    %s1 = tv.add %a, %b : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    %y = tv.add %s1, %c : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    %ga = tv.log_grad %x, %dy : tensor<4xf32>
    %gb = tv.sqrt_grad %x, %dy : tensor<4xf32>
    %gc = tv.rsqrt_grad %x, %dy : tensor<4xf32>
    %g1 = tv.add %ga, %gb : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    %g = tv.add %g1, %gc : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    %d = tv.exp_grad %x0, %g : tensor<4xf32>
    tv.output "y", %y : tensor<4xf32>
    tv.output "d_x", %d : tensor<4xf32>)", "x"},
  {"activations", R"(%x = tv.input "x" : tensor<5xf32>
    %dy = tv.input "dy" : tensor<5xf32>
    %a = tv.sigmoid %x : tensor<5xf32>
    %b = tv.silu %x : tensor<5xf32>
    %c = tv.gelu %x : tensor<5xf32>
    %e = tv.tanh %x : tensor<5xf32>
    %f = tv.pow %x, 3.0 : tensor<5xf32>
    %s1 = tv.add %a, %b : tensor<5xf32>, tensor<5xf32> -> tensor<5xf32>
    %s2 = tv.add %c, %e : tensor<5xf32>, tensor<5xf32> -> tensor<5xf32>
    %s3 = tv.add %s1, %s2 : tensor<5xf32>, tensor<5xf32> -> tensor<5xf32>
    %y = tv.add %s3, %f : tensor<5xf32>, tensor<5xf32> -> tensor<5xf32>
    %ga = tv.sigmoid_grad %x, %dy : tensor<5xf32>
    %gb = tv.silu_grad %x, %dy : tensor<5xf32>
    %gc = tv.gelu_grad %x, %dy : tensor<5xf32>
    %ge = tv.tanh_grad %x, %dy : tensor<5xf32>
    %gf = tv.pow_grad %x, %dy exponent 3.0 : tensor<5xf32>
    %t1 = tv.add %ga, %gb : tensor<5xf32>, tensor<5xf32> -> tensor<5xf32>
    %t2 = tv.add %gc, %ge : tensor<5xf32>, tensor<5xf32> -> tensor<5xf32>
    %t3 = tv.add %t1, %t2 : tensor<5xf32>, tensor<5xf32> -> tensor<5xf32>
    %d = tv.add %t3, %gf : tensor<5xf32>, tensor<5xf32> -> tensor<5xf32>
    tv.output "y", %y : tensor<5xf32>
    tv.output "d_x", %d : tensor<5xf32>)", "x"},
  {"mul", R"(%a = tv.input "a" : tensor<2x3xf32>
    %b = tv.input "b" : tensor<2x3xf32>
    %dy = tv.input "dy" : tensor<2x3xf32>
    %e = tv.exp %a : tensor<2x3xf32>
    %y = tv.mul %e, %b : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
    %de, %db = tv.mul_grad %e, %b, %dy : tensor<2x3xf32>
    %d = tv.exp_grad %a, %de : tensor<2x3xf32>
    tv.output "y", %y : tensor<2x3xf32>
    tv.output "d_a", %d : tensor<2x3xf32>
    tv.output "d_b", %db : tensor<2x3xf32>)", "a,b"},
  {"relu", R"(%x = tv.input "x" : tensor<6xf32>
    %dy = tv.input "dy" : tensor<6xf32>
    %y = tv.relu %x : tensor<6xf32>
    %d = tv.relu_grad %x, %dy : tensor<6xf32>
    tv.output "y", %y : tensor<6xf32>
    tv.output "d_x", %d : tensor<6xf32>)", "x"},
  {"softmax", R"(%x = tv.input "x" : tensor<2x3xf32>
    %dy = tv.input "dy" : tensor<2x3xf32>
    %y = tv.softmax %x dim 1 : tensor<2x3xf32>
    %d = tv.softmax_grad %y, %dy dim 1 : tensor<2x3xf32>
    tv.output "y", %y : tensor<2x3xf32>
    tv.output "d_x", %d : tensor<2x3xf32>)", "x"},
  {"layernorm", R"(%x = tv.input "x" : tensor<2x4xf32>
    %g = tv.input "g" : tensor<4xf32>
    %b = tv.input "b" : tensor<4xf32>
    %dy = tv.input "dy" : tensor<2x4xf32>
    %y = tv.layernorm %x, %g, %b eps 1.0e-05 : tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<2x4xf32>
    %dx, %dg, %db = tv.layernorm_grad %x, %g, %dy eps 1.0e-05 : tensor<2x4xf32>, tensor<4xf32>
    tv.output "y", %y : tensor<2x4xf32>
    tv.output "d_x", %dx : tensor<2x4xf32>
    tv.output "d_g", %dg : tensor<4xf32>
    tv.output "d_b", %db : tensor<4xf32>)", "x,g,b"},
  {"rmsnorm", R"(%x = tv.input "x" : tensor<2x4xf32>
    %w = tv.input "w" : tensor<4xf32>
    %dy = tv.input "dy" : tensor<2x4xf32>
    %y = tv.rmsnorm %x, %w eps 1.0e-05 : tensor<2x4xf32>, tensor<4xf32> -> tensor<2x4xf32>
    %dx, %dw = tv.rmsnorm_grad %x, %w, %dy eps 1.0e-05 : tensor<2x4xf32>, tensor<4xf32>
    tv.output "y", %y : tensor<2x4xf32>
    tv.output "d_x", %dx : tensor<2x4xf32>
    tv.output "d_w", %dw : tensor<4xf32>)", "x,w"},
  {"rotary", R"(%x = tv.input "x" : tensor<3x4xf32>
    %c = tv.input "c" : tensor<3x2xf32>
    %s = tv.input "s" : tensor<3x2xf32>
    %dy = tv.input "dy" : tensor<3x4xf32>
    %y = tv.rotary %x, %c, %s : tensor<3x4xf32>, tensor<3x2xf32>, tensor<3x2xf32> -> tensor<3x4xf32>
    %d = tv.rotary_grad %dy, %c, %s : tensor<3x4xf32>, tensor<3x2xf32>, tensor<3x2xf32> -> tensor<3x4xf32>
    tv.output "y", %y : tensor<3x4xf32>
    tv.output "d_x", %d : tensor<3x4xf32>)", "x"},
  {"linear", R"(%x = tv.input "x" : tensor<2x3x4xf32>
    %w = tv.input "w" : tensor<5x4xf32>
    %dy = tv.input "dy" : tensor<2x3x5xf32>
    %y = tv.linear %x, %w : (tensor<2x3x4xf32>, tensor<5x4xf32>) -> tensor<2x3x5xf32>
    %dx, %dw = tv.linear_grad %x, %w, %dy : tensor<2x3x4xf32>, tensor<5x4xf32>, tensor<2x3x5xf32>
    tv.output "y", %y : tensor<2x3x5xf32>
    tv.output "d_x", %dx : tensor<2x3x4xf32>
    tv.output "d_w", %dw : tensor<5x4xf32>)", "x,w"},
  {"embedding", R"(%ids = tv.input "ids" : tensor<5xi64>
    %t = tv.input "t" : tensor<4x3xf32>
    %dy = tv.input "dy" : tensor<5x3xf32>
    %y = tv.embedding %ids, %t : tensor<5xi64>, tensor<4x3xf32> -> tensor<5x3xf32>
    %d = tv.embedding_grad %ids, %dy : tensor<5xi64>, tensor<5x3xf32> -> tensor<4x3xf32>
    tv.output "y", %y : tensor<5x3xf32>
    tv.output "d_t", %d : tensor<4x3xf32>)", "t"},
  {"cross_entropy", R"(%l = tv.input "l" : tensor<3x4xf32>
    %lab = tv.input "lab" : tensor<3xi64>
    %dy = tv.input "dy" : tensor<f32>
    %y = tv.cross_entropy %l, %lab : tensor<3x4xf32>, tensor<3xi64> -> tensor<f32>
    %d = tv.cross_entropy_grad %l, %lab, %dy : tensor<3x4xf32>, tensor<3xi64>, tensor<f32> -> tensor<3x4xf32>
    tv.output "y", %y : tensor<f32>
    tv.output "d_l", %d : tensor<3x4xf32>)", "l"},
  // The shard of columns 1..4 of a 5-word vocabulary: labels 0 fall
  // outside it (ids are drawn from [0, 4)).
  {"target_logit", R"(%l = tv.input "l" : tensor<3x4xf32>
    %lab = tv.input "lab" : tensor<3xi64>
    %dy = tv.input "dy" : tensor<3xf32>
    %y = tv.target_logit %l, %lab {vocab_offset = 1} : tensor<3x4xf32>, tensor<3xi64> -> tensor<3xf32>
    %d = tv.target_logit_grad %lab, %dy {vocab_offset = 1} : tensor<3xi64>, tensor<3xf32> -> tensor<3x4xf32>
    tv.output "y", %y : tensor<3xf32>
    tv.output "d_l", %d : tensor<3x4xf32>)", "l"},
  {"mask", R"(%x = tv.input "x" : tensor<3x3xf32>
    %dy = tv.input "dy" : tensor<3x3xf32>
    %m = tv.causal_mask : tensor<3x3xi1>
    %a = tv.apply_mask %x, %m : tensor<3x3xf32>, tensor<3x3xi1> -> tensor<3x3xf32>
    %y = tv.softmax %a dim 1 : tensor<3x3xf32>
    %g = tv.softmax_grad %y, %dy dim 1 : tensor<3x3xf32>
    %d = tv.apply_mask_grad %g, %m : tensor<3x3xf32>, tensor<3x3xi1> -> tensor<3x3xf32>
    tv.output "y", %y : tensor<3x3xf32>
    tv.output "d_x", %d : tensor<3x3xf32>)", "x"},
  {"logsumexp", R"(%x = tv.input "x" : tensor<2x4xf32>
    %dy = tv.input "dy" : tensor<2xf32>
    %y = tv.logsumexp %x dims [1] : tensor<2x4xf32> -> tensor<2xf32>
    %d = tv.logsumexp_grad %x, %dy dims [1] : tensor<2x4xf32>, tensor<2xf32> -> tensor<2x4xf32>
    tv.output "y", %y : tensor<2xf32>
    tv.output "d_x", %d : tensor<2x4xf32>)", "x"},
  {"mean_max_slice", R"(%x = tv.input "x" : tensor<2x4xf32>
    %dy1 = tv.input "dy1" : tensor<2xf32>
    %dy2 = tv.input "dy2" : tensor<4xf32>
    %dy3 = tv.input "dy3" : tensor<2x2xf32>
    %m = tv.mean %x dims [1] : tensor<2x4xf32> -> tensor<2xf32>
    %x2 = tv.max %x dims [0] : tensor<2x4xf32> -> tensor<4xf32>
    %s = tv.slice %x start [0, 1] : tensor<2x4xf32> -> tensor<2x2xf32>
    %g1 = tv.mean_grad %dy1 dims [1] : tensor<2xf32> -> tensor<2x4xf32>
    %g2 = tv.max_grad %x, %dy2 dims [0] : tensor<2x4xf32>, tensor<4xf32> -> tensor<2x4xf32>
    %g3 = tv.slice_grad %dy3 start [0, 1] : tensor<2x2xf32> -> tensor<2x4xf32>
    %t = tv.add %g1, %g2 : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<2x4xf32>
    %d = tv.add %t, %g3 : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<2x4xf32>
    tv.output "y1", %m : tensor<2xf32>
    tv.output "y2", %x2 : tensor<4xf32>
    tv.output "y3", %s : tensor<2x2xf32>
    tv.output "d_x", %d : tensor<2x4xf32>)", "x"},
  {"moe", R"(%x = tv.input "x" : tensor<3x2xf32>
    %l = tv.input "l" : tensor<3x4xf32>
    %e = tv.input "e" : tensor<4x3x2xf32>
    %dy = tv.input "dy" : tensor<3x2xf32>
    %g = tv.topk_gate %l k 2 : tensor<3x4xf32>
    %d = tv.dispatch %x, %g : tensor<3x2xf32>, tensor<3x4xf32> -> tensor<4x3x2xf32>
    %h = tv.mul %d, %e : tensor<4x3x2xf32>, tensor<4x3x2xf32> -> tensor<4x3x2xf32>
    %y = tv.combine %h, %g : tensor<4x3x2xf32>, tensor<3x4xf32> -> tensor<3x2xf32>
    %dh, %dg = tv.combine_grad %h, %g, %dy : tensor<4x3x2xf32>, tensor<3x4xf32>, tensor<3x2xf32>
    %dd = tv.mul %dh, %e : tensor<4x3x2xf32>, tensor<4x3x2xf32> -> tensor<4x3x2xf32>
    %dx = tv.dispatch_grad %dd, %g : tensor<4x3x2xf32>, tensor<3x4xf32> -> tensor<3x2xf32>
    %dl = tv.topk_gate_grad %l, %dg k 2 : tensor<3x4xf32>
    tv.output "y", %y : tensor<3x2xf32>
    tv.output "d_x", %dx : tensor<3x2xf32>
    tv.output "d_l", %dl : tensor<3x4xf32>)", "x,l"},
  {"moe_routed_experts", R"(%x = tv.input "x" : tensor<3x4xf32>
    %r = tv.input "r" : tensor<8x4xf32>
    %w1 = tv.input "w1" : tensor<4x2x4xf32>
    %w3 = tv.input "w3" : tensor<4x2x4xf32>
    %w2 = tv.input "w2" : tensor<4x4x2xf32>
    %dy = tv.input "dy" : tensor<3x4xf32>
    %wt, %idx = tv.moe_gate %x, %r sigmoid k 2 groups 4 keep 2 scale 2.5 : tensor<3x4xf32>, tensor<8x4xf32> -> tensor<3x2xf32>, tensor<3x2xi64>
    %y = tv.moe_gmm %x, %idx, %wt, %w1, %w3, %w2 experts from 2 : tensor<3x4xf32>, tensor<3x2xi64>, tensor<3x2xf32>, tensor<4x2x4xf32>, tensor<4x2x4xf32>, tensor<4x4x2xf32> -> tensor<3x4xf32>
    %dx1, %dwt, %dw1, %dw3, %dw2 = tv.moe_gmm_grad %dy, %x, %idx, %wt, %w1, %w3, %w2 experts from 2 : tensor<3x4xf32>, tensor<3x2xi64>, tensor<3x2xf32>, tensor<4x2x4xf32>, tensor<4x2x4xf32>, tensor<4x4x2xf32>
    %dx2, %dr = tv.moe_gate_grad %x, %r, %dwt sigmoid k 2 groups 4 keep 2 scale 2.5 : tensor<3x4xf32>, tensor<8x4xf32>, tensor<3x2xf32>
    %dx = tv.add %dx1, %dx2 : tensor<3x4xf32>, tensor<3x4xf32> -> tensor<3x4xf32>
    tv.output "y", %y : tensor<3x4xf32>
    tv.output "d_x", %dx : tensor<3x4xf32>
    tv.output "d_r", %dr : tensor<8x4xf32>
    tv.output "d_w1", %dw1 : tensor<4x2x4xf32>
    tv.output "d_w3", %dw3 : tensor<4x2x4xf32>
    tv.output "d_w2", %dw2 : tensor<4x4x2xf32>)", "x,r,w1,w3,w2"},
  {"moe_softmax_router", R"(%x = tv.input "x" : tensor<3x4xf32>
    %r = tv.input "r" : tensor<6x4xf32>
    %dy = tv.input "dy" : tensor<3x2xf32>
    %y, %idx = tv.moe_gate %x, %r softmax k 2 groups 3 keep 2 scale 1.5 : tensor<3x4xf32>, tensor<6x4xf32> -> tensor<3x2xf32>, tensor<3x2xi64>
    %dx, %dr = tv.moe_gate_grad %x, %r, %dy softmax k 2 groups 3 keep 2 scale 1.5 : tensor<3x4xf32>, tensor<6x4xf32>, tensor<3x2xf32>
    tv.output "y", %y : tensor<3x2xf32>
    tv.output "d_x", %dx : tensor<3x4xf32>
    tv.output "d_r", %dr : tensor<6x4xf32>)", "x,r"},
};
// clang-format on

double lossOf(SpecOp spec, const Inputs &in) {
  RunState<double> st = runConcrete(spec, in);
  // L = sum over outputs y* of dy* . y* (dy for y, dyK for yK).
  double l = 0;
  for (auto &[key, t] : st.named) {
    const std::string &name = key.second;
    if (name.rfind("y", 0) != 0)
      continue;
    std::string dyName = "dy" + name.substr(1);
    const Tensor<double> &dy = in.at(dyName);
    for (size_t i = 0; i < t.data.size(); ++i)
      l += dy.data[i] * t.data[i];
  }
  return l;
}
} // namespace

class BackwardIsVjp : public ::testing::TestWithParam<VjpCase> {};

TEST_P(BackwardIsVjp, MatchesFiniteDifferences) {
  Program p(GetParam().body);
  ASSERT_TRUE(p.module) << "does not parse";
  std::mt19937_64 rng(7);
  SmallVector<StringRef> wrt;
  StringRef(GetParam().wrt).split(wrt, ',');
  for (int trial = 0; trial < 3; ++trial) {
    Inputs in = randomInputs(p.spec, rng);
    RunState<double> st = runConcrete(p.spec, in);
    for (StringRef x : wrt) {
      const Tensor<double> *grad = st.lookupNamed(-1, ("d_" + x).str());
      ASSERT_TRUE(grad) << "no d_" << x.str();
      for (size_t i = 0; i < in[x.str()].data.size(); ++i) {
        const double h = 1e-6;
        Inputs plus = in, minus = in;
        plus[x.str()].data[i] += h;
        minus[x.str()].data[i] -= h;
        double numeric = (lossOf(p.spec, plus) - lossOf(p.spec, minus)) / (2 * h);
        EXPECT_TRUE(near(grad->data[i], numeric, 1e-5))
            << GetParam().name << ": d" << x.str() << "[" << i << "] = "
            << grad->data[i] << ", finite differences " << numeric;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllGrads, BackwardIsVjp, ::testing::ValuesIn(kVjps),
                         [](const auto &info) { return info.param.name; });

// The router's selection: group-limited top-k, descending, lower index first.
TEST(MoeRoute, GroupLimitedTopK) {
  // Four groups of two; group maxima 0.9, 0.8, 0.95, 0.1: groups 2 and 0 are
  // kept, so 0.85 (group 1) is not selectable although it is the third
  // largest score.
  std::vector<double> row = {0.9, 0.2, 0.85, 0.8, 0.95, 0.3, 0.1, 0.05};
  auto slot = [&](int64_t k, int64_t j, int64_t groups, int64_t keep) {
    return sym::evalFn(sym::Fn::MoeRoute, row, {k, j, groups, keep});
  };
  EXPECT_EQ(slot(3, 0, 4, 2), 4);
  EXPECT_EQ(slot(3, 1, 4, 2), 0);
  EXPECT_EQ(slot(3, 2, 4, 2), 5);
  // Without group limits the third is expert 2.
  EXPECT_EQ(slot(3, 2, 1, 1), 2);
  // Ties go to the lower index.
  std::vector<double> tie = {0.5, 0.5, 0.5, 0.5};
  EXPECT_EQ(sym::evalFn(sym::Fn::MoeRoute, tie, {2, 0, 1, 1}), 0);
  EXPECT_EQ(sym::evalFn(sym::Fn::MoeRoute, tie, {2, 1, 1, 1}), 1);
}

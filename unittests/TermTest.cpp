//===- TermTest.cpp - normalization of symbolic terms ---------------------===//
#include "TrainVerify/Semantics/Term.h"

#include "gtest/gtest.h"
#include <cmath>
#include <random>
#include <set>

using namespace mlir::tv::sym;

namespace {
struct TermFixture : ::testing::Test {
  TermContext c;
  TermId a = c.var("a"), b = c.var("b"), x = c.var("x");
};
} // namespace

TEST_F(TermFixture, RingLawsNormalize) {
  EXPECT_EQ(c.add(a, b), c.add(b, a));
  EXPECT_EQ(c.mul(a, b), c.mul(b, a));
  EXPECT_EQ(c.mul(c.add(a, b), x), c.add(c.mul(a, x), c.mul(b, x)));
  TermId sq = c.mul(c.add(a, b), c.add(a, b));
  TermId expanded = c.add(c.add(c.mul(a, a), c.scale(c.mul(a, b), Rat(2))),
                          c.mul(b, b));
  EXPECT_EQ(sq, expanded);
  EXPECT_EQ(c.sub(a, a), c.zero());
  EXPECT_NE(c.add(a, b), c.add(a, a));
}

TEST_F(TermFixture, ExactRationals) {
  TermId half = c.scale(a, Rat::fromDouble(0.5));
  EXPECT_EQ(c.add(half, half), a);
  // 1/3 is not a double, but integer division by 3 is exact.
  TermId third = c.scale(a, Rat(llvm::DynamicAPInt(1), llvm::DynamicAPInt(3)));
  EXPECT_EQ(c.add(c.add(third, third), third), a);
  EXPECT_NE(c.scale(a, Rat(2)), c.scale(a, Rat(3)));
}

// A program's constants are read as the simplest fraction that rounds to
// them; every reading rounds back to the same double (what the concrete
// interpreter computes with).
TEST_F(TermFixture, ConstantsAreTheirSimplestFraction) {
  auto frac = [](int64_t n, int64_t d) {
    return Rat(llvm::DynamicAPInt(n), llvm::DynamicAPInt(d));
  };
  EXPECT_EQ(Rat::fromConstant(1.0 / 12), frac(1, 12));
  EXPECT_EQ(Rat::fromConstant(-1.0 / 3), frac(-1, 3));
  EXPECT_EQ(Rat::fromConstant(0.1), frac(1, 10));
  EXPECT_EQ(Rat::fromConstant(0.5), frac(1, 2));
  EXPECT_EQ(Rat::fromConstant(3.0), Rat(3));
  EXPECT_EQ(Rat::fromConstant(1e-5), frac(1, 100000));
  // Exact readings differ from 1/12: the double is not 1/12.
  EXPECT_NE(Rat::fromDouble(1.0 / 12), frac(1, 12));
  // One ulp off is not 1/12 (a different constant, never proven equal).
  double off = std::nextafter(1.0 / 12, 1.0);
  EXPECT_NE(Rat::fromConstant(off), frac(1, 12));
  for (double v : {1.0 / 12, off, 0.35355339059327373, 1e-300, 6.02e23,
                   -2.5e-7, 1.0 / 4096}) {
    EXPECT_EQ(Rat::fromConstant(v).toDouble(), v) << v;
  }
}

TEST_F(TermFixture, InversesOfMonomials) {
  EXPECT_EQ(c.mul(a, c.inv(a)), c.one());
  EXPECT_EQ(c.div(c.mul(a, b), b), a);
  EXPECT_EQ(c.inv(c.scale(a, Rat(4))), c.scale(c.inv(a), Rat::fromDouble(0.25)));
  EXPECT_EQ(c.rsqrt(x), c.inv(c.sqrt(x)));
  // A sum's inverse is an atom: a/(a+b) + b/(a+b) is not folded to 1.
  TermId s = c.add(a, b);
  EXPECT_NE(c.add(c.div(a, s), c.div(b, s)), c.one());
  EXPECT_EQ(c.add(c.div(a, s), c.div(b, s)), c.mul(s, c.inv(s)));
}

TEST_F(TermFixture, UninterpretedCongruence) {
  EXPECT_EQ(c.exp(c.add(a, b)), c.exp(c.add(b, a)));
  EXPECT_NE(c.exp(a), c.exp(b));
  EXPECT_EQ(c.exp(c.negInf()), c.zero());
  EXPECT_EQ(c.powInt(a, 3), c.mul(a, c.mul(a, a)));
  EXPECT_NE(c.powInt(a, 2), c.powInt(a, 3));
}

TEST_F(TermFixture, MaxIsAssociativeCommutativeIdempotent) {
  EXPECT_EQ(c.max({c.max({a, b}), x}), c.max({x, b, a}));
  EXPECT_EQ(c.max({a, a}), a);
}

TEST_F(TermFixture, SelectWithConstantIndex) {
  TermId idx = c.constant(Rat(5));
  EXPECT_EQ(c.select(idx, 4, {a, b}), b);
  EXPECT_EQ(c.select(idx, 0, {a, b}), c.zero());
  TermId id = c.var("id", /*isInt=*/true);
  EXPECT_NE(c.select(id, 0, {a, b}), c.zero());
}

TEST_F(TermFixture, EvaluatorAgreesWithDirectComputation) {
  // (a + b)^2 * exp(x) / (a - b), with a=1.5, b=-0.25, x=0.3.
  TermId t = c.div(c.mul(c.powInt(c.add(a, b), 2), c.exp(x)), c.sub(a, b));
  TermEvaluator ev(c, {1.5, -0.25, 0.3});
  double expected = std::pow(1.25, 2) * std::exp(0.3) / 1.75;
  EXPECT_NEAR(ev.eval(t), expected, 1e-12);
}

TEST_F(TermFixture, InterningIsStableOverManyTerms) {
  // Many distinct polynomials (the index chains equal hashes); building each
  // again must find the same id, and different ones must stay different.
  std::vector<TermId> first;
  for (int i = 0; i < 2000; ++i)
    first.push_back(c.add(c.scale(a, Rat(i)), c.mul(b, c.constant(i % 7))));
  size_t terms = c.numTerms();
  for (int i = 0; i < 2000; ++i)
    EXPECT_EQ(c.add(c.scale(a, Rat(i)), c.mul(b, c.constant(i % 7))),
              first[i]);
  EXPECT_EQ(c.numTerms(), terms);
  std::set<TermId> distinct(first.begin(), first.end());
  EXPECT_EQ(distinct.size(), first.size());
  EXPECT_GT(c.footprint(), 0u);
}

// The exp / log facts of an online (max-subtracted) softmax: each
// rewritten term equals the plain one on random points, and the rewrites
// make the two sides the same term.
TEST_F(TermFixture, ExpOfMaxSubtractedRowsNormalize) {
  TermId y = c.var("y");
  TermId m = c.max({a, b, x});
  // exp(a - m) = exp(a) * exp(m)^-1; the two softmaxes are one term.
  TermId ea = c.exp(c.sub(a, m)), eb = c.exp(c.sub(b, m)),
         ex = c.exp(c.sub(x, m));
  TermId sum = c.add(c.add(ea, eb), ex);
  TermId plain = c.add(c.add(c.exp(a), c.exp(b)), c.exp(x));
  EXPECT_EQ(c.div(ea, sum), c.div(c.exp(a), plain));
  // log of the shifted sum plus the max is the plain log-sum-exp.
  EXPECT_EQ(c.add(c.log(sum), m), c.log(plain));
  // Rescaling a running sum: exp(m1 - m2) * sum(exp(. - m1)) = sum(exp(. - m2)).
  TermId m1 = c.max({a, b}), m2 = c.max({a, b, y});
  TermId run1 = c.add(c.exp(c.sub(a, m1)), c.exp(c.sub(b, m1)));
  TermId run2 = c.add(c.exp(c.sub(a, m2)), c.exp(c.sub(b, m2)));
  EXPECT_EQ(c.mul(c.exp(c.sub(m1, m2)), run1), run2);
  // log(exp(u)) = u; exp(log(S)) = S for a positive sum of exps S.
  EXPECT_EQ(c.log(c.exp(c.add(a, b))), c.add(a, b));
  EXPECT_EQ(c.exp(c.log(plain)), plain);
  // Terms that are not a max stay inside: exp(a + b) is not exp(a) exp(b)
  // in the normal form (both are correct; only maxima are split off).
  EXPECT_NE(c.exp(c.add(a, b)), c.mul(c.exp(a), c.exp(b)));
  // log of what is not provably positive is left alone.
  TermId notPositive = c.sub(c.exp(a), c.exp(b));
  EXPECT_EQ(c.log(notPositive), c.app(Fn::Log, {notPositive}));
  EXPECT_EQ(c.exp(c.zero()), c.one());

  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> dist(-3, 3);
  for (int i = 0; i < 20; ++i) {
    std::vector<double> v(c.numVars());
    for (double &d : v)
      d = dist(rng);
    TermEvaluator e(c, v);
    double va = v[0], vb = v[1], vx = v[2];
    double mx = std::max({va, vb, vx});
    double direct = std::exp(va - mx) /
                    (std::exp(va - mx) + std::exp(vb - mx) + std::exp(vx - mx));
    EXPECT_NEAR(e.eval(c.div(ea, sum)), direct, 1e-12);
    double lse = std::log(std::exp(va) + std::exp(vb) + std::exp(vx));
    EXPECT_NEAR(e.eval(c.add(c.log(sum), m)), lse, 1e-12);
    EXPECT_NEAR(e.eval(c.log(c.exp(c.add(a, b)))), va + vb, 1e-12);
  }
}

// Masked entries (-inf: a padded vocabulary column, a causal mask) in a
// max-subtracted softmax: exp(-inf - m) is 0 and -inf never wins a max, so
// the masked row's softmax is the softmax of its real entries; the
// evaluator (which computes with the real functions) agrees.
TEST_F(TermFixture, MaskedEntriesLeaveSoftmax) {
  TermId inf = c.negInf();
  EXPECT_EQ(c.max({a, inf, b}), c.max({a, b}));
  EXPECT_EQ(c.max({inf, a}), a);
  EXPECT_EQ(c.max({inf, inf}), inf);
  TermId m = c.max({a, b, inf});
  EXPECT_EQ(c.exp(c.sub(inf, m)), c.zero());
  EXPECT_EQ(c.exp(inf), c.zero());
  // -inf twice is -inf; +inf, or -inf times a term, is not rewritten.
  EXPECT_EQ(c.exp(c.add(inf, inf)), c.zero());
  EXPECT_NE(c.exp(c.sub(a, inf)), c.zero());
  EXPECT_NE(c.exp(c.mul(inf, a)), c.zero());
  TermId sum = c.add(c.add(c.exp(c.sub(a, m)), c.exp(c.sub(b, m))),
                     c.exp(c.sub(inf, m)));
  TermId plain = c.add(c.exp(a), c.exp(b));
  EXPECT_EQ(c.div(c.exp(c.sub(a, m)), sum), c.div(c.exp(a), plain));
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> dist(-3, 3);
  for (int i = 0; i < 20; ++i) {
    std::vector<double> v(c.numVars());
    for (double &d : v)
      d = dist(rng);
    TermEvaluator e(c, v);
    double va = v[0], vb = v[1];
    double mx = std::max({va, vb, (double)-INFINITY});
    double direct = std::exp(va - mx) / (std::exp(va - mx) +
                                         std::exp(vb - mx) +
                                         std::exp(-INFINITY - mx));
    EXPECT_NEAR(e.eval(c.div(c.exp(c.sub(a, m)), sum)), direct, 1e-12);
    EXPECT_NEAR(e.eval(m), mx, 0);
  }
}

// Flash attention's backward forms D = rowsum(dO o O) from the saved
// output where the textbook softmax backward has rowsum(dP o P); with O
// the online softmax's normalized output (running max m, sum l, lse = m +
// log l) and P_j = exp(s_j - lse), both are one term, and the evaluator
// agrees with direct computation.
TEST_F(TermFixture, FlashBackwardRowsumIsTheSoftmaxOne) {
  TermId s0 = a, s1 = b, s2 = x;
  TermId v0 = c.var("v0"), v1 = c.var("v1"), v2 = c.var("v2");
  TermId g = c.var("g"); // dO (one head dimension)
  // Two blocks: {s0, s1} then {s2}, rescaled by exp(m1 - m2).
  TermId m1 = c.max({s0, s1}), m2 = c.max({m1, s2});
  TermId l1 = c.add(c.exp(c.sub(s0, m1)), c.exp(c.sub(s1, m1)));
  TermId o1 = c.add(c.mul(c.exp(c.sub(s0, m1)), v0),
                    c.mul(c.exp(c.sub(s1, m1)), v1));
  TermId alpha = c.exp(c.sub(m1, m2));
  TermId l2 = c.add(c.mul(alpha, l1), c.exp(c.sub(s2, m2)));
  TermId o2 = c.add(c.mul(alpha, o1), c.mul(c.exp(c.sub(s2, m2)), v2));
  TermId out = c.div(o2, l2);
  TermId lse = c.add(m2, c.log(l2));
  auto prob = [&](TermId sj) { return c.exp(c.sub(sj, lse)); };
  TermId flashD = c.mul(g, out);
  TermId textbookD = c.add(c.add(c.mul(prob(s0), c.mul(g, v0)),
                                 c.mul(prob(s1), c.mul(g, v1))),
                           c.mul(prob(s2), c.mul(g, v2)));
  EXPECT_EQ(flashD, textbookD);
  // The plain softmax output, as the spec computes it.
  TermId q = c.add(c.add(c.exp(s0), c.exp(s1)), c.exp(s2));
  TermId plain = c.div(
      c.add(c.add(c.mul(c.exp(s0), v0), c.mul(c.exp(s1), v1)),
            c.mul(c.exp(s2), v2)),
      q);
  EXPECT_EQ(out, plain);
  std::mt19937_64 rng(9);
  std::uniform_real_distribution<double> dist(-3, 3);
  for (int i = 0; i < 20; ++i) {
    std::vector<double> val(c.numVars());
    for (double &d : val)
      d = dist(rng);
    TermEvaluator e(c, val);
    double S[3] = {val[0], val[1], val[2]}, V[3] = {e.eval(v0), e.eval(v1),
                                                    e.eval(v2)};
    double den = 0, num = 0;
    for (int j = 0; j < 3; ++j) {
      den += std::exp(S[j]);
      num += std::exp(S[j]) * V[j];
    }
    EXPECT_NEAR(e.eval(out), num / den, 1e-12);
    EXPECT_NEAR(e.eval(flashD), e.eval(g) * num / den, 1e-12);
  }
}

// A product of two large sums expands inside one call: past the context's
// byte limit it stops, gives an opaque term and says so, instead of
// growing the store without bound (a stage over its memory budget is then
// unknown, not the process out of memory).
TEST(TermLimits, ProductPastTheByteLimitStops) {
  TermContext c;
  TermId s1 = c.zero(), s2 = c.zero();
  for (int i = 0; i < 300; ++i) {
    s1 = c.add(s1, c.var("a" + std::to_string(i)));
    s2 = c.add(s2, c.var("b" + std::to_string(i)));
  }
  c.byteLimit = c.footprint() + (1 << 16);
  TermId p = c.mul(s1, s2);
  EXPECT_TRUE(c.exceeded);
  EXPECT_LT(c.footprint(), c.byteLimit + (size_t(1) << 20));
  EXPECT_NE(p, c.mul(s1, s2)); // opaque: equal to nothing
  TermContext d;
  TermId t1 = d.add(d.var("x"), d.var("y"));
  d.byteLimit = d.footprint() + (1 << 20);
  d.mul(t1, t1);
  EXPECT_FALSE(d.exceeded);
}

//===----------------------------------------------------------------------===//
// Integers (docs/integers.md)
//===----------------------------------------------------------------------===//

TEST(IntegerSemantics, TwosComplementCornerCases) {
  EXPECT_EQ(wrapSigned(255, 8), -1);
  EXPECT_EQ(wrapSigned(128, 8), -128);
  EXPECT_EQ(wrapSigned(-129, 8), 127);
  EXPECT_EQ(wrapSigned(INT64_MIN, 64), INT64_MIN);
  // Signed and unsigned order differ on negative values.
  EXPECT_EQ(evalIntFn(Fn::IMaxS, 32, {-1, 1}), 1);
  EXPECT_EQ(evalIntFn(Fn::IMaxU, 32, {-1, 1}), -1);
  EXPECT_EQ(evalIntFn(Fn::IMinU, 8, {-128, 127}), 127);
  EXPECT_EQ(evalIntFn(Fn::IMinS, 8, {-128, 127}), -128);
  // Arguments are read modulo 2^n.
  EXPECT_EQ(evalIntFn(Fn::IAnd, 8, {256 + 12, 10}), 8);
  EXPECT_EQ(evalIntFn(Fn::IXor, 8, {0xF0, 0xFF}), 0x0F);
  EXPECT_EQ(evalIntFn(Fn::IOr, 8, {0x80, 0x01}), -127);
  // Shifts: overflow wraps, arithmetic keeps the sign, logical does not;
  // an amount of n or more gives 0 (the sign for an arithmetic shift).
  EXPECT_EQ(evalIntFn(Fn::IShl, 8, {64, 2}), 0);
  EXPECT_EQ(evalIntFn(Fn::IShl, 8, {3, 2}), 12);
  EXPECT_EQ(evalIntFn(Fn::IShrS, 8, {-8, 1}), -4);
  EXPECT_EQ(evalIntFn(Fn::IShrU, 8, {-8, 1}), 124);
  EXPECT_EQ(evalIntFn(Fn::IShl, 8, {1, 8}), 0);
  EXPECT_EQ(evalIntFn(Fn::IShrS, 8, {-5, 9}), -1);
  EXPECT_EQ(evalIntFn(Fn::IShrU, 8, {-5, 200}), 0);
}

TEST_F(TermFixture, IntegerOperationsNormalize) {
  TermId p = c.var("p", true), q = c.var("q", true), r = c.var("r", true);
  // Associative and commutative: a split reduction equals the whole one.
  EXPECT_EQ(c.intOp(Fn::IAnd, 32, {c.intOp(Fn::IAnd, 32, {p, q}), r}),
            c.intOp(Fn::IAnd, 32, {r, p, q}));
  EXPECT_EQ(c.intOp(Fn::IMaxU, 16, {q, c.intOp(Fn::IMaxU, 16, {r, p})}),
            c.intOp(Fn::IMaxU, 16, {p, q, r}));
  // Idempotent ones drop duplicates; xor cancels them.
  EXPECT_EQ(c.intOp(Fn::IOr, 8, {p, q, p}), c.intOp(Fn::IOr, 8, {p, q}));
  EXPECT_EQ(c.intOp(Fn::IXor, 8, {p, q, p}), q);
  EXPECT_EQ(c.intOp(Fn::IXor, 8, {p, p}), c.zero());
  // Identities and absorbing values, per width.
  EXPECT_EQ(c.intOp(Fn::IAnd, 8, {p, c.constant(Rat(-1))}), p);
  EXPECT_EQ(c.intOp(Fn::IAnd, 8, {p, c.constant(Rat(255))}), p);
  EXPECT_EQ(c.intOp(Fn::IAnd, 8, {p, c.zero()}), c.zero());
  EXPECT_EQ(c.intOp(Fn::IMaxS, 8, {p, c.constant(Rat(-128))}), p);
  EXPECT_EQ(c.intOp(Fn::IMaxS, 8, {p, c.constant(Rat(127))}),
            c.constant(Rat(127)));
  EXPECT_NE(c.intOp(Fn::IMaxS, 16, {p, c.constant(Rat(-128))}), p);
  // Different widths and different operations stay apart.
  EXPECT_NE(c.intOp(Fn::IAnd, 8, {p, q}), c.intOp(Fn::IAnd, 16, {p, q}));
  EXPECT_NE(c.intOp(Fn::IMaxS, 8, {p, q}), c.intOp(Fn::IMaxU, 8, {p, q}));
  EXPECT_NE(c.intOp(Fn::IAnd, 8, {p, q}), c.add(p, q));
  // Constants fold; shifts keep their order.
  EXPECT_EQ(c.intOp(Fn::IAnd, 8, {c.constant(Rat(12)), c.constant(Rat(10))}),
            c.constant(Rat(8)));
  EXPECT_NE(c.intOp(Fn::IShl, 8, {p, q}), c.intOp(Fn::IShl, 8, {q, p}));
  EXPECT_EQ(c.intOp(Fn::IShl, 8, {c.constant(Rat(3)), c.constant(Rat(2))}),
            c.constant(Rat(12)));
}

TEST_F(TermFixture, IntegerTermsEvaluateAsTheirOperations) {
  TermId p = c.var("p", true), q = c.var("q", true);
  TermId t = c.add(c.intOp(Fn::IAnd, 8, {p, q}), c.intOp(Fn::IOr, 8, {p, q}));
  // (p & q) + (p | q) = p + q modulo 2^8.
  std::mt19937_64 rng(7);
  for (int i = 0; i < 50; ++i) {
    double pv = (double)(int64_t)(rng() % 256) - 128;
    double qv = (double)(int64_t)(rng() % 256) - 128;
    TermEvaluator ev(c, {0, 0, 0, pv, qv});
    EXPECT_EQ(wrapSigned((int64_t)ev.eval(t), 8),
              wrapSigned((int64_t)(pv + qv), 8));
  }
}

// The one-merge sum (an all-reduce over many ranks) is the chain of
// additions: the same interned term, and the same value on the concrete
// evaluator; terms that cancel vanish, zeros are skipped.
TEST_F(TermFixture, SumOfManyIsTheChainOfAdditions) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> coef(-3, 3), pick(0, 2);
  TermId vars[] = {a, b, x};
  std::vector<TermId> terms;
  for (int i = 0; i < 40; ++i) {
    TermId t = c.zero();
    for (int k = 0; k < 4; ++k)
      t = c.add(t, c.scale(c.mul(vars[pick(rng)], vars[pick(rng)]),
                           Rat(coef(rng))));
    terms.push_back(i % 7 == 0 ? c.zero() : t);
  }
  TermId chain = c.zero();
  for (TermId t : terms)
    chain = c.add(chain, t);
  TermId merged = c.sum(terms);
  EXPECT_EQ(merged, chain);
  TermEvaluator ev(c, {0.7, -1.1, 2.3});
  double direct = 0;
  for (TermId t : terms)
    direct += ev.eval(t);
  EXPECT_NEAR(ev.eval(merged), direct, 1e-9);
  EXPECT_EQ(c.sum({a, c.neg(a), b, c.neg(b)}), c.zero());
  EXPECT_EQ(c.sum({}), c.zero());
  EXPECT_EQ(c.sum({c.zero(), a}), a);
}

//===- Term.h - hash-consed real terms in polynomial normal form -*- C++ -*-===//
//
// Every real-valued term is kept as a polynomial with exact rational
// coefficients over *atoms*: variables, applications of uninterpreted (or
// partly interpreted) functions to normalized arguments, inverses of
// non-monomial polynomials, max, and index selections. Terms are interned, so
// two terms with the same normal form have the same id; equal ids are a proof
// of equality in the theory of commutative rings with congruence. Different
// ids prove nothing: such terms go to the solver.
//
//===----------------------------------------------------------------------===//
#ifndef TRAINVERIFY_VERIFY_TERM_H
#define TRAINVERIFY_VERIFY_TERM_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DynamicAPInt.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace mlir::tv::sym {

/// An exact rational number n/d, d > 0, gcd(n, d) = 1.
struct Rat {
  llvm::DynamicAPInt num{0}, den{1};
  Rat() = default;
  Rat(int64_t n) : num(n), den(1) {}
  Rat(llvm::DynamicAPInt n, llvm::DynamicAPInt d);
  /// The exact value of a finite double.
  static Rat fromDouble(double v);
  /// The value a constant of a program denotes: the simplest fraction
  /// (denominator at most 2^32) whose correctly rounded double is `v` — 1/12
  /// for 0.08333333333333333 — else the exact value (docs/soundness.md,
  /// "Constants").
  static Rat fromConstant(double v);
  bool isZero() const { return num == 0; }
  bool isOne() const { return num == 1 && den == 1; }
  double toDouble() const;
  std::string toString() const;
  Rat operator+(const Rat &o) const;
  Rat operator*(const Rat &o) const;
  Rat operator-() const { return Rat(-num, den); }
  Rat inverse() const;
  bool operator==(const Rat &o) const { return num == o.num && den == o.den; }
  bool operator!=(const Rat &o) const { return !(*this == o); }
};

/// Functions of the term language. Those marked "uninterpreted" are only
/// known to be functions (congruence); the concrete interpreter gives them
/// their real meaning.
enum class Fn : uint8_t {
  Exp,       // uninterpreted
  Log,       // uninterpreted
  Sqrt,      // uninterpreted; rsqrt(x) is sqrt(x)^-1
  Sigmoid,   // uninterpreted
  Gelu,      // uninterpreted
  GeluGrad,  // uninterpreted: d gelu / dx
  Relu,      // uninterpreted
  Step,      // uninterpreted: x > 0 ? 1 : 0
  Tanh,      // uninterpreted
  Abs,       // uninterpreted: |x| (any function of x, see docs/shard.md)
  PowReal,   // uninterpreted: x ** c for non-integer c (c is the 2nd arg)
  NonZero,   // uninterpreted: x != 0 ? 1 : 0
  TopKGate,  // uninterpreted: aux = {k, e}; args = logits row
  MaxShare,  // uninterpreted: aux = {i}; args = row; 1/#argmax if row[i] max
  MoeRoute,  // uninterpreted: aux = {k, j, groups, topk_groups}; args = score
             // row; the expert index in slot j of the group-limited top-k
  // Integer operations on n-bit two's complement values (aux = {n}),
  // interpreted: their arguments are integers read modulo 2^n, their result
  // is the signed representative in [-2^(n-1), 2^(n-1)). The first seven
  // are associative and commutative (n-ary, arguments sorted); the shifts
  // take (value, amount), an amount outside [0, n) giving 0 (docs/integers.md).
  IAnd,
  IOr,
  IXor,
  IMaxS,
  IMinS,
  IMaxU,
  IMinU,
  IShl,
  IShrS,
  IShrU,
};
llvm::StringRef fnName(Fn f);
/// Whether `f` is an integer operation (aux = {width}).
inline bool isIntFn(Fn f) { return f >= Fn::IAnd; }
/// Whether the integer operation `f` is associative and commutative.
inline bool isAcIntFn(Fn f) { return f >= Fn::IAnd && f <= Fn::IMinU; }
/// `v` modulo 2^width as a signed representative (width 1..64).
int64_t wrapSigned(int64_t v, unsigned width);
/// The identity of the associative integer operation `f` at `width`
/// (`x & -1`, `x | 0`, `maxsi(x, -2^(width-1))`, ...), if it has one.
std::optional<int64_t> intIdentity(Fn f, unsigned width);
/// The value that absorbs every argument of `f` (`x & 0`), if any.
std::optional<int64_t> intAbsorbing(Fn f, unsigned width);
/// The integer operation `f` on width-bit values (each argument read
/// modulo 2^width); the result's signed representative.
int64_t evalIntFn(Fn f, unsigned width, llvm::ArrayRef<int64_t> args);

enum class AtomKind : uint8_t { Var, App, Inv, Max, Select, NegInf, Undef };

using TermId = uint32_t;
using AtomId = uint32_t;
using MonoId = uint32_t;

struct Atom {
  AtomKind kind;
  Fn fn = Fn::Exp;
  llvm::SmallVector<int64_t, 2> aux; // Var: {id}; App: fn params; Select: {offset}
  llvm::SmallVector<TermId, 4> args;
  bool operator==(const Atom &o) const {
    return kind == o.kind && fn == o.fn && aux == o.aux && args == o.args;
  }
};

/// A product of atoms with integer exponents, sorted by atom id.
using Mono = llvm::SmallVector<std::pair<AtomId, int32_t>, 4>;
/// A polynomial: sorted (monomial, non-zero coefficient) pairs.
using Poly = std::vector<std::pair<MonoId, Rat>>;

struct VarInfo {
  std::string name;
  bool isInt = false;
  bool isBool = false; // an integer that is 0 or 1 (mask elements)
};

class TermContext {
public:
  TermContext();

  TermId zero() const { return zeroId; }
  TermId one() const { return oneId; }
  TermId constant(const Rat &c);
  TermId constant(double c) { return constant(Rat::fromConstant(c)); }
  /// A fresh variable; `isInt` variables hold integers (token ids, labels),
  /// `isBool` ones 0 or 1 (masks).
  TermId var(llvm::StringRef name, bool isInt = false, bool isBool = false);

  TermId add(TermId a, TermId b);
  /// The sum of `terms` in one merge: linear in their total size, where
  /// adding them one by one is quadratic in their number (an all-reduce
  /// over hundreds of ranks).
  TermId sum(llvm::ArrayRef<TermId> terms);
  TermId sub(TermId a, TermId b) { return add(a, neg(b)); }
  TermId mul(TermId a, TermId b);
  TermId neg(TermId a) { return scale(a, Rat(-1)); }
  TermId scale(TermId a, const Rat &c);
  TermId inv(TermId a);
  TermId div(TermId a, TermId b) { return mul(a, inv(b)); }
  /// a ** n for an integer n (negative n divides).
  TermId powInt(TermId a, int64_t n);
  TermId app(Fn f, llvm::ArrayRef<TermId> args,
             llvm::ArrayRef<int64_t> aux = {});
  TermId max(llvm::ArrayRef<TermId> args);
  /// The integer operation `f` (isIntFn) of `width` bits: associative ones
  /// flattened, sorted and folded (idempotent duplicates dropped, equal
  /// xor arguments cancelled, constants combined, identities dropped).
  TermId intOp(Fn f, unsigned width, llvm::ArrayRef<TermId> args);
  /// values[index - offset] if that is in range, 0 otherwise.
  TermId select(TermId index, int64_t offset, llvm::ArrayRef<TermId> values);
  TermId negInf();
  TermId undef();

  // Specialized constructors with their algebraic facts
  // (docs/soundness.md, "exp and log").
  /// exp(a), with exp(x + c*m) = exp(x) * exp(m)^c split off for every term
  /// of `a` whose monomial is one max (an integer c), and exp(c*log(S)) =
  /// S^c for an S that is a positive sum of exp products.
  TermId exp(TermId a);
  /// log(a); for a positive sum of exp products, the exp factors common to
  /// every term leave the log: log(exp(x) * S) = x + log(S).
  TermId log(TermId a);
  TermId sqrt(TermId a) { return app(Fn::Sqrt, {a}); }
  TermId rsqrt(TermId a) { return inv(sqrt(a)); }

  // Inspection.
  const Poly &poly(TermId t) const { return polys[t]; }
  const Mono &mono(MonoId m) const { return monos[m]; }
  const Atom &atom(AtomId a) const { return atoms[a]; }
  const VarInfo &varInfo(int64_t v) const { return vars[v]; }
  size_t numVars() const { return vars.size(); }
  size_t numTerms() const { return polys.size(); }
  size_t numAtoms() const { return atoms.size(); }
  /// The term that is atom `a` alone.
  TermId atomTermOf(AtomId a) { return atomTerm(a); }
  /// Approximate bytes held by the interned terms (a stage's memory budget
  /// is checked against it).
  size_t footprint() const { return bytes; }
  /// Bytes a single operation may grow the store to: a product of two
  /// large sums expands inside one call, before any caller can check the
  /// footprint. Past it the operation gives an opaque term and `exceeded`
  /// is set (the stage is then over its budget, not the process out of
  /// memory).
  size_t byteLimit = SIZE_MAX;
  bool exceeded = false;
  bool isConstant(TermId t, Rat *value = nullptr) const;
  /// If `t` is exactly one atom with coefficient 1 and exponent 1.
  std::optional<AtomId> asAtom(TermId t) const;
  std::string toString(TermId t) const;

  /// Whether `t` is a sum of products of exp atoms (powers of any sign)
  /// with positive coefficients, hence positive.
  bool isExpPositive(TermId t) const;

private:
  /// The largest product of exp atoms dividing every term of `t` (each
  /// atom at its least exponent over the terms, absent counting as 0).
  Mono expGcd(TermId t) const;
  bool isExpAtom(AtomId a) const {
    return atoms[a].kind == AtomKind::App && atoms[a].fn == Fn::Exp;
  }
  TermId intern(Poly p);
  MonoId internMono(Mono m);
  AtomId internAtom(Atom a);
  TermId atomTerm(AtomId a);
  MonoId monoMul(MonoId a, MonoId b);

  struct PolyHash {
    size_t operator()(const Poly &p) const;
  };
  struct MonoHash {
    size_t operator()(const Mono &m) const;
  };
  struct AtomHash {
    size_t operator()(const Atom &a) const;
  };

  std::vector<Poly> polys;
  std::vector<Mono> monos;
  std::vector<Atom> atoms;
  std::vector<VarInfo> vars;
  /// Ids of interned values by hash, equal hashes chained: each value is
  /// stored once, in its vector (a map keyed by the value held a second
  /// copy, half of a large stage's memory).
  struct InternIndex {
    static constexpr uint32_t none = ~0u;
    llvm::DenseMap<uint64_t, uint32_t> head;
    std::vector<uint32_t> next; // by id; ids are dense and increasing
    static uint64_t slot(size_t h) {
      // DenseMap reserves the two largest keys.
      return h >= ~uint64_t(1) ? h - 2 : h;
    }
    template <typename Eq> uint32_t find(size_t h, Eq eq) const {
      auto it = head.find(slot(h));
      if (it == head.end())
        return none;
      for (uint32_t id = it->second; id != none; id = next[id])
        if (eq(id))
          return id;
      return none;
    }
    void insert(size_t h, uint32_t id) {
      next.resize(id + 1, none);
      auto [it, fresh] = head.try_emplace(slot(h), id);
      if (!fresh) {
        next[id] = it->second;
        it->second = id;
      }
    }
  };
  InternIndex polyIds, monoIds, atomIds;
  llvm::DenseMap<std::pair<MonoId, MonoId>, MonoId> monoMulCache;
  TermId zeroId, oneId;
  size_t bytes = 0;
  int64_t undefCount = 0;
};

/// Evaluates terms in double precision under an assignment of the variables,
/// giving uninterpreted functions their real meaning.
class TermEvaluator {
public:
  TermEvaluator(const TermContext &ctx, std::vector<double> varValues)
      : ctx(ctx), values(std::move(varValues)) {}
  double eval(TermId t);

private:
  double evalAtom(AtomId a);
  const TermContext &ctx;
  std::vector<double> values;
  llvm::DenseMap<TermId, double> termCache;
  llvm::DenseMap<AtomId, double> atomCache;
};

/// Real semantics of the uninterpreted functions (shared with the concrete
/// interpreter so that both sides agree).
double evalFn(Fn f, llvm::ArrayRef<double> args, llvm::ArrayRef<int64_t> aux);

} // namespace mlir::tv::sym

#endif

//===- Term.cpp - hash-consed real terms in polynomial normal form --------===//
#include "TrainVerify/Semantics/Term.h"

#include "llvm/ADT/Hashing.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/raw_ostream.h"
#include <cmath>
#include <limits>

using namespace mlir::tv::sym;
using llvm::DynamicAPInt;

//===----------------------------------------------------------------------===//
// Rat
//===----------------------------------------------------------------------===//

static DynamicAPInt absVal(const DynamicAPInt &x) { return x < 0 ? -x : x; }

Rat::Rat(DynamicAPInt n, DynamicAPInt d) : num(std::move(n)), den(std::move(d)) {
  if (den < 0) {
    num = -num;
    den = -den;
  }
  if (num == 0) {
    den = DynamicAPInt(1);
    return;
  }
  DynamicAPInt g = gcd(absVal(num), den);
  if (g != 1) {
    num /= g;
    den /= g;
  }
}

Rat Rat::fromDouble(double v) {
  if (v == 0 || !std::isfinite(v))
    return Rat(0);
  int exp;
  double mant = std::frexp(v, &exp); // v = mant * 2^exp, 0.5 <= |mant| < 1
  // 53 bits of mantissa as an integer.
  int64_t m = (int64_t)std::ldexp(mant, 53);
  exp -= 53;
  DynamicAPInt n(m), d(1);
  DynamicAPInt two(2);
  for (; exp > 0; --exp)
    n *= two;
  for (; exp < 0; ++exp)
    d *= two;
  return Rat(n, d);
}

Rat Rat::fromConstant(double v) {
  Rat exact = fromDouble(v);
  if (exact.den == 1 || !std::isfinite(v))
    return exact;
  // Convergents h/k of the continued fraction of |v|; the first whose
  // correctly rounded quotient is v (both parts below 2^53, so IEEE
  // division rounds the exact quotient) is the simplest such fraction.
  bool negative = exact.num < 0;
  DynamicAPInt n = absVal(exact.num), d = exact.den;
  // h/k is the last convergent, hPrev/kPrev the one before (h_{-1}/k_{-1}
  // = 1/0, h_{-2}/k_{-2} = 0/1).
  DynamicAPInt hPrev(0), h(1), kPrev(1), k(0);
  const DynamicAPInt limit(int64_t(1) << 32);
  const double target = std::fabs(v);
  while (d != 0) {
    DynamicAPInt a = n / d;
    DynamicAPInt r = n % d;
    DynamicAPInt hNext = a * h + hPrev, kNext = a * k + kPrev;
    hPrev = h, kPrev = k, h = hNext, k = kNext;
    n = d, d = r;
    if (k > limit || h > DynamicAPInt(int64_t(1) << 52))
      break;
    if ((double)int64_t(h) / (double)int64_t(k) == target)
      return Rat(negative ? -h : h, k);
  }
  return exact;
}

double Rat::toDouble() const {
  // Shift both parts right until they fit in 62 bits; the ratio keeps ~60
  // significant bits, far more than a double holds.
  DynamicAPInt n = num, d = den;
  const DynamicAPInt limit(int64_t(1) << 62);
  const DynamicAPInt two(2);
  int64_t exp2 = 0;
  while (absVal(n) >= limit) {
    n /= two;
    ++exp2;
  }
  while (d >= limit) {
    d /= two;
    --exp2;
  }
  if (d == 0)
    return num < 0 ? -INFINITY : INFINITY;
  return std::ldexp((double)(int64_t)n / (double)(int64_t)d, exp2);
}

std::string Rat::toString() const {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << num;
  if (den != 1)
    os << "/" << den;
  return s;
}

Rat Rat::operator+(const Rat &o) const {
  if (den == o.den)
    return Rat(num + o.num, den);
  return Rat(num * o.den + o.num * den, den * o.den);
}

Rat Rat::operator*(const Rat &o) const {
  return Rat(num * o.num, den * o.den);
}

Rat Rat::inverse() const { return Rat(den, num); }

//===----------------------------------------------------------------------===//
// Hashing
//===----------------------------------------------------------------------===//

size_t TermContext::PolyHash::operator()(const Poly &p) const {
  llvm::hash_code h = llvm::hash_value(p.size());
  for (auto &[m, c] : p)
    h = llvm::hash_combine(h, m, hash_value(c.num), hash_value(c.den));
  return h;
}
size_t TermContext::MonoHash::operator()(const Mono &m) const {
  llvm::hash_code h = llvm::hash_value(m.size());
  for (auto &[a, e] : m)
    h = llvm::hash_combine(h, a, e);
  return h;
}
size_t TermContext::AtomHash::operator()(const Atom &a) const {
  return llvm::hash_combine(
      (int)a.kind, (int)a.fn,
      llvm::hash_combine_range(a.aux.begin(), a.aux.end()),
      llvm::hash_combine_range(a.args.begin(), a.args.end()));
}

//===----------------------------------------------------------------------===//
// TermContext
//===----------------------------------------------------------------------===//

TermContext::TermContext() {
  internMono({}); // MonoId 0 is the empty product (the constant monomial).
  zeroId = intern({});
  oneId = intern({{0, Rat(1)}});
}

TermId TermContext::intern(Poly p) {
  size_t h = PolyHash()(p);
  uint32_t found = polyIds.find(h, [&](uint32_t id) { return polys[id] == p; });
  if (found != InternIndex::none)
    return found;
  TermId id = polys.size();
  // Counted as twice the vector's element and heap storage plus the index:
  // the terms are not all a stage holds (its tensors of term ids, large
  // rationals, the product cache grow with them), and with the store's own
  // bytes alone the budget let a one-rank-bug stage of DeepSeek-V3 671B
  // reach 18 GB. Twice is what the budget was calibrated with (decision 34).
  bytes += 2 * (sizeof(Poly) + p.size() * sizeof(Poly::value_type)) + 64;
  polys.push_back(std::move(p));
  polyIds.insert(h, id);
  return id;
}

MonoId TermContext::internMono(Mono m) {
  size_t h = MonoHash()(m);
  uint32_t found = monoIds.find(h, [&](uint32_t id) { return monos[id] == m; });
  if (found != InternIndex::none)
    return found;
  MonoId id = monos.size();
  bytes += 2 * (sizeof(Mono) + m.size() * sizeof(Mono::value_type)) + 64;
  monos.push_back(std::move(m));
  monoIds.insert(h, id);
  return id;
}

AtomId TermContext::internAtom(Atom a) {
  size_t h = AtomHash()(a);
  uint32_t found = atomIds.find(h, [&](uint32_t id) { return atoms[id] == a; });
  if (found != InternIndex::none)
    return found;
  AtomId id = atoms.size();
  // Selections and applications hold their arguments: a gather over n
  // values is n ids (large on MoE dispatch stages).
  bytes += 2 * (sizeof(Atom) + a.args.size() * sizeof(TermId) +
                a.aux.size() * sizeof(int64_t)) + 64;
  atoms.push_back(std::move(a));
  atomIds.insert(h, id);
  return id;
}

TermId TermContext::atomTerm(AtomId a) {
  return intern({{internMono({{a, 1}}), Rat(1)}});
}

TermId TermContext::constant(const Rat &c) {
  if (c.isZero())
    return zeroId;
  return intern({{0, c}});
}

TermId TermContext::var(llvm::StringRef name, bool isInt, bool isBool) {
  int64_t id = vars.size();
  vars.push_back({name.str(), isInt || isBool, isBool});
  Atom a{AtomKind::Var, Fn::Exp, {id}, {}};
  return atomTerm(internAtom(std::move(a)));
}

TermId TermContext::add(TermId a, TermId b) {
  if (a == zeroId)
    return b;
  if (b == zeroId)
    return a;
  const Poly &pa = polys[a], &pb = polys[b];
  Poly out;
  out.reserve(pa.size() + pb.size());
  size_t i = 0, j = 0;
  while (i < pa.size() || j < pb.size()) {
    if (j == pb.size() || (i < pa.size() && pa[i].first < pb[j].first)) {
      out.push_back(pa[i++]);
    } else if (i == pa.size() || pb[j].first < pa[i].first) {
      out.push_back(pb[j++]);
    } else {
      Rat c = pa[i].second + pb[j].second;
      if (!c.isZero())
        out.push_back({pa[i].first, c});
      ++i;
      ++j;
    }
  }
  return intern(std::move(out));
}

TermId TermContext::sum(llvm::ArrayRef<TermId> terms) {
  llvm::SmallVector<TermId> live;
  for (TermId t : terms)
    if (t != zeroId)
      live.push_back(t);
  if (live.empty())
    return zeroId;
  if (live.size() <= 2)
    return live.size() == 1 ? live[0] : add(live[0], live[1]);
  Poly all;
  size_t n = 0;
  for (TermId t : live)
    n += polys[t].size();
  all.reserve(n);
  for (TermId t : live)
    all.insert(all.end(), polys[t].begin(), polys[t].end());
  std::stable_sort(all.begin(), all.end(), [](const auto &x, const auto &y) {
    return x.first < y.first;
  });
  Poly out;
  out.reserve(all.size());
  for (size_t i = 0; i < all.size();) {
    Rat c = all[i].second;
    size_t j = i + 1;
    for (; j < all.size() && all[j].first == all[i].first; ++j)
      c = c + all[j].second;
    if (!c.isZero())
      out.push_back({all[i].first, c});
    i = j;
  }
  return intern(std::move(out));
}

TermId TermContext::scale(TermId a, const Rat &c) {
  if (c.isZero() || a == zeroId)
    return zeroId;
  if (c.isOne())
    return a;
  Poly out = polys[a];
  for (auto &term : out)
    term.second = term.second * c;
  return intern(std::move(out));
}

MonoId TermContext::monoMul(MonoId a, MonoId b) {
  if (a == 0)
    return b;
  if (b == 0)
    return a;
  auto key = a < b ? std::make_pair(a, b) : std::make_pair(b, a);
  auto it = monoMulCache.find(key);
  if (it != monoMulCache.end())
    return it->second;
  const Mono &ma = monos[a], &mb = monos[b];
  Mono out;
  size_t i = 0, j = 0;
  while (i < ma.size() || j < mb.size()) {
    if (j == mb.size() || (i < ma.size() && ma[i].first < mb[j].first)) {
      out.push_back(ma[i++]);
    } else if (i == ma.size() || mb[j].first < ma[i].first) {
      out.push_back(mb[j++]);
    } else {
      int32_t e = ma[i].second + mb[j].second;
      if (e)
        out.push_back({ma[i].first, e});
      ++i;
      ++j;
    }
  }
  MonoId id = internMono(std::move(out));
  monoMulCache[key] = id;
  return id;
}

TermId TermContext::mul(TermId a, TermId b) {
  if (a == zeroId || b == zeroId)
    return zeroId;
  if (a == oneId)
    return b;
  if (b == oneId)
    return a;
  const Poly &pa = polys[a], &pb = polys[b];
  if (pa.size() == 1 && pa[0].first == 0)
    return scale(b, pa[0].second);
  if (pb.size() == 1 && pb[0].first == 0)
    return scale(a, pb[0].second);
  // The expansion holds up to |a| x |b| monomials before interning: bound it
  // by the limit first, and the interned store as it grows.
  if (byteLimit != SIZE_MAX &&
      (exceeded || (unsigned __int128)pa.size() * pb.size() * 64 + bytes >
                       byteLimit)) {
    exceeded = true;
    return undef();
  }
  llvm::DenseMap<MonoId, Rat> acc;
  // Copy: interning monomials may not touch `polys`, but keep it obviously safe.
  Poly ca = pa, cb = pb;
  size_t step = 0;
  for (auto &[ma, xa] : ca)
    for (auto &[mb, xb] : cb) {
      if ((++step & 4095) == 0 && bytes > byteLimit) {
        exceeded = true;
        return undef();
      }
      MonoId m = monoMul(ma, mb);
      auto [it, inserted] = acc.try_emplace(m, xa * xb);
      if (!inserted)
        it->second = it->second + xa * xb;
    }
  Poly out;
  out.reserve(acc.size());
  for (auto &[m, c] : acc)
    if (!c.isZero())
      out.push_back({m, c});
  llvm::sort(out, [](auto &x, auto &y) { return x.first < y.first; });
  return intern(std::move(out));
}

bool TermContext::isExpPositive(TermId t) const {
  const Poly &p = polys[t];
  if (p.empty())
    return false;
  for (auto &[m, c] : p) {
    if (c.num <= 0 || c.den <= 0)
      return false;
    for (auto &[a, e] : monos[m])
      if (!isExpAtom(a))
        return false;
  }
  return true;
}

Mono TermContext::expGcd(TermId t) const {
  const Poly &p = polys[t];
  Mono g;
  if (p.empty())
    return g;
  // Candidates: the exp atoms of every term, each at its least exponent
  // (0 in a term that lacks it).
  llvm::DenseMap<AtomId, int32_t> least;
  for (auto &[m, c] : p)
    for (auto &[a, e] : monos[m])
      if (isExpAtom(a)) {
        auto [it, fresh] = least.try_emplace(a, e);
        if (!fresh)
          it->second = std::min(it->second, e);
      }
  for (auto &[a, e] : least) {
    int32_t lo = e;
    for (auto &[m, c] : p) {
      const Mono &mm = monos[m];
      auto it = llvm::find_if(mm, [&](auto &f) { return f.first == a; });
      lo = std::min(lo, it == mm.end() ? 0 : it->second);
    }
    if (lo)
      g.push_back({a, lo});
  }
  llvm::sort(g, [](auto &x, auto &y) { return x.first < y.first; });
  return g;
}

TermId TermContext::inv(TermId a) {
  const Poly &p = polys[a];
  if (p.size() > 1) {
    // 1 / (E * Q) = E^-1 / Q for a product E of exp atoms (never zero).
    Mono g = expGcd(a);
    if (!g.empty()) {
      Mono ginv = g;
      for (auto &f : ginv)
        f.second = -f.second;
      TermId einv = intern({{internMono(std::move(ginv)), Rat(1)}});
      return mul(einv, inv(mul(a, einv)));
    }
  }
  if (p.size() == 1) {
    // (c * prod a_i^e_i)^-1 = c^-1 * prod a_i^-e_i
    Rat c = p[0].second.inverse();
    Mono m = monos[p[0].first];
    for (auto &f : m)
      f.second = -f.second;
    MonoId mid = internMono(std::move(m));
    return intern({{mid, c}});
  }
  Atom at{AtomKind::Inv, Fn::Exp, {}, {a}};
  return atomTerm(internAtom(std::move(at)));
}

TermId TermContext::powInt(TermId a, int64_t n) {
  if (n < 0)
    return inv(powInt(a, -n));
  TermId result = oneId, base = a;
  while (n) {
    if (n & 1)
      result = mul(result, base);
    n >>= 1;
    if (n)
      base = mul(base, base);
  }
  return result;
}

TermId TermContext::app(Fn f, llvm::ArrayRef<TermId> args,
                        llvm::ArrayRef<int64_t> aux) {
  Atom at{AtomKind::App, f, llvm::SmallVector<int64_t, 2>(aux),
          llvm::SmallVector<TermId, 4>(args)};
  return atomTerm(internAtom(std::move(at)));
}

TermId TermContext::exp(TermId a) {
  if (auto at = asAtom(a); at && atoms[*at].kind == AtomKind::NegInf)
    return zeroId;
  if (a == zeroId)
    return oneId;
  // -inf plus finite terms (a masked logit minus its row's max) is -inf:
  // exp of it is 0. Every other atom stands for a finite real.
  {
    int inf = 0;
    bool other = false;
    for (auto &[m, c] : polys[a])
      for (auto &[at, e] : monos[m])
        if (atoms[at].kind == AtomKind::NegInf) {
          if (monos[m].size() == 1 && e == 1 && c.num > 0)
            ++inf;
          else
            other = true;
        }
    if (inf == 1 && !other)
      return zeroId;
  }
  // Terms c * m with m a single max, or the log of a positive sum of exp
  // products, and c an integer leave the exp: exp(x + c*m) =
  // exp(x) * exp(m)^c, exp(c * log(S)) = S^c (S > 0). Running maxima of
  // an online softmax cancel this way; other terms stay together.
  Poly rest, whole = polys[a];
  TermId factor = oneId;
  for (auto &[m, c] : whole) {
    const Mono &mm = monos[m];
    if (mm.size() == 1 && mm[0].second == 1 && c.den == 1 &&
        c.num <= (1 << 20) && c.num >= -(1 << 20)) {
      AtomId at = mm[0].first;
      const Atom &atom = atoms[at];
      bool isMax = atom.kind == AtomKind::Max;
      bool isLog = atom.kind == AtomKind::App && atom.fn == Fn::Log &&
                   isExpPositive(atom.args[0]);
      if (isMax || isLog) {
        TermId base =
            isLog ? atom.args[0] : app(Fn::Exp, {atomTerm(at)});
        factor = mul(factor, powInt(base, (int64_t)c.num));
        continue;
      }
    }
    rest.push_back({m, c});
  }
  if (rest.size() == whole.size())
    return app(Fn::Exp, {a});
  TermId r = rest.empty() ? oneId : app(Fn::Exp, {intern(std::move(rest))});
  return mul(r, factor);
}

TermId TermContext::log(TermId a) {
  if (!isExpPositive(a))
    return app(Fn::Log, {a});
  // log(E * S) = log(E) + log(S), log of a product of exp atoms the sum of
  // their arguments; S keeps positive coefficients and exp atoms.
  Mono g = expGcd(a);
  if (g.empty())
    return app(Fn::Log, {a});
  TermId linear = zeroId;
  for (auto &[at, e] : g)
    linear = add(linear, scale(atoms[at].args[0], Rat(e)));
  Mono ginv = g;
  for (auto &f : ginv)
    f.second = -f.second;
  TermId restTerm =
      mul(a, intern({{internMono(std::move(ginv)), Rat(1)}}));
  Rat c;
  if (isConstant(restTerm, &c) && c.isOne())
    return linear;
  return add(linear, app(Fn::Log, {restTerm}));
}

TermId TermContext::max(llvm::ArrayRef<TermId> args) {
  llvm::SmallVector<TermId, 8> flat;
  for (TermId t : args) {
    if (auto at = asAtom(t); at && atoms[*at].kind == AtomKind::Max) {
      auto &inner = atoms[*at].args;
      flat.append(inner.begin(), inner.end());
    } else {
      flat.push_back(t);
    }
  }
  llvm::sort(flat);
  flat.erase(std::unique(flat.begin(), flat.end()), flat.end());
  // max(x, -inf) = x: masked entries (padding, causal) never win.
  if (flat.size() > 1)
    llvm::erase_if(flat, [&](TermId t) {
      auto at = asAtom(t);
      return at && atoms[*at].kind == AtomKind::NegInf;
    });
  if (flat.size() == 1)
    return flat[0];
  Atom at{AtomKind::Max, Fn::Exp, {}, llvm::SmallVector<TermId, 4>(flat.begin(), flat.end())};
  return atomTerm(internAtom(std::move(at)));
}

TermId TermContext::select(TermId index, int64_t offset,
                           llvm::ArrayRef<TermId> values) {
  if (llvm::all_of(values, [&](TermId v) { return v == zeroId; }))
    return zeroId;
  Rat c;
  if (isConstant(index, &c) && c.den == 1) {
    int64_t i = (int64_t)c.num - offset;
    return i >= 0 && i < (int64_t)values.size() ? values[i] : zeroId;
  }
  // A constant factor common to the values leaves the selection
  // (select(i, a, c*v) = c * select(i, a, v)): the first non-zero value's
  // leading coefficient becomes 1.
  for (TermId v : values) {
    if (v == zeroId)
      continue;
    Rat lead = polys[v].front().second;
    if (!lead.isOne()) {
      Rat inverse = lead.inverse();
      llvm::SmallVector<TermId, 4> scaled;
      for (TermId w : values)
        scaled.push_back(scale(w, inverse));
      return scale(select(index, offset, scaled), lead);
    }
    break;
  }
  llvm::SmallVector<TermId, 4> args{index};
  args.append(values.begin(), values.end());
  Atom at{AtomKind::Select, Fn::Exp, {offset}, args};
  return atomTerm(internAtom(std::move(at)));
}

TermId TermContext::negInf() {
  Atom at{AtomKind::NegInf, Fn::Exp, {}, {}};
  return atomTerm(internAtom(std::move(at)));
}

TermId TermContext::undef() {
  Atom at{AtomKind::Undef, Fn::Exp, {undefCount++}, {}};
  return atomTerm(internAtom(std::move(at)));
}

bool TermContext::isConstant(TermId t, Rat *value) const {
  const Poly &p = polys[t];
  if (p.empty()) {
    if (value)
      *value = Rat(0);
    return true;
  }
  if (p.size() == 1 && p[0].first == 0) {
    if (value)
      *value = p[0].second;
    return true;
  }
  return false;
}

std::optional<AtomId> TermContext::asAtom(TermId t) const {
  const Poly &p = polys[t];
  if (p.size() != 1 || !p[0].second.isOne())
    return std::nullopt;
  const Mono &m = monos[p[0].first];
  if (m.size() != 1 || m[0].second != 1)
    return std::nullopt;
  return m[0].first;
}

llvm::StringRef mlir::tv::sym::fnName(Fn f) {
  switch (f) {
  case Fn::Exp: return "exp";
  case Fn::Log: return "log";
  case Fn::Sqrt: return "sqrt";
  case Fn::Sigmoid: return "sigmoid";
  case Fn::Gelu: return "gelu";
  case Fn::GeluGrad: return "gelu_grad";
  case Fn::Relu: return "relu";
  case Fn::Step: return "step";
  case Fn::Tanh: return "tanh";
  case Fn::Abs: return "abs";
  case Fn::PowReal: return "pow";
  case Fn::NonZero: return "nonzero";
  case Fn::TopKGate: return "topk_gate";
  case Fn::MaxShare: return "max_share";
  case Fn::MoeRoute: return "moe_route";
  case Fn::IAnd: return "andi";
  case Fn::IOr: return "ori";
  case Fn::IXor: return "xori";
  case Fn::IMaxS: return "maxsi";
  case Fn::IMinS: return "minsi";
  case Fn::IMaxU: return "maxui";
  case Fn::IMinU: return "minui";
  case Fn::IShl: return "shli";
  case Fn::IShrS: return "shrsi";
  case Fn::IShrU: return "shrui";
  }
  return "?";
}

std::string TermContext::toString(TermId t) const {
  const Poly &p = polys[t];
  if (p.empty())
    return "0";
  std::string s;
  for (auto [i, term] : llvm::enumerate(p)) {
    auto &[m, c] = term;
    if (i)
      s += " + ";
    bool unit = m == 0;
    if (!c.isOne() || unit)
      s += c.toString() + (unit ? "" : "*");
    for (auto [j, f] : llvm::enumerate(monos[m])) {
      if (j)
        s += "*";
      const Atom &a = atoms[f.first];
      switch (a.kind) {
      case AtomKind::Var:
        s += vars[a.aux[0]].name;
        break;
      case AtomKind::App: {
        s += fnName(a.fn).str() + "(";
        for (auto [k, arg] : llvm::enumerate(a.args))
          s += (k ? ", " : "") + toString(arg);
        s += ")";
        break;
      }
      case AtomKind::Inv:
        s += "1/(" + toString(a.args[0]) + ")";
        break;
      case AtomKind::Max:
        s += "max(...)";
        break;
      case AtomKind::Select:
        s += "select(" + toString(a.args[0]) + ")";
        break;
      case AtomKind::NegInf:
        s += "-inf";
        break;
      case AtomKind::Undef:
        s += "undef";
        break;
      }
      if (f.second != 1)
        s += "^" + std::to_string(f.second);
    }
  }
  return s;
}

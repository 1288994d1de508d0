//===- ShapeSolve.cpp - solving the shape-reduction program ---------------===//
//
// The smallest sizes that keep a stage's structure: the ratios between
// dimension classes, found with Z3, and the stage rewritten at them.
//
//===----------------------------------------------------------------------===//
#include "ShapeProgramImpl.h"
#include "TrainVerify/Verify/Executor.h"
#include "TrainVerify/Semantics/Semantics.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/EquivalenceClasses.h"
#include <functional>
#include <map>
#include <numeric>
#include <set>
#include <z3++.h>

using namespace mlir;
using namespace mlir::tv;
using namespace mlir::tv::shapes;

LogicalResult ShapeProgram::solveAndRewrite(unsigned timeoutMs) {
  if (keepAll) {
    // Said only where it matters: a stage too large to verify at full size.
    int64_t elements = 0;
    stage.getBody().walk([&](Operation *op) {
      for (Value r : op->getResults())
        if (auto ty = dyn_cast<RankedTensorType>(r.getType()))
          elements = std::min<int64_t>(
              elements + std::min<int64_t>(ty.getNumElements(), 1LL << 40),
              1LL << 40);
    });
    if (elements > (int64_t(1) << 24))
      stage.emitWarning()
          << "shape reduction keeps the stage's sizes: it flattens tensors "
             "of different shapes into one buffer (a flat gradient bucket), "
             "whose offsets no smaller shapes preserve (docs/soundness.md, "
             "\"Reshapes and flat offsets\")";
    return success();
  }
  // One integer variable per class.
  DenseMap<DimKey, unsigned> classIndex;
  std::vector<DimKey> leaders;
  for (auto it = classes.begin(); it != classes.end(); ++it) {
    if (!(*it)->isLeader())
      continue;
    classIndex[(*it)->getData()] = leaders.size();
    leaders.push_back((*it)->getData());
  }
  std::function<unsigned(DimKey)> classOf = [&](DimKey k) {
    return classIndex[classes.getLeaderValue(k)];
  };
  std::vector<int64_t> origOf(leaders.size(), -1), lowOf(leaders.size(), 0);
  std::vector<bool> fixedOf(leaders.size(), false);
  for (auto &[k, n] : original) {
    unsigned c = classOf(k);
    if (origOf[c] >= 0 && origOf[c] != n)
      return stage.emitError()
             << "inconsistent shape program: dimensions of sizes " << origOf[c]
             << " and " << n << " must be equal";
    origOf[c] = n;
  }
  for (auto &[k, n] : lower)
    lowOf[classOf(k)] = std::max(lowOf[classOf(k)], n);
  for (DimKey k : fixed)
    fixedOf[classOf(k)] = true;
  // Sizes decided by segments are fixed, and the relations among them are
  // theirs: the ratios are not asked to hold there (decision 122).
  if (!segmentSize.empty()) {
    for (auto &[k, n] : segmentSize) {
      unsigned c = classOf(k);
      origOf[c] = lowOf[c] = n;
      fixedOf[c] = true;
    }
    auto decided = [&](DimKey k) {
      return segmentSize.count(classes.getLeaderValue(k)) != 0;
    };
    llvm::erase_if(constraints, [&](const Constraint &c) {
      for (const auto *side : {&c.lhs, &c.rhs})
        for (const LinearTerm &t : *side)
          if (!decided(t.dim))
            return false;
      for (const auto *side : {&c.plhs, &c.prhs})
        for (DimKey k : *side)
          if (!decided(k))
            return false;
      return true;
    });
  }

  std::vector<int64_t> solution(leaders.size());
  if (solveRatios(classOf, origOf, lowOf, fixedOf, solution))
    return rewrite(classOf, solution);
  try {
    z3::context ctx;
    std::vector<z3::expr> vars;
    for (size_t c = 0; c < leaders.size(); ++c)
      vars.push_back(ctx.int_const(("d" + std::to_string(c)).c_str()));
    auto sum = [&](const std::vector<LinearTerm> &ts) {
      z3::expr e = ctx.int_val(0);
      for (const LinearTerm &t : ts)
        e = e + ctx.int_val(t.coeff) * vars[classOf(t.dim)];
      return e;
    };
    auto prod = [&](const std::vector<DimKey> &ks) {
      z3::expr e = ctx.int_val(1);
      for (DimKey k : ks)
        e = e * vars[classOf(k)];
      return e;
    };
    // Feasibility first, with one tracking literal per op so that an
    // infeasible program names the ops whose constraints conflict.
    z3::solver solver(ctx);
    z3::optimize opt(ctx);
    z3::params p(ctx);
    p.set("timeout", timeoutMs);
    // Z3 otherwise takes SIGINT to cancel the query, and the run goes on
    // without it: a user's ctrl-c stops tv (RunStatus.h).
    p.set("ctrl_c", false);
    solver.set(p);
    opt.set(p);
    std::vector<z3::expr> bounds;
    for (size_t c = 0; c < leaders.size(); ++c) {
      z3::expr b = fixedOf[c] ? vars[c] == ctx.int_val(origOf[c])
                              : (vars[c] >= ctx.int_val(lowOf[c]) &&
                                 vars[c] <= ctx.int_val(origOf[c]));
      bounds.push_back(b);
      solver.add(b);
      opt.add(b);
    }
    z3::expr_vector tracks(ctx);
    std::vector<Operation *> trackOps;
    for (auto [i, c] : llvm::enumerate(constraints)) {
      z3::expr e = c.isProduct ? prod(c.plhs) == prod(c.prhs)
                               : sum(c.lhs) == sum(c.rhs);
      z3::expr t = ctx.bool_const(("c" + std::to_string(i)).c_str());
      solver.add(z3::implies(t, e));
      tracks.push_back(t);
      trackOps.push_back(c.why);
      opt.add(e);
    }
    z3::expr total = ctx.int_val(0);
    for (auto &v : vars)
      total = total + v;
    opt.minimize(total);
    // Optimal sizes are tiny; searching below a small cap first keeps the
    // optimizer's branch and bound short. Without a solution under the cap,
    // search the whole range.
    z3::expr_vector capped(ctx);
    for (size_t c = 0; c < leaders.size(); ++c)
      if (!fixedOf[c] && origOf[c] > kSearchCap)
        capped.push_back(vars[c] <= ctx.int_val(kSearchCap));
    opt.push();
    for (unsigned i = 0; i < capped.size(); ++i)
      opt.add(capped[i]);
    z3::check_result res = opt.check();
    if (res != z3::sat) {
      opt.pop();
      res = opt.check();
    }
    if (res == z3::unsat) {
      // Name the ops whose constraints conflict.
      if (solver.check(tracks) == z3::unsat) {
        InFlightDiagnostic d = stage.emitError()
                               << "inconsistent shape program: the constraints "
                                  "of these ops conflict:";
        z3::expr_vector core = solver.unsat_core();
        std::set<std::string> names;
        for (unsigned i = 0; i < core.size(); ++i) {
          unsigned idx = std::stoul(core[i].decl().name().str().substr(1));
          Operation *why = trackOps[idx];
          if (why)
            d.attachNote(why->getLoc()) << "'" << why->getName() << "'";
          else
            d.attachNote(stage.getLoc()) << "a lineage slice";
        }
        return d;
      }
    }
    if (res != z3::sat) {
      // No better solution found in time: keep the stage as it is.
      stage.emitWarning() << "shape reduction gave up ("
                          << "solver did not finish); the stage keeps its "
                             "sizes";
      return success();
    }
    z3::model m = opt.get_model();
    for (size_t c = 0; c < leaders.size(); ++c)
      solution[c] = m.eval(vars[c], true).get_numeral_int64();
  } catch (const z3::exception &e) {
    return stage.emitError() << "shape reduction solver error: " << e.msg();
  }

  return rewrite(classOf, solution);
}

LogicalResult ShapeProgram::rewrite(const std::function<unsigned(DimKey)> &classOf,
                                    const std::vector<int64_t> &solution) {
  // Rewrite types.
  auto sizeOf = [&](DimKey k) { return solution[classOf(k)]; };
  stage.getBody().walk([&](Operation *op) {
    for (Value r : op->getResults()) {
      auto ty = dyn_cast<RankedTensorType>(r.getType());
      if (!ty)
        continue;
      SmallVector<int64_t> shape;
      for (unsigned d = 0; d < ty.getRank(); ++d)
        shape.push_back(sizeOf(key(r, d)));
      r.setType(RankedTensorType::get(shape, ty.getElementType()));
    }
  });
  // Slice starts.
  for (auto &[op, d, st, big] : sliceStarts) {
    auto attr = cast<DenseI64ArrayAttr>(op->getAttr("start"));
    SmallVector<int64_t> start(attr.asArrayRef());
    start[d] = sizeOf(st);
    op->setAttr("start", DenseI64ArrayAttr::get(op->getContext(), start));
  }
  for (auto &[op, attr, st] : offsets)
    op->setAttr(attr,
                IntegerAttr::get(IntegerType::get(op->getContext(), 64),
                                 sizeOf(st)));
  // Lineage boxes.
  auto rewrite = [&](ArrayAttr list, bool guarantee) {
    SmallVector<Attribute> out;
    for (auto [i, a] : llvm::enumerate(list)) {
      auto l = cast<LineageAttr>(a);
      SmallVector<int64_t> lo(l.getLower()), hi(l.getUpper());
      for (const BoxDim &b : boxes)
        if (b.guarantee == guarantee && b.index == i) {
          lo[b.dim] = sizeOf(b.lo);
          hi[b.dim] = lo[b.dim] + sizeOf(b.extent);
        }
      out.push_back(l.withBox(lo, hi));
    }
    return ArrayAttr::get(stage.getContext(), out);
  };
  stage.setAssumesAttr(rewrite(stage.getAssumes(), false));
  stage.setGuaranteesAttr(rewrite(stage.getGuarantees(), true));
  return success();
}

bool ShapeProgram::solveRatios(const std::function<unsigned(DimKey)> &classOf,
                               const std::vector<int64_t> &origOf,
                               const std::vector<int64_t> &lowOf,
                               const std::vector<bool> &fixedOf,
                               std::vector<int64_t> &solution) {
  size_t n = origOf.size();
  struct Edge {
    unsigned to;
    int64_t num, den; // x_to = x_from * num / den
  };
  std::vector<std::vector<Edge>> adj(n);
  std::vector<bool> zero(n, false);
  struct Prod {
    SmallVector<unsigned> lhs, rhs;
  };
  std::vector<Prod> prods;
  // Linear constraints over three or more classes (concatenations):
  // sum_i coeff_i * x_i = 0.
  using Sum = SmallVector<std::pair<unsigned, int64_t>>;
  std::vector<Sum> sums;
  for (const Constraint &c : constraints) {
    if (c.isProduct) {
      Prod pr;
      for (DimKey k : c.plhs)
        pr.lhs.push_back(classOf(k));
      for (DimKey k : c.prhs)
        pr.rhs.push_back(classOf(k));
      prods.push_back(pr);
      continue;
    }
    std::map<unsigned, int64_t> coef; // lhs positive, rhs negative
    for (const LinearTerm &t : c.lhs)
      coef[classOf(t.dim)] += t.coeff;
    for (const LinearTerm &t : c.rhs)
      coef[classOf(t.dim)] -= t.coeff;
    SmallVector<std::pair<unsigned, int64_t>> nz;
    for (auto &[k, v] : coef)
      if (v)
        nz.push_back({k, v});
    if (nz.empty())
      continue;
    if (nz.size() == 1) {
      zero[nz[0].first] = true; // a*x = 0
      continue;
    }
    if (nz.size() != 2) {
      sums.push_back(nz);
      continue;
    }
    auto [a, ca] = nz[0];
    auto [bb, cb] = nz[1];
    if ((-ca > 0) != (cb > 0))
      return false; // would need a negative size
    adj[a].push_back({bb, std::abs(ca), std::abs(cb)});
    adj[bb].push_back({a, std::abs(cb), std::abs(ca)});
  }

  // Components of the ratio graph: x_c = t * p_c / q_c.
  struct Comp {
    std::vector<unsigned> members;
    int64_t step = 1, tMin = 1, tOrig = 0;
    std::optional<int64_t> pinned, t;
    bool zero = false;
  };
  std::vector<int64_t> p(n, 0), q(n, 0);
  std::vector<int> comp(n, -1);
  std::vector<Comp> comps;
  for (size_t root = 0; root < n; ++root) {
    if (comp[root] >= 0)
      continue;
    Comp c;
    c.members.push_back(root);
    comp[root] = comps.size();
    p[root] = q[root] = 1;
    for (size_t i = 0; i < c.members.size(); ++i) {
      unsigned u = c.members[i];
      for (const Edge &e : adj[u]) {
        __int128 np = (__int128)p[u] * e.num, nq = (__int128)q[u] * e.den;
        if (np > INT64_MAX || nq > INT64_MAX)
          return false;
        int64_t g = std::gcd((int64_t)np, (int64_t)nq);
        int64_t rp = (int64_t)np / g, rq = (int64_t)nq / g;
        if (comp[e.to] < 0) {
          comp[e.to] = comps.size();
          p[e.to] = rp;
          q[e.to] = rq;
          c.members.push_back(e.to);
        } else if ((__int128)p[e.to] * rq != (__int128)rp * q[e.to]) {
          return false; // inconsistent cycle: let the solver explain it
        }
      }
    }
    c.tOrig = origOf[root];
    for (unsigned u : c.members) {
      c.zero |= zero[u];
      c.step = std::lcm(c.step, q[u] / std::gcd(p[u], q[u]));
      if (c.step > std::max<int64_t>(c.tOrig, 1))
        return false;
      if (p[u] > 0)
        c.tMin = std::max<int64_t>(c.tMin, (lowOf[u] * q[u] + p[u] - 1) / p[u]);
      if (fixedOf[u]) {
        if (p[u] == 0 || origOf[u] * q[u] % p[u])
          return false;
        int64_t t = origOf[u] * q[u] / p[u];
        if (c.pinned && *c.pinned != t)
          return false;
        c.pinned = t;
      }
    }
    comps.push_back(std::move(c));
  }

  // Components that a product determines (its single-class side) are solved
  // after their factors; every other component takes its smallest t.
  std::vector<bool> dependent(comps.size(), false);
  for (const Prod &pr : prods) {
    const SmallVector<unsigned> *one = nullptr, *many = nullptr;
    if (pr.lhs.size() == 1 && pr.rhs.size() > 1)
      one = &pr.lhs, many = &pr.rhs;
    else if (pr.rhs.size() == 1 && pr.lhs.size() > 1)
      one = &pr.rhs, many = &pr.lhs;
    else
      return false;
    int dc = comp[(*one)[0]];
    unsigned inSame = 0;
    for (unsigned f : *many)
      inSame += comp[f] == dc;
    // x = f * K with f in x's own component: both scale with t, so the
    // product pins the other factors K, not t; the final check verifies it.
    if (inSame > 1)
      return false;
    if (inSame == 0)
      dependent[dc] = true;
  }
  // A sum within one component holds for every t or for none; otherwise the
  // term whose component occurs once, with its sign opposite to all others
  // (the result of a concatenation), is determined by the others.
  struct SumDep {
    unsigned single;
    Sum terms;
  };
  std::vector<SumDep> sumDeps;
  for (const Sum &sm : sums) {
    std::map<int, unsigned> perComp;
    for (auto [u, cf] : sm)
      ++perComp[comp[u]];
    if (perComp.size() == 1) {
      // sum cf_u * p_u / q_u must vanish.
      __int128 num = 0, den = 1;
      for (auto [u, cf] : sm) {
        num = num * q[u] + (__int128)cf * p[u] * den;
        den *= q[u];
        if (den > ((__int128)1 << 100) || num > ((__int128)1 << 100) ||
            num < -((__int128)1 << 100))
          return false;
      }
      if (num != 0)
        return false;
      continue;
    }
    std::optional<unsigned> single;
    bool singleOpposite = false;
    for (auto [u, cf] : sm) {
      if (perComp[comp[u]] != 1)
        continue;
      bool opposite = true;
      for (auto [v, cv] : sm)
        if (v != u && (cv > 0) == (cf > 0))
          opposite = false;
      if (!single || (opposite && !singleOpposite)) {
        single = u;
        singleOpposite = opposite;
      }
    }
    if (!single)
      return false;
    dependent[comp[*single]] = true;
    sumDeps.push_back({*single, sm});
  }
  auto setT = [&](Comp &c, int64_t t) {
    if (c.zero)
      t = 0;
    c.t = t;
  };
  // Independent components take their smallest t, raised by `extra` steps
  // when a size they determine (through a product or a sum) would fall
  // below its lower bound; each attempt is checked in full at the end.
  std::vector<int64_t> extra(comps.size(), 0);
  // Outcome of one attempt: solved, impossible, or raise this component.
  constexpr int64_t kSolved = -1, kFail = -2;
  auto value = [&](unsigned u) -> std::optional<int64_t> {
    const Comp &c = comps[comp[u]];
    if (!c.t)
      return std::nullopt;
    return (int64_t)((__int128)p[u] * *c.t / q[u]);
  };
  // A free factor of a dependency to raise when the dependent is too small.
  auto raise = [&](ArrayRef<unsigned> factors) -> int64_t {
    for (unsigned f : factors) {
      int ci = comp[f];
      const Comp &c = comps[ci];
      if (dependent[ci] || c.pinned || c.zero)
        continue;
      int64_t next =
          ((c.tMin + c.step - 1) / c.step + extra[ci] + 1) * c.step;
      if (next <= c.tOrig)
        return ci;
    }
    return kFail;
  };
  // Gives the component of `single` the t at which its size is `x`; on
  // failure, the attempt's outcome (raise one of `factors`, or give up).
  auto settle = [&](unsigned single, __int128 x,
                    ArrayRef<unsigned> factors) -> std::optional<int64_t> {
    Comp &dc = comps[comp[single]];
    if ((x * q[single]) % p[single])
      return raise(factors);
    int64_t t = (int64_t)(x * q[single] / p[single]);
    if (t % dc.step || t < dc.tMin)
      return raise(factors);
    if (t > dc.tOrig || (dc.pinned && *dc.pinned != t))
      return kFail;
    setT(dc, t);
    return std::nullopt;
  };
  auto attempt = [&]() -> int64_t {
    for (Comp &c : comps)
      c.t.reset();
    for (size_t ci = 0; ci < comps.size(); ++ci) {
      Comp &c = comps[ci];
      if (dependent[ci])
        continue;
      if (c.pinned)
        setT(c, *c.pinned);
      else
        setT(c, std::min(c.tOrig, ((c.tMin + c.step - 1) / c.step + extra[ci]) *
                                      c.step));
    }
    bool progress = true;
    while (progress) {
      progress = false;
      for (const Prod &pr : prods) {
        bool lhsOne = pr.lhs.size() == 1;
        unsigned single = lhsOne ? pr.lhs[0] : pr.rhs[0];
        const SmallVector<unsigned> &many = lhsOne ? pr.rhs : pr.lhs;
        __int128 prodv = 1;
        bool ready = true;
        for (unsigned f : many) {
          auto v = value(f);
          if (!v) {
            ready = false;
            break;
          }
          prodv *= *v;
          if (prodv > INT64_MAX)
            return kFail;
        }
        Comp &dc = comps[comp[single]];
        if (!ready || dc.t)
          continue;
        // x_single = prodv = p/q * t
        if (p[single] == 0)
          return raise(many);
        if (std::optional<int64_t> r = settle(single, prodv, many))
          return *r;
        progress = true;
      }
      for (const SumDep &sd : sumDeps) {
        Comp &dc = comps[comp[sd.single]];
        if (dc.t)
          continue;
        __int128 rest = 0;
        int64_t cs = 0;
        bool ready = true;
        SmallVector<unsigned> others;
        for (auto [u, cf] : sd.terms) {
          if (u == sd.single) {
            cs = cf;
            continue;
          }
          others.push_back(u);
          auto v = value(u);
          if (!v) {
            ready = false;
            break;
          }
          rest += (__int128)cf * *v;
        }
        if (!ready)
          continue;
        // cs * x_single + rest = 0, x_single = p/q * t.
        if (rest % cs)
          return raise(others);
        __int128 x = -rest / cs;
        if (x < 0 || x > INT64_MAX || p[sd.single] == 0)
          return kFail;
        if (std::optional<int64_t> r = settle(sd.single, x, others))
          return *r;
        progress = true;
      }
    }
    for (size_t u = 0; u < n; ++u) {
      auto v = value(u);
      if (!v || (__int128)p[u] * *comps[comp[u]].t % q[u] || *v < lowOf[u] ||
          *v > origOf[u])
        return kFail;
      solution[u] = *v;
    }
    // Every constraint holds (products included).
    for (const Constraint &c : constraints) {
      if (c.isProduct) {
        __int128 l = 1, r = 1;
        for (DimKey k : c.plhs)
          l *= solution[classOf(k)];
        for (DimKey k : c.prhs)
          r *= solution[classOf(k)];
        if (l != r)
          return kFail;
        continue;
      }
      __int128 l = 0, r = 0;
      for (const LinearTerm &t : c.lhs)
        l += (__int128)t.coeff * solution[classOf(t.dim)];
      for (const LinearTerm &t : c.rhs)
        r += (__int128)t.coeff * solution[classOf(t.dim)];
      if (l != r)
        return kFail;
    }
    return kSolved;
  };
  for (int tries = 0; tries < 64; ++tries) {
    int64_t r = attempt();
    if (r == kSolved)
      return true;
    if (r == kFail)
      return false;
    ++extra[r];
  }
  return false;
}


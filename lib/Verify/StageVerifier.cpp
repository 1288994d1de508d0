//===- StageVerifier.cpp - proving one stage ------------------------------===//
//
// Proving one stage: the symbolic run of its spec and plan (StageRun.h),
// normalization, random replays first on a large stage, then the Z3 query
// per unsettled element (solved in a child process, StageSolve.cpp) and the
// replay of its model (StageReplay.cpp).
//
//===----------------------------------------------------------------------===//
#include "TrainVerify/Verify/StageVerifier.h"
#include "TrainVerify/Dialect/Lineage.h"
#include "StageRun.h"
#include "TrainVerify/Verify/Z3Lowering.h"

#include <chrono>
#include <random>

using namespace mlir;
using namespace mlir::tv;
using namespace mlir::tv::stagecheck;

const char *mlir::tv::toString(StageResult::Outcome o) {
  switch (o) {
  case StageResult::Proven:
    return "proven";
  case StageResult::Counterexample:
    return "counterexample";
  case StageResult::Unknown:
    return "unknown";
  case StageResult::Error:
    return "error";
  }
  return "error";
}

namespace {
/// Terms with every selection by a token id rewritten over indicators of
/// the id's value: select(i, a, v) = sum_k [i = a + k] v_k, where the
/// indicators of an id in [0, V) are V - 1 fresh atoms and one minus their
/// sum (exactly one holds, assumption A6). Two terms equal in this form are
/// equal for every in-vocabulary id: a vocabulary-parallel loss, whose
/// per-shard picks and subtracted maxima only cancel once the picks are
/// known to sum to one, normalizes here instead of costing the solver a
/// case split per token.
class IndicatorForm {
public:
  IndicatorForm(sym::TermContext &c,
                const std::vector<std::pair<sym::TermId, int64_t>> &bounds)
      : c(c) {
    for (auto &[t, v] : bounds) {
      auto [it, fresh] = vocab.try_emplace(t, v);
      if (!fresh)
        it->second = std::min(it->second, v);
    }
  }
  sym::TermId term(sym::TermId t) {
    if (auto it = terms.find(t); it != terms.end())
      return it->second;
    sym::TermId r = c.zero();
    sym::Poly p = c.poly(t);
    for (auto &[m, coef] : p) {
      sym::TermId prod = c.constant(coef);
      sym::Mono mono = c.mono(m);
      for (auto &[a, e] : mono)
        prod = c.mul(prod, c.powInt(atom(a), e));
      r = c.add(r, prod);
    }
    return terms[t] = r;
  }

private:
  sym::TermId indicator(sym::TermId index, int64_t value, int64_t size) {
    if (value < 0 || value >= size)
      return c.zero();
    auto key = std::make_pair(index, value);
    if (auto it = indicators.find(key); it != indicators.end())
      return it->second;
    sym::TermId r;
    if (value < size - 1) {
      r = c.var("[" + c.toString(index) + " = " + std::to_string(value) + "]");
    } else {
      r = c.one();
      for (int64_t k = 0; k < size - 1; ++k)
        r = c.sub(r, indicator(index, k, size));
    }
    return indicators[key] = r;
  }
  sym::TermId atom(sym::AtomId a) {
    if (auto it = atoms.find(a); it != atoms.end())
      return it->second;
    sym::Atom at = c.atom(a);
    SmallVector<sym::TermId> args;
    for (sym::TermId x : at.args)
      args.push_back(term(x));
    sym::TermId r;
    switch (at.kind) {
    case sym::AtomKind::App:
      r = at.fn == sym::Fn::Exp   ? c.exp(args[0])
          : at.fn == sym::Fn::Log ? c.log(args[0])
                                  : c.app(at.fn, args, at.aux);
      break;
    case sym::AtomKind::Inv:
      r = c.inv(args[0]);
      break;
    case sym::AtomKind::Max:
      r = c.max(args);
      break;
    case sym::AtomKind::Select: {
      auto v = vocab.find(at.args[0]);
      if (v == vocab.end()) {
        r = c.select(args[0], at.aux[0], ArrayRef<sym::TermId>(args).drop_front());
        break;
      }
      r = c.zero();
      for (size_t k = 1; k < args.size(); ++k)
        r = c.add(r, c.mul(indicator(at.args[0], at.aux[0] + (int64_t)k - 1,
                                     v->second),
                           args[k]));
      break;
    }
    default:
      r = c.atomTermOf(a);
    }
    return atoms[a] = r;
  }
  sym::TermContext &c;
  DenseMap<sym::TermId, int64_t> vocab;
  DenseMap<sym::TermId, sym::TermId> terms;
  DenseMap<sym::AtomId, sym::TermId> atoms;
  std::map<std::pair<sym::TermId, int64_t>, sym::TermId> indicators;
};
} // namespace

StageResult mlir::tv::verifyStage(StageOp stage, const StageOptions &options,
                                  const StageSchedule *known) {
  StageResult result(stage.getLoc());
  if (failed(expandLineageMaps(stage))) {
    result.headline = "a lineage map of the stage does not expand";
    return result; // Error
  }
  // One time budget for the whole stage: symbolic execution, then the
  // solver with what is left.
  auto stageStart = std::chrono::steady_clock::now();
  if (!stage.getSpec() || !stage.getPlan()) {
    result.headline = "stage has no spec or no plan";
    return result;
  }
  std::optional<StageSchedule> built;
  if (!known)
    known = &built.emplace(stage);
  const PlanSchedule *schedule = known->get();
  if (!schedule) {
    result.loc = known->errorLoc();
    result.headline =
        "stage @" + stage.getSymName().str() + ": " + known->error();
    return result;
  }

  // Symbolic execution is per element: a stage that shape reduction could
  // not shrink is refused rather than run out of memory.
  int64_t elements = 0;
  stage.getBody().walk([&](Operation *op) {
    for (Value r : op->getResults())
      if (auto ty = dyn_cast<RankedTensorType>(r.getType()))
        elements += ty.getNumElements();
  });
  if (elements > options.maxElements) {
    result.outcome = StageResult::Unknown;
    result.headline = "stage @" + stage.getSymName().str() + ": unknown: " +
                      std::to_string(elements) +
                      " tensor elements, over the " +
                      std::to_string(options.maxElements) +
                      " that symbolic execution takes; ";
    // Shape reduction records the boxes it started from: whether it ran
    // decides what to say (decision 86).
    if (stage.getFullGuaranteesAttr())
      result.headline +=
          "shape reduction ran but could not shrink this stage (its warning "
          "says why); verify the same parallel layout on a smaller model "
          "configuration instead (fewer layers, a smaller hidden size and "
          "vocabulary), which proves that configuration, not this one";
    else
      result.headline += "run --tv-shape-reduce first";
    return result;
  }
  sym::TermContext terms;
  terms.byteLimit = options.maxTermBytes;
  SymDomain sd{terms};
  sd.budget = options.maxTermBytes;
  sd.deadline = stageStart + std::chrono::milliseconds(options.timeoutMs);
  Bindings<SymDomain> b{sd,
                        [&](const std::string &name, int kind) {
                          return terms.var(name, kind == 1, kind == 2);
                        },
                        {}, {}, {}};
  Outcome<sym::TermId> out;
  if (failed(runStage(sd, stage, *schedule, b, out))) {
    if (sd.pastDeadline()) {
      result.outcome = StageResult::Unknown;
      result.headline = "stage @" + stage.getSymName().str() +
                        ": unknown: symbolic execution did not finish within "
                        "the stage's time budget of " +
                        std::to_string(options.timeoutMs) +
                        " ms (--tv-verify=stage-timeout-ms=N raises it)";
      return result;
    }
    if (sd.overBudget()) {
      result.outcome = StageResult::Unknown;
      result.headline = "stage @" + stage.getSymName().str() +
                        ": unknown: its symbolic terms exceed the stage's "
                        "memory budget of " +
                        std::to_string(options.maxTermBytes >> 20) +
                        " MB (--tv-verify=stage-memory-mb=N raises it)";
      return result;
    }
    result.headline = "stage @" + stage.getSymName().str() + ": " + out.error;
    return result;
  }

  std::vector<size_t> differing;
  for (size_t i = 0; i < out.pairs.size(); ++i)
    if (out.pairs[i].first != out.pairs[i].second)
      differing.push_back(i);
  if (!differing.empty() && !sd.idBounds.empty()) {
    IndicatorForm form(terms, sd.idBounds);
    llvm::erase_if(differing, [&](size_t i) {
      return form.term(out.pairs[i].first) == form.term(out.pairs[i].second);
    });
  }
  if (differing.empty() && b.extra.empty() && !options.wantSmtLib) {
    result.outcome = StageResult::Proven;
    result.byNormalization = true;
    return result;
  }

  // The solver: assumptions that were not substituted, and the negation of
  // the guarantees that normalization could not settle. The query is built
  // here (and printed for --export-smtlib), solved in a child process.
  std::vector<size_t> all = differing;
  if (differing.empty())
    for (size_t i = 0; i < out.pairs.size(); ++i)
      all.push_back(i);
  auto build = [&](z3::context &ctx, z3::solver &solver, Z3Lowering &lower,
                   z3::expr_vector &diffs) {
    for (auto &[x, y] : b.extra)
      solver.add(lower.term(x) == lower.term(y));
    // Token ids lie in their vocabulary (assumption A6).
    for (auto &[id, size] : sd.idBounds) {
      z3::expr e = lower.term(id);
      solver.add(e >= 0 && e <= ctx.real_val(std::to_string(size - 1).c_str()));
    }
    // n-bit integers differ as n-bit vectors (modulo 2^n).
    for (size_t i : all) {
      unsigned bits = out.checks[i].bits;
      diffs.push_back(bits ? lower.bv(out.pairs[i].first, bits) !=
                                 lower.bv(out.pairs[i].second, bits)
                           : lower.term(out.pairs[i].first) !=
                                 lower.term(out.pairs[i].second));
    }
    for (size_t v = 0; v < terms.numVars(); ++v)
      if (terms.varInfo(v).isBool && lower.hasVar(v))
        solver.add(lower.var(v) >= 0 && lower.var(v) <= 1);
  };
  if (options.wantSmtLib) {
    try {
      z3::context ctx;
      z3::solver solver(ctx);
      Z3Lowering lower(ctx, terms);
      z3::expr_vector diffs(ctx);
      build(ctx, solver, lower, diffs);
      solver.add(z3::mk_or(diffs));
      // Which tensor element each variable is (spec inputs by their spec
      // index, plan tensors of a sum as NAME@RANK[index]).
      std::string legend;
      for (size_t v = 0; v < terms.numVars(); ++v)
        if (lower.hasVar(v))
          legend += "; v" + std::to_string(v) + " = " +
                    terms.varInfo(v).name + "\n";
      // Each query stands alone: a file of several (--export-smtlib)
      // resets the solver between them, and echoes the stage's name before
      // its answer, so `z3 FILE` prints one named sat/unsat per stage.
      std::string name = stage.getSymName().str();
      result.smtlib = "; tv stage @" + name + "\n" + legend + "(reset)\n" +
                      "(echo \"stage @" + name + "\")\n" + solver.to_smt2();
    } catch (const z3::exception &e) {
      result.headline = "stage @" + stage.getSymName().str() +
                        ": solver error: " + e.msg();
      return result;
    }
    if (options.queryOnly) {
      result.outcome = StageResult::Unknown; // built, not decided
      return result;
    }
  }
  if (differing.empty() && b.extra.empty()) {
    result.outcome = StageResult::Proven;
    result.byNormalization = true;
    return result;
  }
  // A real bug usually shows on random inputs: replaying a few concrete
  // points first costs one interpretation each and spares the solver a
  // query that can be far larger than the stage (a one-rank bug in an
  // unfolded 671B MoE stage drove Z3 past 16 GB) or run long (issue 19).
  // Only a replayed mismatch is reported, so this never turns a proof into
  // a counterexample. The first points are small integers, which a reader
  // can follow; then reals.
  if (!differing.empty() && b.extra.empty() && !options.queryOnly &&
      terms.footprint() >= options.replayFirstBytes) {
    std::mt19937_64 early(0x5eed);
    for (unsigned s = 0; s < options.replaySeeds; ++s) {
      StageResult probe = result; // a failed replay leaves its note here
      if (replay(stage, *schedule, {}, &early, probe,
                 /*smallIntegers=*/s < 2))
        return probe;
    }
  }

  // One query per unsettled element, sharing the assumptions: the
  // disjunction of all of them is unsat iff each is, and small queries
  // (one element's cone) are far easier for Z3 than their disjunction
  // (a 32-micro-batch vocabulary-parallel embedding timed out as one
  // query). The stage's timeout is a budget shared by the queries; a sat
  // query ends the search, an unknown one does not (a later element may
  // still give a counterexample).
  // The solver gets what symbolic execution left of the stage's budget.
  unsigned left = (unsigned)std::max<long>(
      1, (long)options.timeoutMs -
             std::chrono::duration_cast<std::chrono::milliseconds>(
                 std::chrono::steady_clock::now() - stageStart)
                 .count());
  SolverOutcome solved = solveIsolated(left, options.maxTermBytes, [&] {
    SolverOutcome o;
    try {
      z3::context ctx;
      z3::solver solver(ctx);
      z3::params p(ctx);
      p.set("timeout", left);
      solver.set(p);
      Z3Lowering lower(ctx, terms);
      z3::expr_vector diffs(ctx);
      build(ctx, solver, lower, diffs);
      auto start = std::chrono::steady_clock::now();
      o.verdict = z3::unsat;
      // First with every max opaque (a weaker theory: unsat still
      // proves), on up to half the budget: where maxima only cancel (a
      // max-subtracted loss) this settles what the if-then-else form of
      // max makes Z3 search for minutes. What it leaves goes to the exact
      // form below.
      std::vector<char> settled(diffs.size(), 0);
      bool hasMax = false;
      for (size_t at = 0; at < terms.numAtoms() && !hasMax; ++at)
        hasMax = terms.atom(at).kind == sym::AtomKind::Max;
      if (hasMax) {
        z3::context octx;
        z3::solver osolver(octx);
        Z3Lowering olower(octx, terms);
        olower.opaqueMax = true;
        z3::expr_vector odiffs(octx);
        build(octx, osolver, olower, odiffs);
        for (unsigned k = 0; k < odiffs.size(); ++k) {
          auto spent = std::chrono::duration_cast<std::chrono::milliseconds>(
                           std::chrono::steady_clock::now() - start)
                           .count();
          if (spent >= (long)left / 2)
            break;
          z3::params budget(octx);
          budget.set("timeout", (unsigned)(left / 2 - spent));
          osolver.set(budget);
          osolver.push();
          osolver.add(odiffs[k]);
          z3::check_result r = osolver.check();
          osolver.pop();
          if (r != z3::unsat)
            break;
          settled[k] = 1;
        }
      }
      for (unsigned k = 0; k < diffs.size(); ++k) {
        if (settled[k])
          continue;
        auto spent = std::chrono::duration_cast<std::chrono::milliseconds>(
                         std::chrono::steady_clock::now() - start)
                         .count();
        if (spent >= (long)left) {
          o.verdict = z3::unknown;
          o.reason = "timeout";
          break;
        }
        z3::params budget(ctx);
        budget.set("timeout", (unsigned)(left - spent));
        solver.set(budget);
        solver.push();
        solver.add(diffs[k]);
        z3::check_result r = solver.check();
        if (r == z3::sat) {
          o.verdict = z3::sat;
          // The model is read before the scope is popped.
          z3::model m = solver.get_model();
          for (size_t v = 0; v < terms.numVars(); ++v) {
            double val = 0;
            if (lower.hasVar(v)) {
              z3::expr e = m.eval(lower.var(v), true);
              std::string s = e.is_numeral() ? e.get_decimal_string(17) : "0";
              if (!s.empty() && s.back() == '?')
                s.pop_back();
              val = std::strtod(s.c_str(), nullptr);
            }
            o.model.push_back(val);
          }
          break;
        }
        if (r == z3::unknown) {
          o.verdict = z3::unknown;
          o.reason = solver.reason_unknown();
        }
        solver.pop();
      }
    } catch (const z3::exception &e) {
      o.error = e.msg();
    }
    return o;
  });
  if (!solved.error.empty()) {
    result.headline = "stage @" + stage.getSymName().str() +
                      ": solver error: " + solved.error;
    return result;
  }
  z3::check_result verdict = solved.verdict;
  std::vector<double> model = std::move(solved.model);
  std::string reason = solved.reason;

  if (verdict == z3::unsat) {
    result.outcome = StageResult::Proven;
    return result;
  }
  // Every counterexample is replayed on the concrete semantics before it is
  // reported: first the solver's model, then random points.
  if (verdict == z3::sat && replay(stage, *schedule, model, nullptr, result))
    return result;
  std::mt19937_64 rng(0x7e57);
  for (unsigned s = 0; s < options.replaySeeds; ++s)
    if (replay(stage, *schedule, {}, &rng, result))
      return result;
  result.outcome = StageResult::Unknown;
  result.headline = "stage @" + stage.getSymName().str() + ": unknown: ";
  if (verdict == z3::sat)
    result.headline += "the solver's counterexample relies on the abstraction "
                       "of non-linear functions and does not replay on their "
                       "real semantics";
  else
    result.headline += "the solver gave up (" + reason + ")";
  if (!differing.empty()) {
    const Check &c = out.checks[differing.front()];
    auto l = cast<LineageAttr>(stage.getGuarantees()[c.lineage]);
    result.details.push_back("first unsettled lineage: " + boxStr(l));
  }
  return result;
}

//===- StageVerifier.cpp - proving one stage ------------------------------===//
#include "TrainVerify/Verify/StageVerifier.h"
#include "TrainVerify/Dialect/ShapeUtils.h"
#include "TrainVerify/Verify/Executor.h"
#include "TrainVerify/Verify/Z3Lowering.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"
#include <cmath>
#include <chrono>
#include <algorithm>
#include <cerrno>
#include <poll.h>
#include <random>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace mlir;
using namespace mlir::tv;

namespace {
/// What the solver loop found.
struct SolverOutcome {
  z3::check_result verdict = z3::unknown;
  std::string reason; // why unknown
  std::string error;  // a Z3 exception
  std::vector<double> model;
};

std::string serialize(const SolverOutcome &o) {
  auto line = [](std::string s) {
    std::replace(s.begin(), s.end(), '\n', ' ');
    return s + "\n";
  };
  std::string out = std::to_string((int)o.verdict) + "\n" + line(o.reason) +
                    line(o.error) + std::to_string(o.model.size()) + "\n";
  char buf[40];
  for (double v : o.model) {
    snprintf(buf, sizeof(buf), "%.17g\n", v);
    out += buf;
  }
  return out + "end\n";
}

std::optional<SolverOutcome> deserialize(const std::string &text) {
  SmallVector<StringRef> lines;
  StringRef(text).split(lines, '\n');
  if (lines.size() < 5)
    return std::nullopt;
  SolverOutcome o;
  int v;
  size_t n;
  if (lines[0].getAsInteger(10, v) || lines[3].getAsInteger(10, n) ||
      lines.size() < 5 + n || lines[4 + n] != "end")
    return std::nullopt;
  o.verdict = (z3::check_result)v;
  o.reason = lines[1].str();
  o.error = lines[2].str();
  for (size_t i = 0; i < n; ++i)
    o.model.push_back(std::strtod(lines[4 + i].str().c_str(), nullptr));
  return o;
}

/// Runs the solver loop in a child process and waits at most `ms`: Z3's
/// timeout and its interrupt are not honoured everywhere (a non-linear
/// query ran minutes past both inside Z3_solver_check), and a child that is
/// killed always ends the stage, as unknown. A crash of Z3 is unknown too.
SolverOutcome solveIsolated(unsigned ms,
                            llvm::function_ref<SolverOutcome()> solve) {
  int fds[2];
  if (pipe(fds) != 0)
    return solve();
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return solve();
  }
  if (pid == 0) {
    close(fds[0]);
    std::string msg = serialize(solve());
    for (size_t off = 0; off < msg.size();) {
      ssize_t w = write(fds[1], msg.data() + off, msg.size() - off);
      if (w <= 0)
        break;
      off += w;
    }
    _exit(0);
  }
  close(fds[1]);
  // The child's own timeout ends most queries; the grace covers reading the
  // model before it is killed.
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::milliseconds((int64_t)ms + 2000);
  std::string text;
  bool killed = false;
  char buf[4096];
  while (true) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                    deadline - std::chrono::steady_clock::now())
                    .count();
    struct pollfd pfd = {fds[0], POLLIN, 0};
    int r = left > 0 ? poll(&pfd, 1, (int)left) : 0;
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0) {
      kill(pid, SIGKILL);
      killed = true;
      break;
    }
    ssize_t n = read(fds[0], buf, sizeof(buf));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    text.append(buf, n);
  }
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  SolverOutcome o;
  if (killed) {
    o.reason = "timeout";
    return o;
  }
  if (std::optional<SolverOutcome> got = deserialize(text))
    return *got;
  o.reason = WIFSIGNALED(status)
                 ? "the solver process died (signal " +
                       std::to_string(WTERMSIG(status)) + ")"
                 : "the solver process ended without an answer";
  return o;
}
} // namespace

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

std::string indexStr(ArrayRef<int64_t> idx) {
  std::string s = "[";
  for (auto [i, x] : llvm::enumerate(idx))
    s += (i ? ", " : "") + std::to_string(x);
  return s + "]";
}

std::string boxStr(LineageAttr l) {
  std::string s = "'" + l.getSpec().str() + "'[";
  for (unsigned i = 0; i < l.getRank(); ++i)
    s += (i ? ", " : "") + std::to_string(l.getLower()[i]) + ":" +
         std::to_string(l.getUpper()[i]);
  return s + "]";
}

void unravel(int64_t flat, ArrayRef<int64_t> shape, SmallVectorImpl<int64_t> &idx) {
  idx.resize(shape.size());
  for (int64_t i = (int64_t)shape.size() - 1; i >= 0; --i) {
    idx[i] = flat % shape[i];
    flat /= shape[i];
  }
}

/// Elements of `t` inside the lineage's box, in row-major order of the box.
template <typename V>
std::vector<V> sliceOf(const Tensor<V> &t, LineageAttr l) {
  SmallVector<int64_t> shape = l.getSliceShape();
  SmallVector<int64_t> strides = stridesOf(t.shape);
  std::vector<V> out;
  SmallVector<int64_t> idx;
  for (int64_t i = 0, e = numElements(shape); i < e; ++i) {
    unravel(i, shape, idx);
    int64_t flat = 0;
    for (size_t k = 0; k < idx.size(); ++k)
      flat += (idx[k] + l.getLower()[k]) * strides[k];
    out.push_back(t.data[flat]);
  }
  return out;
}

int kindOf(Type elt) {
  if (elt.isInteger(1))
    return 2;
  return isa<IntegerType>(elt) ? 1 : 0;
}

/// Inputs of a stage, bound from its assumptions, in one fixed order so that
/// symbolic and concrete runs create their fresh values identically.
template <typename D> struct Bindings {
  using V = typename D::V;
  using T = Tensor<V>;
  D &d;
  /// Makes a fresh input value; kind 0 real, 1 integer (ids), 2 bool (masks).
  std::function<V(const std::string &, int)> fresh;
  std::map<std::string, T> spec;
  std::map<std::pair<int64_t, std::string>, T> plan;
  /// Equalities that could not be substituted (a plan tensor assumed twice).
  std::vector<std::pair<V, V>> extra;

  T freshTensor(const std::string &name, RankedTensorType ty) {
    T t;
    t.shape.assign(ty.getShape().begin(), ty.getShape().end());
    int kind = kindOf(ty.getElementType());
    SmallVector<int64_t> idx;
    for (int64_t i = 0, e = ty.getNumElements(); i < e; ++i) {
      unravel(i, t.shape, idx);
      t.data.push_back(fresh(name + indexStr(idx), kind));
    }
    return t;
  }

  LogicalResult bind(StageOp stage) {
    for (Operation &op : stage.getSpec().getBody().front()) {
      if (auto in = dyn_cast<InputOp>(op))
        spec[in.getName().str()] =
            freshTensor(in.getName().str(), cast<RankedTensorType>(in.getType()));
      // A tag of an input is another name of the same spec tensor.
      if (auto tag = dyn_cast<TagOp>(op))
        if (auto in = tag.getValue().getDefiningOp<InputOp>())
          spec[tag.getName().str()] = spec[in.getName().str()];
    }
    // Plan tensor types, to size slices of spec tensors the spec side does
    // not read.
    std::map<std::pair<int64_t, std::string>, RankedTensorType> planTypes;
    for (auto prog : stage.getPlan().getBody().front().getOps<RankProgramOp>())
      for (auto in : prog.getBody().front().getOps<InputOp>())
        for (int64_t r : prog.getRanks())
          planTypes[{r, in.getName().str()}] =
              cast<RankedTensorType>(in.getType());
    for (Attribute a : stage.getAssumes()) {
      auto l = cast<LineageAttr>(a);
      std::vector<V> slice;
      auto it = spec.find(l.getSpec().str());
      int kind = 0;
      if (it != spec.end()) {
        ArrayRef<int64_t> full = it->second.shape;
        bool inside = full.size() == l.getRank();
        for (unsigned k = 0; inside && k < l.getRank(); ++k)
          inside = l.getLower()[k] >= 0 && l.getUpper()[k] <= full[k];
        if (!inside)
          return stage.emitError()
                 << "assumed lineage of '" << l.getSpec().getValue()
                 << "' lies outside the stage's spec tensor";
        slice = sliceOf(it->second, l);
      } else {
        l.walkRefs([&](size_t, PlanRefView ref) {
          auto ty = planTypes.find({ref.rank, ref.name.str()});
          if (ty != planTypes.end())
            kind = kindOf(ty->second.getElementType());
        });
        SmallVector<int64_t> shape = l.getSliceShape();
        SmallVector<int64_t> idx;
        for (int64_t i = 0, e = numElements(shape); i < e; ++i) {
          unravel(i, shape, idx);
          for (size_t k = 0; k < idx.size(); ++k)
            idx[k] += l.getLower()[k];
          slice.push_back(fresh(l.getSpec().str() + indexStr(idx), kind));
        }
      }
      SmallVector<int64_t> shape = l.getSliceShape();
      for (auto &group : l.getGroupRefs()) {
        std::vector<std::vector<V>> parts(group.size());
        std::vector<V> rest = slice;
        for (size_t k = 0; k + 1 < group.size(); ++k) {
          T t = freshTensor(group[k].getName().str() + "@" +
                                std::to_string(group[k].getRank()),
                            RankedTensorType::get(shape, Float32Type::get(
                                                             stage.getContext())));
          parts[k] = t.data;
          for (size_t i = 0; i < rest.size(); ++i)
            rest[i] = d.sub(rest[i], t.data[i]);
        }
        parts.back() = rest;
        for (auto [k, ref] : llvm::enumerate(group)) {
          auto key = std::make_pair(ref.getRank(), ref.getName().str());
          auto existing = plan.find(key);
          if (existing != plan.end()) {
            for (size_t i = 0; i < parts[k].size(); ++i)
              extra.push_back({existing->second.data[i], parts[k][i]});
            continue;
          }
          T t;
          t.shape.assign(shape.begin(), shape.end());
          t.data = parts[k];
          plan[key] = std::move(t);
        }
      }
    }
    return success();
  }

  InputFn<V> specInputs() {
    return [this](int64_t, StringRef name,
                  RankedTensorType) -> FailureOr<T> {
      auto it = spec.find(name.str());
      if (it == spec.end())
        return failure();
      return it->second;
    };
  }
  InputFn<V> planInputs(std::string &error) {
    return [this, &error](int64_t rank, StringRef name,
                          RankedTensorType ty) -> FailureOr<T> {
      auto it = plan.find({rank, name.str()});
      if (it == plan.end()) {
        error = "plan input '" + name.str() + "' on rank " +
                std::to_string(rank) + " is not covered by an assumed lineage";
        return failure();
      }
      if (ArrayRef<int64_t>(it->second.shape) != ty.getShape()) {
        error = "plan input '" + name.str() + "' on rank " +
                std::to_string(rank) + " does not have its lineage's shape";
        return failure();
      }
      return it->second;
    };
  }
};

/// One compared element: spec slice element vs the sum of one group.
struct Check {
  unsigned lineage, group;
  int64_t element;
};

template <typename V> struct Outcome {
  RunState<V> spec, plan;
  std::vector<std::pair<V, V>> pairs; // (spec, plan) per check
  std::vector<Check> checks;
  std::string error;
};

template <typename D>
LogicalResult runStage(D &d, StageOp stage, const PlanSchedule &schedule,
                       Bindings<D> &b, Outcome<typename D::V> &out) {
  using V = typename D::V;
  {
    ScopedDiagnosticHandler silence(stage.getContext(),
                                    [&](Diagnostic &diag) {
                                      out.error = diag.str();
                                      return success();
                                    });
    if (failed(b.bind(stage)))
      return failure();
    if (failed(runSpec(d, stage.getSpec(), b.specInputs(), out.spec)))
      return failure();
    if (failed(runPlan(d, schedule, b.planInputs(out.error), out.plan)))
      return failure();
  }
  for (auto [li, a] : llvm::enumerate(stage.getGuarantees())) {
    auto l = cast<LineageAttr>(a);
    const Tensor<V> *s = out.spec.lookupNamed(-1, l.getSpec().getValue());
    if (!s) {
      out.error = "the stage's spec does not compute '" + l.getSpec().str() + "'";
      return failure();
    }
    std::vector<V> slice = sliceOf(*s, l);
    for (auto [gi, group] : llvm::enumerate(l.getGroupRefs())) {
      std::vector<V> sum(slice.size(), d.zero());
      for (PlanRefAttr ref : group) {
        const Tensor<V> *p =
            out.plan.lookupNamed(ref.getRank(), ref.getName());
        if (!p || p->data.size() != slice.size()) {
          out.error = "the stage's plan does not compute '" +
                      ref.getName().str() + "' on rank " +
                      std::to_string(ref.getRank()) + " with the lineage's shape";
          return failure();
        }
        for (size_t i = 0; i < sum.size(); ++i)
          sum[i] = d.add(sum[i], p->data[i]);
      }
      for (size_t i = 0; i < slice.size(); ++i) {
        out.pairs.push_back({slice[i], sum[i]});
        out.checks.push_back({(unsigned)li, (unsigned)gi, (int64_t)i});
      }
    }
  }
  return success();
}

thread_local double tolerance = 1e-6;

bool close(double a, double b) {
  if (std::isnan(a) || std::isnan(b))
    return false;
  if (std::isinf(a) || std::isinf(b))
    return a == b;
  return std::fabs(a - b) <= tolerance * (1 + std::fabs(a) + std::fabs(b));
}

std::string fmt(double v) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << llvm::format("%.6g", v);
  return s;
}

/// Where a plan tensor named `name` on `rank` is computed in the stage.
Operation *definingOp(StageOp stage, int64_t rank, StringRef name) {
  for (auto prog : stage.getPlan().getBody().front().getOps<RankProgramOp>()) {
    if (!llvm::is_contained(prog.getRanks(), rank))
      continue;
    for (auto out : prog.getBody().front().getOps<OutputOp>())
      if (out.getName() == name)
        return out.getValue().getDefiningOp() ? out.getValue().getDefiningOp()
                                              : out.getOperation();
  }
  return nullptr;
}

std::string opDescription(Operation *op, int64_t rank) {
  std::string s = "'" + op->getName().getStringRef().str() + "' on rank " +
                  std::to_string(rank);
  if (auto mb = op->getAttrOfType<IntegerAttr>("mb"))
    s += ", micro-batch " + std::to_string(mb.getInt());
  if (auto src = op->getAttrOfType<StringAttr>("src"))
    s += " (source node " + src.str() + ")";
  if (auto loc = dyn_cast<FileLineColLoc>(op->getLoc()))
    s += " at " + loc.getFilename().str() + ":" + std::to_string(loc.getLine());
  return s;
}

/// Concrete replay: the counterexample as real numbers, or nothing if the
/// assignment does not show a mismatch.
bool replay(StageOp stage, const PlanSchedule &schedule,
            const std::vector<double> &assignment, std::mt19937_64 *rng,
            StageResult &result) {
  ConcreteDomain cd;
  size_t next = 0;
  std::vector<std::pair<std::string, double>> inputs;
  Bindings<ConcreteDomain> b{cd, [&](const std::string &name, int kind) {
                               double v;
                               if (next < assignment.size() || !rng) {
                                 v = next < assignment.size() ? assignment[next]
                                                              : 0.0;
                               } else if (kind == 2) {
                                 v = (double)((*rng)() % 2);
                               } else if (kind == 1) {
                                 v = (double)((*rng)() % 8);
                               } else {
                                 v = std::uniform_real_distribution<double>(
                                     -2.0, 2.0)(*rng);
                               }
                               if (kind)
                                 v = std::round(v);
                               ++next;
                               inputs.push_back({name, v});
                               return v;
                             },
                             {}, {}, {}};
  Outcome<double> out;
  if (failed(runStage(cd, stage, schedule, b, out))) {
    result.outcome = StageResult::Error;
    result.headline = "stage @" + stage.getSymName().str() +
                      ": concrete run failed: " + out.error;
    return false;
  }
  for (auto &[x, y] : b.extra)
    if (!close(x, y)) {
      // The assignment violates an assumption (a plan tensor assumed equal
      // to two spec slices): it shows nothing either way.
      if (rng && assignment.empty()) {
        result.outcome = StageResult::Error;
        result.headline = "stage @" + stage.getSymName().str() +
                          ": random inputs cannot satisfy the stage's "
                          "assumptions (a plan tensor is assumed equal to two "
                          "spec slices); nothing was checked";
      }
      return false;
    }
  // Find the first violated check.
  // A NaN shows nothing about the plan (a model that divides by zero,
  // excluded by assumption A4); -inf against a number is a real mismatch
  // (a missing mask).
  size_t bad = out.pairs.size();
  for (size_t i = 0; i < out.pairs.size(); ++i)
    if (!close(out.pairs[i].first, out.pairs[i].second) &&
        !std::isnan(out.pairs[i].first) && !std::isnan(out.pairs[i].second)) {
      bad = i;
      break;
    }
  if (bad == out.pairs.size())
    return false;
  const Check &c = out.checks[bad];
  auto l = cast<LineageAttr>(stage.getGuarantees()[c.lineage]);
  auto group = l.getGroupRefs()[c.group];
  Operation *def = definingOp(stage, group[0].getRank(), group[0].getName());
  result.outcome = StageResult::Counterexample;
  if (def)
    result.loc = def->getLoc();
  std::string planSide;
  for (auto [k, ref] : llvm::enumerate(group))
    planSide += (k ? " + " : "") + ("'" + ref.getName().str() + "'@" +
                                    std::to_string(ref.getRank()));
  result.headline = "stage @" + stage.getSymName().str() +
                    ": counterexample: lineage " + boxStr(l) + " = " +
                    planSide + " does not hold";
  if (def)
    result.details.push_back("computed by " +
                             opDescription(def, group[0].getRank()));
  // Values of the violated lineage: spec slice and each plan tensor.
  SmallVector<int64_t> shape = l.getSliceShape();
  const Tensor<double> *specT = out.spec.lookupNamed(-1, l.getSpec().getValue());
  std::vector<double> slice = sliceOf(*specT, l);
  unsigned shown = 0;
  SmallVector<int64_t> idx;
  for (size_t i = 0; i < out.pairs.size() && shown < 8; ++i) {
    const Check &ci = out.checks[i];
    if (ci.lineage != c.lineage || ci.group != c.group)
      continue;
    bool mismatch = !close(out.pairs[i].first, out.pairs[i].second);
    unravel(ci.element, shape, idx);
    for (size_t k = 0; k < idx.size(); ++k)
      idx[k] += l.getLower()[k];
    std::string line = "  spec '" + l.getSpec().str() + "'" + indexStr(idx) +
                       " = " + fmt(slice[ci.element]) + "; plan";
    for (PlanRefAttr ref : group) {
      const Tensor<double> *p =
          out.plan.lookupNamed(ref.getRank(), ref.getName());
      line += " '" + ref.getName().str() + "'@" + std::to_string(ref.getRank()) +
              " = " + fmt(p->data[ci.element]);
    }
    if (group.size() > 1)
      line += " (sum " + fmt(out.pairs[i].second) + ")";
    if (mismatch)
      line += "   <-- mismatch";
    result.details.push_back(line);
    ++shown;
  }
  std::string in = "inputs:";
  for (size_t i = 0; i < inputs.size() && i < 12; ++i)
    in += " " + inputs[i].first + "=" + fmt(inputs[i].second);
  if (inputs.size() > 12)
    in += " ...";
  result.details.push_back(in);
  if (ArrayAttr folded = stage.getPlan().getFoldedAttr()) {
    std::string axes;
    for (auto [k, a] : llvm::enumerate(folded))
      axes += (k ? ", '" : "'") + cast<StringAttr>(a).getValue().str() + "'";
    result.details.push_back(
        "the stage is folded along " + axes +
        " (--tv-fold-symmetry): the ranks along it run this program on "
        "translated data, so the failure shown at coordinate 0 occurs at "
        "every coordinate");
  }
  if (stage.getPlan().getFoldedMicroBatches())
    result.details.push_back(
        "the stage is folded to micro-batch 0 (--tv-fold-symmetry): every "
        "micro-batch runs these ops on its own rows, so the failure shown for "
        "micro-batch 0 occurs in every micro-batch");
  return true;
}

} // namespace

StageResult mlir::tv::verifyStage(StageOp stage, const StageOptions &options) {
  StageResult result(stage.getLoc());
  if (!stage.getSpec() || !stage.getPlan()) {
    result.headline = "stage has no spec or no plan";
    return result;
  }
  std::string schedError;
  std::optional<PlanSchedule> schedule;
  {
    ScopedDiagnosticHandler h(stage.getContext(), [&](Diagnostic &diag) {
      schedError = diag.str();
      result.loc = diag.getLocation();
      return success();
    });
    auto s = PlanSchedule::build(stage.getPlan());
    if (succeeded(s))
      schedule = std::move(*s);
  }
  if (!schedule) {
    result.headline = "stage @" + stage.getSymName().str() + ": " + schedError;
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
                      " tensor elements is too large to verify symbolically "
                      "(run --tv-shape-reduce first, or see its warning)";
    return result;
  }
  sym::TermContext terms;
  SymDomain sd{terms};
  sd.budget = options.maxTermBytes;
  Bindings<SymDomain> b{sd,
                        [&](const std::string &name, int kind) {
                          return terms.var(name, kind == 1, kind == 2);
                        },
                        {}, {}, {}};
  Outcome<sym::TermId> out;
  if (failed(runStage(sd, stage, *schedule, b, out))) {
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
  if (differing.empty() && b.extra.empty() && !options.wantSmtLib) {
    result.outcome = StageResult::Proven;
    result.byNormalization = true;
    return result;
  }

  // On a large stage a real bug usually shows on random inputs: replaying a
  // few concrete points first costs one interpretation each and spares the
  // solver a query that can be far larger than the stage (a one-rank bug in
  // an unfolded 671B MoE stage drove Z3 past 16 GB). Only a replayed
  // mismatch is reported, so this never turns a proof into a
  // counterexample. Small stages go to the solver first: its models are
  // simpler to read (zeros where the values do not matter).
  if (!differing.empty() && b.extra.empty() && !options.queryOnly &&
      terms.footprint() > options.replayFirstBytes) {
    std::mt19937_64 early(0x5eed);
    for (unsigned s = 0; s < options.replaySeeds; ++s) {
      StageResult probe = result; // a failed replay leaves its note here
      if (replay(stage, *schedule, {}, &early, probe))
        return probe;
    }
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
    for (size_t i : all)
      diffs.push_back(lower.term(out.pairs[i].first) !=
                      lower.term(out.pairs[i].second));
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
      result.smtlib = solver.to_smt2();
    } catch (const z3::exception &e) {
      result.headline = "stage @" + stage.getSymName().str() +
                        ": solver error: " + e.msg();
      return result;
    }
    if (options.queryOnly)
      return result;
  }
  if (differing.empty() && b.extra.empty()) {
    result.outcome = StageResult::Proven;
    result.byNormalization = true;
    return result;
  }
  // One query per unsettled element, sharing the assumptions: the
  // disjunction of all of them is unsat iff each is, and small queries
  // (one element's cone) are far easier for Z3 than their disjunction
  // (a 32-micro-batch vocabulary-parallel embedding timed out as one
  // query). The stage's timeout is a budget shared by the queries; a sat
  // query ends the search, an unknown one does not (a later element may
  // still give a counterexample).
  SolverOutcome solved = solveIsolated(options.timeoutMs, [&] {
    SolverOutcome o;
    try {
      z3::context ctx;
      z3::solver solver(ctx);
      z3::params p(ctx);
      p.set("timeout", options.timeoutMs);
      solver.set(p);
      Z3Lowering lower(ctx, terms);
      z3::expr_vector diffs(ctx);
      build(ctx, solver, lower, diffs);
      auto start = std::chrono::steady_clock::now();
      o.verdict = z3::unsat;
      for (unsigned k = 0; k < diffs.size(); ++k) {
        auto spent = std::chrono::duration_cast<std::chrono::milliseconds>(
                         std::chrono::steady_clock::now() - start)
                         .count();
        if (spent >= (long)options.timeoutMs) {
          o.verdict = z3::unknown;
          o.reason = "timeout";
          break;
        }
        z3::params budget(ctx);
        budget.set("timeout", (unsigned)(options.timeoutMs - spent));
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

StageResult mlir::tv::interpretStage(StageOp stage, uint64_t seed,
                                     double tol) {
  StageResult result(stage.getLoc());
  std::string schedError;
  std::optional<PlanSchedule> schedule;
  {
    ScopedDiagnosticHandler h(stage.getContext(), [&](Diagnostic &diag) {
      schedError = diag.str();
      result.loc = diag.getLocation();
      return success();
    });
    auto s = PlanSchedule::build(stage.getPlan());
    if (succeeded(s))
      schedule = std::move(*s);
  }
  if (!schedule) {
    result.headline = schedError;
    return result;
  }
  tolerance = tol;
  std::mt19937_64 rng(seed);
  bool found = replay(stage, *schedule, {}, &rng, result);
  tolerance = 1e-6;
  if (!found) {
    if (result.outcome == StageResult::Error && !result.headline.empty())
      return result;
    result.outcome = StageResult::Proven;
  }
  return result;
}

namespace {
/// A translation of a stage's ranks along mesh axes: rank r becomes the rank
/// at coords(r) - offset. The offset is, per axis, the smallest coordinate
/// of the stage's ranks, or 0 where translating could change the semantics.
struct RankShift {
  int64_t delta = 0; // subtracted from every rank

  explicit RankShift(StageOp stage) {
    PlanOp plan = stage.getPlan();
    if (!plan)
      return;
    auto mesh =
        SymbolTable::lookupNearestSymbolFrom<MeshOp>(stage, plan.getMeshAttr());
    if (!mesh)
      return;
    ArrayRef<int64_t> sizes = mesh.getSizes();
    unsigned n = sizes.size();
    SmallVector<int64_t> offset(n, INT64_MAX);
    DenseSet<int64_t> ranks;
    for (auto prog : plan.getBody().front().getOps<RankProgramOp>())
      for (int64_t r : prog.getRanks()) {
        ranks.insert(r);
        SmallVector<int64_t> c = mesh.getCoords(r);
        if (c.size() != n)
          return;
        for (unsigned i = 0; i < n; ++i)
          offset[i] = std::min(offset[i], c[i]);
      }
    if (ranks.empty())
      return;
    auto pin = [&](StringRef axis) {
      int64_t i = mesh.getAxisIndex(axis);
      if (i >= 0)
        offset[i] = 0;
    };
    // An op that names an axis (a collective's group, a vocabulary shard's
    // coordinate) may read the coordinate: no translation along it.
    // Point-to-point along an axis is translated only when every peer is a
    // rank of the stage (a peer off the mesh could come onto it).
    stage.getBody().walk([&](Operation *op) {
      for (NamedAttribute a : op->getAttrs()) {
        if (a.getName() == "peer_axis")
          continue;
        if (auto s = dyn_cast<StringAttr>(a.getValue()))
          pin(s.getValue());
        else if (auto arr = dyn_cast<ArrayAttr>(a.getValue()))
          for (Attribute e : arr)
            if (auto s = dyn_cast<StringAttr>(e))
              pin(s.getValue());
      }
      auto peerAxis = op->getAttrOfType<StringAttr>("peer_axis");
      auto peerShift = op->getAttrOfType<DenseI64ArrayAttr>("peer_shift");
      if ((!peerAxis && !peerShift) || !isa<SendOp, RecvOp>(op))
        return;
      auto prog = op->getParentOfType<RankProgramOp>();
      for (int64_t r : prog ? prog.getRanks() : ArrayRef<int64_t>()) {
        int64_t peer = isa<SendOp>(op) ? cast<SendOp>(op).getPeerOf(r)
                                       : cast<RecvOp>(op).getPeerOf(r);
        if (peer < 0 || !ranks.contains(peer)) {
          if (peerAxis)
            pin(peerAxis.getValue());
          else
            for (auto [i, d] : llvm::enumerate(peerShift.asArrayRef()))
              if (d != 0)
                offset[i] = 0;
          break;
        }
      }
    });
    int64_t stride = 1;
    for (int i = n - 1; i >= 0; --i) {
      delta += offset[i] * stride;
      stride *= sizes[i];
    }
  }
  int64_t operator()(int64_t rank) const { return rank - delta; }
};
} // namespace

int64_t mlir::tv::canonicalRank(StageOp stage, int64_t rank) {
  return RankShift(stage)(rank);
}

std::string mlir::tv::canonicalStageKey(StageOp stage) {
  RankShift shift(stage);
  llvm::StringMap<unsigned> rename;
  auto ren = [&](StringRef n) {
    auto [it, inserted] = rename.try_emplace(n, rename.size());
    return "%n" + std::to_string(it->second);
  };
  DenseMap<Value, unsigned> valueIds;
  std::string key;
  llvm::raw_string_ostream os(key);
  auto printLineage = [&](Attribute a) {
    auto l = cast<LineageAttr>(a);
    os << ren(l.getSpec().getValue()) << "[";
    for (unsigned i = 0; i < l.getRank(); ++i)
      os << l.getLower()[i] << ":" << l.getUpper()[i] << ",";
    os << "]=";
    l.walkGroups([&](size_t, ArrayRef<PlanRefView> g) {
      os << "(";
      for (const PlanRefView &r : g)
        os << ren(r.name) << "@" << shift(r.rank) << "+";
      os << ")";
    });
    os << ";";
  };
  // Walk the regions first so names get numbers in program order.
  stage.getBody().walk<WalkOrder::PreOrder>([&](Operation *op) {
    os << op->getName().getStringRef() << "(";
    for (Value v : op->getOperands())
      os << valueIds.lookup(v) << ",";
    os << ")";
    for (Value r : op->getResults()) {
      valueIds[r] = valueIds.size() + 1;
      os << r.getType();
    }
    for (NamedAttribute a : op->getAttrs()) {
      // Provenance (micro-batch, source node) does not change what a stage
      // computes.
      if (a.getName() == "sym_name" || a.getName() == "mb" ||
          a.getName() == "src")
        continue;
      os << " " << a.getName().getValue() << "=";
      if (isa<InputOp, TagOp, OutputOp>(op) && a.getName() == "name") {
        os << ren(cast<StringAttr>(a.getValue()).getValue());
      } else if (isa<RankProgramOp>(op) && a.getName() == "ranks") {
        for (int64_t r : cast<DenseI64ArrayAttr>(a.getValue()).asArrayRef())
          os << shift(r) << ",";
      } else if (isa<SendOp, RecvOp>(op) && a.getName() == "peer") {
        os << shift(cast<IntegerAttr>(a.getValue()).getInt());
      } else if (a.getName() == "rank_groups") {
        for (Attribute g : cast<ArrayAttr>(a.getValue())) {
          os << "[";
          for (int64_t r : cast<DenseI64ArrayAttr>(g).asArrayRef())
            os << shift(r) << ",";
          os << "]";
        }
      } else {
        os << a.getValue();
      }
    }
    os << "|";
  });
  os << "A:";
  for (Attribute a : stage.getAssumes())
    printLineage(a);
  os << "G:";
  for (Attribute a : stage.getGuarantees())
    printLineage(a);
  return key;
}

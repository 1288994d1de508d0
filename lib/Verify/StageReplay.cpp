//===- StageReplay.cpp - replaying a stage on concrete inputs -------------===//
//
// A counterexample is reported only after the stage's spec and plan are run
// on real numbers (the solver's model or random inputs) and a lineage fails
// there; the report names the violated lineage, the op that computes the
// plan side and the values. --tv-interpret runs the same replay.
//
//===----------------------------------------------------------------------===//
#include "TrainVerify/Verify/StageVerifier.h"
#include "TrainVerify/Dialect/Lineage.h"
#include "Folder.h"
#include "TrainVerify/Semantics/Semantics.h"
#include "StageRun.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"
#include <cmath>
#include <random>

using namespace mlir;
using namespace mlir::tv;
using namespace mlir::tv::stagecheck;

namespace {
// Relative: doubles carry 1e-16; reductions in a stage lose a few digits at
// most. Tight enough to see a changed epsilon or a constant off by 1e-8.
thread_local double tolerance = 1e-9;
} // namespace

bool mlir::tv::stagecheck::closeReal(double a, double b) {
  if (std::isnan(a) || std::isnan(b))
    return false;
  if (std::isinf(a) || std::isinf(b))
    return a == b;
  return std::fabs(a - b) <= tolerance * (1 + std::fabs(a) + std::fabs(b));
}

bool mlir::tv::stagecheck::closeAs(double a, double b, unsigned bits) {
  if (!bits || !std::isfinite(a) || !std::isfinite(b) ||
      std::fabs(a) >= 0x1p53 || std::fabs(b) >= 0x1p53)
    return closeReal(a, b);
  return sym::wrapSigned((int64_t)std::llround(a), bits) ==
         sym::wrapSigned((int64_t)std::llround(b), bits);
}

std::string mlir::tv::stagecheck::fmt(double v) {
  std::string s;
  llvm::raw_string_ostream os(s);
  // Integers (ids, n-bit data) exactly; other values to six digits.
  if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 0x1p53)
    os << llvm::format("%.0f", v);
  else
    os << llvm::format("%.6g", v);
  return s;
}

namespace {

/// What the stage's spec does with one of its inputs, so that random values
/// exercise it: the ids of an embedding or a loss range over the whole
/// vocabulary (`idBound`), and a value under a square root or a logarithm is
/// drawn positive.
struct InputDomain {
  int64_t idBound = 0;
  bool positive = false;
};

/// The domains of the spec inputs of `stage`, found by following each
/// input through data movement to the ops that constrain it.
llvm::StringMap<InputDomain> inputDomains(StageOp stage) {
  llvm::StringMap<InputDomain> out;
  for (auto in : stage.getSpec().getBody().front().getOps<InputOp>()) {
    InputDomain dom;
    SmallVector<Value> work{in.getResult()};
    DenseSet<Value> seen;
    while (!work.empty()) {
      Value v = work.pop_back_val();
      if (!seen.insert(v).second)
        continue;
      for (OpOperand &use : v.getUses()) {
        Operation *u = use.getOwner();
        auto bound = [&](int64_t b) {
          if (b > 0)
            dom.idBound = dom.idBound ? std::min(dom.idBound, b) : b;
        };
        if (isa<ReshapeOp, TransposeOp, SliceOp, CopyOp, BroadcastOp,
                ConcatOp>(u))
          work.push_back(u->getResult(0));
        else if (auto e = dyn_cast<EmbeddingOp>(u); e && use.getOperandNumber() == 0)
          bound(cast<RankedTensorType>(e.getTable().getType()).getDimSize(0));
        else if (auto ce = dyn_cast<CrossEntropyOp>(u);
                 ce && use.getOperandNumber() == 1)
          bound(cast<RankedTensorType>(ce.getLogits().getType()).getShape().back());
        else if (isa<SqrtOp, RsqrtOp, LogOp>(u))
          dom.positive = true;
      }
    }
    out[in.getName()] = dom;
  }
  return out;
}

/// A random input value of `kind` (0 real, 1 integer id, 2 mask bit) for
/// the element `element` ("name[i, j]") of an input: ids over the input's
/// vocabulary (else [0, 8)), reals from [-2, 2] ([1/4, 2] under a root or a
/// logarithm), or with `smallIntegers` from {±1, ±2, ±3} ({1, 2, 3}).
double drawInput(std::mt19937_64 &rng, int kind, bool smallIntegers,
                 const llvm::StringMap<InputDomain> *domains = nullptr,
                 StringRef element = "") {
  InputDomain dom;
  if (domains) {
    auto it = domains->find(element.take_front(element.rfind('[')));
    if (it != domains->end())
      dom = it->second;
  }
  if (kind == 2)
    return (double)(rng() % 2);
  if (kind == 1)
    return (double)(rng() % uint64_t(dom.idBound > 0 ? dom.idBound : 8));
  if (smallIntegers) {
    static const double picks[] = {-3, -2, -1, 1, 2, 3};
    return dom.positive ? picks[3 + rng() % 3] : picks[rng() % 6];
  }
  return dom.positive
             ? std::uniform_real_distribution<double>(0.25, 2.0)(rng)
             : std::uniform_real_distribution<double>(-2.0, 2.0)(rng);
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

/// The value a plan tensor named `name` on `rank` holds in the stage.
Value outputValue(StageOp stage, int64_t rank, StringRef name) {
  for (auto prog : stage.getPlan().getBody().front().getOps<RankProgramOp>())
    if (llvm::is_contained(prog.getRanks(), rank))
      for (auto out : prog.getBody().front().getOps<OutputOp>())
        if (out.getName() == name)
          return out.getValue();
  return Value();
}

std::string opDescription(Operation *op, int64_t rank) {
  std::string s = "'" + op->getName().getStringRef().str() + "' on rank " +
                  std::to_string(rank);
  if (std::optional<int64_t> mb = getMicroBatch(op))
    s += ", micro-batch " + std::to_string(*mb);
  if (std::optional<StringRef> src = getSourceOp(op))
    s += " (source node " + src->str() + ")";
  if (std::string loc = fileLineOf(op->getLoc()); !loc.empty())
    s += " at " + loc;
  return s;
}

} // namespace

bool mlir::tv::stagecheck::replay(StageOp stage, const PlanSchedule &schedule,
                                  const std::vector<double> &assignment,
                                  std::mt19937_64 *rng, StageResult &result,
                                  bool smallIntegers) {
  ConcreteDomain cd;
  size_t next = 0;
  std::vector<std::pair<std::string, double>> inputs;
  llvm::StringMap<InputDomain> domains = inputDomains(stage);
  Bindings<ConcreteDomain> b{cd, [&](const std::string &name, int kind) {
                               double v;
                               if (next < assignment.size() || !rng) {
                                 v = next < assignment.size() ? assignment[next]
                                                              : 0.0;
                               } else {
                                 v = drawInput(*rng, kind, smallIntegers,
                                               &domains, name);
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
    if (!closeReal(x, y)) {
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
  // But on generic random reals a plan NaN against a finite spec is the
  // plan's own (silu of a masked -inf; decision 85); not on small integers
  // or solver models, which hit zeros by chance.
  bool genericDraw = rng && assignment.empty() && !smallIntegers;
  auto mismatch = [&](double spec, double plan, unsigned bits) {
    return !closeAs(spec, plan, bits) && !std::isnan(spec) &&
           (!std::isnan(plan) || genericDraw);
  };
  size_t bad = out.pairs.size();
  result.nanElements = llvm::count_if(out.pairs, [&](auto &p) {
    return std::isnan(p.first) || (std::isnan(p.second) && !genericDraw);
  });
  for (size_t i = 0; i < out.pairs.size(); ++i)
    if (mismatch(out.pairs[i].first, out.pairs[i].second,
                 out.checks[i].bits)) {
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
  // A value received is the sender's choice: name the send that delivered
  // it (issue 34: for a send/recv pair, name the sender).
  // The send that delivered a receive's value on `rank`, and its rank.
  auto sendOf = [&](Operation *recv,
                    int64_t rank) -> std::pair<Operation *, int64_t> {
    if (isa_and_nonnull<RecvOp>(recv))
      for (const PlanStep &step : schedule.steps)
        if (step.kind == PlanStep::P2P && step.op == recv &&
            step.rank == rank && step.sendOp)
          return {step.sendOp, step.peer};
    return {nullptr, 0};
  };
  auto senderOf = [&](Operation *recv, int64_t rank) -> std::string {
    auto [send, peer] = sendOf(recv, rank);
    return send ? "sent by " + opDescription(send, peer) : "";
  };
  if (def) {
    result.details.push_back("computed by " +
                             opDescription(def, group[0].getRank()));
    if (std::string sent = senderOf(def, group[0].getRank()); !sent.empty())
      result.details.push_back(sent);
  }
  // Where the plan departs from the spec first, which may be ops before the
  // one that computes the failing tensor. Searched on generic (random)
  // inputs: a solver's model is full of zeros, on which a wrong partial can
  // equal the right whole by coincidence.
  Outcome<double> generic;
  const Outcome<double> *search = &out;
  {
    std::mt19937_64 grng(0x7476);
    Bindings<ConcreteDomain> gb{cd,
                                [&](const std::string &name, int kind) {
                                  return drawInput(grng, kind, false,
                                                   &domains, name);
                                },
                                {}, {}, {}};
    bool assumptionsHold = true;
    if (succeeded(runStage(cd, stage, schedule, gb, generic))) {
      for (auto &[x, y] : gb.extra)
        assumptionsHold &= closeReal(x, y);
      if (assumptionsHold && bad < generic.pairs.size() &&
          !closeReal(generic.pairs[bad].first, generic.pairs[bad].second))
        search = &generic;
    }
  }
  result.reported = def;
  result.rank = group[0].getRank();
  auto text = [](const Tensor<double> &t) {
    std::string s = "[";
    for (size_t i = 0; i < t.data.size() && i < 3; ++i)
      s += (i ? ", " : "") + fmt(t.data[i]);
    return s + (t.data.size() > 3 ? ", ...]" : "]");
  };
  for (auto &[key, t] : out.spec.values)
    result.specValues[key.second] = text(t);
  for (auto &[key, t] : out.plan.values)
    if (key.first == result.rank)
      result.planValues[key.second] = text(t);
  bool located = false;
  // A received value that departs was computed by the sender, and a
  // collective whose operand here agrees got the departure from another
  // member: the search goes on in that rank's program, through at most a
  // few hops. The receive or collective stays blamed when the other
  // programs agree up to it (the right tensor sent from the wrong place,
  // the wrong collective).
  auto upstream = [&](Operation *first, int64_t &rank,
                      std::string &why) -> Operation * {
    std::string path;
    MeshOp mesh = SymbolTable::lookupNearestSymbolFrom<MeshOp>(
        stage, stage.getPlan().getMeshAttr());
    for (int hop = 0; hop < 8 && first; ++hop) {
      // The ranks the value came from: a receive's sender, or the other
      // members of a collective (whose own operand here agrees).
      SmallVector<int64_t> from;
      if (isa<RecvOp>(first)) {
        if (auto [send, peer] = sendOf(first, rank); send)
          from.push_back(peer);
      } else if (isCollectiveOp(first) && mesh) {
        SmallVector<StringRef> axes;
        if (auto list = first->getAttrOfType<ArrayAttr>("axes"))
          for (Attribute a : list)
            axes.push_back(cast<StringAttr>(a).getValue());
        if (!axes.empty())
          for (int64_t r : mesh.getAxisGroup(rank, axes))
            if (r != rank)
              from.push_back(r);
      }
      Operation *there = nullptr;
      int64_t at = rank;
      std::string thereWhy;
      for (int64_t r : from) {
        std::string w;
        Operation *op = firstDivergingOp(stage, r, *search, Value(), w);
        // The same collective on another member: nothing before it there.
        if (op && op != first) {
          there = op, at = r, thereWhy = w;
          break;
        }
      }
      if (!there)
        break;
      path += (path.empty() ? "" : ", ") + opDescription(first, rank);
      first = there;
      rank = at;
      why = thereWhy + "; reached through " + path;
    }
    return first;
  };
  for (PlanRefAttr ref : group) {
    std::string why;
    std::optional<FoldedOp> folded;
    bool dead = false;
    if (Operation *first =
            firstDivergingOp(stage, ref.getRank(), *search,
                             group.size() == 1
                                 ? outputValue(stage, ref.getRank(),
                                               ref.getName())
                                 : Value(),
                             why, &folded, &dead)) {
      located = true;
      int64_t rank = ref.getRank();
      // Padding combined with real elements on another member of a group
      // this rank shares (the vocabulary shard that holds the padding):
      // wrong wherever it reaches, and blamed there (decision 107).
      MeshOp mesh = SymbolTable::lookupNearestSymbolFrom<MeshOp>(
          stage, stage.getPlan().getMeshAttr());
      int tries = 0;
      SmallVector<Attribute> axes;
      if (mesh && !dead)
        axes = llvm::to_vector(mesh.getAxes());
      for (Attribute axis : axes)
        for (int64_t r : mesh.getAxisGroup(
                 rank, {cast<StringAttr>(axis).getValue()})) {
          if (dead || r == rank || ++tries > 16)
            continue;
          std::string w;
          std::optional<FoldedOp> f;
          bool d = false;
          Operation *op = firstDivergingOp(stage, r, *search, Value(), w, &f, &d);
          if (op && d) {
            why = w + "; on rank " + std::to_string(r) + ", a member of rank " +
                  std::to_string(rank) + "'s '" +
                  cast<StringAttr>(axis).getValue().str() + "' group";
            first = op, folded = f, rank = r, dead = true;
          }
        }
      if (!folded && !dead)
        first = upstream(first, rank, why);
      if (ref.getRank() == result.rank)
        result.diverging = first;
      if (search != &out)
        why += ", on random inputs";
      if (folded) {
        // An identity folded away (decision 103): named by its own
        // location, with the op it was folded into.
        std::string at = fileLineOf(folded->loc);
        std::string d = "'" + folded->kind + "' on rank " +
                        std::to_string(rank);
        if (std::optional<int64_t> mb = getMicroBatch(first))
          d += ", micro-batch " + std::to_string(*mb);
        if (!at.empty())
          d += " at " + at;
        result.details.push_back("first diverging op: " + d +
                                 ", folded away as an identity into " +
                                 opDescription(first, rank) + ": " + why);
      } else if (first != def) {
        result.details.push_back(
            "first diverging op: " + opDescription(first, rank) + ": " + why);
        if (std::string sent = senderOf(first, rank); !sent.empty())
          result.details.push_back(sent);
      } else {
        result.details.push_back("first diverging op: that op (" + why + ")");
      }
      break;
    }
  }
  if (!located && group.size() == 1) {
    Value expected;
    for (auto o : stage.getSpec().getBody().front().getOps<OutputOp>())
      if (o.getName() == l.getSpec().getValue())
        expected = o.getValue();
    const Tensor<double> *p =
        search->plan.lookupNamed(group[0].getRank(), group[0].getName());
    const Tensor<double> *specT = search->spec.lookupNamed(-1, l.getSpec());
    std::optional<SmallVector<int64_t>> at =
        p && specT ? blockOffsetsOf(*p, *specT) : std::nullopt;
    if (at && ArrayRef<int64_t>(*at) != l.getLower()) {
      // The right tensor, the wrong block: another micro-batch's or rank's
      // rows (a swapped receive, a wrong offset).
      std::string got = "[";
      for (auto [k, o] : llvm::enumerate(*at))
        got += (k ? ", " : "") + std::to_string(o) + ":" +
               std::to_string(o + p->shape[k]);
      std::string why = "the plan's value is the block " + got + "] of '" +
                        l.getSpec().str() + "', where the lineage expects " +
                        boxStr(l) + ": the right tensor from the wrong place";
      if (search != &out)
        why += ", on random inputs";
      result.diverging = def;
      // A send of one micro-batch whose value another micro-batch's op
      // computed: the sender sent the wrong tensor (issue 34: for a
      // send/recv pair, name the sender). A receive matched to the wrong
      // send stays blamed itself.
      auto [send, peer] = sendOf(def, group[0].getRank());
      Operation *producer =
          send ? send->getOperand(0).getDefiningOp() : nullptr;
      auto mbOf = [](Operation *o) {
        auto a = o ? o->getAttrOfType<IntegerAttr>("mb") : IntegerAttr();
        return a ? std::optional<int64_t>(a.getInt()) : std::nullopt;
      };
      if (mbOf(send) && mbOf(producer) && *mbOf(send) != *mbOf(producer)) {
        result.diverging = send;
        result.details.push_back(
            "first diverging op: " + opDescription(send, peer) +
            ": it sends the value of micro-batch " +
            std::to_string(*mbOf(producer)) + " computed by " +
            opDescription(producer, peer) + " (" + why + ")");
      } else {
        result.details.push_back("first diverging op: that op (" + why + ")");
      }
    } else if (p && expected) {
      std::string why = missingSpecOps(stage, *search, *p, expected);
      if (search != &out && !why.empty())
        why += " (on random inputs)";
      if (StringRef(why).starts_with("the plan's value is result") ||
          (!why.empty() && isa_and_nonnull<CopyOp>(def))) {
        // Swapped results, or a copy where the spec goes on with an op
        // (the op replaced by a copy of its operand): the op that computes
        // the tensor is the one.
        result.diverging = def;
        result.details.push_back("first diverging op: that op (" + why + ")");
      } else if (!why.empty()) {
        result.details.push_back(why);
      }
    }
  }
  // The reduced stage's indices mapped back: the lineage at full size, and
  // where its ranks sit on the mesh.
  if (ArrayAttr full = stage.getFullGuaranteesAttr();
      full && c.lineage < full.size()) {
    auto fl = cast<LineageAttr>(full[c.lineage]);
    if (fl.getLower() != l.getLower() || fl.getUpper() != l.getUpper())
      result.details.push_back(
          "at full size the lineage is " + boxStr(fl) +
          " (the stage's shapes are reduced; the indices below are the "
          "reduced stage's)");
  }
  if (auto mesh = SymbolTable::lookupNearestSymbolFrom<MeshOp>(
          stage, stage.getPlan().getMeshAttr())) {
    std::string where;
    for (auto [k, ref] : llvm::enumerate(group)) {
      if (k == 4) {
        where += ", ...";
        break;
      }
      where += (k ? ", rank " : "rank ") + std::to_string(ref.getRank()) + " = (";
      SmallVector<int64_t> coords = mesh.getCoords(ref.getRank());
      for (auto [a, axis] : llvm::enumerate(mesh.getAxes()))
        where += (a ? ", " : "") + cast<StringAttr>(axis).getValue().str() +
                 " " + std::to_string(coords[a]);
      where += ")";
    }
    result.details.push_back(where + " on mesh @" + mesh.getSymName().str());
  }
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
    bool mismatch =
        !closeAs(out.pairs[i].first, out.pairs[i].second, ci.bits);
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
  // Inputs a substitution replaced are not read: not listed.
  std::string in = "inputs:";
  size_t listed = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (b.stale.count(inputs[i].first))
      continue;
    if (listed++ < 12)
      in += " " + inputs[i].first + "=" + fmt(inputs[i].second);
  }
  if (listed > 12)
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

/// An input of the exact interpreter for element `element`: ids and mask
/// bits are integers in both readings; a real is a random residue modulo p
/// in the exact reading (a random point of the field, for identity testing)
/// and a random double from [-2, 2] ([1/4, 2] under a root or a logarithm)
/// in the real one, as for --tv-interpret.
static ExactValue drawExact(std::mt19937_64 &rng, int kind,
                            const llvm::StringMap<InputDomain> &domains,
                            StringRef element) {
  auto it = domains.find(element.take_front(element.rfind('[')));
  InputDomain dom = it != domains.end() ? it->second : InputDomain();
  ExactDomain ed;
  if (kind == 2)
    return ed.cstFrac((int64_t)(rng() % 2), 1);
  if (kind == 1)
    return ed.cstFrac(
        (int64_t)(rng() % uint64_t(dom.idBound > 0 ? dom.idBound : 8)), 1);
  double real = dom.positive
                    ? std::uniform_real_distribution<double>(0.25, 2.0)(rng)
                    : std::uniform_real_distribution<double>(-2.0, 2.0)(rng);
  return ExactDomain::make(rng() % ExactValue::P, real, true);
}

static std::string exactText(const ExactValue &v) { return fmt(v.d); }

/// How two values of the exact interpreter agree: exactly (both pure),
/// by congruence (equal for every choice of the uninterpreted functions),
/// only within the tolerance as reals, or not at all. A NaN shows nothing
/// (as in the double replay) and counts as agreeing within the tolerance.
enum class Agreement { Exact, Congruent, Approximate, None };
static Agreement agreement(const ExactValue &a, const ExactValue &b) {
  if (a.finite() && b.finite() && a.m == b.m)
    return a.pure && b.pure ? Agreement::Exact : Agreement::Congruent;
  if (a.kind == ExactValue::NegInf && b.kind == ExactValue::NegInf)
    return a.pure && b.pure ? Agreement::Exact : Agreement::Congruent;
  if (a.pure && b.pure && a.kind != ExactValue::Undef &&
      b.kind != ExactValue::Undef)
    return Agreement::None; // two different exact values
  if (std::isnan(a.d) || std::isnan(b.d) || closeReal(a.d, b.d))
    return Agreement::Approximate;
  return Agreement::None;
}

/// A guarantee's spec value against its plan value: on random field points
/// a plan undefined where the spec is finite is wrong (decision 85).
static Agreement guaranteeAgreement(const ExactValue &spec,
                                    const ExactValue &plan, unsigned bits) {
  if (spec.finite() && plan.kind == ExactValue::Undef)
    return Agreement::None;
  // n-bit integers agree modulo 2^n (exact while their values are).
  if (bits && spec.finite() && plan.finite() && spec.pure && plan.pure &&
      std::fabs(spec.d) < 0x1p53 && std::fabs(plan.d) < 0x1p53)
    return closeAs(spec.d, plan.d, bits) ? Agreement::Exact : Agreement::None;
  return agreement(spec, plan);
}

/// Runs `stage` in the exact interpreter on inputs from `rng`; an empty
/// string on success, else why nothing was checked.
std::string mlir::tv::stagecheck::runExact(StageOp stage,
                                          const PlanSchedule &schedule,
                                          std::mt19937_64 &rng,
                                          Outcome<ExactValue> &out) {
  ExactDomain ed;
  llvm::StringMap<InputDomain> domains = inputDomains(stage);
  Bindings<ExactDomain> b{ed,
                          [&](const std::string &name, int kind) {
                            return drawExact(rng, kind, domains, name);
                          },
                          {}, {}, {}};
  if (failed(runStage(ed, stage, schedule, b, out)))
    return "exact run failed: " + out.error;
  for (auto &[x, y] : b.extra)
    if (agreement(x, y) == Agreement::None)
      return "random inputs cannot satisfy the stage's assumptions; nothing "
             "was checked";
  return "";
}

FailureOr<std::set<std::string>>
mlir::tv::failingGuarantees(StageOp stage, uint64_t seed, std::string &why) {
  if (failed(expandLineageMaps(stage))) {
    why = "a lineage map of the stage does not expand";
    return failure();
  }
  std::set<std::string> failing;
  StageSchedule analysis(stage);
  const PlanSchedule *schedule = analysis.get();
  if (!schedule) {
    why = analysis.error();
    return failure();
  }
  std::mt19937_64 rng(seed);
  Outcome<ExactValue> out;
  why = runExact(stage, *schedule, rng, out);
  if (!why.empty())
    return failure();
  for (auto [i, pair] : llvm::enumerate(out.pairs))
    if (guaranteeAgreement(pair.first, pair.second, out.checks[i].bits) ==
        Agreement::None)
      failing.insert(cast<LineageAttr>(
                         stage.getGuarantees()[out.checks[i].lineage])
                         .getSpec()
                         .str());
  return failing;
}

/// The replay of --tv-interpret=exact: random exact rational inputs, every
/// lineage element compared exactly, by congruence or as reals (Agreement).
static void exactReplay(StageOp stage, const PlanSchedule &schedule,
                        std::mt19937_64 &rng, StageResult &result) {
  Outcome<ExactValue> out;
  std::string where = "stage @" + stage.getSymName().str();
  if (std::string why = runExact(stage, schedule, rng, out); !why.empty()) {
    result.outcome = StageResult::Error;
    result.headline = where + ": " + why;
    return;
  }
  size_t counts[3] = {0, 0, 0};
  for (auto [i, pair] : llvm::enumerate(out.pairs)) {
    Agreement a =
        guaranteeAgreement(pair.first, pair.second, out.checks[i].bits);
    if (a != Agreement::None) {
      ++counts[(int)a];
      if (a == Agreement::Approximate &&
          (std::isnan(pair.first.d) || std::isnan(pair.second.d)))
        ++result.nanElements;
      continue;
    }
    const Check &c = out.checks[i];
    auto l = cast<LineageAttr>(stage.getGuarantees()[c.lineage]);
    auto group = l.getGroupRefs()[c.group];
    if (Operation *def =
            definingOp(stage, group[0].getRank(), group[0].getName()))
      result.loc = def->getLoc();
    std::string planSide;
    for (auto [k, ref] : llvm::enumerate(group))
      planSide += (k ? " + " : "") + ("'" + ref.getName().str() + "'@" +
                                      std::to_string(ref.getRank()));
    result.outcome = StageResult::Counterexample;
    result.headline = where + ": counterexample (exact interpreter): lineage " +
                      boxStr(l) + " = " + planSide + " does not hold";
    result.details.push_back("element " + std::to_string(c.element) +
                             " of the slice: spec " + exactText(pair.first) +
                             ", plan " + exactText(pair.second));
    return;
  }
  result.outcome = StageResult::Proven;
  result.exactElements = counts[0];
  result.congruentElements = counts[1];
  result.approximateElements = counts[2];
}

StageResult mlir::tv::interpretStage(StageOp stage, uint64_t seed, double tol,
                                     bool exact) {
  StageResult result(stage.getLoc());
  if (failed(expandLineageMaps(stage))) {
    result.headline = "a lineage map of the stage does not expand";
    return result; // Error
  }
  StageSchedule analysis(stage);
  const PlanSchedule *schedule = analysis.get();
  if (!schedule) {
    result.loc = analysis.errorLoc();
    result.headline = analysis.error();
    return result;
  }
  tolerance = tol;
  std::mt19937_64 rng(seed);
  if (exact) {
    exactReplay(stage, *schedule, rng, result);
    tolerance = 1e-9;
    return result;
  }
  bool found = replay(stage, *schedule, {}, &rng, result);
  tolerance = 1e-9;
  if (!found) {
    if (result.outcome == StageResult::Error && !result.headline.empty())
      return result;
    result.outcome = StageResult::Proven;
  }
  return result;
}

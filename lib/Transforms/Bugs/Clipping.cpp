//===- Clipping.cpp - bugs of loss scaling and gradient clipping ----------===//
//
// The end of a mixed-precision step as frameworks run it (decisions 113
// and 114): the loss scale applied to the backward's seed and undone on the
// gradients, and the global gradient norm of clipping, summed over the
// model-parallel group with tensor-parallel duplicates counted once.
//
//===----------------------------------------------------------------------===//
#include "BugClass.h"

using namespace mlir;
using namespace mlir::tv;
using namespace mlir::tv::bugs;

/// The rank's dynamic loss scale: the input "loss_scale".
static bool isLossScaleInput(Value v) {
  auto in = v.getDefiningOp<InputOp>();
  return in && in.getName() == "loss_scale";
}

/// The unscale of a gradient: divided by a constant loss scale, or times
/// the inverse of the dynamic one (broadcast).
static bool isUnscale(Operation *op) {
  if (isa<DivScalarOp>(op))
    return true;
  auto mul = dyn_cast<MulOp>(op);
  if (!mul)
    return false;
  Value inv = mul.getRhs();
  if (auto bc = inv.getDefiningOp<BroadcastOp>())
    inv = bc.getInput();
  auto pow = inv.getDefiningOp<PowOp>();
  return pow && pow.getScalar().convertToDouble() == -1.0 &&
         isLossScaleInput(pow.getInput());
}

/// Whether `v` flows, through additions, scalings, all-reduces and waits,
/// into a square root: the gradient norm.
static bool feedsNorm(Value v, int depth = 0) {
  if (depth > 16)
    return false;
  for (Operation *u : v.getUsers()) {
    if (isa<SqrtOp>(u))
      return true;
    if (isa<AddOp, ScaleOp, AllReduceOp, WaitOp>(u) &&
        feedsNorm(u->getResult(0), depth + 1))
      return true;
  }
  return false;
}

/// Whether `v` is a squared sum: a sum over the squares of a tensor.
static bool isSquaredSum(Value v) {
  auto sum = v.getDefiningOp<SumOp>();
  if (!sum)
    return false;
  Value x = sum.getInput();
  if (auto r = x.getDefiningOp<ReshapeOp>())
    x = r.getInput();
  auto mul = x.getDefiningOp<MulOp>();
  return mul && mul.getLhs() == mul.getRhs();
}

void mlir::tv::bugs::addClippingBugs(std::vector<BugClass> &out) {
  const char *family = "Loss scaling and gradient clipping";
  out.push_back(
      {"loss-scale-not-undone", family,
       "A gradient of a loss-scaled backward reaches the optimizer without "
       "being divided by the loss scale: the update is the scale times too "
       "large.",
       [](const BugSite &) -> Candidates { return isUnscale; },
       [](BugSite &s) -> LogicalResult {
         replaceByCopy(s.target, s.target->getOperand(0), s.name);
         return success();
       },
       false, false, false, "a loss-scaled plan (--loss-scale)"});
  BugClass unsynced{
      "loss-scale-unsynced", family,
      "One rank's loss scale differs from the others' (its dynamic scaler "
      "backed off alone after an overflow only it saw): it scales its seed "
      "and unscales its gradients by half the scale, and its gradients are "
      "summed with the other ranks' differently scaled ones.",
      [](const BugSite &) -> Candidates {
        return [](Operation *op) {
          if (auto in = dyn_cast<InputOp>(op))
            return in.getName() == "loss_scale";
          return isa<DivScalarOp>(op);
        };
      },
      [](BugSite &s) -> LogicalResult {
        if (auto in = dyn_cast<InputOp>(s.target)) {
          // Every use of the rank's dynamic scale reads half of it.
          OpBuilder b(in->getContext());
          b.setInsertionPointAfter(in);
          auto half = ScaleOp::create(b, in.getLoc(), in.getType(),
                                      in.getResult(), b.getF64FloatAttr(0.5));
          in.getResult().replaceAllUsesExcept(half.getResult(), half);
          s.tag(half);
          return success();
        }
        // A constant scale: the rank's seed scaling and its unscales.
        double scale =
            cast<DivScalarOp>(s.target).getScalar().convertToDouble();
        auto halve = [&](Operation *op, FloatAttr a) {
          if (!a || a.getValueAsDouble() != scale)
            return;
          op->setAttr("scalar", FloatAttr::get(a.getType(), scale / 2));
          s.tag(op);
        };
        s.prog.walk([&](Operation *op) {
          if (auto d = dyn_cast<DivScalarOp>(op))
            halve(op, d.getScalarAttr());
          if (auto sc = dyn_cast<ScaleOp>(op)) {
            // The seed: the loss gradient's input times the scale.
            Value x = sc.getInput();
            while (auto prev = x.getDefiningOp<ScaleOp>())
              x = prev.getInput();
            auto in = x.getDefiningOp<InputOp>();
            if (in && in.getName() == "dloss")
              halve(op, sc.getScalarAttr());
          }
        });
        return success();
      }};
  unsynced.singleRank = true;
  unsynced.needs = "a loss-scaled plan (--loss-scale)";
  out.push_back(unsynced);
  BugClass group{
      "clip-norm-wrong-group", family,
      "The all-reduce of the squared gradient norm leaves out the pipeline "
      "axis (or, with none, its first axis): each stage clips by the norm "
      "of its own layers.",
      [](const BugSite &) -> Candidates {
        return [](Operation *op) {
          auto ar = dyn_cast<AllReduceOp>(op);
          return ar && ar.getAxes() && !ar.getAxes()->empty() &&
                 feedsNorm(ar.getResult());
        };
      },
      [](BugSite &s) -> LogicalResult {
        auto ar = cast<AllReduceOp>(s.target);
        SmallVector<Attribute> axes(ar.getAxes()->begin(),
                                    ar.getAxes()->end());
        auto pp = llvm::find_if(axes, [](Attribute a) {
          return cast<StringAttr>(a).getValue() == "pp";
        });
        axes.erase(pp != axes.end() ? pp : axes.begin());
        if (axes.empty()) {
          replaceByCopy(ar, ar.getInput(), s.name);
          return success();
        }
        ar.setAxesAttr(ArrayAttr::get(ar.getContext(), axes));
        s.tag(ar);
        return success();
      }};
  // One collective on every stage's program: left out on one stage only,
  // the plan deadlocks instead.
  group.everyCandidate = true;
  group.needs = "gradient clipping (--clip-grad) over more than one rank";
  out.push_back(group);
  out.push_back(
      {"clip-norm-duplicates", family,
       "A tensor-parallel duplicate (a parameter every tp rank holds whole, "
       "as a norm weight) is counted by every tp rank in the squared "
       "gradient norm instead of once.",
       [](const BugSite &) -> Candidates {
         return [](Operation *op) {
           auto sc = dyn_cast<ScaleOp>(op);
           return sc && sc.getScalar().convertToDouble() < 1.0 &&
                  isSquaredSum(sc.getInput()) && feedsNorm(sc.getResult());
         };
       },
       [](BugSite &s) -> LogicalResult {
         replaceByCopy(s.target, cast<ScaleOp>(s.target).getInput(), s.name);
         return success();
       },
       false, false, false,
       "gradient clipping (--clip-grad) with tensor-parallel duplicates"});
}

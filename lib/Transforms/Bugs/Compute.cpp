//===- Compute.cpp - bugs in a rank's own arithmetic and backward ---------===//
#include "BugClass.h"

using namespace mlir;
using namespace mlir::tv;
using namespace mlir::tv::bugs;

static Candidates adds(const BugSite &) {
  return [](Operation *op) { return isa<AddScalarOp, AddOp>(op); };
}

static LogicalResult addOne(BugSite &s) {
  OpBuilder bld(s.target);
  bld.setInsertionPointAfter(s.target);
  Value r = s.target->getResult(0);
  if (auto as = dyn_cast<AddScalarOp>(s.target)) {
    as.setScalarAttr(
        bld.getF64FloatAttr(as.getScalar().convertToDouble() + 1.0));
    s.tag(as);
  } else {
    auto c = AddScalarOp::create(bld, s.target->getLoc(), r,
                                 bld.getF64FloatAttr(1.0));
    r.replaceAllUsesExcept(c.getResult(), c);
    s.tag(c);
  }
  return success();
}

static Candidates matmuls(const BugSite &) {
  return [](Operation *op) { return isa<LinearOp, MatmulOp>(op); };
}

static LogicalResult halve(BugSite &s) {
  OpBuilder bld(s.target);
  bld.setInsertionPointAfter(s.target);
  Value r = s.target->getResult(0);
  auto sc =
      ScaleOp::create(bld, s.target->getLoc(), r, bld.getF64FloatAttr(0.5));
  r.replaceAllUsesExcept(sc.getResult(), sc);
  s.tag(sc);
  return success();
}

void mlir::tv::bugs::addComputeBugs(std::vector<BugClass> &out) {
  const char *family = "A rank's own computation";
  BugClass add{"rank-add-const", family,
               "A forward add gets a different constant on one rank.", adds,
               addOne};
  add.singleRank = true;
  out.push_back(add);
  out.push_back({"multi-rank-add-const", family,
                 "A forward add gets a different constant on every rank of "
                 "its program.",
                 adds, addOne});
  BugClass pow{
      "rank-pow-exponent", family,
      "A power's exponent changes on one rank (1 becomes 2, any other e "
      "becomes e - 1).",
      [](const BugSite &) -> Candidates {
        return [](Operation *op) { return isa<PowOp>(op); };
      },
      [](BugSite &s) {
        auto p = cast<PowOp>(s.target);
        double e = p.getScalar().convertToDouble();
        p.setScalarAttr(OpBuilder(p).getF64FloatAttr(e == 1.0 ? 2.0 : e - 1.0));
        s.tag(p);
        return success();
      }};
  pow.singleRank = true;
  out.push_back(pow);
  BugClass scale{"rank-scale", family,
                 "A matmul's result is scaled by 0.5 on one rank "
                 "(inconsistent scaling).",
                 matmuls, halve};
  scale.singleRank = true;
  out.push_back(scale);
  out.push_back({"multi-rank-scale", family,
                 "A matmul's result is scaled by 0.5 on every rank of its "
                 "program.",
                 matmuls, halve});
  BugClass input{
      "bw-wrong-input", family,
      "A backward op reads another tensor of its cotangent's type (the "
      "latest one defined before it) on one rank.",
      [](const BugSite &) -> Candidates {
        return [](Operation *op) {
          return isa<GradOpInterface>(op) && op->getNumOperands() >= 2;
        };
      },
      [](BugSite &s) -> LogicalResult {
        unsigned gi = cast<GradOpInterface>(s.target).getCotangentIndex();
        Value grad = s.target->getOperand(gi);
        Value other;
        for (Operation &op : s.prog.getBody().front()) {
          if (&op == s.target)
            break;
          for (Value v : op.getResults())
            if (v != grad && v.getType() == grad.getType())
              other = v;
        }
        if (!other)
          return s.module.emitError()
                 << "no other tensor of type " << grad.getType()
                 << " for bw-wrong-input";
        s.target->setOperand(gi, other);
        s.tag(s.target);
        return success();
      }};
  input.singleRank = true;
  out.push_back(input);
  BugClass swapped{
      "bw-swapped-outputs", family,
      "A backward op with two results of one type returns them swapped, on "
      "one rank.",
      [](const BugSite &) -> Candidates {
        return [](Operation *op) {
          if (!isa<GradOpInterface>(op))
            return false;
          for (unsigned i = 0; i < op->getNumResults(); ++i)
            for (unsigned j = i + 1; j < op->getNumResults(); ++j)
              if (op->getResult(i).getType() == op->getResult(j).getType())
                return true;
          return false;
        };
      },
      [](BugSite &s) {
        Operation *t = s.target;
        Value a, c;
        for (unsigned i = 0; i < t->getNumResults() && !a; ++i)
          for (unsigned j = i + 1; j < t->getNumResults() && !a; ++j)
            if (t->getResult(i).getType() == t->getResult(j).getType()) {
              a = t->getResult(i);
              c = t->getResult(j);
            }
        swapUses(a, c);
        s.tag(t);
        return success();
      }};
  swapped.singleRank = true;
  out.push_back(swapped);
}

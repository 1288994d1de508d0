//===- Executor.cpp - schedule and run spec and plan programs -------------===//
#include "TrainVerify/Verify/Executor.h"
#include "TrainVerify/Semantics/Semantics.h"

#include "llvm/ADT/TypeSwitch.h"
#include <deque>
#include <set>

using namespace mlir;
using namespace mlir::tv;

//===----------------------------------------------------------------------===//
// Running programs
//===----------------------------------------------------------------------===//

template <typename D>
static LogicalResult runLocal(D &d, Operation *op, int64_t rank, MeshOp mesh,
                              const InputFn<typename D::V> &inputs,
                              RunState<typename D::V> &st,
                              std::map<std::pair<int64_t, std::string>,
                                       Tensor<typename D::V>> &buffers) {
  using V = typename D::V;
  using T = Tensor<V>;
  auto key = [&](Value v) { return std::make_pair(rank, v.getAsOpaquePointer()); };
  auto operand = [&](Value v) -> const T * { return st.lookup(rank, v); };
  auto rankStr = [&]() {
    return rank < 0 ? std::string("the spec") : "rank " + std::to_string(rank);
  };
  if (auto in = dyn_cast<InputOp>(op)) {
    auto t = inputs(rank, in.getName(), cast<RankedTensorType>(in.getType()));
    if (failed(t))
      return failure();
    st.named[{rank, in.getName().str()}] = *t;
    st.values[key(in.getResult())] = std::move(*t);
    return success();
  }
  if (auto tag = dyn_cast<TagOp>(op)) {
    st.named[{rank, tag.getName().str()}] = *operand(tag.getValue());
    return success();
  }
  if (auto out = dyn_cast<OutputOp>(op)) {
    st.named[{rank, out.getName().str()}] = *operand(out.getValue());
    return success();
  }
  if (auto acc = dyn_cast<AccumulateOp>(op)) {
    const T *g = operand(acc.getValue());
    auto [it, inserted] = buffers.try_emplace({rank, acc.getBuffer().str()}, *g);
    if (!inserted) {
      if (it->second.shape != g->shape)
        return op->emitError() << "accumulates a tensor of another shape into "
                                  "buffer '"
                               << acc.getBuffer() << "' on " << rankStr();
      for (size_t i = 0; i < g->data.size(); ++i)
        it->second.data[i] = d.add(it->second.data[i], g->data[i]);
    }
    return success();
  }
  if (auto read = dyn_cast<BufferReadOp>(op)) {
    auto it = buffers.find({rank, read.getBuffer().str()});
    T t;
    auto ty = cast<RankedTensorType>(read.getType());
    if (it != buffers.end()) {
      t = it->second;
    } else {
      t.shape.assign(ty.getShape().begin(), ty.getShape().end());
      t.data.assign(ty.getNumElements(), d.zero());
    }
    if (ArrayRef<int64_t>(t.shape) != ty.getShape())
      return op->emitError() << "reads buffer '" << read.getBuffer()
                             << "' with another shape than accumulated";
    st.values[key(read.getResult())] = std::move(t);
    return success();
  }
  if (auto chunk = dyn_cast<ChunkOp>(op)) {
    int64_t idx = chunkIndex(chunk, rank);
    SmallVector<int64_t> group = chunk.getGroup(rank);
    if (idx < 0)
      return op->emitError() << "chunk on " << rankStr()
                             << " has no group containing the rank";
    std::vector<const T *> ins(group.size(), operand(chunk.getInput()));
    std::vector<T> outs;
    if (auto err = evalCollective(d, op, ins, outs))
      return op->emitError() << *err;
    st.values[key(chunk.getResult())] = std::move(outs[idx]);
    return success();
  }
  SmallVector<const T *> ins;
  for (Value v : op->getOperands()) {
    const T *t = operand(v);
    if (!t)
      return op->emitError() << "operand is not computed on " << rankStr();
    ins.push_back(t);
  }
  SmallVector<T> outs;
  RankEnv env{rank, mesh};
  if (auto err = evalLocalOp(d, op, ins, outs, env))
    return op->emitError() << *err;
  for (auto [res, t] : llvm::zip(op->getResults(), outs))
    st.values[key(res)] = std::move(t);
  if (d.overBudget())
    return op->emitError() << "symbolic execution exceeds the stage's memory or time budget";
  return success();
}

template <typename D>
LogicalResult mlir::tv::runSpec(D &d, SpecOp spec,
                                const InputFn<typename D::V> &inputs,
                                RunState<typename D::V> &state) {
  std::map<std::pair<int64_t, std::string>, Tensor<typename D::V>> buffers;
  for (Operation &op : spec.getBody().front())
    if (failed(runLocal(d, &op, -1, MeshOp(), inputs, state, buffers)))
      return failure();
  return success();
}

template <typename D>
LogicalResult mlir::tv::runPlan(D &d, const PlanSchedule &schedule,
                                const InputFn<typename D::V> &inputs,
                                RunState<typename D::V> &state) {
  using T = Tensor<typename D::V>;
  std::map<std::pair<int64_t, std::string>, T> buffers;
  for (const PlanStep &step : schedule.steps) {
    switch (step.kind) {
    case PlanStep::Local:
      if (failed(runLocal(d, step.op, step.rank, schedule.mesh, inputs, state,
                          buffers)))
        return failure();
      break;
    case PlanStep::P2P: {
      const T *t = state.lookup(step.peer, step.sendOp->getOperand(0));
      if (!t)
        return step.sendOp->emitError() << "sends a value that is not computed";
      state.values[{step.rank, step.op->getResult(0).getAsOpaquePointer()}] = *t;
      break;
    }
    case PlanStep::Collective: {
      SmallVector<const T *> ins;
      for (auto &[r, mop] : step.members)
        ins.push_back(state.lookup(r, mop->getOperand(0)));
      std::vector<T> outs;
      if (auto err = evalCollective(d, step.op, ins, outs))
        return step.op->emitError() << *err;
      for (auto [i, m] : llvm::enumerate(step.members))
        state.values[{m.first, m.second->getResult(0).getAsOpaquePointer()}] =
            std::move(outs[i]);
      if (d.overBudget())
        return step.op->emitError()
               << "symbolic terms exceed the stage's memory budget";
      break;
    }
    }
  }
  return success();
}

template LogicalResult mlir::tv::runSpec<SymDomain>(SymDomain &, SpecOp,
                                                    const InputFn<SymDomain::V> &,
                                                    RunState<SymDomain::V> &);
template LogicalResult mlir::tv::runSpec<ConcreteDomain>(
    ConcreteDomain &, SpecOp, const InputFn<ConcreteDomain::V> &,
    RunState<ConcreteDomain::V> &);
template LogicalResult
mlir::tv::runPlan<SymDomain>(SymDomain &, const PlanSchedule &,
                             const InputFn<SymDomain::V> &,
                             RunState<SymDomain::V> &);
template LogicalResult mlir::tv::runPlan<ConcreteDomain>(
    ConcreteDomain &, const PlanSchedule &, const InputFn<ConcreteDomain::V> &,
    RunState<ConcreteDomain::V> &);
template LogicalResult mlir::tv::runSpec<ExactDomain>(
    ExactDomain &, SpecOp, const InputFn<ExactDomain::V> &,
    RunState<ExactDomain::V> &);
template LogicalResult mlir::tv::runPlan<ExactDomain>(
    ExactDomain &, const PlanSchedule &, const InputFn<ExactDomain::V> &,
    RunState<ExactDomain::V> &);

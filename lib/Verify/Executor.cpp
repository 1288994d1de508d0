//===- Executor.cpp - schedule and run spec and plan programs -------------===//
#include "TrainVerify/Verify/Executor.h"
#include "TrainVerify/Semantics/Semantics.h"

#include "llvm/ADT/TypeSwitch.h"
#include <deque>
#include <set>

using namespace mlir;
using namespace mlir::tv;

//===----------------------------------------------------------------------===//
// Schedule
//===----------------------------------------------------------------------===//

static std::string rankList(ArrayRef<int64_t> ranks) {
  std::string s = "{";
  for (auto [i, r] : llvm::enumerate(ranks))
    s += (i ? ", " : "") + std::to_string(r);
  return s + "}";
}

static SmallVector<int64_t> collectiveGroup(Operation *op, int64_t rank) {
  return TypeSwitch<Operation *, SmallVector<int64_t>>(op)
      .Case<AllReduceOp, AllGatherOp, ReduceScatterOp, AllToAllOp,
            BroadcastCommOp, ReduceOp, ChunkOp>(
          [&](auto o) { return o.getGroup(rank); })
      .Default([](Operation *) { return SmallVector<int64_t>(); });
}

int64_t mlir::tv::chunkIndex(ChunkOp op, int64_t rank) {
  SmallVector<int64_t> g = op.getGroup(rank);
  auto it = llvm::find(g, rank);
  if (it == g.end())
    return -1;
  return op.getIndex() ? (int64_t)*op.getIndex() : it - g.begin();
}

/// Attributes that define what a collective does (not where it comes from).
static DictionaryAttr semanticAttrs(Operation *op) {
  SmallVector<NamedAttribute> attrs;
  for (NamedAttribute a : op->getAttrs())
    if (!isProgramAnnotation(a.getName()))
      attrs.push_back(a);
  return DictionaryAttr::get(op->getContext(), attrs);
}

FailureOr<PlanSchedule> PlanSchedule::build(PlanOp plan, bool localSteps) {
  PlanSchedule s;
  s.mesh = plan.getMeshOp();
  if (!s.mesh)
    return plan.emitError() << "plan refers to unknown mesh";
  int64_t numRanks = s.mesh.getNumRanks();
  struct Cursor {
    Block::iterator pc, end;
    bool waiting = false;
  };
  std::vector<Cursor> cur(numRanks);
  std::vector<bool> active(numRanks, false);
  for (auto prog : plan.getBody().front().getOps<RankProgramOp>())
    for (int64_t r : prog.getRanks()) {
      s.programOf[r] = prog;
      if (r < 0 || r >= numRanks)
        return prog.emitError() << "rank " << r << " is not on the mesh";
      cur[r] = {prog.getBody().front().begin(), prog.getBody().front().end()};
      active[r] = true;
    }
  // Groups are interned: every member of a collective gets the same group
  // id from the first member that computes it, so a group is enumerated
  // once per collective op, not once per member.
  std::vector<std::vector<int64_t>> groups;
  std::map<std::vector<int64_t>, unsigned> groupId;
  DenseMap<std::pair<Operation *, int64_t>, unsigned> groupOf;
  using GroupKey = std::pair<unsigned, int64_t>; // group id, seq
  DenseMap<std::pair<int64_t, unsigned>, int64_t> seqOf;
  std::map<GroupKey, SmallVector<std::pair<int64_t, Operation *>>> pending;
  std::map<std::tuple<int64_t, int64_t, int64_t>, std::deque<Operation *>> mail;

  bool progress = true;
  while (progress) {
    progress = false;
    for (int64_t r = 0; r < numRanks; ++r) {
      if (!active[r])
        continue;
      Cursor &c = cur[r];
      while (c.pc != c.end && !c.waiting) {
        Operation *op = &*c.pc;
        if (auto send = dyn_cast<SendOp>(op)) {
          int64_t peer = send.getPeerOf(r);
          if (peer < 0 || peer >= numRanks)
            return send.emitError() << "send on rank " << r
                                    << " has no peer on the mesh";
          mail[{r, peer, send.getTag()}].push_back(op);
          ++c.pc;
          progress = true;
          continue;
        }
        if (auto recv = dyn_cast<RecvOp>(op)) {
          int64_t peer = recv.getPeerOf(r);
          auto it = mail.find({peer, r, recv.getTag()});
          if (it == mail.end() || it->second.empty())
            break;
          PlanStep step{PlanStep::P2P, op, r, {}, peer, it->second.front()};
          it->second.pop_front();
          auto sendTy = step.sendOp->getOperand(0).getType();
          if (sendTy != recv.getType()) {
            InFlightDiagnostic d = recv.emitError()
                                   << "recv on rank " << r << " expects "
                                   << recv.getType() << " but rank " << peer
                                   << " sends " << sendTy;
            d.attachNote(step.sendOp->getLoc()) << "the matching send";
            return d;
          }
          s.steps.push_back(std::move(step));
          ++c.pc;
          progress = true;
          continue;
        }
        if (!isCollectiveOp(op)) {
          if (localSteps)
            s.steps.push_back({PlanStep::Local, op, r, {}, -1, nullptr});
          ++c.pc;
          progress = true;
          continue;
        }
        unsigned gid;
        if (auto it = groupOf.find({op, r}); it != groupOf.end()) {
          gid = it->second;
        } else {
          SmallVector<int64_t> g = collectiveGroup(op, r);
          if (g.empty())
            return op->emitError() << "collective on rank " << r
                                   << " has no group containing the rank";
          std::vector<int64_t> key(g.begin(), g.end());
          auto [git, inserted] = groupId.try_emplace(key, groups.size());
          if (inserted)
            groups.push_back(std::move(key));
          gid = git->second;
          // The members running the same op share the group (axis groups
          // and rank sets partition the mesh).
          for (int64_t m : groups[gid])
            groupOf.try_emplace({op, m}, gid);
        }
        const std::vector<int64_t> &group = groups[gid];
        if (!llvm::is_contained(group, r))
          return op->emitError() << "collective on rank " << r
                                 << " has no group containing the rank";
        int64_t seq = seqOf[{r, gid}];
        auto &arrived = pending[{gid, seq}];
        arrived.push_back({r, op});
        c.waiting = true;
        if (arrived.size() < group.size())
          break;
        // Everyone is here: check they agree, then run it.
        PlanStep step{PlanStep::Collective, nullptr, -1, {}, -1, nullptr};
        llvm::sort(arrived, [](auto &a, auto &b) { return a.first < b.first; });
        for (auto [i, m] : llvm::enumerate(group)) {
          if (i >= arrived.size() || arrived[i].first != m)
            return op->emitError() << "collective group " << rankList(group)
                                   << " formed without rank " << m;
          step.members.push_back(arrived[i]);
        }
        Operation *first = step.members.front().second;
        for (auto &[m, mop] : step.members) {
          if (mop->getName() != first->getName() ||
              semanticAttrs(mop) != semanticAttrs(first) ||
              mop->getOperand(0).getType() != first->getOperand(0).getType()) {
            InFlightDiagnostic d =
                mop->emitError()
                << "collective mismatch on group " << rankList(group)
                << " (collective #" << seq << " of the group): rank " << m
                << " runs '" << mop->getName() << "' "
                << mop->getOperand(0).getType() << " " << semanticAttrs(mop)
                << " but rank " << step.members.front().first << " runs '"
                << first->getName() << "' " << first->getOperand(0).getType()
                << " " << semanticAttrs(first);
            d.attachNote(first->getLoc()) << "the other member";
            return d;
          }
        }
        step.op = first;
        for (auto &[m, mop] : step.members) {
          ++cur[m].pc;
          cur[m].waiting = false;
          ++seqOf[{m, gid}];
        }
        pending.erase({gid, seq});
        s.steps.push_back(std::move(step));
        progress = true;
      }
    }
  }

  // Everything must have run, and every send must have been received.
  SmallVector<int64_t> blocked;
  for (int64_t r = 0; r < numRanks; ++r)
    if (active[r] && cur[r].pc != cur[r].end)
      blocked.push_back(r);
  if (!blocked.empty()) {
    // A receive that waits for a send that never comes is the usual root
    // cause (ranks stuck in collectives wait on it): report it first.
    // Best of all, a receive on a rank that another rank did send to: the
    // signature of a wrong peer.
    auto sentTo = [&](int64_t r) -> int64_t {
      for (auto &[key, q] : mail)
        if (std::get<1>(key) == r && !q.empty())
          return std::get<0>(key);
      return -1;
    };
    int64_t culprit = blocked.front();
    bool found = false;
    for (int64_t r : blocked)
      if (isa<RecvOp>(&*cur[r].pc) && sentTo(r) >= 0) {
        culprit = r;
        found = true;
        break;
      }
    for (int64_t r : blocked)
      if (!found && isa<RecvOp>(&*cur[r].pc)) {
        culprit = r;
        found = true;
      }
    Operation *op = &*cur[culprit].pc;
    InFlightDiagnostic d = op->emitError()
                           << "plan deadlocks: ranks " << rankList(blocked)
                           << " never complete; rank " << culprit
                           << " waits in '" << op->getName() << "'";
    if (auto recv = dyn_cast<RecvOp>(op)) {
      d << " for a send from rank " << recv.getPeerOf(culprit) << " (tag "
        << recv.getTag() << ") that never comes";
      if (int64_t other = sentTo(culprit); other >= 0)
        d << "; rank " << other << " sent to it instead (wrong peer?)";
    }
    for (auto &[key, q] : mail)
      for (Operation *send : q)
        d.attachNote(send->getLoc())
            << "unmatched send from rank " << std::get<0>(key) << " to rank "
            << std::get<1>(key) << " (tag " << std::get<2>(key) << ")";
    return d;
  }
  for (auto &[key, q] : mail)
    if (!q.empty())
      return q.front()->emitError()
             << "send from rank " << std::get<0>(key) << " to rank "
             << std::get<1>(key) << " (tag " << std::get<2>(key)
             << ") is never received";
  return s;
}

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
    return op->emitError() << "symbolic terms exceed the stage's memory budget";
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

//===- PlanSchedule.cpp - communication matched, a plan ordered -----------===//
#include "TrainVerify/Analysis/PlanSchedule.h"
#include "TrainVerify/Semantics/Semantics.h"

#include "mlir/IR/Diagnostics.h"
#include <deque>
#include <set>

using namespace mlir;
using namespace mlir::tv;

static std::string rankList(ArrayRef<int64_t> ranks) {
  std::string s = "{";
  for (auto [i, r] : llvm::enumerate(ranks))
    s += (i ? ", " : "") + std::to_string(r);
  return s + "}";
}

static SmallVector<int64_t> collectiveGroup(Operation *op, int64_t rank) {
  auto collective = dyn_cast<CollectiveOpInterface>(op);
  return collective ? collective.getGroup(rank) : SmallVector<int64_t>();
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
  if (plan.hasPhases())
    return plan.emitError() << "internal error: the plan's rank programs are "
                               "in phases; they are scheduled joined "
                               "(decision 124)";
  int64_t numRanks = s.mesh.getNumRanks();
  // Each rank steps through its program's ops; without local steps, only
  // through its communication ops (listed once per program, not walked
  // once per rank: thousands of ranks share a program).
  struct Cursor {
    Operation *const *pc = nullptr, *const *end = nullptr;
    bool waiting = false;
  };
  std::vector<Cursor> cur(numRanks);
  std::vector<bool> active(numRanks, false);
  std::vector<std::vector<Operation *>> programOps;
  for (auto prog : plan.getBody().front().getOps<RankProgramOp>()) {
    std::vector<Operation *> &ops = programOps.emplace_back();
    for (Operation &op : prog.getBody().front())
      if (localSteps || isCollectiveOp(&op) || isa<SendOp, RecvOp>(op))
        ops.push_back(&op);
  }
  // Each rank's program (by index) and its position in the program's ranks.
  std::vector<unsigned> progIndex(numRanks, ~0u), posInProg(numRanks, 0);
  for (auto [index, prog, ops] : llvm::enumerate(
           plan.getBody().front().getOps<RankProgramOp>(), programOps))
    for (auto [pos, r] : llvm::enumerate(prog.getRanks())) {
      s.programOf[r] = prog;
      if (r < 0 || r >= numRanks)
        return prog.emitError() << "rank " << r << " is not on the mesh";
      cur[r] = {ops.data(), ops.data() + ops.size()};
      active[r] = true;
      progIndex[r] = index;
      posInProg[r] = pos;
    }
  // Groups are interned: every member of a collective gets the same group
  // id from the first member that computes it, so a group is enumerated
  // once per collective op, not once per member.
  std::vector<std::vector<int64_t>> groups;
  std::map<std::vector<int64_t>, unsigned> groupId;
  // A collective op's group id per position of its program's ranks (~0u:
  // not yet known), and the program it belongs to.
  DenseMap<Operation *, std::pair<unsigned, std::vector<unsigned>>> groupOf;
  using GroupKey = std::pair<unsigned, int64_t>; // group id, seq
  DenseMap<std::pair<int64_t, unsigned>, int64_t> seqOf;
  std::map<GroupKey, SmallVector<std::pair<int64_t, Operation *>>> pending;
  // Sends not yet received, by (from, to, tag).
  DenseMap<std::tuple<int64_t, int64_t, int64_t>, std::deque<Operation *>> mail;

  bool progress = true;
  while (progress) {
    progress = false;
    for (int64_t r = 0; r < numRanks; ++r) {
      if (!active[r])
        continue;
      Cursor &c = cur[r];
      while (c.pc != c.end && !c.waiting) {
        Operation *op = *c.pc;
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
        auto &[opProg, opGroups] = groupOf[op];
        if (opGroups.empty()) {
          opProg = progIndex[r];
          opGroups.assign(
              cast<RankProgramOp>(op->getParentOp()).getRanks().size(), ~0u);
        }
        unsigned gid = opGroups[posInProg[r]];
        if (gid == ~0u) {
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
            if (m >= 0 && m < numRanks && progIndex[m] == opProg &&
                opGroups[posInProg[m]] == ~0u)
              opGroups[posInProg[m]] = gid;
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
        // Members of one rank program run the same op (the usual case: a
        // group inside one pipeline stage); others are compared.
        DictionaryAttr firstAttrs;
        for (auto &[m, mop] : step.members) {
          if (mop == first)
            continue;
          if (!firstAttrs)
            firstAttrs = semanticAttrs(first);
          if (mop->getName() != first->getName() ||
              semanticAttrs(mop) != firstAttrs ||
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

  // Sends never received, in (from, to, tag) order: what the diagnostics
  // below name, in an order that does not depend on the map's.
  using MailKey = std::tuple<int64_t, int64_t, int64_t>;
  std::vector<std::pair<MailKey, const std::deque<Operation *> *>> unreceived;
  for (auto &[key, q] : mail)
    if (!q.empty())
      unreceived.push_back({key, &q});
  llvm::sort(unreceived, [](auto &a, auto &b) { return a.first < b.first; });
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
      for (auto &[key, q] : unreceived)
        if (std::get<1>(key) == r)
          return std::get<0>(key);
      return -1;
    };
    int64_t culprit = blocked.front();
    bool found = false;
    for (int64_t r : blocked)
      if (isa<RecvOp>(*cur[r].pc) && sentTo(r) >= 0) {
        culprit = r;
        found = true;
        break;
      }
    for (int64_t r : blocked)
      if (!found && isa<RecvOp>(*cur[r].pc)) {
        culprit = r;
        found = true;
      }
    // A collective that some members of its group wait in, and the members
    // that never join it: best, one of them has finished its program (it
    // has no such collective left), the signature of a collective left out
    // on one rank.
    auto missingOf = [&](const SmallVector<std::pair<int64_t, Operation *>>
                             &arrived,
                         unsigned gid) {
      SmallVector<int64_t> missing;
      for (int64_t m : groups[gid])
        if (!llvm::any_of(arrived, [&](auto &a) { return a.first == m; }))
          missing.push_back(m);
      return missing;
    };
    auto finished = [&](int64_t m) {
      return !active[m] || cur[m].pc == cur[m].end;
    };
    std::optional<GroupKey> stuck;
    for (auto &[key, arrived] : pending) {
      if (arrived.empty())
        continue;
      if (!stuck)
        stuck = key;
      if (llvm::any_of(missingOf(arrived, key.first), finished)) {
        stuck = key;
        break;
      }
    }
    if (!found && stuck)
      culprit = pending[*stuck].front().first;
    Operation *op = *cur[culprit].pc;
    InFlightDiagnostic d = op->emitError()
                           << "plan deadlocks: ranks " << rankList(blocked)
                           << " never complete; rank " << culprit
                           << " waits in '" << op->getName() << "'";
    if (auto recv = dyn_cast<RecvOp>(op)) {
      d << " for a send from rank " << recv.getPeerOf(culprit) << " (tag "
        << recv.getTag() << ") that never comes";
      if (int64_t other = sentTo(culprit); other >= 0)
        d << "; rank " << other << " sent to it instead (wrong peer?)";
    } else if (stuck && !found) {
      // Name the members that never join, with their mesh coordinates and
      // where they are instead.
      auto coords = [&](int64_t m) {
        std::string out = "(";
        for (auto [i, c] : llvm::enumerate(s.mesh.getCoords(m)))
          out += (i ? ", " : "") +
                 cast<StringAttr>(s.mesh.getAxes()[i]).getValue().str() +
                 "=" + std::to_string(c);
        return out + ")";
      };
      SmallVector<int64_t> missing =
          missingOf(pending[*stuck], stuck->first);
      d << " of group " << rankList(groups[stuck->first])
        << ", which rank" << (missing.size() > 1 ? "s " : " ")
        << rankList(missing) << " never join"
        << (missing.size() > 1 ? "" : "s") << ":";
      constexpr size_t kNamed = 4; // in detail; the rest are counted
      for (auto [i, m] : llvm::enumerate(missing)) {
        if (i == kNamed) {
          d << "; " << missing.size() - kNamed << " more";
          break;
        }
        d << (i ? ";" : "") << " rank " << m << " " << coords(m);
        if (finished(m)) {
          d << " ends its program without it";
          continue;
        }
        Operation *at = *cur[m].pc;
        d << " waits in '" << at->getName() << "'";
        d.attachNote(at->getLoc())
            << "rank " << m << " waits here instead of joining";
      }
    }
    for (auto &[key, q] : unreceived)
      for (Operation *send : *q)
        d.attachNote(send->getLoc())
            << "unmatched send from rank " << std::get<0>(key) << " to rank "
            << std::get<1>(key) << " (tag " << std::get<2>(key) << ")";
    return d;
  }
  if (!unreceived.empty()) {
    auto &[key, q] = unreceived.front();
    return q->front()->emitError()
           << "send from rank " << std::get<0>(key) << " to rank "
           << std::get<1>(key) << " (tag " << std::get<2>(key)
           << ") is never received";
  }
  return s;
}

StageSchedule::StageSchedule(Operation *op) : loc(op->getLoc()) {
  auto stage = cast<StageOp>(op);
  // The build reports a bad plan as a diagnostic at the offending op: keep
  // it as the analysis' error instead of printing it.
  ScopedDiagnosticHandler handler(op->getContext(), [&](Diagnostic &diag) {
    message = diag.str();
    loc = diag.getLocation();
    return success();
  });
  FailureOr<PlanSchedule> s = PlanSchedule::build(stage.getPlan());
  if (succeeded(s))
    schedule = std::move(*s);
  else if (message.empty())
    message = "the plan cannot be scheduled";
}

//===- InjectBug.cpp - --tv-inject-bug ------------------------------------===//
//
// Deterministic mutations of a correct plan, one per class of real
// distributed-training bug, so that tests can check each class is caught.
//
//===----------------------------------------------------------------------===//
#include "TrainVerify/Dialect/Lineage.h"
#include "TrainVerify/Transforms/Passes.h"
#include "TrainVerify/Transforms/Utils.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

namespace mlir::tv {
#define GEN_PASS_DEF_TVINJECTBUG
#include "TrainVerify/Transforms/Passes.h.inc"
} // namespace mlir::tv

using namespace mlir;
using namespace mlir::tv;

namespace {

/// Replaces `op` (one result) by a copy of `input` that keeps its
/// discardable attributes (`mb`, ...) and is tagged with the bug class.
void replaceByCopy(Operation *op, Value input, StringRef bug) {
  OpBuilder bld(op);
  auto copy = CopyOp::create(bld, op->getLoc(), input);
  for (NamedAttribute a : op->getDiscardableAttrs())
    copy->setAttr(a.getName(), a.getValue());
  copy->setAttr("injected_bug", bld.getStringAttr(bug));
  op->getResult(0).replaceAllUsesWith(copy.getResult());
  op->erase();
}

/// Gives `rank` a program of its own (a copy of the shared one).
RankProgramOp splitOut(RankProgramOp prog, int64_t rank) {
  if (prog.getRanks().size() == 1)
    return prog;
  OpBuilder b(prog);
  b.setInsertionPointAfter(prog);
  SmallVector<int64_t> rest;
  for (int64_t r : prog.getRanks())
    if (r != rank)
      rest.push_back(r);
  auto copy = cast<RankProgramOp>(b.clone(*prog));
  copy.setRanks(ArrayRef<int64_t>{rank});
  prog.setRanks(rest);
  return copy;
}

/// The next tv.recv after `recv` in its block on the same channel (peer,
/// tag and type), or null.
RecvOp nextSameChannel(RecvOp recv) {
  for (Operation *op = recv->getNextNode(); op; op = op->getNextNode())
    if (auto r = dyn_cast<RecvOp>(op))
      if (r.getPeerAttr() == recv.getPeerAttr() &&
          r.getPeerOffsetAttr() == recv.getPeerOffsetAttr() &&
          r.getPeerAxisAttr() == recv.getPeerAxisAttr() &&
          r.getTag() == recv.getTag() && r.getType() == recv.getType())
        return r;
  return {};
}

/// A point-to-point transfer of the context-parallel ring.
bool onCpRing(Operation *op) {
  if (auto r = dyn_cast<RecvOp>(op))
    return r.getPeerAxis() && *r.getPeerAxis() == "cp";
  if (auto s = dyn_cast<SendOp>(op))
    return s.getPeerAxis() && *s.getPeerAxis() == "cp";
  return false;
}

/// The block a ring step held before `recv`'s: the input of the send at
/// the same position of the same exchange (the contiguous run of ring
/// transfers around `recv`).
Value previousBlock(RecvOp recv) {
  Operation *first = recv, *last = recv;
  while (first->getPrevNode() && onCpRing(first->getPrevNode()))
    first = first->getPrevNode();
  while (last->getNextNode() && onCpRing(last->getNextNode()))
    last = last->getNextNode();
  SmallVector<RecvOp> recvs;
  SmallVector<SendOp> sends;
  for (Operation *op = first;; op = op->getNextNode()) {
    if (auto r = dyn_cast<RecvOp>(op))
      recvs.push_back(r);
    else
      sends.push_back(cast<SendOp>(op));
    if (op == last)
      break;
  }
  size_t pos = llvm::find(recvs, recv) - recvs.begin();
  return pos < sends.size() ? sends[pos].getInput() : Value();
}

/// Whether a collective's axes are exactly `axis`.
bool onlyAxis(std::optional<ArrayAttr> axes, StringRef axis) {
  return axes && axes->size() == 1 &&
         cast<StringAttr>((*axes)[0]).getValue() == axis;
}

/// Whether `v` reaches, through collectives, chunks and copies only (the
/// end-of-step gradient reductions and sharding), a tv.output whose name
/// satisfies `pred`.
bool reachesOutput(Value v, llvm::function_ref<bool(StringRef)> pred,
                   int depth = 0) {
  if (depth > 4)
    return false;
  for (Operation *user : v.getUsers()) {
    if (auto out = dyn_cast<OutputOp>(user)) {
      if (pred(out.getName()))
        return true;
    } else if (isa<AllReduceOp, ReduceScatterOp, CopyOp, ChunkOp>(user) &&
               reachesOutput(user->getResult(0), pred, depth + 1)) {
      return true;
    }
  }
  return false;
}

/// Decoder layer of a name "lK.<...>", or -1.
int64_t layerOfName(StringRef name) {
  if (!name.consume_front("l"))
    return -1;
  auto [num, rest] = name.split('.');
  int64_t k;
  if (rest.empty() || num.getAsInteger(10, k))
    return -1;
  return k;
}

/// Decoder layer of every op of a program: the layer of the first tag or
/// output after it that names one (the value the op contributes to).
DenseMap<Operation *, int64_t> layersOf(RankProgramOp prog) {
  DenseMap<Operation *, int64_t> res;
  SmallVector<Operation *> pending;
  for (Operation &op : prog.getBody().front()) {
    pending.push_back(&op);
    StringRef name;
    if (auto t = dyn_cast<TagOp>(op))
      name = t.getName();
    else if (auto o = dyn_cast<OutputOp>(op))
      name = o.getName();
    int64_t k = name.empty() ? -1 : layerOfName(name);
    if (name.empty())
      continue;
    for (Operation *p : pending)
      res[p] = k;
    pending.clear();
  }
  return res;
}

struct InjectBugPass : public tv::impl::TVInjectBugBase<InjectBugPass> {
  using TVInjectBugBase::TVInjectBugBase;
  void runOnOperation() override;

  /// The k-th op of a program satisfying `pred`, or null.
  template <typename Pred>
  Operation *nth(RankProgramOp prog, Pred pred, int k, bool fromEnd = false) {
    SmallVector<Operation *> hits;
    DenseMap<Operation *, int64_t> layers;
    if (layer >= 0)
      layers = layersOf(prog);
    for (Operation &op : prog.getBody().front())
      if (pred(&op) &&
          (layer < 0 || (layers.count(&op) && layers.lookup(&op) == layer)))
        hits.push_back(&op);
    if (fromEnd)
      std::reverse(hits.begin(), hits.end());
    return k >= 0 && k < (int)hits.size() ? hits[k] : nullptr;
  }
};

} // namespace

void InjectBugPass::runOnOperation() {
  ModuleOp module = getOperation();
  // Mutate the canonical form (explicit gradient versions, shared programs),
  // where every class has its natural candidates.
  if (failed(ssaCanonicalize(module)))
    return signalPassFailure();
  // The mutation may leave the canonical form: canonicalize again later.
  module->removeAttr(kCanonicalAttrName);
  PlanOp plan = getProgramParts(module).plan;
  if (!plan) {
    module.emitError() << "tv-inject-bug needs a module with a tv.plan";
    return signalPassFailure();
  }
  MeshOp mesh = plan.getMeshOp();
  SmallVector<RankProgramOp> progs(plan.getBody().front().getOps<RankProgramOp>());
  llvm::sort(progs, [](RankProgramOp a, RankProgramOp b) {
    return a.getRanks().front() < b.getRanks().front();
  });

  // Candidate predicate and mutation per class.
  std::string b = bug;
  std::function<bool(Operation *)> pred;
  // Single-rank classes split the rank out of a shared program; the others
  // mutate the program as written, on every rank that runs it.
  bool fromEnd = false, singleRank = false;
  // The end-of-step reductions: values that reach, through collectives
  // only, an output that is a gradient (neither the loss nor an updated
  // parameter).
  auto isGradReduction = [](Value v) {
    return reachesOutput(v, [](StringRef n) {
      return n != "loss" && !n.ends_with(".new");
    });
  };
  if (b == "missing-allreduce" || b == "dropped-allreduce" ||
      b == "allreduce-as-allgather") {
    bool needsRank = b == "allreduce-as-allgather"; // gathers along dim 0
    pred = [needsRank](Operation *op) {
      auto ar = dyn_cast<AllReduceOp>(op);
      return ar && ar.getKind() == ReduceKind::sum &&
             (!needsRank ||
              cast<RankedTensorType>(ar.getType()).getRank() > 0);
    };
  } else if (b == "missing-bw-reduce") {
    // Plans that mark their micro-batch ops: only those are candidates.
    bool planHasMb = plan
                         .walk([](Operation *op) {
                           return getMicroBatch(op).has_value() ? WalkResult::interrupt()
                                                    : WalkResult::advance();
                         })
                         .wasInterrupted();
    // The last all-reduce of the micro-batch computation (a backward one),
    // not an end-of-step gradient reduction.
    pred = [=](Operation *op) {
      auto ar = dyn_cast<AllReduceOp>(op);
      return ar && ar.getKind() == ReduceKind::sum &&
             !isGradReduction(ar.getResult()) &&
             (getMicroBatch(ar).has_value() || !planHasMb) &&
             !reachesOutput(ar.getResult(),
                            [](StringRef n) { return n == "loss"; });
    };
    fromEnd = true;
  } else if (b == "allgather-as-allreduce") {
    pred = [](Operation *op) { return isa<AllGatherOp>(op); };
  } else if (b == "wrong-pp-peer") {
    pred = [](Operation *op) { return isa<RecvOp>(op); };
    singleRank = true;
  } else if (b == "pp-recv-swapped") {
    // A received activation with a later one of the same channel: the two
    // are consumed in each other's place (a message taken by the wrong
    // micro-batch, or by the wrong virtual stage of an interleaved
    // schedule).
    pred = [](Operation *op) {
      auto recv = dyn_cast<RecvOp>(op);
      return recv && nextSameChannel(recv);
    };
  } else if (b == "rank-add-const" || b == "multi-rank-add-const") {
    pred = [](Operation *op) { return isa<AddScalarOp, AddOp>(op); };
    singleRank = b == "rank-add-const";
  } else if (b == "rank-pow-exponent") {
    pred = [](Operation *op) { return isa<PowOp>(op); };
    singleRank = true;
  } else if (b == "bw-wrong-input") {
    pred = [](Operation *op) {
      return isa<GradOpInterface>(op) && op->getNumOperands() >= 2;
    };
    singleRank = true;
  } else if (b == "bw-swapped-outputs") {
    pred = [](Operation *op) {
      if (!isa<GradOpInterface>(op))
        return false;
      for (unsigned i = 0; i < op->getNumResults(); ++i)
        for (unsigned j = i + 1; j < op->getNumResults(); ++j)
          if (op->getResult(i).getType() == op->getResult(j).getType())
            return true;
      return false;
    };
    singleRank = true;
  } else if (b == "rank-scale" || b == "multi-rank-scale") {
    pred = [](Operation *op) { return isa<LinearOp, MatmulOp>(op); };
    singleRank = b == "rank-scale";
  } else if (b == "early-grad-reduce") {
    // A gradient reduction of an accumulated (summed) gradient.
    pred = [=](Operation *op) {
      auto ar = dyn_cast<AllReduceOp>(op);
      if (!ar || !ar.getInput().getDefiningOp<AddOp>() ||
          !isGradReduction(ar.getResult()))
        return false;
      // The data-parallel reduction, not sequence parallelism's tp one.
      if (std::optional<ArrayAttr> axes = ar.getAxes())
        for (Attribute a : *axes)
          if (cast<StringAttr>(a).getValue() == "tp")
            return false;
      return true;
    };
  } else if (b == "grad-scale-mb") {
    // The scaling of the loss seed (1 / (dp * micro-batches)) or of an
    // accumulated gradient.
    pred = [=](Operation *op) {
      auto sc = dyn_cast<ScaleOp>(op);
      return sc && (sc.getInput().getDefiningOp<InputOp>() ||
                    isGradReduction(sc.getResult()));
    };
  } else if (b == "sp-missing-norm-grad-reduce" ||
             b == "sp-missing-weight-grad-reduce") {
    // The tp all-reduce of a sequence-parallel weight's gradient: a norm's,
    // or a linear weight's (an MoE router, MLA's down-projections).
    bool norms = b == "sp-missing-norm-grad-reduce";
    pred = [norms](Operation *op) {
      auto ar = dyn_cast<AllReduceOp>(op);
      if (!ar || !onlyAxis(ar.getAxes(), "tp"))
        return false;
      return reachesOutput(ar.getResult(), [norms](StringRef n) {
        if (norms)
          return n.ends_with("norm.grad");
        return n.ends_with(".gate.grad") || n.ends_with(".q_a_proj.grad") ||
               n.ends_with(".kv_a_proj_with_mqa.grad");
      });
    };
  } else if (b == "expert-grad-wrong-divide") {
    // A per-rank-mean plan's expert gradient divided by its
    // expert-data-parallel size (dp / ep), not by dp: ep times too large.
    pred = [](Operation *op) {
      auto sc = dyn_cast<ScaleOp>(op);
      Operation *red = sc ? sc.getInput().getDefiningOp() : nullptr;
      if (!red || !isa<AllReduceOp, ReduceScatterOp>(red))
        return false;
      // Under the distributed optimizer, the divide of the experts' flat
      // bucket (the only scaled bucket; 0 is an all-padding shard).
      if (isa<ReduceScatterOp>(red) &&
          cast<RankedTensorType>(sc.getType()).getRank() == 1)
        return !sc.getScalar().isZero();
      return reachesOutput(sc.getResult(), [](StringRef n) {
        return n.contains(".experts.") && n.ends_with(".grad");
      });
    };
  } else if (b == "sp-moe-output-not-reduced") {
    // Under sequence parallelism, the tp reduce-scatter of the
    // tensor-parallel experts' output (or of their input's gradient).
    pred = [](Operation *op) {
      auto rs = dyn_cast<ReduceScatterOp>(op);
      if (!rs || !onlyAxis(rs.getAxes(), "tp"))
        return false;
      // The experts' batch: [experts, tokens, hidden], scattered on tokens.
      return cast<RankedTensorType>(rs.getType()).getRank() == 3 &&
             rs.getDim() == 1 && !rs.getResult().use_empty() &&
             llvm::any_of(rs.getResult().getUsers(), [](Operation *u) {
               return isa<AllToAllOp, CombineOp, DispatchGradOp>(u);
             });
    };
  } else if (b == "ep-double-reduce") {
    pred = [](Operation *op) {
      auto out = dyn_cast<OutputOp>(op);
      return out && out.getName().contains(".experts.") &&
             out.getName().ends_with(".grad");
    };
  } else if (b == "double-grad-average") {
    // A data-parallel gradient sum that becomes an average in a plan whose
    // backward already divides by dp (global-mean loss): the gradient is
    // divided twice.
    pred = [=](Operation *op) {
      auto ar = dyn_cast<AllReduceOp>(op);
      if (!ar || ar.getKind() != ReduceKind::sum ||
          !isGradReduction(ar.getResult()) || !ar.getAxes())
        return false;
      for (Attribute a : *ar.getAxes())
        if (cast<StringAttr>(a).getValue() == "dp" ||
            cast<StringAttr>(a).getValue() == "edp")
          return true;
      return false;
    };
  } else if (b == "vocab-ce-missing-allreduce") {
    // A tp all-reduce of the vocabulary-parallel cross-entropy: of the
    // logits' max, of the predicted (target) logits, or of the sums of
    // exps, in program order.
    pred = [](Operation *op) {
      auto ar = dyn_cast<AllReduceOp>(op);
      if (!ar)
        return false;
      Operation *def = ar.getInput().getDefiningOp();
      if (!def)
        return false;
      if (isa<MaxOp, TargetLogitOp>(def))
        return true;
      auto sum = dyn_cast<SumOp>(def);
      return sum && sum->getOperand(0).getDefiningOp<ExpOp>();
    };
  } else if (b == "cp-seed-unscaled") {
    // Context parallelism: each cp rank's loss is the mean over its chunk
    // of the sequence; a backward seeded without the 1/cp (as if the chunk
    // were the whole sequence) gives gradients cp times the spec's.
    pred = [](Operation *op) {
      auto sc = dyn_cast<ScaleOp>(op);
      return sc && sc.getInput().getDefiningOp<InputOp>();
    };
  } else if (b == "ring-stale-kv") {
    // Ring attention: a step computes with the key or value block it held
    // before (the one it just passed on) instead of the one it received.
    pred = [](Operation *op) {
      auto r = dyn_cast<RecvOp>(op);
      return r && onCpRing(r) && previousBlock(r) &&
             llvm::any_of(r->getUsers(),
                          [](Operation *u) { return !isa<SendOp>(u); });
    };
  } else if (b == "cp-chunks-misordered") {
    // The load-balanced sequence order: a rank lays its two chunks (r and
    // 2cp - 1 - r) out the other way around, for one of its inputs (by
    // `index`: RoPE tables, then tokens, then labels).
    pred = [](Operation *op) {
      auto c = dyn_cast<ConcatOp>(op);
      return c && c->getNumOperands() == 2 &&
             llvm::all_of(c->getOperands(), [](Value v) {
               return (bool)v.getDefiningOp<InputOp>();
             });
    };
  } else if (b == "ring-missing-rescale") {
    // Online softmax: the running sum is not rescaled by exp(m_old - m_new)
    // when a block raises the running max.
    pred = [](Operation *op) {
      auto mul = dyn_cast<MulOp>(op);
      if (!mul || mul.getLhs().getType() != mul.getRhs().getType())
        return false;
      auto e = mul.getLhs().getDefiningOp<ExpOp>();
      auto sub = e ? e.getInput().getDefiningOp<SubOp>() : SubOp();
      return sub && sub.getLhs().getDefiningOp<MaxOp>() &&
             sub.getRhs().getDefiningOp<MaxOp>();
    };
  } else if (b == "cp-mask-misaligned") {
    // All-gathered keys and values: the causal mask of a rank's block of
    // queries against the whole sequence aligned to the bottom-right
    // corner (flash-attention's convention since 2.1 when there are fewer
    // queries than keys) instead of at the rank's block: every rank's
    // queries see the keys the last block's see.
    pred = [](Operation *op) {
      auto m = dyn_cast<CausalMaskOp>(op);
      return m && m.getQueryAxis();
    };
  } else if (b == "ulysses-a2a-wrong-dim") {
    // DeepSpeed-Ulysses: an all-to-all over cp that splits dimension 1 and
    // concatenates along dimension 2 (q, k, v to the whole sequence, then
    // the attention output back to the chunk, by `index`) concatenates
    // along the last dimension instead, its result viewed as the expected
    // shape: the exchange on the wrong dimensions.
    pred = [](Operation *op) {
      auto a2a = dyn_cast<AllToAllOp>(op);
      return a2a && onlyAxis(a2a.getAxes(), "cp") && a2a.getSplitDim() == 1 &&
             a2a.getConcatDim() == 2 &&
             cast<RankedTensorType>(a2a.getType()).getRank() == 4;
    };
  } else if (b == "padded-logits-in-loss") {
    // Megatron-LM's padded vocabulary: the mask that keeps the padded
    // columns out of the softmax (decision 71). Left out, the padding rows
    // of the LM head (free values) reach the loss.
    // On all-gathered logits, the slice of the real columns before
    // tv.cross_entropy.
    pred = [](Operation *op) {
      if (auto ce = dyn_cast<CrossEntropyOp>(op))
        return (bool)ce.getLogits().getDefiningOp<SliceOp>();
      auto am = dyn_cast<ApplyMaskOp>(op);
      return am && am.getMask().getDefiningOp<VocabMaskOp>();
    };
  } else if (b == "tied-embedding-unsynced") {
    // Tied embeddings under pipeline parallelism: the all-reduce of the
    // embedding gradient over the embedding group (first and last stage).
    pred = [](Operation *op) {
      auto ar = dyn_cast<AllReduceOp>(op);
      if (!ar)
        return false;
      // Written as rank groups; canonicalization names the group by the
      // pp axis when the pair is the whole axis (pp = 2).
      bool acrossStages = ar.getRankGroups().has_value();
      if (std::optional<ArrayAttr> axes = ar.getAxes())
        for (Attribute a : *axes)
          acrossStages |= cast<StringAttr>(a).getValue() == "pp";
      // Under the distributed optimizer it sums the embedding's bucket
      // shard, right after the data-parallel reduce-scatter.
      return acrossStages &&
             (reachesOutput(ar.getResult(),
                            [](StringRef n) {
                              return n == "tok_embeddings.grad";
                            }) ||
              isa_and_nonnull<ReduceScatterOp>(ar.getInput().getDefiningOp()));
    };
  } else if (b == "zero-wrong-shard") {
    pred = [](Operation *op) {
      auto rs = dyn_cast<ReduceScatterOp>(op);
      return rs && cast<RankedTensorType>(rs.getType()).getRank() >= 2 &&
             reachesOutput(rs.getResult(),
                           [](StringRef n) { return n.ends_with(".grad"); });
    };
  } else if (b == "adam-moments-swapped") {
    pred = [](Operation *op) { return isa<AdamOp>(op); };
  } else if (b == "sharded-grad-wrong-factor" ||
             b == "sharded-grad-wrong-group") {
    // The gradient reduce-scatter of ZeRO-2/3 and FSDP (a sum: the
    // backward already divided by the data-parallel size); for the wrong
    // group, one over axes only, with another axis of the same size.
    bool group = b == "sharded-grad-wrong-group";
    pred = [group, mesh](Operation *op) {
      auto rs = dyn_cast<ReduceScatterOp>(op);
      if (!rs || rs.getKind() != ReduceKind::sum ||
          !reachesOutput(rs.getResult(),
                         [](StringRef n) { return n.ends_with(".grad"); }))
        return false;
      return !group || (mesh && rs.getAxes() && !rs.getRankGroups());
    };
  } else if (b == "flat-param-view-offset" || b == "flat-shard-misowned") {
    // Megatron's distributed optimizer: a parameter's view into the
    // all-gathered parameter buffer, or a rank's owned range of the
    // reduce-scattered gradient buffer, taken one element off (an offset
    // computed without the padding or alignment the buffer has).
    bool view = b == "flat-param-view-offset";
    pred = [view](Operation *op) {
      auto sl = dyn_cast<SliceOp>(op);
      if (!sl || cast<RankedTensorType>(sl.getType()).getRank() != 1)
        return false;
      Operation *def = sl.getInput().getDefiningOp();
      return view ? isa_and_nonnull<AllGatherOp>(def)
                  : isa_and_nonnull<ReduceScatterOp>(def);
    };
  } else {
    static const char *const classes[] = {
        "missing-allreduce",   "dropped-allreduce",
        "allreduce-as-allgather", "allgather-as-allreduce",
        "missing-bw-reduce",   "wrong-pp-peer",
        "rank-add-const",      "multi-rank-add-const",
        "rank-pow-exponent",   "bw-wrong-input",
        "bw-swapped-outputs",  "rank-scale",
        "multi-rank-scale",    "early-grad-reduce",
        "grad-scale-mb",       "sp-missing-norm-grad-reduce",
        "ep-double-reduce",    "zero-wrong-shard",
        "tied-embedding-unsynced", "vocab-ce-missing-allreduce",
        "double-grad-average", "adam-moments-swapped",
        "sharded-grad-wrong-factor", "sharded-grad-wrong-group",
        "sp-missing-weight-grad-reduce", "sp-moe-output-not-reduced",
        "expert-grad-wrong-divide", "pp-recv-swapped",
        "padded-logits-in-loss", "cp-seed-unscaled",
        "ulysses-a2a-wrong-dim", "cp-mask-misaligned", "ring-stale-kv",
        "ring-missing-rescale", "cp-chunks-misordered",
        "flat-param-view-offset", "flat-shard-misowned"};
    InFlightDiagnostic d = module.emitError()
                           << "unknown bug class '" << b << "'; the classes are ";
    llvm::interleaveComma(classes, d);
    return signalPassFailure();
  }

  // The embedding group's all-reduce is one collective on two stages'
  // programs: a framework that never syncs tied gradients leaves it out on
  // both (left out on one only, the plan deadlocks).
  if (b == "tied-embedding-unsynced") {
    SmallVector<AllReduceOp> all;
    for (RankProgramOp p : progs)
      for (Operation &op : p.getBody().front())
        if (pred(&op))
          all.push_back(cast<AllReduceOp>(op));
    if (all.empty()) {
      module.emitError() << "no candidate op for bug '" << b
                         << "' (tied embeddings under pipeline parallelism)";
      return signalPassFailure();
    }
    for (AllReduceOp ar : all)
      replaceByCopy(ar, ar.getInput(), b);
    return;
  }

  // Find the program and op.
  Operation *target = nullptr;
  RankProgramOp prog;
  int64_t chosenRank = -1;
  for (RankProgramOp p : progs) {
    if (rank >= 0 && !llvm::is_contained(p.getRanks(), (int64_t)rank))
      continue;
    if (Operation *op = nth(p, pred, index, fromEnd)) {
      prog = p;
      target = op;
      chosenRank = rank >= 0 ? rank : p.getRanks().front();
      break;
    }
  }
  if (!target) {
    module.emitError() << "no candidate op for bug '" << b << "'"
                       << (rank >= 0 ? " on rank " + std::to_string(rank) : "")
                       << (layer >= 0 ? " in layer " + std::to_string(layer)
                                      : "");
    return signalPassFailure();
  }
  if (singleRank && prog.getRanks().size() > 1) {
    // Re-find the op in the rank's own copy.
    unsigned pos = 0;
    for (Operation &op : prog.getBody().front()) {
      if (&op == target)
        break;
      ++pos;
    }
    prog = splitOut(prog, chosenRank);
    target = &*std::next(prog.getBody().front().begin(), pos);
  }
  OpBuilder bld(target);
  Location loc = target->getLoc();
  auto tag = [&](Operation *op) {
    op->setAttr("injected_bug", bld.getStringAttr(b));
  };

  if (b == "missing-allreduce" || b == "missing-bw-reduce" ||
      b == "sp-missing-norm-grad-reduce" ||
      b == "sp-missing-weight-grad-reduce" ||
      b == "vocab-ce-missing-allreduce") {
    replaceByCopy(target, cast<AllReduceOp>(target).getInput(), b);
  } else if (b == "double-grad-average") {
    auto ar = cast<AllReduceOp>(target);
    ar.setKind(ReduceKind::avg);
    tag(ar);
  } else if (b == "expert-grad-wrong-divide") {
    auto sc = cast<ScaleOp>(target);
    int64_t ep = 1;
    if (int64_t i = mesh ? mesh.getAxisIndex("ep") : -1; i >= 0)
      ep = mesh.getSizes()[i];
    if (ep < 2) {
      sc.emitError() << "expert-grad-wrong-divide needs an ep axis";
      return signalPassFailure();
    }
    sc.setScalarAttr(
        bld.getF64FloatAttr(sc.getScalar().convertToDouble() * ep));
    tag(sc);
  } else if (b == "sp-moe-output-not-reduced") {
    // Each rank keeps its own chunk of its partial sum.
    auto rs = cast<ReduceScatterOp>(target);
    auto chunk = ChunkOp::create(bld, loc, rs.getType(), rs.getInput(),
                                 rs.getDim(), IntegerAttr(), rs.getAxesAttr(),
                                 rs.getRankGroupsAttr());
    for (NamedAttribute a : rs->getDiscardableAttrs())
      chunk->setAttr(a.getName(), a.getValue());
    tag(chunk);
    rs.getResult().replaceAllUsesWith(chunk.getResult());
    rs->erase();
  } else if (b == "sharded-grad-wrong-factor") {
    auto rs = cast<ReduceScatterOp>(target);
    rs.setKind(ReduceKind::avg);
    tag(rs);
  } else if (b == "sharded-grad-wrong-group") {
    // The reduce-scatter runs over another mesh axis of the same size (the
    // tensor-parallel group for the data-parallel one, say).
    auto rs = cast<ReduceScatterOp>(target);
    ArrayAttr axes = *rs.getAxes();
    int64_t size = 1;
    SmallVector<int64_t> sizes(mesh.getSizes());
    for (Attribute a : axes)
      size *= sizes[mesh.getAxisIndex(cast<StringAttr>(a).getValue())];
    Attribute other;
    for (auto [i, a] : llvm::enumerate(mesh.getAxes()))
      if (!llvm::is_contained(axes, a) && sizes[i] == size)
        other = a;
    if (!other) {
      rs.emitError() << "sharded-grad-wrong-group: no other mesh axis of "
                        "size "
                     << size;
      return signalPassFailure();
    }
    rs.setAxesAttr(bld.getArrayAttr({other}));
    tag(rs);
  } else if (b == "cp-seed-unscaled") {
    int64_t i = mesh ? mesh.getAxisIndex("cp") : -1;
    if (i < 0) {
      module.emitError() << "bug '" << b << "' needs a mesh with a cp axis";
      return signalPassFailure();
    }
    auto sc = cast<ScaleOp>(target);
    sc.setScalarAttr(bld.getF64FloatAttr(sc.getScalar().convertToDouble() *
                                         (double)mesh.getSizes()[i]));
    tag(sc);
  } else if (b == "ring-stale-kv") {
    // The edit is in the readers: each now reads the stale block.
    auto r = cast<RecvOp>(target);
    Value stale = previousBlock(r);
    SmallVector<Operation *> readers;
    for (Operation *u : r->getUsers())
      if (!isa<SendOp>(u))
        readers.push_back(u);
    r.getResult().replaceUsesWithIf(stale, [](OpOperand &use) {
      return !isa<SendOp>(use.getOwner());
    });
    for (Operation *u : readers)
      if (!isa<TagOp, OutputOp>(u))
        tag(u);
  } else if (b == "cp-chunks-misordered") {
    Value x = target->getOperand(0), y = target->getOperand(1);
    target->setOperand(0, y);
    target->setOperand(1, x);
    tag(target);
  } else if (b == "ring-missing-rescale") {
    auto mul = cast<MulOp>(target);
    mul.getResult().replaceAllUsesWith(mul.getRhs());
    tag(mul.getLhs().getDefiningOp());
    mul->erase();
  } else if (b == "cp-mask-misaligned") {
    auto m = cast<CausalMaskOp>(target);
    m.removeQueryAxisAttr();
    tag(m);
  } else if (b == "ulysses-a2a-wrong-dim") {
    auto a2a = cast<AllToAllOp>(target);
    auto ty = cast<RankedTensorType>(a2a.getType());
    auto inTy = cast<RankedTensorType>(a2a.getInput().getType());
    SmallVector<int64_t> shape(inTy.getShape());
    int64_t n = inTy.getDimSize(1) / ty.getDimSize(1);
    shape[1] /= n;
    shape[3] *= n;
    auto bad = AllToAllOp::create(
        bld, loc, RankedTensorType::get(shape, ty.getElementType()),
        a2a.getInput(), 1, 3, a2a.getAxesAttr(), a2a.getRankGroupsAttr());
    for (NamedAttribute a : a2a->getDiscardableAttrs())
      bad->setAttr(a.getName(), a.getValue());
    auto view = ReshapeOp::create(bld, loc, ty, bad.getResult());
    tag(bad);
    a2a.getResult().replaceAllUsesWith(view.getResult());
    a2a->erase();
  } else if (b == "padded-logits-in-loss") {
    if (auto ce = dyn_cast<CrossEntropyOp>(target)) {
      ce->setOperand(0, ce.getLogits().getDefiningOp<SliceOp>().getInput());
      tag(ce);
      return;
    }
    replaceByCopy(target, cast<ApplyMaskOp>(target).getInput(), b);
  } else if (b == "flat-param-view-offset" || b == "flat-shard-misowned") {
    auto sl = cast<SliceOp>(target);
    int64_t start = sl.getStart()[0],
            n = cast<RankedTensorType>(sl.getType()).getDimSize(0),
            whole = cast<RankedTensorType>(sl.getInput().getType())
                        .getDimSize(0);
    int64_t moved = start + n < whole ? start + 1 : start - 1;
    if (moved < 0) {
      sl.emitError() << b << ": the slice covers its whole buffer";
      return signalPassFailure();
    }
    sl->setAttr("start", bld.getDenseI64ArrayAttr({moved}));
    tag(sl);
  } else if (b == "adam-moments-swapped") {
    // A fused optimizer kernel called with exp_avg and exp_avg_sq in each
    // other's place.
    auto adam = cast<AdamOp>(target);
    Value m = adam.getM(), v = adam.getV();
    adam->setOperand(2, v);
    adam->setOperand(3, m);
    tag(adam);
  } else if (b == "dropped-allreduce") {
    // The consumers read a stale version that nothing computes here.
    auto ar = cast<AllReduceOp>(target);
    OpBuilder ib(&prog.getBody().front(), prog.getBody().front().begin());
    auto stale = InputOp::create(ib, loc, ar.getType(),
                                 "stale.allreduce." + std::to_string(index));
    tag(stale);
    ar.getResult().replaceAllUsesWith(stale.getResult());
    ar->erase();
  } else if (b == "allreduce-as-allgather") {
    auto ar = cast<AllReduceOp>(target);
    auto ty = cast<RankedTensorType>(ar.getType());
    int64_t n = mesh ? (int64_t)ar.getGroup(prog.getRanks().front()).size() : 1;
    SmallVector<int64_t> shape(ty.getShape());
    shape[0] *= n;
    auto ag = AllGatherOp::create(
        bld, loc, RankedTensorType::get(shape, ty.getElementType()),
        ar.getInput(), 0, DenseI64ArrayAttr(), ar.getAxesAttr(),
        ar.getRankGroupsAttr());
    auto sl = SliceOp::create(bld, loc, ty, ag,
                              SmallVector<int64_t>(ty.getRank(), 0));
    tag(ag);
    ar.getResult().replaceAllUsesWith(sl.getResult());
    ar->erase();
  } else if (b == "allgather-as-allreduce") {
    auto ag = cast<AllGatherOp>(target);
    auto pad = SliceGradOp::create(
        bld, loc, ag.getType(), ag.getInput(),
        SmallVector<int64_t>(cast<RankedTensorType>(ag.getType()).getRank(), 0));
    auto ar = AllReduceOp::create(bld, loc, ag.getType(), pad, ReduceKind::sum,
                                  ag.getAxesAttr(), ag.getRankGroupsAttr());
    tag(ar);
    ag.getResult().replaceAllUsesWith(ar.getResult());
    ag->erase();
  } else if (b == "pp-recv-swapped") {
    auto recv = cast<RecvOp>(target);
    RecvOp other = nextSameChannel(recv);
    Value a = recv.getResult(), c = other.getResult();
    // Swap the uses: a placeholder keeps the two sets apart.
    SmallVector<OpOperand *> usesA, usesC;
    for (OpOperand &u : a.getUses())
      usesA.push_back(&u);
    for (OpOperand &u : c.getUses())
      usesC.push_back(&u);
    for (OpOperand *u : usesA)
      u->set(c);
    for (OpOperand *u : usesC)
      u->set(a);
    tag(recv);
    tag(other);
    // A use of the later message now precedes it: move that recv up.
    other->moveAfter(recv);
  } else if (b == "wrong-pp-peer") {
    auto recv = cast<RecvOp>(target);
    int64_t right = recv.getPeerOf(chosenRank);
    int64_t n = mesh ? mesh.getNumRanks() : 1;
    int64_t wrong = -1;
    for (int64_t r = 0; r < n && wrong < 0; ++r)
      if (r != right && r != chosenRank)
        wrong = r;
    if (wrong < 0) {
      recv.emitError() << "wrong-pp-peer needs a third rank on the mesh";
      return signalPassFailure();
    }
    recv->removeAttr("peer_axis");
    recv->removeAttr("peer_offset");
    recv->removeAttr("peer_shift");
    recv->setAttr("peer", bld.getI64IntegerAttr(wrong));
    tag(recv);
  } else if (b == "rank-add-const" || b == "multi-rank-add-const") {
    bld.setInsertionPointAfter(target);
    Value r = target->getResult(0);
    if (auto as = dyn_cast<AddScalarOp>(target)) {
      as.setScalarAttr(bld.getF64FloatAttr(as.getScalar().convertToDouble() + 1.0));
      tag(as);
    } else {
      auto c = AddScalarOp::create(bld, loc, r, bld.getF64FloatAttr(1.0));
      r.replaceAllUsesExcept(c.getResult(), c);
      tag(c);
    }
  } else if (b == "rank-pow-exponent") {
    auto p = cast<PowOp>(target);
    double e = p.getScalar().convertToDouble();
    p.setScalarAttr(bld.getF64FloatAttr(e == 1.0 ? 2.0 : e - 1.0));
    tag(p);
  } else if (b == "bw-wrong-input") {
    // Read another value of the gradient operand's type: the latest one
    // defined earlier in the program.
    unsigned gi = cast<GradOpInterface>(target).getCotangentIndex();
    Value grad = target->getOperand(gi);
    Value other;
    for (Operation &op : prog.getBody().front()) {
      if (&op == target)
        break;
      for (Value v : op.getResults())
        if (v != grad && v.getType() == grad.getType())
          other = v;
    }
    if (!other) {
      module.emitError() << "no other tensor of type " << grad.getType()
                         << " for bw-wrong-input";
      return signalPassFailure();
    }
    target->setOperand(gi, other);
    tag(target);
  } else if (b == "bw-swapped-outputs") {
    Value a, c;
    for (unsigned i = 0; i < target->getNumResults() && !a; ++i)
      for (unsigned j = i + 1; j < target->getNumResults() && !a; ++j)
        if (target->getResult(i).getType() == target->getResult(j).getType()) {
          a = target->getResult(i);
          c = target->getResult(j);
        }
    SmallVector<OpOperand *> aUses, cUses;
    for (OpOperand &u : a.getUses())
      aUses.push_back(&u);
    for (OpOperand &u : c.getUses())
      cUses.push_back(&u);
    for (OpOperand *u : aUses)
      u->set(c);
    for (OpOperand *u : cUses)
      u->set(a);
    tag(target);
  } else if (b == "rank-scale" || b == "multi-rank-scale") {
    bld.setInsertionPointAfter(target);
    Value r = target->getResult(0);
    auto s = ScaleOp::create(bld, loc, r, bld.getF64FloatAttr(0.5));
    r.replaceAllUsesExcept(s.getResult(), s);
    tag(s);
  } else if (b == "early-grad-reduce") {
    // all_reduce(a + b) becomes all_reduce(a) + b: the last micro-batch's
    // gradient is added after the data-parallel reduction.
    auto ar = cast<AllReduceOp>(target);
    auto add = ar.getInput().getDefiningOp<AddOp>();
    auto early = AllReduceOp::create(bld, loc, add.getLhs().getType(),
                                     add.getLhs(), ar.getKind(),
                                     ar.getAxesAttr(), ar.getRankGroupsAttr());
    auto late = AddOp::create(bld, loc, ar.getType(), early, add.getRhs());
    tag(early);
    ar.getResult().replaceAllUsesWith(late.getResult());
    ar->erase();
  } else if (b == "grad-scale-mb") {
    auto s = cast<ScaleOp>(target);
    s.setScalarAttr(bld.getF64FloatAttr(s.getScalar().convertToDouble() * 2.0));
    tag(s);
  } else if (b == "ep-double-reduce") {
    // The expert gradient also goes through the dense data-parallel
    // reduction: every mesh axis but pp and tp.
    SmallVector<Attribute> axes;
    if (mesh)
      for (Attribute a : mesh.getAxes())
        if (cast<StringAttr>(a).getValue() != "pp" &&
            cast<StringAttr>(a).getValue() != "tp")
          axes.push_back(a);
    if (axes.empty()) {
      module.emitError() << "ep-double-reduce needs a mesh with a "
                            "data-parallel axis";
      return signalPassFailure();
    }
    auto out = cast<OutputOp>(target);
    auto ar = AllReduceOp::create(bld, loc, out.getValue().getType(),
                                  out.getValue(), ReduceKind::sum,
                                  bld.getArrayAttr(axes), ArrayAttr());
    tag(ar);
    out->setOperand(0, ar.getResult());
  } else if (b == "zero-wrong-shard") {
    auto rs = cast<ReduceScatterOp>(target);
    auto inTy = cast<RankedTensorType>(rs.getInput().getType());
    auto outTy = cast<RankedTensorType>(rs.getType());
    int64_t dim = rs.getDim();
    if (outTy.getDimSize(dim) == 0) {
      rs.emitError() << "zero-wrong-shard: empty shard";
      return signalPassFailure();
    }
    int64_t n = inTy.getDimSize(dim) / outTy.getDimSize(dim);
    int64_t wrong = -1;
    for (int64_t i = 1; i < inTy.getRank() && wrong < 0; ++i) {
      int64_t d = (dim + i) % inTy.getRank();
      if (inTy.getDimSize(d) % n == 0)
        wrong = d;
    }
    if (wrong < 0) {
      rs.emitError() << "zero-wrong-shard: no other dimension divisible by "
                     << n;
      return signalPassFailure();
    }
    SmallVector<int64_t> shape(inTy.getShape());
    shape[wrong] /= n;
    auto bad = ReduceScatterOp::create(
        bld, loc, RankedTensorType::get(shape, inTy.getElementType()),
        rs.getInput(), wrong, rs.getKind(), rs.getAxesAttr(),
        rs.getRankGroupsAttr());
    auto view = ReshapeOp::create(bld, loc, outTy, bad.getResult());
    tag(bad);
    rs.getResult().replaceAllUsesWith(view.getResult());
    rs->erase();
  }
}

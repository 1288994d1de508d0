//===- StageRelations.cpp - plan values as spec values --------------------===//
//
// What a plan value of a counterexample is in terms of the spec's values:
// a block of one (and where), a fused spec op's inside, a spec op the plan
// lacks between two values (docs/guide.md §4.2). The blame
// (StageBlame.cpp) builds on these.
//
//===----------------------------------------------------------------------===//
#include "StageRun.h"

#include <cmath>
#include <deque>
#include <set>

using namespace mlir;
using namespace mlir::tv;

namespace mlir::tv::stagecheck {

std::optional<SmallVector<int64_t>>
blockOffsetsOf(const Tensor<double> &t, const Tensor<double> &s) {
  if (t.shape.size() != s.shape.size() || t.data.empty())
    return std::nullopt;
  SmallVector<int64_t> blocks;
  for (auto [a, b] : llvm::zip(t.shape, s.shape)) {
    if (a == 0 || a > b || b % a)
      return std::nullopt;
    blocks.push_back(b / a);
  }
  SmallVector<int64_t> sStrides = stridesOf(s.shape), at, idx;
  for (int64_t bi = 0, be = numElements(blocks); bi < be; ++bi) {
    unravel(bi, blocks, at);
    bool all = true;
    for (size_t i = 0; i < t.data.size() && all; ++i) {
      unravel(i, t.shape, idx);
      int64_t flat = 0;
      for (size_t k = 0; k < idx.size(); ++k)
        flat += (at[k] * t.shape[k] + idx[k]) * sStrides[k];
      all = closeReal(t.data[i], s.data[flat]);
    }
    if (all) {
      SmallVector<int64_t> offsets;
      for (size_t k = 0; k < at.size(); ++k)
        offsets.push_back(at[k] * t.shape[k]);
      return offsets;
    }
  }
  return std::nullopt;
}

bool isBlockOf(const Tensor<double> &t, const Tensor<double> &s) {
  return blockOffsetsOf(t, s).has_value();
}

/// `t` without its dimensions of size one.
Tensor<double> squeezed(const Tensor<double> &t) {
  Tensor<double> out;
  for (int64_t d : t.shape)
    if (d != 1)
      out.shape.push_back(d);
  out.data = t.data;
  return out;
}

/// The values a fused spec op computes on its way (issue 34: a plan that
/// spells the op out relates to them). For the softmax cross-entropy
/// gradient of logits L [n, v] (its cotangent g): the row maximum, the
/// shifted logits, their exponentials, the row sums, the softmax, g / n and
/// both terms of the result, each in the shapes a plan holds them in
/// (reduced [n, 1], broadcast [n, v]); and the row maxima over every
/// column block of a width dividing v (a vocabulary shard's local maximum).
/// For a softmax over its last dimension, an online softmax's values over
/// blocks of columns (decision 110).
void assumedBlocks(StageOp stage, const Outcome<double> &out,
                   std::deque<Tensor<double>> &derived) {
  std::set<std::string> seen;
  for (Attribute a : stage.getAssumes()) {
    auto l = dyn_cast<LineageAttr>(a);
    if (!l || derived.size() >= 1024)
      continue;
    const Tensor<double> *s = out.spec.lookupNamed(-1, l.getSpec().getValue());
    if (!s || s->shape.size() != l.getRank())
      continue;
    SmallVector<int64_t> shape = l.getSliceShape();
    // Only proper blocks: the whole value is a spec value already.
    if (ArrayRef<int64_t>(shape) == ArrayRef<int64_t>(s->shape) ||
        numElements(shape) < 2)
      continue;
    if (!seen.insert(boxStr(l)).second)
      continue;
    Tensor<double> t;
    t.shape.assign(shape.begin(), shape.end());
    t.data = sliceOf(*s, l);
    derived.push_back(std::move(t));
  }
}

void fusedInsides(StageOp stage, const Outcome<double> &out,
                         std::deque<Tensor<double>> &derived) {
  stage.getSpec().walk([&](CrossEntropyGradOp op) {
    const Tensor<double> *l = out.spec.lookup(-1, op.getLogits());
    const Tensor<double> *lab = out.spec.lookup(-1, op.getLabels());
    const Tensor<double> *g = out.spec.lookup(-1, op.getGrad());
    if (!l || !lab || !g || l->shape.size() != 2 || g->data.empty())
      return;
    int64_t n = l->shape[0], v = l->shape[1];
    if (n * v > (int64_t(1) << 20))
      return;
    auto make = [&](int64_t cols) {
      Tensor<double> t;
      t.shape = {n, cols};
      t.data.assign(n * cols, 0.0);
      return &derived.emplace_back(std::move(t));
    };
    Tensor<double> *m = make(1), *bm = make(v), *z = make(v), *e = make(v),
                   *sum = make(1), *bs = make(v), *p = make(v),
                   *gn = make(1), *bg = make(v), *pg = make(v), *og = make(v);
    double scale = g->data[0] / (double)n;
    for (int64_t i = 0; i < n; ++i) {
      double mx = -INFINITY;
      for (int64_t j = 0; j < v; ++j)
        mx = std::max(mx, l->data[i * v + j]);
      m->data[i] = mx;
      double total = 0;
      for (int64_t j = 0; j < v; ++j) {
        int64_t k = i * v + j;
        bm->data[k] = mx;
        z->data[k] = l->data[k] - mx;
        e->data[k] = std::exp(z->data[k]);
        total += e->data[k];
      }
      sum->data[i] = total;
      gn->data[i] = scale;
      for (int64_t j = 0; j < v; ++j) {
        int64_t k = i * v + j;
        bs->data[k] = total;
        p->data[k] = e->data[k] / total;
        bg->data[k] = scale;
        pg->data[k] = p->data[k] * scale;
        og->data[k] = (int64_t)lab->data[i] == j ? scale : 0.0;
      }
    }
    for (int64_t w = 1; w < v && v / w <= 64; ++w) {
      if (v % w)
        continue;
      Tensor<double> *blocks = make(v / w);
      for (int64_t i = 0; i < n; ++i)
        for (int64_t b = 0; b < v / w; ++b) {
          double mx = -INFINITY;
          for (int64_t j = b * w; j < (b + 1) * w; ++j)
            mx = std::max(mx, l->data[i * v + j]);
          blocks->data[i * (v / w) + b] = mx;
        }
    }
  });
  // A softmax over the last dimension X [..., n] (attention's), as an
  // online softmax computes it over blocks of w columns (ring attention's
  // key blocks): per block b its maximum M_b, exp(X - M_b) over the block,
  // their sum S_b, the rescale exp(M_b - m) to the row maximum m and the
  // block's sum of exp(X - m); and m, exp(X - m) and its sum. Per-row values in both shapes, [..., 1] and
  // [...].
  stage.getSpec().walk([&](SoftmaxOp op) {
    const Tensor<double> *x = out.spec.lookup(-1, op.getInput());
    if (!x || x->shape.empty() || op.getDim() + 1 != x->shape.size())
      return;
    int64_t n = x->shape.back(), rows = (int64_t)x->data.size() / n;
    if (n < 2 || (int64_t)x->data.size() > (int64_t(1) << 18))
      return;
    auto perRow = [&](llvm::function_ref<double(int64_t)> f) {
      Tensor<double> kept;
      kept.shape = x->shape;
      kept.shape.back() = 1;
      for (int64_t r = 0; r < rows; ++r)
        kept.data.push_back(f(r));
      Tensor<double> dropped = kept;
      dropped.shape.pop_back();
      derived.push_back(std::move(kept));
      derived.push_back(std::move(dropped));
    };
    auto at = [&](int64_t r, int64_t j) { return x->data[r * n + j]; };
    auto blockMax = [&](int64_t r, int64_t lo, int64_t hi) {
      double mx = -INFINITY;
      for (int64_t j = lo; j < hi; ++j)
        mx = std::max(mx, at(r, j));
      return mx;
    };
    for (int64_t w = 1; w <= n && n / w <= 16; ++w) {
      if (n % w)
        continue;
      Tensor<double> e;
      e.shape = x->shape;
      e.data.resize(x->data.size());
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t b = 0; b < n / w; ++b) {
          double mx = blockMax(r, b * w, (b + 1) * w);
          for (int64_t j = b * w; j < (b + 1) * w; ++j)
            e.data[r * n + j] = std::exp(at(r, j) - mx);
        }
      for (int64_t b = 0; b < n / w; ++b) {
        int64_t lo = b * w, hi = lo + w;
        perRow([&](int64_t r) { return blockMax(r, lo, hi); });
        perRow([&](int64_t r) {
          double sum = 0;
          for (int64_t j = lo; j < hi; ++j)
            sum += e.data[r * n + j];
          return sum;
        });
        if (w == n)
          continue;
        perRow([&](int64_t r) {
          return std::exp(blockMax(r, lo, hi) - blockMax(r, 0, n));
        });
        // The block's share of the whole row's sum (its terms shifted by
        // the row maximum: a block after the running maximum has caught
        // up with it).
        perRow([&](int64_t r) {
          double m = blockMax(r, 0, n), sum = 0;
          for (int64_t j = lo; j < hi; ++j)
            sum += std::exp(at(r, j) - m);
          return sum;
        });
      }
      derived.push_back(std::move(e));
    }
  });
}

/// An op of `op`'s kind in the spec reads, where `op` reads a spec value
/// S, an op's result computed from S: the plan lacks that op between them
/// (an op made an identity, such as an exponent or a factor of one, is
/// folded away before verification, so it is not there to blame). Empty
/// when no spec op of the kind reads such a value. When the plan's op of
/// that kind was folded into `op`, `folded` names it.
std::string skippedSpecOp(StageOp stage, Operation *op,
                                 llvm::function_ref<Value(Value)> specOf,
                                 std::optional<FoldedOp> *folded,
                                 Operation **copied) {
  std::string note;
  stage.getSpec().walk([&](Operation *so) {
    if (!note.empty() || so->getName() != op->getName() ||
        so->getNumOperands() != op->getNumOperands())
      return;
    for (auto [pv, sv] : llvm::zip(op->getOperands(), so->getOperands())) {
      Value s = specOf(pv);
      Operation *between = sv.getDefiningOp();
      if (!s || s == sv || !between || !llvm::is_contained(
                                            between->getOperands(), s))
        continue;
      auto at = [](Operation *o) {
        std::string loc = fileLineOf(o->getLoc());
        return loc.empty() ? loc : " at " + loc;
      };
      note = "; the spec's '" + so->getName().getStringRef().str() + "'" +
             at(so) + " reads the result of '" +
             between->getName().getStringRef().str() + "'" + at(between) +
             " where the plan's reads that op's operand: ";
      // The plan's op of that kind folded into this one (decision 103).
      for (auto [kind, loc] : foldedInto(op))
        if (folded && kind == between->getName().getStringRef()) {
          *folded = FoldedOp{kind.str(), loc, op};
          note += "the plan has the op as an identity, folded away before "
                  "verification (an exponent or a factor of one)";
          return;
        }
      // A copy where the spec computes the op (the op replaced by its
      // operand), the value then only sliced or reshaped: the copy stands
      // where the op is missing.
      // A copy folded away before verification is recorded in its reader.
      auto foldedCopy = [&](Operation *d) {
        for (auto [kind, loc] : foldedInto(d))
          if (kind == CopyOp::getOperationName() && folded) {
            *folded = FoldedOp{kind.str(), loc, d};
            *copied = d;
            note += "the plan copies the op's operand where the spec "
                    "computes it";
            return true;
          }
        return false;
      };
      if (copied && foldedCopy(op))
        return;
      for (Value x = pv; copied && x.getDefiningOp();) {
        Operation *d = x.getDefiningOp();
        if (isa<CopyOp>(d)) {
          *copied = d;
          note += "the plan copies the op's operand where the spec computes "
                  "it";
          return;
        }
        if (foldedCopy(d))
          return;
        if (!isa<SliceOp, ReshapeOp, WaitOp>(d))
          break;
        x = d->getOperand(0);
      }
      note += "the plan lacks the op, or has it as an identity folded away "
              "before verification (an exponent or a factor of one)";
      return;
    }
  });
  return note;
}

/// When no plan op diverges: the spec value the failing plan tensor equals
/// (a block of), if it is not the spec tensor the lineage names; the plan
/// then lacks the spec's ops after it (a forgotten term, a missing op).
std::string missingSpecOps(StageOp stage, const Outcome<double> &out,
                           const Tensor<double> &plan, Value expected) {
  for (auto &[key, t] : out.spec.values) {
    Value v = Value::getFromOpaquePointer(key.second);
    if (v == expected || !v.getDefiningOp() || isa<InputOp>(v.getDefiningOp()))
      continue;
    if (!isBlockOf(plan, t))
      continue;
    Operation *def = v.getDefiningOp();
    // Another result of the op that computes the expected one: the
    // plan's uses of the op's results are swapped.
    auto vr = dyn_cast<OpResult>(v);
    auto er = dyn_cast<OpResult>(expected);
    if (vr && er && vr.getOwner() == er.getOwner())
      return "the plan's value is result " +
             std::to_string(vr.getResultNumber()) + " of '" +
             def->getName().getStringRef().str() +
             "', where the spec's is its result " +
             std::to_string(er.getResultNumber()) +
             ": the op's results are used in each other's place";
    std::string s = "the plan's value equals the spec's intermediate "
                    "computed by '" +
                    def->getName().getStringRef().str() + "'";
    if (std::string loc = fileLineOf(def->getLoc()); !loc.empty())
      s += " at " + loc;
    for (Operation *user : v.getUsers()) {
      if (isa<OutputOp>(user))
        continue;
      s += ", which the spec goes on to use in '" +
           user->getName().getStringRef().str() + "'";
      if (std::string loc = fileLineOf(user->getLoc()); !loc.empty())
        s += " at " + loc;
      break;
    }
    return s + ": the plan lacks an op of the spec";
  }
  return "";
}


//===----------------------------------------------------------------------===//
// SpecBlocks
//===----------------------------------------------------------------------===//

// A flat buffer (a distributed optimizer's, ZeRO's): a 1-D value of
// spec values flattened one after another, zeros between them (padding),
// cut only at its two ends (a shard of the buffer). The first spec value
// of its first run, and where in it the run starts; no offsets.
bool SpecBlocks::flatRun(const Tensor<double> &t, Box &b) {
  size_t n = t.data.size();
  if (t.shape.size() != 1 || n < 2)
    return false;
  if (elementsByValue.empty())
    for (auto [i, s] : llvm::enumerate(specValues))
      if (s->data.size() >= 2 && s->data.size() <= (1u << 16))
        for (size_t q = 0; q < s->data.size(); ++q)
          elementsByValue.emplace(s->data[q], std::make_pair((int)i, q));
  bool any = false;
  for (size_t p = 0; p < n;) {
    if (t.data[p] == 0) {
      ++p;
      continue;
    }
    double x = t.data[p], tol = 1e-9 * (1 + 2 * std::fabs(x));
    size_t best = 0;
    std::pair<int, size_t> from;
    for (auto it = elementsByValue.lower_bound(x - tol);
         it != elementsByValue.end() && it->first <= x + tol; ++it) {
      auto [i, q] = it->second;
      const Tensor<double> &s = *specValues[i];
      if (q != 0 && p != 0)
        continue;
      size_t len = 0;
      while (p + len < n && q + len < s.data.size() &&
             closeReal(t.data[p + len], s.data[q + len]))
        ++len;
      if ((q + len == s.data.size() || p + len == n) && len > best) {
        best = len;
        from = it->second;
      }
    }
    if (best == 0)
      return false;
    if (!any) {
      b.spec = from.first;
      b.flatShift = (int64_t)from.second;
    }
    any = true;
    p += best;
  }
  return any;
}

SpecBlocks::Box SpecBlocks::exact(const Tensor<double> &t, bool sideBySide) {
  Box b;
  for (auto [i, s] : llvm::enumerate(specValues))
    if (auto o = blockOffsetsOf(t, *s)) {
      b.spec = (int)i;
      b.offsets = *o;
      return b;
    }
  // The same block with its dimensions of one dropped (a row maximum
  // kept as [n, 1] or reshaped to [n]); no offsets then.
  Tensor<double> st = squeezed(t);
  for (auto [i, s] : llvm::enumerate(specValues))
    if (s->shape.size() != t.shape.size() &&
        blockOffsetsOf(st, squeezed(*s))) {
      b.spec = (int)i;
      return b;
    }
  if (flatRun(t, b) || !sideBySide)
    return b;
  // Blocks of one spec value laid side by side along one dimension, in
  // their order there and at the same place along every other (an
  // all-to-all's tokens gathered from the ranks of its group: rows of
  // the spec's that are not contiguous there); no offsets then.
  for (size_t d = 0; d < t.shape.size(); ++d)
    for (int64_t k = 2; k <= 16 && k <= t.shape[d]; ++k) {
      if (t.shape[d] % k)
        continue;
      SmallVector<Tensor<double>> parts(k);
      for (Tensor<double> &part : parts) {
        part.shape = t.shape;
        part.shape[d] /= k;
      }
      int64_t inner = 1;
      for (size_t i = d + 1; i < t.shape.size(); ++i)
        inner *= t.shape[i];
      int64_t run = inner * (t.shape[d] / k);
      for (size_t at = 0; at < t.data.size(); at += run * k)
        for (int64_t j = 0; j < k; ++j)
          parts[j].data.insert(parts[j].data.end(),
                               t.data.begin() + at + j * run,
                               t.data.begin() + at + (j + 1) * run);
      for (auto [i, s] : llvm::enumerate(specValues)) {
        std::optional<SmallVector<int64_t>> prev;
        bool gathered = true;
        for (const Tensor<double> &part : parts) {
          std::optional<SmallVector<int64_t>> at = blockOffsetsOf(part, *s);
          gathered = at && (!prev || ((*at)[d] > (*prev)[d] &&
                                      llvm::all_of(llvm::seq<size_t>(
                                                       0, at->size()),
                                                   [&](size_t q) {
                                                     return q == d ||
                                                            (*at)[q] ==
                                                                (*prev)[q];
                                                   })));
          if (!gathered)
            break;
          prev = at;
        }
        if (gathered) {
          b.spec = (int)i;
          b.sideBySide = true;
          return b;
        }
      }
    }
  return b;
}

SpecBlocks::Box SpecBlocks::of(const Tensor<double> &t,
                               ArrayRef<double> factors, bool sideBySide) {
  Box b = exact(t, sideBySide);
  for (double f : factors) {
    if (b.spec >= 0)
      break;
    Tensor<double> u = t;
    for (double &x : u.data)
      x /= f;
    b = exact(u, sideBySide);
    b.factor = f;
  }
  return b;
}

} // namespace mlir::tv::stagecheck

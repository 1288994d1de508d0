//===- Semantics.cpp - the meaning of every tv op over a domain -----------===//
#include "TrainVerify/Verify/Semantics.h"
#include "TrainVerify/Dialect/ShapeUtils.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::tv;

namespace {

using Shape = SmallVector<int64_t>;

Shape shapeOf(Value v) {
  return Shape(cast<RankedTensorType>(v.getType()).getShape());
}

void unravel(int64_t flat, ArrayRef<int64_t> shape, SmallVectorImpl<int64_t> &idx) {
  idx.resize(shape.size());
  for (int64_t i = (int64_t)shape.size() - 1; i >= 0; --i) {
    idx[i] = shape[i] ? flat % shape[i] : 0;
    flat = shape[i] ? flat / shape[i] : 0;
  }
}

int64_t ravel(ArrayRef<int64_t> idx, ArrayRef<int64_t> shape) {
  int64_t flat = 0;
  for (size_t i = 0; i < shape.size(); ++i)
    flat = flat * shape[i] + idx[i];
  return flat;
}

/// Flat index into `operand` (numpy-broadcast to `result`) for result index.
int64_t broadcastIndex(ArrayRef<int64_t> idx, ArrayRef<int64_t> result,
                       ArrayRef<int64_t> operand) {
  int64_t flat = 0;
  size_t off = result.size() - operand.size();
  for (size_t i = 0; i < operand.size(); ++i)
    flat = flat * operand[i] + (operand[i] == 1 ? 0 : idx[off + i]);
  return flat;
}

template <typename D> struct Eval {
  using V = typename D::V;
  using T = Tensor<V>;
  D &d;
  const RankEnv &env;

  T make(Shape shape) {
    T t;
    t.shape = shape;
    t.data.assign(numElements(shape), d.zero());
    return t;
  }

  template <typename F> T map(const T &x, F f) {
    T r = make(x.shape);
    for (size_t i = 0; i < x.data.size(); ++i)
      r.data[i] = f(x.data[i]);
    return r;
  }
  template <typename F> T zip(const T &x, const T &y, F f) {
    T r = make(x.shape);
    for (size_t i = 0; i < x.data.size(); ++i)
      r.data[i] = f(x.data[i], y.data[i]);
    return r;
  }

  template <typename F> T binary(const T &a, const T &b, Shape out, F f) {
    T r = make(out);
    SmallVector<int64_t> idx;
    for (int64_t i = 0, e = r.data.size(); i < e; ++i) {
      unravel(i, out, idx);
      r.data[i] = f(a.data[broadcastIndex(idx, out, a.shape)],
                    b.data[broadcastIndex(idx, out, b.shape)]);
    }
    return r;
  }

  /// Calls f(outFlat, inFlat) for each input element, mapping reduced dims.
  template <typename F>
  void forReduce(const T &x, ArrayRef<int64_t> dims, bool keepdim, F f) {
    Shape out = reducedShape(x.shape, dims, true);
    SmallVector<int64_t> idx;
    for (int64_t i = 0, e = x.data.size(); i < e; ++i) {
      unravel(i, x.shape, idx);
      for (int64_t dd : dims)
        idx[dd] = 0;
      f(ravel(idx, out), i);
    }
  }

  /// Lines of a tensor along `dim`: calls f(vector of flat indices).
  template <typename F> void forLines(ArrayRef<int64_t> shape, int64_t dim, F f) {
    int64_t n = shape[dim];
    int64_t stride = stridesOf(shape)[dim];
    int64_t total = numElements(shape);
    SmallVector<int64_t> line(n);
    for (int64_t base = 0; base < total; ++base) {
      if ((base / stride) % n != 0)
        continue;
      for (int64_t j = 0; j < n; ++j)
        line[j] = base + j * stride;
      f(ArrayRef<int64_t>(line));
    }
  }

  V sum(ArrayRef<V> xs) {
    V s = d.zero();
    for (V x : xs)
      s = d.add(s, x);
    return s;
  }

  int64_t coord(StringRef axis) {
    int64_t idx = env.mesh ? env.mesh.getAxisIndex(axis) : -1;
    return idx < 0 ? -1 : env.mesh.getCoords(env.rank)[idx];
  }

  /// Router of token i: its scores over the experts, the selected experts
  /// and their scores.
  struct Route {
    SmallVector<V> scores, index, picked;
  };
  Route route(const T &x, const T &w, int64_t i, ScoreFunc f, int64_t k,
              int64_t groups, int64_t topkGroups) {
    int64_t h = x.shape[1], e = w.shape[0];
    Route r;
    for (int64_t c = 0; c < e; ++c) {
      V z = d.zero();
      for (int64_t q = 0; q < h; ++q)
        z = d.add(z, d.mul(x.data[i * h + q], w.data[c * h + q]));
      r.scores.push_back(f == ScoreFunc::sigmoid ? d.sigmoid(z) : d.exp(z));
    }
    if (f == ScoreFunc::softmax) {
      V total = sum(r.scores);
      for (V &s : r.scores)
        s = d.div(s, total);
    }
    for (int64_t j = 0; j < k; ++j) {
      r.index.push_back(d.moeRoute({k, j, groups, topkGroups}, r.scores));
      r.picked.push_back(d.select(r.index.back(), 0, r.scores));
    }
    return r;
  }
  /// 1 if the expert index `idx` is `expert`, else 0.
  V expertIs(V idx, int64_t expert) { return d.select(idx, expert, {d.one()}); }
  /// One SwiGLU expert l on token i, up to its down projection.
  struct Expert {
    SmallVector<V> a, b, sig, u;
  };
  Expert expert(const T &x, const T &w1, const T &w3, int64_t i, int64_t l) {
    int64_t h = x.shape[1], f = w1.shape[1];
    Expert ex;
    for (int64_t p = 0; p < f; ++p) {
      V a = d.zero(), b = d.zero();
      for (int64_t q = 0; q < h; ++q) {
        a = d.add(a, d.mul(x.data[i * h + q], w1.data[(l * f + p) * h + q]));
        b = d.add(b, d.mul(x.data[i * h + q], w3.data[(l * f + p) * h + q]));
      }
      V s = d.sigmoid(a);
      ex.a.push_back(a);
      ex.b.push_back(b);
      ex.sig.push_back(s);
      ex.u.push_back(d.mul(d.mul(a, s), b));
    }
    return ex;
  }

  std::optional<std::string> run(Operation *op, ArrayRef<const T *> in,
                                 SmallVectorImpl<T> &out);
};

template <typename D>
std::optional<std::string> Eval<D>::run(Operation *op, ArrayRef<const T *> in,
                                        SmallVectorImpl<T> &out) {
  auto result = [&](unsigned i = 0) { return shapeOf(op->getResult(i)); };
  auto scalarOf = [&](Operation *o) {
    return cast<FloatAttr>(o->getAttr("scalar")).getValueAsDouble();
  };
  std::optional<std::string> err;
  TypeSwitch<Operation *>(op)
      // Elementwise binary.
      .Case([&](AddOp) {
        out.push_back(binary(*in[0], *in[1], result(),
                             [&](V a, V b) { return d.add(a, b); }));
      })
      .Case([&](SubOp) {
        out.push_back(binary(*in[0], *in[1], result(),
                             [&](V a, V b) { return d.sub(a, b); }));
      })
      .Case([&](MulOp) {
        out.push_back(binary(*in[0], *in[1], result(),
                             [&](V a, V b) { return d.mul(a, b); }));
      })
      .Case([&](DivOp) {
        out.push_back(binary(*in[0], *in[1], result(),
                             [&](V a, V b) { return d.div(a, b); }));
      })
      // Scalar.
      .Case([&](AddScalarOp o) {
        double c = scalarOf(o);
        out.push_back(map(*in[0], [&](V x) { return d.add(x, d.cst(c)); }));
      })
      .Case([&](SubScalarOp o) {
        double c = scalarOf(o);
        out.push_back(map(*in[0], [&](V x) { return d.sub(x, d.cst(c)); }));
      })
      .Case([&](RSubScalarOp o) {
        double c = scalarOf(o);
        out.push_back(map(*in[0], [&](V x) { return d.sub(d.cst(c), x); }));
      })
      .Case([&](DivScalarOp o) {
        double c = scalarOf(o);
        out.push_back(map(*in[0], [&](V x) { return d.div(x, d.cst(c)); }));
      })
      .Case([&](ScaleOp o) {
        double c = scalarOf(o);
        out.push_back(map(*in[0], [&](V x) { return d.scale(x, c); }));
      })
      .Case([&](PowOp o) {
        double c = scalarOf(o);
        out.push_back(map(*in[0], [&](V x) { return d.powc(x, c); }));
      })
      // Unary.
      .Case([&](NegOp) { out.push_back(map(*in[0], [&](V x) { return d.neg(x); })); })
      .Case([&](ExpOp) { out.push_back(map(*in[0], [&](V x) { return d.exp(x); })); })
      .Case([&](LogOp) { out.push_back(map(*in[0], [&](V x) { return d.log(x); })); })
      .Case([&](SqrtOp) { out.push_back(map(*in[0], [&](V x) { return d.sqrt(x); })); })
      .Case([&](RsqrtOp) { out.push_back(map(*in[0], [&](V x) { return d.rsqrt(x); })); })
      .Case([&](SigmoidOp) {
        out.push_back(map(*in[0], [&](V x) { return d.sigmoid(x); }));
      })
      .Case([&](SiluOp) {
        out.push_back(map(*in[0], [&](V x) { return d.mul(x, d.sigmoid(x)); }));
      })
      .Case([&](GeluOp) { out.push_back(map(*in[0], [&](V x) { return d.gelu(x); })); })
      .Case([&](ReluOp) { out.push_back(map(*in[0], [&](V x) { return d.relu(x); })); })
      .Case([&](TanhOp) { out.push_back(map(*in[0], [&](V x) { return d.tanh(x); })); })
      .Case([&](CopyOp) { out.push_back(*in[0]); })
      // Unary backward.
      .Case([&](ExpGradOp) {
        out.push_back(zip(*in[0], *in[1],
                          [&](V x, V g) { return d.mul(g, d.exp(x)); }));
      })
      .Case([&](LogGradOp) {
        out.push_back(zip(*in[0], *in[1], [&](V x, V g) { return d.div(g, x); }));
      })
      .Case([&](SqrtGradOp) {
        out.push_back(zip(*in[0], *in[1], [&](V x, V g) {
          return d.scale(d.mul(g, d.rsqrt(x)), 0.5);
        }));
      })
      .Case([&](RsqrtGradOp) {
        out.push_back(zip(*in[0], *in[1], [&](V x, V g) {
          V r = d.rsqrt(x);
          return d.scale(d.mul(g, d.mul(r, d.mul(r, r))), -0.5);
        }));
      })
      .Case([&](SigmoidGradOp) {
        out.push_back(zip(*in[0], *in[1], [&](V x, V g) {
          V s = d.sigmoid(x);
          return d.mul(g, d.mul(s, d.sub(d.one(), s)));
        }));
      })
      .Case([&](MulGradOp) {
        out.push_back(zip(*in[2], *in[1], [&](V g, V b) { return d.mul(g, b); }));
        out.push_back(zip(*in[2], *in[0], [&](V g, V a) { return d.mul(g, a); }));
      })
      .Case([&](SiluGradOp) {
        out.push_back(zip(*in[0], *in[1], [&](V x, V g) {
          V s = d.sigmoid(x);
          return d.mul(g, d.mul(s, d.add(d.one(), d.mul(x, d.sub(d.one(), s)))));
        }));
      })
      .Case([&](GeluGradOp) {
        out.push_back(zip(*in[0], *in[1],
                          [&](V x, V g) { return d.mul(g, d.geluGrad(x)); }));
      })
      .Case([&](ReluGradOp) {
        out.push_back(zip(*in[0], *in[1],
                          [&](V x, V g) { return d.mul(g, d.step(x)); }));
      })
      .Case([&](TanhGradOp) {
        out.push_back(zip(*in[0], *in[1], [&](V x, V g) {
          V t = d.tanh(x);
          return d.mul(g, d.sub(d.one(), d.mul(t, t)));
        }));
      })
      .Case([&](PowGradOp o) {
        double c = o.getExponent().convertToDouble();
        out.push_back(zip(*in[0], *in[1], [&](V x, V g) {
          return d.mul(g, d.scale(d.powc(x, c - 1), c));
        }));
      })
      // Contractions.
      .Case([&](MatmulOp o) {
        const T &a = *in[0], &b = *in[1];
        Shape rs = result();
        int64_t r = a.shape.size();
        int64_t m = rs[r - 2], n = rs[r - 1];
        int64_t k = o.getTransposeLhs() ? a.shape[r - 2] : a.shape[r - 1];
        int64_t batch = numElements(ArrayRef<int64_t>(rs).drop_back(2));
        bool bBatched = b.shape.size() == a.shape.size();
        T res = make(rs);
        for (int64_t bi = 0; bi < batch; ++bi) {
          int64_t aBase = bi * m * k, bBase = bBatched ? bi * k * n : 0;
          for (int64_t i = 0; i < m; ++i)
            for (int64_t j = 0; j < n; ++j) {
              V s = d.zero();
              for (int64_t kk = 0; kk < k; ++kk) {
                int64_t ai = o.getTransposeLhs() ? kk * m + i : i * k + kk;
                int64_t bj = o.getTransposeRhs() ? j * k + kk : kk * n + j;
                s = d.add(s, d.mul(a.data[aBase + ai], b.data[bBase + bj]));
              }
              res.data[(bi * m + i) * n + j] = s;
            }
        }
        out.push_back(std::move(res));
      })
      .Case([&](LinearOp o) {
        const T &x = *in[0], &w = *in[1];
        int64_t k = w.shape[1], n = w.shape[0];
        int64_t rows = x.data.size() / k;
        T res = make(result());
        for (int64_t i = 0; i < rows; ++i)
          for (int64_t j = 0; j < n; ++j) {
            V s = in.size() > 2 ? in[2]->data[j] : d.zero();
            for (int64_t kk = 0; kk < k; ++kk)
              s = d.add(s, d.mul(x.data[i * k + kk], w.data[j * k + kk]));
            res.data[i * n + j] = s;
          }
        out.push_back(std::move(res));
      })
      .Case([&](LinearGradOp) {
        const T &x = *in[0], &w = *in[1], &dy = *in[2];
        int64_t k = w.shape[1], n = w.shape[0];
        int64_t rows = x.data.size() / k;
        T dx = make(x.shape), dw = make(w.shape);
        for (int64_t i = 0; i < rows; ++i)
          for (int64_t kk = 0; kk < k; ++kk) {
            V s = d.zero();
            for (int64_t j = 0; j < n; ++j)
              s = d.add(s, d.mul(dy.data[i * n + j], w.data[j * k + kk]));
            dx.data[i * k + kk] = s;
          }
        for (int64_t j = 0; j < n; ++j)
          for (int64_t kk = 0; kk < k; ++kk) {
            V s = d.zero();
            for (int64_t i = 0; i < rows; ++i)
              s = d.add(s, d.mul(dy.data[i * n + j], x.data[i * k + kk]));
            dw.data[j * k + kk] = s;
          }
        out.push_back(std::move(dx));
        out.push_back(std::move(dw));
      })
      // Reductions.
      .Case([&](SumOp o) {
        T res = make(result());
        forReduce(*in[0], o.getDims(), o.getKeepdim(), [&](int64_t r, int64_t i) {
          res.data[r] = d.add(res.data[r], in[0]->data[i]);
        });
        out.push_back(std::move(res));
      })
      .Case([&](MeanOp o) {
        T res = make(result());
        forReduce(*in[0], o.getDims(), o.getKeepdim(), [&](int64_t r, int64_t i) {
          res.data[r] = d.add(res.data[r], in[0]->data[i]);
        });
        int64_t n = numElements(in[0]->shape) / std::max<int64_t>(1, res.data.size());
        for (V &v : res.data)
          v = d.divInt(v, n);
        out.push_back(std::move(res));
      })
      .Case([&](MaxOp o) {
        Shape rs = result();
        std::vector<SmallVector<V>> groups(numElements(rs));
        forReduce(*in[0], o.getDims(), o.getKeepdim(), [&](int64_t r, int64_t i) {
          groups[r].push_back(in[0]->data[i]);
        });
        T res = make(rs);
        for (size_t r = 0; r < groups.size(); ++r)
          res.data[r] = d.max(groups[r]);
        out.push_back(std::move(res));
      })
      .Case([&](MaxGradOp o) {
        const T &x = *in[0], &g = *in[1];
        std::vector<SmallVector<int64_t>> groups(g.data.size());
        forReduce(x, o.getDims(), o.getKeepdim(),
                  [&](int64_t r, int64_t i) { groups[r].push_back(i); });
        T res = make(x.shape);
        for (size_t r = 0; r < groups.size(); ++r) {
          SmallVector<V> row;
          for (int64_t i : groups[r])
            row.push_back(x.data[i]);
          for (auto [p, i] : llvm::enumerate(groups[r]))
            res.data[i] = d.mul(g.data[r], d.maxShare(p, row));
        }
        out.push_back(std::move(res));
      })
      .Case([&](MeanGradOp o) {
        Shape rs = result();
        T res = make(rs);
        const T &g = *in[0];
        int64_t n = numElements(rs) / std::max<int64_t>(1, g.data.size());
        forReduce(res, o.getDims(), o.getKeepdim(), [&](int64_t r, int64_t i) {
          res.data[i] = d.divInt(g.data[r], n);
        });
        out.push_back(std::move(res));
      })
      // Neural-network ops.
      .Case([&](SoftmaxOp o) {
        const T &x = *in[0];
        T res = make(x.shape);
        forLines(x.shape, o.getDim(), [&](ArrayRef<int64_t> line) {
          SmallVector<V> e;
          for (int64_t i : line)
            e.push_back(d.exp(x.data[i]));
          V s = sum(e);
          for (auto [j, i] : llvm::enumerate(line))
            res.data[i] = d.div(e[j], s);
        });
        out.push_back(std::move(res));
      })
      .Case([&](SoftmaxGradOp o) {
        const T &y = *in[0], &g = *in[1];
        T res = make(y.shape);
        forLines(y.shape, o.getDim(), [&](ArrayRef<int64_t> line) {
          V dot = d.zero();
          for (int64_t i : line)
            dot = d.add(dot, d.mul(g.data[i], y.data[i]));
          for (int64_t i : line)
            res.data[i] = d.mul(y.data[i], d.sub(g.data[i], dot));
        });
        out.push_back(std::move(res));
      })
      .Case([&](LayerNormOp o) {
        const T &x = *in[0], &gm = *in[1], &bt = *in[2];
        double eps = o.getEps().convertToDouble();
        T res = make(x.shape);
        int64_t n = x.shape.back();
        forLines(x.shape, x.shape.size() - 1, [&](ArrayRef<int64_t> line) {
          V mu = d.zero();
          for (int64_t i : line)
            mu = d.add(mu, x.data[i]);
          mu = d.divInt(mu, n);
          V var = d.zero();
          for (int64_t i : line) {
            V c = d.sub(x.data[i], mu);
            var = d.add(var, d.mul(c, c));
          }
          V r = d.rsqrt(d.add(d.divInt(var, n), d.cst(eps)));
          for (auto [j, i] : llvm::enumerate(line))
            res.data[i] = d.add(d.mul(d.mul(d.sub(x.data[i], mu), r), gm.data[j]),
                                bt.data[j]);
        });
        out.push_back(std::move(res));
      })
      .Case([&](LayerNormGradOp o) {
        const T &x = *in[0], &gm = *in[1], &dy = *in[2];
        double eps = o.getEps().convertToDouble();
        int64_t n = x.shape.back();
        T dx = make(x.shape), dg = make(gm.shape), db = make(gm.shape);
        forLines(x.shape, x.shape.size() - 1, [&](ArrayRef<int64_t> line) {
          V mu = d.zero();
          for (int64_t i : line)
            mu = d.add(mu, x.data[i]);
          mu = d.divInt(mu, n);
          V var = d.zero();
          for (int64_t i : line) {
            V c = d.sub(x.data[i], mu);
            var = d.add(var, d.mul(c, c));
          }
          V r = d.rsqrt(d.add(d.divInt(var, n), d.cst(eps)));
          SmallVector<V> xhat, dxhat;
          V m1 = d.zero(), m2 = d.zero();
          for (auto [j, i] : llvm::enumerate(line)) {
            xhat.push_back(d.mul(d.sub(x.data[i], mu), r));
            dxhat.push_back(d.mul(dy.data[i], gm.data[j]));
            m1 = d.add(m1, dxhat.back());
            m2 = d.add(m2, d.mul(dxhat.back(), xhat.back()));
            dg.data[j] = d.add(dg.data[j], d.mul(dy.data[i], xhat.back()));
            db.data[j] = d.add(db.data[j], dy.data[i]);
          }
          m1 = d.divInt(m1, n);
          m2 = d.divInt(m2, n);
          for (auto [j, i] : llvm::enumerate(line))
            dx.data[i] =
                d.mul(r, d.sub(d.sub(dxhat[j], m1), d.mul(xhat[j], m2)));
        });
        out.push_back(std::move(dx));
        out.push_back(std::move(dg));
        out.push_back(std::move(db));
      })
      .Case([&](RMSNormOp o) {
        const T &x = *in[0], &w = *in[1];
        double eps = o.getEps().convertToDouble();
        int64_t n = x.shape.back();
        T res = make(x.shape);
        forLines(x.shape, x.shape.size() - 1, [&](ArrayRef<int64_t> line) {
          V ms = d.zero();
          for (int64_t i : line)
            ms = d.add(ms, d.mul(x.data[i], x.data[i]));
          V r = d.rsqrt(d.add(d.divInt(ms, n), d.cst(eps)));
          for (auto [j, i] : llvm::enumerate(line))
            res.data[i] = d.mul(d.mul(x.data[i], r), w.data[j]);
        });
        out.push_back(std::move(res));
      })
      .Case([&](RMSNormGradOp o) {
        const T &x = *in[0], &w = *in[1], &dy = *in[2];
        double eps = o.getEps().convertToDouble();
        int64_t n = x.shape.back();
        T dx = make(x.shape), dw = make(w.shape);
        forLines(x.shape, x.shape.size() - 1, [&](ArrayRef<int64_t> line) {
          V ms = d.zero();
          for (int64_t i : line)
            ms = d.add(ms, d.mul(x.data[i], x.data[i]));
          V r = d.rsqrt(d.add(d.divInt(ms, n), d.cst(eps)));
          V dot = d.zero();
          for (auto [j, i] : llvm::enumerate(line)) {
            dot = d.add(dot, d.mul(d.mul(dy.data[i], w.data[j]), x.data[i]));
            dw.data[j] = d.add(dw.data[j], d.mul(d.mul(dy.data[i], x.data[i]), r));
          }
          V r3 = d.divInt(d.mul(r, d.mul(r, r)), n);
          for (auto [j, i] : llvm::enumerate(line))
            dx.data[i] = d.sub(d.mul(r, d.mul(dy.data[i], w.data[j])),
                               d.mul(x.data[i], d.mul(r3, dot)));
        });
        out.push_back(std::move(dx));
        out.push_back(std::move(dw));
      })
      .Case([&](RotaryOp) {
        const T &x = *in[0], &c = *in[1], &s = *in[2];
        int64_t dd = x.shape.back(), sq = x.shape[x.shape.size() - 2];
        T res = make(x.shape);
        for (int64_t base = 0; base < (int64_t)x.data.size(); base += dd) {
          int64_t pos = (base / dd) % sq;
          for (int64_t i = 0; i < dd / 2; ++i) {
            V x0 = x.data[base + 2 * i], x1 = x.data[base + 2 * i + 1];
            V cv = c.data[pos * dd / 2 + i], sv = s.data[pos * dd / 2 + i];
            res.data[base + 2 * i] = d.sub(d.mul(x0, cv), d.mul(x1, sv));
            res.data[base + 2 * i + 1] = d.add(d.mul(x0, sv), d.mul(x1, cv));
          }
        }
        out.push_back(std::move(res));
      })
      .Case([&](RotaryGradOp) {
        const T &g = *in[0], &c = *in[1], &s = *in[2];
        int64_t dd = g.shape.back(), sq = g.shape[g.shape.size() - 2];
        T res = make(g.shape);
        for (int64_t base = 0; base < (int64_t)g.data.size(); base += dd) {
          int64_t pos = (base / dd) % sq;
          for (int64_t i = 0; i < dd / 2; ++i) {
            V g0 = g.data[base + 2 * i], g1 = g.data[base + 2 * i + 1];
            V cv = c.data[pos * dd / 2 + i], sv = s.data[pos * dd / 2 + i];
            res.data[base + 2 * i] = d.add(d.mul(g0, cv), d.mul(g1, sv));
            res.data[base + 2 * i + 1] = d.sub(d.mul(g1, cv), d.mul(g0, sv));
          }
        }
        out.push_back(std::move(res));
      })
      .Case([&](EmbeddingOp o) {
        const T &ids = *in[0], &table = *in[1];
        int64_t rows = table.shape[0], h = table.shape[1];
        int64_t offset = o.getVocabOffset() ? (int64_t)*o.getVocabOffset() : 0;
        if (auto axis = o.getVocabAxis()) {
          int64_t c = coord(*axis);
          if (c < 0) {
            err = "vocab_axis '" + axis->str() + "' is not a mesh axis";
            return;
          }
          offset = c * rows;
        }
        T res = make(result());
        SmallVector<V> column(rows);
        for (int64_t j = 0; j < h; ++j) {
          for (int64_t r = 0; r < rows; ++r)
            column[r] = table.data[r * h + j];
          for (size_t p = 0; p < ids.data.size(); ++p)
            res.data[p * h + j] = d.select(ids.data[p], offset, column);
        }
        out.push_back(std::move(res));
      })
      .Case([&](EmbeddingGradOp o) {
        const T &ids = *in[0], &g = *in[1];
        Shape rs = result();
        int64_t rows = rs[0], h = rs[1];
        int64_t offset = o.getVocabOffset() ? (int64_t)*o.getVocabOffset() : 0;
        if (auto axis = o.getVocabAxis()) {
          int64_t c = coord(*axis);
          if (c < 0) {
            err = "vocab_axis '" + axis->str() + "' is not a mesh axis";
            return;
          }
          offset = c * rows;
        }
        T res = make(rs);
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t j = 0; j < h; ++j) {
            V s = d.zero();
            for (size_t p = 0; p < ids.data.size(); ++p)
              s = d.add(s, d.select(ids.data[p], offset + r, {g.data[p * h + j]}));
            res.data[r * h + j] = s;
          }
        out.push_back(std::move(res));
      })
      .Case([&](CausalMaskOp) {
        Shape rs = result();
        T res = make(rs);
        int64_t off = rs[1] - rs[0];
        for (int64_t i = 0; i < rs[0]; ++i)
          for (int64_t j = 0; j < rs[1]; ++j)
            res.data[i * rs[1] + j] = j <= i + off ? d.one() : d.zero();
        out.push_back(std::move(res));
      })
      .Case([&](ApplyMaskOp) {
        const T &x = *in[0], &m = *in[1];
        T res = make(x.shape);
        int64_t ms = m.data.size();
        for (size_t i = 0; i < x.data.size(); ++i) {
          // mask ? x : -inf, exactly: a constant mask (tv.causal_mask)
          // decides directly, any other mask selects by its 0/1 value.
          V mv = m.data[i % ms];
          if (mv == d.one())
            res.data[i] = x.data[i];
          else if (mv == d.zero())
            res.data[i] = d.negInf();
          else
            res.data[i] = d.select(mv, 0, {d.negInf(), x.data[i]});
        }
        out.push_back(std::move(res));
      })
      .Case([&](ApplyMaskGradOp) {
        const T &g = *in[0], &m = *in[1];
        T res = make(g.shape);
        int64_t ms = m.data.size();
        for (size_t i = 0; i < g.data.size(); ++i)
          res.data[i] = d.mul(m.data[i % ms], g.data[i]);
        out.push_back(std::move(res));
      })
      .Case([&](CrossEntropyOp) {
        const T &l = *in[0], &lab = *in[1];
        int64_t n = l.shape[0], v = l.shape[1];
        V total = d.zero();
        for (int64_t i = 0; i < n; ++i) {
          ArrayRef<V> row(l.data.data() + i * v, v);
          SmallVector<V> e;
          for (V x : row)
            e.push_back(d.exp(x));
          total = d.add(total, d.sub(d.log(sum(e)), d.select(lab.data[i], 0, row)));
        }
        T res = make({});
        res.data[0] = d.divInt(total, n);
        out.push_back(std::move(res));
      })
      .Case([&](CrossEntropyGradOp) {
        const T &l = *in[0], &lab = *in[1], &g = *in[2];
        int64_t n = l.shape[0], v = l.shape[1];
        T res = make(l.shape);
        V scale = d.divInt(g.data[0], n);
        for (int64_t i = 0; i < n; ++i) {
          SmallVector<V> e;
          for (int64_t j = 0; j < v; ++j)
            e.push_back(d.exp(l.data[i * v + j]));
          V s = sum(e);
          for (int64_t j = 0; j < v; ++j)
            res.data[i * v + j] = d.mul(
                scale, d.sub(d.div(e[j], s), d.select(lab.data[i], j, {d.one()})));
        }
        out.push_back(std::move(res));
      })
      // Data movement.
      .Case([&](ReshapeOp) {
        T res = *in[0];
        res.shape = result();
        out.push_back(std::move(res));
      })
      .Case([&](TransposeOp o) {
        const T &x = *in[0];
        Shape rs = result();
        T res = make(rs);
        SmallVector<int64_t> idx, src(x.shape.size());
        for (int64_t i = 0, e = res.data.size(); i < e; ++i) {
          unravel(i, rs, idx);
          for (auto [k, p] : llvm::enumerate(o.getPerm()))
            src[p] = idx[k];
          res.data[i] = x.data[ravel(src, x.shape)];
        }
        out.push_back(std::move(res));
      })
      .Case([&](SliceOp o) {
        const T &x = *in[0];
        Shape rs = result();
        T res = make(rs);
        SmallVector<int64_t> idx;
        for (int64_t i = 0, e = res.data.size(); i < e; ++i) {
          unravel(i, rs, idx);
          for (auto [k, s] : llvm::enumerate(o.getStart()))
            idx[k] += s;
          res.data[i] = x.data[ravel(idx, x.shape)];
        }
        out.push_back(std::move(res));
      })
      .Case([&](SliceGradOp o) {
        const T &g = *in[0];
        T res = make(result());
        SmallVector<int64_t> idx;
        for (int64_t i = 0, e = g.data.size(); i < e; ++i) {
          unravel(i, g.shape, idx);
          for (auto [k, s] : llvm::enumerate(o.getStart()))
            idx[k] += s;
          res.data[ravel(idx, res.shape)] = g.data[i];
        }
        out.push_back(std::move(res));
      })
      .Case([&](ConcatOp o) {
        Shape rs = result();
        T res = make(rs);
        int64_t dim = o.getDim(), off = 0;
        SmallVector<int64_t> idx;
        for (const T *x : in) {
          for (int64_t i = 0, e = x->data.size(); i < e; ++i) {
            unravel(i, x->shape, idx);
            idx[dim] += off;
            res.data[ravel(idx, rs)] = x->data[i];
          }
          off += x->shape[dim];
        }
        out.push_back(std::move(res));
      })
      .Case([&](BroadcastOp) {
        const T &x = *in[0];
        Shape rs = result();
        T res = make(rs);
        SmallVector<int64_t> idx;
        for (int64_t i = 0, e = res.data.size(); i < e; ++i) {
          unravel(i, rs, idx);
          res.data[i] = x.data[broadcastIndex(idx, rs, x.shape)];
        }
        out.push_back(std::move(res));
      })
      // Mixture of experts.
      .Case([&](TopKGateOp o) {
        const T &x = *in[0];
        int64_t t = x.shape[0], e = x.shape[1];
        T res = make(x.shape);
        for (int64_t i = 0; i < t; ++i) {
          ArrayRef<V> row(x.data.data() + i * e, e);
          for (int64_t j = 0; j < e; ++j)
            res.data[i * e + j] = d.topk(o.getK(), j, row);
        }
        out.push_back(std::move(res));
      })
      .Case([&](TopKGateGradOp o) {
        const T &x = *in[0], &g = *in[1];
        int64_t t = x.shape[0], e = x.shape[1];
        T res = make(x.shape);
        for (int64_t i = 0; i < t; ++i) {
          ArrayRef<V> row(x.data.data() + i * e, e);
          SmallVector<V> gate;
          V dot = d.zero();
          for (int64_t j = 0; j < e; ++j) {
            gate.push_back(d.topk(o.getK(), j, row));
            dot = d.add(dot, d.mul(g.data[i * e + j], gate.back()));
          }
          for (int64_t j = 0; j < e; ++j)
            res.data[i * e + j] = d.mul(gate[j], d.sub(g.data[i * e + j], dot));
        }
        out.push_back(std::move(res));
      })
      .Case([&](DispatchOp) {
        const T &x = *in[0], &g = *in[1];
        int64_t t = x.shape[0], h = x.shape[1], e = g.shape[1];
        T res = make(result());
        for (int64_t ei = 0; ei < e; ++ei)
          for (int64_t i = 0; i < t; ++i) {
            V nz = d.nonzero(g.data[i * e + ei]);
            for (int64_t j = 0; j < h; ++j)
              res.data[(ei * t + i) * h + j] = d.mul(nz, x.data[i * h + j]);
          }
        out.push_back(std::move(res));
      })
      .Case([&](DispatchGradOp) {
        const T &dy = *in[0], &g = *in[1];
        int64_t e = dy.shape[0], t = dy.shape[1], h = dy.shape[2];
        T res = make(result());
        for (int64_t i = 0; i < t; ++i)
          for (int64_t j = 0; j < h; ++j) {
            V s = d.zero();
            for (int64_t ei = 0; ei < e; ++ei)
              s = d.add(s, d.mul(d.nonzero(g.data[i * e + ei]),
                                 dy.data[(ei * t + i) * h + j]));
            res.data[i * h + j] = s;
          }
        out.push_back(std::move(res));
      })
      .Case([&](CombineOp) {
        const T &y = *in[0], &g = *in[1];
        int64_t e = y.shape[0], t = y.shape[1], h = y.shape[2];
        T res = make(result());
        for (int64_t i = 0; i < t; ++i)
          for (int64_t j = 0; j < h; ++j) {
            V s = d.zero();
            for (int64_t ei = 0; ei < e; ++ei)
              s = d.add(s, d.mul(g.data[i * e + ei], y.data[(ei * t + i) * h + j]));
            res.data[i * h + j] = s;
          }
        out.push_back(std::move(res));
      })
      .Case([&](CombineGradOp) {
        const T &y = *in[0], &g = *in[1], &dout = *in[2];
        int64_t e = y.shape[0], t = y.shape[1], h = y.shape[2];
        T dy = make(y.shape), dg = make(g.shape);
        for (int64_t ei = 0; ei < e; ++ei)
          for (int64_t i = 0; i < t; ++i) {
            V s = d.zero();
            for (int64_t j = 0; j < h; ++j) {
              dy.data[(ei * t + i) * h + j] =
                  d.mul(g.data[i * e + ei], dout.data[i * h + j]);
              s = d.add(s, d.mul(y.data[(ei * t + i) * h + j], dout.data[i * h + j]));
            }
            dg.data[i * e + ei] = s;
          }
        out.push_back(std::move(dy));
        out.push_back(std::move(dg));
      })
      .Case([&](MoEGateOp o) {
        const T &x = *in[0], &w = *in[1];
        int64_t t = x.shape[0], k = o.getK();
        double scale = o.getRouteScale().convertToDouble();
        T wt = make(result(0)), idx = make(result(1));
        for (int64_t i = 0; i < t; ++i) {
          Route r = route(x, w, i, o.getScoreFunc(), k, o.getNGroups(),
                          o.getTopkGroups());
          V total = sum(r.picked);
          for (int64_t j = 0; j < k; ++j) {
            idx.data[i * k + j] = r.index[j];
            V g = o.getScoreFunc() == ScoreFunc::sigmoid
                      ? d.div(r.picked[j], total)
                      : r.picked[j];
            wt.data[i * k + j] = d.scale(g, scale);
          }
        }
        out.push_back(std::move(wt));
        out.push_back(std::move(idx));
      })
      .Case([&](MoEGateGradOp o) {
        const T &x = *in[0], &w = *in[1], &g = *in[2];
        int64_t t = x.shape[0], h = x.shape[1], e = w.shape[0], k = o.getK();
        double scale = o.getRouteScale().convertToDouble();
        bool sigmoid = o.getScoreFunc() == ScoreFunc::sigmoid;
        T dx = make(x.shape), dw = make(w.shape);
        for (int64_t i = 0; i < t; ++i) {
          Route r = route(x, w, i, o.getScoreFunc(), k, o.getNGroups(),
                          o.getTopkGroups());
          // d weights / d picked scores.
          SmallVector<V> dg(k);
          V total = sum(r.picked), dot = d.zero();
          for (int64_t j = 0; j < k; ++j)
            dot = d.add(dot, d.mul(g.data[i * k + j], r.picked[j]));
          for (int64_t j = 0; j < k; ++j)
            dg[j] = sigmoid ? d.scale(d.sub(d.div(g.data[i * k + j], total),
                                            d.div(dot, d.mul(total, total))),
                                      scale)
                            : d.scale(g.data[i * k + j], scale);
          // Scatter to the experts, then through the score function.
          SmallVector<V> ds(e, d.zero()), dz(e);
          for (int64_t c = 0; c < e; ++c)
            for (int64_t j = 0; j < k; ++j)
              ds[c] = d.add(ds[c], d.mul(d.select(r.index[j], c, {d.one()}),
                                         dg[j]));
          V sdot = d.zero();
          for (int64_t c = 0; c < e; ++c)
            sdot = d.add(sdot, d.mul(ds[c], r.scores[c]));
          for (int64_t c = 0; c < e; ++c)
            dz[c] = sigmoid ? d.mul(ds[c], d.mul(r.scores[c],
                                                 d.sub(d.one(), r.scores[c])))
                            : d.mul(r.scores[c], d.sub(ds[c], sdot));
          for (int64_t c = 0; c < e; ++c)
            for (int64_t q = 0; q < h; ++q) {
              dx.data[i * h + q] =
                  d.add(dx.data[i * h + q], d.mul(dz[c], w.data[c * h + q]));
              dw.data[c * h + q] =
                  d.add(dw.data[c * h + q], d.mul(dz[c], x.data[i * h + q]));
            }
        }
        out.push_back(std::move(dx));
        out.push_back(std::move(dw));
      })
      .Case([&](MoEGmmOp o) {
        const T &x = *in[0], &idx = *in[1], &wt = *in[2], &w1 = *in[3],
                &w3 = *in[4], &w2 = *in[5];
        int64_t t = x.shape[0], h = x.shape[1], k = idx.shape[1];
        int64_t n = w1.shape[0], f = w1.shape[1];
        T res = make(result());
        for (int64_t i = 0; i < t; ++i)
          for (int64_t l = 0; l < n; ++l) {
            V coef = d.zero();
            for (int64_t j = 0; j < k; ++j)
              coef = d.add(coef, d.mul(expertIs(idx.data[i * k + j],
                                                o.getExpertStart() + l),
                                       wt.data[i * k + j]));
            Expert ex = expert(x, w1, w3, i, l);
            for (int64_t q = 0; q < h; ++q) {
              V oq = d.zero();
              for (int64_t p = 0; p < f; ++p)
                oq = d.add(oq, d.mul(ex.u[p], w2.data[(l * h + q) * f + p]));
              res.data[i * h + q] = d.add(res.data[i * h + q], d.mul(coef, oq));
            }
          }
        out.push_back(std::move(res));
      })
      .Case([&](MoEGmmGradOp o) {
        const T &dy = *in[0], &x = *in[1], &idx = *in[2], &wt = *in[3],
                &w1 = *in[4], &w3 = *in[5], &w2 = *in[6];
        int64_t t = x.shape[0], h = x.shape[1], k = idx.shape[1];
        int64_t n = w1.shape[0], f = w1.shape[1];
        T dx = make(x.shape), dwt = make(wt.shape), dw1 = make(w1.shape),
          dw3 = make(w3.shape), dw2 = make(w2.shape);
        for (int64_t i = 0; i < t; ++i)
          for (int64_t l = 0; l < n; ++l) {
            SmallVector<V> m(k);
            V coef = d.zero();
            for (int64_t j = 0; j < k; ++j) {
              m[j] = expertIs(idx.data[i * k + j], o.getExpertStart() + l);
              coef = d.add(coef, d.mul(m[j], wt.data[i * k + j]));
            }
            Expert ex = expert(x, w1, w3, i, l);
            V dot = d.zero();
            SmallVector<V> dout(h);
            for (int64_t q = 0; q < h; ++q) {
              V oq = d.zero();
              for (int64_t p = 0; p < f; ++p)
                oq = d.add(oq, d.mul(ex.u[p], w2.data[(l * h + q) * f + p]));
              dot = d.add(dot, d.mul(dy.data[i * h + q], oq));
              dout[q] = d.mul(coef, dy.data[i * h + q]);
            }
            for (int64_t j = 0; j < k; ++j)
              dwt.data[i * k + j] = d.add(dwt.data[i * k + j], d.mul(m[j], dot));
            for (int64_t p = 0; p < f; ++p) {
              V du = d.zero();
              for (int64_t q = 0; q < h; ++q) {
                int64_t w2i = (l * h + q) * f + p;
                du = d.add(du, d.mul(dout[q], w2.data[w2i]));
                dw2.data[w2i] = d.add(dw2.data[w2i], d.mul(dout[q], ex.u[p]));
              }
              V sa = ex.sig[p];
              V dsilu = d.mul(sa, d.add(d.one(),
                                        d.mul(ex.a[p], d.sub(d.one(), sa))));
              V da = d.mul(du, d.mul(ex.b[p], dsilu));
              V db = d.mul(du, d.mul(ex.a[p], sa));
              for (int64_t q = 0; q < h; ++q) {
                int64_t wi = (l * f + p) * h + q;
                dw1.data[wi] = d.add(dw1.data[wi], d.mul(da, x.data[i * h + q]));
                dw3.data[wi] = d.add(dw3.data[wi], d.mul(db, x.data[i * h + q]));
                dx.data[i * h + q] =
                    d.add(dx.data[i * h + q],
                          d.add(d.mul(da, w1.data[wi]), d.mul(db, w3.data[wi])));
              }
            }
          }
        out.push_back(std::move(dx));
        out.push_back(std::move(dwt));
        out.push_back(std::move(dw1));
        out.push_back(std::move(dw3));
        out.push_back(std::move(dw2));
      })
      // Optimizer.
      .Case([&](SGDOp o) {
        double lr = o.getLr().convertToDouble();
        out.push_back(zip(*in[0], *in[1],
                          [&](V w, V g) { return d.sub(w, d.scale(g, lr)); }));
      })
      .Case([&](AdamOp o) {
        double lr = o.getLr().convertToDouble(), b1 = o.getBeta1().convertToDouble(),
               b2 = o.getBeta2().convertToDouble(), eps = o.getEps().convertToDouble();
        int64_t step = o.getStep();
        double c1 = 1 - std::pow(b1, step), c2 = 1 - std::pow(b2, step);
        const T &w = *in[0], &g = *in[1], &m = *in[2], &v = *in[3];
        T nw = make(w.shape), nm = make(w.shape), nv = make(w.shape);
        for (size_t i = 0; i < w.data.size(); ++i) {
          nm.data[i] = d.add(d.scale(m.data[i], b1), d.scale(g.data[i], 1 - b1));
          nv.data[i] = d.add(d.scale(v.data[i], b2),
                             d.scale(d.mul(g.data[i], g.data[i]), 1 - b2));
          V mhat = d.scale(nm.data[i], 1 / c1);
          V vhat = d.scale(nv.data[i], 1 / c2);
          nw.data[i] = d.sub(w.data[i], d.scale(d.div(mhat, d.add(d.sqrt(vhat),
                                                                  d.cst(eps))),
                                                lr));
        }
        out.push_back(std::move(nw));
        out.push_back(std::move(nm));
        out.push_back(std::move(nv));
      })
      .Default([&](Operation *o) {
        err = "no semantics for op '" + o->getName().getStringRef().str() + "'";
      });
  return err;
}

} // namespace

bool mlir::tv::isCollectiveOp(Operation *op) {
  return isa<AllReduceOp, AllGatherOp, ReduceScatterOp, AllToAllOp,
             BroadcastCommOp, ReduceOp>(op);
}

bool mlir::tv::isLocalComputeOp(Operation *op) {
  return op->getDialect() && op->getDialect()->getNamespace() == "tv" &&
         !isCollectiveOp(op) &&
         !isa<InputOp, TagOp, OutputOp, AccumulateOp, BufferReadOp, SendOp,
              RecvOp, ChunkOp, MeshOp, SpecOp, PlanOp, RankProgramOp,
              LineageOp, LineageMapOp, StageOp>(op);
}

template <typename D>
std::optional<std::string>
mlir::tv::evalLocalOp(D &d, Operation *op,
                      ArrayRef<const Tensor<typename D::V> *> inputs,
                      SmallVectorImpl<Tensor<typename D::V>> &results,
                      const RankEnv &env) {
  Eval<D> e{d, env};
  return e.run(op, inputs, results);
}

template <typename D>
std::optional<std::string>
mlir::tv::evalCollective(D &d, Operation *op,
                         ArrayRef<const Tensor<typename D::V> *> in,
                         std::vector<Tensor<typename D::V>> &out) {
  using V = typename D::V;
  using T = Tensor<V>;
  RankEnv env;
  Eval<D> e{d, env};
  int64_t n = in.size();
  auto chunk = [&](const T &x, int64_t dim, int64_t i) {
    Shape cs = x.shape;
    cs[dim] /= n;
    T res = e.make(cs);
    SmallVector<int64_t> idx;
    for (int64_t k = 0, end = res.data.size(); k < end; ++k) {
      unravel(k, cs, idx);
      idx[dim] += i * cs[dim];
      res.data[k] = x.data[ravel(idx, x.shape)];
    }
    return res;
  };
  auto concat = [&](ArrayRef<T> parts, int64_t dim) {
    Shape rs = parts[0].shape;
    rs[dim] *= parts.size();
    T res = e.make(rs);
    SmallVector<int64_t> idx;
    for (auto [p, x] : llvm::enumerate(parts))
      for (int64_t k = 0, end = x.data.size(); k < end; ++k) {
        unravel(k, x.shape, idx);
        idx[dim] += p * x.shape[dim];
        res.data[ravel(idx, rs)] = x.data[k];
      }
    return res;
  };
  auto reduceSum = [&]() {
    T acc = *in[0];
    for (int64_t i = 1; i < n; ++i)
      for (size_t k = 0; k < acc.data.size(); ++k)
        acc.data[k] = d.add(acc.data[k], in[i]->data[k]);
    return acc;
  };
  out.clear();
  std::optional<std::string> err;
  TypeSwitch<Operation *>(op)
      .Case([&](AllReduceOp o) {
        T acc = e.make(in[0]->shape);
        if (o.getKind() == ReduceKind::max) {
          for (size_t k = 0; k < acc.data.size(); ++k) {
            SmallVector<V> xs;
            for (int64_t i = 0; i < n; ++i)
              xs.push_back(in[i]->data[k]);
            acc.data[k] = d.max(xs);
          }
        } else {
          acc = reduceSum();
          if (o.getKind() == ReduceKind::avg)
            for (V &v : acc.data)
              v = d.divInt(v, n);
        }
        out.assign(n, acc);
      })
      .Case([&](AllGatherOp o) {
        std::optional<ArrayRef<int64_t>> order = o.getOrder();
        if (order && (int64_t)order->size() != n) {
          err = "all_gather 'order' does not match its group";
          return;
        }
        SmallVector<T> parts;
        for (int64_t p = 0; p < n; ++p)
          parts.push_back(*in[order ? (*order)[p] : p]);
        out.assign(n, concat(parts, o.getDim()));
      })
      .Case([&](ReduceScatterOp o) {
        T acc = reduceSum();
        if (o.getKind() == ReduceKind::avg)
          for (V &v : acc.data)
            v = d.divInt(v, n);
        for (int64_t i = 0; i < n; ++i)
          out.push_back(chunk(acc, o.getDim(), i));
      })
      .Case([&](AllToAllOp o) {
        for (int64_t j = 0; j < n; ++j) {
          SmallVector<T> parts;
          for (int64_t i = 0; i < n; ++i)
            parts.push_back(chunk(*in[i], o.getSplitDim(), j));
          out.push_back(concat(parts, o.getConcatDim()));
        }
      })
      .Case([&](BroadcastCommOp o) { out.assign(n, *in[o.getRoot()]); })
      .Case([&](ReduceOp o) {
        for (int64_t i = 0; i < n; ++i) {
          if (i == (int64_t)o.getRoot()) {
            out.push_back(reduceSum());
          } else {
            T u = e.make(in[i]->shape);
            for (V &v : u.data)
              v = d.undef();
            out.push_back(std::move(u));
          }
        }
      })
      .Case([&](ChunkOp o) {
        // Chunk is local; here `in` holds the inputs of the whole group.
        for (int64_t i = 0; i < n; ++i)
          out.push_back(chunk(*in[i], o.getDim(), i));
      })
      .Default([&](Operation *o) {
        err = "no collective semantics for op '" +
              o->getName().getStringRef().str() + "'";
      });
  return err;
}

// The two domains.
template std::optional<std::string>
mlir::tv::evalLocalOp<SymDomain>(SymDomain &, Operation *,
                                 ArrayRef<const Tensor<SymDomain::V> *>,
                                 SmallVectorImpl<Tensor<SymDomain::V>> &,
                                 const RankEnv &);
template std::optional<std::string> mlir::tv::evalLocalOp<ConcreteDomain>(
    ConcreteDomain &, Operation *, ArrayRef<const Tensor<ConcreteDomain::V> *>,
    SmallVectorImpl<Tensor<ConcreteDomain::V>> &, const RankEnv &);
template std::optional<std::string>
mlir::tv::evalCollective<SymDomain>(SymDomain &, Operation *,
                                    ArrayRef<const Tensor<SymDomain::V> *>,
                                    std::vector<Tensor<SymDomain::V>> &);
template std::optional<std::string> mlir::tv::evalCollective<ConcreteDomain>(
    ConcreteDomain &, Operation *, ArrayRef<const Tensor<ConcreteDomain::V> *>,
    std::vector<Tensor<ConcreteDomain::V>> &);

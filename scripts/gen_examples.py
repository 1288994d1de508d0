#!/usr/bin/env python3
"""Generates the tv example programs and their single-bug mutants.

    python3 scripts/gen_examples.py [--root DIR] [--bases DIR]

Writes into <root>/examples/ (default root: the repository holding this
script):

  tp_mlp.mlir          Megatron tensor-parallel MLP (tp=2), forward+backward
  dp_microbatch.mlir   data parallel (dp=2), 2 micro-batches, accumulation
  pp2.mlir             2-stage pipeline, 2 layers, 2 micro-batches (1F1B)
  dp2_pp2_tp2.mlir     the demo: dp x pp x tp = 2 x 2 x 2, residual TP MLPs

and the mutants (a copy of a correct program with ONE change each) into
<root>/test/Examples/Inputs/.  Some mutants start from a correct variant that
is not one of the four examples (the TP MLP with a constant shift, split per
rank; the pipeline on a dp=2 x pp=2 mesh); `--bases DIR` also writes those
correct variants to DIR so that they can be checked to prove.

Conventions of the generated IR: ranks are row-major over the mesh axes (last
axis fastest); every plan tensor a lineage refers to is named by tv.input,
tv.tag or tv.output; lineages are put on the main activations and gradients
of every layer and micro-batch so that the verifier's stages stay small.
Constants never encode tensor sizes (the verifier shrinks shapes): size
dependent factors come from tv.mean / tv.mean_grad, and the only constants
are 1/dp and 1/micro_batches.
"""

import argparse
import os

# ---------------------------------------------------------------------------
# Text builders
# ---------------------------------------------------------------------------


def ty(shape):
    """MLIR tensor type of an f32 tensor with `shape` (() is a scalar)."""
    if not shape:
        return "tensor<f32>"
    return "tensor<" + "x".join(str(d) for d in shape) + "xf32>"


def flt(c):
    """A float literal MLIR parses as an F64Attr."""
    return repr(float(c))


def str_list(xs):
    return "[" + ", ".join('"%s"' % x for x in xs) + "]"


class Val:
    """An SSA value of a program with its (static) shape."""

    def __init__(self, name, shape):
        self.name = name
        self.shape = tuple(shape)

    def __str__(self):
        return "%" + self.name

    @property
    def type(self):
        return ty(self.shape)


class Program:
    """The body of a tv.spec or of a tv.rank_program.

    Every method appends one op and returns its result(s).  `with_mb(m)`
    returns the same program with the discardable attribute {mb = m : i64}
    put on every op emitted through it.
    """

    def __init__(self):
        self.lines = []
        self._names = set()

    # -- helpers ------------------------------------------------------------
    def with_mb(self, mb):
        return MbView(self, mb)

    def _fresh(self, hint):
        hint = "".join(c if c.isalnum() or c == "_" else "_" for c in hint)
        name, i = hint, 1
        while name in self._names:
            name = "%s_%d" % (hint, i)
            i += 1
        self._names.add(name)
        return name

    def _attrs(self, attrs=(), mb=None):
        items = list(attrs)
        if mb is not None:
            items.append(("mb", "%d : i64" % mb))
        if not items:
            return ""
        return " {" + ", ".join("%s = %s" % kv for kv in items) + "}"

    def comment(self, text):
        self.lines.append("// " + text)

    # -- structure ----------------------------------------------------------
    def input(self, name, shape, hint=None, mb=None):
        return self._emit(hint or name, shape, mb, [],
                          'tv.input "%s"$ATTRS : %s' % (name, ty(shape)))

    def tag(self, name, v, mb=None):
        self.lines.append('tv.tag "%s", %s%s : %s' %
                          (name, v, self._attrs((), mb), v.type))
        return v

    def output(self, name, v, mb=None):
        self.lines.append('tv.output "%s", %s%s : %s' %
                          (name, v, self._attrs((), mb), v.type))
        return v

    def accumulate(self, buf, v, mb=None):
        self.lines.append('tv.accumulate "%s", %s%s : %s' %
                          (buf, v, self._attrs((), mb), v.type))

    def buffer_read(self, buf, shape, hint=None, mb=None):
        return self._emit(hint or buf, shape, mb, [],
                          'tv.buffer_read "%s"$ATTRS : %s' % (buf, ty(shape)))

    # -- compute ------------------------------------------------------------
    def _emit(self, hint, shape, mb, attrs, text):
        v = Val(self._fresh(hint), shape)
        self.lines.append(("%s = " % v) +
                          text.replace("$ATTRS", self._attrs(attrs, mb)))
        return v

    def linear(self, x, w, hint="lin", mb=None):
        shape = x.shape[:-1] + (w.shape[0],)
        assert x.shape[-1] == w.shape[1], (x.shape, w.shape)
        return self._emit(hint, shape, mb, [],
                          "tv.linear %s, %s$ATTRS : (%s, %s) -> %s" %
                          (x, w, x.type, w.type, ty(shape)))

    def linear_grad(self, x, w, g, hint=("dx", "dw"), mb=None):
        dx = Val(self._fresh(hint[0]), x.shape)
        dw = Val(self._fresh(hint[1]), w.shape)
        self.lines.append("%s, %s = tv.linear_grad %s, %s, %s%s : %s, %s, %s" %
                          (dx, dw, x, w, g, self._attrs((), mb), x.type,
                           w.type, g.type))
        return dx, dw

    def _unary(self, op, x, hint, mb):
        return self._emit(hint, x.shape, mb, [],
                          "tv.%s %s$ATTRS : %s" % (op, x, x.type))

    def gelu(self, x, hint="gelu", mb=None):
        return self._unary("gelu", x, hint, mb)

    def copy(self, x, hint="copy", mb=None):
        return self._unary("copy", x, hint, mb)

    def gelu_grad(self, x, g, hint="dgelu", mb=None):
        return self._emit(hint, x.shape, mb, [],
                          "tv.gelu_grad %s, %s$ATTRS : %s" % (x, g, x.type))

    def _scalar(self, op, x, c, hint, mb):
        return self._emit(hint, x.shape, mb, [],
                          "tv.%s %s, %s$ATTRS : %s" % (op, x, flt(c), x.type))

    def scale(self, x, c, hint="scaled", mb=None):
        return self._scalar("scale", x, c, hint, mb)

    def add_scalar(self, x, c, hint="shifted", mb=None):
        return self._scalar("add_scalar", x, c, hint, mb)

    def pow(self, x, c, hint="pow", mb=None):
        return self._scalar("pow", x, c, hint, mb)

    def pow_grad(self, x, g, c, hint="dpow", mb=None):
        return self._emit(hint, x.shape, mb, [],
                          "tv.pow_grad %s, %s exponent %s$ATTRS : %s" %
                          (x, g, flt(c), x.type))

    def add(self, a, b, hint="sum", mb=None):
        assert a.shape == b.shape
        return self._emit(hint, a.shape, mb, [],
                          "tv.add %s, %s$ATTRS : %s, %s -> %s" %
                          (a, b, a.type, b.type, a.type))

    def mean(self, x, dims, hint="mean", mb=None):
        shape = tuple(d for i, d in enumerate(x.shape) if i not in dims)
        return self._emit(hint, shape, mb, [],
                          "tv.mean %s dims [%s]$ATTRS : %s -> %s" %
                          (x, ", ".join(map(str, dims)), x.type, ty(shape)))

    def mean_grad(self, g, dims, shape, hint="dmean", mb=None):
        return self._emit(hint, shape, mb, [],
                          "tv.mean_grad %s dims [%s]$ATTRS : %s -> %s" %
                          (g, ", ".join(map(str, dims)), g.type, ty(shape)))

    def slice(self, x, start, shape, hint="slice", mb=None):
        return self._emit(hint, shape, mb, [],
                          "tv.slice %s start [%s]$ATTRS : %s -> %s" %
                          (x, ", ".join(map(str, start)), x.type, ty(shape)))

    # -- communication -------------------------------------------------------
    def all_reduce(self, x, kind, axes, hint="ar", mb=None):
        return self._emit(hint, x.shape, mb, [("axes", str_list(axes))],
                          "tv.all_reduce %s %s$ATTRS : %s -> %s" %
                          (kind, x, x.type, x.type))

    def all_gather(self, x, dim, axes, group_size, hint="ag", mb=None):
        shape = list(x.shape)
        shape[dim] *= group_size
        return self._emit(hint, shape, mb, [("axes", str_list(axes))],
                          "tv.all_gather %s dim %d$ATTRS : %s -> %s" %
                          (x, dim, x.type, ty(shape)))

    @staticmethod
    def _peer_attrs(peer, peer_axis, peer_offset, tag):
        attrs = []
        if peer is not None:
            attrs.append(("peer", "%d" % peer))
        else:
            attrs.append(("peer_axis", '"%s"' % peer_axis))
            attrs.append(("peer_offset", "%d" % peer_offset))
        if tag:
            attrs.append(("tag", "%d" % tag))
        return attrs

    def send(self, x, peer=None, peer_axis=None, peer_offset=None, tag=0,
             mb=None):
        attrs = self._peer_attrs(peer, peer_axis, peer_offset, tag)
        self.lines.append("tv.send %s%s : %s" %
                          (x, self._attrs(attrs, mb), x.type))

    def recv(self, shape, peer=None, peer_axis=None, peer_offset=None, tag=0,
             hint="recv", mb=None):
        attrs = self._peer_attrs(peer, peer_axis, peer_offset, tag)
        return self._emit(hint, shape, mb, attrs,
                          "tv.recv$ATTRS : %s" % ty(shape))


class MbView:
    """A Program seen through one micro-batch: every op gets {mb = m}."""

    def __init__(self, prog, mb):
        self._prog = prog
        self._mb = mb

    def __getattr__(self, name):
        fn = getattr(self._prog, name)
        if name in ("comment", "with_mb") or not callable(fn):
            return fn

        def call(*args, **kwargs):
            kwargs.setdefault("mb", self._mb)
            return fn(*args, **kwargs)
        return call


class Mesh:
    def __init__(self, axes, sizes):
        self.axes = list(axes)
        self.sizes = list(sizes)

    @property
    def num_ranks(self):
        n = 1
        for s in self.sizes:
            n *= s
        return n

    def size(self, axis):
        return self.sizes[self.axes.index(axis)] if axis in self.axes else 1

    def rank(self, **coords):
        """Row-major rank; axes not given (or not on the mesh) are 0."""
        r = 0
        for a, s in zip(self.axes, self.sizes):
            r = r * s + coords.get(a, 0)
        return r

    def coords(self, rank):
        c = {}
        for a, s in reversed(list(zip(self.axes, self.sizes))):
            c[a] = rank % s
            rank //= s
        return c

    def ranks(self, **fixed):
        return [r for r in range(self.num_ranks)
                if all(self.coords(r).get(a, 0) == v
                       for a, v in fixed.items())]

    def text(self):
        return 'tv.mesh @mesh axes %s sizes [%s]' % (
            str_list(self.axes), ", ".join(map(str, self.sizes)))


class Module:
    def __init__(self, title, mesh, micro_batches=1):
        self.title = title
        self.mesh = mesh
        self.micro_batches = micro_batches
        self.spec = Program()
        self.programs = []  # (ranks, Program)
        self.lineages = []

    def rank_program(self, ranks):
        p = Program()
        self.programs.append((list(ranks), p))
        return p

    def lineage(self, spec, box, groups):
        """`box`: [(lo, hi)] per dim; `groups`: replicas, each a list of
        (plan name, rank) summed."""
        b = ", ".join("%d:%d" % lh for lh in box)
        g = " | ".join("[" + " + ".join('"%s":%d' % ref for ref in grp) + "]"
                       for grp in groups)
        self.lineages.append('tv.lineage #tv.lineage<"%s"[%s] = %s>' %
                             (spec, b, g))

    def render(self):
        out = ["// " + line if line else "//" for line in self.title]
        out.append("// Generated by scripts/gen_examples.py; do not edit.")
        out.append(self.mesh.text())
        out.append("tv.spec @spec {")
        out += ["  " + line for line in self.spec.lines]
        out.append("}")
        out.append("tv.plan @plan mesh @mesh micro_batches %d {" %
                   self.micro_batches)
        for ranks, prog in self.programs:
            out.append("  tv.rank_program [%s] {" % ", ".join(map(str, ranks)))
            out += ["    " + line for line in prog.lines]
            out.append("  }")
        out.append("}")
        out += self.lineages
        return "\n".join(out) + "\n"


# ---------------------------------------------------------------------------
# Lineage helpers
# ---------------------------------------------------------------------------


def full_box(shape):
    return [(0, d) for d in shape]


def replicated(m, spec, shape, plan_name, ranks):
    """Spec tensor `spec` held whole by every rank in `ranks`."""
    m.lineage(spec, full_box(shape), [[(plan_name, r)] for r in ranks])


# ---------------------------------------------------------------------------
# Model blocks (shared by spec and plan; `tp` is the tensor-parallel axis on
# the plan, None on the spec)
# ---------------------------------------------------------------------------


def mlp_forward(p, x, w1, w2, tp=None, name=None, shift=None,
                reduce="all_reduce", post_scale=None):
    """Megatron MLP: o = gelu(x w1^T [+ shift]) w2^T.

    On the plan, w1 holds a block of rows (column-parallel linear) and w2 a
    block of columns (row-parallel linear); the partial products are summed
    by an all_reduce over `tp` (Megatron's g operator).  `reduce` and
    `post_scale` exist for mutants.  Returns the saved activations.
    """
    name = name or (lambda n: n)
    h = p.tag(name("h"), p.linear(x, w1, hint="h"))
    a = p.gelu(h, hint="a")
    if shift is not None:
        a = p.add_scalar(a, shift, hint="a_shift")
    p.tag(name("a"), a)
    o = p.linear(a, w2, hint="o" if tp is None else "o_part")
    if tp is not None:
        if reduce == "all_reduce":
            o = p.all_reduce(o, "sum", [tp], hint="o")
        elif reduce == "copy":
            o = p.copy(o, hint="o")
        elif reduce == "all_gather":
            g = p.all_gather(o, 0, [tp], 2, hint="o_gathered")
            o = p.slice(g, [0] * len(o.shape), o.shape, hint="o")
        else:
            raise ValueError(reduce)
    if post_scale is not None:
        o = p.scale(o, post_scale, hint="o_scaled")
    return {"x": x, "w1": w1, "w2": w2, "h": h, "a": a, "o": o}


def mlp_backward(p, fwd, do, tp=None, name=None, need_dx=True):
    """VJP of mlp_forward: returns (dx, dw1, dw2).

    do arrives replicated over `tp` (the backward of g is the identity); the
    partial input gradients are summed by an all_reduce over `tp` (the
    backward of Megatron's f operator).  The add_scalar shift has an
    identity VJP.
    """
    name = name or (lambda n: n)
    da, dw2 = p.linear_grad(fwd["a"], fwd["w2"], do, hint=("da", "dw2"))
    p.tag(name("da"), da)
    dh = p.tag(name("dh"), p.gelu_grad(fwd["h"], da, hint="dh"))
    dx, dw1 = p.linear_grad(fwd["x"], fwd["w1"], dh,
                            hint=("dx_part" if tp else "dx", "dw1"))
    if not need_dx:
        return None, dw1, dw2
    if tp is not None:
        dx = p.all_reduce(dx, "sum", [tp], hint="dx")
    return dx, dw1, dw2


def residual_forward(p, x, w1, w2, tp=None, name=None):
    """y = x + MLP(x)."""
    fwd = mlp_forward(p, x, w1, w2, tp=tp, name=name)
    fwd["y"] = p.add(x, fwd["o"], hint="y")
    return fwd


def residual_backward(p, fwd, dy, tp=None, name=None, need_dx=True):
    """VJP of residual_forward: dx = dy + MLP'(dy)."""
    dxm, dw1, dw2 = mlp_backward(p, fwd, dy, tp=tp, name=name,
                                 need_dx=need_dx)
    dx = p.add(dy, dxm, hint="dx") if need_dx else None
    return dx, dw1, dw2


def layer_forward(p, x, w, name=None):
    """a = gelu(x w^T)."""
    name = name or (lambda n: n)
    h = p.tag(name("h"), p.linear(x, w, hint="h"))
    a = p.tag(name("a"), p.gelu(h, hint="a"))
    return {"x": x, "w": w, "h": h, "a": a}


def layer_backward(p, fwd, da, name=None, need_dx=True):
    name = name or (lambda n: n)
    dh = p.tag(name("dh"), p.gelu_grad(fwd["h"], da, hint="dh"))
    dx, dw = p.linear_grad(fwd["x"], fwd["w"], dh, hint=("dx", "dw"))
    return (dx if need_dx else None), dw


def loss_forward(p, y):
    """Mean of squares over every element."""
    dims = list(range(len(y.shape)))
    return p.mean(p.pow(y, 2.0, hint="sq"), dims, hint="loss")


def loss_backward(p, y, dloss, seed_scale=None):
    """VJP of loss_forward.  `seed_scale` (1/(dp*micro_batches)) turns the
    micro-batch mean into its share of the global mean."""
    if seed_scale is not None:
        dloss = p.scale(dloss, seed_scale, hint="dloss_mb")
    dims = list(range(len(y.shape)))
    dsq = p.mean_grad(dloss, dims, y.shape, hint="dsq")
    return p.pow_grad(y, dsq, 2.0, hint="dy")


def average_losses(p, losses, dp_axis=None):
    """Local mean of micro-batch losses, then the mean over data parallel
    replicas."""
    total = losses[0]
    for l in losses[1:]:
        total = p.add(total, l, hint="loss_sum")
    loss = p.scale(total, 1.0 / len(losses), hint="loss_local")
    if dp_axis is not None:
        loss = p.all_reduce(loss, "avg", [dp_axis], hint="loss")
    return loss


# ---------------------------------------------------------------------------
# 1. Tensor-parallel MLP
# ---------------------------------------------------------------------------


def tp_mlp(mutation=None, shift=None, rank_shift=None):
    """Megatron TP MLP, tp=2, forward and backward.

    mutation: None, "missing_allreduce", "allgather" or "wrong_scale".
    shift: a constant added after gelu (spec and plan); rank_shift gives a
    per-rank constant instead and splits the rank program per rank.
    """
    B, H, F, TP = 4, 8, 16, 2
    mesh = Mesh(["tp"], [TP])
    title = ["Megatron tensor-parallel MLP, tp=2, forward and backward:",
             "column-parallel w1 (rows sharded), gelu, row-parallel w2",
             "(columns sharded), all_reduce of the output (g) and of dx (f)."]
    if shift is not None:
        title.append("Variant: a constant %s is added after gelu; one rank "
                     "program per rank." % shift)
    if rank_shift and len(set(rank_shift.values())) > 1:
        title.append("MUTANT: the ranks add different constants: %s." %
                     rank_shift)
    if mutation:
        title.append("MUTANT: %s." % {
            "missing_allreduce": "the forward all_reduce is a copy",
            "allgather": "the forward all_reduce is an all_gather + slice",
            "wrong_scale": "a scale 0.5 after the forward all_reduce",
        }[mutation])
    m = Module(title, mesh)

    s = m.spec
    x, w1, w2 = s.input("x", (B, H)), s.input("w1", (F, H)), s.input("w2", (H, F))
    dy = s.input("dy", (B, H))
    fwd = mlp_forward(s, x, w1, w2, shift=shift)
    s.output("y", fwd["o"])
    dx, dw1, dw2 = mlp_backward(s, fwd, dy)
    s.output("dx", dx)
    s.output("dw1", dw1)
    s.output("dw2", dw2)

    groups = [[r] for r in range(TP)] if rank_shift else [list(range(TP))]
    for ranks in groups:
        p = m.rank_program(ranks)
        my_shift = rank_shift[ranks[0]] if rank_shift else shift
        x, dy = p.input("x", (B, H)), p.input("dy", (B, H))
        w1, w2 = p.input("w1", (F // TP, H)), p.input("w2", (H, F // TP))
        fwd = mlp_forward(
            p, x, w1, w2, tp="tp", shift=my_shift,
            reduce={"missing_allreduce": "copy",
                    "allgather": "all_gather"}.get(mutation, "all_reduce"),
            post_scale=0.5 if mutation == "wrong_scale" else None)
        p.output("y", fwd["o"])
        dx, dw1, dw2 = mlp_backward(p, fwd, dy, tp="tp")
        p.output("dx", dx)
        p.output("dw1", dw1)
        p.output("dw2", dw2)

    ranks = list(range(TP))
    for n in ("x", "dy", "y", "dx"):
        replicated(m, n, (B, H), n, ranks)
    shard = [(r * F // TP, (r + 1) * F // TP) for r in ranks]
    for n in ("w1", "dw1"):  # rows of w1 (column-parallel)
        for r in ranks:
            m.lineage(n, [shard[r], (0, H)], [[(n, r)]])
    for n in ("w2", "dw2"):  # columns of w2 (row-parallel)
        for r in ranks:
            m.lineage(n, [(0, H), shard[r]], [[(n, r)]])
    for n in ("h", "a", "da", "dh"):  # ffn activations, sharded on ffn
        for r in ranks:
            m.lineage(n, [(0, B), shard[r]], [[(n, r)]])
    return m.render()


# ---------------------------------------------------------------------------
# 2. Data parallel with micro-batches
# ---------------------------------------------------------------------------


def dp_microbatch(drop_mb1_grad=False):
    """dp=2, 2 micro-batches per rank, one linear+gelu layer, mean-of-squares
    loss.  Weight gradients accumulate over micro-batches in a buffer and are
    summed over dp; the loss gradient seed of a micro-batch is dloss scaled
    by 1/(dp*micro_batches), which with the micro-batch mean gives the
    global mean's 1/(batch*hidden)."""
    DP, MB, b, H = 2, 2, 2, 8
    B = DP * MB * b
    mesh = Mesh(["dp"], [DP])
    m = Module(["Data parallel dp=2 with 2 micro-batches per rank: linear +",
                "gelu + mean-of-squares loss, forward and backward, gradient",
                "accumulation over micro-batches, all_reduce over dp."],
               mesh, MB)
    if drop_mb1_grad:
        m.title.append("MUTANT: micro-batch 1's weight gradient is never "
                       "accumulated.")

    s = m.spec
    x, w, dloss = s.input("x", (B, H)), s.input("w", (H, H)), s.input("dloss", ())
    fwd = layer_forward(s, x, w)
    s.output("loss", loss_forward(s, fwd["a"]))
    da = s.tag("da", loss_backward(s, fwd["a"], dloss))
    _, dw = layer_backward(s, fwd, da, need_dx=False)
    s.output("dw", dw)

    p = m.rank_program(mesh.ranks())
    w, dloss = p.input("w", (H, H)), p.input("dloss", ())
    xs = [p.input("x_mb%d" % k, (b, H)) for k in range(MB)]
    losses = []
    for k in range(MB):
        q = p.with_mb(k)
        nm = lambda n, k=k: "%s_mb%d" % (n, k)
        fwd = layer_forward(q, xs[k], w, name=nm)
        losses.append(loss_forward(q, fwd["a"]))
        da = q.tag(nm("da"), loss_backward(q, fwd["a"], dloss,
                                           seed_scale=1.0 / (DP * MB)))
        _, dw = layer_backward(q, fwd, da, name=nm, need_dx=False)
        if not (drop_mb1_grad and k == 1):
            q.accumulate("dw", dw)
    p.output("loss", average_losses(p, losses, "dp"))
    dw = p.all_reduce(p.buffer_read("dw", (H, H), hint="dw_local"), "sum",
                      ["dp"], hint="dw")
    p.output("dw", dw)

    ranks = mesh.ranks()
    replicated(m, "w", (H, H), "w", ranks)
    replicated(m, "dloss", (), "dloss", ranks)
    replicated(m, "loss", (), "loss", ranks)
    replicated(m, "dw", (H, H), "dw", ranks)
    for r in ranks:
        for k in range(MB):
            lo = (r * MB + k) * b
            for n in ("x", "h", "a", "da", "dh"):
                m.lineage(n, [(lo, lo + b), (0, H)], [[("%s_mb%d" % (n, k), r)]])
    return m.render()


# ---------------------------------------------------------------------------
# 3. Pipeline parallel
# ---------------------------------------------------------------------------


def pp2(dp=1, wrong_peer=False):
    """2-stage pipeline, one linear+gelu layer per stage, 2 micro-batches in
    1F1B order (stage 0: f0 f1 b0 b1, stage 1: f0 b0 f1 b1).  Activations go
    forward and gradients backward with send/recv relative on the pp axis.
    With dp=2 the mesh is ["dp", "pp"] and weight gradients and the loss are
    reduced over dp.  `wrong_peer`: stage 1 receives micro-batch 1's
    activation from the hard-coded rank 0 (right only for dp replica 0)."""
    PP, MB, b, H = 2, 2, 2, 8
    B = dp * MB * b
    mesh = Mesh(["dp", "pp"], [dp, PP]) if dp > 1 else Mesh(["pp"], [PP])
    dp_axis = "dp" if dp > 1 else None
    title = ["2-stage pipeline, 2 layers (linear + gelu), 2 micro-batches,",
             "1F1B schedule, mean-of-squares loss on stage 1, gradient",
             "accumulation over micro-batches."]
    if dp > 1:
        title.append("Pipeline replicated dp=%d times; mesh [dp, pp]." % dp)
    if wrong_peer:
        title.append("MUTANT: a recv names a hard-coded peer rank.")
    m = Module(title, mesh, MB)

    s = m.spec
    x, dloss = s.input("x", (B, H)), s.input("dloss", ())
    w1, w2 = s.input("w1", (H, H)), s.input("w2", (H, H))
    f1 = layer_forward(s, x, w1, name=lambda n: "l0_" + n)
    f2 = layer_forward(s, f1["a"], w2, name=lambda n: "l1_" + n)
    s.output("loss", loss_forward(s, f2["a"]))
    da2 = s.tag("l1_da", loss_backward(s, f2["a"], dloss))
    da1, dw2 = layer_backward(s, f2, da2, name=lambda n: "l1_" + n)
    s.tag("l0_da", da1)
    _, dw1 = layer_backward(s, f1, da1, name=lambda n: "l0_" + n,
                            need_dx=False)
    s.output("dw1", dw1)
    s.output("dw2", dw2)

    def nm(layer, k):
        return lambda n: "l%d_%s_mb%d" % (layer, n, k)

    fwd_peer = dict(peer_axis="pp", peer_offset=1)
    bwd_peer = dict(peer_axis="pp", peer_offset=-1)

    # Stage 0: f0 f1 b0 b1.
    p = m.rank_program(mesh.ranks(pp=0))
    w1 = p.input("w1", (H, H))
    xs = [p.input("x_mb%d" % k, (b, H)) for k in range(MB)]
    fwds = []
    for k in range(MB):
        q = p.with_mb(k)
        fwds.append(layer_forward(q, xs[k], w1, name=nm(0, k)))
        q.send(fwds[k]["a"], **fwd_peer)
    for k in range(MB):
        q = p.with_mb(k)
        da = q.tag(nm(0, k)("da"), q.recv((b, H), hint="da", **fwd_peer))
        _, dw = layer_backward(q, fwds[k], da, name=nm(0, k), need_dx=False)
        q.accumulate("dw1", dw)
    dw1 = p.buffer_read("dw1", (H, H), hint="dw1_local")
    if dp_axis:
        dw1 = p.all_reduce(dw1, "sum", [dp_axis], hint="dw1")
    p.output("dw1", dw1)

    # Stage 1: f0 b0 f1 b1.
    p = m.rank_program(mesh.ranks(pp=1))
    w2, dloss = p.input("w2", (H, H)), p.input("dloss", ())
    losses = []
    for k in range(MB):
        q = p.with_mb(k)
        peer = dict(bwd_peer)
        if wrong_peer and k == 1:
            peer = dict(peer=mesh.rank(dp=0, pp=0))
        a1 = q.tag(nm(0, k)("a_recv"), q.recv((b, H), hint="a1", **peer))
        f = layer_forward(q, a1, w2, name=nm(1, k))
        losses.append(loss_forward(q, f["a"]))
        da2 = q.tag(nm(1, k)("da"), loss_backward(q, f["a"], dloss,
                                                  seed_scale=1.0 / (dp * MB)))
        da1, dw = layer_backward(q, f, da2, name=nm(1, k))
        q.send(da1, **bwd_peer)
        q.accumulate("dw2", dw)
    p.output("loss", average_losses(p, losses, dp_axis))
    dw2 = p.buffer_read("dw2", (H, H), hint="dw2_local")
    if dp_axis:
        dw2 = p.all_reduce(dw2, "sum", [dp_axis], hint="dw2")
    p.output("dw2", dw2)

    st0, st1 = mesh.ranks(pp=0), mesh.ranks(pp=1)
    replicated(m, "w1", (H, H), "w1", st0)
    replicated(m, "dw1", (H, H), "dw1", st0)
    replicated(m, "w2", (H, H), "w2", st1)
    replicated(m, "dw2", (H, H), "dw2", st1)
    replicated(m, "dloss", (), "dloss", st1)
    replicated(m, "loss", (), "loss", st1)
    for d in range(dp):
        r0, r1 = mesh.rank(dp=d, pp=0), mesh.rank(dp=d, pp=1)
        for k in range(MB):
            rows = ((d * MB + k) * b, (d * MB + k + 1) * b)
            box = [rows, (0, H)]
            m.lineage("x", box, [[("x_mb%d" % k, r0)]])
            m.lineage("l0_h", box, [[("l0_h_mb%d" % k, r0)]])
            # The activation crossing the stage boundary: a replica on each
            # side.
            m.lineage("l0_a", box, [[("l0_a_mb%d" % k, r0)],
                                    [("l0_a_recv_mb%d" % k, r1)]])
            m.lineage("l0_da", box, [[("l0_da_mb%d" % k, r0)]])
            m.lineage("l0_dh", box, [[("l0_dh_mb%d" % k, r0)]])
            for n in ("h", "a", "da", "dh"):
                m.lineage("l1_" + n, box, [[("l1_%s_mb%d" % (n, k), r1)]])
    return m.render()


# ---------------------------------------------------------------------------
# 4. The demo: dp x pp x tp
# ---------------------------------------------------------------------------


def demo(drop_dp_allreduce_of=None):
    """dp=2 x pp=2 x tp=2, 2 micro-batches, one residual Megatron MLP block
    per pipeline stage, hidden 128, ffn 256, 4 tokens per micro-batch,
    mean-of-squares loss, full backward, accumulation over micro-batches,
    all_reduce over dp of the weight gradients.

    drop_dp_allreduce_of: the name of one weight gradient whose dp
    all_reduce becomes a tv.copy (mutant)."""
    DP, PP, TP, MB = 2, 2, 2, 2
    T, H, F = 4, 128, 256
    B = DP * MB * T
    Fs = F // TP
    mesh = Mesh(["dp", "pp", "tp"], [DP, PP, TP])
    title = ["The demo: dp=2 x pp=2 x tp=2 (8 ranks), 2 micro-batches, 2",
             "layers (one per pipeline stage), each a residual Megatron MLP",
             "x + MLP(x) with hidden 128 and ffn 256 split over tp;",
             "mean-of-squares loss, 1F1B pipeline schedule, gradient",
             "accumulation over micro-batches, dp all_reduce of weight",
             "gradients."]
    if drop_dp_allreduce_of:
        title.append("MUTANT: the dp all_reduce of %s is a copy." %
                     drop_dp_allreduce_of)
    m = Module(title, mesh, MB)

    # Spec: the whole batch on one device.
    s = m.spec
    x, dloss = s.input("x", (B, H)), s.input("dloss", ())
    ws = [(s.input("l%d_w1" % l, (F, H)), s.input("l%d_w2" % l, (H, F)))
          for l in range(PP)]
    fwds, act = [], x
    for l in range(PP):
        f = residual_forward(s, act, ws[l][0], ws[l][1],
                             name=lambda n, l=l: "l%d_%s" % (l, n))
        act = s.tag("l%d_y" % l, f["y"])
        fwds.append(f)
    s.output("loss", loss_forward(s, act))
    dy = s.tag("l%d_dy" % (PP - 1), loss_backward(s, act, dloss))
    grads = {}
    for l in reversed(range(PP)):
        dx, dw1, dw2 = residual_backward(s, fwds[l], dy,
                                         name=lambda n, l=l: "l%d_%s" % (l, n),
                                         need_dx=l > 0)
        grads[l] = (dw1, dw2)
        if l > 0:
            dy = s.tag("l%d_dy" % (l - 1), dx)
    for l in range(PP):
        s.output("d_l%d_w1" % l, grads[l][0])
        s.output("d_l%d_w2" % l, grads[l][1])

    def nm(l, k):
        return lambda n: "l%d_%s_mb%d" % (l, n, k)

    def reduce_grad(p, buf, shape):
        g = p.buffer_read(buf, shape, hint=buf + "_local")
        if buf == drop_dp_allreduce_of:
            g = p.copy(g, hint=buf)
        else:
            g = p.all_reduce(g, "sum", ["dp"], hint=buf)
        p.output(buf, g)

    nxt = dict(peer_axis="pp", peer_offset=1)
    prv = dict(peer_axis="pp", peer_offset=-1)

    # Pipeline stage 0 (layer 0): f0 f1 b0 b1.
    p = m.rank_program(mesh.ranks(pp=0))
    w1, w2 = p.input("l0_w1", (Fs, H)), p.input("l0_w2", (H, Fs))
    xs = [p.input("x_mb%d" % k, (T, H)) for k in range(MB)]
    fwds = []
    for k in range(MB):
        q = p.with_mb(k)
        f = residual_forward(q, xs[k], w1, w2, tp="tp", name=nm(0, k))
        q.tag(nm(0, k)("y"), f["y"])
        q.send(f["y"], **nxt)
        fwds.append(f)
    for k in range(MB):
        q = p.with_mb(k)
        dy = q.tag(nm(0, k)("dy"), q.recv((T, H), hint="dy", **nxt))
        _, dw1, dw2 = residual_backward(q, fwds[k], dy, tp="tp",
                                        name=nm(0, k), need_dx=False)
        q.accumulate("d_l0_w1", dw1)
        q.accumulate("d_l0_w2", dw2)
    reduce_grad(p, "d_l0_w1", (Fs, H))
    reduce_grad(p, "d_l0_w2", (H, Fs))

    # Pipeline stage 1 (layer 1 and the loss): f0 b0 f1 b1.
    p = m.rank_program(mesh.ranks(pp=1))
    w1, w2 = p.input("l1_w1", (Fs, H)), p.input("l1_w2", (H, Fs))
    dloss = p.input("dloss", ())
    losses = []
    for k in range(MB):
        q = p.with_mb(k)
        y0 = q.tag(nm(0, k)("y_recv"), q.recv((T, H), hint="y0", **prv))
        f = residual_forward(q, y0, w1, w2, tp="tp", name=nm(1, k))
        y1 = q.tag(nm(1, k)("y"), f["y"])
        losses.append(loss_forward(q, y1))
        dy = q.tag(nm(1, k)("dy"), loss_backward(q, y1, dloss,
                                                 seed_scale=1.0 / (DP * MB)))
        dx, dw1, dw2 = residual_backward(q, f, dy, tp="tp", name=nm(1, k))
        q.tag(nm(0, k)("dy_send"), dx)
        q.send(dx, **prv)
        q.accumulate("d_l1_w1", dw1)
        q.accumulate("d_l1_w2", dw2)
    p.output("loss", average_losses(p, losses, "dp"))
    reduce_grad(p, "d_l1_w1", (Fs, H))
    reduce_grad(p, "d_l1_w2", (H, Fs))

    # Lineages.
    st1 = mesh.ranks(pp=1)
    replicated(m, "dloss", (), "dloss", st1)
    replicated(m, "loss", (), "loss", st1)
    for l in range(PP):
        for t in range(TP):
            rows = (t * Fs, (t + 1) * Fs)
            holders = mesh.ranks(pp=l, tp=t)  # the dp replicas
            for n in ("w1", "d_w1"):
                spec = "l%d_w1" % l if n == "w1" else "d_l%d_w1" % l
                m.lineage(spec, [rows, (0, H)], [[(spec, r)] for r in holders])
            for n in ("w2", "d_w2"):
                spec = "l%d_w2" % l if n == "w2" else "d_l%d_w2" % l
                m.lineage(spec, [(0, H), rows], [[(spec, r)] for r in holders])
    for d in range(DP):
        for k in range(MB):
            toks = ((d * MB + k) * T, (d * MB + k + 1) * T)
            st = [mesh.ranks(dp=d, pp=l) for l in range(PP)]
            m.lineage("x", [toks, (0, H)], [[("x_mb%d" % k, r)] for r in st[0]])
            # Stage boundary tensors: replicated over tp, and a replica on
            # each side of the send.
            m.lineage("l0_y", [toks, (0, H)],
                      [[("l0_y_mb%d" % k, r)] for r in st[0]] +
                      [[("l0_y_recv_mb%d" % k, r)] for r in st[1]])
            m.lineage("l0_dy", [toks, (0, H)],
                      [[("l0_dy_mb%d" % k, r)] for r in st[0]] +
                      [[("l0_dy_send_mb%d" % k, r)] for r in st[1]])
            for l in range(PP):
                if l > 0:
                    for n in ("y", "dy"):
                        m.lineage("l%d_%s" % (l, n), [toks, (0, H)],
                                  [[("l%d_%s_mb%d" % (l, n, k), r)]
                                   for r in st[l]])
                for t in range(TP):
                    r = mesh.rank(dp=d, pp=l, tp=t)
                    cols = (t * Fs, (t + 1) * Fs)
                    for n in ("h", "a", "da", "dh"):
                        m.lineage("l%d_%s" % (l, n), [toks, cols],
                                  [[("l%d_%s_mb%d" % (l, n, k), r)]])
    return m.render()


# ---------------------------------------------------------------------------
# Driver
# ---------------------------------------------------------------------------

EXAMPLES = {
    "tp_mlp.mlir": lambda: tp_mlp(),
    "dp_microbatch.mlir": lambda: dp_microbatch(),
    "pp2.mlir": lambda: pp2(),
    "dp2_pp2_tp2.mlir": lambda: demo(),
}

MUTANTS = {
    "tp_mlp_missing_allreduce.mlir": lambda: tp_mlp("missing_allreduce"),
    "tp_mlp_allreduce_as_allgather.mlir": lambda: tp_mlp("allgather"),
    "tp_mlp_wrong_const_one_rank.mlir":
        lambda: tp_mlp(shift=0.5, rank_shift={0: 0.5, 1: 0.75}),
    "tp_mlp_wrong_scale.mlir": lambda: tp_mlp("wrong_scale"),
    "dp_dropped_microbatch.mlir": lambda: dp_microbatch(drop_mb1_grad=True),
    "pp2_swapped_peer.mlir": lambda: pp2(dp=2, wrong_peer=True),
    "demo_missing_grad_allreduce.mlir":
        lambda: demo(drop_dp_allreduce_of="d_l0_w2"),
}

# Correct programs the mutants that are not a copy of an example differ from.
BASES = {
    "tp_mlp_shift_per_rank.mlir":
        lambda: tp_mlp(shift=0.5, rank_shift={0: 0.5, 1: 0.5}),
    "pp2_dp2.mlir": lambda: pp2(dp=2),
}


def write(directory, files):
    os.makedirs(directory, exist_ok=True)
    for name, gen in files.items():
        path = os.path.join(directory, name)
        with open(path, "w") as f:
            f.write(gen())
        print("wrote", os.path.relpath(path))


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=os.path.dirname(here),
                    help="repository root (default: %(default)s)")
    ap.add_argument("--bases", metavar="DIR",
                    help="also write the correct bases of the mutants here")
    args = ap.parse_args()
    write(os.path.join(args.root, "examples"), EXAMPLES)
    write(os.path.join(args.root, "test", "Examples", "Inputs"), MUTANTS)
    if args.bases:
        write(args.bases, BASES)


if __name__ == "__main__":
    main()

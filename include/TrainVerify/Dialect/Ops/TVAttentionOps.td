//===- TVAttentionOps.td -----------------------------------*- tablegen -*-===//
#ifndef TV_ATTENTION_OPS_TD
#define TV_ATTENTION_OPS_TD

include "TrainVerify/Dialect/TVComputeBase.td"

def TV_RotaryOp : TV_ComputeOp<"rotary", [
      DeclareOpInterfaceMethods<TV_ShapeRuleOpInterface>,
      DeclareOpInterfaceMethods<TV_SymmetryRuleOpInterface>,
      Pure]> {
  let summary = "Rotary position embedding (Llama3 reference, interleaved pairs)";
  let description = [{
    `input` is `[..., s, d]` with `d` even; `cos` and `sin` are `[s, d/2]`.
    For each pair `(x0, x1) = (x[..., 2i], x[..., 2i+1])`:
    `y[2i] = x0 cos - x1 sin`, `y[2i+1] = x0 sin + x1 cos`, which is the
    complex product of `torch.view_as_complex` in `apply_rotary_emb`.
  }];
  let arguments = (ins TV_FloatTensor:$input, TV_FloatTensor:$cos,
                       TV_FloatTensor:$sin);
  let results = (outs TV_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $cos `,` $sin attr-dict `:` type($input) `,` type($cos) `,`
    type($sin) `->` type($result)
  }];
  let hasVerifier = 1;
}

def TV_CausalMaskOp : TV_ComputeOp<"causal_mask", [
      DeclareOpInterfaceMethods<TV_ShapeRuleOpInterface>,
      Pure]> {
  let summary = "Creates a causal mask";
  let description = [{
    A `[s_q, s_k]` i1 tensor, true where key position `j <= i + offset`
    (offset = s_k - s_q, so the last query sees every key). With `window`
    (Mistral's sliding window), also `i + offset - j < window`: a query sees
    only the `window` most recent keys, itself included. A windowed mask
    keeps its sizes under shape reduction (the window is not a ratio).
    With `query_axis` (context parallelism that all-gathers keys and
    values) the queries are the rank's block of the sequence: `offset` is
    the rank's coordinate on that mesh axis times `s_q`, and `s_k` is the
    axis size times `s_q` (the whole sequence).
    With `query_chunks`, `key_chunks` and `chunk_size` (the load-balanced
    sequence order of context parallelism) the queries and keys are chunks
    of `chunk_size` positions of the sequence, in the order listed: query
    `i` is at position `query_chunks[i / chunk_size] * chunk_size + i %
    chunk_size`, keys likewise, and the mask is true where the key's
    position is at most the query's.
  }];
  let arguments = (ins OptionalAttr<I64Attr>:$window,
                       OptionalAttr<StrAttr>:$query_axis,
                       OptionalAttr<DenseI64ArrayAttr>:$query_chunks,
                       OptionalAttr<DenseI64ArrayAttr>:$key_chunks,
                       OptionalAttr<I64Attr>:$chunk_size);
  let results = (outs RankedTensorOf<[I1]>:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def TV_ApplyMaskOp : TV_ComputeOp<"apply_mask", [
      DeclareOpInterfaceMethods<TV_ShapeRuleOpInterface>,
      DeclareOpInterfaceMethods<TV_SymmetryRuleOpInterface>,
      Pure]> {
  let summary = "Keeps scores where the mask is true, -inf elsewhere";
  let description = [{
    `result = mask ? input : -inf`; the mask `[s_q, s_k]` broadcasts over the
    leading dimensions of `input` `[..., s_q, s_k]`. `exp(-inf) = 0`.
  }];
  let arguments = (ins TV_FloatTensor:$input, RankedTensorOf<[I1]>:$mask);
  let results = (outs TV_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $mask attr-dict `:` type($input) `,` type($mask) `->` type($result)
  }];
  let hasVerifier = 1;
}

def TV_RotaryGradOp : TV_ComputeOp<"rotary_grad", [
      DeclareOpInterfaceMethods<TV_ShapeRuleOpInterface>,
      DeclareOpInterfaceMethods<TV_SymmetryRuleOpInterface>,
      DeclareOpInterfaceMethods<TV_GradOpInterface>,
      Pure]> {
  let summary = "VJP of rotary: rotation of dy by -theta";
  let description = [{
    `dx[2i] = dy0 cos + dy1 sin`, `dx[2i+1] = -dy0 sin + dy1 cos`.
  }];
  let arguments = (ins TV_FloatTensor:$grad, TV_FloatTensor:$cos,
                       TV_FloatTensor:$sin);
  let results = (outs TV_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `,` $cos `,` $sin attr-dict `:` type($grad) `,` type($cos) `,`
    type($sin) `->` type($result)
  }];
  let hasVerifier = 1;
}

def TV_ApplyMaskGradOp : TV_ComputeOp<"apply_mask_grad", [
      DeclareOpInterfaceMethods<TV_ShapeRuleOpInterface>,
      DeclareOpInterfaceMethods<TV_SymmetryRuleOpInterface>,
      DeclareOpInterfaceMethods<TV_GradOpInterface>,
      Pure]> {
  let summary = "VJP of apply_mask: dy where the mask is true, 0 elsewhere";
  let arguments = (ins TV_FloatTensor:$grad, RankedTensorOf<[I1]>:$mask);
  let results = (outs TV_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `,` $mask attr-dict `:` type($grad) `,` type($mask) `->` type($result)
  }];
  let hasVerifier = 1;
}

#endif // TV_ATTENTION_OPS_TD

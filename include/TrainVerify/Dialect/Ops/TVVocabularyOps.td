//===- TVVocabularyOps.td ----------------------------------*- tablegen -*-===//
#ifndef TV_VOCABULARY_OPS_TD
#define TV_VOCABULARY_OPS_TD

include "TrainVerify/Dialect/TVComputeBase.td"

def TV_EmbeddingOp : TV_ComputeOp<"embedding", [
      DeclareOpInterfaceMethods<TV_ShapeRuleOpInterface>,
      DeclareOpInterfaceMethods<TV_SymmetryRuleOpInterface>,
      Pure]> {
  let summary = "Embedding lookup, optionally vocab-parallel";
  let description = [{
    `result[i..., :] = table[ids[i...] - offset, :]` when the row is inside
    the table, zero otherwise. `offset` is `vocab_offset` when given (the
    first vocabulary row this shard holds), or, with `vocab_axis`, the rank's
    coordinate on that mesh axis times the table's row count (the
    vocab-parallel embedding of Megatron-LM), or 0.
  }];
  let arguments = (ins TV_IdTensor:$ids, TV_FloatTensor:$table,
                       OptionalAttr<StrAttr>:$vocab_axis,
                       OptionalAttr<I64Attr>:$vocab_offset);
  let results = (outs TV_FloatTensor:$result);
  let assemblyFormat = [{
    $ids `,` $table attr-dict `:` type($ids) `,` type($table) `->` type($result)
  }];
  let hasVerifier = 1;
}

def TV_CrossEntropyOp : TV_ComputeOp<"cross_entropy", [
      DeclareOpInterfaceMethods<TV_ShapeRuleOpInterface>,
      Pure]> {
  let summary = "Mean cross-entropy of logits against integer labels";
  let description = [{
    `logits` `[n, v]`, `labels` `[n]`; the result is the rank-0
    `mean_i (log(sum_j exp(logits[i, j])) - logits[i, labels[i]])`.
  }];
  let arguments = (ins TV_FloatTensor:$logits, TV_IdTensor:$labels);
  let results = (outs TV_FloatTensor:$result);
  let assemblyFormat = [{
    $logits `,` $labels attr-dict `:` type($logits) `,` type($labels) `->`
    type($result)
  }];
  let hasVerifier = 1;
}

def TV_EmbeddingGradOp : TV_ComputeOp<"embedding_grad", [
      DeclareOpInterfaceMethods<TV_ShapeRuleOpInterface>,
      DeclareOpInterfaceMethods<TV_SymmetryRuleOpInterface>,
      DeclareOpInterfaceMethods<TV_GradOpInterface>,
      Pure]> {
  let summary = "VJP of embedding: scatter-add of dy into the table rows";
  let description = [{
    `result[r, :] = sum over positions p with ids[p] - offset == r of dy[p, :]`
    with `offset` as in `tv.embedding`; the result type gives the table shape.
  }];
  let arguments = (ins TV_IdTensor:$ids, TV_FloatTensor:$grad,
                       OptionalAttr<StrAttr>:$vocab_axis,
                       OptionalAttr<I64Attr>:$vocab_offset);
  let results = (outs TV_FloatTensor:$result);
  let assemblyFormat = [{
    $ids `,` $grad attr-dict `:` type($ids) `,` type($grad) `->` type($result)
  }];
  let hasVerifier = 1;
}

def TV_CrossEntropyGradOp : TV_ComputeOp<"cross_entropy_grad", [
      DeclareOpInterfaceMethods<TV_ShapeRuleOpInterface>,
      DeclareOpInterfaceMethods<TV_GradOpInterface>,
      Pure]> {
  let summary = "VJP of cross_entropy: (softmax(logits) - onehot) * dloss / n";
  let arguments = (ins TV_FloatTensor:$logits, TV_IdTensor:$labels,
                       TV_FloatTensor:$grad);
  let results = (outs TV_FloatTensor:$result);
  let assemblyFormat = [{
    $logits `,` $labels `,` $grad attr-dict `:` type($logits) `,` type($labels)
    `,` type($grad) `->` type($result)
  }];
  let hasVerifier = 1;
}

def TV_TargetLogitOp : TV_ComputeOp<"target_logit", [
      DeclareOpInterfaceMethods<TV_ShapeRuleOpInterface>,
      Pure]> {
  let summary = "Each row's logit at its label, optionally vocab-parallel";
  let description = [{
    `logits` `[n, v]`, `labels` `[n]`: `result[i] = logits[i, labels[i] -
    offset]` when that column is inside this shard, zero otherwise, with
    `offset` as in `tv.embedding` (`vocab_offset`, or the rank's coordinate
    on `vocab_axis` times `v`, or 0). Megatron-LM's vocabulary-parallel
    cross-entropy computes the predicted logit this way on every rank of
    the tensor-parallel group and all-reduces the sum: exactly one shard
    holds each label.
  }];
  let arguments = (ins TV_FloatTensor:$logits, TV_IdTensor:$labels,
                       OptionalAttr<StrAttr>:$vocab_axis,
                       OptionalAttr<I64Attr>:$vocab_offset);
  let results = (outs TV_FloatTensor:$result);
  let assemblyFormat = [{
    $logits `,` $labels attr-dict `:` type($logits) `,` type($labels) `->`
    type($result)
  }];
  let hasVerifier = 1;
}

def TV_TargetLogitGradOp : TV_ComputeOp<"target_logit_grad", [
      DeclareOpInterfaceMethods<TV_ShapeRuleOpInterface>,
      DeclareOpInterfaceMethods<TV_GradOpInterface>,
      Pure]> {
  let summary = "VJP of target_logit: dy placed at each row's label column";
  let description = [{
    `result[i, j] = grad[i]` when `labels[i] - offset == j`, zero otherwise
    (`offset` as in `tv.target_logit`); the result type gives `[n, v]`.
  }];
  let arguments = (ins TV_IdTensor:$labels, TV_FloatTensor:$grad,
                       OptionalAttr<StrAttr>:$vocab_axis,
                       OptionalAttr<I64Attr>:$vocab_offset);
  let results = (outs TV_FloatTensor:$result);
  let assemblyFormat = [{
    $labels `,` $grad attr-dict `:` type($labels) `,` type($grad) `->`
    type($result)
  }];
  let hasVerifier = 1;
}

def TV_VocabMaskOp : TV_ComputeOp<"vocab_mask", [
      DeclareOpInterfaceMethods<TV_ShapeRuleOpInterface>,
      Pure]> {
  let summary = "Which logit columns are real vocabulary entries (not padding)";
  let description = [{
    A `[n, v]` i1 tensor, true at column `j` when `offset + j < vocab_size`,
    with `offset` as in `tv.embedding` (`vocab_offset`, or the rank's
    coordinate on `vocab_axis` times `v`, or 0). Megatron-LM pads the
    vocabulary to a multiple of `make_vocab_size_divisible_by x tp`; the
    columns past `vocab_size` are padding, which `tv.apply_mask` with this
    mask keeps out of the softmax. `vocab_size` is a position in the
    vocabulary: shape reduction keeps its ratio to the vocabulary's size,
    like `vocab_offset`, so every shard keeps whether it is all real, all
    padding, or both.
  }];
  let arguments = (ins I64Attr:$vocab_size,
                       OptionalAttr<StrAttr>:$vocab_axis,
                       OptionalAttr<I64Attr>:$vocab_offset);
  let results = (outs RankedTensorOf<[I1]>:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
  let hasVerifier = 1;
}

#endif // TV_VOCABULARY_OPS_TD

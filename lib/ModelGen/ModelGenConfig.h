//===- ModelGenConfig.h - model and parallel configurations -----*- C++ -*-===//
//
// The configurations the model-config generator (ModelGen.h) reads: the
// model (`ModelCfg`, from a Hugging Face config.json or Meta's
// params.json, its keys audited in ModelConfigKeys.cpp) and the parallel
// configuration (`ParCfg`).
//
//===----------------------------------------------------------------------===//
#ifndef TRAINVERIFY_TRANSLATE_MODELGENCONFIG_H
#define TRAINVERIFY_TRANSLATE_MODELGENCONFIG_H

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace llvm::json {
class Object;
} // namespace llvm::json

namespace mlir::tv::modelgen {

//===----------------------------------------------------------------------===//
// Configuration
//===----------------------------------------------------------------------===//

struct ModelCfg {
  /// `V` is the vocabulary as the tables hold it, padded as Megatron-LM
  /// pads it; `vocab` the config's vocab_size (the real entries, V when
  /// nothing is padded).
  int64_t H = 0, L = 0, nh = 0, nkv = 0, I = 0, V = 0, vocab = 0;
  bool padded() const { return vocab && vocab < V; }
  double eps = 1e-5, theta = 500000.0;
  /// "llama" or "deepseek_v3" (MLA attention, MoE feed-forward).
  bool deepseek = false;
  // DeepSeek-V3: MLA and MoE.
  int64_t qLora = 0, kvLora = 0, dRope = 0, dNope = 0, dV = 0;
  int64_t nExperts = 0, topK = 0, nShared = 0, moeI = 0, firstDense = 0;
  /// Qwen2 / Qwen2.5 (model_type "qwen2"): the Llama architecture with a
  /// bias on the q, k and v projections.
  bool qkvBias = false;
  /// Mistral (model_type "mistral"): the Llama architecture; its
  /// `sliding_window` (0: none) limits every query to that many keys.
  bool mistral = false;
  int64_t window = 0;
  /// Phi-3 (model_type "phi3"): Mistral's model under another name.
  bool phi3 = false;
  /// Qwen3 (model_type "qwen3"): RMSNorm of every query and key head over
  /// the head dimension (`q_norm`, `k_norm`) before RoPE, and `head_dim`
  /// (0: hidden / heads), which may differ from hidden / heads.
  bool qkNorm = false;
  int64_t headDim = 0;
  /// Mixtral (model_type "mixtral"): Mistral's attention and, in every
  /// layer, a mixture of `nExperts` SwiGLU experts of `moeI` =
  /// intermediate_size, `topK` of them per token (softmax, top-k,
  /// renormalized), no shared expert.
  bool mixtral = false;
  bool moe() const { return deepseek || mixtral; }
  /// Gemma 2 (model_type "gemma2", ModelGenGemma.cpp): GeGLU (tanh GELU),
  /// (1 + w) RMSNorms and post-attention / post-feedforward norms,
  /// embeddings scaled by sqrt(hidden), scores scaled by `qScalar`^-0.5 and
  /// soft-capped by `attnCap`, logits soft-capped by `finalCap` (0: none),
  /// a `localWindow` on even layers (0: none), global odd layers.
  bool gemma2 = false;
  double qScalar = 0, attnCap = 0, finalCap = 0;
  int64_t localWindow = 0;
  /// The config's `rope_scaling` (JSON), empty if none: it changes the
  /// values of the RoPE tables, which are inputs of the step.
  std::string ropeScaling;
  /// `tie_word_embeddings`: the LM head is the token embedding. Under
  /// pipeline parallelism the last stage holds a copy whose gradient is
  /// all-reduced with the first stage's (Megatron's embedding group).
  bool tied = false;
};

/// Audits every key of a model config (ModelConfigKeys.cpp): each refused
/// key is appended to `errs` as (key, message); `meta`: Meta's params.json.
void auditModelKeys(const llvm::json::Object &o, ModelCfg &c, bool meta,
                    std::vector<std::pair<std::string, std::string>> &errs);

struct ParCfg {
  int64_t dp = 1, tp = 1, pp = 1, mb = 1, ep = 1;
  bool sp = false;
  int64_t zero = 0;
  /// ZeRO-3: the next layer's all-gathers launched asynchronously before
  /// the current layer computes, waited at first use (FSDP's prefetch).
  bool fsdpPrefetch = false;
  /// All-gather the logits instead of the vocabulary-parallel loss.
  bool gatherLogits = false;
  /// DeepSpeed / torchtitan: each rank's backward starts from the mean of
  /// its own loss (activation gradients dp times the spec's, lineages
  /// scaled 1/dp); gradients and the reported loss are averaged over dp.
  bool perRankLoss = false;
  /// The optimizer step: Adam (moments exp_avg / exp_avg_sq, sharded with
  /// the parameter under ZeRO as Megatron's distributed optimizer shards
  /// them) instead of SGD. With Adam the step is generated without ZeRO too.
  bool adam = false;
  /// Interleaved 1F1B (Megatron's virtual pipeline): each pipeline rank
  /// holds `vpp` non-contiguous chunks of layers (1: plain 1F1B).
  int64_t vpp = 1;
  /// Context parallelism: the sequence split over `cp` ranks (contiguous
  /// chunks); attention exchanges with an all-to-all from sequence- to
  /// head-sharded and back (`cpA2A`: DeepSpeed-Ulysses, Transformer
  /// Engine's "a2a") or all-gathers keys and values (torchtitan, the
  /// Llama 3 paper; Transformer Engine's "all_gather").
  int64_t cp = 1;
  bool cpA2A = false, cpRing = false;
  /// The load-balanced sequence order of the ring (Megatron-LM's
  /// get_batch_on_this_cp_rank, ring-flash-attention's zigzag): 2 x cp
  /// chunks, rank r holding chunks r and 2 x cp - 1 - r.
  bool cpBalance = false;
  /// Transformer Engine's overlapped ring: the next block's receive is
  /// launched asynchronously before the current block computes.
  bool cpOverlap = false;
  /// Megatron-LM's distributed optimizer (--use-distributed-optimizer): the
  /// gradients of a bucket of parameters live in one flat buffer (reverse
  /// parameter order, each start aligned to 64 elements, the bucket padded
  /// to a multiple of lcm(dp x cp, 128)); each rank of the data-parallel
  /// group owns one contiguous 1/(dp x cp) of it, whatever parameter
  /// boundaries fall inside. `bucketSize`: --ddp-bucket-size, in elements.
  bool distOpt = false;
  int64_t bucketSize = 0;
  /// Megatron-LM's --overlap-grad-reduce and --overlap-param-gather on the
  /// distributed optimizer (decision 115): each bucket's reduce-scatter
  /// launched asynchronously as soon as its last gradient is final, waited
  /// before the optimizer reads it; each bucket's parameter all-gather
  /// launched after its step, waited at the parameters' next use.
  bool overlapGrad = false, overlapParam = false;
  /// Mixed-precision loss scaling (decision 113): the backward starts from
  /// the loss times a scale, the gradients are divided by it before
  /// clipping and the step. `lossScale`: a constant (--loss-scale N), 0 for
  /// none; `dynamicLossScale`: the scale is a runtime scalar input, the
  /// same on every rank (--loss-scale dynamic).
  double lossScale = 0;
  bool dynamicLossScale = false;
  bool lossScaled() const { return lossScale > 0 || dynamicLossScale; }
  /// Global-norm gradient clipping (--clip-grad C, decision 114): every
  /// gradient times min(1, C / (norm + eps)); 0 for none.
  double clipGrad = 0;
};

} // namespace mlir::tv::modelgen

#endif

//===- ModelConfigKeys.cpp - every key of a model config accounted for ----===//
//
// --import-model-config reads a Hugging Face config.json or Meta's
// params.json. Each key is modeled, inert (metadata, tokenizer ids,
// inference settings), accepted at the value tv's model has, or refused by
// name: tv must never prove a model other than the one it was given
// (docs/decisions.md 50, 84). Every refused key is reported in one run.
//
//===----------------------------------------------------------------------===//
#include "ModelGen.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"
#include <map>
#include <optional>
#include <set>
#include <string>

using namespace mlir;
using namespace mlir::tv::modelgen;
namespace json = llvm::json;

/// Keys that change one training step and that tv does not model (in the
/// family at hand): refused with what they do, since removing them would
/// verify a different model than the config's.
static const std::map<std::string, std::string> &trainingKeys() {
  static const std::map<std::string, std::string> keys = {
      {"num_local_experts", "Mixtral's mixture of experts"},
      {"num_experts", "a mixture of experts"},
      {"n_routed_experts", "a mixture of experts"},
      {"num_experts_per_tok", "top-k routing over experts"},
      {"n_shared_experts", "shared experts"},
      {"moe_intermediate_size", "a mixture of experts"},
      {"shared_expert_intermediate_size", "a shared expert"},
      {"decoder_sparse_step", "mixture-of-experts layers"},
      {"mlp_only_layers", "mixture-of-experts layers"},
      {"first_k_dense_replace", "mixture-of-experts layers"},
      {"norm_topk_prob", "renormalized routing weights"},
      {"final_logit_softcapping", "tanh soft-capping of the final logits"},
      {"attn_logit_softcapping", "tanh soft-capping of the attention scores"},
      {"query_pre_attn_scalar",
       "queries scaled by its inverse square root, not head_dim's"},
      {"sliding_window_pattern", "sliding-window and global layers"},
      {"sliding_window_size", "sliding-window attention"},
      {"layer_types", "per-layer attention kinds"},
      {"rope_local_base_freq", "a second RoPE base for local layers"},
      {"use_qk_norm", "norms of the queries and keys"},
      {"qk_layernorm", "norms of the queries and keys"},
      {"partial_rotary_factor", "rotary embeddings on part of each head"},
      {"rotary_pct", "rotary embeddings on part of each head"},
      {"logit_scale", "a scale of the logits"},
      {"logits_scaling", "a scale of the logits"},
      {"embedding_multiplier", "a scale of the embeddings"},
      {"residual_multiplier", "a scale of the residual branches"},
      {"attention_multiplier", "a scale of the attention scores"},
      {"parallel_residual", "attention and MLP in parallel"},
      {"use_parallel_residual", "attention and MLP in parallel"},
      {"layer_norm_eps", "LayerNorm"},
      {"layer_norm_epsilon", "LayerNorm"},
      {"norm_epsilon", "LayerNorm"},
      {"use_bias", "biases"},
      {"bias", "biases"}};
  return keys;
}

/// The family tv models for the config, as messages name it.
static const char *familyName(const ModelCfg &c) {
  return c.gemma2     ? "Gemma 2"
         : c.phi3     ? "Phi-3"
         : c.mixtral  ? "Mixtral"
         : c.deepseek ? "DeepSeek"
         : c.qkvBias  ? "Qwen2"
         : c.qkNorm   ? "Qwen3"
         : c.mistral  ? "Mistral"
                      : "Llama";
}

/// Every key of the config is modeled, allowed because it cannot change
/// the training step's math, or accepted only at the value tv's model has;
/// anything else is refused by name (docs/decisions.md 50): tv must never
/// prove a model other than the one it was given. Every refused key is
/// reported, as (key, message), in `errs`.
void mlir::tv::modelgen::auditModelKeys(
    const json::Object &o, ModelCfg &c, bool meta,
    std::vector<std::pair<std::string, std::string>> &errs) {
  static const std::set<std::string> modeledHF = {
      "model_type", "hidden_size", "num_hidden_layers", "num_attention_heads",
      "num_key_value_heads", "intermediate_size", "vocab_size",
      "rms_norm_eps", "rope_theta", "tie_word_embeddings"};
  static const std::set<std::string> modeledMeta = {
      "dim", "n_layers", "n_heads", "n_kv_heads", "vocab_size", "multiple_of",
      "ffn_dim_multiplier", "norm_eps", "rope_theta"};
  static const std::set<std::string> modeledDeepSeek = {
      "q_lora_rank", "kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim",
      "v_head_dim", "n_routed_experts", "num_experts_per_tok",
      "n_shared_experts", "moe_intermediate_size", "first_k_dense_replace"};
  static const std::set<std::string> modeledMixtral = {"num_local_experts",
                                                       "num_experts_per_tok"};
  // Metadata, tokenizer ids, inference settings, initialization and
  // deployment: none changes one training step on given weights and data.
  static const std::set<std::string> inert = {
      "architectures", "_name_or_path", "torch_dtype", "transformers_version",
      "use_cache", "bos_token_id", "eos_token_id", "pad_token_id",
      "initializer_range", "max_position_embeddings", "auto_map",
      "ep_size", "tokenizer_class", "return_dict", "output_attentions",
      "output_hidden_states", "max_seq_len", "cache_implementation",
      // LongRoPE's pre-training length: it selects the RoPE tables, which
      // are inputs of the step (as rope_scaling, decision 53).
      "original_max_position_embeddings"};
  // Dropout probabilities: inert at 0 (and a classifier head's at null).
  static const std::set<std::string> dropouts = {
      "attention_dropout", "hidden_dropout", "dropout", "embd_pdrop",
      "resid_pdrop", "attn_pdrop", "hidden_dropout_prob",
      "attention_probs_dropout_prob", "activation_dropout", "ffn_dropout",
      "classifier_dropout"};
  auto str = [](const json::Value &v) {
    std::string s;
    llvm::raw_string_ostream os(s);
    if (v.kind() == json::Value::Number && !v.getAsInteger())
      os << llvm::format("%g", *v.getAsNumber());
    else
      os << v;
    return s;
  };
  for (const auto &kv : o) {
    std::string key = kv.first.str();
    const json::Value &v = kv.second;
    if (meta ? modeledMeta.count(key) : modeledHF.count(key))
      continue;
    if (!meta && c.deepseek && modeledDeepSeek.count(key))
      continue;
    if (!meta && c.mixtral && modeledMixtral.count(key))
      continue;
    if (inert.count(key))
      continue;
    // Keys tv's model has at one value only.
    auto isFalse = [&] { return v.getAsBoolean() == std::optional<bool>(false); };
    auto isZero = [&] {
      std::optional<double> d = v.getAsNumber();
      return d && *d == 0.0;
    };
    auto isOne = [&] {
      std::optional<double> d = v.getAsNumber();
      return d && *d == 1.0;
    };
    bool ok = false;
    std::string want;
    if (key == "attention_bias" ||
        key == "mlp_bias" || key == "use_sliding_window") {
      ok = isFalse(), want = "false";
    } else if (c.gemma2 && (key == "hidden_act" || key == "hidden_activation")) {
      // GeGLU with the tanh approximation of GELU (ModelGenGemma.cpp).
      ok = v.getAsString() == std::optional<StringRef>("gelu_pytorch_tanh");
      want = "\"gelu_pytorch_tanh\"";
    } else if (c.gemma2 && key == "head_dim") {
      std::optional<int64_t> i = v.getAsInteger();
      ok = i && *i >= 2 && *i % 2 == 0 && *i <= (int64_t(1) << 16);
      want = "an even head dimension";
      if (ok)
        c.headDim = *i;
    } else if (c.gemma2 && key == "query_pre_attn_scalar") {
      std::optional<double> n = v.getAsNumber();
      ok = n && *n > 0, want = "a positive number";
      if (ok)
        c.qScalar = *n;
    } else if (c.gemma2 && (key == "attn_logit_softcapping" ||
                            key == "final_logit_softcapping")) {
      // null: no soft-capping, as Hugging Face reads it.
      std::optional<double> n = v.getAsNumber();
      ok = v.getAsNull().has_value() || (n && *n > 0);
      want = "null or a positive cap";
      double cap = n && *n > 0 ? *n : 0;
      (key == "attn_logit_softcapping" ? c.attnCap : c.finalCap) = cap;
    } else if (c.gemma2 && key == "sliding_window") {
      // The window of the even layers (Hugging Face's Gemma2: layer i
      // slides when i is even); the odd layers attend globally.
      std::optional<int64_t> w = v.getAsInteger();
      ok = w && *w >= 1, want = "a positive window";
      if (ok)
        c.localWindow = *w;
    } else if (c.gemma2 && key == "sliding_window_size") {
      // An older copy of sliding_window that Hugging Face does not read:
      // accepted when it agrees.
      ok = v.getAsInteger() == o.getInteger("sliding_window");
      want = "sliding_window's value";
    } else if (c.gemma2 && key == "layer_types") {
      // Accepted when it states Gemma 2's own alternation.
      const json::Array *arr = v.getAsArray();
      ok = arr != nullptr;
      for (size_t i = 0; arr && i < arr->size(); ++i)
        ok = ok && (*arr)[i].getAsString() ==
                       std::optional<StringRef>(i % 2 == 0 ? "sliding_attention"
                                                           : "full_attention");
      want = "sliding_attention on even layers, full_attention on odd ones";
    } else if (key == "hidden_act" || key == "hidden_activation") {
      ok = v.getAsString() == std::optional<StringRef>("silu"), want = "\"silu\"";
    } else if (key == "head_dim" && v.getAsNull()) {
      // null: hidden_size / num_attention_heads, as Hugging Face reads it.
      ok = true;
    } else if (key == "head_dim" && c.qkNorm) {
      // Qwen3: the head dimension is its own size (hidden / heads or not).
      std::optional<int64_t> i = v.getAsInteger();
      ok = i && *i >= 2 && *i % 2 == 0 && *i <= (int64_t(1) << 16);
      want = "an even head dimension";
      if (ok)
        c.headDim = *i;
    } else if (key == "head_dim" && !c.deepseek) {
      std::optional<int64_t> i = v.getAsInteger();
      ok = i && c.nh > 0 && *i * c.nh == c.H;
      want = c.nh > 0 ? std::to_string(c.H / std::max<int64_t>(c.nh, 1))
                      : "hidden_size / num_attention_heads";
    } else if (key == "rope_scaling" && !v.getAsNull()) {
      // Every rope type of Hugging Face's (Llama 3.1's "llama3", YaRN's
      // attention factor included) changes only the values of the cos /
      // sin tables, and the tables are inputs of the step that spec and
      // plan share: the proof holds for every table, the scaled one
      // included (docs/decisions.md 53). An unknown type is refused.
      static const std::set<std::string> types = {
          "default", "linear", "dynamic", "yarn", "longrope", "llama3"};
      const json::Object *r = v.getAsObject();
      std::optional<StringRef> t =
          r ? (r->getString("rope_type") ? r->getString("rope_type")
                                         : r->getString("type"))
            : std::nullopt;
      ok = t && types.count(t->str());
      want = "null or a Hugging Face rope type (default, linear, dynamic, "
             "yarn, longrope, llama3)";
      if (ok)
        c.ropeScaling = str(v);
    } else if ((c.mistral || c.mixtral) && key == "sliding_window") {
      // Modeled: the causal mask keeps the window's most recent keys.
      std::optional<int64_t> w = v.getAsInteger();
      ok = v.getAsNull().has_value() || (w && *w >= 1);
      want = "null or a positive window";
      if (w && *w >= 1)
        c.window = *w;
    } else if ((c.qkvBias || c.qkNorm) &&
               (key == "sliding_window" || key == "max_window_layers") &&
               o.getBoolean("use_sliding_window") != std::optional<bool>(true)) {
      // Qwen2 reads them only with use_sliding_window = true (its configs
      // state a window they do not use); use_sliding_window itself must be
      // false. Mistral applies any sliding_window: refused there.
      ok = true;
    } else if (key == "rope_scaling" || key == "sliding_window" ||
               key == "quantization_config") {
      ok = v.getAsNull().has_value(), want = "null";
    } else if (dropouts.count(key)) {
      ok = isZero() || (key == "classifier_dropout" && v.getAsNull());
      want = "0";
    } else if (key == "output_router_logits") {
      // Hugging Face adds the load-balancing loss (router_aux_loss_coef x
      // its aux loss) to the loss only with output_router_logits: true
      // (decision 84); tv does not model that loss.
      ok = isFalse(), want = "false: no load-balancing loss";
    } else if (c.mixtral && key == "router_aux_loss_coef") {
      // Unused unless output_router_logits is true (refused above).
      ok = isZero() || o.getBoolean("output_router_logits") !=
                           std::optional<bool>(true);
      want = "no load-balancing loss: 0, or output_router_logits false";
    } else if (key == "router_jitter_noise") {
      ok = isZero(), want = "0";
    } else if (key == "aux_loss_alpha" || key == "router_aux_loss_coef" ||
               key == "num_nextn_predict_layers") {
      ok = isZero(), want = "0";
    } else if (key == "pretraining_tp" || key == "moe_layer_freq") {
      ok = isOne(), want = "1";
    } else if (c.deepseek && key == "scoring_func") {
      // tv.topk_gate: the softmax of the k best logits, renormalized.
      ok = v.getAsString() == std::optional<StringRef>("softmax"),
      want = "\"softmax\"";
    } else if (c.deepseek && key == "topk_method") {
      ok = v.getAsString() == std::optional<StringRef>("greedy"),
      want = "\"greedy\"";
    } else if (c.deepseek && (key == "n_group" || key == "topk_group" ||
                              key == "routed_scaling_factor")) {
      ok = isOne(), want = "1";
    } else if (c.deepseek && key == "norm_topk_prob") {
      ok = v.getAsBoolean() == std::optional<bool>(true), want = "true";
    } else if (c.deepseek && key == "seq_aux") {
      ok = true; // only with aux_loss_alpha, which must be 0
    } else if (auto it = trainingKeys().find(key);
               it != trainingKeys().end()) {
      errs.push_back(
          {key, "key '" + key + "' is not modeled: it changes the training "
                "step (" + it->second + "), which tv's " + familyName(c) +
                " model does not have; removing it would verify a different "
                "model"});
      continue;
    } else {
      errs.push_back({key, "key '" + key + "' is not modeled: tv would prove "
                           "a model without it (remove it if it does not "
                           "apply to training)"});
      continue;
    }
    if (!ok)
      errs.push_back({key, "key '" + key + "' = " + str(v) +
                               " is not modeled (tv's " + familyName(c) +
                               " model has " + want + ")"});
  }
}

// Every built-in catalog entry against its model's published config.json:
// KV bytes per token and weight bytes, worked out by hand from the config
// figures quoted in the comments (sources: the Hugging Face config.json and
// model card of each repo named below). Also the MoE and MLA cost terms, the
// fp8 KV cache, and user catalogs (--model-file / --gpu-file).
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "sim/base/error.h"
#include "sim/cost/catalog.h"
#include "sim/cost/cost_model.h"
#include "sim/cost/kv_sizing.h"

using namespace prefixsim;
using Catch::Matchers::Contains;

namespace {

struct Published {
  const char* name;
  int64_t kv_bytes_per_token;  // at TP 1, in the model's dtype (bf16)
  int64_t weight_bytes;        // all weights as vLLM loads them
  double params_card;          // the model card's total parameter count
  double active_card;          // the model card's active count (0: dense)
};

// KV/token = 2 (K,V) x num_key_value_heads x head_dim x 2 bytes x num_hidden_layers,
// except DeepSeek-V3 (MLA): num_hidden_layers x (kv_lora_rank + qk_rope_head_dim) x 2.
// Weights = params x 2 bytes (bf16), except the fp8 / MXFP4 checkpoints.
const Published kPublished[] = {
    // meta-llama/Llama-3.1-8B-Instruct: 32 layers, 8 KV heads, head_dim 128; 8.03 B params
    {"llama-3.1-8b", 2 * 8 * 128 * 2 * 32, int64_t{8030261248} * 2, 8.03e9, 0},
    // meta-llama/Llama-3.1-70B-Instruct: 80 layers, 8 KV heads, 128; 70.6 B
    {"llama-3.1-70b", 2 * 8 * 128 * 2 * 80, int64_t{70553706496} * 2, 70.6e9, 0},
    // meta-llama/Llama-3.3-70B-Instruct: the same architecture; 70.6 B
    {"llama-3.3-70b", 2 * 8 * 128 * 2 * 80, int64_t{70553706496} * 2, 70.6e9, 0},
    // meta-llama/Llama-3.2-1B-Instruct: 16 layers, 8 KV heads, head_dim 64; 1.24 B (tied embeddings)
    {"llama-3.2-1b", 2 * 8 * 64 * 2 * 16, int64_t{1235814400} * 2, 1.24e9, 0},
    // meta-llama/Llama-3.2-3B-Instruct: 28 layers, 8 KV heads, head_dim 128; 3.21 B (tied)
    {"llama-3.2-3b", 2 * 8 * 128 * 2 * 28, int64_t{3212749824} * 2, 3.21e9, 0},
    // Qwen/Qwen2.5-7B-Instruct: 28 layers, 4 KV heads, 128; 7.61 B
    {"qwen2.5-7b", 2 * 4 * 128 * 2 * 28, int64_t{7615616512} * 2, 7.61e9, 0},
    // Qwen/Qwen3-8B: 36 layers, 8 KV heads, head_dim 128; 8.2 B
    {"qwen3-8b", 2 * 8 * 128 * 2 * 36, int64_t{8190735360} * 2, 8.2e9, 0},
    // Qwen/Qwen3-14B: 40 layers, 8 KV heads, 128; 14.8 B
    {"qwen3-14b", 2 * 8 * 128 * 2 * 40, int64_t{14768307200} * 2, 14.8e9, 0},
    // Qwen/Qwen3-32B: 64 layers, 8 KV heads, 128; 32.8 B
    {"qwen3-32b", 2 * 8 * 128 * 2 * 64, int64_t{32762123264} * 2, 32.8e9, 0},
    // meta-llama/Llama-2-7b-hf: 32 layers, 32 KV heads (no GQA), 128; 6.74 B (model card: 7B)
    {"llama-2-7b", 2 * 32 * 128 * 2 * 32, int64_t{6738415616} * 2, 6.74e9, 0},
    // meta-llama/Llama-2-70b-hf: 80 layers, 8 KV heads, 128; 68.98 B (model card: 70B)
    {"llama-2-70b", 2 * 8 * 128 * 2 * 80, int64_t{68976648192} * 2, 68.98e9, 0},
    // mistralai/Mistral-7B-Instruct-v0.3: 32 layers, 8 KV heads, 128; 7.25 B
    {"mistral-7b", 2 * 8 * 128 * 2 * 32, int64_t{7248023552} * 2, 7.25e9, 0},
    // Qwen/Qwen3-30B-A3B: 48 layers, 4 KV heads, 128; 30.5 B total, 3.3 B activated
    {"qwen3-30b-a3b", 2 * 4 * 128 * 2 * 48, int64_t{30532122624} * 2, 30.5e9, 3.3e9},
    // Qwen/Qwen3-235B-A22B: 94 layers, 4 KV heads, 128; 235 B total, 22 B activated
    {"qwen3-235b-a22b", 2 * 4 * 128 * 2 * 94, int64_t{235093634560} * 2, 235e9, 22e9},
    // deepseek-ai/DeepSeek-V3: 61 layers, kv_lora_rank 512, qk_rope_head_dim 64 (MLA);
    // 671 B total, 37 B activated; fp8 weights (1 byte + an fp32 scale per 128x128 block)
    {"deepseek-v3", 61 * (512 + 64) * 2, int64_t{673150582112}, 671e9, 37e9},
    // openai/gpt-oss-20b: 24 layers, 8 KV heads, head_dim 64; 20.9 B total, 3.6 B active
    // (card excludes the 0.58 B embedding); MXFP4 experts: 12.8 GiB checkpoint
    {"gpt-oss-20b", 2 * 8 * 64 * 2 * 24, int64_t{13761264768}, 20.9e9, 3.6e9 + 201088.0 * 2880},
    // openai/gpt-oss-120b: 36 layers, 8 KV heads, head_dim 64; 116.8 B total, 5.1 B active
    {"gpt-oss-120b", 2 * 8 * 64 * 2 * 36, int64_t{65248815744}, 116.8e9, 5.1e9 + 201088.0 * 2880},
    // mistralai/Mistral-Nemo-Instruct-2407: 40 layers, 8 KV heads, head_dim 128; 12.25 B
    {"mistral-nemo-12b", 2 * 8 * 128 * 2 * 40, int64_t{12247782400} * 2, 12.25e9, 0},
    // 01-ai/Yi-34B: 60 layers, 8 KV heads, 128; 34.39 B (model card: 34B)
    {"yi-34b", 2 * 8 * 128 * 2 * 60, int64_t{34388917248} * 2, 34.39e9, 0},
    // codellama/CodeLlama-34b-Instruct-hf: 48 layers, 8 KV heads, 128; 33.74 B (model card: 34B)
    {"codellama-34b", 2 * 8 * 128 * 2 * 48, int64_t{33743970304} * 2, 33.74e9, 0},
    // mistralai/Mixtral-8x7B-v0.1: 32 layers, 8 KV heads, 128; 46.7 B total, 12.9 B active
    {"mixtral-8x7b", 2 * 8 * 128 * 2 * 32, int64_t{46702792704} * 2, 46.7e9, 12.9e9},
    // RedHatAI/Llama-4-Scout-17B-16E-Instruct-FP8-dynamic: 48 layers, 8 KV heads, 128; the card's
    // 109 B total counts the 0.87 B vision tower, which text serving skips; 17 B active.
    // fp8 experts (1 byte + an fp32 scale per output channel), everything else bf16:
    // bf16 (2 x 202048 x 5120 + 5120 + 48 x (attention + router + 2 norms)) x 2
    //   + 48 x 17 experts x (3 x 5120 x 8192 + (8192 + 8192 + 5120) x 4)
    {"llama-4-scout-17b-16e-fp8", 2 * 8 * 128 * 2 * 48,
     (2LL * 202048 * 5120 + 5120 + 48LL * ((2LL * 5120 * 5120 + 2LL * 5120 * 1024) + 16 * 5120 + 2 * 5120)) * 2 +
         48LL * 17 * (3LL * 5120 * 8192 + (8192 + 8192 + 5120) * 4),
     109e9 - 0.87e9, 17e9},
};

std::string write_temp(const std::string& name, const std::string& text) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "prefixsim-test-catalog-entries";
  std::filesystem::create_directories(dir);
  const std::string p = (dir / name).string();
  std::ofstream(p) << text;
  return p;
}

const char* kUserModel =
    "models:\n"
    "  - name: my-moe\n"
    "    source: test\n"
    "    layers: 2\n"
    "    hidden: 64\n"
    "    heads: 4\n"
    "    kv_heads: 2\n"
    "    head_dim: 16\n"
    "    intermediate: 128\n"
    "    vocab: 1000\n"
    "    tied_embeddings: false\n"
    "    params: 1000000\n"
    "    active_params: 300000\n"
    "    dtype_bytes: 2\n";

}  // namespace

TEST_CASE("every built-in model's KV bytes per token and weight bytes match its published config", "[catalog]") {
  std::set<std::string> listed;
  for (const Published& p : kPublished) listed.insert(p.name);
  for (const ModelSpec& m : model_catalog()) CHECK(listed.count(m.name) == 1);  // no entry left untested
  for (const Published& p : kPublished) {
    INFO(p.name);
    const ModelSpec& m = find_model(p.name);
    CHECK(kv_bytes_per_token(m, 1, m.dtype_bytes) == p.kv_bytes_per_token);
    CHECK(m.total_weight_bytes() == p.weight_bytes);
    // The derived pool charges exactly these weight bytes.
    KvSizingInput in;
    in.model = &m;
    in.gpu = &find_gpu("b200");
    in.kv_gb = 1.0;  // any explicit size: the per-block bytes do not depend on it
    CHECK(size_kv_pool(in).bytes_per_block == p.kv_bytes_per_token * 16);
    CHECK(std::abs(static_cast<double>(m.params) - p.params_card) / p.params_card < 0.01);
    if (p.active_card > 0) {
      REQUIRE(m.is_moe());
      CHECK(std::abs(static_cast<double>(m.active_params) - p.active_card) / p.active_card < 0.03);
    } else {
      CHECK(!m.is_moe());
    }
  }
}

TEST_CASE("the built-in GPUs the issue names are there with their datasheet figures", "[catalog]") {
  // NVIDIA RTX PRO 6000 Blackwell: 96 GB GDDR7, 1,792 GB/s, BF16 503.8 TFLOPS dense, 188 SMs.
  const GpuSpec& pro = find_gpu("rtx-pro-6000-96gb");
  CHECK(pro.memory_bytes == int64_t{96000000000});
  CHECK(pro.hbm_bandwidth == 1792e9);
  CHECK(pro.peak_bf16_flops == 503.8e12);
  CHECK(pro.sm_count == 188);
  // NVIDIA L4: 24 GB, 300 GB/s, BF16 242 TFLOPS with sparsity = 121 dense.
  const GpuSpec& l4 = find_gpu("l4-24gb");
  CHECK(l4.hbm_bandwidth == 300e9);
  CHECK(l4.peak_bf16_flops == 121e12);
  // AMD MI300X: 192 GB HBM3, 5.3 TB/s, BF16 1,307.4 TFLOPS dense, 304 CUs.
  const GpuSpec& mi = find_gpu("mi300x-192gb");
  CHECK(mi.memory_bytes == int64_t{192000000000});
  CHECK(mi.hbm_bandwidth == 5.3e12);
  CHECK(mi.peak_bf16_flops == 1307.4e12);
  CHECK(mi.sm_count == 304);
  // NVIDIA A10G (AWS G5; the A10 datasheet's figures): 23028 MiB reported,
  // 600 GB/s GDDR6, BF16 250 TFLOPS with sparsity = 125 dense, 72 SMs.
  const GpuSpec& a10g = find_gpu("a10g-24gb");
  CHECK(a10g.memory_bytes == int64_t{23028} * 1024 * 1024);
  CHECK(a10g.hbm_bandwidth == 600e9);
  CHECK(a10g.peak_bf16_flops == 125e12);
  CHECK(a10g.sm_count == 72);
  // NVIDIA H20: 96 GB HBM3, 4.0 TB/s, BF16 296 TFLOPS with sparsity = 148 dense, NVLink 900 GB/s.
  const GpuSpec& h20 = find_gpu("h20-96gb");
  CHECK(h20.memory_bytes == int64_t{96000000000});
  CHECK(h20.hbm_bandwidth == 4.0e12);
  CHECK(h20.peak_bf16_flops == 148e12);
  CHECK(h20.interconnect_bandwidth == 450e9);
  // NVIDIA A40 (the GPU Vidur profiled besides A100 and H100): 48 GB GDDR6,
  // 696 GB/s, BF16 299.4 TFLOPS with sparsity = 149.7 dense, 84 SMs.
  const GpuSpec& a40 = find_gpu("a40-48gb");
  CHECK(a40.memory_bytes == int64_t{48000000000});
  CHECK(a40.hbm_bandwidth == 696e9);
  CHECK(a40.peak_bf16_flops == 149.7e12);
  CHECK(a40.sm_count == 84);
  // Already there: L40S and B200.
  CHECK(find_gpu("l40s-48gb").hbm_bandwidth == 864e9);
  CHECK(find_gpu("b200").hbm_bandwidth == 8.0e12);
}

TEST_CASE("an MoE computes with its active parameters and holds all of them in memory", "[catalog][cost_model]") {
  const ModelSpec& m = find_model("qwen3-30b-a3b");
  const GpuSpec& g = find_gpu("h100-sxm-80gb");
  const double embedding = 151936.0 * 2048;  // vocab x hidden
  const CostCoefficients c = roofline_coefficients(m, g, 1);
  // 2 FLOPs per active matmul parameter (embedding and lm_head excluded) at 60 % of 989.4 TFLOP/s.
  CHECK(c.linear_s_per_token == Approx(2.0 * (3353032704.0 - 2 * embedding) / (989.4e12 * 0.6)));
  // One step reads the active weights (lm_head included) at 80 % of 3.35 TB/s.
  CHECK(c.weight_floor_s == Approx((3353032704.0 - embedding) * 2 / (3.35e12 * 0.8)));
  // The pool is charged all 30.5 B parameters.
  KvSizingInput in;
  in.model = &m;
  in.gpu = &g;
  CHECK(size_kv_pool(in).weight_bytes == int64_t{30532122624} * 2);
}

TEST_CASE("each MoE's routed experts, implied by its counts, match its architecture", "[catalog][moe]") {
  // (params - active_params) / (1 - k/E) against the config figures:
  // experts x (3 x hidden x moe_intermediate, or gpt-oss's biased
  // gate_up + down) x MoE layers.
  const int64_t gpt_oss_expert = 2880LL * 5760 + 5760 + 2880LL * 2880 + 2880;  // gate_up_proj, down_proj with biases
  const std::pair<const char*, int64_t> want[] = {
      {"qwen3-30b-a3b", 128LL * 3 * 2048 * 768 * 48},     // moe_intermediate_size 768, 48 layers
      {"qwen3-235b-a22b", 128LL * 3 * 4096 * 1536 * 94},  // moe_intermediate_size 1536, 94 layers
      {"deepseek-v3", 256LL * 3 * 7168 * 2048 * 58},      // 61 layers less first_k_dense_replace 3
      {"gpt-oss-20b", gpt_oss_expert * 32 * 24},
      {"gpt-oss-120b", gpt_oss_expert * 128 * 36},
      {"mixtral-8x7b", 8LL * 3 * 4096 * 14336 * 32},  // 8 experts, intermediate_size 14336, 32 layers
      // 16 routed experts of intermediate_size 8192 in all 48 layers (interleave_moe_layer_step 1);
      // the shared expert is read by every token, so it sits in active_params, not here.
      {"llama-4-scout-17b-16e-fp8", 16LL * 3 * 5120 * 8192 * 48},
  };
  for (const auto& [name, routed] : want) {
    INFO(name);
    CHECK(find_model(name).routed_expert_params() == routed);
  }
  for (const ModelSpec& m : model_catalog())
    if (m.is_moe()) CHECK(m.has_routing());
}

TEST_CASE("a MoE step reads the union of its tokens' experts", "[catalog][cost_model][moe]") {
  const ModelSpec& m = find_model("qwen3-30b-a3b");
  const GpuSpec& g = find_gpu("h100-sxm-80gb");
  const CostCoefficients c = roofline_coefficients(m, g, 1);
  const double bw = 3.35e12 * 0.8;
  // One token reads its 8 experts: the floor is the active weights' read.
  CHECK(weight_floor_seconds(c, 1) == c.weight_floor_s);
  // A decode batch of 64 touches 128 x (1 - (120/128)^64) = 125.9 experts
  // per layer: about 59.5 GB, not the 6.1 GB of 8 experts (hand-computed:
  // 2.46 GB of attention, router and lm_head + 57.98 GB x 0.984 of experts).
  const double routed_bytes = 28991029248.0 * 2;
  const double others = (3353032704.0 - 151936.0 * 2048) * 2 - routed_bytes * 8 / 128;
  const double union64 = 1 - std::pow(120.0 / 128, 64);
  CHECK(weight_floor_seconds(c, 64) * bw == Approx(others + routed_bytes * union64).epsilon(1e-9));
  CHECK(weight_floor_seconds(c, 64) * bw == Approx(59.5e9).epsilon(0.005));
  // Monotone in the batch, and bounded by reading every weight once.
  double last = 0;
  for (double n : {1.0, 2.0, 4.0, 16.0, 64.0, 512.0, 8192.0}) {
    const double f = weight_floor_seconds(c, n);
    CHECK(f > last);
    last = f;
  }
  CHECK(last * bw == Approx(others + routed_bytes).epsilon(1e-9));
  // TP splits the experts like every weight.
  const CostCoefficients c4 = roofline_coefficients(m, g, 4);
  CHECK(weight_floor_seconds(c4, 64) == Approx(weight_floor_seconds(c, 64) / 4));
  // A dense model's floor does not move with the batch.
  const CostCoefficients d = roofline_coefficients(find_model("llama-3.1-8b"), g, 1);
  CHECK(d.expert_read_s == 0);
  CHECK(weight_floor_seconds(d, 4096) == d.weight_floor_s);
}

TEST_CASE("the expected expert union agrees with routing sampled token by token", "[catalog][moe]") {
  // An independent plain count: n tokens each pick k distinct experts of E
  // uniformly (a partial Fisher-Yates shuffle), and the distinct experts
  // touched are counted, averaged over many layers.
  const ModelSpec& m = find_model("qwen3-30b-a3b");
  const int E = m.experts, k = m.experts_per_token;
  uint64_t state = 42;
  auto next = [&](uint64_t bound) {  // SplitMix64, then a multiply-shift into [0, bound)
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return static_cast<uint64_t>((static_cast<unsigned __int128>(z) * bound) >> 64);
  };
  const double per_expert = m.routed_expert_bytes() / E;
  for (int n : {2, 8, 37, 256}) {
    const int layers = 4000;
    double touched = 0;
    std::vector<int> perm(E);
    for (int l = 0; l < layers; ++l) {
      std::vector<bool> hit(E, false);
      for (int t = 0; t < n; ++t) {
        for (int i = 0; i < E; ++i) perm[i] = i;
        for (int i = 0; i < k; ++i) {
          std::swap(perm[i], perm[i + static_cast<int>(next(E - i))]);
          hit[perm[i]] = true;
        }
      }
      for (bool h : hit) touched += h;
    }
    const double sampled = touched / layers - k;  // beyond one token's k
    INFO("n = " << n);
    CHECK(m.extra_expert_bytes_read(n) / per_expert == Approx(sampled).epsilon(0.01));
  }
}

TEST_CASE("a quantized checkpoint's weight read scales with its bytes per parameter", "[catalog][cost_model]") {
  const ModelSpec& m = find_model("gpt-oss-120b");
  const double read_params = 5711982912.0 - 201088.0 * 2880;  // active, less the gathered embedding
  CHECK(static_cast<double>(m.weight_bytes_read_per_step()) ==
        Approx(read_params * 65248815744.0 / 116829156672.0).epsilon(1e-9));
  // Dense bf16 models read exactly 2 bytes per parameter, as before.
  const ModelSpec& l = find_model("llama-3.1-8b");
  CHECK(l.weight_bytes_read_per_step() == (int64_t{8030261248} - 128256LL * 4096) * 2);
}

TEST_CASE("MLA's latent is not split by TP: every shard caches all of it", "[catalog][kv_sizing]") {
  const ModelSpec& m = find_model("deepseek-v3");
  for (int tp : {1, 2, 8}) CHECK(kv_bytes_per_token(m, tp, 2) == 61 * 576 * 2);
  KvSizingInput in;
  in.model = &m;
  in.gpu = &find_gpu("b200");
  in.tp = 8;
  const KvSizing k = size_kv_pool(in);
  CHECK(k.bytes_per_block == 61 * 576 * 2 * 16);
  CHECK(k.weight_bytes == (int64_t{673150582112} + 7) / 8);
  CHECK_THAT(k.explanation, Contains("512 kv_lora_rank + 64 qk_rope_head_dim"));
}

TEST_CASE("an fp8 KV cache halves the bytes per block and the KV read time", "[kv_sizing][fp8]") {
  for (const ModelSpec& m : model_catalog()) {
    INFO(m.name);
    KvSizingInput in;
    in.model = &m;
    in.gpu = &find_gpu("b200");
    in.kv_gb = 4.0;
    const KvSizing bf16 = size_kv_pool(in);
    in.kv_dtype_bytes = 1;
    const KvSizing fp8 = size_kv_pool(in);
    CHECK(fp8.bytes_per_block * 2 == bf16.bytes_per_block);
    CHECK(fp8.num_blocks >= 2 * bf16.num_blocks);
    CHECK(fp8.num_blocks <= 2 * bf16.num_blocks + 1);
  }
  const ModelSpec& m = find_model("llama-3.1-8b");
  const GpuSpec& g = find_gpu("h100-sxm-80gb");
  CostModelOptions o;
  o.kv_dtype_bytes = 1;
  CHECK(roofline_coefficients(m, g, 1, o).kv_read_s_per_token ==
        Approx(roofline_coefficients(m, g, 1).kv_read_s_per_token / 2));
}

TEST_CASE("dense models' JSON carries no MoE, quantization or MLA keys (reports unchanged)", "[catalog]") {
  const nlohmann::json j = to_json(find_model("llama-3.1-8b"));
  for (const char* k : {"active_params", "weight_bytes", "kv_lora_rank", "qk_rope_head_dim"}) CHECK(!j.contains(k));
  const nlohmann::json d = to_json(find_model("deepseek-v3"));
  CHECK(d["kv_lora_rank"] == 512);
  CHECK(d["active_params"] == int64_t{37552297472});
}

TEST_CASE("a user model file extends the catalog, and its errors name file, line and field", "[catalog][user]") {
  const std::string ok = write_temp("user-models.yaml", kUserModel);
  CHECK(catalog_file_kind(ok) == "models");
  CHECK(add_user_models(ok) == std::vector<std::string>{"my-moe"});
  const ModelSpec& m = find_model("my-moe");
  CHECK(m.active_params == 300000);
  CHECK(kv_bytes_per_token(m, 1, 2) == 2 * 2 * 16 * 2 * 2);
  // Loading it again collides with the entry now in the catalog: the name's line.
  CHECK_THROWS_WITH(add_user_models(ok), Contains(ok + ":2:") && Contains("my-moe") && Contains("already"));
  // A built-in name is refused the same way.
  std::string builtin = kUserModel;
  builtin.replace(builtin.find("my-moe"), 6, "llama-3.1-8b");
  CHECK_THROWS_WITH(add_user_models(write_temp("dup.yaml", builtin)), Contains("dup.yaml:2:") && Contains("llama-3.1-8b"));
  // A bad value: file, line and field.
  std::string bad = kUserModel;
  bad.replace(bad.find("name: my-moe"), 12, "name: my-moe2");
  bad.replace(bad.find("active_params: 300000"), 21, "active_params: 2000000");
  CHECK_THROWS_WITH(add_user_models(write_temp("bad.yaml", bad)), Contains("bad.yaml:13:") && Contains("active_params"));
  // MLA needs both of its fields.
  std::string mla = kUserModel;
  mla.replace(mla.find("name: my-moe"), 12, "name: my-mla");
  mla += "    kv_lora_rank: 32\n";
  CHECK_THROWS_WITH(add_user_models(write_temp("mla.yaml", mla)), Contains("mla.yaml:") && Contains("qk_rope_head_dim"));
  // Neither list, or an unreadable file.
  CHECK_THROWS_WITH(catalog_file_kind(write_temp("neither.yaml", "things: []\n")),
                    Contains("neither.yaml:1:") && Contains("'models' or 'gpus'"));
  CHECK_THROWS_AS(add_user_gpus("/nonexistent/gpus.yaml"), InputError);
}

TEST_CASE("a user GPU file extends the catalog", "[catalog][user]") {
  const std::string f = write_temp("user-gpus.yaml",
                                   "gpus:\n"
                                   "  - name: my-gpu\n"
                                   "    description: test\n"
                                   "    source: test\n"
                                   "    memory_bytes: 48000000000\n"
                                   "    peak_bf16_flops: 200e12\n"
                                   "    hbm_bandwidth: 1e12\n"
                                   "    interconnect: pcie4\n"
                                   "    interconnect_bandwidth: 32e9\n"
                                   "    allreduce_latency_s: 30e-6\n"
                                   "    sm_count: 100\n");
  CHECK(catalog_file_kind(f) == "gpus");
  CHECK(add_user_gpus(f) == std::vector<std::string>{"my-gpu"});
  CHECK(find_gpu("my-gpu").hbm_bandwidth == 1e12);
  const std::string bad = write_temp("bad-gpus.yaml",
                                     "gpus:\n"
                                     "  - name: other\n"
                                     "    description: test\n"
                                     "    source: test\n"
                                     "    memory_bytes: 48000000000\n"
                                     "    peak_bf16_flops: fast\n");
  CHECK_THROWS_WITH(add_user_gpus(bad), Contains("bad-gpus.yaml:6:") && Contains("peak_bf16_flops"));
}

// Model/GPU catalogs and KV pool sizing, checked against figures worked out by hand.
#include <catch2/catch.hpp>
#include <cmath>
#include <set>

#include "sim/cost/catalog.h"
#include "sim/base/error.h"
#include "sim/cost/kv_sizing.h"

using namespace prefixsim;
using Catch::Matchers::Contains;

namespace {

// Parameters of a Llama-style decoder from its shape: q/k/v/o projections,
// a 3-matrix MLP, two RMSNorms per layer, the final norm, the embedding and
// (untied) lm_head.
int64_t params_from_architecture(const ModelSpec& m) {
  const int64_t h = m.hidden, d = m.head_dim;
  const int64_t attn = h * m.heads * d * 2 + h * m.kv_heads * d * 2;
  const int64_t mlp = 3 * h * m.intermediate;
  const int64_t per_layer = attn + mlp + 2 * h;
  return per_layer * m.layers + int64_t{m.vocab} * h * (m.tied_embeddings ? 1 : 2) + h;
}

KvSizingInput input(const char* model, const char* gpu, int tp = 1) {
  KvSizingInput in;
  in.model = &find_model(model);
  in.gpu = &find_gpu(gpu);
  in.tp = tp;
  return in;
}

}  // namespace

TEST_CASE("every catalog entry loads with the names the issue asks for", "[catalog]") {
  std::set<std::string> models, gpus;
  for (const ModelSpec& m : model_catalog()) models.insert(m.name);
  for (const GpuSpec& g : gpu_catalog()) gpus.insert(g.name);
  CHECK(models == std::set<std::string>{"llama-3.1-8b", "llama-3.1-70b", "llama-3.3-70b", "llama-3.2-1b",
                                        "llama-3.2-3b", "qwen2.5-7b", "qwen3-8b", "qwen3-14b", "qwen3-32b",
                                        "qwen3-30b-a3b", "qwen3-235b-a22b", "deepseek-v3", "gpt-oss-20b",
                                        "gpt-oss-120b", "mistral-7b", "llama-2-7b", "llama-2-70b", "mistral-nemo-12b", "yi-34b",
                                        "codellama-34b", "mixtral-8x7b", "llama-4-scout-17b-16e-fp8"});
  CHECK(gpus == std::set<std::string>{"h100-sxm-80gb", "h200-141gb", "a100-80gb", "l40s-48gb", "rtx-4090-24gb", "b200",
                                      "rtx-pro-6000-96gb", "l4-24gb", "mi300x-192gb", "a10g-24gb", "h20-96gb", "a40-48gb"});
  for (const GpuSpec& g : gpu_catalog()) {
    INFO(g.name);
    CHECK(g.memory_bytes > (int64_t{20} << 30));
    CHECK(g.peak_bf16_flops > 1e14);
    CHECK(g.hbm_bandwidth > 2e11);  // the L4's 300 GB/s is the lowest
    CHECK(g.interconnect_bandwidth > 1e10);
    CHECK(!g.source.empty());
    CHECK(to_json(g)["name"] == g.name);
  }
}

TEST_CASE("catalog parameter counts agree with each model's architecture within 0.1 %", "[catalog]") {
  for (const ModelSpec& m : model_catalog()) {
    INFO(m.name);
    // Dense standard-attention models only; the MoE, MLA and MXFP4 entries
    // are checked against their model cards in test_catalog_entries.cpp.
    if (m.is_moe() || m.is_mla() || m.weight_bytes > 0) continue;
    const double derived = static_cast<double>(params_from_architecture(m));
    CHECK(std::fabs(derived - static_cast<double>(m.params)) / static_cast<double>(m.params) < 1e-3);
    CHECK(m.heads % m.kv_heads == 0);
    CHECK(to_json(m)["params"] == m.params);
  }
}

TEST_CASE("unknown model or GPU names are refused with the known names listed", "[catalog]") {
  CHECK_THROWS_WITH(find_model("llama-9"), Contains("--model") && Contains("llama-9") && Contains("llama-3.1-8b") &&
                                               Contains("mistral-7b"));
  CHECK_THROWS_WITH(find_gpu("h100"), Contains("--gpu") && Contains("h100-sxm-80gb") && Contains("b200"));
  CHECK(find_gpu("b200").sm_count == 148);
}

TEST_CASE("bad catalog YAML names the file, line and field", "[catalog]") {
  const std::string base =
      "models:\n"
      "  - name: tiny\n"
      "    source: test\n"
      "    layers: 2\n"
      "    hidden: 64\n"
      "    heads: 4\n"
      "    kv_heads: 2\n"
      "    head_dim: 16\n"
      "    intermediate: 128\n"
      "    vocab: 100\n"
      "    tied_embeddings: false\n"
      "    params: 200000\n"
      "    dtype_bytes: 2\n";
  CHECK(parse_model_catalog(base, "m.yaml").at(0).layers == 2);
  auto with = [&](const std::string& from, const std::string& to) {
    std::string s = base;
    s.replace(s.find(from), from.size(), to);
    return s;
  };
  CHECK_THROWS_WITH(parse_model_catalog(with("layers: 2", "layers: -2"), "m.yaml"),
                    Contains("m.yaml:4:") && Contains("'layers'"));
  CHECK_THROWS_WITH(parse_model_catalog(with("    vocab: 100\n", ""), "m.yaml"), Contains("missing field 'vocab'"));
  CHECK_THROWS_WITH(parse_model_catalog(with("kv_heads: 2", "kv_heads: 3"), "m.yaml"),
                    Contains("m.yaml:7:") && Contains("'kv_heads' must divide 'heads'"));
  CHECK_THROWS_WITH(parse_model_catalog(with("hidden: 64", "hiden: 64"), "m.yaml"), Contains("unknown field 'hiden'"));
  CHECK_THROWS_WITH(parse_model_catalog("models: [", "m.yaml"), Contains("m.yaml:") && Contains("invalid YAML"));
  CHECK_THROWS_WITH(parse_gpu_catalog("gpus: {}", "g.yaml"), Contains("g.yaml:1:") && Contains("'gpus' list"));
  // MoE routing figures: both or neither, only on a MoE, top-k below E, and
  // consistent with the parameter counts.
  const std::string moe = with("    dtype_bytes: 2\n", "    dtype_bytes: 2\n    active_params: 140000\n");
  auto moe_with = [&](const std::string& extra) { return moe + extra; };
  const ModelSpec ok = parse_model_catalog(moe_with("    experts: 8\n    experts_per_token: 2\n"), "m.yaml").at(0);
  CHECK(ok.routed_expert_params() == (200000 - 140000) * 8 / 6);
  CHECK_THROWS_WITH(parse_model_catalog(moe_with("    experts: 8\n"), "m.yaml"),
                    Contains("m.yaml:2:") && Contains("'experts' and 'experts_per_token'"));
  CHECK_THROWS_WITH(parse_model_catalog(moe_with("    experts: 8\n    experts_per_token: 8\n"), "m.yaml"),
                    Contains("m.yaml:16:") && Contains("'experts_per_token'"));
  CHECK_THROWS_WITH(parse_model_catalog(base + "    experts: 8\n    experts_per_token: 2\n", "m.yaml"),
                    Contains("m.yaml:14:") && Contains("needs 'active_params'"));
  // 10 000 params outside one token's 1 of 2 experts imply 20 000 routed > 12 000 total.
  CHECK_THROWS_WITH(parse_model_catalog(with("params: 200000", "params: 12000") +
                                            "    active_params: 2000\n    experts: 2\n    experts_per_token: 1\n",
                                        "m.yaml"),
                    Contains("m.yaml:15:") && Contains("disagree"));
}

TEST_CASE("llama-3.1-8b on h100-sxm-80gb at gpu_mem_util 0.9: the pool by hand", "[kv_sizing]") {
  // bytes/block = 2 (K,V) * 16 tokens * 8 KV heads * 128 head dim * 2 bytes * 32 layers = 2,097,152
  // usable      = floor(85,520,809,984 B (81559 MiB) * 0.9)                      = 76,968,728,985
  // weights     = 8,030,261,248 params * 2 B                                     = 16,060,522,496
  // activations = 8192 tokens * (2*4096 + 3*14336) * 2 B    =   838,860,800
  //             + 256 seqs * 128,256 vocab * 4 B (fp32)     =   131,334,144
  //             + 1 GiB runtime                             = 1,073,741,824  -> 2,043,936,768
  // budget      = 76,968,728,985 - 16,060,522,496 - 2,043,936,768           = 58,864,269,721
  // num_blocks  = floor(58,864,269,721 / 2,097,152)                          = 28,068
  // capacity    = (28,068 - 1 null block) * 16                               = 449,072 tokens
  KvSizingInput in = input("llama-3.1-8b", "h100-sxm-80gb");
  in.gpu_mem_util = 0.9;
  const KvSizing k = size_kv_pool(in);
  CHECK(k.bytes_per_block == 2097152);
  CHECK(k.usable_bytes == 76968728985);
  CHECK(k.weight_bytes == 16060522496);
  CHECK(k.activation_bytes == 2043936768);
  CHECK(k.kv_budget_bytes == 58864269721);
  CHECK(k.num_blocks == 28068);
  CHECK(k.capacity_tokens == 449072);
  CHECK(k.block_size == 16);
  CHECK(k.source == "derived");
  CHECK_THAT(k.explanation, Contains("28068") && Contains("2097152") && Contains("null block"));
  const auto j = to_json(k);
  CHECK(j["num_blocks"] == 28068);
  CHECK(j["bytes_per_block"] == 2097152);
  CHECK(j["capacity_tokens"] == 449072);
  CHECK(j["derivation"]["kv_budget_bytes"] == 58864269721);
}

TEST_CASE("llama-3.1-70b at TP 4 on h100-sxm-80gb: one shard's pool by hand", "[kv_sizing]") {
  // bytes/block = 2 * 16 * (8 KV heads / 4) * 128 * 2 B * 80 layers           = 1,310,720
  // weights     = 70,553,706,496 params * 2 B / 4                           = 35,276,853,248
  // activations = 8192 * (2*8192 + 3*(28672/4)) * 2 B = 620,756,992
  //             + 256 * 128,256 * 4 B = 131,334,144 + 1 GiB                 = 1,825,832,960
  // budget      = 76,968,728,985 - 35,276,853,248 - 1,825,832,960           = 39,866,042,777
  // num_blocks  = floor(39,866,042,777 / 1,310,720)                         = 30,415
  const KvSizing k = size_kv_pool(input("llama-3.1-70b", "h100-sxm-80gb", 4));
  CHECK(k.bytes_per_block == 1310720);
  CHECK(k.weight_bytes == 35276853248);
  CHECK(k.activation_bytes == 1825832960);
  CHECK(k.kv_budget_bytes == 39866042777);
  CHECK(k.num_blocks == 30415);
  CHECK(k.capacity_tokens == 30414 * 16);
}

TEST_CASE("TP beyond the KV head count replicates KV heads as vLLM does", "[kv_sizing]") {
  // 8 KV heads over 16 shards: one (replicated) head per shard.
  CHECK(kv_bytes_per_token(find_model("llama-3.1-70b"), 16, 2) == 2 * 1 * 128 * 2 * 80);
  CHECK(kv_bytes_per_token(find_model("llama-3.1-70b"), 8, 2) == 2 * 1 * 128 * 2 * 80);
  CHECK(kv_bytes_per_token(find_model("llama-3.1-8b"), 1, 1) == 2 * 8 * 128 * 1 * 32);  // fp8 KV cache
}

TEST_CASE("explicit --kv-blocks, --kv-tokens and --kv-gb fix the pool", "[kv_sizing]") {
  KvSizingInput in = input("llama-3.1-8b", "h100-sxm-80gb");
  in.kv_blocks = 1000;
  KvSizing k = size_kv_pool(in);
  CHECK(k.num_blocks == 1000);
  CHECK(k.capacity_tokens == 999 * 16);
  CHECK(k.source == "--kv-blocks");

  in.kv_blocks.reset();
  in.kv_tokens = 1601;  // ceil(1601 / 16) = 101 blocks + the null block
  k = size_kv_pool(in);
  CHECK(k.num_blocks == 102);
  CHECK(k.capacity_tokens == 1616);

  in.kv_tokens.reset();
  in.kv_gb = 2.0;  // 2 GiB / 2 MiB per block = 1024 blocks (null included, as vLLM counts)
  k = size_kv_pool(in);
  CHECK(k.num_blocks == 1024);
  CHECK(k.capacity_tokens == 1023 * 16);

  // Cache mode without a model: blocks are enough, bytes are unknown.
  KvSizingInput bare;
  bare.kv_blocks = 64;
  bare.block_size = 4;
  k = size_kv_pool(bare);
  CHECK(k.num_blocks == 64);
  CHECK(k.bytes_per_block == 0);
  CHECK(k.capacity_tokens == 63 * 4);
}

TEST_CASE("absurd sizing requests are refused naming the flag", "[kv_sizing]") {
  KvSizingInput in = input("llama-3.1-8b", "h100-sxm-80gb");
  in.tp = 3;
  CHECK_THROWS_AS(size_kv_pool(in), InputError);
  CHECK_THROWS_WITH(size_kv_pool(in), Contains("--tp"));
  in = input("qwen2.5-7b", "h100-sxm-80gb", 3);  // 28 heads? 28 % 3 != 0
  CHECK_THROWS_WITH(size_kv_pool(in), Contains("--tp"));
  in = input("llama-3.1-70b", "rtx-4090-24gb");  // 141 GB of weights on 24 GB
  CHECK_THROWS_WITH(size_kv_pool(in), Contains("--gpu-mem-util") && Contains("no memory left"));
  in = input("llama-3.1-8b", "h100-sxm-80gb");
  in.gpu_mem_util = 1.5;
  CHECK_THROWS_WITH(size_kv_pool(in), Contains("--gpu-mem-util"));
  in.gpu_mem_util = 0.9;
  in.kv_blocks = 1000000000000;  // 10^12 blocks
  CHECK_THROWS_WITH(size_kv_pool(in), Contains("--kv-blocks"));
  in.kv_blocks = 1;  // only the null block
  CHECK_THROWS_WITH(size_kv_pool(in), Contains("--kv-blocks"));
  in.kv_blocks.reset();
  in.kv_tokens = int64_t{1} << 40;  // more than 2^31 blocks of 16
  CHECK_THROWS_WITH(size_kv_pool(in), Contains("--kv-tokens"));
  in.kv_tokens.reset();
  in.kv_gb = 1e5;  // 100,000 GiB / 2 MiB = 5e7 blocks: fine
  CHECK(size_kv_pool(in).num_blocks == 51200000);
  in.kv_gb = -1;
  CHECK_THROWS_WITH(size_kv_pool(in), Contains("--kv-gb"));
  in.kv_gb = 1;
  in.kv_blocks = 10;
  CHECK_THROWS_WITH(size_kv_pool(in), Contains("at most one"));
  in = input("llama-3.1-8b", "h100-sxm-80gb");
  in.block_size = 1 << 20;  // a block bigger than any context
  CHECK_THROWS_WITH(size_kv_pool(in), Contains("--block-size"));
}

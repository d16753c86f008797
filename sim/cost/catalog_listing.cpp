#include "sim/cost/catalog_listing.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "sim/base/error.h"
#include "sim/cost/catalog.h"
#include "sim/cost/profile.h"
#include "sim/cost/shipped_profiles.h"

namespace prefixsim {
namespace {

std::string fmt(const char* f, double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, x);
  return buf;
}

// Pads a column to `width`, and always leaves one space after a longer name.
std::string pad(std::string s, size_t width) {
  s.append(s.size() < width ? width - s.size() : 1, ' ');
  return s;
}

std::string bytes(double b) {
  if (b >= 1024.0 * 1024 * 1024) return fmt("%.1f GiB", b / (1024.0 * 1024 * 1024));
  if (b >= 1024.0 * 1024) return fmt("%.2f MiB", b / (1024.0 * 1024));
  return fmt("%.1f KiB", b / 1024.0);
}

std::string tokens(int64_t t) {
  if (t >= 1000000) return fmt("%.2fM", t / 1e6);
  if (t >= 1000) return fmt("%.0fk", t / 1e3);
  return std::to_string(t);
}

struct PoolCell {
  bool ok = false;
  KvSizing sizing;
  std::string why;
};

PoolCell pool(const ModelSpec& m, const GpuSpec& g, const KvSizingInput& base) {
  KvSizingInput in = base;
  in.model = &m;
  in.gpu = &g;
  PoolCell c;
  try {
    c.sizing = size_kv_pool(in);
    c.ok = true;
  } catch (const InputError& e) {
    c.why = e.what();
  }
  return c;
}

// A shipped profile's file name as the catalog lists it, or a path.
Profile shown_profile(const std::string& path) {
  for (const ShippedProfile& sp : shipped_profiles())
    if (path == sp.file && !std::filesystem::exists(path)) return sp.profile;
  return read_profile(path);
}




void print_models(std::ostream& os, const KvSizingInput& base, size_t mw) {
  os << "models (sim/cost/catalog/models.yaml; KV per shard at TP " << base.tp << ")\n  "
            << pad("name", mw) << pad("layers", 8) << pad("hidden", 8) << pad("heads", 7) << pad("kv_heads", 10)
            << pad("head_dim", 10) << pad("params", 9) << pad("KV/token", 11) << "KV/block(" << base.block_size
            << ")\n";
  for (const ModelSpec& m : model_catalog()) {
    const int kv_tp = (m.kv_heads % base.tp == 0 || base.tp % m.kv_heads == 0) ? base.tp : 1;
    const int64_t per_token = kv_bytes_per_token(m, kv_tp, m.dtype_bytes);
    os << "  " << pad(m.name, mw) << pad(std::to_string(m.layers), 8) << pad(std::to_string(m.hidden), 8)
              << pad(std::to_string(m.heads), 7) << pad(std::to_string(m.kv_heads), 10)
              << pad(std::to_string(m.head_dim), 10) << pad(fmt("%.2f B", m.params / 1e9), 9)
              << pad(bytes(static_cast<double>(per_token)), 11) << bytes(static_cast<double>(per_token) * base.block_size)
              << (kv_tp == base.tp ? "" : "  (TP does not fit: shown at TP 1)") << "\n";
  }
}

void print_gpus(std::ostream& os, size_t gw) {
  os << "\nGPUs (sim/cost/catalog/gpus.yaml)\n  " << pad("name", gw) << pad("memory", 11) << pad("BF16 dense", 15)
            << pad("HBM", 11) << "interconnect\n";
  for (const GpuSpec& g : gpu_catalog())
    os << "  " << pad(g.name, gw) << pad(bytes(static_cast<double>(g.memory_bytes)), 11)
              << pad(fmt("%.0f TFLOP/s", g.peak_bf16_flops / 1e12), 15) << pad(fmt("%.2f TB/s", g.hbm_bandwidth / 1e12), 11)
              << g.interconnect << " " << fmt("%.0f GB/s", g.interconnect_bandwidth / 1e9) << " per direction\n";
}

void print_default_pools(std::ostream& os, const KvSizingInput& base, size_t mw, size_t gw) {
  os << "\ndefault KV pool per GPU at TP " << base.tp << ", --gpu-mem-util " << base.gpu_mem_util
            << ", block size " << base.block_size << ": blocks (tokens); '-' = does not fit\n  " << pad("", mw);
  for (const GpuSpec& g : gpu_catalog()) os << pad(g.name, std::max<size_t>(18, gw));
  os << "\n";
  for (const ModelSpec& m : model_catalog()) {
    os << "  " << pad(m.name, mw);
    for (const GpuSpec& g : gpu_catalog()) {
      const PoolCell c = pool(m, g, base);
      os << pad(c.ok ? std::to_string(c.sizing.num_blocks) + " (" + tokens(c.sizing.capacity_tokens) + ")" : "-",
                       std::max<size_t>(18, gw));
    }
    os << "\n";
  }
}

void print_shipped_profiles(std::ostream& os) {
  os << "\ncalibrated profiles built in (replay --profile builtin; catalog --profile FILE shows one)\n  "
            << pad("model", 15) << pad("gpu", 15) << pad("tp", 4) << pad("measured", 12) << pad("held-out MAPE", 15)
            << "file\n";
  for (const ShippedProfile& sp : shipped_profiles()) {
    const Profile& p = sp.profile;
    os << "  " << pad(p.model, 15) << pad(p.gpu.catalog, 15) << pad(std::to_string(p.tp), 4)
              << pad(p.date.substr(0, 10), 12) << pad(fmt("%.1f %%", p.fit.mape_held_out * 100), 15) << sp.file << "\n";
  }
}

}  // namespace

int show_profile(std::ostream& os, const std::string& path, bool json) {
  const Profile p = shown_profile(path);
  if (json) {
    os << profile_text(p);
    return 0;
  }
  const CostCoefficients& c = p.coefficients;
  os << "profile " << path << " (" << kProfileSchema << ")\n"
            << "  model " << p.model << " at TP " << p.tp << " on " << p.gpu.catalog << " (" << p.gpu.name << ", "
            << p.gpu.sm_count << " SMs, " << fmt("%.0f", p.gpu.sm_clock_mhz) << " MHz, driver " << p.gpu.driver
            << ", CUDA " << p.gpu.cuda << "), measured " << p.date << "\n"
            << "  step = " << fmt("%.4g", c.overhead_s * 1e3) << " ms + " << fmt("%.4g", c.per_seq_s * 1e6)
            << " us/seq + max(" << fmt("%.4g", c.linear_s_per_token * 1e6) << " us/token, "
            << fmt("%.4g", c.weight_floor_s * 1e3) << " ms) + " << fmt("%.4g", c.attn_s_per_unit * 1e9)
            << " ns per n*(c+n/2) + " << fmt("%.4g", c.kv_read_s_per_token * 1e9) << " ns per context token + "
            << fmt("%.4g", c.allreduce_s_per_token * 1e6) << " us/token all-reduce\n"
            << "  fit: " << p.fit.method << "; " << p.fit.train_samples << " train / " << p.fit.held_out_samples
            << " held-out steps; held-out MAPE " << fmt("%.2f", p.fit.mape_held_out * 100) << " % (max "
            << fmt("%.2f", p.fit.max_ape_held_out * 100) << " %), train MAPE " << fmt("%.2f", p.fit.mape_train * 100)
            << " %\n";
  if (!p.provenance.empty()) os << "  provenance: " << p.provenance << "\n";
  return 0;
}

// `catalog --check FILE`: loads FILE as --model-file or --gpu-file would
// (its top-level key says which) and prints the entries it adds.
int check_catalog_file(std::ostream& os, const std::string& file, bool json) {
  const bool models = catalog_file_kind(file) == "models";
  const std::vector<std::string> names = models ? add_user_models(file) : add_user_gpus(file);
  nlohmann::json out = {{"file", file}, {"models", nlohmann::json::array()}, {"gpus", nlohmann::json::array()}};
  for (const std::string& n : names) {
    if (models) {
      const ModelSpec& m = find_model(n);
      nlohmann::json j = to_json(m);
      j["kv_bytes_per_token"] = kv_bytes_per_token(m, 1, m.dtype_bytes);
      j["weight_bytes_total"] = m.total_weight_bytes();
      out["models"].push_back(j);
    } else {
      out["gpus"].push_back(to_json(find_gpu(n)));
    }
  }
  if (json) {
    os << out.dump(2) << "\n";
    return 0;
  }
  os << file << ": valid; " << names.size() << (models ? " model(s)" : " GPU(s)") << "\n";
  for (const std::string& n : names) {
    if (models) {
      const ModelSpec& m = find_model(n);
      os << "  " << pad(m.name, 20) << fmt("%.2f B params", m.params / 1e9)
                << (m.is_moe() ? fmt(" (%.2f B active)", m.active_params / 1e9) : "") << ", weights "
                << bytes(static_cast<double>(m.total_weight_bytes())) << ", KV "
                << bytes(static_cast<double>(kv_bytes_per_token(m, 1, m.dtype_bytes))) << "/token at TP 1"
                << (m.is_mla() ? " (MLA latent)" : "") << "\n";
    } else {
      const GpuSpec& g = find_gpu(n);
      os << "  " << pad(g.name, 20) << bytes(static_cast<double>(g.memory_bytes)) << ", "
                << fmt("%.0f TFLOP/s BF16 dense", g.peak_bf16_flops / 1e12) << ", "
                << fmt("%.2f TB/s", g.hbm_bandwidth / 1e12) << "\n";
    }
  }
  return 0;
}

// --json: the catalog, every pool and the shipped profiles as one document.
void print_catalog_json(std::ostream& os, const KvSizingInput& base) {
  nlohmann::json out = {{"models", nlohmann::json::array()},
                        {"gpus", nlohmann::json::array()},
                        {"kv_pool", nlohmann::json::array()},
                        {"settings", {{"block_size", base.block_size}, {"gpu_mem_util", base.gpu_mem_util}, {"tp", base.tp}}}};
  for (const ModelSpec& m : model_catalog()) out["models"].push_back(to_json(m));
  for (const GpuSpec& g : gpu_catalog()) out["gpus"].push_back(to_json(g));
  for (const ModelSpec& m : model_catalog())
    for (const GpuSpec& g : gpu_catalog()) {
      const PoolCell c = pool(m, g, base);
      nlohmann::json cell = {{"model", m.name}, {"gpu", g.name}};
      if (c.ok) {
        cell["kv_cache"] = to_json(c.sizing);
      } else {
        cell["error"] = c.why;
      }
      out["kv_pool"].push_back(cell);
    }
  out["profiles"] = nlohmann::json::array();
  for (const ShippedProfile& sp : shipped_profiles())
    out["profiles"].push_back({{"file", sp.file}, {"profile", to_json(sp.profile)}});
  os << out.dump(2) << "\n";
}

// The tables: models, GPUs, every model's default pool on every GPU, the shipped profiles.
void print_catalog_tables(std::ostream& os, const KvSizingInput& base) {
  // Name columns as wide as the longest name (at least 15) plus a space.
  size_t mw = 14, gw = 14;
  for (const ModelSpec& m : model_catalog()) mw = std::max(mw, m.name.size());
  for (const GpuSpec& g : gpu_catalog()) gw = std::max(gw, g.name.size());
  ++mw;
  ++gw;
  print_models(os, base, mw);
  print_gpus(os, gw);
  print_default_pools(os, base, mw, gw);
  print_shipped_profiles(os);
}

}  // namespace prefixsim

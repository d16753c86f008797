#include "sim/cost/catalog.h"

#include <yaml-cpp/yaml.h>

#include <cmath>
#include <limits>
#include <set>
#include <sstream>

#include "sim/base/error.h"

namespace prefixsim {

namespace catalog_data {
extern const std::string_view kModelsYaml;  // generated from sim/cost/catalog/models.yaml
extern const std::string_view kGpusYaml;    // generated from sim/cost/catalog/gpus.yaml
}  // namespace catalog_data

int64_t ModelSpec::per_token_matmul_params() const {
  const int64_t embedding = static_cast<int64_t>(vocab) * hidden;
  return params - (tied_embeddings ? embedding : 2 * embedding);
}

int64_t ModelSpec::weight_bytes_read_per_step() const {
  const int64_t lm_head = static_cast<int64_t>(vocab) * hidden;
  return (per_token_matmul_params() + lm_head) * dtype_bytes;
}

namespace {

// One catalog entry's fields, with errors naming the file, line and field.
class Entry {
 public:
  Entry(const YAML::Node& node, const std::string& file) : node_(node), file_(file) {
    if (!node.IsMap()) fail(node, "each entry must be a mapping of fields");
  }

  [[noreturn]] void fail(const YAML::Node& at, const std::string& msg) const {
    throw InputError(file_, at.Mark().line + 1, msg);
  }

  YAML::Node field(const char* key) const {
    YAML::Node v = node_[key];
    if (!v || v.IsNull()) fail(node_, std::string("missing field '") + key + "'");
    if (!v.IsScalar()) fail(v, std::string("field '") + key + "' must be a scalar");
    return v;
  }
  std::string str(const char* key) const { return field(key).Scalar(); }
  double num(const char* key, double lo, double hi) const {
    const YAML::Node v = field(key);
    double x = 0;
    if (!YAML::convert<double>::decode(v, x) || !std::isfinite(x) || x < lo || x > hi)
      fail(v, std::string("field '") + key + "' must be a number in [" + fmt(lo) + ", " + fmt(hi) + "], got '" +
                  v.Scalar() + "'");
    return x;
  }
  int64_t integer(const char* key, int64_t lo, int64_t hi) const {
    const YAML::Node v = field(key);
    int64_t x = 0;
    if (!YAML::convert<int64_t>::decode(v, x) || x < lo || x > hi)
      fail(v, std::string("field '") + key + "' must be an integer in [" + std::to_string(lo) + ", " +
                  std::to_string(hi) + "], got '" + v.Scalar() + "'");
    return x;
  }
  bool boolean(const char* key) const {
    const YAML::Node v = field(key);
    bool b = false;
    if (!YAML::convert<bool>::decode(v, b)) fail(v, std::string("field '") + key + "' must be true or false");
    return b;
  }
  void reject_unknown(std::initializer_list<const char*> allowed) const {
    for (const auto& kv : node_) {
      const std::string k = kv.first.as<std::string>();
      bool ok = false;
      for (const char* a : allowed) ok = ok || k == a;
      if (!ok) fail(kv.first, "unknown field '" + k + "'");
    }
  }

 private:
  static std::string fmt(double x) {
    std::ostringstream s;
    s << x;
    return s.str();
  }
  YAML::Node node_;
  std::string file_;
};

YAML::Node load_list(std::string_view yaml, const std::string& file, const char* key) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml));
  } catch (const YAML::Exception& e) {
    throw InputError(file, e.mark.line + 1, "invalid YAML: " + e.msg);
  }
  if (!root.IsMap() || !root[key] || !root[key].IsSequence())
    throw InputError(file, 1, std::string("expected a top-level '") + key + "' list");
  return root[key];
}

template <typename Spec>
void check_unique(const std::vector<Spec>& specs, const YAML::Node& list, const std::string& file) {
  std::set<std::string> seen;
  for (size_t i = 0; i < specs.size(); ++i)
    if (!seen.insert(specs[i].name).second)
      throw InputError(file, list[i].Mark().line + 1, "duplicate name '" + specs[i].name + "'");
}

template <typename Spec>
std::string known_names(const std::vector<Spec>& specs) {
  std::string out;
  for (const Spec& s : specs) out += (out.empty() ? "" : ", ") + s.name;
  return out;
}

constexpr int64_t kMaxDim = 1 << 20;

}  // namespace

std::vector<ModelSpec> parse_model_catalog(std::string_view yaml, const std::string& file) {
  const YAML::Node list = load_list(yaml, file, "models");
  std::vector<ModelSpec> out;
  for (const YAML::Node& node : list) {
    Entry e(node, file);
    e.reject_unknown({"name", "source", "layers", "hidden", "heads", "kv_heads", "head_dim", "intermediate", "vocab",
                      "tied_embeddings", "params", "dtype_bytes"});
    ModelSpec m;
    m.name = e.str("name");
    m.source = e.str("source");
    m.layers = static_cast<int>(e.integer("layers", 1, 4096));
    m.hidden = static_cast<int>(e.integer("hidden", 1, kMaxDim));
    m.heads = static_cast<int>(e.integer("heads", 1, 4096));
    m.kv_heads = static_cast<int>(e.integer("kv_heads", 1, m.heads));
    m.head_dim = static_cast<int>(e.integer("head_dim", 1, 4096));
    m.intermediate = static_cast<int>(e.integer("intermediate", 1, kMaxDim));
    m.vocab = static_cast<int>(e.integer("vocab", 1, 1 << 24));
    m.tied_embeddings = e.boolean("tied_embeddings");
    m.params = e.integer("params", 1, int64_t{1} << 44);
    m.dtype_bytes = static_cast<int>(e.integer("dtype_bytes", 1, 8));
    if (m.heads % m.kv_heads != 0) e.fail(node["kv_heads"], "field 'kv_heads' must divide 'heads'");
    if (m.per_token_matmul_params() <= 0)
      e.fail(node["params"], "field 'params' is smaller than the embedding and lm_head alone");
    out.push_back(std::move(m));
  }
  check_unique(out, list, file);
  return out;
}

std::vector<GpuSpec> parse_gpu_catalog(std::string_view yaml, const std::string& file) {
  const YAML::Node list = load_list(yaml, file, "gpus");
  std::vector<GpuSpec> out;
  for (const YAML::Node& node : list) {
    Entry e(node, file);
    e.reject_unknown({"name", "description", "source", "memory_bytes", "peak_bf16_flops", "hbm_bandwidth",
                      "interconnect", "interconnect_bandwidth", "allreduce_latency_s", "sm_count"});
    GpuSpec g;
    g.name = e.str("name");
    g.description = e.str("description");
    g.source = e.str("source");
    g.memory_bytes = e.integer("memory_bytes", int64_t{1} << 20, int64_t{1} << 50);
    g.peak_bf16_flops = e.num("peak_bf16_flops", 1e9, 1e18);
    g.hbm_bandwidth = e.num("hbm_bandwidth", 1e9, 1e15);
    g.interconnect = e.str("interconnect");
    g.interconnect_bandwidth = e.num("interconnect_bandwidth", 1e6, 1e15);
    g.allreduce_latency_s = e.num("allreduce_latency_s", 0, 1);
    g.sm_count = static_cast<int>(e.integer("sm_count", 1, 100000));
    out.push_back(std::move(g));
  }
  check_unique(out, list, file);
  return out;
}

const std::vector<ModelSpec>& model_catalog() {
  static const std::vector<ModelSpec> models = [] {
    try {
      return parse_model_catalog(catalog_data::kModelsYaml, "sim/cost/catalog/models.yaml");
    } catch (const InputError& e) {
      throw InternalError(std::string("built-in model catalog: ") + e.what());
    }
  }();
  return models;
}

const std::vector<GpuSpec>& gpu_catalog() {
  static const std::vector<GpuSpec> gpus = [] {
    try {
      return parse_gpu_catalog(catalog_data::kGpusYaml, "sim/cost/catalog/gpus.yaml");
    } catch (const InputError& e) {
      throw InternalError(std::string("built-in GPU catalog: ") + e.what());
    }
  }();
  return gpus;
}

const ModelSpec& find_model(std::string_view name, std::string_view flag) {
  for (const ModelSpec& m : model_catalog())
    if (m.name == name) return m;
  throw InputError(std::string(flag) + ": unknown model '" + std::string(name) +
                   "' (known: " + known_names(model_catalog()) + ")");
}

const GpuSpec& find_gpu(std::string_view name, std::string_view flag) {
  for (const GpuSpec& g : gpu_catalog())
    if (g.name == name) return g;
  throw InputError(std::string(flag) + ": unknown GPU '" + std::string(name) + "' (known: " +
                   known_names(gpu_catalog()) + ")");
}

nlohmann::json to_json(const ModelSpec& m) {
  return {{"name", m.name},         {"source", m.source},   {"layers", m.layers},
          {"hidden", m.hidden},     {"heads", m.heads},     {"kv_heads", m.kv_heads},
          {"head_dim", m.head_dim}, {"intermediate", m.intermediate}, {"vocab", m.vocab},
          {"tied_embeddings", m.tied_embeddings}, {"params", m.params}, {"dtype_bytes", m.dtype_bytes}};
}

nlohmann::json to_json(const GpuSpec& g) {
  return {{"name", g.name},
          {"description", g.description},
          {"source", g.source},
          {"memory_bytes", g.memory_bytes},
          {"peak_bf16_flops", g.peak_bf16_flops},
          {"hbm_bandwidth", g.hbm_bandwidth},
          {"interconnect", g.interconnect},
          {"interconnect_bandwidth", g.interconnect_bandwidth},
          {"allreduce_latency_s", g.allreduce_latency_s},
          {"sm_count", g.sm_count}};
}

std::string model_in(const TextLoc& at, std::string_view field, std::string_view v) {
  try {
    return find_model(v, "").name;
  } catch (const InputError& e) {  // "...: unknown model 'x' (known: ...)", relocated to this line
    const std::string msg = e.what();
    at.fail(field, msg.substr(msg.find("unknown")));
  }
}

}  // namespace prefixsim

#include "sim/cost/catalog.h"

#include <yaml-cpp/yaml.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

#include "sim/base/atomic_file.h"
#include "sim/base/error.h"
#include "sim/base/yaml_doc.h"

namespace prefixsim {

namespace catalog_data {
extern const std::string_view kModelsYaml;  // generated from sim/cost/catalog/models.yaml
extern const std::string_view kGpusYaml;    // generated from sim/cost/catalog/gpus.yaml
}  // namespace catalog_data

int64_t ModelSpec::per_token_matmul_params() const {
  const int64_t embedding = static_cast<int64_t>(vocab) * hidden;
  return compute_params() - (tied_embeddings ? embedding : 2 * embedding);
}

int64_t ModelSpec::weight_bytes_read_per_step() const {
  const int64_t lm_head = static_cast<int64_t>(vocab) * hidden;
  const int64_t read_params = per_token_matmul_params() + lm_head;
  if (weight_bytes <= 0) return read_params * dtype_bytes;
  return std::llround(static_cast<double>(read_params) * static_cast<double>(weight_bytes) / static_cast<double>(params));
}

int64_t ModelSpec::routed_expert_params() const {
  if (!has_routing()) return 0;
  const double keep = 1.0 - static_cast<double>(experts_per_token) / experts;
  return std::llround(static_cast<double>(params - active_params) / keep);
}

double ModelSpec::routed_expert_bytes() const {
  const double bytes_per_param =
      weight_bytes > 0 ? static_cast<double>(weight_bytes) / static_cast<double>(params) : dtype_bytes;
  return static_cast<double>(routed_expert_params()) * bytes_per_param;
}

double ModelSpec::extra_expert_bytes_read(double tokens) const {
  if (!has_routing() || tokens <= 1) return 0;
  const double miss = 1.0 - static_cast<double>(experts_per_token) / experts;
  return routed_expert_bytes() * (miss - std::pow(miss, tokens));
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

  bool has(const char* key) const {
    const YAML::Node v = node_[key];
    return v && !v.IsNull();
  }
  YAML::Node field(const char* key) const {
    YAML::Node v = node_[key];
    if (!v || v.IsNull()) fail(node_, std::string("missing field '") + key + "'");
    if (!v.IsScalar()) fail(v, std::string("field '") + key + "' must be a scalar");
    return v;
  }
  std::string str(const char* key) const { return field(key).Scalar(); }  // UTF-8: load_yaml_strict checked it
  // An entry's name: what the catalog and reports list it by, so never empty.
  std::string name() const {
    const YAML::Node v = field("name");
    if (v.Scalar().empty()) fail(v, "field 'name' must not be empty");
    return v.Scalar();
  }
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
  const YAML::Node root = load_yaml_strict(std::string(yaml), file);
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

template <typename Specs>
std::string known_names(const Specs& specs) {
  using Spec = typename Specs::value_type;
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
                      "tied_embeddings", "params", "dtype_bytes", "active_params", "weight_bytes", "kv_lora_rank",
                      "qk_rope_head_dim", "experts", "experts_per_token"});
    ModelSpec m;
    m.name = e.name();
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
    if (e.has("active_params")) m.active_params = e.integer("active_params", 1, m.params);
    if (e.has("weight_bytes")) m.weight_bytes = e.integer("weight_bytes", 1, m.params * 8);
    if (e.has("kv_lora_rank") != e.has("qk_rope_head_dim"))
      e.fail(node, "fields 'kv_lora_rank' and 'qk_rope_head_dim' (multi-head latent attention) go together");
    if (e.has("kv_lora_rank")) {
      m.kv_lora_rank = static_cast<int>(e.integer("kv_lora_rank", 1, 65536));
      m.qk_rope_head_dim = static_cast<int>(e.integer("qk_rope_head_dim", 0, 65536));
    }
    if (e.has("experts") != e.has("experts_per_token"))
      e.fail(node, "fields 'experts' and 'experts_per_token' (mixture of experts routing) go together");
    if (e.has("experts")) {
      if (!m.is_moe()) e.fail(node["experts"], "field 'experts' needs 'active_params' (a mixture of experts)");
      m.experts = static_cast<int>(e.integer("experts", 2, 65536));
      m.experts_per_token = static_cast<int>(e.integer("experts_per_token", 1, m.experts - 1));
      if (m.routed_expert_params() > m.params)
        e.fail(node["experts"], "fields 'params', 'active_params', 'experts' and 'experts_per_token' disagree: "
                                "the routed experts they imply outnumber all parameters");
    }
    if (m.heads % m.kv_heads != 0) e.fail(node["kv_heads"], "field 'kv_heads' must divide 'heads'");
    if (m.per_token_matmul_params() <= 0)
      e.fail(node[m.is_moe() ? "active_params" : "params"],
             std::string("field '") + (m.is_moe() ? "active_params" : "params") +
                 "' is smaller than the embedding and lm_head alone");
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
                      "interconnect", "interconnect_bandwidth", "allreduce_latency_s", "sm_count",
                      "cost_per_hour"});
    GpuSpec g;
    g.name = e.name();
    g.description = e.str("description");
    g.source = e.str("source");
    g.memory_bytes = e.integer("memory_bytes", int64_t{1} << 20, int64_t{1} << 50);
    g.peak_bf16_flops = e.num("peak_bf16_flops", 1e9, 1e18);
    g.hbm_bandwidth = e.num("hbm_bandwidth", 1e9, 1e15);
    g.interconnect = e.str("interconnect");
    g.interconnect_bandwidth = e.num("interconnect_bandwidth", 1e6, 1e15);
    g.allreduce_latency_s = e.num("allreduce_latency_s", 0, 1);
    g.sm_count = static_cast<int>(e.integer("sm_count", 1, 100000));
    if (e.has("cost_per_hour")) g.cost_per_hour = e.num("cost_per_hour", 1e-9, 1e9);
    out.push_back(std::move(g));
  }
  check_unique(out, list, file);
  return out;
}

namespace {

std::deque<ModelSpec>& models_store() {
  static std::deque<ModelSpec> models = [] {
    try {
      const std::vector<ModelSpec> v = parse_model_catalog(catalog_data::kModelsYaml, "sim/cost/catalog/models.yaml");
      return std::deque<ModelSpec>(v.begin(), v.end());
    } catch (const InputError& e) {
      throw InternalError(std::string("built-in model catalog: ") + e.what());
    }
  }();
  return models;
}

std::deque<GpuSpec>& gpus_store() {
  static std::deque<GpuSpec> gpus = [] {
    try {
      const std::vector<GpuSpec> v = parse_gpu_catalog(catalog_data::kGpusYaml, "sim/cost/catalog/gpus.yaml");
      return std::deque<GpuSpec>(v.begin(), v.end());
    } catch (const InputError& e) {
      throw InternalError(std::string("built-in GPU catalog: ") + e.what());
    }
  }();
  return gpus;
}

std::string read_catalog_file(const std::string& file) { return read_whole_file(file, "catalog file", true); }

// The line of the entry named `name` in the file (for the duplicate error).
int line_of(std::string_view yaml, const std::string& file, const char* key, const std::string& name) {
  const YAML::Node root = load_yaml_strict(std::string(yaml), file);
  for (const YAML::Node& n : root[key])
    if (n["name"] && n["name"].Scalar() == name) return n["name"].Mark().line + 1;
  return 1;
}

template <typename Spec>
std::vector<std::string> add_user(std::deque<Spec>& store, const std::vector<Spec>& specs, std::string_view yaml,
                                  const char* key, const std::string& file, const char* what) {
  std::vector<std::string> names;
  for (const Spec& s : specs)
    for (const Spec& known : store)
      if (known.name == s.name)
        throw InputError(file, line_of(yaml, file, key, s.name),
                         std::string(what) + " '" + s.name + "' is already in the catalog; give it another name");
  for (const Spec& s : specs) {
    store.push_back(s);
    names.push_back(s.name);
  }
  return names;
}

}  // namespace

const std::deque<ModelSpec>& model_catalog() {
  load_catalog_env();
  return models_store();
}

const std::deque<GpuSpec>& gpu_catalog() {
  load_catalog_env();
  return gpus_store();
}

std::vector<std::string> add_user_models(const std::string& file) {
  const std::string yaml = read_catalog_file(file);
  return add_user(models_store(), parse_model_catalog(yaml, file), yaml, "models", file, "model");
}

std::vector<std::string> add_user_gpus(const std::string& file) {
  const std::string yaml = read_catalog_file(file);
  return add_user(gpus_store(), parse_gpu_catalog(yaml, file), yaml, "gpus", file, "GPU");
}

std::string catalog_file_kind(const std::string& file) {
  const std::string yaml = read_catalog_file(file);
  const YAML::Node root = load_yaml_strict(yaml, file);
  const bool models = root.IsMap() && root["models"];
  const bool gpus = root.IsMap() && root["gpus"];
  if (models == gpus) throw InputError(file, 1, "expected one top-level list, 'models' or 'gpus'");
  return models ? "models" : "gpus";
}

void load_catalog_env() {
  static bool loaded = false;
  if (loaded) return;
  loaded = true;
  const char* dir = std::getenv("PREFIXSIM_CATALOG");
  if (!dir || !*dir) return;
  const std::filesystem::path folder(dir);
  if (!std::filesystem::is_directory(folder))
    throw InputError(std::string("PREFIXSIM_CATALOG: '") + dir + "' is not a folder");
  if (std::filesystem::exists(folder / "models.yaml")) add_user_models((folder / "models.yaml").string());
  if (std::filesystem::exists(folder / "gpus.yaml")) add_user_gpus((folder / "gpus.yaml").string());
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
  nlohmann::json j = {{"name", m.name},         {"source", m.source},   {"layers", m.layers},
                      {"hidden", m.hidden},     {"heads", m.heads},     {"kv_heads", m.kv_heads},
                      {"head_dim", m.head_dim}, {"intermediate", m.intermediate}, {"vocab", m.vocab},
                      {"tied_embeddings", m.tied_embeddings}, {"params", m.params}, {"dtype_bytes", m.dtype_bytes}};
  // The optional fields only when set, so dense models' JSON is unchanged.
  if (m.active_params > 0) j["active_params"] = m.active_params;
  if (m.weight_bytes > 0) j["weight_bytes"] = m.weight_bytes;
  if (m.has_routing()) {
    j["experts"] = m.experts;
    j["experts_per_token"] = m.experts_per_token;
  }
  if (m.is_mla()) {
    j["kv_lora_rank"] = m.kv_lora_rank;
    j["qk_rope_head_dim"] = m.qk_rope_head_dim;
  }
  return j;
}

nlohmann::json to_json(const GpuSpec& g) {
  nlohmann::json j = {{"name", g.name},
          {"description", g.description},
          {"source", g.source},
          {"memory_bytes", g.memory_bytes},
          {"peak_bf16_flops", g.peak_bf16_flops},
          {"hbm_bandwidth", g.hbm_bandwidth},
          {"interconnect", g.interconnect},
          {"interconnect_bandwidth", g.interconnect_bandwidth},
          {"allreduce_latency_s", g.allreduce_latency_s},
          {"sm_count", g.sm_count}};
  if (g.cost_per_hour > 0) j["cost_per_hour"] = g.cost_per_hour;  // only when given: reports stay as they were
  return j;
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

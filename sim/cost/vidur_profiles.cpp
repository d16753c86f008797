#include "sim/cost/vidur_profiles.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <string_view>

#include "sim/base/error.h"
#include "sim/base/atomic_file.h"
#include "sim/base/text_fields.h"
#include "sim/cost/cost_model.h"

namespace prefixsim {

namespace {

constexpr std::string_view kPrefix = "time_stats.";
constexpr std::string_view kMedian = ".median";

std::string read_text(const std::string& path) {
  std::string text = read_whole_file(path, "Vidur profile", true);
  if (text.rfind("version https://git-lfs", 0) == 0)
    throw InputError(path + ": a Git LFS pointer, not the profile itself (fetch it with `git lfs pull`)");
  return text;
}

}  // namespace

std::vector<int> VidurMlpTable::tp_degrees() const {
  std::vector<int> tps;
  for (const Row& r : rows) tps.push_back(r.tp);
  std::sort(tps.begin(), tps.end());
  tps.erase(std::unique(tps.begin(), tps.end()), tps.end());
  return tps;
}

VidurMlpTable read_vidur_mlp(const std::string& path) { return parse_vidur_mlp(read_text(path), path); }

VidurMlpTable parse_vidur_mlp(const std::string& text, const std::string& file) {
  VidurMlpTable t;
  t.file = file;
  const std::vector<std::string_view> lines = split_lines(text);
  if (lines.empty() || trim(lines[0]).empty()) throw InputError(file, 1, "empty file: expected Vidur's mlp.csv header");
  const std::vector<std::string_view> header = split_commas(lines[0]);
  std::vector<size_t> op_col;
  std::map<std::string, size_t, std::less<>> col;
  for (size_t i = 0; i < header.size(); ++i) {
    const std::string_view h = trim(header[i]);
    col.emplace(std::string(h), i);
    if (h.substr(0, kPrefix.size()) == kPrefix && h.size() > kPrefix.size() + kMedian.size() &&
        h.substr(h.size() - kMedian.size()) == kMedian) {
      t.operators.emplace_back(h.substr(kPrefix.size(), h.size() - kPrefix.size() - kMedian.size()));
      op_col.push_back(i);
    }
  }
  const TextLoc head{file, 1};
  if (t.operators.empty()) head.fail("no time_stats.<operator>.median column: not a Vidur mlp.csv");
  auto need = [&](const char* name) {
    const auto it = col.find(name);
    if (it == col.end()) head.fail(name, "missing column");
    return it->second;
  };
  const size_t c_tokens = need("num_tokens"), c_tp = need("num_tensor_parallel_workers"), c_head = need("n_head"),
               c_kv = need("n_kv_head"), c_embd = need("n_embd"), c_ffn = need("n_expanded_embd"),
               c_vocab = need("vocab_size"), c_gated = need("use_gated_mlp");
  for (size_t li = 1; li < lines.size(); ++li) {
    if (trim(lines[li]).empty()) {
      for (size_t k = li; k < lines.size(); ++k)
        if (!trim(lines[k]).empty()) throw InputError(file, static_cast<long>(li + 1), "blank line inside the table");
      break;
    }
    const TextLoc at{file, static_cast<long>(li + 1)};
    const std::vector<std::string_view> f = split_commas(lines[li]);
    if (f.size() != header.size())
      at.fail(std::to_string(f.size()) + " fields, the header has " + std::to_string(header.size()));
    VidurMlpTable::Row r;
    r.line = at.line;
    r.num_tokens = integer_in(at, "num_tokens", trim(f[c_tokens]), 1, int64_t{1} << 30, "a positive integer");
    r.tp = static_cast<int>(integer_in(at, "num_tensor_parallel_workers", trim(f[c_tp]), 1, 64, "in [1, 64]"));
    for (size_t k = 0; k < op_col.size(); ++k)
      r.median_ms.push_back(number_in(at, header[op_col[k]], trim(f[op_col[k]]), 0, false, 1e6,
                                      "a time in milliseconds >= 0"));
    const int shape[] = {static_cast<int>(integer_in(at, "n_head", trim(f[c_head]), 1, 1 << 16, "a positive integer")),
                         static_cast<int>(integer_in(at, "n_kv_head", trim(f[c_kv]), 1, 1 << 16, "a positive integer")),
                         static_cast<int>(integer_in(at, "n_embd", trim(f[c_embd]), 1, 1 << 20, "a positive integer")),
                         static_cast<int>(integer_in(at, "n_expanded_embd", trim(f[c_ffn]), 1, 1 << 22, "a positive integer")),
                         static_cast<int>(integer_in(at, "vocab_size", trim(f[c_vocab]), 1, 1 << 24, "a positive integer"))};
    const std::string_view gated = trim(f[c_gated]);
    if (gated != "True" && gated != "False") at.fail("use_gated_mlp", "must be True or False, not " + shown(gated));
    if (t.rows.empty()) {
      t.n_head = shape[0], t.n_kv_head = shape[1], t.n_embd = shape[2], t.n_expanded_embd = shape[3],
      t.vocab_size = shape[4], t.gated_mlp = gated == "True";
    } else if (t.n_head != shape[0] || t.n_kv_head != shape[1] || t.n_embd != shape[2] ||
               t.n_expanded_embd != shape[3] || t.vocab_size != shape[4] || t.gated_mlp != (gated == "True")) {
      at.fail("the model's shape (n_head, n_kv_head, n_embd, n_expanded_embd, vocab_size, use_gated_mlp) differs "
              "from line 2's: one model per file");
    }
    t.rows.push_back(std::move(r));
  }
  if (t.rows.empty()) throw InputError(file, 2, "no rows after the header");
  return t;
}

std::string vidur_gpu_catalog_name(const std::string& vidur_gpu) {
  if (vidur_gpu == "h100") return "h100-sxm-80gb";  // Vidur's H100s are SXM (DGX) parts
  if (vidur_gpu == "a100") return "a100-80gb";
  if (vidur_gpu == "a40") return "a40-48gb";
  return "";
}

const ModelSpec* match_vidur_model(const VidurMlpTable& t) {
  // Vidur's tables pad the vocabulary (Llama-2's 32000 is 32768 there), so
  // among the models of the same shape the one whose vocabulary is the
  // largest not above the table's wins (Llama-2-70B over Llama-3.1-70B, whose
  // layers are the same), then the closest; catalog order breaks ties.
  const ModelSpec* best = nullptr;
  auto rank = [&](const ModelSpec& m) {
    const int64_t gap = int64_t{t.vocab_size} - m.vocab;
    return gap >= 0 ? gap : (int64_t{1} << 40) - gap;
  };
  for (const ModelSpec& m : model_catalog())
    if (m.hidden == t.n_embd && m.heads == t.n_head && m.kv_heads == t.n_kv_head &&
        m.intermediate == t.n_expanded_embd && !m.is_moe() && (!best || rank(m) < rank(*best)))
      best = &m;
  return best;
}

VidurFit fit_vidur(const VidurMlpTable& t, int tp, const ModelSpec* model, int held_out_every) {
  VidurFit out;
  out.tp = tp;
  std::vector<const VidurMlpTable::Row*> rows;
  for (const auto& r : t.rows)
    if (r.tp == tp) rows.push_back(&r);
  // The split is made here, before any fit: rows ordered by token count (file
  // order breaks ties), every K-th held out, the same rows for every operator.
  std::stable_sort(rows.begin(), rows.end(),
                   [](const auto* a, const auto* b) { return a->num_tokens < b->num_tokens; });
  if (rows.empty()) throw InputError(t.file + ": no rows at TP " + std::to_string(tp));
  FitOptions fo;
  fo.held_out_every = held_out_every;
  fo.fit_per_seq = false;
  auto sample = [](int64_t n, double ms) {
    StepSample s;
    s.shape.add(n, 0);
    s.shape.attn_units = 0;
    s.shape.context_tokens = 0;
    s.seconds = ms * 1e-3;
    return s;
  };
  for (size_t k = 0; k < t.operators.size(); ++k) {
    std::vector<StepSample> samples;
    bool all_zero = true;
    for (const auto* r : rows) all_zero = all_zero && r->median_ms[k] <= 0;
    if (all_zero) continue;  // an operator the model does not run (e.g. no rope)
    for (const auto* r : rows) {
      if (!(r->median_ms[k] > 0))
        throw InputError(t.file, r->line, "field 'time_stats." + t.operators[k] + ".median': a zero time among non-zero ones");
      samples.push_back(sample(r->num_tokens, r->median_ms[k]));
    }
    try {
      out.operators.push_back({t.operators[k], fit_cost_model(samples, fo)});
    } catch (const InputError& e) {
      throw InputError(t.file + ": operator " + t.operators[k] + " at TP " + std::to_string(tp) + ": " + e.what());
    }
  }
  if (model) {
    std::vector<StepSample> samples;
    for (const auto* r : rows) {
      double layer = 0, once = 0;
      for (size_t k = 0; k < t.operators.size(); ++k) {
        const std::string& op = t.operators[k];
        if (op == "emb") once += r->median_ms[k];
        else layer += r->median_ms[k] * (op == "add" ? 2 : 1);  // two residual adds per layer
      }
      samples.push_back(sample(r->num_tokens, once + layer * model->layers));
    }
    out.step = fit_cost_model(samples, fo);
    out.has_step = true;
  }
  return out;
}

Profile vidur_profile(const VidurFit& fit, const ModelSpec& model, const GpuSpec& gpu, const std::string& vidur_gpu,
                      const std::string& source, const std::string& date) {
  if (!fit.has_step) throw InternalError("vidur_profile: no whole-step fit");
  Profile p;
  p.gpu.name = "Vidur profiling (" + vidur_gpu + ")";
  p.gpu.catalog = gpu.name;
  p.gpu.sm_count = gpu.sm_count;  // the catalog's: Vidur does not record the part
  p.gpu.driver = "unknown (Vidur's profiles do not record it)";
  p.gpu.cuda = "unknown";
  p.model = model.name;
  p.tp = fit.tp;
  p.date = date;
  // Attention, KV read, logits, host overhead and the all-reduce: the roofline's.
  CostCoefficients c = roofline_coefficients(model, gpu, fit.tp);
  c.linear_s_per_token = fit.step.coefficients.linear_s_per_token;
  c.weight_floor_s = fit.step.coefficients.weight_floor_s;
  c.overhead_s += fit.step.coefficients.overhead_s;
  p.coefficients = c;
  p.fit = fit.step.fit;
  p.fit.method = "Vidur operator medians, non-attention step (emb + layers x operators): " + fit.step.fit.method;
  p.provenance = "prefixsim gpu calibrate --from-vidur; " + source +
                 "; linear terms (linear_s_per_token, weight_floor_s, part of overhead_s) fitted to Vidur's "
                 "mlp.csv at TP " + std::to_string(fit.tp) +
                 " (one shard timed); attention, KV read, per-sequence logits, 1 ms host overhead and TP "
                 "all-reduce from the roofline (Vidur's attention.csv are Git LFS objects, not in the snapshot "
                 "read). MAPEs are of the non-attention step on held-out Vidur rows.";
  return p;
}

namespace fs = std::filesystem;

std::vector<fs::path> vidur_mlp_files(const std::string& dir) {
  std::error_code ec;
  if (fs::is_regular_file(dir, ec)) return {fs::path(dir)};
  if (!fs::is_directory(dir, ec)) throw InputError("--from-vidur: " + dir + ": no such folder or file");
  std::vector<fs::path> out;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec))
    if (it->is_regular_file() && it->path().filename() == "mlp.csv") out.push_back(it->path());
  if (ec) throw InputError("--from-vidur: " + dir + ": " + ec.message());
  std::sort(out.begin(), out.end());
  if (out.empty())
    throw InputError("--from-vidur: no mlp.csv under " + dir +
                     " (Vidur's layout: data/profiling/compute/<gpu>/<org>/<model>/mlp.csv)");
  return out;
}

std::string vidur_gpu_of(const fs::path& file) {
  std::vector<std::string> parts;
  for (const auto& p : file.parent_path()) parts.push_back(p.string());
  for (size_t i = 0; i + 1 < parts.size(); ++i)
    if (parts[i] == "compute") return parts[i + 1];
  return parts.size() >= 3 ? parts[parts.size() - 3] : "";
}

std::string vidur_model_dir_of(const fs::path& file) {
  const fs::path dir = file.parent_path();
  return dir.parent_path().filename().string() + "/" + dir.filename().string();
}

std::string vidur_repo_path_of(const fs::path& file) {
  return "data/profiling/compute/" + vidur_gpu_of(file) + "/" + vidur_model_dir_of(file) + "/mlp.csv";
}

}  // namespace prefixsim

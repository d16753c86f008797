// `prefixsim gpu calibrate --from-vidur DIR`: fits cost-model profiles from
// Vidur's published operator profiles (sim/cost/vidur_profiles.h) and prints
// the held-out error per operator, model and TP degree.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "sim/base/error.h"
#include "sim/cli/commands.h"
#include "sim/cost/catalog.h"
#include "sim/cost/vidur_profiles.h"

namespace prefixsim::cli {

namespace {

namespace fs = std::filesystem;

std::string pct(double fraction) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f %%", fraction * 100);
  return buf;
}

}  // namespace

int calibrate_from_vidur(const VidurCalibrateArgs& a) {
  load_catalog_env();
  const std::vector<fs::path> files = vidur_mlp_files(a.dir);
  if (!a.model.empty() && files.size() > 1)
    throw InputError("--model: names the model of one mlp.csv, but " + a.dir + " holds " +
                     std::to_string(files.size()));
  // The profiles' date is the data's (e.g. the Vidur commit's), stated by
  // the user: today's date would make every rerun's files differ.
  if (!a.out_dir.empty() && a.date.empty())
    throw InputError("--date: required with --out-dir (the date of the data the profiles are fitted on, ISO 8601, "
                     "e.g. the Vidur commit's)");
  const std::string& date = a.date;
  if (!date.empty() && !looks_like_iso_date(date))
    throw InputError("--date: must be an ISO 8601 date, not '" + date + "'");
  int written = 0;
  for (const fs::path& file : files) {
    const VidurMlpTable t = read_vidur_mlp(file.string());
    const std::string vgpu = vidur_gpu_of(file);
    const std::string gpu_name = a.gpu.empty() ? vidur_gpu_catalog_name(vgpu) : find_gpu(a.gpu, "--gpu").name;
    const ModelSpec* model = a.model.empty() ? match_vidur_model(t) : &find_model(a.model, "--model");
    std::cout << "Vidur " << vgpu << " " << vidur_model_dir_of(file) << " (" << file.string() << "): model "
              << (model ? model->name : "not in the catalog (operators only)") << ", GPU "
              << (gpu_name.empty() ? "not in the catalog" : gpu_name) << "\n";
    for (int tp : t.tp_degrees()) {
      if (a.tp > 0 && tp != a.tp) continue;
      const VidurFit fit = fit_vidur(t, tp, model, a.held_out_every);
      size_t rows = 0;
      for (const auto& r : t.rows) rows += r.tp == tp;
      std::cout << "  TP " << tp << ": " << rows << " rows; held-out MAPE per operator:";
      for (size_t k = 0; k < fit.operators.size(); ++k)
        std::cout << (k ? ", " : " ") << fit.operators[k].op << " " << pct(fit.operators[k].fit.fit.mape_held_out);
      std::cout << "\n";
      if (!fit.has_step) continue;
      std::cout << "    step (" << model->name << ", emb + " << model->layers << " layers): held-out MAPE "
                << pct(fit.step.fit.mape_held_out) << " (" << fit.step.fit.held_out_samples << " rows, max "
                << pct(fit.step.fit.max_ape_held_out) << "), train " << pct(fit.step.fit.mape_train) << "\n";
      if (a.out_dir.empty() || gpu_name.empty()) continue;
      const GpuSpec& gpu = find_gpu(gpu_name, "--gpu");
      if (tp > 1 && model->kv_heads % tp != 0) continue;  // a TP degree the model cannot shard
      const std::string source = (a.source.empty() ? std::string("Vidur profiles") : a.source) + ", file " +
                                 (a.source.empty() ? file.string() : vidur_repo_path_of(file));
      const Profile p = vidur_profile(fit, *model, gpu, vgpu, source, date);
      const std::string out = a.out_dir + "/" + gpu.name + "." + model->name + ".tp" + std::to_string(tp) + ".json";
      write_profile(out, p);
      std::cout << "    wrote " << out << "\n";
      ++written;
    }
  }
  if (!a.out_dir.empty()) std::cout << written << " profile(s) written to " << a.out_dir << "\n";
  return 0;
}

}  // namespace prefixsim::cli

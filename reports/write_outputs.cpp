#include <filesystem>

#include "reports/outputs.h"
#include "sim/base/atomic_file.h"
#include "sim/base/error.h"

namespace prefixsim {

void write_run_outputs(const std::string& out_dir, const RunReport& r) {
  // Render everything first, so a failure leaves the directory as it was.
  const std::pair<const char*, std::string> files[] = {
      {"report.json", render_report_json(r)},   {"series.csv", render_series_csv(r)},
      {"summary.md", render_summary_md(r)},     {"metrics.prom", render_metrics_prom(r)},
      {"report.html", render_report_html(r)},
  };
  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  if (ec) throw InputError(out_dir + ": cannot create the output directory (--out): " + ec.message());
  for (const auto& [name, content] : files) write_file_atomic(out_dir + "/" + name, content);
}

}  // namespace prefixsim

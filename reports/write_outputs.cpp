#include <filesystem>

#include "reports/outputs.h"
#include "sim/base/atomic_file.h"
#include "sim/base/error.h"

namespace prefixsim {

const std::vector<std::string>& run_output_names() {
  static const std::vector<std::string> names = {"report.json", "series.csv", "summary.md", "metrics.prom",
                                                 "report.html"};
  return names;
}

void write_run_outputs(const std::string& out_dir, const RunReport& r, const std::vector<AtomicFile*>& also) {
  // Render everything first, so a failure leaves the directory as it was.
  const std::string files[] = {render_report_json(r), render_series_csv(r), render_summary_md(r),
                               render_metrics_prom(r), render_report_html(r)};
  OutputSet outputs(out_dir, "--out");
  for (size_t i = 0; i < run_output_names().size(); ++i) outputs.add(run_output_names()[i], files[i]);
  for (AtomicFile* f : also) outputs.add_external(*f);
  outputs.commit();
}

}  // namespace prefixsim

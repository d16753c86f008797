#include <filesystem>

#include "reports/compare_text.h"
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

const std::vector<std::string>& compare_output_names() {
  static const std::vector<std::string> names = {"compare.json", "compare.csv", "compare.md", "compare.html"};
  return names;
}

void write_compare_outputs(const std::string& out_dir, const CompareReport& r) {
  const std::string json = render_compare_json(r);
  OutputSet outputs(out_dir, "--out");  // the four files appear together or not at all
  outputs.add("compare.json", json);
  outputs.add("compare.csv", render_compare_csv(r));
  outputs.add("compare.md", render_compare_md(r));
  outputs.add("compare.html", render_compare_html(nlohmann::json::parse(json)));
  outputs.commit();
}

}  // namespace prefixsim

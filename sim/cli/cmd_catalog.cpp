// `prefixsim catalog`: the built-in models and GPUs, the KV bytes each model
// needs per token and per block, and the default KV pool every model gets on
// every GPU -- a capacity planner's first table. `--profile P` validates and
// shows a calibrated cost-model profile instead.
#include <iostream>
#include <string>

#include "sim/base/error.h"
#include "sim/cli/commands.h"
#include "sim/cli/options.h"
#include "sim/cost/catalog.h"
#include "sim/cost/catalog_listing.h"
#include "sim/cost/kv_sizing.h"
#include "sim/scenario/scenario.h"

namespace prefixsim::cli {

int cmd_catalog(const Args& args) {
  po::options_description opts("options");
  add_scenario_options(opts, kForCatalog);  // block size, memory utilisation, TP, user catalogs
  opts.add_options()
      ("json", "print JSON instead of tables")
      ("profile", po::value<std::string>(), "validate and show a calibrated cost-model profile instead")
      ("check", po::value<std::string>(),
       "validate a user catalog file (a top-level models: or gpus: list) and print what it defines");
  po::positional_options_description pos;
  po::variables_map vm;
  if (!parse_args(args, opts, pos, vm,
                  "prefixsim catalog [--tp K] [--gpu-mem-util F] [--block-size B] [--json]\n"
                  "                  [--model-file F] [--gpu-file F] | --profile P | --check FILE",
                  "Lists the built-in models and GPUs with the figures the simulator uses (each with its\n"
                  "source in sim/cost/catalog/*.yaml), the KV cache bytes per token and per block, and the\n"
                  "default KV pool of every model on every GPU at the given TP and memory utilisation,\n"
                  "derived as `prefixsim replay` derives it. With --profile, checks a calibrated profile\n"
                  "(schema prefixsim.profile/1) and prints its coefficients and fit error; a bad profile\n"
                  "exits 2 naming the file, line and field. --model-file / --gpu-file (and the folder\n"
                  "$PREFIXSIM_CATALOG, whose models.yaml and gpus.yaml are read when present) add user\n"
                  "entries; --check FILE validates such a file and prints the entries it defines."))
    return 0;
  const bool json = vm.count("json") > 0;
  if (vm.count("profile")) return show_profile(std::cout, vm["profile"].as<std::string>(), json);
  if (vm.count("check")) return check_catalog_file(std::cout, vm["check"].as<std::string>(), json);
  Scenario s;
  apply_scenario_flags(vm, kForCatalog, s);
  validate(s);  // flag errors that do not depend on the model (the per-cell ones do), the table's ranges
  if (!s.model_file.empty()) add_user_models(s.model_file);
  if (!s.gpu_file.empty()) add_user_gpus(s.gpu_file);

  KvSizingInput base;
  base.block_size = s.block_size;
  base.gpu_mem_util = s.gpu_mem_util;
  base.tp = s.tp;

  if (json) print_catalog_json(std::cout, base);
  else print_catalog_tables(std::cout, base);
  return 0;
}

}  // namespace prefixsim::cli

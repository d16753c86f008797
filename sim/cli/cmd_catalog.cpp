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

namespace prefixsim::cli {

int cmd_catalog(const Args& args) {
  po::options_description opts("options");
  opts.add_options()
      ("block-size", po::value<int>()->default_value(16), "tokens per KV block")
      ("gpu-mem-util", po::value<double>()->default_value(0.9), "fraction of GPU memory vLLM may use")
      ("tp", po::value<int>()->default_value(1), "tensor-parallel degree (pool sizes are per shard)")
      ("json", "print JSON instead of tables")
      ("profile", po::value<std::string>(), "validate and show a calibrated cost-model profile instead")
      ("model-file", po::value<std::string>(), "add the models of this YAML file (the built-in schema)")
      ("gpu-file", po::value<std::string>(), "add the GPUs of this YAML file (the built-in schema)")
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
  if (vm.count("model-file")) add_user_models(vm["model-file"].as<std::string>());
  if (vm.count("gpu-file")) add_user_gpus(vm["gpu-file"].as<std::string>());

  KvSizingInput base;
  base.block_size = vm["block-size"].as<int>();
  base.gpu_mem_util = vm["gpu-mem-util"].as<double>();
  base.tp = vm["tp"].as<int>();
  // Flag errors that do not depend on the model (the per-cell ones do).
  if (base.block_size < 1 || base.block_size > 65536) throw InputError("--block-size: must be in [1, 65536]");
  if (!(base.gpu_mem_util > 0 && base.gpu_mem_util <= 1)) throw InputError("--gpu-mem-util: must be in (0, 1]");
  if (base.tp < 1 || base.tp > 64) throw InputError("--tp: must be in [1, 64]");

  if (json) print_catalog_json(std::cout, base);
  else print_catalog_tables(std::cout, base);
  return 0;
}

}  // namespace prefixsim::cli

// What `prefixsim catalog` prints: the catalog's models and GPUs with the KV
// bytes per token and block, every model's default pool on every GPU (sized
// as a replay sizes it), the shipped profiles; a profile's coefficients and
// fit; the entries a user catalog file adds. Tables for a terminal, or JSON.
#pragma once

#include <ostream>
#include <string>

#include "sim/cost/kv_sizing.h"

namespace prefixsim {

void print_catalog_tables(std::ostream& os, const KvSizingInput& base);
void print_catalog_json(std::ostream& os, const KvSizingInput& base);
// `catalog --profile P`: a profile file (or a shipped profile's name).
int show_profile(std::ostream& os, const std::string& path, bool json);
// `catalog --check FILE`: loads FILE as --model-file or --gpu-file would
// (its top-level key says which) and prints the entries it adds.
int check_catalog_file(std::ostream& os, const std::string& file, bool json);

}  // namespace prefixsim

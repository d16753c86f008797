#include "traces/trace_checksum.h"

#include <xxhash.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <vector>

#include "sim/base/error.h"

namespace prefixsim {
namespace {

namespace fs = std::filesystem;

void hash_file(XXH3_state_t* st, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path + ": cannot be read for its checksum");
  std::vector<char> buf(size_t{1} << 20);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    XXH3_128bits_update(st, buf.data(), static_cast<size_t>(in.gcount()));
  }
  if (in.bad()) throw InputError(path + ": read error while taking its checksum");
}

}  // namespace

std::string trace_checksum(const std::string& path) {
  if (path == "-") return "";
  std::unique_ptr<XXH3_state_t, decltype(&XXH3_freeState)> st(XXH3_createState(), XXH3_freeState);
  XXH3_128bits_reset(st.get());
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(path, ec))
      if (e.is_regular_file(ec)) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    for (const std::string& n : names) {
      XXH3_128bits_update(st.get(), n.data(), n.size() + 1);  // with its NUL: names cannot run into bytes
      hash_file(st.get(), path + "/" + n);
    }
  } else {
    hash_file(st.get(), path);
  }
  const XXH128_hash_t h = XXH3_128bits_digest(st.get());
  char hex[33];
  std::snprintf(hex, sizeof hex, "%016llx%016llx", static_cast<unsigned long long>(h.high64),
                static_cast<unsigned long long>(h.low64));
  return hex;
}

}  // namespace prefixsim

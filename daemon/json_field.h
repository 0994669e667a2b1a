// One field of a control-socket JSON object, read without exceptions: the
// requests and replies of dataset_request.h and replication_request.h.
#pragma once

#include <nlohmann/json.hpp>

namespace poolfs::daemon {

// Sets *out to j[key] and returns true when j has the key with a value of
// that type; false (leaving *out) otherwise.
template <typename T>
bool JsonField(const nlohmann::json& j, const char* key, T* out) {
  auto it = j.find(key);
  if (it == j.end()) return false;
  try {
    *out = it->get<T>();
  } catch (const nlohmann::json::exception&) {
    return false;
  }
  return true;
}

}  // namespace poolfs::daemon

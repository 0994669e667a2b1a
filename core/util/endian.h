// Explicit little-endian encoding for on-disk structures: in-memory and
// on-disk state are never confused, whatever the host byte order.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>

namespace poolfs::util {

inline void PutLE16(uint8_t* p, uint16_t v) {
  p[0] = uint8_t(v);
  p[1] = uint8_t(v >> 8);
}
inline void PutLE32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = uint8_t(v >> (8 * i));
}
inline void PutLE64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = uint8_t(v >> (8 * i));
}
inline uint16_t GetLE16(const uint8_t* p) { return uint16_t(p[0] | (p[1] << 8)); }
inline uint32_t GetLE32(const uint8_t* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; i--) v = (v << 8) | p[i];
  return v;
}
inline uint64_t GetLE64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
  return v;
}

// Appends little-endian values to a byte string.
inline void AppendLE64(std::string* out, uint64_t v) {
  uint8_t b[8];
  PutLE64(b, v);
  out->append(reinterpret_cast<const char*>(b), 8);
}
inline void AppendLE32(std::string* out, uint32_t v) {
  uint8_t b[4];
  PutLE32(b, v);
  out->append(reinterpret_cast<const char*>(b), 4);
}

}  // namespace poolfs::util

// libFuzzer target for the block reference table's decoder
// (core/zio/block_ref_table.h, section 9.4 of core/doc/on-disk-format.md).
//
// Input: [u16 little-endian V][table bytes...]. The pool's vdev count is
// 1 + V % 4096 (a pool has 1 to 4096 vdevs); the rest is the content of the
// table's MOS object.
//
// Properties checked (a violation aborts):
//   - decoding never crashes and fails only with Corruption;
//   - decoding is deterministic;
//   - the decoder accepts exactly what the format allows, judged here with
//     separate arithmetic: a length that is a multiple of 32, and entries
//     with a zero reserved field, a vdev below the count, an offset that is
//     a multiple of 512, at least one reference, an allocated size that is
//     a multiple of 512 from 512 to three 16 MiB copies, an extent that
//     does not pass 2^64, keys (vdev, offset) strictly ascending; a refusal
//     of whole entries names the first entry that breaks a rule;
//   - the encoding is canonical: whatever decodes re-encodes to exactly the
//     input bytes;
//   - a table loaded with what decodes gives it back and counts it.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "util/endian.h"
#include "zio/block_ref_table.h"

namespace {

using poolfs::Result;
using poolfs::StatusCode;
using poolfs::core::zio::BlockRefTable;

[[noreturn]] void Fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "block_ref_table_fuzz: %s: %s\n", what, detail.c_str());
  std::abort();
}

// The index of the first entry that breaks a rule of the format, or the
// entry count when none does.
size_t FirstBadEntry(const std::string& in, uint32_t vdevs) {
  const size_t n = in.size() / 32;
  const auto* p = reinterpret_cast<const uint8_t*>(in.data());
  uint32_t prev_vdev = 0;
  uint64_t prev_offset = 0;
  for (size_t i = 0; i < n; i++, p += 32) {
    const uint64_t offset = poolfs::util::GetLE64(p);
    const uint32_t vdev = poolfs::util::GetLE32(p + 8);
    const uint32_t reserved = poolfs::util::GetLE32(p + 12);
    const uint64_t refs = poolfs::util::GetLE64(p + 16);
    const uint64_t allocated = poolfs::util::GetLE64(p + 24);
    const bool ascending =
        i == 0 || vdev > prev_vdev || (vdev == prev_vdev && offset > prev_offset);
    const bool size_ok =
        allocated >= 512 && allocated % 512 == 0 && allocated <= 3 * (uint64_t{16} << 20);
    if (reserved != 0 || vdev >= vdevs || offset % 512 != 0 || refs == 0 || !size_ok ||
        offset + allocated < offset || !ascending)
      return i;
    prev_vdev = vdev;
    prev_offset = offset;
  }
  return n;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const uint32_t vdevs = 1 + poolfs::util::GetLE16(data) % 4096;
  const std::string in(reinterpret_cast<const char*>(data + 2), size - 2);
  Result<BlockRefTable::Entries> got = BlockRefTable::Decode(in, vdevs);
  Result<BlockRefTable::Entries> again = BlockRefTable::Decode(in, vdevs);
  if (got.ok() != again.ok() || (got.ok() && *got != *again))
    Fail("decoding is not deterministic", "");

  const bool whole = in.size() % 32 == 0;
  const size_t n = in.size() / 32;
  const size_t bad = whole ? FirstBadEntry(in, vdevs) : 0;
  if (!got.ok()) {
    if (got.status().code() != StatusCode::kCorruption)
      Fail("unexpected status", got.status().ToString());
    if (whole && bad == n) Fail("a valid table is refused", got.status().ToString());
    // A refusal of whole entries names the first bad one.
    const std::string names = "block reference table entry " + std::to_string(bad) + " (";
    if (whole && got.status().message().find(names) == std::string::npos)
      Fail("the refusal does not name the first bad entry",
           std::to_string(bad) + ": " + got.status().ToString());
    return 0;
  }
  if (!whole) Fail("a length that is not whole entries decodes", std::to_string(in.size()));
  if (bad != n) Fail("an invalid entry decodes", "entry " + std::to_string(bad));
  if (got->size() != n)
    Fail("decoded entries", std::to_string(got->size()) + " of " + std::to_string(n));
  if (BlockRefTable::Encode(*got) != in) Fail("the table re-encodes to other bytes", "");

  BlockRefTable table;
  table.Load(*got);
  if (table.Snapshot() != *got) Fail("a loaded table", "gives back other entries");
  if (table.stats().entries != n || table.stats().pending != 0)
    Fail("a loaded table",
         "counts " + std::to_string(table.stats().entries) + " entries of " + std::to_string(n));
  if (table.TakeDirty()) Fail("a loaded table", "is dirty");
  return 0;
}

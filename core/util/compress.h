// Block compression: lz4 and zstd behind one small API.
//
// The zio write pipeline compresses a logical block before checksumming and
// allocating it; the read pipeline verifies the checksum of the physical
// (compressed) bytes, then decompresses. The contract between them:
//
//   1. Write: call Compress(algo, block, lsize, scratch, cap). If it returns a
//      size, store those bytes (psize = that size, rounded up by the caller to
//      its sector size) and record `algo` in the block pointer. If it returns
//      NotSupported, the block does not compress well enough: store it
//      uncompressed and record Compression::kOff. Any other status is a bug.
//   2. Read: call Decompress(algo, phys, psize_exact, out, lsize). The caller
//      must pass the exact compressed length (Compress's return value, which the
//      block pointer or a header in the block must therefore keep) and the exact
//      logical size; anything that does not decode to exactly that many bytes is
//      Corruption.
//
// "Well enough" is CompressLimit(len): the output must be at most len - len/8
// bytes, so a compressed block saves at least an eighth (one 512 B sector of a
// 4 KiB block) — otherwise decompressing costs time for nothing.
//
// Decompress never reads or writes out of bounds, whatever the input (the lz4
// "safe" decoder and zstd both validate their streams). It cannot detect every
// damage: lz4 carries no checksum, so a flipped literal byte decodes to wrong
// bytes of the right length. That is the block checksum's job, which the read
// pipeline checks before decompressing.
//
// Thread safety: all functions may be called from any number of threads at
// once. zstd contexts are kept per thread (thread_local) and reused.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "poolfs/status.h"

namespace poolfs::util {

// On-disk values (block pointers store them): never renumber.
enum class Compression : uint8_t { kOff = 0, kLz4 = 1, kZstd = 2 };

// The zstd level used when Compress is given level 0.
inline constexpr int kDefaultZstdLevel = 1;

// Returns "off", "lz4" or "zstd" ("unknown" for any other value).
std::string_view CompressionName(Compression c);

// Parses "off", "lz4" or "zstd"; InvalidArgument naming the accepted values
// otherwise.
Result<Compression> ParseCompression(std::string_view name);

// Returns true when `value` is one of the Compression enumerators (for
// decoders of on-disk fields).
bool IsValidCompression(uint8_t value);

// The largest compressed size Compress accepts for a `len`-byte input:
// len - len/8.
inline size_t CompressLimit(size_t len) { return len - len / 8; }

// Compresses [src, src+len) into dst and returns the compressed size, which is
// at most min(dst_cap, CompressLimit(len)).
// `level`: for zstd, the compression level (0 = kDefaultZstdLevel; negative
// levels are zstd's fast modes); for lz4, the acceleration (0 or 1 = default).
// Fails with:
//   NotSupported  the output does not fit in min(dst_cap, CompressLimit(len)):
//                 the caller stores the block uncompressed (see above); also
//                 for Compression::kOff, which has nothing to do.
//   InvalidArgument  an unknown algorithm or len above 2 GiB (lz4's limit).
Result<size_t> Compress(Compression algo, const void* src, size_t len, void* dst, size_t dst_cap,
                        int level = 0);

// Decompresses exactly src_len bytes of `algo` output into exactly dst_len
// bytes at dst. For Compression::kOff, copies src to dst and requires src_len
// == dst_len.
// Fails with Corruption when the input is malformed, truncated, has trailing
// bytes, or decodes to any length other than dst_len; InvalidArgument for an
// unknown algorithm or sizes above 2 GiB.
Status Decompress(Compression algo, const void* src, size_t src_len, void* dst, size_t dst_len);

}  // namespace poolfs::util

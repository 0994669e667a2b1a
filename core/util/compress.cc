#include "util/compress.h"

#include <lz4.h>
#include <zstd.h>
#include <zstd_errors.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <string>

namespace poolfs::util {
namespace {

// One zstd compression and one decompression context per thread, created on
// first use and freed when the thread exits. Creating a context costs more
// than compressing a small block, so reusing them matters.
struct ZstdContexts {
  ZSTD_CCtx* cctx = nullptr;
  ZSTD_DCtx* dctx = nullptr;
  ~ZstdContexts() {
    ZSTD_freeCCtx(cctx);
    ZSTD_freeDCtx(dctx);
  }
};

ZstdContexts& ThreadZstd() {
  thread_local ZstdContexts contexts;
  return contexts;
}

Status TooBig(size_t len) {
  return Status::InvalidArgument("block of " + std::to_string(len) +
                                 " bytes is too large to compress (limit 2 GiB)");
}

Status DoesNotFit(size_t len, size_t limit) {
  return Status::NotSupported("block of " + std::to_string(len) + " bytes does not compress to " +
                              std::to_string(limit) + " bytes or less; store it uncompressed");
}

Result<size_t> CompressLz4(const void* src, size_t len, void* dst, size_t limit, int level) {
  int out = LZ4_compress_fast(static_cast<const char*>(src), static_cast<char*>(dst),
                              static_cast<int>(len), static_cast<int>(limit), std::max(level, 1));
  if (out <= 0) return DoesNotFit(len, limit);
  return static_cast<size_t>(out);
}

Result<size_t> CompressZstd(const void* src, size_t len, void* dst, size_t limit, int level) {
  ZstdContexts& z = ThreadZstd();
  if (z.cctx == nullptr) {
    z.cctx = ZSTD_createCCtx();
    if (z.cctx == nullptr) return Status::IOError("zstd: cannot allocate a compression context");
  }
  ZSTD_CCtx_reset(z.cctx, ZSTD_reset_session_and_parameters);
  // The block checksum covers the output; zstd's own frame checksum and
  // dictionary id would only cost bytes. The content size stays in the frame:
  // it lets the decoder reject a frame of the wrong length early.
  ZSTD_CCtx_setParameter(z.cctx, ZSTD_c_compressionLevel, level == 0 ? kDefaultZstdLevel : level);
  ZSTD_CCtx_setParameter(z.cctx, ZSTD_c_checksumFlag, 0);
  ZSTD_CCtx_setParameter(z.cctx, ZSTD_c_dictIDFlag, 0);
  size_t out = ZSTD_compress2(z.cctx, dst, limit, src, len);
  if (ZSTD_isError(out)) {
    if (ZSTD_getErrorCode(out) == ZSTD_error_dstSize_tooSmall) return DoesNotFit(len, limit);
    return Status::InvalidArgument(std::string("zstd compression failed: ") +
                                   ZSTD_getErrorName(out));
  }
  if (out > limit) return DoesNotFit(len, limit);
  return out;
}

Status LengthMismatch(std::string_view algo, size_t got, size_t want) {
  return Status::Corruption(std::string(algo) + " block decodes to " + std::to_string(got) +
                            " bytes, expected " + std::to_string(want));
}

}  // namespace

std::string_view CompressionName(Compression c) {
  switch (c) {
    case Compression::kOff: return "off";
    case Compression::kLz4: return "lz4";
    case Compression::kZstd: return "zstd";
  }
  return "unknown";
}

Result<Compression> ParseCompression(std::string_view name) {
  if (name == "off") return Compression::kOff;
  if (name == "lz4") return Compression::kLz4;
  if (name == "zstd") return Compression::kZstd;
  return Status::InvalidArgument("unknown compression \"" + std::string(name) +
                                 "\" (accepted: off, lz4, zstd)");
}

bool IsValidCompression(uint8_t value) { return value <= uint8_t(Compression::kZstd); }

Result<size_t> Compress(Compression algo, const void* src, size_t len, void* dst, size_t dst_cap,
                        int level) {
  if (len > INT_MAX) return TooBig(len);
  size_t limit = std::min(dst_cap, CompressLimit(len));
  switch (algo) {
    case Compression::kOff:
      return Status::NotSupported("compression is off; store the block uncompressed");
    case Compression::kLz4:
      if (limit == 0) return DoesNotFit(len, limit);
      return CompressLz4(src, len, dst, limit, level);
    case Compression::kZstd:
      if (limit == 0) return DoesNotFit(len, limit);
      return CompressZstd(src, len, dst, limit, level);
  }
  return Status::InvalidArgument("unknown compression " + std::to_string(int(algo)));
}

Status Decompress(Compression algo, const void* src, size_t src_len, void* dst, size_t dst_len) {
  if (src_len > INT_MAX) return TooBig(src_len);
  if (dst_len > INT_MAX) return TooBig(dst_len);
  switch (algo) {
    case Compression::kOff:
      if (src_len != dst_len) return LengthMismatch("uncompressed", src_len, dst_len);
      if (dst_len > 0) std::memmove(dst, src, dst_len);
      return Status::Ok();
    case Compression::kLz4: {
      if (src_len == 0) return Status::Corruption("lz4 block is empty");
      int got = LZ4_decompress_safe(static_cast<const char*>(src), static_cast<char*>(dst),
                                    static_cast<int>(src_len), static_cast<int>(dst_len));
      if (got < 0) return Status::Corruption("lz4 block is malformed");
      if (size_t(got) != dst_len) return LengthMismatch("lz4", size_t(got), dst_len);
      return Status::Ok();
    }
    case Compression::kZstd: {
      // A frame that declares another content size is refused before decoding.
      unsigned long long declared = ZSTD_getFrameContentSize(src, src_len);
      if (declared == ZSTD_CONTENTSIZE_ERROR) return Status::Corruption("zstd frame is malformed");
      if (declared != ZSTD_CONTENTSIZE_UNKNOWN && declared != dst_len) {
        return LengthMismatch("zstd", size_t(declared), dst_len);
      }
      ZstdContexts& z = ThreadZstd();
      if (z.dctx == nullptr) {
        z.dctx = ZSTD_createDCtx();
        if (z.dctx == nullptr)
          return Status::IOError("zstd: cannot allocate a decompression context");
      }
      size_t got = ZSTD_decompressDCtx(z.dctx, dst, dst_len, src, src_len);
      if (ZSTD_isError(got)) {
        return Status::Corruption(std::string("zstd block is malformed: ") +
                                  ZSTD_getErrorName(got));
      }
      if (got != dst_len) return LengthMismatch("zstd", got, dst_len);
      return Status::Ok();
    }
  }
  return Status::InvalidArgument("unknown compression " + std::to_string(int(algo)));
}

}  // namespace poolfs::util

// NameFormat: createmany's file-name format ("f", "f%d", "dir/file-%08x").
//
// As in Lustre's createmany, a format holds at most one integer conversion,
// which receives the file's index; a format without one gets the index
// appended ("f" -> f0, f1, ...). "%%" is a literal '%'. Accepted
// conversions: d i u x X o, with printf's flags (-+ #0), a width and a
// precision; a length modifier (h, l, ll, z, j, t) is accepted and ignored,
// since the index is always formatted as a 64-bit integer. Anything else
// (%s, two conversions, a '*' width) is refused when the format is parsed,
// so formatting can never read an argument that is not there.
//
// Thread safety: immutable after Parse; Format may be called from many
// threads at once, each with its own output string.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "poolfs/status.h"

namespace poolfs::createmany {

class NameFormat {
 public:
  // Returns the parsed format, or InvalidArgument naming the offending part
  // when `format` is empty, has more than one conversion, or has one that is
  // not an integer conversion.
  static Result<NameFormat> Parse(std::string_view format);

  // Replaces *out with the name for `index`. Never fails; names are not
  // checked against PATH_MAX here (the system call that uses them does).
  void Format(int64_t index, std::string* out) const;

  // Convenience: the name for `index`.
  std::string Format(int64_t index) const;

  // The format as given to Parse.
  const std::string& text() const { return text_; }

 private:
  NameFormat() = default;

  std::string text_;
  std::string prefix_;      // literal text before the conversion ("%%" resolved)
  std::string conversion_;  // a safe printf conversion for long long, e.g. "%08llx"
  std::string suffix_;      // literal text after it
};

}  // namespace poolfs::createmany

#include "name_format.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace poolfs::createmany {
namespace {

bool IsFlag(char c) { return c == '-' || c == '+' || c == ' ' || c == '#' || c == '0'; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
constexpr int kMaxWidth = 255;

bool IsIntegerConversion(char c) { return c != '\0' && std::strchr("diuxXo", c) != nullptr; }

}  // namespace

Result<NameFormat> NameFormat::Parse(std::string_view format) {
  if (format.empty()) return Status::InvalidArgument("file name format is empty");
  NameFormat f;
  f.text_ = std::string(format);
  bool have_conversion = false;
  size_t i = 0;
  while (i < format.size()) {
    char c = format[i];
    std::string& literal = have_conversion ? f.suffix_ : f.prefix_;
    if (c != '%') {
      literal += c;
      ++i;
      continue;
    }
    if (i + 1 < format.size() && format[i + 1] == '%') {
      literal += '%';
      i += 2;
      continue;
    }
    // A conversion: %[flags][width][.precision][length]conv
    size_t begin = i++;
    std::string spec = "%";
    while (i < format.size() && IsFlag(format[i])) spec += format[i++];
    // Width and precision: at most 255 (NAME_MAX; more cannot make a valid name).
    auto number = [&](std::string* digits) {
      while (i < format.size() && IsDigit(format[i])) *digits += format[i++];
      return digits->size() <= 3 && (digits->empty() || std::stoi(*digits) <= kMaxWidth);
    };
    std::string width, precision;
    bool small = number(&width);
    spec += width;
    if (i < format.size() && format[i] == '.') {
      spec += format[i++];
      small = number(&precision) && small;
      spec += precision;
    }
    if (!small) {
      return Status::InvalidArgument("file name format '" + f.text_ +
                                     "': width or precision above " + std::to_string(kMaxWidth) +
                                     " at offset " + std::to_string(begin));
    }
    while (i < format.size() && std::strchr("hlzjt", format[i]) != nullptr) ++i;
    char conv = i < format.size() ? format[i] : '\0';
    if (!IsIntegerConversion(conv)) {
      return Status::InvalidArgument("file name format '" + f.text_ + "': conversion '" +
                                     std::string(format.substr(begin, i + 1 - begin)) +
                                     "' at offset " + std::to_string(begin) +
                                     " is not an integer conversion (d i u x X o)");
    }
    if (have_conversion) {
      return Status::InvalidArgument("file name format '" + f.text_ +
                                     "' has more than one conversion (the second at offset " +
                                     std::to_string(begin) + ")");
    }
    spec += "ll";
    spec += conv;
    f.conversion_ = std::move(spec);
    have_conversion = true;
    ++i;
  }
  if (!have_conversion) f.conversion_ = "%lld";  // Lustre: the index is appended
  return f;
}

void NameFormat::Format(int64_t index, std::string* out) const {
  char number[320];
  // conversion_ was built by Parse from validated pieces: one integer
  // conversion, width and precision at most 255, so the number fits.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
  int n = std::snprintf(number, sizeof number, conversion_.c_str(), static_cast<long long>(index));
#pragma GCC diagnostic pop
  out->assign(prefix_);
  if (n > 0) out->append(number, std::min(static_cast<size_t>(n), sizeof number - 1));
  out->append(suffix_);
}

std::string NameFormat::Format(int64_t index) const {
  std::string s;
  Format(index, &s);
  return s;
}

}  // namespace poolfs::createmany

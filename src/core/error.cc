#include "pimopt/core/error.h"

namespace pimopt {

std::string JoinNames(const std::vector<std::string>& names, std::string_view last) {
  std::string text;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) text += i + 1 == names.size() ? last : std::string_view(", ");
    text += names[i];
  }
  return text;
}

ParseError::ParseError(std::string_view path, uint64_t line, std::string_view what)
    : InputError(StrCat(path, ":", line, ": ", what)) {}

ParseError::ParseError(std::string_view path, std::string_view what) : InputError(StrCat(path, ": ", what)) {}

ConfigError::ConfigError(std::string_view parameter, std::string_view what)
    : InputError(StrCat(parameter, ": ", what)), parameter_(parameter), detail_(what) {}

}  // namespace pimopt

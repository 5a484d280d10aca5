#include "pimopt/core/error.h"

namespace pimopt {

ParseError::ParseError(std::string_view path, uint64_t line, std::string_view what)
    : InputError(StrCat(path, ":", line, ": ", what)) {}

ParseError::ParseError(std::string_view path, std::string_view what) : InputError(StrCat(path, ": ", what)) {}

ConfigError::ConfigError(std::string_view parameter, std::string_view what)
    : InputError(StrCat(parameter, ": ", what)), parameter_(parameter), detail_(what) {}

}  // namespace pimopt

// Errors with context. Library code throws these; only the CLI turns them into messages and exit codes.
#pragma once

#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace pimopt {

// Concatenates any streamable values into one string.
template <typename... Args>
std::string StrCat(const Args&... args) {
  std::ostringstream out;
  (out << ... << args);
  return out.str();
}

// "a, b or c" (with last = " or "; ", " for a plain list): the names in messages.
std::string JoinNames(const std::vector<std::string>& names, std::string_view last = ", ");

// Base class of every error pimopt raises on purpose.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The user's input is wrong: a file that cannot be read or is malformed, or a parameter out of range.
// The message names the file and line, or the parameter. The CLI exits with code 2.
class InputError : public Error {
 public:
  using Error::Error;
};

// A file's content is malformed: the message starts with "path:line: ".
class ParseError : public InputError {
 public:
  ParseError(std::string_view path, uint64_t line, std::string_view what);
  ParseError(std::string_view path, std::string_view what);  // whole-file problems (truncation, magic)
};

// A parameter (a CLI flag or a config field) is missing, out of range or contradicts another one.
class ConfigError : public InputError {
 public:
  ConfigError(std::string_view parameter, std::string_view what);
  const std::string& parameter() const { return parameter_; }
  const std::string& detail() const { return detail_; }  // the message without the parameter

 private:
  std::string parameter_;
  std::string detail_;
};

// An invariant of pimopt itself was broken: a bug, never the user's fault.
class InternalError : public Error {
 public:
  using Error::Error;
};

#define PIMOPT_CHECK(cond, ...)                                                                    \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      throw ::pimopt::InternalError(                                                               \
          ::pimopt::StrCat(__FILE__, ":", __LINE__, ": check failed: " #cond " ", ##__VA_ARGS__)); \
    }                                                                                              \
  } while (0)

}  // namespace pimopt

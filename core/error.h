// The error classes cutcheck throws. Each names one kind of failure, so callers
// (and the bad-input catalog) can tell a malformed file from a refused cut.
#pragma once

#include <stdexcept>
#include <string>

namespace cutcheck {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Text that does not parse: program text, cut text, numbers. The message starts
// with "file:line:column: ".
class ParseError : public Error {
 public:
  ParseError(const std::string& file, int line, int column, const std::string& what);
  int line() const { return line_; }
  int column() const { return column_; }

 private:
  int line_;
  int column_;
};

// A program that parses but is ill-typed, ill-shaped or inconsistent with its manifest.
class VerifyError : public Error {
 public:
  using Error::Error;
};

// A model spec with impossible or inconsistent fields.
class SpecError : public Error {
 public:
  using Error::Error;
};

// A cut that cannot exist for a spec (layer out of range, rows or ctx of zero).
class Refused : public Error {
 public:
  using Error::Error;
};

// A request that is well formed but not supported yet (for example a tp split of a prefill).
class NotYet : public Error {
 public:
  using Error::Error;
};

// Run-time values a program refuses: token outside the vocabulary, pos + rows > ctx,
// missing or mis-shaped inputs.
class InputError : public Error {
 public:
  using Error::Error;
};

// A malformed file: safetensors, JSON, manifest, checkpoint.
class FormatError : public Error {
 public:
  using Error::Error;
};

// A size that would exceed the configured memory limit; raised before allocating.
class LimitError : public Error {
 public:
  using Error::Error;
};

// The operating system refused: a file that cannot be opened, read or written,
// or a path that leaves the folder it must stay in.
class IoError : public Error {
 public:
  using Error::Error;
};

// The exit code a command ends with when `e` stops it (docs/exit-codes.md): 77 for
// NotYet, 2 for every other Error (usage, input, setup), 70 for anything else (a bug).
int exit_code_of(const std::exception& e);

}  // namespace cutcheck

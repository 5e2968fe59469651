// The persistent backend protocol (docs/conformance.md, "Persistent backends"): cutcheck
// starts `COMMAND --serve` once and writes one request per line to its stdin; the server
// writes OUT, then answers each request with exactly one line on stdout. This file holds
// the two messages, as both sides write and read them, and the server side's loop.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace cutcheck {

// {"id": N, "folder": F, "inputs": IN, "outputs": OUT}: run the program folder F on IN, write OUT.
struct ServeRequest {
  int64_t id = 0;
  std::string folder, inputs, outputs;
};

enum class ServeStatus { ok, unsupported, error };

// {"id": N, "status": "ok" | "unsupported" | "error", "message": "..."}; the message is
// optional, and what is said to the user for "unsupported" and "error".
struct ServeAnswer {
  int64_t id = 0;
  ServeStatus status = ServeStatus::ok;
  std::string message;
};

// One line of JSON, ending in '\n'. Throws Error for a path that is not valid UTF-8 (JSON
// strings cannot carry it).
std::string request_line(const ServeRequest& request);
std::string answer_line(const ServeAnswer& answer);
// Throw FormatError saying what is wrong with `line` (not JSON, a field missing or of the
// wrong kind, an unknown status).
ServeRequest parse_request(const std::string& line);
ServeAnswer parse_answer(const std::string& line);

// The server's side, for a backend written in C++: reads requests from stdin until it
// ends and answers each on stdout, after `handle` ran it. `handle` throwing NotYet answers
// "unsupported", any other exception "error", each with the exception's text. While it
// runs, fd 1 is pointed at stderr, so that nothing `handle` (or a library) prints can
// break the protocol (stdout is restored on return). Throws FormatError for a malformed
// request line, LimitError for one longer than 1 MiB.
void serve_requests(const std::function<void(const ServeRequest&)>& handle);

}  // namespace cutcheck

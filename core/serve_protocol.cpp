#include "core/serve_protocol.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <iostream>

#include "core/error.h"
#include "core/json.h"
#include "core/text.h"

namespace cutcheck {
namespace {

std::string json_line(const Json& object, const char* what) {
  try {
    return object.dump() + "\n";
  } catch (const Json::exception&) {
    throw Error(fmt::format("cannot write the {}: a path or message is not valid UTF-8", what));
  }
}

const char* status_name(ServeStatus s) {
  switch (s) {
    case ServeStatus::ok: return "ok";
    case ServeStatus::unsupported: return "unsupported";
    case ServeStatus::error: return "error";
  }
  return "?";
}

// Writes all of `text` to `fd`; false when the reader is gone.
bool write_all(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += size_t(n);
  }
  return true;
}

// std::getline, bounded: a request is short, and a line without end must not take all memory.
bool read_line(std::istream& in, std::string& line) {
  constexpr size_t max_bytes = 1 << 20;
  line.clear();
  for (int c; (c = in.get()) != EOF;) {
    if (c == '\n') return true;
    if (line.size() == max_bytes) throw LimitError(fmt::format("the request: a line longer than {} bytes", max_bytes));
    line += char(c);
  }
  return !line.empty();
}

}  // namespace

std::string request_line(const ServeRequest& r) {
  return json_line(Json{{"id", r.id}, {"folder", r.folder}, {"inputs", r.inputs}, {"outputs", r.outputs}}, "request");
}

std::string answer_line(const ServeAnswer& a) {
  return json_line(Json{{"id", a.id}, {"status", status_name(a.status)}, {"message", a.message}}, "answer");
}

ServeRequest parse_request(const std::string& line) {
  const std::string source = "the request";
  const Json j = parse_json(line, source);
  return ServeRequest{json_int(j, "id", source), json_string(j, "folder", source), json_string(j, "inputs", source),
                      json_string(j, "outputs", source)};
}

ServeAnswer parse_answer(const std::string& line) {
  const std::string source = "the answer";
  const Json j = parse_json(line, source);
  ServeAnswer a;
  a.id = json_int(j, "id", source);
  const std::string status = json_string(j, "status", source);
  if (status == "ok") a.status = ServeStatus::ok;
  else if (status == "unsupported") a.status = ServeStatus::unsupported;
  else if (status == "error") a.status = ServeStatus::error;
  else throw FormatError(fmt::format("the answer: status '{}' is none of ok, unsupported, error", status));
  if (j.contains("message")) a.message = json_string(j, "message", source);
  return a;
}

void serve_requests(const std::function<void(const ServeRequest&)>& handle) {
  std::fflush(stdout);
  const int answers = dup(1);
  if (answers < 0 || dup2(2, 1) < 0) throw IoError(fmt::format("cannot set up stdout: {}", std::strerror(errno)));
  struct Restore {  // stdout as it was, however this returns
    int answers;
    ~Restore() {
      std::fflush(stdout);
      dup2(answers, 1);
      close(answers);
    }
  } restore{answers};
  std::string line;
  while (read_line(std::cin, line)) {
    const ServeRequest request = parse_request(line);
    ServeAnswer answer{request.id, ServeStatus::ok, ""};
    try {
      handle(request);
    } catch (const NotYet& e) {
      answer = {request.id, ServeStatus::unsupported, clean_text(e.what())};
    } catch (const std::exception& e) {
      answer = {request.id, ServeStatus::error, clean_text(e.what())};
    }
    std::fflush(stdout);  // what went to stderr through fd 1, before the answer
    if (!write_all(answers, answer_line(answer))) break;  // cutcheck is gone
  }
}

}  // namespace cutcheck

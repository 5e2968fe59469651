// Text from outside (a backend's stderr, an error message quoting its files) made safe to
// put into a terminal line, a JSON string and an XML document.
#pragma once

#include <string>

namespace cutcheck {

// Valid UTF-8: every malformed byte becomes U+FFFD. Control characters other than tab,
// newline and carriage return (which XML 1.0 forbids, and terminals act on) are dropped.
std::string clean_text(const std::string& bytes);

// The last `max_bytes` or fewer bytes of `text`, starting on a UTF-8 character boundary.
std::string utf8_tail(const std::string& text, size_t max_bytes);

// The last line of `text`, without the line breaks and spaces that end it: what a process
// said last, for a one-line message.
std::string last_line(const std::string& text);

// "&<>\"'" escaped, and the control characters XML 1.0 forbids replaced: for attribute
// values and text alike.
std::string xml_escape(const std::string& s);

}  // namespace cutcheck

#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <cmath>
#include <string_view>
#include <unordered_map>

#include "core/error.h"
#include "program/text.h"
#include "program/verifier.h"

namespace cutcheck {
namespace {

enum class Tok { name, word, number, string, comment, punct, newline, end };

struct Token {
  Tok kind;
  // The name without '%', the word, the number's text, the string's contents, the comment:
  // a view of the program text (a string's contents, unescaped, of the lexer's own buffer
  // until the next string), so that a token costs no allocation; the parser copies what it keeps.
  std::string_view text;
  int line, column;
};

// ASCII letters and digits, as std::isalnum has them in the "C" locale cutcheck never
// leaves, tested without a call per character (the lexer asks for every one).
bool is_word_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.';
}

// Splits text into tokens, one statement per line.
class Lexer {
 public:
  Lexer(const std::string& text, const std::string& source) : text_(text), source_(source) {}

  Token next() {
    while (at_ < text_.size() && (text_[at_] == ' ' || text_[at_] == '\t' || text_[at_] == '\r')) advance();
    int line = line_, column = column_;
    if (at_ >= text_.size()) return {Tok::end, "", line, column};
    char c = text_[at_];
    if (c == '\n') {
      advance();
      return {Tok::newline, "", line, column};
    }
    if (c == '#') {
      bool alone = line_start_;
      size_t start = at_ + 1;
      while (at_ < text_.size() && text_[at_] != '\n') advance();
      std::string_view body = view(start);
      if (!body.empty() && body[0] == ' ') body.remove_prefix(1);
      if (!alone) return next();  // a comment after a statement is just a comment
      if (at_ < text_.size()) advance();  // a comment line includes its end of line
      return {Tok::comment, body, line, column};
    }
    line_start_ = false;
    if (c == '%') {
      advance();
      size_t start = at_;
      while (at_ < text_.size() && is_word_char(text_[at_])) advance();
      if (at_ == start) fail(line, column, "expected a value name after '%'");
      return {Tok::name, view(start), line, column};
    }
    if (c == '"') {
      advance();
      std::string& body = string_body_;
      body.clear();
      while (true) {
        if (at_ >= text_.size() || text_[at_] == '\n') fail(line, column, "unterminated string");
        char d = text_[at_];
        advance();
        if (d == '"') break;
        if (d == '\\') {
          if (at_ >= text_.size() || (text_[at_] != '"' && text_[at_] != '\\'))
            fail(line_, column_, "only \\\" and \\\\ may follow a backslash");
          d = text_[at_];
          advance();
        }
        body += d;
      }
      return {Tok::string, body, line, column};
    }
    if (std::isdigit(static_cast<unsigned char>(c)) || (c == '-' && at_ + 1 < text_.size())) {
      if (c != '-' || std::isdigit(static_cast<unsigned char>(text_[at_ + 1])) || text_.compare(at_ + 1, 3, "inf") == 0) {
        size_t start = at_;
        advance();
        while (at_ < text_.size() && (is_word_char(text_[at_]) ||
                                      ((text_[at_] == '-' || text_[at_] == '+') &&
                                       (text_[at_ - 1] == 'e' || text_[at_ - 1] == 'E'))))
          advance();
        return {Tok::number, view(start), line, column};
      }
    }
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t start = at_;
      while (at_ < text_.size() && is_word_char(text_[at_])) advance();
      return {Tok::word, view(start), line, column};
    }
    if (std::string_view("=:,[]{}").find(c) != std::string_view::npos) {
      advance();
      return {Tok::punct, view(at_ - 1), line, column};
    }
    fail(line, column, fmt::format("unexpected character '{}'", std::isprint(static_cast<unsigned char>(c))
                                                                     ? std::string(1, c)
                                                                     : fmt::format("\\x{:02x}", static_cast<unsigned char>(c))));
  }

  [[noreturn]] void fail(int line, int column, const std::string& what) const {
    throw ParseError(source_, line, column, what);
  }

 private:
  // The text from start up to where the lexer is.
  std::string_view view(size_t start) const { return std::string_view(text_).substr(start, at_ - start); }

  void advance() {
    if (text_[at_] == '\n') {
      ++line_;
      column_ = 1;
      line_start_ = true;
    } else {
      ++column_;
    }
    ++at_;
  }

  const std::string& text_;
  const std::string& source_;
  std::string string_body_;  // the contents of the last string token
  size_t at_ = 0;
  int line_ = 1, column_ = 1;
  bool line_start_ = true;
};

class Parser {
 public:
  Parser(const std::string& text, const std::string& source) : lexer_(text, source) { shift(); }

  Program run() {
    skip_blank_lines();
    expect_word("program");
    if (tok_.kind != Tok::string) fail("expected the program's label in quotes, as in program \"decode{ctx=16}\"");
    program_.label = std::string(tok_.text);
    shift();
    end_statement();
    skip_blank_lines();
    if (is_word("chip")) parse_chip();
    while (tok_.kind != Tok::end) {
      if (tok_.kind == Tok::newline) {
        pending_note_.clear();
        shift();
      } else if (tok_.kind == Tok::comment) {
        pending_note_.emplace_back(tok_.text);
        shift();
      } else if (is_word("input")) {
        enter(Section::inputs, "an input");
        parse_input();
      } else if (is_word("weight")) {
        enter(Section::weights, "a weight");
        parse_weight();
      } else if (tok_.kind == Tok::name) {
        enter(Section::ops, "an operation");
        parse_op();
      } else if (is_word("output")) {
        enter(Section::outputs, "an output");
        parse_output();
      } else {
        fail("expected input, weight, an operation (%name = op ...) or output");
      }
    }
    return std::move(program_);
  }

 private:
  enum class Section { inputs, weights, ops, outputs };

  void shift() { tok_ = lexer_.next(); }
  bool is_word(std::string_view w) const { return tok_.kind == Tok::word && tok_.text == w; }
  bool is_punct(char c) const { return tok_.kind == Tok::punct && tok_.text[0] == c; }
  [[noreturn]] void fail(const std::string& what) const { lexer_.fail(tok_.line, tok_.column, what); }
  [[noreturn]] void fail_at(const Token& t, const std::string& what) const { lexer_.fail(t.line, t.column, what); }

  void skip_blank_lines() {
    while (tok_.kind == Tok::newline || tok_.kind == Tok::comment) shift();
  }
  void expect_word(std::string_view w) {
    if (!is_word(w)) fail(fmt::format("expected '{}'", w));
    shift();
  }
  void expect_punct(char c) {
    if (!is_punct(c)) fail(fmt::format("expected '{}'", c));
    shift();
  }
  void end_statement() {
    if (tok_.kind == Tok::end) return;
    if (tok_.kind != Tok::newline) fail("expected the end of the line");
    shift();
  }

  // Statements come in sections: inputs, weights, operations, outputs.
  void enter(Section s, const char* what) {
    if (s < section_) {
      static const char* names[] = {"inputs", "weights", "operations", "outputs"};
      fail(fmt::format("{} cannot follow {}: a program lists inputs, weights, operations, then outputs", what,
                       names[int(section_)]));
    }
    section_ = s;
    if (s != Section::ops) pending_note_.clear();
  }

  int64_t parse_int(const char* what) {
    if (tok_.kind != Tok::number) fail(fmt::format("expected {}", what));
    int64_t v = 0;
    const char* end = tok_.text.data() + tok_.text.size();
    auto [ptr, ec] = std::from_chars(tok_.text.data(), end, v);
    if (ec == std::errc::result_out_of_range) fail(fmt::format("{} is out of range", tok_.text));
    if (ec != std::errc() || ptr != end) fail(fmt::format("expected {}, got '{}'", what, tok_.text));
    shift();
    return v;
  }

  double parse_number() {
    const std::string_view text = tok_.kind == Tok::word || tok_.kind == Tok::number ? tok_.text : "";
    if (text == "inf" || text == "-inf" || text == "nan") {
      shift();
      return text == "nan" ? std::nan("") : text == "inf" ? INFINITY : -INFINITY;
    }
    if (tok_.kind != Tok::number) fail("expected a number");
    double v = 0;
    const char* end = text.data() + text.size();
    auto [ptr, ec] = std::from_chars(text.data(), end, v);
    if (ec != std::errc() || ptr != end || !std::isfinite(v)) fail(fmt::format("'{}' is not a finite number", text));
    shift();
    return v;
  }

  std::vector<int64_t> parse_int_list() {
    expect_punct('[');
    std::vector<int64_t> out;
    while (!is_punct(']')) {
      if (!out.empty()) expect_punct(',');
      out.push_back(parse_int("an integer"));
    }
    shift();
    return out;
  }

  TensorType parse_type() {
    TensorType t;
    if (tok_.kind != Tok::word || !parse_dtype(tok_.text, t.dtype)) fail("expected a type such as f32[4,8] or i32[]");
    shift();
    Token open = tok_;
    t.shape = parse_int_list();
    for (int64_t d : t.shape)
      if (d < 0) fail_at(open, fmt::format("dimension {} is negative", d));
    return t;
  }

  ValueId define(const Token& at, const TensorType& type) {
    // One lookup that also inserts: a name defined twice is refused before it is pushed.
    const auto [it, fresh] = names_.try_emplace(at.text, ValueId(program_.values.size()));
    if (!fresh) fail_at(at, fmt::format("%{} is defined twice", at.text));
    program_.values.push_back({std::string(at.text), type});
    return it->second;
  }

  ValueId use() {
    if (tok_.kind != Tok::name) fail("expected a value such as %x");
    auto it = names_.find(tok_.text);
    if (it == names_.end()) fail(fmt::format("%{} is not defined before this use", tok_.text));
    shift();
    return it->second;
  }

  Location here() const { return {tok_.line, tok_.column}; }

  void parse_chip() {
    shift();
    Replica r;
    r.index = parse_int("the chip's index");
    expect_word("of");
    Token count = tok_;
    r.count = parse_int("the number of chips");
    if (r.count < 1 || r.index < 0 || r.index >= r.count) fail_at(count, "need 0 <= chip < count");
    program_.replica = r;
    end_statement();
  }

  void parse_input() {
    Location loc = here();
    shift();
    if (tok_.kind != Tok::name) fail("expected the input's name, as in input %x : f32[4]");
    Token name = tok_;
    shift();
    expect_punct(':');
    TensorType type = parse_type();
    InputDecl decl{define(name, type), std::nullopt, loc};
    if (is_word("range")) {
      shift();
      Token open = tok_;
      std::vector<int64_t> r = parse_int_list();
      if (r.size() != 2) fail_at(open, "a range is [lowest, highest]");
      decl.range = {r[0], r[1]};
    }
    program_.inputs.push_back(decl);
    end_statement();
  }

  void parse_weight() {
    Location loc = here();
    shift();
    if (tok_.kind != Tok::name) fail("expected the weight's name, as in weight %norm : f32[64]");
    Token name = tok_;
    shift();
    expect_punct(':');
    program_.weights.push_back({define(name, parse_type()), loc});
    end_statement();
  }

  Attr parse_attr(const AttrSpec& spec) {
    switch (spec.kind) {
      case AttrKind::integer: return parse_int("an integer");
      case AttrKind::number: return parse_number();
      case AttrKind::ints: return parse_int_list();
      case AttrKind::int_lists: {
        expect_punct('[');
        std::vector<std::vector<int64_t>> out;
        while (!is_punct(']')) {
          if (!out.empty()) expect_punct(',');
          out.push_back(parse_int_list());
        }
        shift();
        return out;
      }
      case AttrKind::word: {
        if (tok_.kind != Tok::word) fail(fmt::format("expected one of {}", fmt::join(spec.words, ", ")));
        std::string w(tok_.text);
        shift();
        return w;
      }
    }
    fail("unknown attribute kind");
  }

  void parse_op() {
    Token result = tok_;
    Location loc = here();
    shift();
    expect_punct('=');
    if (tok_.kind != Tok::word) fail("expected an op name");
    OpKind kind;
    if (!find_op(tok_.text, kind)) fail(fmt::format("unknown op '{}'", tok_.text));
    const OpInfo& info = op_info(kind);
    shift();
    Operation op{kind, -1, {}, {}, {}, loc};
    while (tok_.kind == Tok::name) {
      op.operands.push_back(use());
      if (!is_punct(',')) break;
      shift();
      if (tok_.kind != Tok::name) fail("expected another operand after ','");
    }
    std::vector<std::optional<Attr>> attrs(info.attrs.size());
    if (is_punct('{')) {
      shift();
      while (!is_punct('}')) {
        if (tok_.kind != Tok::word) fail("expected an attribute name");
        Token key = tok_;
        size_t slot = info.attrs.size();
        for (size_t i = 0; i < info.attrs.size(); ++i)
          if (info.attrs[i].name == key.text) slot = i;
        if (slot == info.attrs.size()) fail(fmt::format("{} has no attribute '{}'", info.name, key.text));
        if (attrs[slot]) fail(fmt::format("attribute '{}' is given twice", key.text));
        shift();
        expect_punct('=');
        attrs[slot] = parse_attr(info.attrs[slot]);
        if (is_punct(',')) {
          shift();
        } else if (!is_punct('}')) {
          fail("expected ',' or '}'");
        }
      }
      shift();
    }
    for (size_t i = 0; i < attrs.size(); ++i) {
      if (!attrs[i]) fail_at(result, fmt::format("{} needs attribute '{}'", info.name, info.attrs[i].name));
      op.attrs.push_back(std::move(*attrs[i]));
    }
    expect_punct(':');
    TensorType type = parse_type();
    // An f32 constant's text is read as the nearest f32, as the printer wrote it.
    if (kind == OpKind::constant && type.dtype == DType::f32) op.attrs[0] = double(float(std::get<double>(op.attrs[0])));
    op.result = define(result, type);
    for (size_t i = 0; i < pending_note_.size(); ++i) op.note += (i ? "\n" : "") + pending_note_[i];
    pending_note_.clear();
    program_.ops.push_back(std::move(op));
    end_statement();
  }

  void parse_output() {
    Location loc = here();
    shift();
    if (tok_.kind != Tok::word) fail("expected the output's name, as in output logits = %y");
    std::string name(tok_.text);
    shift();
    expect_punct('=');
    program_.outputs.push_back({name, use(), loc});
    end_statement();
  }

  Lexer lexer_;
  Token tok_{Tok::end, "", 1, 1};
  Program program_;
  std::unordered_map<std::string_view, ValueId> names_;  // views of the program text, which outlives the parser
  Section section_ = Section::inputs;
  std::vector<std::string> pending_note_;
};

}  // namespace

Program parse(const std::string& text, const std::string& source) { return Parser(text, source).run(); }

Program parse_and_verify(const std::string& text, const std::string& source) {
  Program p = parse(text, source);
  verify(p, source);
  return p;
}

}  // namespace cutcheck

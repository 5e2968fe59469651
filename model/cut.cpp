#include "model/cut.h"

#include <fmt/format.h>

#include <cctype>

#include "core/error.h"

namespace cutcheck {
namespace {

struct KindInfo {
  CutKind kind;
  const char* name;
  CutParams params;
  Family family;
  Part part;
};

constexpr KindInfo kinds[] = {
    {CutKind::decode, "decode", {false, false, true}, Family::decode, Part::whole},
    {CutKind::prefill, "prefill", {false, true, true}, Family::prefill, Part::whole},
    {CutKind::batch, "batch", {false, true, true}, Family::batch, Part::whole},
    {CutKind::forward, "forward", {false, false, false}, Family::forward, Part::whole},
    {CutKind::forward_layer, "forward_layer", {true, false, false}, Family::forward, Part::layer},
    {CutKind::forward_head, "forward_head", {false, false, false}, Family::forward, Part::head},
    {CutKind::decode_embed, "decode_embed", {false, false, false}, Family::decode, Part::embed},
    {CutKind::decode_layer, "decode_layer", {true, false, true}, Family::decode, Part::layer},
    {CutKind::decode_head, "decode_head", {false, false, false}, Family::decode, Part::head},
    {CutKind::batch_embed, "batch_embed", {false, true, false}, Family::batch, Part::embed},
    {CutKind::batch_layer, "batch_layer", {true, true, true}, Family::batch, Part::layer},
    {CutKind::batch_head, "batch_head", {false, true, false}, Family::batch, Part::head},
    {CutKind::prefill_layer, "prefill_layer", {true, true, true}, Family::prefill, Part::layer},
    {CutKind::prefill_head, "prefill_head", {false, true, false}, Family::prefill, Part::head},
};

const KindInfo& info(CutKind kind) { return kinds[int(kind)]; }

// "BatchLayer" -> "batch_layer", so the brief's display names parse too.
std::string snake_case(const std::string& name) {
  std::string out;
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    if (std::isupper(static_cast<unsigned char>(c))) {
      if (i > 0) out += '_';
      out += char(std::tolower(static_cast<unsigned char>(c)));
    } else {
      out += c;
    }
  }
  return out;
}

class CutParser {
 public:
  CutParser(const std::string& text, const std::string& source) : text_(text), source_(source) {}

  Cut parse() {
    skip_space();
    size_t name_at = at_;
    std::string name = snake_case(word());
    if (name.empty()) fail(name_at, "expected a cut name such as decode{ctx=16}");
    const KindInfo* found = nullptr;
    for (const auto& k : kinds)
      if (name == k.name) found = &k;
    if (!found) {
      std::vector<std::string> names;
      for (const auto& k : kinds) names.push_back(k.name);
      fail(name_at, fmt::format("unknown cut '{}' (known: {})", name, fmt::join(names, ", ")));
    }
    Cut cut{found->kind, 0, 0, 0};
    bool seen_layer = false, seen_rows = false, seen_ctx = false;
    skip_space();
    if (peek() == '{') {
      ++at_;
      skip_space();
      while (peek() != '}') {
        size_t key_at = at_;
        std::string key = word();
        skip_space();
        expect('=');
        skip_space();
        int64_t value = number();
        bool* seen = key == "layer" ? &seen_layer : key == "rows" ? &seen_rows : key == "ctx" ? &seen_ctx : nullptr;
        bool allowed = key == "layer" ? found->params.layer : key == "rows" ? found->params.rows
                       : key == "ctx" ? found->params.ctx : false;
        if (!seen || !allowed) fail(key_at, fmt::format("{} takes no parameter '{}'{}", name, key, expected_params(*found)));
        if (*seen) fail(key_at, fmt::format("parameter '{}' given twice", key));
        *seen = true;
        (key == "layer" ? cut.layer : key == "rows" ? cut.rows : cut.ctx) = value;
        skip_space();
        if (peek() == ',') {
          ++at_;
          skip_space();
        } else if (peek() != '}') {
          fail(at_, "expected ',' or '}'");
        }
      }
      ++at_;
    }
    skip_space();
    if (at_ != text_.size()) fail(at_, "unexpected text after the cut");
    auto missing = [&](bool wanted, bool seen, const char* key) {
      if (wanted && !seen) fail(text_.size(), fmt::format("{} needs parameter '{}'{}", name, key, expected_params(*found)));
    };
    missing(found->params.layer, seen_layer, "layer");
    missing(found->params.rows, seen_rows, "rows");
    missing(found->params.ctx, seen_ctx, "ctx");
    return cut;
  }

 private:
  static std::string expected_params(const KindInfo& k) {
    std::vector<std::string> p;
    if (k.params.layer) p.push_back("layer");
    if (k.params.rows) p.push_back("rows");
    if (k.params.ctx) p.push_back("ctx");
    return p.empty() ? " (it takes none)" : fmt::format(" (it takes {})", fmt::join(p, ", "));
  }
  char peek() const { return at_ < text_.size() ? text_[at_] : '\0'; }
  void skip_space() {
    while (at_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[at_]))) ++at_;
  }
  std::string word() {
    size_t start = at_;
    while (at_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[at_])) || text_[at_] == '_')) ++at_;
    return text_.substr(start, at_ - start);
  }
  void expect(char c) {
    if (peek() != c) fail(at_, fmt::format("expected '{}'", c));
    ++at_;
  }
  int64_t number() {
    size_t start = at_;
    int64_t value = 0;
    while (at_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[at_]))) {
      value = value * 10 + (text_[at_] - '0');
      if (value > (int64_t{1} << 31)) fail(start, "number out of range (at most 2^31)");
      ++at_;
    }
    if (at_ == start) fail(start, "expected a non-negative integer");
    return value;
  }
  [[noreturn]] void fail(size_t at, const std::string& what) const {
    throw ParseError(source_, 1, int(at) + 1, fmt::format("{} in '{}'", what, text_));
  }

  const std::string& text_;
  const std::string& source_;
  size_t at_ = 0;
};

}  // namespace

std::vector<CutKind> all_cut_kinds() {
  std::vector<CutKind> out;
  for (const auto& k : kinds) out.push_back(k.kind);
  return out;
}

std::string cut_kind_name(CutKind kind) { return info(kind).name; }
CutParams cut_params(CutKind kind) { return info(kind).params; }
Family cut_family(CutKind kind) { return info(kind).family; }
Part cut_part(CutKind kind) { return info(kind).part; }

std::string Cut::str() const {
  const KindInfo& k = info(kind);
  std::vector<std::string> params;
  if (k.params.layer) params.push_back(fmt::format("layer={}", layer));
  if (k.params.rows) params.push_back(fmt::format("rows={}", rows));
  if (k.params.ctx) params.push_back(fmt::format("ctx={}", ctx));
  if (params.empty()) return k.name;
  return fmt::format("{}{{{}}}", k.name, fmt::join(params, ","));
}

Cut Cut::parse(const std::string& text, const std::string& source) { return CutParser(text, source).parse(); }

std::optional<std::string> Cut::impossible_for(const ModelSpec& spec) const {
  CutParams p = cut_params(kind);
  if (p.layer && (layer < 0 || layer >= spec.layers))
    return fmt::format("{}: layer {} does not exist (the spec has layers 0..{})", str(), layer, spec.layers - 1);
  if (p.rows && rows <= 0) return fmt::format("{}: rows must be at least 1", str());
  if (p.ctx && ctx <= 0) return fmt::format("{}: ctx must be at least 1", str());
  // Prefill rows share one cache from pos on: with rows > ctx no pos satisfies pos + rows <= ctx.
  if (family() == Family::prefill && p.ctx && rows > ctx)
    return fmt::format("{}: rows ({}) exceed ctx ({}), so no position satisfies pos + rows <= ctx", str(), rows, ctx);
  return std::nullopt;
}

void Cut::check_possible(const ModelSpec& spec) const {
  if (auto reason = impossible_for(spec)) throw Refused(*reason);
}

bool Cut::operator==(const Cut& other) const {
  CutParams p = cut_params(kind);
  return kind == other.kind && (!p.layer || layer == other.layer) && (!p.rows || rows == other.rows) &&
         (!p.ctx || ctx == other.ctx);
}

size_t CutHash::operator()(const Cut& cut) const {
  CutParams p = cut_params(cut.kind);
  size_t h = size_t(cut.kind);
  for (int64_t v : {p.layer ? cut.layer : 0, p.rows ? cut.rows : 0, p.ctx ? cut.ctx : 0})
    h = h * 1000003u ^ std::hash<int64_t>()(v);
  return h;
}

}  // namespace cutcheck

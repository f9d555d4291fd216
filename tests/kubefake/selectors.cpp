#include "tests/kubefake/selectors.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <optional>

#include "tests/kubefake/meta.hpp"

namespace gpuq::kubefake {

namespace {

// --- the label selector grammar (k8s.io/apimachinery/pkg/labels/selector.go) ---

struct Token {
  enum Kind { identifier, op, open, close, comma, bang, end } kind;
  std::string text;
};

bool special(char c) {
  return std::isspace(static_cast<unsigned char>(c)) || c == ',' || c == '(' || c == ')' ||
         c == '=' || c == '!' || c == '<' || c == '>';
}

std::vector<Token> lex(std::string_view s) {
  std::vector<Token> out;
  std::size_t i = 0;
  while (i < s.size()) {
    char c = s[i];
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
    } else if (c == ',') {
      out.push_back({Token::comma, ","}), ++i;
    } else if (c == '(') {
      out.push_back({Token::open, "("}), ++i;
    } else if (c == ')') {
      out.push_back({Token::close, ")"}), ++i;
    } else if (c == '=' || c == '!' || c == '<' || c == '>') {
      bool two = i + 1 < s.size() && s[i + 1] == '=' && (c == '=' || c == '!');
      std::string text(s.substr(i, two ? 2 : 1));
      out.push_back({text == "!" ? Token::bang : Token::op, text});
      i += text.size();
    } else {
      std::size_t j = i;
      while (j < s.size() && !special(s[j])) ++j;
      out.push_back({Token::identifier, std::string(s.substr(i, j - i))});
      i = j;
    }
  }
  out.push_back({Token::end, ""});
  return out;
}

[[noreturn]] void fail(const std::string& why) {
  throw bad_request("unable to parse requirement: " + why);
}

bool label_value_ok(std::string_view v) {
  if (v.empty()) return true;
  if (v.size() > 63) return false;
  auto alnum = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
  if (!alnum(v.front()) || !alnum(v.back())) return false;
  return std::all_of(v.begin(), v.end(),
                     [&](char c) { return alnum(c) || c == '-' || c == '_' || c == '.'; });
}

void check_key(std::string_view key) {
  std::string_view name =
      key.substr(key.find('/') == std::string_view::npos ? 0 : key.find('/') + 1);
  if (name.empty() || !label_value_ok(name)) {
    fail("key: Invalid value: \"" + std::string(key) +
         "\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start "
         "and end with an alphanumeric character");
  }
}

void check_value(std::string_view value, std::string_view key) {
  if (!label_value_ok(value)) {
    fail("values[0][" + std::string(key) + "]: Invalid value: \"" + std::string(value) +
         "\": a valid label must be an empty string or consist of alphanumeric characters, '-', "
         "'_' or '.', and must start and end with an alphanumeric character");
  }
}

class Parser {
 public:
  explicit Parser(std::string_view text) : tokens_(lex(text)) {}

  std::vector<LabelSelector::Requirement> parse() {
    std::vector<LabelSelector::Requirement> out;
    if (peek().kind == Token::end) return out;
    for (;;) {
      out.push_back(requirement());
      Token t = next();
      if (t.kind == Token::end) return out;
      if (t.kind != Token::comma) fail("found '" + t.text + "', expected: ',' or 'end of string'");
    }
  }

 private:
  const Token& peek() const { return tokens_[pos_]; }
  Token next() { return tokens_[pos_ < tokens_.size() - 1 ? pos_++ : pos_]; }

  std::string identifier(const char* expected) {
    Token t = next();
    if (t.kind != Token::identifier) fail("found '" + t.text + "', expected: " + expected);
    return t.text;
  }

  LabelSelector::Requirement requirement() {
    using Op = LabelSelector::Op;
    if (peek().kind == Token::bang) {
      next();
      std::string key = identifier("identifier");
      check_key(key);
      return {key, Op::not_exists, {}};
    }
    std::string key = identifier("!, identifier");
    check_key(key);
    const Token& t = peek();
    if (t.kind == Token::end || t.kind == Token::comma) return {key, Op::exists, {}};
    Token o = next();
    if (o.kind == Token::identifier && (o.text == "in" || o.text == "notin")) {
      return {key, o.text == "in" ? Op::in : Op::not_in, value_set(key)};
    }
    if (o.kind != Token::op) fail("found '" + o.text + "', expected: in, notin, =, ==, !=, gt, lt");
    std::string value;
    if (peek().kind == Token::identifier) value = next().text;
    if (o.text == ">" || o.text == "<") {
      long long n = 0;
      auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
      if (ec != std::errc() || p != value.data() + value.size()) {
        fail("for 'Gt', 'Lt' operators, the value must be an integer");
      }
      return {key, o.text == ">" ? Op::greater : Op::less, {value}};
    }
    if (o.text != "=" && o.text != "==" && o.text != "!=") {
      fail("found '" + o.text + "', expected: in, notin, =, ==, !=, gt, lt");
    }
    check_value(value, key);
    return {key, o.text == "!=" ? Op::not_equals : Op::equals, {value}};
  }

  std::vector<std::string> value_set(const std::string& key) {
    Token open = next();
    if (open.kind != Token::open) fail("found '" + open.text + "', expected: '('");
    std::vector<std::string> values;
    for (;;) {
      Token t = next();
      if (t.kind == Token::close) break;
      if (t.kind == Token::identifier) {
        check_value(t.text, key);
        values.push_back(t.text);
        t = next();
        if (t.kind == Token::close) break;
      }
      if (t.kind != Token::comma) fail("found '" + t.text + "', expected: ',', ')' or identifier");
    }
    return values;
  }

  std::vector<Token> tokens_;
  std::size_t pos_ = 0;
};

std::optional<long long> as_int(std::string_view s) {
  long long n = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return n;
}

bool satisfied(const LabelSelector::Requirement& r, const json::object* labels) {
  using Op = LabelSelector::Op;
  const json::value* v = labels == nullptr ? nullptr : labels->if_contains(r.key);
  bool has = v != nullptr;
  std::string value = has ? to_string(*v) : std::string();
  auto in_set = [&] {
    return std::find(r.values.begin(), r.values.end(), value) != r.values.end();
  };
  switch (r.op) {
    case Op::equals:
      return has && value == r.values.front();
    case Op::not_equals:
      return !has || value != r.values.front();
    case Op::in:
      return has && in_set();
    case Op::not_in:
      return !has || !in_set();
    case Op::exists:
      return has;
    case Op::not_exists:
      return !has;
    case Op::greater:
    case Op::less: {
      auto have = as_int(value);
      auto want = as_int(r.values.front());
      if (!has || !have || !want) return false;
      return r.op == Op::greater ? *have > *want : *have < *want;
    }
  }
  return false;
}

// --- field selectors ---

std::vector<std::string_view> fields_of(const ResourceType& type) {
  std::vector<std::string_view> f = {"metadata.name"};
  if (type.namespaced) f.push_back("metadata.namespace");
  if (type.name == "pods") {
    f.insert(f.end(), {"spec.nodeName", "spec.restartPolicy", "spec.schedulerName",
                       "spec.serviceAccountName", "spec.hostNetwork", "status.phase",
                       "status.podIP", "status.nominatedNodeName"});
  } else if (type.name == "nodes") {
    f.push_back("spec.unschedulable");
  } else if (type.name == "namespaces") {
    f.push_back("status.phase");
  } else if (type.name == "events") {
    f.insert(f.end(),
             {"involvedObject.kind", "involvedObject.namespace", "involvedObject.name",
              "involvedObject.uid", "involvedObject.apiVersion", "involvedObject.resourceVersion",
              "involvedObject.fieldPath", "reason", "reportingComponent", "source", "type"});
  }
  return f;
}

}  // namespace

LabelSelector LabelSelector::parse(std::string_view text) {
  LabelSelector s;
  s.requirements_ = Parser(text).parse();
  return s;
}

LabelSelector LabelSelector::from_object(const json::value* selector) {
  LabelSelector s;
  const json::object* o = selector == nullptr ? nullptr : selector->if_object();
  if (o == nullptr) {
    s.nothing_ = true;
    return s;
  }
  if (const json::object* ml = object_at(*o, {"matchLabels"})) {
    for (const auto& kv : *ml) {
      s.requirements_.push_back({std::string(kv.key()), Op::equals, {to_string(kv.value())}});
    }
  }
  const json::value* exprs = o->if_contains("matchExpressions");
  if (exprs != nullptr && exprs->is_array()) {
    for (const json::value& e : exprs->get_array()) {
      if (!e.is_object()) continue;
      const json::object& x = e.get_object();
      Requirement r{string_at(x, {"key"}), Op::exists, {}};
      std::string op = string_at(x, {"operator"});
      r.op = op == "In"       ? Op::in
             : op == "NotIn"  ? Op::not_in
             : op == "Exists" ? Op::exists
                              : Op::not_exists;
      if (const json::value* vs = x.if_contains("values"); vs != nullptr && vs->is_array()) {
        for (const json::value& v : vs->get_array()) r.values.push_back(to_string(v));
      }
      s.requirements_.push_back(std::move(r));
    }
  }
  return s;
}

bool LabelSelector::matches(const json::object* labels) const {
  if (nothing_) return false;
  return std::all_of(requirements_.begin(), requirements_.end(),
                     [&](const Requirement& r) { return satisfied(r, labels); });
}

bool LabelSelector::matches_object(const json::object& object) const {
  return matches(object_at(object, {"metadata", "labels"}));
}

std::string field_value(const json::object& object, std::string_view field) {
  if (field == "source") return string_at(object, {"source", "component"});
  const json::value* v = nullptr;
  const json::object* at = &object;
  std::size_t start = 0;
  for (;;) {
    std::size_t dot = field.find('.', start);
    std::string_view part = field.substr(start, dot == std::string_view::npos ? dot : dot - start);
    v = at->if_contains(json::string_view(part.data(), part.size()));
    if (v == nullptr || dot == std::string_view::npos) break;
    at = v->if_object();
    if (at == nullptr) {
      v = nullptr;
      break;
    }
    start = dot + 1;
  }
  if (v == nullptr) {
    return field == "spec.hostNetwork" || field == "spec.unschedulable" ? "false" : "";
  }
  if (v->is_bool()) return v->get_bool() ? "true" : "false";
  if (v->is_string()) return to_string(*v);
  if (v->is_number()) return json::serialize(*v);
  return "";
}

FieldSelector FieldSelector::parse(std::string_view text, const ResourceType& type) {
  FieldSelector s;
  std::vector<std::string_view> allowed = fields_of(type);
  std::size_t start = 0;
  while (start <= text.size() && !text.empty()) {
    std::size_t comma = text.find(',', start);
    std::string_view term =
        text.substr(start, comma == std::string_view::npos ? comma : comma - start);
    start = comma == std::string_view::npos ? text.size() + 1 : comma + 1;
    if (term.empty()) continue;
    std::size_t at;
    Term t{};
    if ((at = term.find("!=")) != std::string_view::npos) {
      t = {std::string(term.substr(0, at)), false, std::string(term.substr(at + 2))};
    } else if ((at = term.find("==")) != std::string_view::npos) {
      t = {std::string(term.substr(0, at)), true, std::string(term.substr(at + 2))};
    } else if ((at = term.find('=')) != std::string_view::npos) {
      t = {std::string(term.substr(0, at)), true, std::string(term.substr(at + 1))};
    } else {
      throw bad_request("invalid selector: '" + std::string(text) + "'; can't understand '" +
                        std::string(term) + "'");
    }
    if (std::find(allowed.begin(), allowed.end(), t.field) == allowed.end()) {
      throw bad_request("field label not supported: " + t.field);
    }
    s.terms_.push_back(std::move(t));
  }
  return s;
}

bool FieldSelector::matches(const json::object& object) const {
  return std::all_of(terms_.begin(), terms_.end(), [&](const Term& t) {
    return (field_value(object, t.field) == t.value) == t.equal;
  });
}

std::string FieldSelector::name() const {
  for (const Term& t : terms_) {
    if (t.field == "metadata.name" && t.equal) return t.value;
  }
  return "";
}

}  // namespace gpuq::kubefake

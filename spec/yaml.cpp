#include "spec/yaml.hpp"

#include <yaml.h>

#include <algorithm>
#include <limits>
#include <memory>
#include <unordered_map>

namespace gpuq::spec::yaml {

// ---------------------------------------------------------------------------------------------
// Node

Kind Node::kind() const { return doc_->nodes_[i_].kind; }

std::string_view Node::text() const {
  if (!present()) return {};
  const auto& r = doc_->nodes_[i_];
  if (r.kind != Kind::kScalar) return {};
  return std::string_view(doc_->chars_).substr(r.first, r.count);
}

bool Node::quoted() const { return present() && doc_->nodes_[i_].quoted; }

Mark Node::mark() const { return present() ? doc_->nodes_[i_].mark : Mark{}; }

std::size_t Node::size() const {
  if (!present()) return 0;
  const auto& r = doc_->nodes_[i_];
  return r.kind == Kind::kList || r.kind == Kind::kMap ? r.count : 0;
}

Node Node::item(std::size_t i) const {
  const auto& r = doc_->nodes_[i_];
  return Node(doc_, doc_->kids_[r.first + i]);
}

Node Node::key(std::size_t i) const {
  const auto& r = doc_->nodes_[i_];
  return Node(doc_, doc_->kids_[r.first + 2 * i]);
}

Node Node::value(std::size_t i) const {
  const auto& r = doc_->nodes_[i_];
  return Node(doc_, doc_->kids_[r.first + 2 * i + 1]);
}

Node Node::find(std::string_view k) const {
  if (!is_map()) return {};
  for (std::size_t i = 0; i < size(); ++i)
    if (key(i).text() == k) return value(i);
  return {};
}

std::string Node::shown() const {
  if (!present()) return "nothing";
  switch (kind()) {
    case Kind::kNull:
      return "nothing";
    case Kind::kScalar:
      return spec::quoted(text());
    case Kind::kList:
      return "a list";
    case Kind::kMap:
      return "a map";
  }
  return "nothing";
}

Node Node::at(const std::vector<SpecError::Part>& path, std::size_t from) const {
  Node n = *this;
  for (std::size_t i = from; i < path.size() && n; ++i) {
    const SpecError::Part& p = path[i];
    Node next;
    if (p.is_index) {
      if (n.is_list() && p.index < n.size()) next = n.item(p.index);
    } else {
      next = n.find(p.key);
    }
    if (!next) return n;
    n = next;
  }
  return n;
}

// ---------------------------------------------------------------------------------------------
// Building a Document from libyaml's events

namespace {

Mark mark_of(const yaml_mark_t& m) {
  auto clamp = [](std::size_t v) {
    return static_cast<std::uint32_t>(
        std::min<std::size_t>(v + 1, std::numeric_limits<std::uint32_t>::max()));
  };
  return {clamp(m.line), clamp(m.column)};
}

// Whether line `line` (1-based) of `text` is indented with a tab, which YAML forbids.
bool tab_indented(std::string_view text, std::uint32_t line) {
  std::size_t at = 0;
  for (std::uint32_t i = 1; i < line && at != std::string_view::npos; ++i) {
    at = text.find('\n', at);
    if (at != std::string_view::npos) ++at;
  }
  if (at == std::string_view::npos) return false;
  for (; at < text.size() && (text[at] == ' ' || text[at] == '\t'); ++at)
    if (text[at] == '\t') return true;
  return false;
}

bool is_null_text(std::string_view s) {
  return s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL";
}

std::string_view tag_of(const yaml_char_t* tag) {
  return tag == nullptr ? std::string_view() : std::string_view(reinterpret_cast<const char*>(tag));
}

struct Parser {
  yaml_parser_t p;
  Parser(std::string_view text) {
    yaml_parser_initialize(&p);
    yaml_parser_set_input_string(&p, reinterpret_cast<const unsigned char*>(text.data()),
                                 text.size());
  }
  ~Parser() { yaml_parser_delete(&p); }
  Parser(const Parser&) = delete;
  Parser& operator=(const Parser&) = delete;
};

struct Event {
  yaml_event_t e{};
  bool live = false;
  ~Event() {
    if (live) yaml_event_delete(&e);
  }
};

}  // namespace

class Builder {
 public:
  explicit Builder(std::string_view text) : text_(text) {}

  std::vector<Document> run() {
    Parser parser(text_);
    std::vector<Document> docs;
    for (;;) {
      Event ev;
      if (!yaml_parser_parse(&parser.p, &ev.e)) syntax_error(parser.p);
      ev.live = true;
      const yaml_event_t& e = ev.e;
      switch (e.type) {
        case YAML_STREAM_START_EVENT:
        case YAML_NO_EVENT:
          break;
        case YAML_STREAM_END_EVENT:
          return docs;
        case YAML_DOCUMENT_START_EVENT:
          start_document(mark_of(e.start_mark));
          break;
        case YAML_DOCUMENT_END_EVENT:
          docs.push_back(end_document());
          break;
        case YAML_SCALAR_EVENT:
          scalar(e);
          break;
        case YAML_SEQUENCE_START_EVENT:
          open(e, Kind::kList, e.data.sequence_start.anchor);
          break;
        case YAML_MAPPING_START_EVENT:
          open(e, Kind::kMap, e.data.mapping_start.anchor);
          break;
        case YAML_SEQUENCE_END_EVENT:
        case YAML_MAPPING_END_EVENT:
          close();
          break;
        case YAML_ALIAS_EVENT:
          alias(e);
          break;
      }
    }
  }

 private:
  struct Frame {
    std::uint32_t node = 0;
    std::vector<std::uint32_t> kids;
  };

  [[noreturn]] void syntax_error(const yaml_parser_t& p) const {
    std::string why = p.problem != nullptr ? p.problem : "not valid YAML";
    if (p.context != nullptr) {
      why += " ";
      why += p.context;
      const Mark c = mark_of(p.context_mark);
      why += " started at line " + std::to_string(c.line) + ", column " + std::to_string(c.column);
    }
    const Mark m = mark_of(p.problem_mark);
    if (tab_indented(text_, m.line)) why += "; indent with spaces, not tabs";
    throw SpecError(why, m);
  }

  void start_document(Mark at) {
    doc_mark_ = at;
    doc_ = Document();
    doc_.nodes_.clear();  // (no reserve by the text's size: a stream of many small documents
                          // would reserve it for each)
    weights_.clear();
    anchors_.clear();
    frames_.clear();
    has_root_ = false;
  }

  Document end_document() {
    if (!has_root_) {  // an empty document: a null root
      doc_.nodes_.push_back({Kind::kNull, false, 0, 0, doc_mark_});
      weights_.push_back(1);
    }
    doc_.root_ = 0;
    return std::move(doc_);
  }

  std::uint32_t add(Kind kind, const yaml_mark_t& at) {
    if (doc_.nodes_.size() >= std::numeric_limits<std::uint32_t>::max() - 1)
      throw SpecError("the document has too many nodes", mark_of(at));
    Document::Rec r;
    r.kind = kind;
    r.mark = mark_of(at);
    doc_.nodes_.push_back(r);
    weights_.push_back(1);
    return static_cast<std::uint32_t>(doc_.nodes_.size() - 1);
  }

  // The path of the node being built now (and `key` below it), for an error found while building.
  SpecError error_here(std::string why, Mark m, std::string_view key = {}) const {
    std::vector<std::string> keys;  // owns the key texts while the Path views them
    keys.reserve(frames_.size() + 1);
    for (const Frame& f : frames_)
      if (doc_.nodes_[f.node].kind == Kind::kMap && f.kids.size() % 2 == 1) {
        const auto& k = doc_.nodes_[f.kids.back()];
        keys.emplace_back(doc_.chars_.substr(k.first, k.count));
      }
    if (!key.empty()) keys.emplace_back(key);
    std::size_t next_key = 0;
    Path path;
    for (const Frame& f : frames_) {
      if (doc_.nodes_[f.node].kind == Kind::kList)
        path.push_index(f.kids.size());
      else if (f.kids.size() % 2 == 1)
        path.push_key(keys[next_key++]);
    }
    if (!key.empty()) path.push_key(keys[next_key]);
    SpecError e(path, std::move(why));
    e.locate(m);
    return e;
  }

  // Attaches a finished node (or an alias to one) to the open collection, or makes it the root.
  void attach(std::uint32_t node, const yaml_mark_t& at) {
    if (frames_.empty()) {
      has_root_ = true;  // the root is node 0: it was added first
      return;
    }
    Frame& f = frames_.back();
    if (doc_.nodes_[f.node].kind == Kind::kMap && f.kids.size() % 2 == 0) {
      const auto& k = doc_.nodes_[node];
      if (k.kind != Kind::kScalar && k.kind != Kind::kNull)
        throw error_here("has a key that is " + Node(&doc_, node).shown() + "; a key must be a plain name",
                         mark_of(at));
    }
    f.kids.push_back(node);
  }

  void remember_anchor(const yaml_char_t* anchor, std::uint32_t node) {
    if (anchor != nullptr) anchors_[reinterpret_cast<const char*>(anchor)] = node;
  }

  void scalar(const yaml_event_t& e) {
    const auto& s = e.data.scalar;
    const std::string_view value(reinterpret_cast<const char*>(s.value), s.length);
    const std::string_view tag = tag_of(s.tag);
    const bool plain = s.style == YAML_PLAIN_SCALAR_STYLE;
    const bool is_null =
        plain && (tag.empty() || tag == "tag:yaml.org,2002:null") && is_null_text(value);
    const std::uint32_t n = add(is_null ? Kind::kNull : Kind::kScalar, e.start_mark);
    auto& r = doc_.nodes_[n];
    r.quoted = !plain;
    if (!is_null) {
      if (doc_.chars_.size() + value.size() > std::numeric_limits<std::uint32_t>::max())
        throw SpecError("the document's text is too large (4 GiB)", mark_of(e.start_mark));
      r.first = static_cast<std::uint32_t>(doc_.chars_.size());
      r.count = static_cast<std::uint32_t>(value.size());
      doc_.chars_.append(value);
    }
    remember_anchor(s.anchor, n);
    attach(n, e.start_mark);
  }

  void open(const yaml_event_t& e, Kind kind, const yaml_char_t* anchor) {
    if (frames_.size() >= kMaxDepth)
      throw error_here(
          "nests deeper than " + std::to_string(kMaxDepth) + " levels of lists and maps",
          mark_of(e.start_mark));
    const std::uint32_t n = add(kind, e.start_mark);
    if (frames_.empty()) has_root_ = true;
    if (anchor != nullptr)
      open_anchors_.push_back(reinterpret_cast<const char*>(anchor));
    else
      open_anchors_.emplace_back();
    Frame f;
    f.node = n;
    if (!spare_.empty()) {
      f.kids = std::move(spare_.back());
      spare_.pop_back();
      f.kids.clear();
    }
    frames_.push_back(std::move(f));
  }

  void close() {
    if (doc_.nodes_[frames_.back().node].kind == Kind::kMap) check_unique_keys(frames_.back());
    Frame f = std::move(frames_.back());
    frames_.pop_back();
    auto& r = doc_.nodes_[f.node];
    r.first = static_cast<std::uint32_t>(doc_.kids_.size());
    r.count = static_cast<std::uint32_t>(r.kind == Kind::kMap ? f.kids.size() / 2 : f.kids.size());
    std::uint64_t w = 1;
    for (std::uint32_t k : f.kids)
      w = std::min<std::uint64_t>(w + weights_[k], std::uint64_t{1} << 62);
    weights_[f.node] = w;
    const std::uint64_t allowed =
        std::max(kMinExpansionAllowed, kMaxExpansion * doc_.nodes_.size());
    if (w > allowed)
      throw error_here("aliases expand this part of the document to more than " +
                           std::to_string(allowed) + " nodes (the whole text has " +
                           std::to_string(doc_.nodes_.size()) + "); repeat less through aliases",
                       r.mark);
    doc_.kids_.insert(doc_.kids_.end(), f.kids.begin(), f.kids.end());
    // Anchored collections can be aliased once complete.
    if (!open_anchors_.back().empty()) anchors_[open_anchors_.back()] = f.node;
    open_anchors_.pop_back();
    const yaml_mark_t at{0, r.mark.line - 1, r.mark.column - 1};
    spare_.push_back(std::move(f.kids));
    attach(f.node, at);
  }

  void alias(const yaml_event_t& e) {
    const std::string name = reinterpret_cast<const char*>(e.data.alias.anchor);
    auto it = anchors_.find(name);
    if (it == anchors_.end()) {
      const bool open =
          std::find(open_anchors_.begin(), open_anchors_.end(), name) != open_anchors_.end();
      throw error_here(open ? "the alias *" + name + " refers to a list or map that contains it"
                            : "the alias *" + name + " names no anchor (&" + name + ") before it",
                       mark_of(e.start_mark));
    }
    attach(it->second, e.start_mark);
  }

  void check_unique_keys(const Frame& f) {
    const std::size_t n = f.kids.size() / 2;
    auto key_text = [&](std::size_t i) {
      const auto& r = doc_.nodes_[f.kids[2 * i]];
      return r.kind == Kind::kScalar ? std::string_view(doc_.chars_).substr(r.first, r.count)
                                     : std::string_view();
    };
    auto duplicate = [&](std::size_t first, std::size_t second) {
      const Mark a = doc_.nodes_[f.kids[2 * first]].mark;
      const Mark b = doc_.nodes_[f.kids[2 * second]].mark;
      throw error_here("is listed twice in this map (first at line " + std::to_string(a.line) +
                           ", column " + std::to_string(a.column) + "); give each key once",
                       b, key_text(second));
    };
    if (n <= 16) {
      for (std::size_t i = 1; i < n; ++i)
        for (std::size_t j = 0; j < i; ++j)
          if (key_text(i) == key_text(j)) duplicate(j, i);
      return;
    }
    std::vector<std::pair<std::string_view, std::size_t>> keys;
    keys.reserve(n);
    for (std::size_t i = 0; i < n; ++i) keys.emplace_back(key_text(i), i);
    std::sort(keys.begin(), keys.end());
    for (std::size_t i = 1; i < keys.size(); ++i)
      if (keys[i].first == keys[i - 1].first)
        duplicate(std::min(keys[i].second, keys[i - 1].second),
                  std::max(keys[i].second, keys[i - 1].second));
  }

  std::string_view text_;
  Document doc_;
  std::vector<std::uint64_t> weights_;  // nodes each node stands for, aliases expanded
  std::unordered_map<std::string, std::uint32_t> anchors_;
  std::vector<std::string> open_anchors_;  // of the open collections ("" for none)
  std::vector<Frame> frames_;
  std::vector<std::vector<std::uint32_t>> spare_;  // kid lists to reuse
  bool has_root_ = false;
  Mark doc_mark_;
};

std::vector<Document> parse_stream(std::string_view text) { return Builder(text).run(); }

Document parse_one(std::string_view text) {
  std::vector<Document> docs = parse_stream(text);
  std::size_t with_content = 0;
  Mark second;
  for (const Document& d : docs)
    if (!d.root().is_null() && ++with_content == 2) second = d.root().mark();
  if (with_content > 1)
    throw SpecError("the text holds " + std::to_string(with_content) +
                        " YAML documents (separated by ---); put everything in one",
                    second);
  if (docs.empty()) return Document();
  if (with_content == 1 && docs.front().root().is_null()) {
    Mark content;
    for (const Document& d : docs)
      if (!d.root().is_null()) content = d.root().mark();
    throw SpecError("the first YAML document is empty (a stray --- above this?); put the content in the first one",
                    content);
  }
  return std::move(docs.front());
}

}  // namespace gpuq::spec::yaml

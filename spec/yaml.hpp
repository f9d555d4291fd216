#pragma once
// YAML text to a compact, read-only tree with the line and column of every node: what the spec
// readers walk (spec/yaml_read.hpp). Parsed by libyaml's event API (chosen on numbers:
// BENCHMARKS.md, "The YAML reader"); the tree is ours, so its cost is linear in the input and
// every error can say where it is.
//
// Refused while parsing, each with its line and column: syntax errors; a key given twice in one
// map; a key that is not a plain scalar (a list or a map as a key); nesting deeper than
// kMaxDepth; aliases that would expand the document past kMaxExpansion times its size (the
// "billion laughs"). Anchors and aliases are otherwise allowed (an alias shares the anchored
// node); merge keys (`<<`) are not a feature here: `<<` is read as a key like any other.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "spec/error.hpp"

namespace gpuq::spec::yaml {

inline constexpr std::size_t kMaxDepth = 64;
// An alias may repeat a node, but the document as read may hold at most this many times more
// nodes than the text has (and at least a million are always allowed).
inline constexpr std::uint64_t kMaxExpansion = 4;
inline constexpr std::uint64_t kMinExpansionAllowed = 1'000'000;

enum class Kind : std::uint8_t { kNull, kScalar, kList, kMap };

class Document;

// A node of a Document, or an absent one (a key a map does not have). Cheap to copy; valid while
// its Document lives (and is not moved).
class Node {
 public:
  Node() = default;
  bool present() const { return doc_ != nullptr; }
  explicit operator bool() const { return present(); }

  Kind kind() const;
  bool is_null() const { return present() && kind() == Kind::kNull; }
  bool is_scalar() const { return present() && kind() == Kind::kScalar; }
  bool is_list() const { return present() && kind() == Kind::kList; }
  bool is_map() const { return present() && kind() == Kind::kMap; }
  // The scalar's text ("" for a null).
  std::string_view text() const;
  // A quoted or block scalar: its text is a string whatever it says ("null", "1").
  bool quoted() const;
  Mark mark() const;

  // A list's items, or a map's entries.
  std::size_t size() const;
  Node item(std::size_t i) const;
  Node key(std::size_t i) const;
  Node value(std::size_t i) const;
  // The value of a map's key; absent when the map has no such key (or this is not a map). A
  // linear search: for the small maps of a spec. Walk big maps (labels, env) by entry.
  Node find(std::string_view key) const;

  // The node `path` leads to from here, or the deepest one on the way when the path goes
  // further than the document does (a missing key: its map). Places an error found after reading.
  Node at(const std::vector<SpecError::Part>& path, std::size_t from = 0) const;

  // How the node is named in an error: "\"text\"" for a scalar, else "a list", "a map", "nothing".
  std::string shown() const;

 private:
  friend class Document;
  friend class Builder;
  Node(const Document* d, std::uint32_t i) : doc_(d), i_(i) {}
  const Document* doc_ = nullptr;
  std::uint32_t i_ = 0;
};

class Document {
 public:
  Document() = default;
  Document(Document&&) = default;
  Document& operator=(Document&&) = default;
  Document(const Document&) = delete;
  Document& operator=(const Document&) = delete;

  // The document's root; a null node for an empty document.
  Node root() const { return Node(this, root_); }
  Node at(const std::vector<SpecError::Part>& path) const { return root().at(path); }

 private:
  friend class Node;
  friend class Builder;
  struct Rec {
    Kind kind = Kind::kNull;
    bool quoted = false;
    std::uint32_t first = 0;  // scalar: offset in chars_; list/map: first slot in kids_
    std::uint32_t count = 0;  // scalar: length; list: items; map: entries (2 slots each)
    Mark mark{1, 1};
  };
  std::string chars_;
  std::vector<Rec> nodes_ = std::vector<Rec>(1);  // never empty: node 0 is the root
  std::vector<std::uint32_t> kids_;
  std::uint32_t root_ = 0;
};

// Every document of a YAML stream, in order (an empty text: none). Throws SpecError, with the
// line and column, for what the header lists.
std::vector<Document> parse_stream(std::string_view text);

// Exactly one document (an empty text: an empty document, whose root is null). Several
// documents with content (separated by ---) are an error naming how many.
Document parse_one(std::string_view text);

}  // namespace gpuq::spec::yaml

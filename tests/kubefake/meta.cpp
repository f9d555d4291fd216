#include "tests/kubefake/meta.hpp"

#include <openssl/evp.h>
#include <openssl/rand.h>

#include <array>
#include <cstdio>
#include <ctime>
#include <stdexcept>
#include <vector>

namespace gpuq::kubefake {

const json::value* value_at(const json::object& o, std::initializer_list<std::string_view> path) {
  const json::object* at = &o;
  const json::value* v = nullptr;
  for (std::string_view key : path) {
    if (at == nullptr) return nullptr;
    v = at->if_contains(json::string_view(key.data(), key.size()));
    if (v == nullptr) return nullptr;
    at = v->if_object();
  }
  return v;
}

const json::object* object_at(const json::object& o, std::initializer_list<std::string_view> path) {
  const json::value* v = value_at(o, path);
  return v == nullptr ? nullptr : v->if_object();
}

std::string to_string(const json::value& v) {
  if (const json::string* s = v.if_string()) return std::string(s->data(), s->size());
  return {};
}

std::string string_at(const json::object& o, std::initializer_list<std::string_view> path) {
  const json::value* v = value_at(o, path);
  return v == nullptr ? std::string() : to_string(*v);
}

std::int64_t int_at(const json::object& o, std::initializer_list<std::string_view> path,
                    std::int64_t fallback) {
  const json::value* v = value_at(o, path);
  if (v == nullptr) return fallback;
  if (v->is_int64()) return v->get_int64();
  if (v->is_uint64()) return static_cast<std::int64_t>(v->get_uint64());
  if (v->is_double()) {
    double d = v->get_double();
    if (d == static_cast<double>(static_cast<std::int64_t>(d))) return static_cast<std::int64_t>(d);
  }
  return fallback;
}

json::object& child(json::object& o, std::string_view key) {
  json::value& v = o[json::string_view(key.data(), key.size())];
  if (!v.is_object()) v = json::object();
  return v.get_object();
}

std::string rfc3339(std::chrono::system_clock::time_point t) {
  std::time_t secs = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  std::array<char, 32> buf{};
  std::strftime(buf.data(), buf.size(), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf.data();
}

std::string now_rfc3339() { return rfc3339(std::chrono::system_clock::now()); }

std::string base64_encode(std::string_view bytes) {
  std::vector<unsigned char> out(4 * ((bytes.size() + 2) / 3) + 1);
  int n = EVP_EncodeBlock(out.data(), reinterpret_cast<const unsigned char*>(bytes.data()),
                          static_cast<int>(bytes.size()));
  return std::string(reinterpret_cast<const char*>(out.data()), static_cast<std::size_t>(n));
}

std::string base64url_encode(std::string_view bytes) {
  std::string s = base64_encode(bytes);
  while (!s.empty() && s.back() == '=') s.pop_back();
  for (char& c : s) c = c == '+' ? '-' : c == '/' ? '_' : c;
  return s;
}

bool base64_decode(std::string_view text, std::string& out) {
  std::string s(text);
  for (char& c : s) c = c == '-' ? '+' : c == '_' ? '/' : c;
  while (s.size() % 4 != 0) s.push_back('=');
  std::vector<unsigned char> buf(s.size() / 4 * 3 + 1);
  int n = EVP_DecodeBlock(buf.data(), reinterpret_cast<const unsigned char*>(s.data()),
                          static_cast<int>(s.size()));
  if (n < 0) return false;
  // EVP_DecodeBlock counts the padding's zero bytes; drop one per '='.
  std::size_t pad = 0;
  for (std::size_t i = s.size(); i > 0 && s[i - 1] == '='; --i) ++pad;
  out.assign(reinterpret_cast<const char*>(buf.data()), static_cast<std::size_t>(n) - pad);
  return true;
}

namespace {
void random_bytes(unsigned char* p, std::size_t n) {
  if (RAND_bytes(p, static_cast<int>(n)) != 1) throw std::runtime_error("RAND_bytes failed");
}
}  // namespace

std::string new_uid() {
  std::array<unsigned char, 16> b{};
  random_bytes(b.data(), b.size());
  b[6] = static_cast<unsigned char>((b[6] & 0x0f) | 0x40);  // version 4
  b[8] = static_cast<unsigned char>((b[8] & 0x3f) | 0x80);  // RFC 4122 variant
  std::array<char, 37> s{};
  std::snprintf(s.data(), s.size(),
                "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
                b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14],
                b[15]);
  return s.data();
}

std::string random_suffix(std::size_t n) {
  // apimachinery's util/rand alphabet: no vowels (no words) and no look-alike characters.
  static constexpr std::string_view alphabet = "bcdfghjklmnpqrstvwxz2456789";
  std::vector<unsigned char> b(n);
  random_bytes(b.data(), n);
  std::string s;
  for (unsigned char c : b) s.push_back(alphabet[c % alphabet.size()]);
  return s;
}

json::object without_type(json::object o) {
  o.erase("kind");
  o.erase("apiVersion");
  return o;
}

json::object ordered(json::object o) {
  json::object out;
  for (const char* key : {"kind", "apiVersion", "metadata", "spec", "status"}) {
    if (auto it = o.find(key); it != o.end()) out[key] = std::move(it->value());
  }
  for (auto& kv : o) {
    if (!out.contains(kv.key())) out[kv.key()] = std::move(kv.value());
  }
  return out;
}

bool condition_true(const json::object& o, std::string_view type) {
  const json::value* cs = value_at(o, {"status", "conditions"});
  if (cs == nullptr || !cs->is_array()) return false;
  for (const json::value& c : cs->get_array())
    if (c.is_object() && string_at(c.get_object(), {"type"}) == type)
      return string_at(c.get_object(), {"status"}) == "True";
  return false;
}

}  // namespace gpuq::kubefake

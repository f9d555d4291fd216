#include "api/tokens.hpp"

#include <algorithm>
#include <ctime>
#include <mutex>

#include "auth/tokens.hpp"

namespace gpuq::api {

void TokenTable::reset(std::vector<storage::TokenRecord> all) {
  std::unique_lock lock(mu_);
  by_hash_.clear();
  hash_of_id_.clear();
  for (storage::TokenRecord& t : all) {
    hash_of_id_[t.id] = t.hash;
    by_hash_[t.hash] = std::move(t);
  }
}

void TokenTable::put(const storage::TokenRecord& t) {
  std::unique_lock lock(mu_);
  if (auto it = hash_of_id_.find(t.id); it != hash_of_id_.end() && it->second != t.hash)
    by_hash_.erase(it->second);
  hash_of_id_[t.id] = t.hash;
  by_hash_[t.hash] = t;
}

std::optional<storage::TokenRecord> TokenTable::find_secret(std::string_view secret) const {
  const std::string hash = auth::token_hash(secret);
  std::shared_lock lock(mu_);
  auto it = by_hash_.find(hash);
  if (it == by_hash_.end()) return std::nullopt;
  return it->second;
}

std::optional<storage::TokenRecord> TokenTable::find_id(const std::string& id) const {
  std::shared_lock lock(mu_);
  auto h = hash_of_id_.find(id);
  if (h == hash_of_id_.end()) return std::nullopt;
  return by_hash_.at(h->second);
}

std::vector<storage::TokenRecord> TokenTable::list(const std::string& user) const {
  std::vector<storage::TokenRecord> out;
  {
    std::shared_lock lock(mu_);
    for (const auto& [hash, t] : by_hash_)
      if (user.empty() || t.user == user) out.push_back(t);
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    return a.created_at != b.created_at ? a.created_at < b.created_at : a.id < b.id;
  });
  return out;
}

std::string bad_token_user(const std::string& user) {
  auto alnum = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
  };
  // The rules of a job's owner (spec/validate.cpp), within 64 bytes: a name a token or
  // certificate carries can also be named in a queue's submitters and viewers.
  const bool fine =
      !user.empty() && user.size() <= 64 && (alnum(user.front()) || user.front() == '_') &&
      user.find("..") == std::string::npos &&
      std::all_of(user.begin(), user.end(),
                  [&](char c) { return alnum(c) || c == '.' || c == '_' || c == '-' || c == '@'; });
  if (fine) return "";
  return "user: \"" + user +
         "\" is not a user name a token may carry; use 1 to 64 letters, digits, '.', '_', '-' or '@' (no \"..\"), "
         "beginning with a letter, a digit or '_'";
}

std::string bad_token_note(const std::string& note) {
  if (note.size() > 200)
    return "note: " + std::to_string(note.size()) + " bytes; a note is at most 200";
  if (std::any_of(note.begin(), note.end(),
                  [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; }))
    return "note: has control characters; use printable text";
  return "";
}

std::string utc_time(Time t) {
  const std::time_t tt = static_cast<std::time_t>(t);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace gpuq::api

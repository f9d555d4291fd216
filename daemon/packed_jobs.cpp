#include "daemon/packed_jobs.hpp"

#include <cstring>
#include <functional>

namespace gpuq::daemon {
namespace {

std::uint32_t length_at(const char* p) {
  std::uint32_t n;
  std::memcpy(&n, p, sizeof n);
  return n;
}

}  // namespace

std::string_view PackedJobs::Entry::id() const {
  return {block.get() + 8, length_at(block.get())};
}

std::string_view PackedJobs::Entry::text() const {
  return {block.get() + 8 + length_at(block.get()), length_at(block.get() + 4)};
}

std::size_t PackedJobs::Hash::operator()(std::string_view id) const {
  return std::hash<std::string_view>{}(id);
}

std::optional<std::string_view> PackedJobs::find(std::string_view id) const {
  auto it = set_.find(id);
  if (it == set_.end()) return std::nullopt;
  return it->text();
}

void PackedJobs::put(std::string_view id, std::string_view packed) {
  Entry e;
  const auto id_n = static_cast<std::uint32_t>(id.size());
  const auto text_n = static_cast<std::uint32_t>(packed.size());
  e.block = std::make_unique_for_overwrite<char[]>(8 + id.size() + packed.size());
  std::memcpy(e.block.get(), &id_n, 4);
  std::memcpy(e.block.get() + 4, &text_n, 4);
  std::memcpy(e.block.get() + 8, id.data(), id.size());
  std::memcpy(e.block.get() + 8 + id.size(), packed.data(), packed.size());
  set_.erase(id);
  set_.insert(std::move(e));
}

}  // namespace gpuq::daemon

#include "binder/kubernetes/history_note.hpp"

#include <boost/json.hpp>

namespace gpuq::binder::k8s {

namespace json = boost::json;

std::string encode_history_note(const std::string& by, const std::vector<storage::HistoryRecord>& records) {
  json::array queues;
  for (const storage::HistoryRecord& h : records) {
    json::object average;
    for (const auto& [name, value] : h.average) average[name] = value;
    queues.push_back(json::object{{"queue", h.queue}, {"at", h.at}, {"average", std::move(average)}});
  }
  std::string out = json::serialize(json::object{{"by", by}, {"queues", std::move(queues)}});
  return out.size() <= kMaxNoteBytes ? out : std::string();
}

namespace {

Result<storage::HistoryRecord> decode_queue(const json::value& v, std::size_t i) {
  const std::string at = "queues[" + std::to_string(i) + "]";
  const json::object* o = v.if_object();
  const json::value* queue = o ? o->if_contains("queue") : nullptr;
  const json::value* when = o ? o->if_contains("at") : nullptr;
  const json::value* average = o ? o->if_contains("average") : nullptr;
  if (!queue || !queue->is_string() || !when || !when->is_int64() || !average || !average->is_object())
    return Error{at + ": needs queue (a string), at (an integer) and average (an object)", ErrorCode::kInvalidArgument};
  storage::HistoryRecord h;
  h.queue = std::string(queue->get_string());
  h.at = when->get_int64();
  for (const auto& [name, value] : average->get_object()) {
    if (!value.is_number())
      return Error{at + ".average." + std::string(name) + ": " + json::serialize(value) + " is not a number",
                   ErrorCode::kInvalidArgument};
    h.average.emplace(std::string(name), value.to_number<double>());
  }
  return h;
}

}  // namespace

Result<std::vector<storage::HistoryRecord>> decode_history_note(std::string_view note) {
  if (note.size() > kMaxNoteBytes)
    return Error{"the note has " + std::to_string(note.size()) + " bytes; at most " + std::to_string(kMaxNoteBytes),
                 ErrorCode::kInvalidArgument};
  boost::system::error_code ec;
  json::value v = json::parse(note, ec);
  const json::object* o = ec ? nullptr : v.if_object();
  const json::value* queues = o ? o->if_contains("queues") : nullptr;
  if (!queues || !queues->is_array())
    return Error{"not a JSON object with a queues array", ErrorCode::kInvalidArgument};
  std::vector<storage::HistoryRecord> out;
  for (std::size_t i = 0; i < queues->get_array().size(); ++i) {
    auto h = decode_queue(queues->get_array()[i], i);
    if (!h) return Error{h.error(), h.code()};
    out.push_back(std::move(h.value()));
  }
  return out;
}

}  // namespace gpuq::binder::k8s

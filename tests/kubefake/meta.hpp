#pragma once
// Small helpers over Boost.JSON for reading and writing the API's object shapes, timestamps as
// the API writes them, and the encodings the API uses (base64 through OpenSSL, uids).
#include <boost/json.hpp>
#include <chrono>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

namespace gpuq::kubefake {

namespace json = boost::json;

// The string at `path` (object keys); "" when absent or not a string.
std::string string_at(const json::object& o, std::initializer_list<std::string_view> path);
// The value at `path`; nullptr when absent.
const json::value* value_at(const json::object& o, std::initializer_list<std::string_view> path);
// Whether status.conditions has `type` with status "True" (a pod's or a node's Ready).
bool condition_true(const json::object& o, std::string_view type);
const json::object* object_at(const json::object& o, std::initializer_list<std::string_view> path);
// The object at o[key], made an empty object first when absent or not an object.
json::object& child(json::object& o, std::string_view key);
std::string to_string(const json::value& v);  // a JSON string's text; "" for other kinds
// An integer field (int64, uint64 or an integral double); `fallback` when absent or not a number.
std::int64_t int_at(const json::object& o, std::initializer_list<std::string_view> path,
                    std::int64_t fallback);

std::string rfc3339(std::chrono::system_clock::time_point t);  // "2024-05-01T10:00:00Z"
std::string now_rfc3339();

std::string base64_encode(std::string_view bytes);     // standard alphabet, padded
std::string base64url_encode(std::string_view bytes);  // URL alphabet, unpadded (continue tokens)
// nullopt-like: returns false when `text` is not valid base64 (either alphabet, padded or not).
bool base64_decode(std::string_view text, std::string& out);

std::string new_uid();  // a random (version 4) UUID
// `n` random characters from the alphabet Kubernetes uses for generateName suffixes.
std::string random_suffix(std::size_t n);

// Without kind and apiVersion: how a List's items look.
json::object without_type(json::object o);
// A shallow key-order normalisation: kind, apiVersion, metadata, spec, status, then the rest.
json::object ordered(json::object o);

}  // namespace gpuq::kubefake

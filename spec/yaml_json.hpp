#pragma once
// A YAML tree (spec/yaml.hpp) as canonical, compact JSON text: what a queue's
// kubernetes.podTemplate is kept as (QueueKubernetes::pod_template), read by the Kubernetes
// binder as a PodTemplateSpec. The same tree always gives the same text, so the text can be
// compared, stored and sent as it is.
//
//   map              -> object, keys in document order (a map's keys are unique: yaml.hpp)
//   list             -> array
//   null (~, null, an empty value)               -> null
//   quoted or block scalar ("1", 'true', |...)    -> string, whatever it says
//   plain true, True, TRUE / false, False, FALSE  -> true / false (YAML 1.2's core schema; yes,
//                                                    no, on, off stay strings)
//   plain number: an integer or a decimal as JSON writes it (1000, -5, 1.5, 2e-3), and as YAML
//     also writes one: a leading '+' (+1), no digit before or after the point (.5, 1.), octal
//     (0644 or 0o644: what Kubernetes' own YAML reading makes of a volume's defaultMode) and
//     hex (0x1F)                                 -> that number (octal and hex in decimal)
//   any other plain scalar (.inf, 1_000, v1.2)   -> string
//
// No whitespace outside strings. Strings are escaped as JSON requires: '"', '\\' and every
// control character below 0x20 (\b \f \n \r \t, else \u00XX); other characters, UTF-8
// included, are written as they are (libyaml has checked the text is UTF-8).
#include <string>
#include <string_view>

#include "spec/yaml.hpp"

namespace gpuq::spec {

// `n` and everything below it as JSON ("null" for an absent node).
std::string to_json(yaml::Node n);

// `s` as a JSON string, quotes included: appended to `out`, or returned.
void append_json_string(std::string& out, std::string_view s);
std::string json_string(std::string_view s);

// The JSON number a plain scalar's text stands for ("+1" -> "1", ".5" -> "0.5", "0644" -> "420"),
// or "" when it is not a number (to_json writes such a scalar as a string).
std::string json_number(std::string_view text);

}  // namespace gpuq::spec

// A message as JSON for -o json (and, through it, -o yaml), with its map entries in key order:
// serialized deterministically (maps sorted), then printed from the bytes. MessageToJsonString
// walks a map in its hash order, which differs from one process to the next, so the same
// answer printed twice could differ.
#include <google/protobuf/descriptor.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/util/json_util.h>
#include <google/protobuf/util/type_resolver_util.h>

#include "cli/format.hpp"

namespace gpuq::cli {

std::string to_json(const google::protobuf::Message& m, bool pretty) {
  namespace pb = google::protobuf;
  static constexpr const char* kTypeUrlPrefix = "type.googleapis.com";
  static pb::util::TypeResolver* const resolver =  // (for the process's life)
      pb::util::NewTypeResolverForDescriptorPool(kTypeUrlPrefix, pb::DescriptorPool::generated_pool());
  std::string binary;
  {
    pb::io::StringOutputStream stream(&binary);
    pb::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    m.SerializeToCodedStream(&coded);
  }
  pb::util::JsonPrintOptions opts;
  opts.add_whitespace = pretty;
  opts.always_print_primitive_fields = true;
  opts.preserve_proto_field_names = true;
  std::string out;
  const auto status = pb::util::BinaryToJsonString(
      resolver, std::string(kTypeUrlPrefix) + "/" + m.GetDescriptor()->full_name(), binary, &out, opts);
  if (!status.ok()) return "{}";  // only for invalid UTF-8 in strings, which the server never sends
  if (pretty && (out.empty() || out.back() != '\n')) out += '\n';
  return out;
}

}  // namespace gpuq::cli

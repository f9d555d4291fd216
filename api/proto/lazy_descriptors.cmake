# cmake -DIN=gpuq.pb.cc -DOUT=gpuq.lazy.pb.cc -P lazy_descriptors.cmake
#
# The generated code with its AddDescriptorsRunner taken out: protobuf then adds the file's
# descriptor to its generated pool the first time a message's descriptor or reflection is asked
# for (AssignDescriptors does, under a once-flag), not at every process's start. Parsing it (11 KB
# of FileDescriptorProto) was about 0.6 ms of each gpuq call that never uses reflection (a submit,
# a cancel; -o json does). gpuqd asks for it at start (its gRPC reflection service looks services
# up by name): daemon/main.cpp.
file(READ "${IN}" code)
set(runner_regex "PROTOBUF_ATTRIBUTE_INIT_PRIORITY2 static ::_pbi::AddDescriptorsRunner dynamic_init_dummy_[A-Za-z0-9_]*\\(&descriptor_table_[A-Za-z0-9_]*\\);")
string(REGEX MATCH "${runner_regex}" runner "${code}")
if(runner STREQUAL "")
  message(WARNING "${IN}: no AddDescriptorsRunner to take out (another protobuf?); its descriptors are added at start")
else()
  string(REPLACE "${runner}" "// (AddDescriptorsRunner taken out by api/proto/lazy_descriptors.cmake)" code "${code}")
endif()
file(WRITE "${OUT}.tmp" "${code}")
file(RENAME "${OUT}.tmp" "${OUT}")

// The fair-share checkpoint a leader leaves on its Lease (binder/kubernetes/history_note.hpp):
// what is written reads back, and a bad note is refused with what is wrong.
#include <doctest/doctest.h>

#include "binder/kubernetes/history_note.hpp"

using namespace gpuq;
using namespace gpuq::binder::k8s;

TEST_CASE("a history note reads back what was written") {
  std::vector<storage::HistoryRecord> records(2);
  records[0].queue = "team-a";
  records[0].at = 1764000000;
  records[0].average = {{"gpu", 1500.25}, {"cpu", 32000}};
  records[1].queue = "team-b";
  records[1].at = 1764000001;
  const std::string note = encode_history_note("gpuq-0_17", records);
  CHECK(note.find("\"by\":\"gpuq-0_17\"") != std::string::npos);
  auto back = decode_history_note(note);
  REQUIRE(back.ok());
  REQUIRE(back->size() == 2);
  CHECK((*back)[0].queue == "team-a");
  CHECK((*back)[0].at == 1764000000);
  CHECK((*back)[0].average.at("gpu") == 1500.25);
  CHECK((*back)[0].average.at("cpu") == 32000);
  CHECK((*back)[1].average.empty());
}

TEST_CASE("a note larger than the Lease may carry is not written; a bad note says what is wrong") {
  std::vector<storage::HistoryRecord> many(2000);
  for (std::size_t i = 0; i < many.size(); ++i) {
    many[i].queue = "queue-with-a-long-name-" + std::to_string(i);
    many[i].average = {{"gpu", 1234.5}};
  }
  CHECK(encode_history_note("x", many).empty());
  CHECK(decode_history_note(std::string(kMaxNoteBytes + 1, ' ')).error() == "the note has 65537 bytes; at most 65536");
  CHECK(decode_history_note("[]").error() == "not a JSON object with a queues array");
  CHECK(decode_history_note("{\"queues\":[{\"queue\":\"a\",\"at\":\"x\",\"average\":{}}]}").error() ==
        "queues[0]: needs queue (a string), at (an integer) and average (an object)");
  CHECK(decode_history_note("{\"queues\":[{\"queue\":\"a\",\"at\":1,\"average\":{\"gpu\":\"lots\"}}]}").error() ==
        "queues[0].average.gpu: \"lots\" is not a number");
}

# Turns a reference page of docs/reference (IN) into a man page (OUT) with go-md2man (MD2MAN):
# its first line, "<!-- man: NAME SECTION "MANUAL" -->", becomes the title line go-md2man reads
# (% NAME SECTION "DATE" "gpuq VERSION" "MANUAL"); links to other pages keep their text only.
# DATE is SOURCE_DATE_EPOCH's month when set (reproducible packages), else today's.
file(READ "${IN}" text)
string(REGEX MATCH "^<!-- man: ([A-Z.]+) ([1-8]) \"([^\"]+)\" -->\n" head "${text}")
if(NOT head)
  message(FATAL_ERROR "${IN}: its first line must be <!-- man: NAME SECTION \"MANUAL\" -->")
endif()
string(TIMESTAMP date "%B %Y" UTC)
string(REGEX REPLACE "^<!-- man: ([A-Z.]+) ([1-8]) \"([^\"]+)\" -->\n"
       "% \\1 \\2 \"${date}\" \"gpuq ${VERSION}\" \"\\3\"\n" text "${text}")
# Links to the project's pages keep their text alone (a man page has no links): a page's own
# name becomes its path in the source tree ([x.md](x.md): docs/reference/x.md; [../tasks/y.md]:
# docs/tasks/y.md), so that no line starts with "." (a roff request). Links with a scheme stay.
string(REGEX REPLACE "\\[\\.\\./([^]\n]*)\\]\\(([^):\n]*)\\)" "docs/\\1" text "${text}")
string(REGEX REPLACE "\\[([a-z0-9.-]+\\.md)\\]\\(([^):\n]*)\\)" "docs/reference/\\1" text "${text}")
string(REGEX REPLACE "\\[([^]\n]*)\\]\\(([^):\n]*)\\)" "\\1" text "${text}")
file(WRITE "${OUT}.md" "${text}")
execute_process(COMMAND "${MD2MAN}" -in "${OUT}.md" -out "${OUT}" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "go-md2man failed on ${IN}")
endif()

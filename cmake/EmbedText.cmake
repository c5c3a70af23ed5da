# cmake -DINPUT=file -DOUTPUT=file.inc -DNAME=symbol -P EmbedText.cmake
# Writes `static const char NAME[] = "...";` holding the text of INPUT, so a
# library carries a data file (the built-in protocol database) and needs no
# path at run time. Split into string pieces, one per line of the input.
file(READ "${INPUT}" text)
string(REPLACE "\\" "\\\\" text "${text}")
string(REPLACE "\"" "\\\"" text "${text}")
string(REPLACE "\t" "\\t" text "${text}")
string(REPLACE "\r" "" text "${text}")
string(REPLACE "\n" "\\n\"\n  \"" text "${text}")
file(WRITE "${OUTPUT}.tmp"
  "// Generated from ${INPUT} by cmake/EmbedText.cmake: do not edit.\n"
  "static const char ${NAME}[] =\n  \"${text}\";\n")
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)

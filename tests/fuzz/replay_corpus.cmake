# Replays a fuzz corpus without fuzzing:
#   cmake -DFUZZER=<fuzz binary> -DCORPUS=<corpus folder> -P replay_corpus.cmake
# Passes every file of CORPUS to FUZZER explicitly (libFuzzer then runs each
# once and prints "Executed <file> in N ms"), and fails if the fuzzer fails or
# if fewer files were executed than the folder holds.
if(NOT FUZZER OR NOT CORPUS)
  message(FATAL_ERROR "usage: cmake -DFUZZER=... -DCORPUS=... -P replay_corpus.cmake")
endif()
file(GLOB files LIST_DIRECTORIES false "${CORPUS}/*")
list(LENGTH files total)
if(total EQUAL 0)
  message(FATAL_ERROR "corpus ${CORPUS} is empty")
endif()
execute_process(COMMAND ${FUZZER} ${files}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
string(REGEX MATCHALL "Executed [^\n]* in [0-9]+ ms" executed "${out}${err}")
list(LENGTH executed ran)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${FUZZER} failed (${rc}) after ${ran} of ${total} files:\n${err}")
endif()
if(NOT ran EQUAL total)
  message(FATAL_ERROR "${FUZZER} executed ${ran} of ${total} corpus files:\n${err}")
endif()
message(STATUS "replayed ${ran} of ${total} files of ${CORPUS}: no failure")

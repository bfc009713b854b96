# Runs one libFuzzer target for a bounded time on a working copy of its seed corpus.
#   cmake -DFUZZER=<binary> -DSEEDS=<seed dir> -DWORK=<dir in the build tree> [-DMAX_LEN=n] -P run_fuzzer.cmake
# The run lasts $LOCKROOM_FUZZ_SECONDS seconds (default 60). Inputs the fuzzer finds go to
# WORK/corpus; a crashing input is written to WORK/ as crash-*, leak-*, timeout-* or oom-*.
if(NOT FUZZER OR NOT SEEDS OR NOT WORK)
  message(FATAL_ERROR "run_fuzzer.cmake needs -DFUZZER, -DSEEDS and -DWORK")
endif()
set(seconds 60)
if(DEFINED ENV{LOCKROOM_FUZZ_SECONDS} AND NOT "$ENV{LOCKROOM_FUZZ_SECONDS}" STREQUAL "")
  set(seconds "$ENV{LOCKROOM_FUZZ_SECONDS}")
  if(NOT seconds MATCHES "^[0-9]+$")
    message(FATAL_ERROR "LOCKROOM_FUZZ_SECONDS must be a whole number of seconds, got '${seconds}'")
  endif()
endif()
if(NOT MAX_LEN)
  set(MAX_LEN 4096)
endif()

file(MAKE_DIRECTORY "${WORK}/corpus")
file(GLOB seeds "${SEEDS}/*")
file(COPY ${seeds} DESTINATION "${WORK}/corpus")

message(STATUS "fuzzing for ${seconds} s: ${FUZZER}")
execute_process(
  COMMAND "${FUZZER}"
    -max_total_time=${seconds}
    -max_len=${MAX_LEN}
    -timeout=10
    -rss_limit_mb=2048
    -print_final_stats=1
    -artifact_prefix=${WORK}/
    "${WORK}/corpus"
  WORKING_DIRECTORY "${WORK}"
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${FUZZER} failed (exit ${rc}); the input that failed is in ${WORK}/")
endif()

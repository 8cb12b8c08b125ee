# SPDX-License-Identifier: Apache-2.0
# Converts a model to a JSON graph, converts that output again, and requires identical bytes;
# also requires `-o -` (standard output) to produce the same bytes as the file.
#   cmake -DNNERGY=<binary> -DMODEL=<model.json> -DOUT_DIR=<dir> -DNAME=<name> -P roundtrip.cmake
set(first ${OUT_DIR}/${NAME}.rt.json)
set(second ${OUT_DIR}/${NAME}.rt2.json)
# Stale files from an earlier run must not let a failing conversion pass.
file(REMOVE ${first} ${second})

function(convert input output)
  execute_process(COMMAND ${NNERGY} convert ${input} -o ${output}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc STREQUAL "0")
    message(FATAL_ERROR "nnergy convert ${input} exited with ${rc}\n${out}\n${err}")
  endif()
  if(NOT EXISTS ${output})
    message(FATAL_ERROR "nnergy convert ${input} wrote no ${output}")
  endif()
endfunction()

convert(${MODEL} ${first})
convert(${first} ${second})
execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files ${first} ${second} RESULT_VARIABLE same)
if(NOT same EQUAL 0)
  message(FATAL_ERROR "${first} and ${second} differ: converting is not byte-stable")
endif()

execute_process(COMMAND ${NNERGY} convert ${first} -o -
                RESULT_VARIABLE rc OUTPUT_VARIABLE stdout_text ERROR_VARIABLE err)
file(READ ${first} file_text)
if(NOT rc STREQUAL "0" OR NOT stdout_text STREQUAL file_text)
  message(FATAL_ERROR "convert -o - (exit ${rc}) differs from the file output\n${err}")
endif()

# The output is a complete document: every tensor declared, the schema named first.
if(NOT file_text MATCHES "^{\n  \"schema\": \"nnergy.graph/1\",\n  \"name\": \"${NAME}\",")
  message(FATAL_ERROR "${first} does not start with the schema and the model's name")
endif()
message("${first}: byte-stable")

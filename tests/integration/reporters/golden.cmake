# SPDX-License-Identifier: Apache-2.0
# Runs nnergy into a scratch folder and compares each output with its golden file, or (MODE
# update) copies the outputs over the golden files.
#   cmake -DCMD="nnergy@@analyze@@..." -DOUT_DIR=dir -DGOLDEN_DIR=dir -DFILES="a.csv@@a-totals.csv"
#         [-DMODE=update] -P golden.cmake
# The first of FILES is passed as -o; the others are the companions the reporter writes beside it.
string(REPLACE "@@" ";" CMD "${CMD}")
string(REPLACE "@@" ";" FILES "${FILES}")
list(GET FILES 0 main)
file(MAKE_DIRECTORY ${OUT_DIR})
foreach(f ${FILES})
  file(REMOVE ${OUT_DIR}/${f})
endforeach()
execute_process(COMMAND ${CMD} -o ${OUT_DIR}/${main} RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "nnergy exited with ${rc}:\n${err}")
endif()
set(failed "")
foreach(f ${FILES})
  if(NOT EXISTS ${OUT_DIR}/${f})
    message(FATAL_ERROR "nnergy wrote no ${OUT_DIR}/${f}")
  endif()
  if(MODE STREQUAL "update")
    execute_process(COMMAND ${CMAKE_COMMAND} -E copy ${OUT_DIR}/${f} ${GOLDEN_DIR}/${f})
    message(STATUS "updated ${GOLDEN_DIR}/${f}")
    continue()
  endif()
  execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files ${GOLDEN_DIR}/${f} ${OUT_DIR}/${f}
                  RESULT_VARIABLE differs)
  if(differs)
    execute_process(COMMAND diff -u ${GOLDEN_DIR}/${f} ${OUT_DIR}/${f} OUTPUT_VARIABLE d)
    message("${d}")
    list(APPEND failed ${f})
  endif()
endforeach()
if(failed)
  message(FATAL_ERROR "output differs from the golden file(s): ${failed}\n"
          "If the change is intended, regenerate them with: cmake --build <build> --target update-golden")
endif()

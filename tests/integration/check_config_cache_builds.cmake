# SPDX-License-Identifier: Apache-2.0
# Two builds of nnergy on one machine keep their own configuration cache entries: a run of one
# build neither rewrites nor drops the entries of the other. The second build is this binary
# with its GNU build ID removed, so its stamp (size, inode, time) differs.
# Inputs: -DNNERGY=<binary> -DOBJCOPY=<objcopy> -DPLUGINS=<plugin directory> -DWORK=<scratch>
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK}/cache ${WORK}/other/bin)
set(other ${WORK}/other/bin/nnergy)
execute_process(COMMAND ${OBJCOPY} --remove-section=.note.gnu.build-id ${NNERGY} ${other}
                RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "objcopy could not make the second build:\n${err}")
endif()

function(hardware_list binary)
  execute_process(
    COMMAND ${CMAKE_COMMAND} -E env NNERGY_CONFIG_CACHE=${WORK}/cache
            NNERGY_PLUGIN_CACHE=off NNERGY_PLUGIN_PATH=${PLUGINS} ${binary} hardware list
    RESULT_VARIABLE rc ERROR_VARIABLE err OUTPUT_QUIET)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${binary} hardware list exited with ${rc}:\n${err}")
  endif()
endfunction()

function(entries out_var)
  file(GLOB names RELATIVE ${WORK}/cache ${WORK}/cache/*)
  list(FILTER names INCLUDE REGEX "^[0-9a-f]+$")
  list(SORT names)
  set(${out_var} "${names}" PARENT_SCOPE)
endfunction()

hardware_list(${NNERGY})
entries(first)
list(LENGTH first count)
if(count EQUAL 0)
  message(FATAL_ERROR "the first build wrote no cache entries")
endif()

hardware_list(${other})
entries(both)
list(LENGTH both both_count)
math(EXPR expected "2 * ${count}")
if(NOT both_count EQUAL expected)
  message(FATAL_ERROR "after the second build's run the cache holds ${both_count} entries; "
                      "expected ${expected}: each build its own ${count}")
endif()
foreach(name IN LISTS first)
  file(READ ${WORK}/cache/${name} before HEX)
  set(before_${name} "${before}")
endforeach()

# The first build again: its entries are still there, unchanged, and nothing is added.
hardware_list(${NNERGY})
entries(again)
if(NOT again STREQUAL both)
  message(FATAL_ERROR "the first build's second run changed the set of cache entries")
endif()
foreach(name IN LISTS first)
  file(READ ${WORK}/cache/${name} after HEX)
  if(NOT after STREQUAL before_${name})
    message(FATAL_ERROR "the first build's entry ${name} was rewritten")
  endif()
endforeach()
message(STATUS "two builds kept ${count} cache entries each")

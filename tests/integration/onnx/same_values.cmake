# SPDX-License-Identifier: Apache-2.0
# cmake -DA=file -DB=file -P same_values.cmake: the two TOML files hold the same lines once
# comments and blank lines are set aside.
foreach(f A B)
  file(STRINGS "${${f}}" lines REGEX "^[^#]")
  set(${f}_lines "${lines}")
endforeach()
if(NOT A_lines STREQUAL B_lines)
  message(FATAL_ERROR "${A} and ${B} differ:\n${A_lines}\n---\n${B_lines}")
endif()

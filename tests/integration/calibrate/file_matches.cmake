# SPDX-License-Identifier: Apache-2.0
# cmake -DFILE=PATH -DPATTERN=REGEX -P file_matches.cmake: fails unless FILE exists and some
# part of it matches PATTERN.
if(NOT EXISTS "${FILE}")
  message(FATAL_ERROR "${FILE} was not written")
endif()
file(READ "${FILE}" text)
if(NOT text MATCHES "${PATTERN}")
  message(FATAL_ERROR "${FILE} does not match '${PATTERN}'")
endif()

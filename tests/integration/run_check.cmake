# SPDX-License-Identifier: Apache-2.0
# Runs a command and checks its exit code and output, so a test fails for the right reason only.
#   cmake -DCMD="a@@b@@c" -DEXPECT_RC=N [-DSTDOUT_REGEX=re] [-DSTDERR_REGEX=re]
#         [-DSTDERR_NOT_REGEX=re] -P run_check.cmake
string(REPLACE "@@" ";" CMD "${CMD}")
execute_process(COMMAND ${CMD} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("--- stdout:\n${out}\n--- stderr:\n${err}")
if(NOT rc STREQUAL "${EXPECT_RC}")
  message(FATAL_ERROR "exit code ${rc}, expected ${EXPECT_RC}")
endif()
if(DEFINED STDOUT_REGEX AND NOT out MATCHES "${STDOUT_REGEX}")
  message(FATAL_ERROR "stdout does not match '${STDOUT_REGEX}'")
endif()
if(DEFINED STDERR_REGEX AND NOT err MATCHES "${STDERR_REGEX}")
  message(FATAL_ERROR "stderr does not match '${STDERR_REGEX}'")
endif()
if(DEFINED STDERR_NOT_REGEX AND err MATCHES "${STDERR_NOT_REGEX}")
  message(FATAL_ERROR "stderr matches '${STDERR_NOT_REGEX}'")
endif()

# SPDX-License-Identifier: Apache-2.0
# A committed measurement file is exactly what tools/convert_validation.py writes from its
# source: cmake -DPYTHON=python3 -DCONVERTER=convert_validation.py -DSOURCE=models.json
#            -DKIND=models -DCOMMITTED=file.json -DOUT=converted.json -P same_as_converted.cmake
execute_process(COMMAND ${PYTHON} ${CONVERTER} ${SOURCE} --kind ${KIND} -o ${OUT}
                RESULT_VARIABLE rc)
if(NOT rc STREQUAL "0")
  message(FATAL_ERROR "${CONVERTER} failed on ${SOURCE}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files ${COMMITTED} ${OUT} RESULT_VARIABLE same)
if(NOT same STREQUAL "0")
  message(FATAL_ERROR "${COMMITTED} differs from the conversion of ${SOURCE}: run\n"
                      "  tools/convert_validation.py ${SOURCE} --kind ${KIND} -o ${COMMITTED}")
endif()

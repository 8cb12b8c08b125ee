# SPDX-License-Identifier: Apache-2.0
# A committed measurement file is exactly what tools/convert_validation.py writes from its
# source: cmake -DPYTHON=python3 -DCONVERTER=convert_validation.py -DSOURCE=models.json
#            -DKIND=models -DCOMMITTED=file.json -DOUT=converted.json [-DMACHINE=name]
#            -P same_as_converted.cmake
set(machine_args)
if(MACHINE)
  set(machine_args --machine ${MACHINE})
endif()
execute_process(COMMAND ${PYTHON} ${CONVERTER} ${SOURCE} --kind ${KIND} ${machine_args} -o ${OUT}
                RESULT_VARIABLE rc)
if(NOT rc STREQUAL "0")
  message(FATAL_ERROR "${CONVERTER} failed on ${SOURCE}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files ${COMMITTED} ${OUT} RESULT_VARIABLE same)
if(NOT same STREQUAL "0")
  message(FATAL_ERROR "${COMMITTED} differs from the conversion of ${SOURCE}: run\n"
                      "  tools/convert_validation.py ${SOURCE} --kind ${KIND} ${machine_args} -o ${COMMITTED}")
endif()

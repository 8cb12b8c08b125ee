# SPDX-License-Identifier: Apache-2.0
# Runs `nnergy compare` on each model and batch and checks that the devices, listed fastest
# part first, come out in that order of latency (a later one never faster). For parts whose
# order the hardware itself decides (the same die with fewer SMs, lower clocks and less memory
# bandwidth), a reversal is a modelling error, not a property of the part.
# cmake -DNNERGY=<exe> -DOUT=<dir> -DDEVICES=a,b,c -DMODELS=m1,m2 -DBATCHES=1,64
#       [-DRUNTIME=<profile>] -P check_latency_order.cmake
cmake_minimum_required(VERSION 3.20)
string(REPLACE "," ";" models "${MODELS}")
string(REPLACE "," ";" batches "${BATCHES}")
string(REPLACE "," ";" devices "${DEVICES}")
set(runtime_args "")
if(DEFINED RUNTIME)
  set(runtime_args --runtime ${RUNTIME})
endif()
file(MAKE_DIRECTORY ${OUT})
foreach(model ${models})
  foreach(batch ${batches})
    set(json ${OUT}/order-${model}-${batch}.json)
    execute_process(COMMAND ${NNERGY} compare ${model} --hw ${DEVICES} --batch ${batch}
                            ${runtime_args} --format json -o ${json}
                    RESULT_VARIABLE rc ERROR_VARIABLE err)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "nnergy compare ${model} --batch ${batch} failed (${rc}): ${err}")
    endif()
    file(READ ${json} doc)
    string(JSON count LENGTH "${doc}" devices)
    math(EXPR last "${count} - 1")
    set(previous "")
    set(previous_name "")
    foreach(name ${devices})
      set(value "")
      foreach(d RANGE ${last})
        string(JSON hw GET "${doc}" devices ${d} hardware)
        if(hw STREQUAL name)
          string(JSON value GET "${doc}" devices ${d} latency_s)
        endif()
      endforeach()
      if(value STREQUAL "")
        message(FATAL_ERROR "${model} batch ${batch}: no latency for ${name}")
      endif()
      if(NOT previous STREQUAL "" AND value LESS previous)
        message(FATAL_ERROR "${model} batch ${batch}: ${name} (${value} s) is faster than "
                            "${previous_name} (${previous} s)")
      endif()
      set(previous ${value})
      set(previous_name ${name})
    endforeach()
  endforeach()
endforeach()
message(STATUS "latency order ${DEVICES} holds on ${MODELS} at batch ${BATCHES}")

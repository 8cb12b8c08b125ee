# SPDX-License-Identifier: Apache-2.0
# cmake -DNNERGY=bin -DONNX=file -DGRAPH=file -DOUT=dir -DNAME=name -P check_zoo_counts.cmake:
# analyzes a bundled JSON graph and the ONNX file it was converted from at the same bindings and
# fails unless their parameters, MACs, FLOPs and node counts are the same.
foreach(kind onnx graph)
  if(kind STREQUAL "onnx")
    set(model ${ONNX})
  else()
    set(model ${GRAPH})
  endif()
  set(report ${OUT}/zoo-${NAME}-${kind}.json)
  file(REMOVE ${report})
  execute_process(COMMAND ${NNERGY} --quiet analyze ${model} --hw h100-sxm5
                          --dim batch=2,seq=64 --format json -o ${report}
                  RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "analyze ${model} failed (${rc}): ${err}")
  endif()
  file(READ ${report} doc)
  foreach(key params macs flops)
    string(JSON ${kind}_${key} GET "${doc}" totals ${key})
  endforeach()
  string(JSON ${kind}_nodes GET "${doc}" model nodes)
endforeach()
foreach(key params macs flops nodes)
  message("${key}: ${onnx_${key}} (ONNX), ${graph_${key}} (JSON graph)")
  if(NOT onnx_${key} STREQUAL graph_${key})
    message(FATAL_ERROR "${NAME}: ${key} differ: ${ONNX} gives ${onnx_${key}}, "
                        "${GRAPH} gives ${graph_${key}} (regenerate the zoo with "
                        "tools/make_model_zoo.py)")
  endif()
endforeach()

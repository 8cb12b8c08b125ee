# SPDX-License-Identifier: Apache-2.0
# A run opens only the plugin libraries it uses: `nnergy plugins` writes the catalog, an
# analysis then opens the frontend, partitioner, architecture, estimators and reporter it needs
# and none of the others; NNERGY_PLUGIN_CACHE=off opens every library again.
# Inputs: -DNNERGY=<binary> -DMODEL=<model> -DWORK=<scratch directory>
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
set(catalog ${WORK}/plugin-catalog)

function(run_nnergy cache out_var)
  execute_process(
    COMMAND ${CMAKE_COMMAND} -E env NNERGY_PLUGIN_CACHE=${cache} ${NNERGY} ${ARGN}
    RESULT_VARIABLE rc ERROR_VARIABLE err OUTPUT_QUIET)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "nnergy ${ARGN} exited with ${rc}:\n${err}")
  endif()
  set(${out_var} "${err}" PARENT_SCOPE)
endfunction()

run_nnergy(${catalog} ignored plugins)
if(NOT EXISTS ${catalog})
  message(FATAL_ERROR "nnergy plugins wrote no catalog at ${catalog}")
endif()

run_nnergy(${catalog} err -v analyze ${MODEL} --hw h100-sxm5 --format json -o ${WORK}/r.json)
foreach(used frontend_json_graph partitioner_fusion architecture_gpu estimator_roofline
        reporter_json)
  if(NOT err MATCHES "opening catalogued plugin library [^\n]*libnnergy_${used}\\.so")
    message(FATAL_ERROR "the analysis did not open libnnergy_${used}.so:\n${err}")
  endif()
endforeach()
foreach(unused architecture_kpu architecture_tpu architecture_cpu reporter_html reporter_csv
        frontend_onnx)
  if(err MATCHES "opening [^\n]*libnnergy_${unused}\\.so")
    message(FATAL_ERROR "the analysis opened libnnergy_${unused}.so, which it does not use:\n${err}")
  endif()
endforeach()

run_nnergy(off err -v analyze ${MODEL} --hw h100-sxm5 --format json -o ${WORK}/r.json)
if(err MATCHES "catalogued")
  message(FATAL_ERROR "NNERGY_PLUGIN_CACHE=off still used a catalog:\n${err}")
endif()
message(STATUS "the analysis opened only the plugin libraries it uses")

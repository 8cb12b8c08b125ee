# SPDX-License-Identifier: Apache-2.0
# The SDK as a vendor uses it, built with another compiler and standard library than the host:
#  1. install the nnergy build tree to a fresh prefix,
#  2. configure and build sdk/examples/vendor_arch against that prefix with clang++ and libc++
#     (find_package(nnergy), nnergy_add_plugin), warnings as errors,
#  3. run the installed g++/libstdc++ `nnergy` on the example pipeline with --plugin-path pointing
#     at the example's build directory: it must succeed and report acme.architecture.npu,
#  4. run it again at a precision the example device lacks: the plugin throws inside (libc++),
#     the SDK turns that into a status, and the host exits with "invalid input" and the message;
#  5. build sdk/examples/budget_reporter the same way and run it as a pipeline's reporter and as
#     `analyze --format acme.reporter.budget -o FILE` (its companion output lands beside FILE).
#
# cmake -DNNERGY_BUILD_DIR=<nnergy build> -DNNERGY_SOURCE_DIR=<repo> -DWORK_DIR=<scratch>
#       [-DGENERATOR=Ninja] [-DCONSUMER_CXX=clang++] [-DCONSUMER_CXX_FLAGS=-stdlib=libc++]
#       -P run.cmake
# Prints "sdk_consumer: SKIPPED" (the test's SKIP_REGULAR_EXPRESSION) and stops when the
# clang/libc++ toolchain is not installed.
cmake_minimum_required(VERSION 3.20)

foreach(var NNERGY_BUILD_DIR NNERGY_SOURCE_DIR WORK_DIR)
  if(NOT ${var})
    message(FATAL_ERROR "sdk_consumer: -D${var}=... is required")
  endif()
endforeach()
if(NOT CONSUMER_CXX)
  set(CONSUMER_CXX clang++)
endif()
if(NOT GENERATOR)
  set(GENERATOR "Unix Makefiles")
endif()
if(NOT DEFINED CONSUMER_CXX_FLAGS)
  set(CONSUMER_CXX_FLAGS "-stdlib=libc++")
endif()

set(example_src ${NNERGY_SOURCE_DIR}/sdk/examples/vendor_arch)
set(prefix ${WORK_DIR}/prefix)
set(example_build ${WORK_DIR}/vendor_arch-build)

# Runs a command; on failure prints what ran and its output, and stops.
function(step what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    string(REPLACE ";" " " cmd "${ARGN}")
    message(FATAL_ERROR "sdk_consumer: ${what} failed (exit ${rc})\n  command: ${cmd}\n"
                        "--- stdout ---\n${out}\n--- stderr ---\n${err}")
  endif()
  set(step_stdout "${out}" PARENT_SCOPE)
  set(step_stderr "${err}" PARENT_SCOPE)
endfunction()

# ---- the other toolchain --------------------------------------------------------------------
find_program(consumer_cxx NAMES ${CONSUMER_CXX})
if(NOT consumer_cxx)
  message("sdk_consumer: SKIPPED: ${CONSUMER_CXX} not found (install clang, libc++-dev, libc++abi-dev)")
  return()
endif()
file(WRITE ${WORK_DIR}/probe.cpp "#include <string>\nint main() { return std::string(\"x\").size() == 1 ? 0 : 1; }\n")
separate_arguments(flags UNIX_COMMAND "${CONSUMER_CXX_FLAGS}")
execute_process(COMMAND ${consumer_cxx} ${flags} ${WORK_DIR}/probe.cpp -o ${WORK_DIR}/probe
  RESULT_VARIABLE probe_rc OUTPUT_QUIET ERROR_VARIABLE probe_err)
if(NOT probe_rc EQUAL 0)
  message("sdk_consumer: SKIPPED: ${CONSUMER_CXX} ${CONSUMER_CXX_FLAGS} cannot build a program "
          "(install libc++-dev and libc++abi-dev):\n${probe_err}")
  return()
endif()

# ---- 1. install ---------------------------------------------------------------------------
file(REMOVE_RECURSE ${prefix} ${example_build})
step("installing ${NNERGY_BUILD_DIR} (build every target first)"
  ${CMAKE_COMMAND} --install ${NNERGY_BUILD_DIR} --prefix ${prefix})
set(nnergy_exe ${prefix}/bin/nnergy)
foreach(f ${nnergy_exe} ${prefix}/include/nnergy/plugin.h ${prefix}/include/nnergy/sdk.hpp)
  if(NOT EXISTS ${f})
    message(FATAL_ERROR "sdk_consumer: the install did not produce ${f}")
  endif()
endforeach()
file(GLOB_RECURSE config_files ${prefix}/*/nnergyConfig.cmake)
if(NOT config_files)
  message(FATAL_ERROR "sdk_consumer: the install has no nnergyConfig.cmake under ${prefix}")
endif()

# ---- 2. build the example out of tree -----------------------------------------------------
step("configuring the example with ${CONSUMER_CXX} ${CONSUMER_CXX_FLAGS}"
  ${CMAKE_COMMAND} -S ${example_src} -B ${example_build} -G "${GENERATOR}"
    -DCMAKE_BUILD_TYPE=RelWithDebInfo
    -DCMAKE_CXX_COMPILER=${consumer_cxx}
    "-DCMAKE_CXX_FLAGS=${CONSUMER_CXX_FLAGS} -Wall -Wextra -Wpedantic -Werror"
    -DCMAKE_PREFIX_PATH=${prefix}
    -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF)
step("building the example" ${CMAKE_COMMAND} --build ${example_build})
set(plugin ${example_build}/libacme_vendor_arch.so)
if(NOT EXISTS ${plugin})
  message(FATAL_ERROR "sdk_consumer: the example build did not produce ${plugin}")
endif()

# The plugin must really use the other standard library, and export one symbol.
find_program(readelf NAMES readelf)
if(readelf)
  step("reading the plugin's dynamic section" ${readelf} -d -W --dyn-syms ${plugin})
  if(CONSUMER_CXX_FLAGS MATCHES "libc\\+\\+" AND NOT step_stdout MATCHES "libc\\+\\+\\.so")
    message(FATAL_ERROR "sdk_consumer: ${plugin} does not link libc++:\n${step_stdout}")
  endif()
  string(REGEX MATCHALL "[^\n]* FUNC +GLOBAL +DEFAULT +[0-9]+ [^\n]*" exported "${step_stdout}")
  list(LENGTH exported n_exported)
  if(NOT n_exported EQUAL 1 OR NOT exported MATCHES "nnergy_plugin_negotiate")
    message(FATAL_ERROR "sdk_consumer: ${plugin} must export exactly nnergy_plugin_negotiate; "
                        "it exports:\n${exported}")
  endif()
endif()

# ---- 3. the host runs the example pipeline ------------------------------------------------
# Only the installed defaults and --plugin-path: nothing from the environment.
set(run_env ${CMAKE_COMMAND} -E env --unset=NNERGY_PLUGIN_PATH --unset=NNERGY_PLUGIN_SYSTEM_PATH)
step("running the example pipeline"
  ${run_env} ${nnergy_exe} --plugin-path ${example_build} run ${example_src}/configs/npu_pipeline.toml)
set(report "${step_stdout}")
if(NOT report MATCHES "acme\\.architecture\\.npu")
  message(FATAL_ERROR "sdk_consumer: the report does not mention acme.architecture.npu:\n"
                      "${report}\n--- stderr ---\n${step_stderr}")
endif()
if(step_stderr MATCHES "skipping plugin library[^\n]*acme_vendor_arch")
  message(FATAL_ERROR "sdk_consumer: the host skipped the example plugin:\n${step_stderr}")
endif()

# `nnergy plugins` lists it with its metadata.
step("listing plugins" ${run_env} ${nnergy_exe} --plugin-path ${example_build} plugins)
foreach(expected "acme.architecture.npu" "acme_vendor_arch" "Apache-2.0")
  if(NOT step_stdout MATCHES "${expected}")
    message(FATAL_ERROR "sdk_consumer: `nnergy plugins` does not show ${expected}:\n${step_stdout}")
  endif()
endforeach()

# ---- 4. an error thrown inside the libc++ plugin comes back as a message ------------------
file(READ ${example_src}/configs/npu_pipeline.toml pipeline)
string(REPLACE "path = \"tiny_mlp.json\"" "path = \"${example_src}/configs/tiny_mlp.json\""
  pipeline "${pipeline}")
string(REPLACE "hardware = \"npu.toml\"" "hardware = \"${example_src}/configs/npu.toml\""
  pipeline "${pipeline}")
string(REPLACE "precision = \"int8\"" "precision = \"float32\"" pipeline "${pipeline}")
if(NOT pipeline MATCHES "precision = \"float32\"")
  message(FATAL_ERROR "sdk_consumer: could not derive the float32 pipeline from npu_pipeline.toml")
endif()
file(WRITE ${WORK_DIR}/float32_pipeline.toml "${pipeline}")
execute_process(
  COMMAND ${run_env} ${nnergy_exe} --plugin-path ${example_build} run ${WORK_DIR}/float32_pipeline.toml
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
# docs/cli.md: exit code 3 is invalid input, which includes a precision the hardware lacks.
if(NOT rc EQUAL 3 OR NOT err MATCHES "no compute\\.float32\\.peak \\(supported: [^)]*int8")
  message(FATAL_ERROR "sdk_consumer: a float32 run on the int8/float16 example device should exit "
                      "with 3 and name the missing compute.float32.peak; it exited ${rc}\n"
                      "--- stdout ---\n${out}\n--- stderr ---\n${err}")
endif()

# ---- 5. a reporter plugin built out of tree: sdk/examples/budget_reporter -----------------
set(reporter_src ${NNERGY_SOURCE_DIR}/sdk/examples/budget_reporter)
set(reporter_build ${WORK_DIR}/budget_reporter-build)
file(REMOVE_RECURSE ${reporter_build})
step("configuring the reporter example with ${CONSUMER_CXX} ${CONSUMER_CXX_FLAGS}"
  ${CMAKE_COMMAND} -S ${reporter_src} -B ${reporter_build} -G "${GENERATOR}"
    -DCMAKE_BUILD_TYPE=RelWithDebInfo
    -DCMAKE_CXX_COMPILER=${consumer_cxx}
    "-DCMAKE_CXX_FLAGS=${CONSUMER_CXX_FLAGS} -Wall -Wextra -Wpedantic -Werror"
    -DCMAKE_PREFIX_PATH=${prefix}
    -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF)
step("building the reporter example" ${CMAKE_COMMAND} --build ${reporter_build})
# Its pipeline: two runs against a budget, verdicts on standard output, then (a companion of
# standard output) the tab-separated verdicts.
step("running the reporter example's pipeline"
  ${run_env} NO_COLOR=1 ${nnergy_exe} --plugin-path ${reporter_build} run
  ${reporter_src}/configs/budget_pipeline.toml)
if(NOT step_stdout MATCHES "run 1 h100-sxm5 float16 batch 8: [0-9.e-]+ J/inference \\(budget 0\\.001\\), [0-9.e-]+ s \\(budget 5e-05\\) (OK|OVER)\n.*run 2 l4 float16 batch 8: .*of 2 run\\(s\\) over budget\nrun\thardware\tprecision\tbatch\tenergy_per_inference_j\tlatency_s\tverdict\n1\th100-sxm5\tfloat16\t8\t[0-9.e-]+\t[0-9.e-]+\t(ok|over)\n2\tl4\t")
  message(FATAL_ERROR "sdk_consumer: the budget reporter's output is not as expected:\n"
                      "${step_stdout}\n--- stderr ---\n${step_stderr}")
endif()
string(ASCII 27 escape)
string(FIND "${step_stdout}" "${escape}" escape_at)
if(NOT escape_at EQUAL -1)
  message(FATAL_ERROR "sdk_consumer: colour escapes with NO_COLOR set:\n${step_stdout}")
endif()
# Chosen by --format with the default pipeline, to a file: the companion lands beside it.
step("running analyze with the example reporter"
  ${run_env} ${nnergy_exe} --plugin-path ${reporter_build} analyze
  ${reporter_src}/configs/tiny_cnn.json --hw l4 --batch 1 --format acme.reporter.budget
  -o ${WORK_DIR}/budget.txt)
if(NOT EXISTS ${WORK_DIR}/budget.txt OR NOT EXISTS ${WORK_DIR}/budget-budget.tsv)
  message(FATAL_ERROR "sdk_consumer: analyze --format acme.reporter.budget -o budget.txt did not "
                      "write budget.txt and its companion budget-budget.tsv:\n${step_stderr}")
endif()
file(READ ${WORK_DIR}/budget.txt budget_text)
if(NOT budget_text MATCHES "run 1 l4 float32 batch 1: [0-9.e-]+ J/inference, [0-9.e-]+ s no budget\n")
  message(FATAL_ERROR "sdk_consumer: budget.txt is not as expected:\n${budget_text}")
endif()
# The reporter's configuration error (a negative budget) reaches the user as invalid input,
# naming the pipeline's file and line.
file(READ ${reporter_src}/configs/budget_pipeline.toml pipeline)
string(REPLACE "path = \"tiny_cnn.json\"" "path = \"${reporter_src}/configs/tiny_cnn.json\""
  pipeline "${pipeline}")
string(REPLACE "energy_budget_j = 1e-3" "energy_budget_j = -1" pipeline "${pipeline}")
file(WRITE ${WORK_DIR}/negative_budget.toml "${pipeline}")
execute_process(
  COMMAND ${run_env} ${nnergy_exe} --plugin-path ${reporter_build} run
    ${WORK_DIR}/negative_budget.toml
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 3 OR NOT err MATCHES "negative_budget\\.toml:[0-9]+: 'energy_budget_j' \\(joules per inference\\) must be positive")
  message(FATAL_ERROR "sdk_consumer: a negative energy_budget_j should exit with 3 naming the "
                      "file, line and key; it exited ${rc}\n${err}")
endif()

message("sdk_consumer: OK: ${CONSUMER_CXX} ${CONSUMER_CXX_FLAGS} plugins ran in the installed host")

# SPDX-License-Identifier: Apache-2.0
# nnergy_add_plugin(<target> SOURCES <src>... [LINK <libs>...])
#
# Builds a plugin library the way the host expects: a MODULE library with hidden visibility that
# exports only nnergy_plugin_negotiate, links with --no-undefined and never against the host.
# Works in the nnergy tree and, through find_package(nnergy), in a vendor's project.
include_guard(GLOBAL)

if(NOT NNERGY_PLUGIN_VERSION_SCRIPT)
  set(NNERGY_PLUGIN_VERSION_SCRIPT ${CMAKE_CURRENT_LIST_DIR}/nnergy_plugin.map)
endif()

function(nnergy_add_plugin target)
  cmake_parse_arguments(arg "" "" "SOURCES;LINK" ${ARGN})
  if(NOT arg_SOURCES)
    message(FATAL_ERROR "nnergy_add_plugin(${target}): SOURCES is required")
  endif()
  add_library(${target} MODULE ${arg_SOURCES})
  target_link_libraries(${target} PRIVATE nnergy::sdk ${arg_LINK})
  set_target_properties(${target} PROPERTIES
    C_VISIBILITY_PRESET hidden
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON
    LINK_DEPENDS ${NNERGY_PLUGIN_VERSION_SCRIPT})
  target_link_options(${target} PRIVATE
    "LINKER:--version-script=${NNERGY_PLUGIN_VERSION_SCRIPT}"
    "LINKER:--no-undefined")
  if(NNERGY_PLUGIN_BUILD_DIR)
    # In-tree: next to the host's build tree so it is found without configuration.
    set_target_properties(${target} PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${NNERGY_PLUGIN_BUILD_DIR})
    if(COMMAND nnergy_set_warnings)
      nnergy_set_warnings(${target})
    endif()
    if(COMMAND nnergy_link_cxx_runtime_statically)
      nnergy_link_cxx_runtime_statically(${target})
    endif()
    if(NNERGY_INSTALL)
      install(TARGETS ${target} LIBRARY DESTINATION ${NNERGY_PLUGIN_INSTALL_DIR})
    endif()
  endif()
endfunction()

# cmake -DROOT=<repository> -P check_layers.cmake
#
# Lower layers never include higher ones. Every file under src/graphcap and fake_driver/graphcap
# belongs to one layer (named by its include path, graphcap/...), and each of its
# `#include <graphcap/...>` (or "graphcap/...") lines must name a file of its own layer or a lower
# one. graphcap's layers, lowest first:
#
#   driver_interface  CUDA's mirrored types, the entry point table and its traits, the error names,
#                     DriverApi, its hooks' door and ForwardingDriver: what both graphcap and the
#                     fake stand on
#   vocabulary        Error, Result, GRAPHCAP_TRY, the log, and the plain option and limit structs
#                     (device_options.h, device_limits.h) every layer above may take
#   driver            the libcuda loader and the wording of a stream's fault
#   memory            pools, slices, the drop queue, buffer state
#   capture           the recording lifecycle and the CUDA graph driver
#   detail            the cores behind the public handles
#   public            the public headers (graphcap/*.h)
#   public_internal   the public layer's own doors: handle_access.h, arg_access.h, module_image.h
#   public_sources    the public layer's .cc files
#
# The fake is a stack of its own beside them: it knows nothing of graphcap above DriverApi, so its
# layers (fake_public: <graphcap/kernel.h> and fake/*.h; fake_internal: fake/internal/; fake_sources:
# fake/*.cc) include driver_interface and their own lower layers only, and nothing of graphcap
# includes the fake. A file or include in no layer fails too: a new folder is given its place here.
# Fails listing every wrong-way include.
cmake_minimum_required(VERSION 3.25)
if(NOT ROOT)
  message(FATAL_ERROR "check_layers.cmake: -DROOT=<repository> is required")
endif()

set(layers driver_interface vocabulary driver memory capture detail public public_internal
           public_sources fake_public fake_internal fake_sources)
# Which layers each may include (its own among them).
set(graphcap_stack driver_interface vocabulary driver memory capture detail public public_internal
                   public_sources)
set(fake_stack driver_interface fake_public fake_internal fake_sources)

# Include path (graphcap/...) -> layer: the first pattern that matches.
set(patterns
    "^graphcap/driver/(cuda_types\\.h|cuda_types_check\\.cc|launch_dims\\.h|entry_points\\.(h|def)|entry_traits\\.h|error_names\\.(h|cc)|executable_memory\\.h|driver_api\\.h|driver_hooks\\.h|forwarding_driver\\.(h|cc))$=driver_interface"
    "^graphcap/(error|result|try|log|device_options|device_limits)\\.(h|cc)$=vocabulary"
    "^graphcap/version\\.h(\\.in)?$=vocabulary"
    "^graphcap/driver/[^/]+$=driver"
    "^graphcap/memory/[^/]+$=memory"
    "^graphcap/capture/[^/]+$=capture"
    "^graphcap/detail/[^/]+$=detail"
    "^graphcap/(handle_access|arg_access|module_image)\\.h$=public_internal"
    "^graphcap/kernel\\.h$=fake_public"
    "^graphcap/[^/]+\\.h$=public"
    "^graphcap/[^/]+\\.cc$=public_sources"
    "^graphcap/fake/[^/]+\\.h$=fake_public"
    "^graphcap/fake/internal/[^/]+$=fake_internal"
    "^graphcap/fake/[^/]+\\.cc$=fake_sources")

function(layer_of path out)
  foreach(entry IN LISTS patterns)
    string(REGEX REPLACE "=[a-z_]+$" "" pattern "${entry}")
    string(REGEX REPLACE "^.*=" "" layer "${entry}")
    if(path MATCHES "${pattern}")
      set(${out} "${layer}" PARENT_SCOPE)
      return()
    endif()
  endforeach()
  set(${out} "" PARENT_SCOPE)
endfunction()

# The layers `layer` may include: those of its stack up to and including itself.
function(allowed_for layer out)
  if(layer MATCHES "^fake_")
    set(stack ${fake_stack})
  else()
    set(stack ${graphcap_stack})
  endif()
  set(allowed "")
  foreach(candidate IN LISTS stack)
    list(APPEND allowed ${candidate})
    if(candidate STREQUAL layer)
      break()
    endif()
  endforeach()
  set(${out} ${allowed} PARENT_SCOPE)
endfunction()

set(problems "")
set(checked 0)
foreach(base src fake_driver)
  file(GLOB_RECURSE files RELATIVE "${ROOT}/${base}" "${ROOT}/${base}/graphcap/*")
  foreach(file IN LISTS files)
    if(NOT file MATCHES "\\.(h|cc|cu|def|in)$")
      continue()
    endif()
    layer_of("${file}" layer)
    if(layer STREQUAL "")
      list(APPEND problems "${base}/${file}: in no layer (give its folder a place in check_layers.cmake)")
      continue()
    endif()
    allowed_for(${layer} allowed)
    file(STRINGS "${ROOT}/${base}/${file}" includes
         REGEX "^[ \t]*#[ \t]*include[ \t]*[<\"]graphcap/[^>\"]+[>\"]")
    foreach(line IN LISTS includes)
      string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*[<\"](graphcap/[^>\"]+)[>\"].*$" "\\1"
             target "${line}")
      layer_of("${target}" target_layer)
      math(EXPR checked "${checked} + 1")
      if(target_layer STREQUAL "")
        list(APPEND problems "${base}/${file}: includes <${target}>, which is in no layer")
      elseif(NOT target_layer IN_LIST allowed)
        list(APPEND problems
             "${base}/${file} (${layer}) includes <${target}> (${target_layer}): a wrong-way include")
      endif()
    endforeach()
  endforeach()
endforeach()

if(problems)
  list(LENGTH problems count)
  list(JOIN problems "\n  " text)
  list(JOIN graphcap_stack " < " graphcap_order)
  list(JOIN fake_stack " < " fake_order)
  message(FATAL_ERROR "${count} include(s) against the layer order (${graphcap_order}; the fake "
                      "beside them: ${fake_order}):\n  ${text}")
endif()
message(STATUS "check_layers: ${checked} includes, every one of its own layer or a lower one")

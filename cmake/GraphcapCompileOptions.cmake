# Warnings and sanitizers shared by every graphcap target (not imposed on projects that embed us).
add_library(graphcap_compile_options INTERFACE)
target_compile_features(graphcap_compile_options INTERFACE cxx_std_20)
target_compile_options(graphcap_compile_options INTERFACE
  $<$<COMPILE_LANG_AND_ID:CXX,GNU,Clang>:-Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor>
  $<$<AND:$<BOOL:${GRAPHCAP_WERROR}>,$<COMPILE_LANG_AND_ID:CXX,GNU,Clang>>:-Werror>)

if(GRAPHCAP_SANITIZE)
  list(JOIN GRAPHCAP_SANITIZE "," graphcap_sanitizers)
  # Global, so GoogleTest's and Benchmark's callers and our code agree on instrumentation.
  add_compile_options(-fsanitize=${graphcap_sanitizers} -fno-omit-frame-pointer
                      -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${graphcap_sanitizers})
endif()

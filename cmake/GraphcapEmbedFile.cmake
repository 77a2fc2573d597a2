# cmake -DINPUT=<file> -DOUTPUT=<file.cc> -DSYMBOL=<c identifier> -P GraphcapEmbedFile.cmake
#
# Writes OUTPUT, a C++ source defining graphcap::embedded::<SYMBOL>(), which returns INPUT's bytes
# (declared in <graphcap/embedded/<SYMBOL>.h>). Run at build time by graphcap_embed_kernels().
cmake_minimum_required(VERSION 3.25)

foreach(required INPUT OUTPUT SYMBOL)
  if(NOT DEFINED ${required})
    message(FATAL_ERROR "GraphcapEmbedFile.cmake: -D${required}=... is required")
  endif()
endforeach()

file(READ "${INPUT}" hex HEX)
string(LENGTH "${hex}" hex_length)
if(hex_length EQUAL 0)
  message(FATAL_ERROR "GraphcapEmbedFile.cmake: ${INPUT} is empty")
endif()
math(EXPR size "${hex_length} / 2")

# "0xab," per byte, then a line break after every 16 (CMake regexes have no {n}: spell it out).
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(REPEAT "0x..," 16 sixteen)
string(REGEX REPLACE "(${sixteen})" "\\1\n    " bytes "${bytes}")
string(STRIP "${bytes}" bytes)

get_filename_component(input_name "${INPUT}" NAME)
file(WRITE "${OUTPUT}.tmp" "\
// Generated from ${input_name} (${size} bytes) by GraphcapEmbedFile.cmake; do not edit.
#include <graphcap/embedded/${SYMBOL}.h>

namespace {

// Aligned for the driver, which reads the image's headers in place.
alignas(64) constexpr unsigned char kImage[${size}] = {
    ${bytes}
};

}  // namespace

namespace graphcap::embedded {

std::span<const std::byte> ${SYMBOL}() noexcept {
  return std::as_bytes(std::span<const unsigned char>(kImage));
}

}  // namespace graphcap::embedded
")
# Replace only when the bytes changed, so an unchanged fatbin recompiles nothing.
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUTPUT}.tmp")

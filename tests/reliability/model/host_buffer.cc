#include "model/host_buffer.h"

#include <algorithm>
#include <cstring>

namespace graphcap::testing::model {

bool HostBuffer::all_known() const {
  return std::memchr(known.data(), 0, known.size()) == nullptr;
}

std::size_t HostBuffer::known_count(std::size_t offset, std::size_t count) const {
  const std::uint8_t* k = known.data() + offset;
  std::size_t n = 0;
  for (std::size_t i = 0; i < count; ++i) n += k[i];
  return n;
}

void HostBuffer::write_words(std::size_t offset, std::span<const std::uint32_t> data) {
  for (std::size_t i = 0; i < data.size(); ++i) {
    bytes[offset + i] = data[i];
    known[offset + i] = 1;
  }
}

void HostBuffer::fill_words(std::uint32_t value, std::size_t count) {
  for (std::size_t i = 0; i < count; ++i) {
    bytes[i] = value;
    known[i] = 1;
  }
}

// Word by word: src may be this buffer (add_one in place).
void HostBuffer::copy_words(const HostBuffer& src, std::uint32_t plus, std::size_t count) {
  for (std::size_t i = 0; i < count; ++i) {
    bytes[i] = src.bytes[i] + plus;
    known[i] = src.known[i] != 0 && !src.unsure ? 1 : 0;
  }
}

void HostBuffer::forget_words() { std::fill(known.begin(), known.end(), std::uint8_t{0}); }

std::optional<std::size_t> HostBuffer::first_mismatch(std::span<const std::uint32_t> got,
                                                      std::size_t offset) const {
  if (offset >= words()) return std::nullopt;
  const std::size_t count = std::min(got.size(), words() - offset);
  const std::uint8_t* k = known.data() + offset;
  const std::uint32_t* expected = bytes.data() + offset;
  for (std::size_t i = 0; i < count; ++i) {
    if (k[i] != 0 && got[i] != expected[i]) return offset + i;
  }
  return std::nullopt;
}

std::optional<std::string> HostBuffer::mismatch(std::span<const std::uint32_t> got,
                                                std::size_t offset, const std::string& name) const {
  const std::optional<std::size_t> at = first_mismatch(got, offset);
  if (!at) return std::nullopt;
  return name + " element " + std::to_string(*at) + " holds " + std::to_string(got[*at - offset]) +
         ", the model says " + std::to_string(bytes[*at]);
}

}  // namespace graphcap::testing::model

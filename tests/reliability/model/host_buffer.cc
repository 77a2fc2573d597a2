#include "model/host_buffer.h"

#include <algorithm>

namespace graphcap::testing::model {

bool HostBuffer::all_known() const {
  return std::all_of(known.begin(), known.end(), [](bool k) { return k; });
}

std::size_t HostBuffer::known_count(std::size_t offset, std::size_t count) const {
  return static_cast<std::size_t>(std::count(known.begin() + static_cast<std::ptrdiff_t>(offset),
                                             known.begin() + static_cast<std::ptrdiff_t>(offset + count),
                                             true));
}

void HostBuffer::write_words(std::size_t offset, std::span<const std::uint32_t> data) {
  for (std::size_t i = 0; i < data.size(); ++i) {
    bytes[offset + i] = data[i];
    known[offset + i] = true;
  }
}

void HostBuffer::fill_words(std::uint32_t value, std::size_t count) {
  for (std::size_t i = 0; i < count; ++i) {
    bytes[i] = value;
    known[i] = true;
  }
}

// Word by word: src may be this buffer (add_one in place).
void HostBuffer::copy_words(const HostBuffer& src, std::uint32_t plus, std::size_t count) {
  for (std::size_t i = 0; i < count; ++i) {
    bytes[i] = src.bytes[i] + plus;
    known[i] = src.known[i] && !src.unsure;
  }
}

void HostBuffer::forget_words() { std::fill(known.begin(), known.end(), false); }

std::optional<std::string> HostBuffer::mismatch(std::span<const std::uint32_t> got,
                                                std::size_t offset, const std::string& name) const {
  for (std::size_t i = 0; i < got.size() && offset + i < words(); ++i) {
    const std::size_t at = offset + i;
    if (known[at] && got[i] != bytes[at]) {
      return name + " element " + std::to_string(at) + " holds " + std::to_string(got[i]) +
             ", the model says " + std::to_string(bytes[at]);
    }
  }
  return std::nullopt;
}

}  // namespace graphcap::testing::model

#include "program.h"

#include <istream>
#include <ostream>
#include <sstream>
#include <cctype>
#include <set>
#include <stdexcept>

#include <graphcap/driver/cuda_types.h>

namespace graphcap::fidelity {

std::string Call::text() const {
  std::string out = "t" + std::to_string(thread) + " " + entry;
  for (const std::string& arg : args) out += " " + arg;
  return out;
}

std::string Observation::text() const {
  if (skipped) return "skip";
  return std::to_string(code) + detail;
}

std::optional<Observation> Observation::parse(const std::string& text) {
  Observation observation;
  if (text == "skip") {
    observation.skipped = true;
    return observation;
  }
  std::size_t end = 0;
  while (end < text.size() && (std::isdigit(static_cast<unsigned char>(text[end])) != 0)) ++end;
  if (end == 0) return std::nullopt;
  observation.code = std::stoi(text.substr(0, end));
  observation.detail = text.substr(end);
  return observation;
}

namespace {

std::vector<std::string> split(const std::string& text) {
  std::vector<std::string> tokens;
  std::istringstream in(text);
  std::string token;
  while (in >> token) tokens.push_back(token);
  return tokens;
}

[[noreturn]] void bad(const std::string& source, std::size_t line, const std::string& why) {
  throw std::runtime_error(source + ":" + std::to_string(line) + ": " + why);
}

}  // namespace

std::vector<Trace> read_traces(std::istream& in, const std::string& source) {
  std::vector<Trace> traces;
  std::string line;
  std::size_t number = 0;
  Trace* open = nullptr;
  while (std::getline(in, line)) {
    ++number;
    if (line.empty() || line[0] == '#') continue;
    if (line.rfind("program ", 0) == 0) {
      if (open != nullptr) bad(source, number, "program inside a program");
      traces.emplace_back();
      open = &traces.back();
      const std::vector<std::string> words = split(line);
      for (std::size_t i = 2; i + 1 < words.size(); i += 2) {
        if (words[i] == "seed") open->seed = std::stoull(words[i + 1]);
        if (words[i] == "driver") open->driver = words[i + 1];
        if (words[i] == "status") open->status = words[i + 1];
        if (words[i] == "differs") open->difference = words[i + 1];
        if (words[i] == "at") open->difference_at = std::stoull(words[i + 1]);
        if (words[i] == "racy") open->racy = std::stoull(words[i + 1]);
        if (words[i] == "unset") open->unset = std::stoull(words[i + 1]);
      }
      if (words.size() > 1) open->index = std::stoull(words[1]);
      continue;
    }
    if (open == nullptr) bad(source, number, "a call outside a program");
    if (line == "end") {
      open = nullptr;
      continue;
    }
    const std::size_t equals = line.find(" = ");
    const std::vector<std::string> words = split(line.substr(0, equals));
    if (words.size() < 2 || words[0].size() < 2 || words[0][0] != 't') {
      bad(source, number, "expected 't<thread> <entry point> <args>'");
    }
    Call call;
    call.thread = std::stoi(words[0].substr(1));
    call.entry = words[1];
    call.args.assign(words.begin() + 2, words.end());
    open->calls.push_back(std::move(call));
    if (equals != std::string::npos) {
      std::optional<Observation> observation = Observation::parse(line.substr(equals + 3));
      if (!observation) bad(source, number, "unreadable observation");
      open->observations.push_back(std::move(*observation));
    }
  }
  if (open != nullptr) bad(source, number, "program without end");
  return traces;
}

void write_trace(std::ostream& out, const Trace& trace) {
  out << "program " << trace.index << " seed " << trace.seed << " driver " << trace.driver;
  if (!trace.status.empty()) out << " status " << trace.status;
  if (!trace.difference.empty()) {
    out << " differs " << trace.difference << " at " << trace.difference_at;
  }
  if (trace.racy != 0) out << " racy " << trace.racy;
  if (trace.unset != 0) out << " unset " << trace.unset;
  out << "\n";
  for (std::size_t i = 0; i < trace.calls.size(); ++i) {
    out << trace.calls[i].text();
    if (i < trace.observations.size()) out << " = " << trace.observations[i].text();
    out << "\n";
  }
  out << "end\n";
}

bool timing_dependent(const std::string& entry) {
  return entry == "cuStreamQuery" || entry == "cuEventQuery" || entry == "cuEventElapsedTime";
}

// A capture's number in a status ("s2:A3/1") says which capture it is in order of first sight;
// the H200 handed a capture into an existing graph the id of the capture that made the graph
// (a generated program of 2026-12-03), so numbers are not compared: "s2:A/1".
std::string without_capture_numbers(const std::string& detail) {
  std::string out;
  for (std::size_t i = 0; i < detail.size(); ++i) {
    out += detail[i];
    if (detail[i] == ':' && i + 1 < detail.size() && detail[i + 1] == 'A') {
      out += 'A';
      ++i;
      while (i + 1 < detail.size() && std::isdigit(static_cast<unsigned char>(detail[i + 1]))) ++i;
    }
  }
  return out;
}

namespace {

// The buffer a part shows ("b2" of " ; b2=7x64", " ; b2~=7x64" and " ; b2?=7x64"), "" for other
// parts.
std::string buffer_of(const std::string& part) {
  const std::size_t equals = part.find('=');
  if (part.rfind(" ; ", 0) != 0 || equals == std::string::npos || part.size() < 5) return "";
  const char kind = part[3];
  if (kind != 'b' && kind != 'h' && kind != 'p') return "";
  std::size_t end = 4;
  while (end < part.size() && std::isdigit(static_cast<unsigned char>(part[end])) != 0) ++end;
  if (end == 4 || (part[end] != '=' && part.compare(end, 2, "~=") != 0 &&
                   part.compare(end, 2, "?=") != 0)) {
    return "";
  }
  return part.substr(3, end - 3);
}

// The detail without the parts of buffers either side shows as racy or unset; `racy_parts` and
// `unset_parts` get them (a buffer one side shows racy is racy).
std::string without_unknown(const std::vector<std::string>& mine,
                            const std::set<std::string>& racy, const std::set<std::string>& unset,
                            std::string* racy_parts, std::string* unset_parts) {
  std::string out;
  for (const std::string& part : mine) {
    const std::string buffer = buffer_of(part);
    if (racy.count(buffer) != 0) {
      *racy_parts += part;
    } else if (unset.count(buffer) != 0) {
      *unset_parts += part;
    } else {
      out += part;
    }
  }
  return out;
}

struct Split {
  std::string known_a, known_b, racy_a, racy_b, unset_a, unset_b;
};

Split split_racy(const Observation& a, const Observation& b) {
  const std::vector<std::string> pa = detail_parts(a.detail), pb = detail_parts(b.detail);
  std::set<std::string> racy, unset;
  for (const auto* side : {&pa, &pb}) {
    for (const std::string& part : *side) {
      if (buffer_of(part).empty()) continue;
      if (part.find("~=") != std::string::npos) racy.insert(buffer_of(part));
      if (part.find("?=") != std::string::npos) unset.insert(buffer_of(part));
    }
  }
  Split split;
  split.known_a = without_unknown(pa, racy, unset, &split.racy_a, &split.unset_a);
  split.known_b = without_unknown(pb, racy, unset, &split.racy_b, &split.unset_b);
  return split;
}

}  // namespace

bool racy_bytes_differ(const Observation& a, const Observation& b) {
  if (a.detail == b.detail) return false;
  const Split split = split_racy(a, b);
  return split.racy_a != split.racy_b;
}

bool unset_bytes_differ(const Observation& a, const Observation& b) {
  if (a.detail == b.detail) return false;
  const Split split = split_racy(a, b);
  return split.unset_a != split.unset_b;
}

bool same_observation(const std::string& entry, const Observation& a, const Observation& b) {
  if (a.skipped != b.skipped) return false;
  if (a.detail != b.detail) {
    const Split split = split_racy(a, b);
    if (split.known_a != split.known_b &&
        without_capture_numbers(split.known_a) != without_capture_numbers(split.known_b)) {
      return false;
    }
  }
  if (a.code == b.code) return true;
  auto settled = [](int code) { return code == CUDA_SUCCESS || code == CUDA_ERROR_NOT_READY; };
  return timing_dependent(entry) && settled(a.code) && settled(b.code);
}

std::vector<std::string> detail_parts(const std::string& detail) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start < detail.size()) {
    std::size_t next = detail.find(" ; ", start + 1);
    if (next == std::string::npos) next = detail.size();
    out.push_back(detail.substr(start, next - start));
    start = next;
  }
  return out;
}

}  // namespace graphcap::fidelity

// Number and column formatting of the text output. (Byte sizes: the
// library's pase::bytes_text in core/src/util/text.hpp.)
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "pase/plan.hpp"

namespace pase_cli {

// `value` through snprintf with `pattern` ("%.3e"); at most 63 characters.
std::string format(const char* pattern, double value);

// The shortest text that reads back as the same double.
std::string exact(double value);

// "4,009": thousands separated by commas.
std::string grouped(uint64_t n);
// A count that may exceed 64 bits (predicted sizes of absurd orders): from
// 1e15 on, three significant digits ("8.65e+20").
std::string grouped(double n);

// "253 us", "9.71 ms", "1.5 s": four significant digits.
std::string seconds_text(double s);
// "65.6 GiB": bytes in GiB with one decimal, as the layout tables print them.
std::string gib_text(double bytes);

// "56.2%" of `whole`; "-" when whole is not positive.
std::string percent(double part, double whole);

// `text` padded with spaces to `width` (never cut).
std::string pad_right(std::string text, size_t width);
std::string pad_left(std::string text, size_t width);

// "8 devices (10 TFLOP/s, 16 GB/s links)"; with nodes (core/docs/cluster.md)
// "64 devices as 8 nodes x 8 (989 TFLOP/s, 450 GB/s inside nodes, 50 GB/s
// between)", "12 devices as 2 nodes of up to 8 (...)", "4 devices in one
// node (...)".
std::string cluster_text(const pase::Cluster& cluster);

// The speeds of cluster_text() without the device count: "10 TFLOP/s, 16
// GB/s links" or "989 TFLOP/s, nodes of 8, 450 GB/s inside nodes, 50 GB/s
// between" (a sweep's header, where the device count varies).
std::string machine_text(const pase::Cluster& cluster);

// What the memory model counts (core/docs/cluster.md, "Memory per device"):
// "2+2+12 bytes per parameter, 2 per activation, ZeRO 0".
std::string training_text(const pase::Training& training);

// "full on decoder blocks 0-11, selective on the others", "selective", "none".
std::string recompute_text(const pase::Training& training);

// Columns are padded; line ends are not: drops spaces before each newline.
std::string trim_line_ends(const std::string& text);

}  // namespace pase_cli

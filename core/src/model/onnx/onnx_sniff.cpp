// Content detection of import.hpp: what a file is, from its first bytes, and
// the error for one that none of the planner's readers takes. Every entry
// point tells files apart here (the CLI's --graph and import, the importer's
// read_model(), and through import_model_json() the module and the page), so
// a PNG renamed model.onnx gets the same message everywhere.
//
// Nothing here throws: the threaded WebAssembly module (built with clang 14
// and -pthread) does not match a typed catch (only catch (...) runs), so a
// refusal that went through an exception would reach the page as "internal
// error". The varints are decoded by hand rather than with protozero, whose
// decoder throws at the end of the buffer.
#include <cstdint>
#include <string>
#include <string_view>

#include "pase/import.hpp"

namespace pase {
namespace {

// looks_like_onnx() reads this much: enough for a ModelProto's first fields.
constexpr size_t kOnnxPrefixBytes = 64;

bool starts_with(std::string_view text, std::string_view start) {
  return text.substr(0, start.size()) == start;
}

enum class VarintRead { kOk, kCut, kTooLong };

// A protobuf varint at `p` (at most 10 bytes), advancing `p`.
VarintRead read_varint(const char*& p, const char* end, uint64_t& value) {
  value = 0;
  for (unsigned shift = 0; shift < 70; shift += 7) {
    if (p == end) return VarintRead::kCut;
    const auto byte = static_cast<unsigned char>(*p++);
    if (shift < 64) value |= uint64_t{byte & 0x7FU} << shift;
    if ((byte & 0x80U) == 0) return VarintRead::kOk;
  }
  return VarintRead::kTooLong;
}

// The first byte after a UTF-8 byte order mark and JSON's white space, or
// npos.
size_t first_content_byte(std::string_view prefix) {
  const size_t start = starts_with(prefix, "\xEF\xBB\xBF") ? 3 : 0;
  return prefix.find_first_not_of(" \t\r\n", start);
}

// A JSON text starts with a value: an object or an array (a document or a
// config), or a string, a number or a literal (which the readers then refuse
// as "not an object"). '"' would also decode as a protobuf field (field 4),
// but exporters start a model with ir_version (0x08).
bool starts_like_json(std::string_view prefix) {
  const size_t first = first_content_byte(prefix);
  if (first == std::string_view::npos) return false;
  const char c = prefix[first];
  if (c == '{' || c == '[' || c == '"' || c == '-' || (c >= '0' && c <= '9')) return true;
  const std::string_view rest = prefix.substr(first);
  return starts_with(rest, "true") || starts_with(rest, "false") || starts_with(rest, "null");
}

// A control byte other than JSON's white space: text has none (a PNG has
// \x1a, most binary formats a NUL).
bool has_control_byte(std::string_view prefix) {
  for (char ch : prefix.substr(0, kOnnxPrefixBytes)) {
    const auto c = static_cast<unsigned char>(ch);
    if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7F) return true;
  }
  return false;
}

uint64_t little_endian_u64(std::string_view bytes) {
  uint64_t value = 0;
  for (size_t i = 8; i-- > 0;) value = (value << 8U) | static_cast<unsigned char>(bytes[i]);
  return value;
}

// A ZIP archive written by torch.save: its first record is "data.pkl" under
// the archive's folder ("archive/data.pkl"; older versions name the folder
// after the file). The local file header holds the name's length at byte 26
// and the name from byte 30.
bool is_torch_zip(std::string_view prefix) {
  if (prefix.size() < 30) return false;
  const size_t length = static_cast<unsigned char>(prefix[26]) |
                        (static_cast<size_t>(static_cast<unsigned char>(prefix[27])) << 8U);
  const std::string_view name = prefix.substr(30, length);
  if (name.size() != length) return false;  // beyond the prefix: not told
  constexpr std::string_view kRecord = "data.pkl";
  return name == kRecord || (name.size() > kRecord.size() &&
                             name.substr(name.size() - kRecord.size() - 1) == "/data.pkl");
}

// The start of a text file, for its message: printable ASCII up to the end
// of the first line, at most 40 characters (never a byte that would make
// the message invalid UTF-8).
std::string text_start(std::string_view prefix) {
  size_t i = first_content_byte(prefix);
  std::string out;
  for (; i < prefix.size(); ++i) {
    const auto c = static_cast<unsigned char>(prefix[i]);
    if (c < 0x20 || c > 0x7E) break;
    if (out.size() == 40) return out + "...";
    out += static_cast<char>(c);
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

}  // namespace

bool looks_like_onnx(std::string_view prefix) {
  prefix = prefix.substr(0, kOnnxPrefixBytes);
  const size_t first = prefix.find_first_not_of(" \t\r\n");
  // A JSON document starts with an object, an array or a string (the byte
  // '"' would also decode as a protobuf field).
  if (first == std::string_view::npos || prefix[first] == '{' || prefix[first] == '[' ||
      prefix[first] == '"')
    return false;
  // Every field in the prefix must decode (the last may be cut short), the
  // first with a ModelProto-like field number. Text fails quickly: most
  // letters make the wire types 3, 4, 6 and 7, which do not exist.
  const char* p = prefix.data();
  const char* const end = p + prefix.size();
  bool first_field = true;
  while (p != end) {
    uint64_t key = 0;
    const VarintRead read = read_varint(p, end, key);
    if (read == VarintRead::kCut) return !first_field;  // a field cut by the end of the prefix
    if (read == VarintRead::kTooLong) return false;
    const uint64_t tag = key >> 3U;
    if (tag == 0 || tag >= (uint64_t{1} << 29) || (first_field && tag > 20)) return false;
    first_field = false;
    switch (key & 7U) {
      case 0: {
        uint64_t value = 0;
        const VarintRead skipped = read_varint(p, end, value);
        if (skipped == VarintRead::kCut) return true;
        if (skipped == VarintRead::kTooLong) return false;
        break;
      }
      case 1:
      case 5: {
        const ptrdiff_t bytes = (key & 7U) == 1 ? 8 : 4;
        if (end - p < bytes) return true;
        p += bytes;
        break;
      }
      case 2: {
        uint64_t length = 0;
        const VarintRead read_length = read_varint(p, end, length);
        if (read_length == VarintRead::kCut) return true;
        if (read_length == VarintRead::kTooLong) return false;
        if (length >= static_cast<uint64_t>(end - p)) return true;
        p += length;
        break;
      }
      default:
        return false;
    }
  }
  return true;
}

FileContent sniff_file(std::string_view prefix) {
  if (prefix.empty()) return FileContent::kEmpty;
  // Formats with a signature first: none of them starts like a ModelProto.
  if (starts_with(prefix, "\x89PNG\r\n\x1a\n")) return FileContent::kPng;
  if (starts_with(prefix, "\xFF\xD8\xFF")) return FileContent::kJpeg;
  if (starts_with(prefix, "GIF87a") || starts_with(prefix, "GIF89a")) return FileContent::kGif;
  if (starts_with(prefix, "%PDF-")) return FileContent::kPdf;
  if (starts_with(prefix, "\x89HDF\r\n\x1a\n")) return FileContent::kHdf5;
  if (starts_with(prefix, "\x1F\x8B")) return FileContent::kGzip;
  if (starts_with(prefix, "PK\x03\x04")) {
    return is_torch_zip(prefix) ? FileContent::kTorchZip : FileContent::kZip;
  }
  if (starts_with(prefix, "PK\x05\x06")) return FileContent::kZip;  // an empty archive
  // A pickle of protocol 2 to 5 opens with PROTO n.
  if (prefix.size() >= 2 && prefix[0] == '\x80' && prefix[1] >= 2 && prefix[1] <= 5) {
    return FileContent::kPickle;
  }
  // safetensors: the header's length (8 bytes, little-endian, at most
  // 100 MB), then the header, a JSON object.
  if (prefix.size() >= 9 && prefix[8] == '{') {
    const uint64_t header = little_endian_u64(prefix);
    if (header >= 2 && header <= 100'000'000) return FileContent::kSafetensors;
  }
  if (starts_like_json(prefix)) return FileContent::kJson;
  if (looks_like_onnx(prefix)) return FileContent::kOnnx;
  if (first_content_byte(prefix) == std::string_view::npos) return FileContent::kJson;  // blank
  return has_control_byte(prefix) ? FileContent::kBinary : FileContent::kText;
}

Error not_a_model_error(std::string_view prefix) {
  // What the planner reads, for every file it does not.
  constexpr std::string_view kReads =
      "; give an ONNX model (export it with torch.onnx.export), a Hugging Face config.json or a "
      "pase-graph/1 document";
  // A file of weights has the model's numbers but not its graph.
  constexpr std::string_view kWeights =
      ", which holds the weights but not the graph; export the model with torch.onnx.export "
      "and give the .onnx file, or give the model's Hugging Face config.json";
  std::string what;
  std::string_view then = kReads;
  switch (sniff_file(prefix)) {
    case FileContent::kEmpty:
      return Error{"not an ONNX model: the file is empty", ""};
    case FileContent::kJson:
      return Error{"not an ONNX model: the file starts like a JSON document", ""};
    case FileContent::kOnnx:
      return Error{"not an ONNX model", ""};  // not reached: the caller read it as one
    case FileContent::kPng:
      what = "a PNG image";
      break;
    case FileContent::kJpeg:
      what = "a JPEG image";
      break;
    case FileContent::kGif:
      what = "a GIF image";
      break;
    case FileContent::kPdf:
      what = "a PDF document";
      break;
    case FileContent::kHdf5:
      what = "an HDF5 file (as Keras saves a model)";
      break;
    case FileContent::kGzip:
      what = "a gzip archive";
      break;
    case FileContent::kZip:
      what = "a ZIP archive";
      break;
    case FileContent::kTorchZip:
      what = "a PyTorch checkpoint (torch.save)";
      then = kWeights;
      break;
    case FileContent::kPickle:
      what = "a Python pickle (torch.save's older format)";
      then = kWeights;
      break;
    case FileContent::kSafetensors:
      what = "a safetensors file";
      then = kWeights;
      break;
    case FileContent::kText: {
      const std::string start = text_start(prefix);
      what = start.empty() ? "plain text" : "plain text ('" + start + "')";
      break;
    }
    case FileContent::kBinary:
      what = "binary data of no known kind (it does not start with a protobuf field)";
      break;
  }
  return Error{"not an ONNX model: the file is " + what + std::string(then), ""};
}

}  // namespace pase

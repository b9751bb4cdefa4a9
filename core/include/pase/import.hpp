// Importing a model from a file: ONNX (`torch.onnx.export`) to a pase-graph/1
// GraphSpec (core/docs/import.md).
//
// USAGE
//   FileSource file;                                   // or MemorySource(bytes)
//   if (auto e = file.open("resnet50.onnx")) ...       // Error naming the file
//   ImportOptions options;
//   options.dims = {{"batch", 8}, {"sequence", 2048}}; // values of dim_params
//   Result<GraphSpec> spec = import_onnx(file, options);
//   spec->parameters;                                  // the weights' element count
//
// The reader takes only the structure of the file (nodes, attributes, graph
// inputs and outputs, initializer names, types and dims): the weights' bytes
// are skipped, never read, so a file of any size imports with memory that
// depends on its node count, not its size.
//
// ERRORS
//   Error{message, where}: `where` names the node ("nodes[12] (Conv
//   '/layer1/conv1/Conv')"), the graph input ("inputs.x"), the option
//   ("dims.batch": missing, not positive, or no dimension of the model;
//   "seq", which only a Hugging Face config takes),
//   "opset" (too old or too new), or is empty for the file as a whole (not
//   ONNX, truncated, unreadable).
//   Nothing throws.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "pase/graph.hpp"
#include "pase/result.hpp"

namespace pase {

// Random-access bytes of a model file. The importer reads small windows of it
// (headers, nodes) and skips the rest by offset.
class ByteSource {
 public:
  virtual ~ByteSource() = default;
  virtual uint64_t size() const = 0;
  // Appends bytes [offset, offset + length) to `out` (which the caller has
  // cleared). False when they cannot be read (I/O error, beyond the end).
  virtual bool read(uint64_t offset, size_t length, std::string& out) = 0;
};

// Bytes already in memory; `bytes` must outlive the source.
class MemorySource final : public ByteSource {
 public:
  explicit MemorySource(std::string_view bytes) : bytes_(bytes) {}
  uint64_t size() const override { return bytes_.size(); }
  bool read(uint64_t offset, size_t length, std::string& out) override;

 private:
  std::string_view bytes_;
};

// A file on disk, read by offset (never loaded whole).
class FileSource final : public ByteSource {
 public:
  FileSource() = default;
  FileSource(const FileSource&) = delete;
  FileSource& operator=(const FileSource&) = delete;
  ~FileSource() override;
  // Error naming `path` when it cannot be opened.
  std::optional<Error> open(const std::string& path);
  uint64_t size() const override { return size_; }
  bool read(uint64_t offset, size_t length, std::string& out) override;

 private:
  std::FILE* file_ = nullptr;
  uint64_t size_ = 0;
};

struct ImportOptions {
  // Values for the dynamic dimensions (dim_param) of the graph inputs, by name.
  std::vector<std::pair<std::string, int64_t>> dims;
  // When > 0, the leading dimension of the first graph input (the batch),
  // whether dynamic or fixed in the file.
  int64_t batch = 0;
  // When > 0, the sequence length: of a Hugging Face config's graph (llm.hpp);
  // an ONNX model takes its sequence length through `dims` and refuses this.
  int64_t seq = 0;
  // The graph's name; empty: the ONNX graph's name.
  std::string name;
  // A Hugging Face config's vocabulary padded to a multiple of this
  // (llm.hpp, kLlmVocabMultiple); 0: that default, 1: the exact vocabulary.
  // An ONNX model keeps its own sizes and ignores it.
  int64_t vocab_multiple = 0;
};

// A dynamic dimension the file leaves open: `name` (the dim_param) and the
// first graph input that has it.
struct DynamicDim {
  std::string name;
  std::string input;
};

// True when `prefix` (the first bytes of a file; 64 are read) starts like an
// ONNX ModelProto rather than a JSON document.
bool looks_like_onnx(std::string_view prefix);

// CONTENT DETECTION
//   What a file is, told by its first bytes whatever its name. The CLI, the
//   importer and import_model_json() (so the module and the page) all tell
//   files apart with sniff_file() and refuse a file that is no model with
//   not_a_model_error(), so each says the same. Nothing throws.
enum class FileContent {
  kEmpty,
  kJson,         // a JSON text: '{', '[', a string, a number or a literal first
  kOnnx,         // looks_like_onnx()
  kPng,          // \x89PNG
  kJpeg,         // \xFF\xD8\xFF
  kGif,          // GIF87a, GIF89a
  kPdf,          // %PDF-
  kHdf5,         // \x89HDF (a Keras .h5 model)
  kGzip,         // \x1F\x8B
  kZip,          // PK\x03\x04 (or an empty archive) that is not a checkpoint
  kTorchZip,     // torch.save's ZIP archive: its first record is .../data.pkl
  kPickle,       // \x80 and a protocol 2 to 5: torch.save's older format
  kSafetensors,  // an 8-byte little-endian header length (<= 100 MB), then '{'
  kText,         // none of the above, no control byte: plain text
  kBinary,       // none of the above
};

// The prefix sniff_file() needs: a ZIP's first record name, the start of a
// line of text.
inline constexpr size_t kSniffBytes = 512;

// What `prefix` (the first kSniffBytes of a file, or all of a shorter one)
// is. Signatures first, then JSON, then ONNX, then text or binary.
FileContent sniff_file(std::string_view prefix);

// The error (`where` empty) for a file that is not an ONNX model, from its
// first bytes: what it looks like and what the planner reads instead,
// "not an ONNX model: the file is a PNG image; give an ONNX model (export it
// with torch.onnx.export), a Hugging Face config.json or a pase-graph/1
// document". A checkpoint or a safetensors file is told that it holds the
// weights but not the graph; text is quoted (its first line, printable
// ASCII only).
Error not_a_model_error(std::string_view prefix);

// The dynamic dimensions of the model's graph inputs, in order of first use.
Result<std::vector<DynamicDim>> onnx_dynamic_dims(ByteSource& source);

// Reads an ONNX model and translates it to a pase-graph/1 GraphSpec whose
// `parameters` is set (core/docs/import.md, "Parameters"). A dynamic
// dimension without a value, and a value for a name that is none of the
// model's dynamic dimensions, are errors at "dims.<name>". Linear in the
// model's nodes; reads only the structure (see above).
Result<GraphSpec> import_onnx(ByteSource& source, const ImportOptions& options);

}  // namespace pase

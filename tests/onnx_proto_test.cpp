// The ONNX reader (onnx/onnx_proto.hpp): the structure of a ModelProto built
// here with protozero's writer, small tensor values decoded and large ones
// skipped without being read, and every kind of bad input (empty, JSON, text,
// random bytes, truncations, hostile lengths) reported as an Error.
#include "model/onnx/onnx_proto.hpp"

#include <doctest/doctest.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <protozero/pbf_writer.hpp>
#include <protozero/varint.hpp>
#include <random>
#include <string>
#include <vector>

#include "onnx_builder.hpp"
#include "pase/import.hpp"
#include "test_util.hpp"

using namespace pase;
using namespace pase::onnx;
using pase::testing::contains;
using namespace pase::onnx::builder;

namespace {

// A source that counts the bytes asked of it: the weights must not be read.
class CountingSource final : public ByteSource {
 public:
  explicit CountingSource(ByteSource& inner) : inner_(inner) {}
  uint64_t size() const override { return inner_.size(); }
  bool read(uint64_t offset, size_t length, std::string& out) override {
    bytes_read += length;
    return inner_.read(offset, length, out);
  }
  uint64_t bytes_read = 0;

 private:
  ByteSource& inner_;
};

Result<Model> read_bytes(const std::string& bytes) {
  MemorySource source(bytes);
  return read_model(source);
}

Error read_error(const std::string& bytes) {
  Result<Model> model = read_bytes(bytes);
  REQUIRE_FALSE(model.ok());
  return model.error();
}

const Tensor& initializer(const Model& model, const std::string& name) {
  for (const Tensor& t : model.initializers) {
    if (t.name == name) return t;
  }
  FAIL("no initializer " << name);
  return model.initializers.front();
}

}  // namespace

// ---- Bad input -----------------------------------------------------------------------------

TEST_CASE("onnx reader: empty, JSON, text and random bytes are not ONNX models") {
  CHECK(contains(read_error("").message, "not an ONNX model"));
  CHECK(contains(read_error("").message, "empty"));
  CHECK(contains(read_error("{\"a\":1}").message, "JSON"));
  CHECK(contains(read_error("  \n[1, 2]").message, "JSON"));
  CHECK(contains(read_error("hello, world\n").message, "not an ONNX model"));
  CHECK(read_error("\x08\x08").message == "not an ONNX model: the file has no graph");
  std::mt19937 random(42);
  for (int trial = 0; trial < 200; ++trial) {
    std::string bytes(1 + random() % 512, '\0');
    for (char& c : bytes) c = static_cast<char>(random());
    CAPTURE(trial);
    CHECK_FALSE(read_bytes(bytes).ok());  // no exception, no sanitizer report
  }
}

TEST_CASE("onnx reader: a model without a graph") {
  std::string bytes;
  protozero::pbf_writer m(bytes);
  m.add_int64(1, 8);
  m.add_string(2, "pytorch");
  m.add_message(8, opset("", 17));
  const Error e = read_error(bytes);
  CHECK(e.message == "not an ONNX model: the file has no graph");
  CHECK(e.where.empty());
}

TEST_CASE("onnx reader: every truncation of a model fails cleanly") {
  const ModelBytes model = sample_model(false);
  const std::string bytes = model.bytes();
  const size_t graph_begin = model.head.size();
  const size_t graph_end = graph_begin + model.graph.size();
  for (size_t n = 0; n < bytes.size(); ++n) {
    CAPTURE(n);
    const Result<Model> result = read_bytes(bytes.substr(0, n));
    // A cut between two fields after the graph leaves a valid model.
    if (n >= graph_end) continue;
    REQUIRE_FALSE(result.ok());
    if (n > graph_begin && n < graph_end) CHECK(contains(result.error().message, "truncated"));
  }
  CHECK(read_bytes(bytes).ok());
  const Error cut = read_error(bytes.substr(0, graph_begin + 10));
  CHECK(contains(cut.message, "the file is truncated: model.graph at byte " +
                                  std::to_string(graph_begin) + " needs"));
  CHECK(contains(cut.message, "but the file ends at byte " + std::to_string(graph_begin + 10)));
}

TEST_CASE("onnx reader: flipped bytes never crash the reader") {
  const std::string bytes = sample_model(false).bytes();
  std::mt19937 random(7);
  int failures = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    std::string mutated = bytes;
    for (int flips = 1 + static_cast<int>(random() % 4); flips > 0; --flips) {
      mutated[random() % mutated.size()] = static_cast<char>(random());
    }
    failures += read_bytes(mutated).ok() ? 0 : 1;  // either way: no exception, no UB
  }
  CHECK(failures > 0);
}

TEST_CASE("onnx reader: hostile lengths and counts are errors, not allocations") {
  SUBCASE("a graph longer than the file") {
    std::string bytes = "\x08\x08\x3a";  // ir_version 8, then field 7 length-delimited
    protozero::add_varint_to_buffer(&bytes, uint64_t{1} << 60);
    bytes += "\x0a\x00";
    CHECK(contains(read_error(bytes).message, "the file is truncated: model.graph at byte 2"));
  }
  SUBCASE("a node longer than its graph") {
    std::string graph = "\x0a";  // GraphProto.node, length-delimited
    protozero::add_varint_to_buffer(&graph, 1000);
    graph += std::string(10, '\0');
    std::string bytes = "\x08\x08\x3a";
    protozero::add_varint_to_buffer(&bytes, graph.size());
    bytes += graph;
    protozero::pbf_writer(bytes).add_string(6, std::string(2000, 'x'));  // the file goes on
    const Error e = read_error(bytes);
    CHECK(contains(e.message, "not an ONNX model: graph.node at byte 4 needs 1000 bytes"));
    CHECK(contains(e.message, "but its message graph ends at byte 17"));
  }
  SUBCASE("a tensor with more than 64 dims") {
    const std::vector<int64_t> dims(65, 1);
    const Error e =
        read_error(model_with_graph(graph_with_initializer(tensor("t", kFloat, dims, ""))));
    CHECK(contains(e.message, "more than 64 dims"));
  }
  SUBCASE("a negative dimension") {
    const Error e =
        read_error(model_with_graph(graph_with_initializer(tensor("t", kFloat, {2, -3}, ""))));
    CHECK(contains(e.message, "tensor 't' has a negative dimension -3"));
  }
  SUBCASE("values that do not match the dims") {
    const Error e = read_error(model_with_graph(
        graph_with_initializer(tensor("t", kInt64, {3}, little_endian<int64_t>({1, 2})))));
    CHECK(contains(e.message, "graph.initializer at byte"));
    CHECK(contains(e.message, "the values of tensor 't' do not match its 3 elements"));
  }
  SUBCASE("a node with more than 10000 attributes") {
    std::string n;
    protozero::pbf_writer w(n);
    w.add_string(4, "Relu");
    for (int i = 0; i <= 10'000; ++i) w.add_message(5, attribute_int("a", i));
    std::string graph;
    protozero::pbf_writer(graph).add_message(1, n);
    const Error e = read_error(model_with_graph(graph));
    CHECK(contains(e.message, "graph.node at byte "));
    CHECK(contains(e.message, ": a node with more than 10000 attributes"));
  }
  SUBCASE("a shape with more than 64 dims") {
    std::string graph;
    protozero::pbf_writer g(graph);
    g.add_message(11, value_info("x", kFloat, std::vector<std::string>(65, "1")));
    CHECK(contains(read_error(model_with_graph(graph)).message, "more than 64 dims"));
  }
}

// ---- Structure ------------------------------------------------------------------------------

TEST_CASE("onnx reader: the structure of a model") {
  const Result<Model> result = read_bytes(sample_model(true).bytes());
  REQUIRE_MESSAGE(result.ok(), result.error().to_string());
  const Model& m = *result;
  CHECK(m.ir_version == 8);
  CHECK(m.producer_name == "pase-test");
  CHECK(m.producer_version == "1.0");
  CHECK(m.graph_name == "sample");
  REQUIRE(m.opsets.size() == 2);
  CHECK(m.opsets[0].domain == "com.microsoft");
  CHECK(m.opset == 17);

  REQUIRE(m.nodes.size() == 4);
  const Node& conv = m.nodes[0];
  CHECK(conv.op_type == "Conv");
  CHECK(conv.name == "conv1");
  CHECK(conv.inputs == std::vector<std::string>{"x", "w", ""});
  CHECK(conv.outputs == std::vector<std::string>{"y"});
  REQUIRE(conv.attribute("kernel_shape"));
  CHECK(conv.attribute("kernel_shape")->type == kAttrInts);
  CHECK(conv.attribute("kernel_shape")->ints == std::vector<int64_t>{3, 3});
  CHECK(conv.attribute("pads")->ints == std::vector<int64_t>{1, 1, 1, 1});
  CHECK(conv.attribute("group")->i == 1);
  CHECK(conv.attribute("auto_pad")->s == "NOTSET");
  CHECK(conv.attribute("dilations") == nullptr);
  CHECK(m.nodes[1].attribute("alpha")->f == 0.5);
  CHECK(m.nodes[1].attribute("scales")->floats == std::vector<double>{1, 2});

  const Attribute* value = m.nodes[2].attribute("value");
  REQUIRE(value);
  CHECK(value->type == kAttrTensor);
  REQUIRE(value->t);
  CHECK(value->t->dims == std::vector<int64_t>{2});
  CHECK(value->t->has_values);
  CHECK(value->t->ints == std::vector<int64_t>{1, -1});

  REQUIRE(m.inputs.size() == 1);
  const ValueInfo& x = m.inputs[0];
  CHECK(x.name == "x");
  CHECK(x.elem_type == kFloat);
  CHECK(x.has_shape);
  REQUIRE(x.dims.size() == 4);
  CHECK(x.dims[0].param == "batch");
  CHECK(x.dims[0].value == -1);
  CHECK(x.dims[1].value == 3);
  CHECK(x.dims[3].value == -1);
  CHECK(x.dims[3].param.empty());
  REQUIRE(m.outputs.size() == 1);
  CHECK(m.outputs[0].dims.size() == 2);
  REQUIRE(m.value_info.size() == 1);
  CHECK(m.value_info[0].has_shape);
  CHECK(m.value_info[0].dims.empty());
}

TEST_CASE("onnx reader: small tensors are decoded, large ones are not read") {
  const std::string bytes = sample_model(true).bytes();
  MemorySource memory(bytes);
  CountingSource source(memory);
  const Result<Model> result = read_model(source);
  REQUIRE_MESSAGE(result.ok(), result.error().to_string());
  const Tensor& steps = initializer(*result, "steps");
  CHECK(steps.data_type == kInt64);
  CHECK(steps.has_values);
  CHECK(steps.ints == std::vector<int64_t>{2, 3, -1});
  const Tensor& w = initializer(*result, "w");
  CHECK(w.data_type == kFloat);
  CHECK(w.dims == std::vector<int64_t>{kBigRows, kBigCols});
  CHECK_FALSE(w.has_values);
  CHECK(w.floats.empty());
  // The 4 MB of weights are skipped: only headers and the structure are read.
  CHECK(bytes.size() > 4'000'000);
  CHECK(source.bytes_read < 2'000);
}

TEST_CASE("onnx reader: the data types of small tensors") {
  auto read_tensor = [](const std::string& tensor_bytes) {
    const Result<Model> m = read_bytes(model_with_graph(graph_with_initializer(tensor_bytes)));
    REQUIRE_MESSAGE(m.ok(), m.error().to_string());
    REQUIRE(m->initializers.size() == 1);
    return m->initializers[0];
  };
  CHECK(read_tensor(tensor("f", kFloat, {2}, little_endian<float>({0.5F, -2}))).floats ==
        std::vector<double>{0.5, -2});
  CHECK(read_tensor(tensor("d", kDouble, {}, little_endian<double>({1e300}))).floats ==
        std::vector<double>{1e300});
  // float16 1.0, -2.0, 2^-24 (subnormal); bfloat16 1.0, -3.0.
  CHECK(read_tensor(tensor("h", kFloat16, {3}, little_endian<uint16_t>({0x3c00, 0xc000, 0x0001})))
            .floats == std::vector<double>{1, -2, 0x1p-24});
  CHECK(
      read_tensor(tensor("b", kBfloat16, {2}, little_endian<uint16_t>({0x3f80, 0xc040}))).floats ==
      std::vector<double>{1, -3});
  CHECK(read_tensor(tensor("i8", kInt8, {2}, little_endian<int8_t>({-5, 7}))).ints ==
        std::vector<int64_t>{-5, 7});
  CHECK(read_tensor(tensor("u8", kUint8, {1}, little_endian<uint8_t>({200}))).ints ==
        std::vector<int64_t>{200});
  CHECK(read_tensor(tensor("bool", kBool, {3}, little_endian<uint8_t>({0, 1, 2}))).ints ==
        std::vector<int64_t>{0, 1, 1});
  CHECK(read_tensor(tensor("i32", kInt32, {1}, little_endian<int32_t>({-70000}))).ints ==
        std::vector<int64_t>{-70000});
  CHECK(read_tensor(tensor("u32", kUint32, {1}, little_endian<uint32_t>({4000000000U}))).ints ==
        std::vector<int64_t>{4000000000LL});

  // The typed fields: int32_data (packed, with float16 bits too), int64_data
  // unpacked, float_data, double_data, uint64_data.
  auto typed = [](int32_t data_type, std::vector<int64_t> dims, auto add) {
    std::string out;
    protozero::pbf_writer w(out);
    w.add_packed_int64(1, dims.begin(), dims.end());
    w.add_int32(2, data_type);
    w.add_string(8, "typed");
    add(w);
    return out;
  };
  const std::vector<int32_t> int32s{1, -2, 3};
  CHECK(read_tensor(typed(kInt32, {3}, [&](protozero::pbf_writer& w) {
          w.add_packed_int32(5, int32s.begin(), int32s.end());
        })).ints == std::vector<int64_t>{1, -2, 3});
  const std::vector<int32_t> halves{0x3c00};
  CHECK(read_tensor(typed(kFloat16, {1}, [&](protozero::pbf_writer& w) {
          w.add_packed_int32(5, halves.begin(), halves.end());
        })).floats == std::vector<double>{1});
  CHECK(read_tensor(typed(kInt64, {2, 1}, [](protozero::pbf_writer& w) {
          w.add_int64(7, -9);
          w.add_int64(7, 9);
        })).ints == std::vector<int64_t>{-9, 9});
  const std::vector<float> floats{0.25F, 4};
  CHECK(read_tensor(typed(kFloat, {2}, [&](protozero::pbf_writer& w) {
          w.add_packed_float(4, floats.begin(), floats.end());
        })).floats == std::vector<double>{0.25, 4});
  CHECK(read_tensor(typed(kDouble, {}, [](protozero::pbf_writer& w) {
          w.add_double(10, 0.1);
        })).floats == std::vector<double>{0.1});
  CHECK(read_tensor(typed(kUint64, {1}, [](protozero::pbf_writer& w) {
          w.add_uint64(11, 5);
        })).ints == std::vector<int64_t>{5});

  // No values to decode: strings, external data, no data at all; an empty tensor.
  CHECK_FALSE(read_tensor(tensor("s", kString, {1}, "")).has_values);
  CHECK_FALSE(read_tensor(typed(kFloat, {1}, [](protozero::pbf_writer& w) {
                w.add_int32(14, 1);  // data_location EXTERNAL
              })).has_values);
  CHECK(read_tensor(typed(kFloat, {1}, [](protozero::pbf_writer& w) {
          w.add_int32(14, 1);
        })).external);
  CHECK_FALSE(read_tensor(tensor("missing", kFloat, {2}, "")).has_values);
  const Tensor empty = read_tensor(tensor("empty", kFloat, {0, 5}, ""));
  CHECK(empty.has_values);
  CHECK(empty.floats.empty());
  // A type that does not go with the field is an error.
  const Error e = read_error(model_with_graph(graph_with_initializer(
      typed(kInt64, {1}, [](protozero::pbf_writer& w) { w.add_float(4, 1); }))));
  CHECK(contains(e.message, "tensor 'typed' of data_type 7 has its values in float_data"));
}

TEST_CASE("onnx reader: large messages are walked field by field") {
  SUBCASE("a Constant node holding a large tensor") {
    const std::vector<float> weights(500'000, 1.5F);
    std::string graph;
    protozero::pbf_writer g(graph);
    g.add_message(
        1,
        node("Constant", "big_const", {}, {"c"},
             {attribute_int("unused", 4),
              attribute_tensor("value", tensor("", kFloat, {500, 1000}, little_endian(weights)))}));
    g.add_message(1, node("Relu", "relu", {"c"}, {"r"}));
    const std::string bytes = model_with_graph(graph);
    MemorySource memory(bytes);
    CountingSource source(memory);
    const Result<Model> m = read_model(source);
    REQUIRE_MESSAGE(m.ok(), m.error().to_string());
    REQUIRE(m->nodes.size() == 2);
    const Node& constant = m->nodes[0];
    CHECK(constant.op_type == "Constant");
    CHECK(constant.name == "big_const");
    CHECK(constant.outputs == std::vector<std::string>{"c"});
    CHECK(constant.attribute("unused")->i == 4);
    REQUIRE(constant.attribute("value"));
    REQUIRE(constant.attribute("value")->t);
    CHECK(constant.attribute("value")->t->dims == std::vector<int64_t>{500, 1000});
    CHECK_FALSE(constant.attribute("value")->t->has_values);
    CHECK(m->nodes[1].op_type == "Relu");
    CHECK(source.bytes_read < 1'000);
  }
  SUBCASE("a small tensor in a large message") {
    // A long doc_string makes the initializer large; its values still count.
    std::string t = tensor("steps", kInt64, {2}, little_endian<int64_t>({4, 5}));
    protozero::pbf_writer w(t);
    w.add_string(12, std::string(200'000, 'x'));
    const Result<Model> m = read_bytes(model_with_graph(graph_with_initializer(t)));
    REQUIRE_MESSAGE(m.ok(), m.error().to_string());
    CHECK(m->initializers[0].ints == std::vector<int64_t>{4, 5});
  }
}

// ---- Content detection and sources --------------------------------------------------------

TEST_CASE("onnx reader: looks_like_onnx tells ModelProto from JSON and text") {
  const std::string model = sample_model(false).bytes();
  CHECK(looks_like_onnx(model));
  CHECK(looks_like_onnx(model.substr(0, 16)));
  CHECK(looks_like_onnx(model.substr(0, 1)));  // a cut ir_version field
  CHECK(looks_like_onnx(std::string("\x08\x07\x12\x07pytorch", 11)));
  CHECK_FALSE(looks_like_onnx(""));
  CHECK_FALSE(looks_like_onnx("  \n "));
  CHECK_FALSE(looks_like_onnx("{\"format\": \"pase-graph/1\"}"));
  CHECK_FALSE(looks_like_onnx("\n  [1, 2, 3]"));
  CHECK_FALSE(looks_like_onnx("\"pase-graph/1\""));  // 0x22 would decode as field 4
  CHECK_FALSE(looks_like_onnx("hello world"));
  CHECK_FALSE(looks_like_onnx("# a comment\n"));
  CHECK_FALSE(looks_like_onnx("\x89PNG\r\n"));
  CHECK_FALSE(looks_like_onnx(std::string("\x00\x01", 2)));  // field number 0
  CHECK_FALSE(looks_like_onnx("\xa8\x01\x01"));              // field 21 comes first
  CHECK_FALSE(looks_like_onnx("\x88"));                      // not even one key
}

TEST_CASE("onnx reader: MemorySource and FileSource read by offset") {
  const std::string bytes = sample_model(true).bytes();
  MemorySource memory(bytes);
  std::string out;
  CHECK(memory.read(2, 3, out));
  CHECK(out == bytes.substr(2, 3));
  out.clear();
  CHECK_FALSE(memory.read(bytes.size() - 1, 2, out));
  CHECK(memory.read(bytes.size(), 0, out));

  const std::filesystem::path path =
      std::filesystem::temp_directory_path() / "pase_onnx_proto_test.onnx";
  {
    std::ofstream file(path, std::ios::binary);
    file.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  {
    FileSource file;
    REQUIRE_FALSE(file.open(path.string()));
    CHECK(file.size() == bytes.size());
    out.clear();
    CHECK(file.read(bytes.size() - 4, 4, out));
    CHECK(out == bytes.substr(bytes.size() - 4));
    out.clear();
    CHECK_FALSE(file.read(bytes.size() - 4, 5, out));
    CountingSource source(file);
    const Result<Model> m = read_model(source);
    REQUIRE_MESSAGE(m.ok(), m.error().to_string());
    CHECK(m->nodes.size() == 4);
    CHECK(source.bytes_read < 2'000);
  }
  std::filesystem::remove(path);

  FileSource missing;
  const std::string missing_path =
      (std::filesystem::temp_directory_path() / "no-such.onnx").string();
  const std::optional<Error> e = missing.open(missing_path);
  REQUIRE(e);
  CHECK(contains(e->message, "cannot open '" + missing_path + "'"));
  CHECK(missing.size() == 0);
  out.clear();
  CHECK_FALSE(missing.read(0, 1, out));

  FileSource directory;
  const std::optional<Error> d = directory.open(std::filesystem::temp_directory_path().string());
  CHECK(d);
}

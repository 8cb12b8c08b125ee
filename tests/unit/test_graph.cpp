// SPDX-License-Identifier: Apache-2.0
// Graph IR: dtype helpers, building, validation and the stable topological sort.
#include <catch2/catch.hpp>
#include <nnergy/framework/error.hpp>
#include <nnergy/framework/graph.hpp>
#include <string>
#include <vector>

using namespace nnergy;
using Catch::Matchers::Contains;
using Catch::Matchers::Equals;

namespace {

// A small graph builder: tensors by name, outputs created on first mention.
struct graph_builder {
    graph g;
    graph_builder() { g.source_path = "model.json"; }

    uint32_t tensor(const std::string& name, nnergy_dtype dt, std::optional<std::vector<dim>> shape,
                    bool initializer = false) {
        nnergy::tensor t;
        t.name = name;
        t.dtype = dt;
        t.shape = std::move(shape);
        t.is_initializer = initializer;
        return g.add_tensor(std::move(t));
    }
    uint32_t input(const std::string& name, std::vector<int64_t> dims,
                   nnergy_dtype dt = NNERGY_DTYPE_FLOAT32) {
        std::vector<dim> s;
        for (int64_t d : dims) s.push_back(dim::of(d));
        const uint32_t t = tensor(name, dt, s);
        g.inputs.push_back(t);
        return t;
    }
    uint32_t id(const std::string& name) {
        if (name.empty()) return NNERGY_NO_TENSOR;
        if (auto t = g.find_tensor(name)) return *t;
        return tensor(name, NNERGY_DTYPE_UNDEFINED, std::nullopt);
    }
    uint32_t add(const std::string& name, const std::string& op, std::vector<std::string> ins,
                 std::vector<std::string> outs, std::vector<attribute> attrs = {}) {
        node n;
        n.name = name;
        n.op_type = op;
        for (auto& i : ins) n.inputs.push_back(id(i));
        for (auto& o : outs) n.outputs.push_back(id(o));
        n.attributes = std::move(attrs);
        return g.add_node(std::move(n));
    }
    void output(const std::string& name) { g.outputs.push_back(id(name)); }
    std::vector<std::string> order() const {
        std::vector<std::string> names;
        for (const node& n : g.nodes) names.push_back(n.name);
        return names;
    }
};

std::string finalize_error(graph& g) {
    try {
        g.finalize();
    } catch (const nnergy::error& e) {
        CHECK(e.code() == exit_code::invalid_input);
        return e.what();
    }
    FAIL("finalize() accepted an invalid graph");
    return {};
}

}  // namespace

TEST_CASE("dtype sizes and names", "[graph][dtype]") {
    CHECK(dtype_bits(NNERGY_DTYPE_FLOAT32) == 32);
    CHECK(dtype_bits(NNERGY_DTYPE_FLOAT16) == 16);
    CHECK(dtype_bits(NNERGY_DTYPE_BFLOAT16) == 16);
    CHECK(dtype_bits(NNERGY_DTYPE_FLOAT64) == 64);
    CHECK(dtype_bits(NNERGY_DTYPE_INT64) == 64);
    CHECK(dtype_bits(NNERGY_DTYPE_INT8) == 8);
    CHECK(dtype_bits(NNERGY_DTYPE_FLOAT8_E4M3) == 8);
    CHECK(dtype_bits(NNERGY_DTYPE_BOOL) == 8);
    CHECK(dtype_bits(NNERGY_DTYPE_INT4) == 4);
    CHECK(dtype_bits(NNERGY_DTYPE_UINT4) == 4);
    CHECK(dtype_bits(NNERGY_DTYPE_TFLOAT32) == 32);
    CHECK(dtype_bits(NNERGY_DTYPE_UNDEFINED) == 0);
    CHECK(dtype_bits(NNERGY_DTYPE_STRING) == 0);

    // Every storable type's canonical name parses back to itself.
    for (int v = NNERGY_DTYPE_FLOAT32; v <= NNERGY_DTYPE_TFLOAT32; ++v) {
        const auto t = static_cast<nnergy_dtype>(v);
        INFO(dtype_name(t));
        REQUIRE(dtype_from_name(dtype_name(t)).has_value());
        CHECK(*dtype_from_name(dtype_name(t)) == t);
    }
    CHECK(dtype_name(NNERGY_DTYPE_FLOAT8_E4M3) == "float8_e4m3");
    CHECK(dtype_name(NNERGY_DTYPE_BFLOAT16) == "bfloat16");
}

TEST_CASE("dtype aliases", "[graph][dtype]") {
    const std::vector<std::pair<std::string, nnergy_dtype>> cases{
        {"fp32", NNERGY_DTYPE_FLOAT32},
        {"f32", NNERGY_DTYPE_FLOAT32},
        {"float", NNERGY_DTYPE_FLOAT32},
        {"FLOAT", NNERGY_DTYPE_FLOAT32},
        {"fp16", NNERGY_DTYPE_FLOAT16},
        {"half", NNERGY_DTYPE_FLOAT16},
        {"Float16", NNERGY_DTYPE_FLOAT16},
        {"bf16", NNERGY_DTYPE_BFLOAT16},
        {"tf32", NNERGY_DTYPE_TFLOAT32},
        {"fp8", NNERGY_DTYPE_FLOAT8_E4M3},
        {"fp8_e5m2", NNERGY_DTYPE_FLOAT8_E5M2},
        {"int8", NNERGY_DTYPE_INT8},
        {"i8", NNERGY_DTYPE_INT8},
        {"int4", NNERGY_DTYPE_INT4},
        {"double", NNERGY_DTYPE_FLOAT64},
        {"int64", NNERGY_DTYPE_INT64},
    };
    for (const auto& [name, type] : cases) {
        INFO(name);
        REQUIRE(dtype_from_name(name).has_value());
        CHECK(*dtype_from_name(name) == type);
    }
    CHECK_FALSE(dtype_from_name("float13").has_value());
    CHECK_FALSE(dtype_from_name("").has_value());
    CHECK_FALSE(dtype_from_name("undefined").has_value());
    CHECK_FALSE(dtype_from_name(std::string(100, 'f')).has_value());
}

TEST_CASE("a graph with duplicate tensor names does not finalize; the file and tensor are named",
          "[graph]") {
    graph_builder b;
    b.input("x", {1});
    CHECK(b.g.find_tensor("x") == 0u);
    CHECK_FALSE(b.g.find_tensor("y").has_value());
    b.input("x", {2});
    CHECK_THAT(finalize_error(b.g),
               Contains("model.json") && Contains("tensor 'x' is defined twice"));
    CHECK_FALSE(b.g.finalized());
}

TEST_CASE("the tensor name index finds every tensor as it grows, and in a copy", "[graph]") {
    graph g;
    CHECK_FALSE(g.find_tensor("t0").has_value());  // an empty index
    // Names past the small-string size, and names that differ only in their last byte.
    const auto name = [](uint32_t i) { return "block." + std::to_string(i) + ".conv.weight"; };
    const uint32_t count = 5000;
    for (uint32_t i = 0; i < count; ++i) {
        nnergy::tensor t;
        t.name = name(i);
        CHECK(g.add_tensor(std::move(t)) == i);
        if (i % 997 == 0)  // found while the table is still growing
            for (uint32_t j = 0; j <= i; j += 97) REQUIRE(g.find_tensor(name(j)) == j);
    }
    for (uint32_t i = 0; i < count; ++i) REQUIRE(g.find_tensor(name(i)) == i);
    CHECK_FALSE(g.find_tensor("block.5000.conv.weight").has_value());
    CHECK_FALSE(g.find_tensor("").has_value());
    g.finalize();  // indexes the names
    for (uint32_t i = 0; i < count; ++i) REQUIRE(g.find_tensor(name(i)) == i);
    CHECK_FALSE(g.find_tensor("block.5000.conv.weight").has_value());
    const graph copy = g;  // the index holds indices, not pointers
    for (uint32_t i = 0; i < count; i += 7) REQUIRE(copy.find_tensor(name(i)) == i);
    nnergy::tensor again;
    again.name = name(4321);
    CHECK(g.add_tensor(std::move(again)) == count);  // kept, but the graph no longer finalizes
    CHECK_THAT(finalize_error(g), Contains("tensor 'block.4321.conv.weight' is defined twice"));
}

TEST_CASE("reserve sizes the storage once; names are found and duplicates caught", "[graph]") {
    graph g;
    nnergy::tensor first;
    first.name = "first";
    g.add_tensor(std::move(first));  // a reservation after some tensors keeps them indexed
    g.reserve(3001, 1000);
    CHECK(g.tensors.capacity() >= 3001);
    CHECK(g.nodes.capacity() >= 1000);
    const nnergy::tensor* storage = g.tensors.data();
    for (uint32_t i = 1; i < 3001; ++i) {
        nnergy::tensor t;
        t.name = "t" + std::to_string(i);
        REQUIRE(g.add_tensor(std::move(t)) == i);
    }
    CHECK(g.tensors.data() == storage);  // never moved: no step held two copies
    CHECK(g.find_tensor("first") == 0u);
    for (uint32_t i = 1; i < 3001; i += 113) REQUIRE(g.find_tensor("t" + std::to_string(i)) == i);
    g.reserve(10, 10);  // smaller than held: nothing changes
    CHECK(g.tensors.size() == 3001);
    CHECK(g.find_tensor("t3000") == 3000u);
    nnergy::tensor again;
    again.name = "t77";
    g.add_tensor(std::move(again));
    CHECK_THAT(finalize_error(g), Contains("tensor 't77' is defined twice"));
}

TEST_CASE("indexing names at once finds each one and the first duplicate", "[graph]") {
    // More names than the indexer requests ahead, colliding slots included (a small table).
    std::vector<nnergy::tensor> tensors(100);
    for (uint32_t i = 0; i < tensors.size(); ++i) tensors[i].name = "n" + std::to_string(i);
    nnergy::tensor_name_index index;
    CHECK(index.build(tensors) == nnergy::tensor_name_index::absent);
    CHECK(index.size() == 100);
    for (uint32_t i = 0; i < tensors.size(); ++i)
        REQUIRE(index.find(tensors, tensors[i].name) == i);
    CHECK(index.find(tensors, "n100") == nnergy::tensor_name_index::absent);
    tensors[70].name = "n3";  // the second holder of a name is the one reported
    tensors[90].name = "n3";
    CHECK(index.build(tensors) == 70u);
    std::vector<nnergy::tensor> none;
    CHECK(index.build(none) == nnergy::tensor_name_index::absent);
    CHECK(index.size() == 0);
}

TEST_CASE("duplicate names in tensors filled directly are caught too", "[graph]") {
    graph_builder b;
    b.input("x", {1});
    b.g.tensors.push_back(b.g.tensors[0]);  // bypasses add_tensor
    CHECK_THAT(finalize_error(b.g), Contains("tensor 'x' is defined twice"));
    b.input("y", {1});  // names are checked when the graph is finished, not as it grows
    CHECK_THAT(finalize_error(b.g), Contains("tensor 'x' is defined twice"));
}

TEST_CASE("add_node rejects out-of-range tensor indices", "[graph]") {
    graph_builder b;
    b.input("x", {1});
    node n;
    n.name = "bad";
    n.op_type = "Relu";
    n.inputs = {0};
    n.outputs = {7};
    CHECK_THROWS_WITH(b.g.add_node(n), Contains("'bad'") && Contains("out of range"));
    n.outputs = {NNERGY_NO_TENSOR};  // an omitted optional output is allowed
    CHECK(b.g.add_node(n) == 0u);
}

TEST_CASE("node attribute helpers", "[graph]") {
    node n;
    n.attributes = {{"group", int64_t{4}},
                    {"alpha", 0.25},
                    {"beta", int64_t{1}},
                    {"auto_pad", std::string("SAME_UPPER")},
                    {"pads", std::vector<int64_t>{1, 2, 3, 4}}};
    CHECK(n.attr_int("group") == 4);
    CHECK(n.attr_float("alpha") == 0.25);
    CHECK(n.attr_float("beta") == 1.0);            // whole numbers written without a fraction
    CHECK_FALSE(n.attr_int("alpha").has_value());  // wrong type is absent, not converted
    REQUIRE(n.attr_string("auto_pad") != nullptr);
    CHECK(*n.attr_string("auto_pad") == "SAME_UPPER");
    REQUIRE(n.attr_ints("pads") != nullptr);
    CHECK(*n.attr_ints("pads") == std::vector<int64_t>{1, 2, 3, 4});
    CHECK(n.attr_ints("group") == nullptr);
    CHECK_FALSE(n.attr_int("missing").has_value());
    CHECK(n.find_attribute("missing") == nullptr);
}

TEST_CASE("describe_node names the file, the line and the node", "[graph]") {
    graph_builder b;
    b.input("x", {1});
    b.add("conv1", "Conv", {"x"}, {"y"});
    CHECK(b.g.describe_node(0) == "model.json: node 'conv1' (Conv)");
    b.g.nodes[0].source_line = 12;
    CHECK(b.g.describe_node(0) == "model.json:12: node 'conv1' (Conv)");
    b.g.nodes[0].domain = "com.example";
    CHECK(b.g.describe_node(0) == "model.json:12: node 'conv1' (com.example.Conv)");
}

TEST_CASE("finalize sorts nodes topologically, keeping file order among ready nodes", "[graph]") {
    graph_builder b;
    b.input("x", {4});
    // File order: c needs b's output, b needs a's; d and e are independent of each other.
    b.add("c", "Relu", {"t2"}, {"t3"});
    b.add("e", "Relu", {"x"}, {"t5"});
    b.add("b", "Relu", {"t1"}, {"t2"});
    b.add("a", "Relu", {"x"}, {"t1"});
    b.add("d", "Relu", {"x"}, {"t4"});
    b.output("t3");
    b.output("t4");
    b.output("t5");
    b.g.finalize();
    REQUIRE(b.g.finalized());
    // Kahn's algorithm with the earliest ready node first: e (file #1) and a (#3) and d (#4)
    // are ready at once; e goes first, then a, which frees b (#2) ahead of d, then c.
    CHECK_THAT(b.order(), Equals(std::vector<std::string>{"e", "a", "b", "c", "d"}));

    const uint32_t t2 = *b.g.find_tensor("t2");
    CHECK(b.g.producers()[t2] == 2u);  // "b", after sorting
    REQUIRE(b.g.consumers()[t2].size() == 1);
    CHECK(b.g.consumers()[t2][0] == 3u);  // "c"
    const uint32_t x = *b.g.find_tensor("x");
    CHECK(b.g.producers()[x] == NNERGY_NO_NODE);
    const auto of_x = b.g.consumers()[x];
    CHECK(std::vector<uint32_t>(of_x.begin(), of_x.end()) == std::vector<uint32_t>{0, 1, 4});
}

TEST_CASE("finalize keeps an already sorted file as it is", "[graph]") {
    graph_builder b;
    b.input("x", {4});
    b.add("n0", "Relu", {"x"}, {"a"});
    b.add("n1", "Mul", {"a", "a"}, {"b"});  // reads one tensor twice: one consumer entry
    b.add("n2", "Add", {"a", "b"}, {"c"});
    b.output("c");
    const std::vector<std::string> before = b.order();
    b.g.finalize();
    CHECK(b.order() == before);
    const auto of_a = b.g.consumers()[*b.g.find_tensor("a")];
    CHECK(std::vector<uint32_t>(of_a.begin(), of_a.end()) == std::vector<uint32_t>{1, 2});
}

TEST_CASE("finalize: dangling input", "[graph][errors]") {
    graph_builder b;
    b.input("x", {4});
    b.add("conv1", "Conv", {"x", "x9"}, {"y"});
    b.output("y");
    CHECK(finalize_error(b.g) ==
          "model.json: node 'conv1' (Conv): input 'x9' is not produced by any node, not a "
          "graph input and not an initializer");
}

TEST_CASE("finalize: two producers of one tensor", "[graph][errors]") {
    graph_builder b;
    b.input("x", {4});
    b.add("first", "Relu", {"x"}, {"y"});
    b.add("second", "Sigmoid", {"x"}, {"y"});
    b.output("y");
    const std::string msg = finalize_error(b.g);
    CHECK_THAT(msg, Contains("node 'second' (Sigmoid)") && Contains("'y'") &&
                        Contains("also produced by node 'first' (Relu)"));
}

TEST_CASE("finalize: a node writing a graph input", "[graph][errors]") {
    graph_builder b;
    b.input("x", {4});
    b.add("n", "Relu", {"x"}, {"x"});
    CHECK_THAT(finalize_error(b.g), Contains("node 'n' (Relu)") && Contains("graph input"));
}

TEST_CASE("finalize: cycles name a node on the cycle", "[graph][errors]") {
    graph_builder b;
    b.input("x", {4});
    b.add("start", "Relu", {"x"}, {"s"});
    b.add("p", "Add", {"s", "r"}, {"p_out"});
    b.add("q", "Relu", {"p_out"}, {"q_out"});
    b.add("r", "Relu", {"q_out"}, {"r"});
    b.output("r");
    const std::string msg = finalize_error(b.g);
    CHECK_THAT(msg, Contains("cycle"));
    CHECK_THAT(msg, Contains("'p' -> 'q' -> 'r' -> 'p'"));
    CHECK_THAT(msg, !Contains("'start'"));
    CHECK_FALSE(b.g.finalized());

    graph_builder self;
    self.input("x", {4});
    self.add("loop", "Add", {"x", "y"}, {"y"});
    CHECK_THAT(finalize_error(self.g), Contains("node 'loop' (Add)") && Contains("cycle"));
}

TEST_CASE("finalize: graph output never produced", "[graph][errors]") {
    graph_builder b;
    b.input("x", {4});
    b.add("n", "Relu", {"x"}, {"y"});
    b.output("y");
    b.output("ghost");
    CHECK(finalize_error(b.g) ==
          "model.json: graph output 'ghost' is not produced by any node, not a graph input "
          "and not an initializer");
}

TEST_CASE("finalize: graph inputs and initializers need a dtype", "[graph][errors]") {
    graph_builder b;
    b.tensor("w", NNERGY_DTYPE_UNDEFINED, std::vector<dim>{dim::of(3)}, true);
    CHECK_THAT(finalize_error(b.g), Contains("initializer 'w' has no element type"));

    graph_builder c;
    c.input("x", {1}, NNERGY_DTYPE_UNDEFINED);
    CHECK_THAT(finalize_error(c.g), Contains("graph input 'x' has no element type"));
}

TEST_CASE("finalize: dtype mismatches between inputs of one op", "[graph][errors]") {
    graph_builder b;
    b.input("a", {4}, NNERGY_DTYPE_FLOAT32);
    b.input("h", {4}, NNERGY_DTYPE_FLOAT16);
    b.add("add1", "Add", {"a", "h"}, {"y"});
    b.output("y");
    CHECK(finalize_error(b.g) ==
          "model.json: node 'add1' (Add): input 'h' is float16 but input 'a' is float32 (Add "
          "needs one element type; insert a Cast to mix them)");
}

TEST_CASE("finalize: a mismatch found through inferred types", "[graph][errors]") {
    // relu's output has no declared type; it inherits float16 and then meets float32.
    graph_builder b;
    b.input("h", {4}, NNERGY_DTYPE_FLOAT16);
    b.input("a", {4}, NNERGY_DTYPE_FLOAT32);
    b.add("relu", "Relu", {"h"}, {"r"});
    b.add("mm", "MatMul", {"r", "a"}, {"y"});
    b.output("y");
    CHECK_THAT(finalize_error(b.g), Contains("node 'mm' (MatMul)") && Contains("'a' is float32") &&
                                        Contains("'r' is float16"));
}

TEST_CASE("finalize: declared output dtype contradicting the op", "[graph][errors]") {
    graph_builder b;
    b.input("x", {4}, NNERGY_DTYPE_FLOAT32);
    b.tensor("y", NNERGY_DTYPE_FLOAT32, std::nullopt);
    b.add("cast", "Cast", {"x"}, {"y"}, {{"to", int64_t{10}}});  // 10 = FLOAT16
    b.output("y");
    CHECK_THAT(finalize_error(b.g), Contains("node 'cast' (Cast)") &&
                                        Contains("'y' is declared float32") &&
                                        Contains("yields float16"));
}

TEST_CASE("finalize: integer operands must hold integers", "[graph][errors]") {
    graph_builder b;
    b.input("x", {4});
    b.tensor("shape", NNERGY_DTYPE_FLOAT32, std::vector<dim>{dim::of(2)}, true);
    b.add("reshape", "Reshape", {"x", "shape"}, {"y"});
    b.output("y");
    CHECK_THAT(finalize_error(b.g), Contains("node 'reshape' (Reshape)") &&
                                        Contains("'shape' is float32") && Contains("integers"));
}

TEST_CASE("finalize: operand counts are checked for known ops", "[graph][errors]") {
    graph_builder b;
    b.input("x", {1, 1, 4, 4});
    b.add("conv", "Conv", {"x"}, {"y"});
    b.output("y");
    CHECK_THAT(finalize_error(b.g),
               Contains("node 'conv' (Conv)") && Contains("has 1 inputs, Conv takes 2 to 3"));

    graph_builder c;
    c.input("x", {4});
    c.add("gemm", "Gemm", {"", "x"}, {"y"});
    c.output("y");
    CHECK_THAT(finalize_error(c.g), Contains("required input 0 is missing"));
}

TEST_CASE("finalize infers element types", "[graph]") {
    graph_builder b;
    b.input("x", {2, 3}, NNERGY_DTYPE_FLOAT16);
    b.add("shape", "Shape", {"x"}, {"s"});
    b.add("cast", "Cast", {"x"}, {"c"}, {{"to", std::string("float32")}});
    b.add("relu", "Relu", {"x"}, {"r"});
    b.add("eq", "Equal", {"r", "x"}, {"e"});
    b.add("pool", "MaxPool", {"x"}, {"p", "idx"});
    b.add("ln", "LayerNormalization", {"x", "x"}, {"ln_y", "ln_mean"});
    b.add("custom", "MyOp", {"x"}, {"u"});
    b.g.finalize();
    const auto& dt = b.g.dtypes();
    const auto type_of = [&](const char* n) { return dt[*b.g.find_tensor(n)]; };
    CHECK(type_of("s") == NNERGY_DTYPE_INT64);
    CHECK(type_of("c") == NNERGY_DTYPE_FLOAT32);
    CHECK(type_of("r") == NNERGY_DTYPE_FLOAT16);
    CHECK(type_of("e") == NNERGY_DTYPE_BOOL);
    CHECK(type_of("p") == NNERGY_DTYPE_FLOAT16);
    CHECK(type_of("idx") == NNERGY_DTYPE_INT64);
    CHECK(type_of("ln_y") == NNERGY_DTYPE_FLOAT16);
    CHECK(type_of("ln_mean") == NNERGY_DTYPE_FLOAT32);  // stash_type defaults to float32
    CHECK(type_of("u") == NNERGY_DTYPE_UNDEFINED);      // unknown op, nothing declared
    // The declared types themselves are left as the frontend gave them.
    CHECK(b.g.tensors[*b.g.find_tensor("s")].dtype == NNERGY_DTYPE_UNDEFINED);
}

TEST_CASE("finalize is repeatable and add_* resets it", "[graph]") {
    graph_builder b;
    b.input("x", {4});
    b.add("b", "Relu", {"a"}, {"y"});
    b.add("a", "Relu", {"x"}, {"a"});
    b.output("y");
    b.g.finalize();
    const auto first = b.order();
    b.g.finalize();
    CHECK(b.order() == first);
    CHECK(b.g.finalized());
    b.add("c", "Relu", {"y"}, {"z"});
    CHECK_FALSE(b.g.finalized());
}

TEST_CASE("a tensor's integer values: copies are deep, equality compares the values", "[graph]") {
    tensor a;
    CHECK_FALSE(a.int_values);
    a.int_values = std::vector<int64_t>{2, -1};
    REQUIRE(a.int_values);
    CHECK(a.int_values->size() == 2);

    tensor b = a;  // a copy of its own
    REQUIRE(b.int_values);
    CHECK(&*b.int_values != &*a.int_values);
    CHECK(b == a);
    (*b.int_values)[1] = 8;
    CHECK((*a.int_values)[1] == -1);
    CHECK_FALSE(b == a);

    b = a;
    CHECK(b == a);
    b.int_values = std::optional<std::vector<int64_t>>();  // as a frontend without values sets it
    CHECK_FALSE(b.int_values);
    CHECK_FALSE(b == a);
    a.int_values = std::nullopt;
    CHECK(b == a);

    tensor moved = std::move(b);
    CHECK_FALSE(moved.int_values);
    tensor empty_values;
    empty_values.int_values = std::vector<int64_t>{};  // a value, though empty
    CHECK(empty_values.int_values);
    CHECK_FALSE(empty_values == tensor{});
}

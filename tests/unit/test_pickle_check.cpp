// SPDX-License-Identifier: Apache-2.0
// The TorchScript reader's check of an archive's pickles (frontends/torchscript/pickle_check.hpp):
// what libtorch's unpickler would crash or run out of memory on is named, with its byte.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "../../frontends/torchscript/pickle_check.hpp"

namespace {

std::string problem_of(const std::string& pickle) {
    const auto problem = nnergy::torchscript::pickle_problem(
        reinterpret_cast<const unsigned char*>(pickle.data()), pickle.size());
    return problem ? *problem : std::string();
}

// pickle.dumps({'a': (1, 2.5, 'x', None, True), 'b': [1, 2, 3], 'c': 10**20}, protocol=2)
const std::string python_pickle(
    "\x80\x02\x7d\x71\x00\x28\x58\x01\x00\x00\x00\x61\x71\x01\x28\x4b\x01\x47\x40\x04\x00\x00\x00"
    "\x00\x00\x00\x58\x01\x00\x00\x00\x78\x71\x02\x4e\x88\x74\x71\x03\x58\x01\x00\x00\x00\x62\x71"
    "\x04\x5d\x71\x05\x28\x4b\x01\x4b\x02\x4b\x03\x65\x58\x01\x00\x00\x00\x63\x71\x06\x8a\x09\x00"
    "\x00\x10\x63\x2d\x5e\xc7\x6b\x05\x75\x2e",
    79);

}  // namespace

TEST_CASE("a pickle Python writes is well-formed", "[torchscript][pickle]") {
    CHECK(problem_of(python_pickle).empty());
    // A memo read of what was stored, and a persistent id as torch writes for tensors.
    CHECK(problem_of(std::string("\x80\x02]q\x00h\x00\x86.", 9)).empty());
    CHECK(problem_of(std::string("\x80\x02X\x01\x00\x00\x000Q.", 10)).empty());
}

TEST_CASE("what libtorch's unpickler trusts is refused, naming the byte", "[torchscript][pickle]") {
    // A persistent id with nothing on the stack: libtorch reads before its stack.
    CHECK(problem_of(std::string("\x80\x02Q.", 4)) ==
          "byte 2: opcode 0x51 takes 1 value(s) from a stack holding 0 above its last mark");
    // A memo slot far beyond those written: libtorch sizes its memo table by it.
    CHECK(problem_of(std::string("\x80\x02N"
                                 "r\x01\x02\x03\x60.",
                                 9)) == "byte 3: memo slot 1610809857 beyond any written so far");
    CHECK(problem_of(std::string("\x80\x02h\x07.", 5)) ==
          "byte 2: memo slot 7 read, never written");
    // Pops may not reach below the innermost mark.
    CHECK(problem_of(std::string("\x80\x02N(\x85.", 6)) ==
          "byte 4: opcode 0x85 takes 1 value(s) from a stack holding 0 above its last mark");
    CHECK(problem_of(std::string("\x80\x02Nt.", 5)) == "byte 3: opcode 0x74 without a MARK");
    CHECK(problem_of(std::string("\x80\x02(Nd.", 6)) ==
          "byte 4: a dict of an odd number of keys and values");
}

TEST_CASE("a pickle cut short or left unfinished is refused", "[torchscript][pickle]") {
    CHECK(problem_of(python_pickle.substr(0, 30)) == "byte 26: operand beyond the pickle's end");
    CHECK(problem_of(python_pickle.substr(0, 78)) == "byte 78: the pickle ends without STOP");
    CHECK(problem_of(std::string("\x80\x02NN.", 5)) ==
          "byte 4: STOP with 2 values on the stack and 0 open marks (expected one value)");
    CHECK(problem_of(std::string("\x80\x02X\xff\xff\xff\x7f"
                                 "ab.",
                                 10)) == "byte 2: operand beyond the pickle's end");
    CHECK(problem_of(std::string("\x80\x02\xfe.", 4)) ==
          "byte 2: opcode 0xfe, which no TorchScript pickle holds");
    CHECK(problem_of(std::string("\x80\x09N.", 4)) == "byte 0: pickle protocol 9");
    CHECK(problem_of(std::string()) == "byte 0: the pickle ends without STOP");
}

TEST_CASE("the tensor storages a pickle names are listed", "[torchscript][pickle]") {
    // What torch writes for a tensor's storage: a persistent id ('storage', class, key,
    // location, element count), here 1,000 floats under key '7', as Python's pickler writes it
    // (protocol 2).
    const std::string pickle(
        "\x80\x02\x28\x58\x07\x00\x00\x00\x73\x74\x6f\x72\x61\x67\x65\x71\x00\x63\x74\x6f\x72"
        "\x63\x68\x0a\x46\x6c\x6f\x61\x74\x53\x74\x6f\x72\x61\x67\x65\x0a\x71\x01\x58\x01\x00"
        "\x00\x00\x37\x71\x02\x58\x03\x00\x00\x00\x63\x70\x75\x71\x03\x4d\xe8\x03\x74\x71\x04"
        "\x51\x2e",
        65);
    std::vector<nnergy::torchscript::storage_ref> storages;
    REQUIRE_FALSE(nnergy::torchscript::pickle_problem(
        reinterpret_cast<const unsigned char*>(pickle.data()), pickle.size(), &storages));
    REQUIRE(storages.size() == 1);
    CHECK(storages[0].key == "7");
    CHECK(storages[0].type == "FloatStorage");
    CHECK(storages[0].elements == 1000);
    CHECK(nnergy::torchscript::storage_element_size("FloatStorage") == 4);
    CHECK(nnergy::torchscript::storage_element_size("NoSuchStorage") == 0);
}

TEST_CASE("a storage id moved about the stack before it is used is still listed",
          "[torchscript][pickle]") {
    // The persistent id above, up to its tuple: ('storage', FloatStorage, '7', 'cpu', 1000).
    const std::string id_tuple(
        "\x80\x02\x28\x58\x07\x00\x00\x00\x73\x74\x6f\x72\x61\x67\x65\x71\x00\x63\x74\x6f\x72"
        "\x63\x68\x0a\x46\x6c\x6f\x61\x74\x53\x74\x6f\x72\x61\x67\x65\x0a\x71\x01\x58\x01\x00"
        "\x00\x00\x37\x71\x02\x58\x03\x00\x00\x00\x63\x70\x75\x71\x03\x4d\xe8\x03\x74",
        61);
    const auto storages_of = [](const std::string& pickle) {
        std::vector<nnergy::torchscript::storage_ref> storages;
        const auto problem = nnergy::torchscript::pickle_problem(
            reinterpret_cast<const unsigned char*>(pickle.data()), pickle.size(), &storages);
        INFO(pickle.size() << " bytes: " << problem.value_or("well-formed"));
        CHECK_FALSE(problem);
        return storages;
    };
    // Each tail leaves one value: the id duplicated and the copy popped; the copy used and the
    // id popped; the id memoized, popped and read back; the id under a mark that is popped
    // with what was pushed above it.
    for (const std::string& tail : {std::string("2"
                                                "0"
                                                "Q."),
                                    std::string("2"
                                                "Q"
                                                "0"
                                                "."),
                                    std::string("q\x09"
                                                "0"
                                                "h\x09"
                                                "Q.",
                                                7),
                                    std::string("(NN"
                                                "1"
                                                "Q.")}) {
        const std::vector<nnergy::torchscript::storage_ref> storages = storages_of(id_tuple + tail);
        INFO("tail of " << tail.size() << " bytes");
        REQUIRE(storages.size() == 1);
        CHECK(storages[0].key == "7");
        CHECK(storages[0].elements == 1000);
    }
}

// SPDX-License-Identifier: Apache-2.0
/// \file pickle_check.hpp
/// \brief A structural check of the pickles in a TorchScript archive, before libtorch reads them.
///
/// libtorch 1.13's unpickler trusts its input: a pickle that pops an empty stack reads before
/// its stack (a crash), and one that stores into memo slot 1,627,455,745 grows its memo to that
/// size (gigabytes, then std::bad_alloc or the allocator's abort). A damaged or hand-edited
/// archive must give an error instead, so every pickle is walked first as Python's pickletools
/// walks one: each opcode known, each operand within the bytes, the stack and its marks never
/// popped below what was pushed, every memo slot read one that was written, and the pickle
/// ending with STOP and one value. Values are not built: only their count is kept.
///
/// C++17 (the TorchScript reader's standard) and free of libtorch, so that it is tested alone.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace nnergy::torchscript {

/// A tensor storage a pickle names by persistent id ('storage', torch.<Type>Storage, key,
/// location, element count): its data is the archive's record `key` in the pickle's folder.
struct storage_ref {
    std::string key;
    std::string type;  ///< "FloatStorage", ...
    uint64_t elements = 0;
};

/// Bytes per element of a storage type; 0 for one not known here.
inline std::size_t storage_element_size(const std::string& type) {
    static const std::pair<const char*, std::size_t> sizes[] = {
        {"DoubleStorage", 8},   {"FloatStorage", 4},        {"HalfStorage", 2},
        {"BFloat16Storage", 2}, {"LongStorage", 8},         {"IntStorage", 4},
        {"ShortStorage", 2},    {"CharStorage", 1},         {"ByteStorage", 1},
        {"BoolStorage", 1},     {"ComplexFloatStorage", 8}, {"ComplexDoubleStorage", 16},
        {"QInt8Storage", 1},    {"QUInt8Storage", 1},       {"QInt32Storage", 4}};
    for (const auto& [name, bytes] : sizes)
        if (type == name) return bytes;
    return 0;
}

/// Why `bytes` is not a well-formed pickle, with the byte offset; nothing when it is one.
/// With `storages`, also the tensor storages it names (their data is checked against them).
inline std::optional<std::string> pickle_problem(const unsigned char* bytes, std::size_t size,
                                                 std::vector<storage_ref>* storages = nullptr) {
    std::size_t at = 0;
    std::size_t depth = 0;           // values on the stack
    std::vector<std::size_t> marks;  // the depth at each open MARK
    std::unordered_set<uint64_t> memo;
    std::size_t opcodes = 0;
    // What a storage id is made of, kept beside the stack: text, small integers, globals and
    // short tuples of them; every other value is `other`. Only their count is checked above.
    struct shadow {
        enum class is : uint8_t { other, text, integer, global, tuple } kind = is::other;
        std::string text;
        uint64_t integer = 0;
        std::vector<shadow> items;
    };
    std::vector<shadow> values;
    std::unordered_map<uint64_t, shadow> memo_values;
    std::size_t operand_at = 0, operand_size = 0;  // the last counted or line operand
    const auto problem = [&](std::size_t where, const std::string& what) {
        return std::optional<std::string>("byte " + std::to_string(where) + ": " + what);
    };
    const auto hex = [](unsigned v) {
        static const char digits[] = "0123456789abcdef";
        return std::string("0x") + digits[(v >> 4) & 15] + digits[v & 15];
    };
    // Little-endian unsigned of `n` bytes at `at`.
    const auto read_le = [&](std::size_t n) {
        uint64_t v = 0;
        for (std::size_t k = 0; k < n; ++k) v |= uint64_t{bytes[at + k]} << (8 * k);
        return v;
    };
    while (true) {
        if (at >= size) return problem(at, "the pickle ends without STOP");
        const std::size_t op_at = at;
        const unsigned char op = bytes[at++];
        ++opcodes;
        const std::size_t depth_before = depth;
        // Every opcode that leaves a value on the stack says so through push(): the shadows
        // below follow that, not a second list of opcodes.
        bool pushed = false;
        const auto push = [&] {
            ++depth;
            pushed = true;
        };
        const std::size_t above_mark = depth - (marks.empty() ? 0 : marks.back());
        // Pops `n` values that lie above the innermost mark.
        const auto pop = [&](std::size_t n) -> bool {
            if (above_mark < n) return false;
            depth -= n;
            return true;
        };
        const auto underflow = [&](std::size_t n) {
            return problem(op_at, "opcode " + hex(op) + " takes " + std::to_string(n) +
                                      " value(s) from a stack holding " +
                                      std::to_string(above_mark) + " above its last mark");
        };
        // Operand bytes that must lie within the pickle.
        const auto operand = [&](std::size_t n) -> bool {
            if (n > size - at) return false;
            at += n;
            return true;
        };
        const auto truncated = [&]() { return problem(op_at, "operand beyond the pickle's end"); };
        // A length-prefixed operand: `width` bytes of length, then that many bytes.
        const auto counted = [&](std::size_t width) -> bool {
            if (width > size - at) return false;
            const uint64_t n = read_le(width);
            at += width;
            operand_at = at;
            operand_size = static_cast<std::size_t>(n);
            return n <= size - at && operand(static_cast<std::size_t>(n));
        };
        // A text operand ending at a newline.
        const auto line = [&]() -> bool {
            const void* nl = std::memchr(bytes + at, '\n', size - at);
            if (!nl) return false;
            const auto end =
                static_cast<std::size_t>(static_cast<const unsigned char*>(nl) - bytes);
            operand_at = at;
            operand_size = end - at;
            at = end + 1;
            return true;
        };
        const auto to_mark = [&]() -> std::optional<std::size_t> {
            if (marks.empty()) return std::nullopt;
            const std::size_t n = depth - marks.back();
            depth = marks.back();
            marks.pop_back();
            return n;
        };
        const auto put = [&](uint64_t slot) -> std::optional<std::string> {
            if (depth == 0) return problem(op_at, "a memo store with an empty stack");
            // Picklers number their slots in order, so a slot beyond the opcodes read so far
            // is damage (and would size libtorch's memo table).
            if (slot > opcodes)
                return problem(op_at,
                               "memo slot " + std::to_string(slot) + " beyond any written so far");
            memo.insert(slot);
            if (storages && !values.empty()) memo_values[slot] = values.back();
            return std::nullopt;
        };
        const auto get = [&](uint64_t slot) -> std::optional<std::string> {
            if (memo.count(slot) == 0)
                return problem(op_at, "memo slot " + std::to_string(slot) + " read, never written");
            push();
            return std::nullopt;
        };
        switch (op) {
            case 0x80:  // PROTO
                if (!operand(1)) return truncated();
                if (bytes[at - 1] > 5)
                    return problem(op_at, "pickle protocol " + std::to_string(bytes[at - 1]));
                break;
            case 0x95:  // FRAME
                if (!operand(8)) return truncated();
                break;
            case '.':  // STOP
                if (!marks.empty() || depth != 1)
                    return problem(op_at, "STOP with " + std::to_string(depth) +
                                              " values on the stack and " +
                                              std::to_string(marks.size()) +
                                              " open marks (expected one value)");
                return std::nullopt;
            case '(':  // MARK
                marks.push_back(depth);
                break;
            case ')':   // EMPTY_TUPLE
            case ']':   // EMPTY_LIST
            case '}':   // EMPTY_DICT
            case 0x8f:  // EMPTY_SET
            case 'N':   // NONE
            case 0x88:  // NEWTRUE
            case 0x89:  // NEWFALSE
                push();
                break;
            case 't':   // TUPLE
            case 'l':   // LIST
            case 'd':   // DICT
            case 0x91:  // FROZENSET
            {
                const std::optional<std::size_t> n = to_mark();
                if (!n) return problem(op_at, "opcode " + hex(op) + " without a MARK");
                if (op == 'd' && *n % 2 != 0)
                    return problem(op_at, "a dict of an odd number of keys and values");
                push();
                break;
            }
            case 0x85:  // TUPLE1
            case 0x86:  // TUPLE2
            case 0x87:  // TUPLE3
            {
                const std::size_t n = op - 0x84u;
                if (!pop(n)) return underflow(n);
                push();
                break;
            }
            case 'a':  // APPEND: list, value -> list
            case 'b':  // BUILD: object, state -> object
                if (!pop(2)) return underflow(2);
                push();
                break;
            case 's':  // SETITEM: dict, key, value -> dict
                if (!pop(3)) return underflow(3);
                push();
                break;
            case 'e':   // APPENDS
            case 'u':   // SETITEMS
            case 0x90:  // ADDITEMS
            {
                const std::optional<std::size_t> n = to_mark();
                if (!n) return problem(op_at, "opcode " + hex(op) + " without a MARK");
                if (op == 'u' && *n % 2 != 0)
                    return problem(op_at, "SETITEMS of an odd number of keys and values");
                // The container they add to is the value below the mark.
                if (depth - (marks.empty() ? 0 : marks.back()) < 1)
                    return problem(op_at,
                                   "opcode " + hex(op) + " with no container below its mark");
                break;
            }
            case '0':  // POP
                if (!pop(1)) return underflow(1);
                break;
            case '1':  // POP_MARK
                if (!to_mark()) return problem(op_at, "POP_MARK without a MARK");
                break;
            case '2':  // DUP
                if (above_mark < 1) return underflow(1);
                push();
                break;
            case 'J':  // BININT
                if (!operand(4)) return truncated();
                push();
                break;
            case 'K':  // BININT1
                if (!operand(1)) return truncated();
                push();
                break;
            case 'M':  // BININT2
                if (!operand(2)) return truncated();
                push();
                break;
            case 'G':  // BINFLOAT
                if (!operand(8)) return truncated();
                push();
                break;
            case 0x8a:  // LONG1
            case 'U':   // SHORT_BINSTRING
            case 'C':   // SHORT_BINBYTES
            case 0x8c:  // SHORT_BINUNICODE
                if (!counted(1)) return truncated();
                push();
                break;
            case 0x8b:  // LONG4
            case 'T':   // BINSTRING
            case 'B':   // BINBYTES
            case 'X':   // BINUNICODE
                if (!counted(4)) return truncated();
                push();
                break;
            case 0x8d:  // BINUNICODE8
            case 0x8e:  // BINBYTES8
            case 0x96:  // BYTEARRAY8
                if (!counted(8)) return truncated();
                push();
                break;
            case 'I':  // INT
            case 'L':  // LONG
            case 'F':  // FLOAT
            case 'S':  // STRING
            case 'V':  // UNICODE
            case 'P':  // PERSID
                if (!line()) return truncated();
                push();
                break;
            case 'c':  // GLOBAL: module and name lines
            {
                if (!line()) return truncated();
                const std::size_t module_at = operand_at;
                if (!line()) return truncated();
                // Both lines, "module\nname", for the shadow below.
                operand_size += operand_at - module_at;
                operand_at = module_at;
                push();
                break;
            }
            case 0x93:  // STACK_GLOBAL: module, name -> class
            case 'R':   // REDUCE: callable, arguments -> value
            case 0x81:  // NEWOBJ: class, arguments -> object
                if (!pop(2)) return underflow(2);
                push();
                break;
            case 'Q':  // BINPERSID: id -> object
                if (!pop(1)) return underflow(1);
                push();
                break;
            case 'q':  // BINPUT
            case 'r':  // LONG_BINPUT
            case 'h':  // BINGET
            case 'j':  // LONG_BINGET
            {
                const std::size_t width = op == 'q' || op == 'h' ? 1 : 4;
                if (width > size - at) return truncated();
                const uint64_t slot = read_le(width);
                at += width;
                if (auto p = op == 'q' || op == 'r' ? put(slot) : get(slot)) return p;
                break;
            }
            case 0x94:  // MEMOIZE: the next slot
                if (auto p = put(memo.size())) return p;
                break;
            default:
                return problem(op_at, "opcode " + hex(op) + ", which no TorchScript pickle holds");
        }
        if (storages) {
            // The values this opcode took and whether it pushed one: the shadows follow the
            // stack exactly, so that an id moved about it (duplicated, memoized, left under a
            // mark) is still known where it is used.
            const std::size_t consumed = depth_before + (pushed ? 1 : 0) - depth;
            const std::size_t kept = values.size() - std::min(consumed, values.size());
            std::vector<shadow> taken(values.begin() + static_cast<std::ptrdiff_t>(kept),
                                      values.end());
            values.resize(kept);
            shadow made;
            const auto le = [&](std::size_t n) {
                uint64_t v = 0;
                for (std::size_t k = 0; k < n; ++k) v |= uint64_t{bytes[at - n + k]} << (8 * k);
                return v;
            };
            switch (op) {
                case 'X':
                case 0x8c:
                case 0x8d:
                    made.kind = shadow::is::text;
                    made.text.assign(reinterpret_cast<const char*>(bytes) + operand_at,
                                     operand_size);
                    break;
                case 'c':
                    made.kind = shadow::is::global;
                    made.text.assign(reinterpret_cast<const char*>(bytes) + operand_at,
                                     operand_size);
                    std::replace(made.text.begin(), made.text.end(), '\n', '.');
                    break;
                case 'K':
                case 'M':
                case 'J':
                    made.kind = shadow::is::integer;
                    made.integer = le(op == 'K' ? 1 : op == 'M' ? 2 : 4);
                    break;
                case 0x8a:  // LONG1 of up to 8 bytes, not negative
                    if (operand_size > 0 && operand_size <= 8 &&
                        (bytes[operand_at + operand_size - 1] & 0x80) == 0) {
                        made.kind = shadow::is::integer;
                        for (std::size_t k = 0; k < operand_size; ++k)
                            made.integer |= uint64_t{bytes[operand_at + k]} << (8 * k);
                    }
                    break;
                case 't':
                case 0x85:
                case 0x86:
                case 0x87:
                    if (taken.size() <= 8) {
                        made.kind = shadow::is::tuple;
                        made.items = std::move(taken);
                    }
                    break;
                case 'h':
                case 'j':
                    if (const auto it = memo_values.find(le(op == 'h' ? 1 : 4));
                        it != memo_values.end())
                        made = it->second;
                    break;
                case '2':  // DUP
                    if (!values.empty()) made = values.back();
                    break;
                case 'Q':
                    if (!taken.empty() && taken.back().kind == shadow::is::tuple) {
                        const std::vector<shadow>& id = taken.back().items;
                        if (id.size() >= 5 && id[0].kind == shadow::is::text &&
                            id[0].text == "storage" && id[1].kind == shadow::is::global &&
                            id[2].kind == shadow::is::text && id[4].kind == shadow::is::integer) {
                            const std::size_t dot = id[1].text.rfind('.');
                            storages->push_back(
                                {id[2].text, id[1].text.substr(dot + 1), id[4].integer});
                        }
                    }
                    break;
                default:
                    break;
            }
            if (pushed) values.push_back(std::move(made));
            // The shadows stay one per value whatever the count above said.
            values.resize(depth);
        }
    }
}

}  // namespace nnergy::torchscript

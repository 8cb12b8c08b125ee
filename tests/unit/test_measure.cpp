// SPDX-License-Identifier: Apache-2.0
// nnergy measure's pieces: running a command, quoting its line, precision names.
#include <catch2/catch.hpp>
#include <nnergy/framework/measure.hpp>

TEST_CASE("measure: a command's exit status, signal and failure to start", "[measure]") {
    const nnergy::command_result ok = nnergy::run_command({"sh", "-c", "exit 3"});
    CHECK(ok.started);
    CHECK(ok.exit_status == 3);
    CHECK(ok.duration_s >= 0);
    CHECK(nnergy::run_command({"sh", "-c", "kill -TERM $$"}).exit_status == 128 + 15);
    const nnergy::command_result missing = nnergy::run_command({"nnergy-no-such-command"});
    CHECK_FALSE(missing.started);
    CHECK(missing.exit_status == 127);
    CHECK(missing.error == "cannot run 'nnergy-no-such-command': command not found");
    const nnergy::command_result not_runnable = nnergy::run_command({"/dev/null"});
    CHECK_FALSE(not_runnable.started);
    CHECK(not_runnable.exit_status == 126);
}

TEST_CASE("measure: the command line is quoted as a shell would take it back", "[measure]") {
    CHECK(nnergy::shell_join({"sh", "-c", "exit 3"}) == "sh -c 'exit 3'");
    CHECK(nnergy::shell_join({"echo", "it's", "", "a=b,c/d"}) == "echo 'it'\\''s' '' a=b,c/d");
}

TEST_CASE("measure: precisions as the measurement format spells them", "[measure]") {
    CHECK(nnergy::measurement_precision("float16") == "fp16");
    CHECK(nnergy::measurement_precision("bfloat16") == "bf16");
    CHECK(nnergy::measurement_precision("fp8") == "fp8");
    CHECK(nnergy::measurement_precision("float13").empty());
}

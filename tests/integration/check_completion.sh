#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# check_completion.sh NNERGY bash|zsh: loads `nnergy completion SHELL` into a non-interactive
# shell and asks it for the candidates of a few command lines; then checks that every command
# in the script's tree shows examples in its --help.
set -u
nnergy=$1
shell=$2
script=$(mktemp)
trap 'rm -f "$script"' EXIT
"$nnergy" completion "$shell" > "$script" || { echo "nnergy completion $shell failed"; exit 1; }

# Each case: the words of a command line (the last one being completed), then '=>', then words
# that must be among the candidates, then optionally '!' and words that must not.
cases=$(cat <<'CASES'
nnergy ana => analyze
nnergy -v ana => analyze
nnergy analyze x --strict --hw h100-s => h100-sxm5 ! h100-pcie
nnergy analyze x --hw h1 => h100-sxm5 h100-pcie ! analyze a100-sxm4-80gb
nnergy analyze x --prec => --precision
nnergy analyze x --precision bf => bfloat16 ! float32
nnergy analyze x --runtime cuda => cuda-graph
nnergy analyze res => resnet18 resnet50 ! analyze
nnergy --plugin-path somewhere comp => compare completion
nnergy hardware s => show ! list
nnergy hardware show h100-p => h100-pcie
nnergy compare m --format c => csv
nnergy val => validate
nnergy validate m.json --format ma => markdown ! csv
nnergy validate m.json --runtime cuda => ! cuda-graph
nnergy completion z => zsh
nnergy meas => measure
nnergy measure --precision fp => fp16 fp32 fp8 ! float16
nnergy measure --hardware h100-s => h100-sxm5
nnergy measure --g => --gpu
CASES
)

if [[ $shell == bash ]]; then
    runner=(bash --norc --noprofile -c '
        source "$1" || exit 1
        complete -p nnergy >/dev/null || { echo "no completion registered for nnergy"; exit 1; }
        shift
        COMP_WORDS=("$@"); COMP_CWORD=$(( $# - 1 )); COMPREPLY=()
        _nnergy
        printf "%s\n" "${COMPREPLY[@]}"' check "$script")
else
    runner=(zsh -f -c '
        autoload -Uz compinit && compinit -u -D
        source "$1" || exit 1
        shift
        words=("$@"); CURRENT=$#
        local -a reply; local REPLY
        _nnergy_candidates
        # compadd keeps the candidates that start with the word typed; so does this.
        print -l -- ${(M)reply:#${words[CURRENT]}*}' check "$script")
fi

failed=0
while IFS= read -r line; do
    [[ -z $line ]] && continue
    command_line=${line%% => *}
    expect=${line#* => }
    read -r -a words <<< "$command_line"
    got=$("${runner[@]}" "${words[@]}") || { echo "FAIL: '$command_line': the shell failed"; failed=1; continue; }
    got_list=" $(echo $got) "
    case_failed=0
    want=${expect%%!*}
    reject=""
    [[ $expect == *!* ]] && reject=${expect#*!}
    for w in $want; do
        if [[ $got_list != *" $w "* ]]; then
            echo "FAIL: '$command_line' does not offer '$w' (offers:$got_list)"
            case_failed=1
        fi
    done
    for w in $reject; do
        if [[ $got_list == *" $w "* ]]; then
            echo "FAIL: '$command_line' offers '$w' (offers:$got_list)"
            case_failed=1
        fi
    done
    if (( case_failed )); then failed=1; else echo "ok: '$command_line' =>$got_list"; fi
done <<< "$cases"

# Every command of the tree (from the bash tables, which list each command's subcommands).
if [[ $shell == bash ]]; then
    commands=$(bash --norc --noprofile -c 'source "$1"; for k in "${!_nnergy_opts[@]}"; do echo "$k"; done' check "$script")
    [[ $(echo "$commands" | wc -l) -ge 10 ]] || { echo "FAIL: too few commands in the tree:"; echo "$commands"; failed=1; }
    while IFS= read -r c; do
        read -r -a words <<< "$c"
        help=$("$nnergy" "${words[@]:1}" --help)
        if [[ $help != *Example* ]]; then
            echo "FAIL: '$c --help' shows no examples"
            failed=1
        fi
    done <<< "$commands"
fi
exit $failed

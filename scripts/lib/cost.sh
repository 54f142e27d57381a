# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# cost.sh: what a program costs, for scripts/bench and scripts/bench-ab on
# the bed: its CPU time (bash's `time`), and the instructions it executes
# (valgrind's callgrind).
# Sourced: scripts/bench sources it on the host and ships the functions
# to the bed with the rest of its own (`declare -f`); scripts/bench-ab
# sources it on the bed.
#
#   cpu_timed CMD...       run CMD, its CPU time into CPU_S
#   callgrind_prefix LOG   into the array CG, the command that runs a
#                          program under callgrind, its messages in LOG
#   callgrind_ir LOG       print the count callgrind wrote into LOG; or
#                          else print why there is none, and return 1
#   CG_LIMIT               the seconds any wait may take while a program
#                          runs under callgrind
#
# Why callgrind: its count, Ir, is the instructions a program executes in
# user space, which do not move with the host's speed or TCG's noise (a
# count repeats to about 1 %, where a time moves 5 to 20 % a run), so one
# count a run stands for all rounds.  Kernel work (rxe, copies, page
# faults) is not in it: Debian 12's QEMU ships no instruction-count TCG
# plugin that could count it in the VM.

# cpu_timed CMD...: run CMD, its stdout and stderr the caller's, timed by
# bash's `time`: into REAL_S the seconds from its start to its exit, and
# into CPU_S the CPU time that it and the children it waited for used,
# user + system (getrusage's: exact, where /proc/PID/stat counts ticks of
# 10 ms and must be read before the process is gone), each to the
# millisecond; returns CMD's exit status.  (getrusage counts too any
# other child of this shell that ends meanwhile: where it is used, none
# does.)  It starts no process but CMD (the sum is bash's arithmetic), so
# a caller may time CMD's run around it; a malformed report from `time`
# leaves CPU_S empty, which raw names.
# shellcheck disable=SC2034 # (REAL_S and CPU_S are for the caller)
cpu_timed() {
	local TIMEFORMAT='%3R %3U %3S' status user sys

	{ time "$@" 2>&3 3>&-; } 3>&2 2>/tmp/bench-time.log
	status=$?
	read -r REAL_S user sys </tmp/bench-time.log
	CPU_S=
	if [[ $user =~ ^[0-9]+\.[0-9]{3}$ && $sys =~ ^[0-9]+\.[0-9]{3}$ ]]; then
		# Milliseconds, as integers: S.mmm without its point.
		user=$((10#${user/./} + 10#${sys/./}))
		printf -v CPU_S '%d.%03d' $((user / 1000)) $((user % 1000))
	fi
	return "$status"
}

# A program under callgrind runs some 50 times slower: every wait for it,
# and every wait of its peer's (the -t options, from 1 to 3600), is this
# many seconds.
# shellcheck disable=SC2034 # (read by the scripts that source this)
CG_LIMIT=900

# callgrind_prefix LOG: into the array CG, the command that runs a program
# under valgrind's callgrind: the instructions it executes in user space
# counted (Ir), no profile written, valgrind's own messages (the count
# among them) in LOG rather than among the program's.
callgrind_prefix() {
	# shellcheck disable=SC2034 # (read by the caller)
	CG=(valgrind --tool=callgrind --callgrind-out-file=/dev/null
		--vgdb=no "--log-file=$1")
}

# callgrind_ir LOG: the instructions callgrind counted, from its log LOG:
# the line "==PID== Collected : N", or else its summary "==PID== I   refs:
# N" (N with thousands' commas).  There is one of each.  A log that holds
# no count (the program was killed, or valgrind did not start) prints its
# first lines on stderr, and on stdout the reason, naming both lines, for
# the caller to report with what it counted; returns 1.
callgrind_ir() {
	local n

	n=$(sed -n 's/^==[0-9]*== Collected : \([0-9]*\) *$/\1/p' "$1" |
		tail -n 1)
	[ -n "$n" ] || n=$(sed -n \
		's/^==[0-9]*== I *refs: *\([0-9][0-9,]*\) *$/\1/p' "$1" |
		tail -n 1 | tr -d ,)
	if [ -z "$n" ]; then
		if [ -r "$1" ]; then
			echo "-- $1:" >&2
			head -n 100 "$1" >&2
		fi
		echo "no line '==PID== Collected : N' nor '==PID== I refs: N'" \
			"in callgrind's log $1"
		return 1
	fi
	echo "$n"
}
